"""Dead letters in a running workspace: ``up`` gives each hive its own stream with hive.toml's limits, moves
an old shared stream aside (its letters stay listed), and a stream near its limit shows in ``status`` (text
and JSON) and as a supervisor event."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from nats.js.api import StorageType, StreamConfig

from subhive.bus import BusError, DeadLetters, EmbeddedServer, ServerConfig
from subhive.up import UpLayout, framework_endpoint

from ._tree import events, subhive, up, wait_for

LETTER = "subhive.dlq.db.db_storage.v0_1.op.put_record"


def _old_shared_stream(workspace: Path) -> None:
    """What an older subhive left in the workspace's store: one ``SUBHIVE_DLQ`` with one letter of db."""

    async def make() -> None:
        server = await EmbeddedServer.start(ServerConfig(UpLayout(workspace).nats_dir))
        try:
            nc = await server.endpoint().connect_once()
            js = nc.jetstream()
            await js.add_stream(StreamConfig(name="SUBHIVE_DLQ", subjects=["subhive.dlq.>"], storage=StorageType.FILE))
            reason = {
                "Subhive-Dlq-Code": "payload.invalid",
                "Subhive-Dlq-Subject": "subhive.db_storage.v0_1.op.put_record",
            }
            await js.publish(LETTER, b'{"key": ""}', headers=reason)
            await nc.close()
        finally:
            await server.stop()

    asyncio.run(make())


def _fill(workspace: Path) -> dict[str, Any]:
    """Dead letters into db's stream until it is near full (as a flood of refusals would), with the
    framework's credentials; returns its usage."""
    endpoint = framework_endpoint(workspace)
    assert endpoint is not None

    async def flood() -> dict[str, Any]:
        nc = await endpoint.connect_once()
        try:
            letters = DeadLetters(nc)
            for i in range(200):
                [usage] = [u for u in await letters.usage() if u.hive == "db"]
                if usage.level != "ok":
                    return usage.to_dict()
                try:
                    await nc.jetstream().publish(LETTER, b'{"n": %d, "pad": "%s"}' % (i, b"x" * 300))
                except Exception as exc:  # full before near full was seen: the test says so below
                    raise BusError(f"db's stream refused a letter at {i}: {exc}") from exc
            return usage.to_dict()
        finally:
            await nc.close()

    return asyncio.run(flood())


def test_up_gives_each_hive_its_limited_stream_and_status_warns_when_near_full(one_hive_workspace: Path) -> None:
    workspace = one_hive_workspace
    hive_toml = workspace / "hive.toml"
    hive_toml.write_text(hive_toml.read_text() + '\n[dead_letters]\nmax_bytes = "8KiB"\nmax_age = "1d"\n')
    _old_shared_stream(workspace)
    started = up(workspace)
    assert started.code == 0, started

    listed = subhive(workspace, "deadletters", "list", "--format", "json")
    assert listed.code == 0, listed
    assert [(d["id"], d["hive"], d["code"]) for d in json.loads(listed.out)["dead_letters"]] == [
        ("SUBHIVE_DLQ:1", "db", "payload.invalid")
    ]

    usage = _fill(workspace)
    assert usage["level"] in {"near_full", "full"}
    assert (usage["stream"], usage["max_bytes"], usage["max_age"]) == ("SUBHIVE_DLQ_db", 8192, 86400.0)

    status = subhive(workspace, "status", "--format", "json")
    assert status.code == 0, status
    db = json.loads(status.out)["runtime"]["hives"]["db"]
    assert db["dead_letter_stream"]["level"] in {"near_full", "full"}
    assert db["dead_letters"] >= 10  # the flood, and the old stream's letter
    [warning] = json.loads(status.out)["runtime"]["dead_letter_warnings"]
    assert warning.startswith("dead letters of db are ")
    assert "of 8KiB" in warning
    text = subhive(workspace, "status")
    assert text.code == 0, text
    assert "warning: dead letters of db are" in text.out
    assert "% full)" in text.out  # on db's runtime line

    said = wait_for(
        lambda: [e for e in events(workspace) if e["event"].startswith("deadletters.")],
        "the supervisor's dead-letter event",
        timeout=15,
    )
    assert said[0]["event"] in {"deadletters.near_full", "deadletters.full"}
    assert (said[0]["hive"], said[0]["max_bytes"]) == ("db", 8192)
