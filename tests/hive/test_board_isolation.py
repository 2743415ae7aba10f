"""A hive's board and controller with the hive's own credentials, as ``subhive up`` runs them: the framework made
the bucket and the controller's consumer, the hive reads, writes and is woken through what its grants allow, and
a reply another hive points at the board (a reply subject can be any subject) wakes nobody."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import nats
import pytest
from nats.aio.client import Client

from subhive.bus import ADMIN_USER, AccountsConfig, EmbeddedServer, hive_permissions
from subhive.hive import BoardSchema, BrokenValue, Controller, Entry, KvBlackboard, Write, ensure_blackboard
from tests.kit import StartServer, run

from ._board import SCHEMA

HIVES = ("backend", "web")


@dataclass
class Recorder:
    name: str
    triggers: tuple[str, ...]
    priority: int = 0
    seen: list[tuple[str, Any]] = field(default_factory=list)

    async def activate(self, entry: Entry, blackboard: Any) -> Sequence[Write]:
        self.seen.append((entry.key, entry.value))
        return []


@dataclass
class Tree:
    server: EmbeddedServer
    passwords: dict[str, str]

    async def connect(self, user: str) -> Client:
        return await nats.connect(
            self.server.url,
            user=user,
            password=self.passwords[user],
            inbox_prefix=f"_INBOX_{user}" if user in HIVES else "_INBOX",
        )


@pytest.fixture(scope="module")
def tree(start_module_nats: StartServer) -> Tree:
    passwords = {user: secrets.token_urlsafe(24) for user in [*HIVES, ADMIN_USER]}
    users = {hive: (passwords[hive], hive_permissions(hive, {}, {}, {}, {})) for hive in HIVES}
    return Tree(start_module_nats(accounts=AccountsConfig(users, passwords[ADMIN_USER])), passwords)


def test_the_controller_wakes_on_board_writes_with_the_hives_own_credentials(tree: Tree) -> None:
    async def scenario() -> tuple[list[tuple[str, Any]], list[str], int]:
        admin, backend = await tree.connect(ADMIN_USER), await tree.connect("backend")
        try:
            for hive in HIVES:  # what `subhive up` does before any hive starts
                await ensure_blackboard(admin.jetstream(), hive)
            js = backend.jetstream()
            board = await KvBlackboard.open(js, "backend", BoardSchema(SCHEMA, hive="backend"))
            planner = Recorder("planner", ("tasks.*",))
            controller = Controller(board, [planner])
            await controller.start(js)
            try:
                await board.put("tasks.t1", {"title": "Add login", "status": "open"}, writer="human")
                async with asyncio.timeout(10):
                    while not planner.seen:
                        await asyncio.sleep(0.02)
                await controller.idle()
                info = await admin.jetstream().consumer_info("KV_bb_backend", "controller")
            finally:
                await controller.stop()
            return planner.seen, await board.keys(), info.num_ack_pending or 0
        finally:
            await backend.close()
            await admin.close()

    seen, keys, unacknowledged = run(scenario())
    assert seen == [("tasks.t1", {"title": "Add login", "status": "open"})]
    assert keys == ["tasks.t1"]
    assert unacknowledged == 0  # the write was acknowledged through the hive's own ack grant


def test_a_reply_another_hive_points_at_a_board_wakes_nobody_and_is_never_read_as_a_value(tree: Tree) -> None:
    """web asks about its own bucket with a key of backend's board as the reply subject: the answer goes back
    into web's own account, never into backend's board (decision 0056). A revision without a writer that does
    reach a board (the hive's own raw write) wakes nobody and is never read as a value."""

    async def scenario() -> tuple[list[Any], list[tuple[str, Any]], list[Entry | BrokenValue], list[Entry], str]:
        admin, backend, web = await tree.connect(ADMIN_USER), await tree.connect("backend"), await tree.connect("web")
        try:
            for hive in HIVES:
                await ensure_blackboard(admin.jetstream(), hive)
            js = backend.jetstream()
            board = await KvBlackboard.open(js, "backend", BoardSchema(SCHEMA, hive="backend"))
            planner = Recorder("planner", ("tasks.*",))
            controller = Controller(board, [planner])
            await controller.start(js)
            try:
                # web may ask about its own bucket, and the server answers on whatever reply subject it names.
                await web.publish("$JS.API.STREAM.INFO.KV_bb_web", b"", reply="$KV.bb_backend.tasks.relayed")
                await web.request("$JS.API.STREAM.INFO.KV_bb_web", b"", timeout=5)  # answered after the first
                relayed = await board.revisions("tasks.relayed")
                # backend's own write without a writer: not something subhive wrote.
                await js.publish("$KV.bb_backend.tasks.unsigned", b'{"title": "x", "status": "open"}')
                async with asyncio.timeout(10):
                    while not await board.revisions("tasks.unsigned"):
                        await asyncio.sleep(0.02)
                await board.put("tasks.real", {"title": "Real", "status": "open"}, writer="human")
                async with asyncio.timeout(10):
                    while not planner.seen:
                        await asyncio.sleep(0.02)
                await controller.idle()
            finally:
                await controller.stop()
            with pytest.raises(BrokenValue) as read:
                await board.get("tasks.unsigned")
            return (
                relayed,
                planner.seen,
                await board.revisions("tasks.unsigned"),
                await board.history("tasks.unsigned"),
                read.value.code,
            )
        finally:
            await web.close()
            await backend.close()
            await admin.close()

    relayed_revisions, seen, revisions, history, code = run(scenario())
    assert relayed_revisions == []  # the server's answer never reached backend's board
    assert [key for key, _ in seen] == ["tasks.real"]  # the unsigned revision woke nobody; the real write did
    # It names no writer: nothing subhive wrote. It is read as broken (what a person sees in `board show`),
    # never as the key's value, and not as history.
    [relayed] = revisions
    assert isinstance(relayed, BrokenValue)
    assert relayed.code == code == "blackboard.unattributed"
    assert relayed.writer == ""
    assert history == []
