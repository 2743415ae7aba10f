"""The hive's memory of outcomes: learnt from a turn's frames, kept on the board, the most relevant entries
given to a later turn within a token budget, before its task."""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any

import nats

from subhive.agent import (
    AgentMemory,
    Approval,
    FileSlice,
    ScriptedServer,
    Step,
    ToolBox,
    ToolCall,
    diff_tool,
    memory_note,
    select_memories,
)
from subhive.bus import EmbeddedServer
from subhive.hive import KvBlackboard, ensure_blackboard
from tests.kit import run

from .conftest import make_agent

ENTRIES = [
    {"text": "propose_diff on notes.md for 'trim the notes': tool.rejected: keep the second line", "time": 1.0},
    {"text": "propose_diff on app.py for 'fix the login': done", "time": 2.0},
    {"text": "a turn on 'trim the notes quickly' stopped: budget.tokens: too many", "time": 3.0},
]


def test_the_most_relevant_entries_are_chosen_within_the_budget() -> None:
    chosen = select_memories(ENTRIES, "trim the notes again", budget=1000)
    assert [e["time"] for e in chosen] == [3.0, 1.0]  # both share "trim" and "notes": the newest first
    assert select_memories(ENTRIES, "unrelated words entirely", budget=1000) == []
    assert select_memories(ENTRIES, "trim the notes", budget=30) == [ENTRIES[2]]  # only what fits
    assert memory_note([]) is None
    assert "keep the second line" in (memory_note([ENTRIES[0]]) or "")


def unified(path: str, old: str, new: str) -> str:
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), fromfile=f"a/{path}", tofile=f"b/{path}"
        )
    )


def test_a_rejected_diff_is_remembered_and_told_to_the_next_turn(tmp_path: Path, server: EmbeddedServer) -> None:
    (tmp_path / "notes.md").write_text("one\ntwo\n")
    diff = unified("notes.md", "one\ntwo\n", "one\n")

    async def reject(call: ToolCall) -> Approval:
        return Approval(False, "keep the second line")

    async def scenario(scripted: ScriptedServer) -> tuple[Any, Any, list[dict[str, Any]]]:
        nc = await nats.connect(server.url)
        try:
            await ensure_blackboard(nc.jetstream(), "notes")
            memory = AgentMemory(await KvBlackboard.open(nc.jetstream(), "notes"), "helper")
            tools = ToolBox([diff_tool(FileSlice(tmp_path))], {"propose_diff": "ask"}, approver=reject)
            first = make_agent(scripted, tools)
            await first.run_turn("trim the notes", on_frame=memory)
            await first.close()
            context = await memory.recall("trim the notes, second try", budget=500)
            second = make_agent(scripted, tools)
            result = await second.run_turn("trim the notes, second try", context=context, on_frame=memory)
            await second.close()
            return result, context, await memory.entries()
        finally:
            await nc.close()

    script = [Step.call(("propose_diff", {"diff": diff})), Step.say("it was refused"), Step.say("understood")]
    with ScriptedServer(script) as scripted:
        result, context, entries = run(scenario(scripted))
        third = scripted.chat_requests()[2].body["messages"]
    assert [e["kind"] for e in entries] == ["propose_diff"]
    assert "notes.md" in entries[0]["text"]
    assert "keep the second line" in entries[0]["text"]
    assert context is not None
    assert "keep the second line" in context
    # The note comes before the task, and the turn says what it was given.
    assert [m["content"] for m in third[1:3]] == [context, "trim the notes, second try"]
    assert result.frames[0].data["context"] == context
    assert json.loads(json.dumps(result.frames[0].to_dict()))["context"] == context
