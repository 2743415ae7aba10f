"""KvBlackboard.keys(pattern): the server filters the keys, so the framework's own key families (an agent's
turns, its memory) are listed without reading the whole board."""

from __future__ import annotations

import pytest

from subhive.bus import EmbeddedServer
from subhive.errors import InputError
from tests.kit import run

from ._board import board


def test_keys_filtered_by_a_pattern(server: EmbeddedServer) -> None:
    async def scenario() -> tuple[list[str], list[str], list[str], list[str]]:
        async with board(server, schema=None) as (_nc, bb):
            for key in (
                "notes.a",
                "notes.b.c",
                "agent-turns.helper.t1",
                "agent-turns.helper.t1.000001",
                "agent-turns.helper.t1.000002",
                "agent-turns.other.t9.000001",
            ):
                await bb.put(key, 1, writer="test")
            everything = await bb.keys()
            frames = await bb.keys("agent-turns.helper.t1.*")
            notes = await bb.keys("notes.>")
            with pytest.raises(InputError) as caught:
                await bb.keys("notes.>.x")
            return everything, frames, notes, [caught.value.code]

    everything, frames, notes, codes = run(scenario())
    assert len(everything) == 6
    assert frames == ["agent-turns.helper.t1.000001", "agent-turns.helper.t1.000002"]
    assert notes == ["notes.a", "notes.b.c"]
    assert codes == ["blackboard.pattern_invalid"]
