"""Parked activations over a real nats-server: a source that raises Parked frees its worker, is run again once
woken (its result is the activation's), keeps its board write unacknowledged meanwhile, and a stopping
controller hands that write straight back to the next one."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import pytest

from subhive.bus import BOARD_ACK_WAIT, EmbeddedServer
from subhive.hive import Controller, ControllerConfig, Entry, Parked, Reply, Write
from tests.kit import run

from ._board import board


class Waiter:
    """Parks on its first activation of each entry until ``gate`` opens; then writes ``done.<id>`` (or
    replies). ``runs`` records every activation and resume."""

    priority = 0

    def __init__(self, name: str = "waiter", *, park: bool = True) -> None:
        self.name = name
        self.triggers = ("notes.*",)
        self.operations = ("api.ask",)
        self.gate = asyncio.Event()
        self.park = park
        self.runs: list[str] = []

    async def activate(self, entry: Entry, ctx: Any) -> Sequence[Write | Reply]:
        self.runs.append(f"activate {entry.key}")
        if self.park and len(self.runs) == 1:
            raise Parked(self.gate.wait(), resume=self.resume(entry), reason="waits for the gate")
        return self.result(entry)

    def resume(self, entry: Entry) -> Any:
        async def go(ctx: Any) -> Sequence[Write | Reply]:
            self.runs.append(f"resume {entry.key}")
            return self.result(entry)

        return go

    def result(self, entry: Entry) -> list[Write | Reply]:
        if entry.key.startswith("op."):
            return [Reply({"answered": entry.value})]
        return [Write("notes-done." + entry.key.split(".")[1], {"n": 1})]


class Quick:
    name = "quick"
    priority = 0
    triggers = ("other.*",)

    async def activate(self, entry: Entry, ctx: Any) -> Sequence[Write]:
        return [Write("other-done." + entry.key.split(".")[1], {"n": 1})]


async def _until(check: Any, timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not await check():
            await asyncio.sleep(0.02)


def test_a_parked_activation_frees_its_worker_and_finishes_when_woken(server: EmbeddedServer) -> None:
    async def scenario() -> None:
        async with board(server, schema=None) as (nc, bb):
            waiter = Waiter()
            controller = Controller(bb, [waiter, Quick()], config=ControllerConfig(concurrency=1))
            await controller.start(nc.jetstream())
            try:
                await bb.put("notes.a", {"n": 0}, writer="human")
                await _until(lambda: _now(controller.stats.parked == 1))
                await bb.put("other.b", {"n": 0}, writer="human")  # the only worker is free for it
                await _until(lambda: bb.get("other-done.b"))
                assert await bb.get("notes-done.a") is None
                with pytest.raises(TimeoutError):
                    await controller.idle(timeout=0.3)  # a parked activation is not done
                waiter.gate.set()
                await _until(lambda: bb.get("notes-done.a"))
                await controller.idle()
                assert waiter.runs == ["activate notes.a", "resume notes.a"]
                assert controller.stats.parked == 0
                assert controller.stats.failures == 0
            finally:
                await controller.stop()

    run(scenario())


def test_a_parked_request_answers_its_caller_and_one_given_up_is_dropped(server: EmbeddedServer) -> None:
    async def scenario() -> None:
        async with board(server, schema=None) as (nc, bb):
            waiter = Waiter()
            controller = Controller(bb, [waiter])
            await controller.start(nc.jetstream())
            try:
                asking = asyncio.create_task(controller.answer("api", "ask", {"q": 1}))
                await _until(lambda: _now(controller.stats.parked == 1))
                waiter.gate.set()
                assert await asyncio.wait_for(asking, 10) == {"answered": {"q": 1}}
                # A caller that gives up while the activation is parked: woken, it is not run again.
                waiter.runs.clear()
                waiter.gate = asyncio.Event()
                given_up = asyncio.create_task(controller.answer("api", "ask", {"q": 2}))
                await _until(lambda: _now(controller.stats.parked == 1))
                given_up.cancel()
                waiter.gate.set()
                await controller.idle()
                assert waiter.runs == ["activate op.api.ask"]
            finally:
                await controller.stop()

    run(scenario())


def test_a_stopping_controller_hands_a_parked_write_to_the_next_at_once(server: EmbeddedServer) -> None:
    async def scenario() -> float:
        async with board(server, schema=None) as (nc, bb):
            first = Waiter()
            controller = Controller(bb, [first])
            await controller.start(nc.jetstream())
            await bb.put("notes.a", {"n": 0}, writer="human")
            await _until(lambda: _now(controller.stats.parked == 1))
            await controller.stop()  # the hive restarts while the write's activation is parked
            stopped = time.monotonic()
            second = Waiter(park=False)
            controller = Controller(bb, [second])
            await controller.start(nc.jetstream())
            try:
                await _until(lambda: bb.get("notes-done.a"))
                assert second.runs == ["activate notes.a"]  # the write came back, not acknowledged before
                assert first.runs == ["activate notes.a"]  # the first controller did not resume it on stop
                return time.monotonic() - stopped
            finally:
                await controller.stop()

    assert run(scenario()) < BOARD_ACK_WAIT / 2  # handed back, not redelivered after the ack wait


async def _now(value: Any) -> Any:
    return value


class Closer:
    """Parks on its first activation; any activation then marks the note done with a compare-and-set against the
    revision it was given (``seen`` records the value and revision of each activation)."""

    name = "closer"
    priority = 0
    triggers = ("notes.*",)

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.seen: list[tuple[Any, int]] = []

    async def activate(self, entry: Entry, ctx: Any) -> Sequence[Write]:
        self.seen.append((entry.value, entry.revision))
        if len(self.seen) == 1:
            raise Parked(self.gate.wait(), reason="waits for the gate")  # no resume: activated again when woken
        if entry.value.get("done"):
            return []
        return [Write(entry.key, {**entry.value, "done": True}, expected_revision=entry.revision)]


def test_a_woken_activation_that_loses_a_race_is_activated_again_on_the_fresh_entry(server: EmbeddedServer) -> None:
    """Woken, a parked activation runs its source on the entry it parked on; when that write loses the race
    (someone changed the note meanwhile), the source is activated again on the note as it is now, as any lost
    race is, not on the entry it first parked on, which could only lose again."""

    async def scenario() -> None:
        async with board(server, schema=None) as (nc, bb):
            closer = Closer()
            controller = Controller(bb, [closer], config=ControllerConfig(concurrency=1, conflict_retries=2))
            await controller.start(nc.jetstream())
            try:
                first = await bb.put("notes.a", {"v": 1}, writer="human")
                await _until(lambda: _now(controller.stats.parked == 1))
                changed = await bb.put("notes.a", {"v": 2}, writer="human")  # while the first one waits
                # That change is activated (the worker is free), closed, and the close activated once more.
                await _until(lambda: _now(len(closer.seen) == 3))
                closer.gate.set()
                await controller.idle()
                assert controller.stats.failures == 0, controller.stats.last_error
                assert controller.stats.conflicts == 1  # the woken one lost once, then read the note anew
                note = await bb.get("notes.a")
                assert note is not None
                assert note.value == {"v": 2, "done": True}
                assert closer.seen[0] == ({"v": 1}, first) == closer.seen[3]  # woken: the entry it parked on
                assert closer.seen[4][0] == {"v": 2, "done": True}
                assert closer.seen[4][1] > changed
                assert len(closer.seen) == 5
            finally:
                await controller.stop()

    run(scenario())
