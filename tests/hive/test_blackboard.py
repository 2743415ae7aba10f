"""The blackboard over a real nats-server: typed writes, full history with writers, compare-and-set that
loses no update under 20 concurrent writers, readable snapshots, and clear refusals."""

from __future__ import annotations

import asyncio

import nats
import pytest

from subhive.bus import EmbeddedServer
from subhive.errors import InputError
from subhive.hive import BlackboardError, BlackboardInvalid, BoardSchema, KvBlackboard, RevisionConflict
from tests.kit import run

from ._board import board, fresh_hive


def test_a_write_is_read_back_with_its_writer_and_revision(server: EmbeddedServer) -> None:
    async def scenario() -> None:
        async with board(server) as (_, bb):
            assert await bb.get("tasks.t1") is None
            revision = await bb.put("tasks.t1", {"title": "Add login", "status": "open"}, writer="human")
            entry = await bb.get("tasks.t1")
            assert entry is not None
            assert (entry.key, entry.value, entry.revision, entry.writer, entry.depth) == (
                "tasks.t1",
                {"title": "Add login", "status": "open"},
                revision,
                "human",
                0,
            )
            assert entry.time is not None

    run(scenario())


def test_history_keeps_every_revision_past_the_64_that_nats_kv_keeps(server: EmbeddedServer) -> None:
    async def scenario() -> None:
        async with board(server) as (_, bb):
            for n in range(70):
                await bb.put("counters.c", {"n": n}, writer=f"w{n % 3}")
            await bb.put("counters.other", {"n": -1}, writer="x")
            history = await bb.history("counters.c")
            assert [e.value["n"] for e in history] == list(range(70))
            assert [e.writer for e in history] == [f"w{n % 3}" for n in range(70)]
            assert history == sorted(history, key=lambda e: e.revision)
            assert await bb.history("counters.never") == []

    run(scenario())


def test_twenty_concurrent_writers_lose_no_update(server: EmbeddedServer) -> None:
    """Each of 20 writers, on its own connection, increments one counter 10 times by compare-and-set."""
    hive = fresh_hive()

    async def writer(name: str, js_url: str) -> None:
        nc = await nats.connect(js_url)
        bb = KvBlackboard(nc.jetstream(), hive, BoardSchema(None, hive=hive))
        try:
            for _ in range(10):
                await bb.update("counters.shared", lambda old: {"n": (old or {"n": 0})["n"] + 1}, writer=name)
        finally:
            await nc.close()

    async def scenario() -> None:
        async with board(server, hive) as (_, bb):
            await asyncio.gather(*(writer(f"w{i}", server.url) for i in range(20)))
            entry = await bb.get("counters.shared")
            assert entry is not None
            assert entry.value == {"n": 200}
            history = await bb.history("counters.shared")
            # Every increment landed exactly once, each on top of the one before.
            assert [e.value["n"] for e in history] == list(range(1, 201))
            assert {e.writer for e in history} == {f"w{i}" for i in range(20)}

    run(scenario())


def test_compare_and_set_refuses_a_stale_revision_and_create_only_an_existing_key(server: EmbeddedServer) -> None:
    async def scenario() -> None:
        async with board(server) as (_, bb):
            first = await bb.put("counters.c", {"n": 1}, writer="a", expected_revision=0)
            await bb.put("counters.c", {"n": 2}, writer="b", expected_revision=first)
            with pytest.raises(RevisionConflict) as stale:
                await bb.put("counters.c", {"n": 99}, writer="a", expected_revision=first)
            assert stale.value.code == "blackboard.conflict"
            with pytest.raises(RevisionConflict, match="already exists"):
                await bb.put("counters.c", {"n": 99}, writer="a", expected_revision=0)
            entry = await bb.get("counters.c")
            assert entry is not None
            assert entry.value == {"n": 2}  # neither refused write changed anything

    run(scenario())


def test_a_write_the_schema_refuses_never_reaches_the_board(server: EmbeddedServer) -> None:
    async def scenario() -> None:
        async with board(server) as (_, bb):
            with pytest.raises(BlackboardInvalid) as bad:
                await bb.put("tasks.t1", {"title": "", "status": "open"}, writer="ks")
            assert (bad.value.key, bad.value.pointer, bad.value.keyword, bad.value.writer) == (
                "tasks.t1",
                "/title",
                "minLength",
                "ks",
            )
            with pytest.raises(BlackboardInvalid, match="not a key this blackboard declares"):
                await bb.put("scratch.x", 1, writer="ks")
            with pytest.raises(InputError, match="not a blackboard key"):
                await bb.put("tasks..t1", {}, writer="ks")
            with pytest.raises(InputError, match="not a writer name"):
                await bb.put("notes.a", 1, writer="")
            with pytest.raises(InputError, match="not JSON"):
                await bb.put("notes.a", {1, 2}, writer="ks")
            assert await bb.keys() == []

    run(scenario())


def test_snapshot_and_size_show_the_latest_value_of_every_key(server: EmbeddedServer) -> None:
    async def scenario() -> None:
        async with board(server) as (_, bb):
            await bb.put("tasks.t1", {"title": "a", "status": "open"}, writer="human")
            await bb.put("tasks.t1", {"title": "a", "status": "done"}, writer="human")
            await bb.put("notes.x.y", "hello", writer="ks")
            snapshot = await bb.snapshot()
            assert {k: (e.value, e.writer) for k, e in snapshot.items()} == {
                "notes.x.y": ("hello", "ks"),
                "tasks.t1": ({"title": "a", "status": "done"}, "human"),
            }
            keys, revisions, size = await bb.size()
            assert (keys, revisions) == (2, 3)
            assert size > 0

    run(scenario())


def test_a_snapshot_keeps_every_good_key_and_lists_the_broken_ones_apart(server: EmbeddedServer) -> None:
    async def scenario() -> None:
        hive = fresh_hive()
        async with board(server, hive) as (nc, bb):
            await bb.put("notes.a", "first", writer="ks")
            await bb.put("notes.z", "last", writer="ks")
            js = nc.jetstream()  # written past subhive, as a tool with the admin credentials could
            await js.publish(f"$KV.bb_{hive}.notes.b", b"{not json", headers={"Subhive-Writer": "tool"})
            await js.publish(f"$KV.bb_{hive}.notes.c", b'"no writer"')
            snapshot = await bb.snapshot()
            assert {k: e.value for k, e in snapshot.items()} == {"notes.a": "first", "notes.z": "last"}
            assert [(b.key, b.code, b.writer) for b in snapshot.broken] == [
                ("notes.b", "blackboard.not_json", "tool"),
                ("notes.c", "blackboard.unattributed", ""),
            ]
            await bb.put("notes.b", "fixed", writer="human")  # writing the key again mends it
            mended = await bb.snapshot()
            assert mended["notes.b"].value == "fixed"
            assert [b.key for b in mended.broken] == ["notes.c"]

    run(scenario())


def test_a_missing_bucket_is_a_clear_error(server: EmbeddedServer) -> None:
    async def scenario() -> None:
        nc = await nats.connect(server.url)
        try:
            with pytest.raises(BlackboardError, match="no blackboard bucket") as missing:
                await KvBlackboard.open(nc.jetstream(), "nobody")
            assert missing.value.code == "blackboard.missing"
        finally:
            await nc.close()

    run(scenario())
