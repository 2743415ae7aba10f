"""The controller over a real nats-server: what wakes a knowledge source and what does not, priority and
bounded concurrency, attribution, loops and stalls escalated instead of repeated, failures retried once,
and writes made while no controller ran still handled when one starts."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from subhive.bus import EmbeddedServer
from subhive.errors import InputError
from subhive.hive import Controller, ControllerConfig, Entry, Escalation, KnowledgeSourceFailed, Reply, Write
from tests.kit import run

from ._board import board


@dataclass
class Recorder:
    """A source that records what woke it and writes what ``react`` says."""

    name: str
    triggers: tuple[str, ...]
    priority: int = 0
    seen: list[str] = field(default_factory=list)
    delay: float = 0.0

    def react(self, entry: Entry) -> list[Write]:
        return []

    async def activate(self, entry: Entry, blackboard: Any) -> Sequence[Write]:
        self.seen.append(entry.key)
        if self.delay:
            await asyncio.sleep(self.delay)
        return self.react(entry)


class Planner(Recorder):
    def react(self, entry: Entry) -> list[Write]:
        task_id = entry.key.split(".", 1)[1]
        return [
            Write(f"plans.{task_id}", {"task": entry.key, "steps": ["do it"]}, expected_revision=0, on_conflict="skip")
        ]


class Echo(Recorder):
    """Writes back exactly what woke it: the loop the detector must catch."""

    def react(self, entry: Entry) -> list[Write]:
        return [Write(entry.key, entry.value)]


class Bounce(Recorder):
    """notes.a -> notes.b -> notes.a ...: a different value every time, so only the chain depth shows it."""

    def react(self, entry: Entry) -> list[Write]:
        target = "notes.b" if entry.key == "notes.a" else "notes.a"
        return [Write(target, {"n": entry.value["n"] + 1})]


class Broken(Recorder):
    def react(self, entry: Entry) -> list[Write]:
        raise KeyError("sku")


class Invalid(Recorder):
    def react(self, entry: Entry) -> list[Write]:
        return [Write("plans.x", {"task": "t", "steps": []})]  # the schema wants at least one step


def _collector() -> tuple[list[Escalation], Any]:
    """A list and the on_escalation callback that appends to it."""
    escalations: list[Escalation] = []

    async def escalate(e: Escalation) -> None:
        escalations.append(e)

    return escalations, escalate


async def _settled(controller: Controller, until: Any, timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not until():
            await asyncio.sleep(0.02)
    await controller.idle()


def test_a_source_wakes_on_matching_writes_only_and_its_writes_are_attributed(server: EmbeddedServer) -> None:
    async def scenario() -> None:
        async with board(server) as (nc, bb):
            planner = Planner("planner", ("tasks.*",))
            controller = Controller(bb, [planner])
            await controller.start(nc.jetstream())
            try:
                await bb.put("notes.unrelated", 1, writer="human")
                await bb.put("tasks.t1", {"title": "Add login", "status": "open"}, writer="human")
                await bb.put("notes.tasks.t2", 2, writer="human")
                await _settled(controller, lambda: planner.seen)
                assert planner.seen == ["tasks.t1"]
                plan = await bb.get("plans.t1")
                assert plan is not None
                assert (plan.value, plan.writer, plan.depth) == ({"task": "tasks.t1", "steps": ["do it"]}, "planner", 1)
                assert controller.stats.by_source == {"planner": 1}
                # The same task again: the plan is "create only once", so the second write is skipped, not lost.
                await bb.put("tasks.t1", {"title": "Add login", "status": "open"}, writer="human")
                await _settled(controller, lambda: len(planner.seen) == 2)
                assert controller.stats.skipped == 1
                assert len(await bb.history("plans.t1")) == 1
            finally:
                await controller.stop()

    run(scenario())


def test_waiting_activations_run_by_priority_within_the_concurrency_bound(server: EmbeddedServer) -> None:
    async def scenario() -> None:
        async with board(server) as (nc, bb):
            order: list[str] = []
            running = 0
            most = 0

            @dataclass
            class Tracked(Recorder):
                async def activate(self, entry: Entry, blackboard: Any) -> Sequence[Write]:
                    nonlocal running, most
                    running += 1
                    most = max(most, running)
                    order.append(f"{self.name}:{entry.key}")
                    await asyncio.sleep(0.05)
                    running -= 1
                    return []

            low = Tracked("low", ("notes.*",), priority=1)
            high = Tracked("high", ("notes.*",), priority=9)
            for key in ("notes.a", "notes.b", "notes.c"):  # written before the controller starts: all wait at once
                await bb.put(key, 0, writer="human")
            controller = Controller(bb, [low, high], config=ControllerConfig(concurrency=2))
            await controller.start(nc.jetstream())
            try:
                await _settled(controller, lambda: len(order) == 6)
            finally:
                await controller.stop()
            assert most == 2
            # Every high-priority activation started before any low one that was waiting with it.
            first_low = min(i for i, item in enumerate(order) if item.startswith("low"))
            assert order[:first_low] == ["high:notes.a", "high:notes.b", "high:notes.c"][:first_low]
            assert first_low >= 2
            assert sorted(order) == sorted(f"{s}:notes.{k}" for s in ("high", "low") for k in "abc")

    run(scenario())


def test_the_same_write_again_and_again_is_escalated_and_the_source_quarantined(server: EmbeddedServer) -> None:
    async def scenario() -> None:
        async with board(server) as (nc, bb):
            escalations, escalate = _collector()
            echo = Echo("echo", ("notes.*",))
            controller = Controller(bb, [echo], config=ControllerConfig(loop_repeats=4), on_escalation=escalate)
            await controller.start(nc.jetstream())
            try:
                await bb.put("notes.ping", {"hello": 1}, writer="human")
                await _settled(controller, lambda: escalations)
                await asyncio.sleep(0.3)  # time for a runaway to show itself, if it were not stopped
            finally:
                await controller.stop()
            assert [(e.kind, e.code, e.source, e.key) for e in escalations] == [
                ("loop", "ks.loop", "echo", "notes.ping")
            ]
            assert "4 times in a row" in escalations[0].message
            assert controller.stats.quarantined == {"echo"}
            history = await bb.history("notes.ping")
            assert [e.writer for e in history] == ["human", "echo", "echo", "echo"]  # the 4th repeat never landed

    run(scenario())


def test_sources_waking_each_other_forever_are_caught_by_the_chain_depth(server: EmbeddedServer) -> None:
    async def scenario() -> None:
        async with board(server) as (nc, bb):
            escalations, escalate = _collector()
            bounce = Bounce("bounce", ("notes.a", "notes.b"))
            controller = Controller(bb, [bounce], config=ControllerConfig(max_depth=10), on_escalation=escalate)
            await controller.start(nc.jetstream())
            try:
                await bb.put("notes.a", {"n": 0}, writer="human")
                await _settled(controller, lambda: escalations)
            finally:
                await controller.stop()
            assert [e.kind for e in escalations] == ["loop"]
            assert "11 activations deep" in escalations[0].message
            depths = [e.depth for k in ("notes.a", "notes.b") for e in await bb.history(k)]
            assert max(depths) == 10

    run(scenario())


def test_a_failing_source_is_retried_once_then_escalated_and_the_entry_stays(server: EmbeddedServer) -> None:
    async def scenario() -> None:
        async with board(server) as (nc, bb):
            escalations, escalate = _collector()
            broken = Broken("broken", ("tasks.*",))
            invalid = Invalid("invalid", ("tasks.*",))
            controller = Controller(bb, [broken, invalid], on_escalation=escalate)
            await controller.start(nc.jetstream())
            try:
                await bb.put("tasks.t1", {"title": "x", "status": "open"}, writer="human")
                await _settled(controller, lambda: len(escalations) == 2)
            finally:
                await controller.stop()
            assert broken.seen == ["tasks.t1", "tasks.t1"]
            by_source = {e.source: e for e in escalations}
            assert (by_source["broken"].kind, by_source["broken"].count) == ("failure", 2)
            assert "KeyError" in by_source["broken"].message
            assert "at /steps" in by_source["invalid"].message
            assert b"blackboard.invalid" in by_source["invalid"].sample
            assert await bb.get("plans.x") is None
            assert (await bb.get("tasks.t1")) is not None
            assert controller.stats.failures == 4
            assert not controller.stats.quarantined  # failures are reported, not quarantined

    run(scenario())


def test_a_stalled_activation_is_cancelled_and_escalated(server: EmbeddedServer) -> None:
    async def scenario() -> None:
        async with board(server) as (nc, bb):
            escalations, escalate = _collector()
            slow = Recorder("slow", ("tasks.*",), delay=30)
            controller = Controller(bb, [slow], config=ControllerConfig(stall_after=0.2), on_escalation=escalate)
            await controller.start(nc.jetstream())
            try:
                await bb.put("tasks.t1", {"title": "x", "status": "open"}, writer="human")
                await _settled(controller, lambda: escalations)
            finally:
                await controller.stop()
            assert [(e.kind, e.code, e.source) for e in escalations] == [("stall", "ks.stalled", "slow")]
            assert "within 0.2 s" in escalations[0].message

    run(scenario())


def test_writes_made_while_no_controller_ran_are_handled_when_one_starts(server: EmbeddedServer) -> None:
    async def scenario() -> None:
        async with board(server) as (nc, bb):
            planner = Planner("planner", ("tasks.*",))
            first = Controller(bb, [planner])
            await first.start(nc.jetstream())
            await bb.put("tasks.t1", {"title": "a", "status": "open"}, writer="human")
            await _settled(first, lambda: planner.seen)
            await first.stop()
            await bb.put("tasks.t2", {"title": "b", "status": "open"}, writer="human")  # nobody is listening
            second = Controller(bb, [planner])
            await second.start(nc.jetstream())
            try:
                await _settled(second, lambda: len(planner.seen) == 2)
            finally:
                await second.stop()
            assert planner.seen == ["tasks.t1", "tasks.t2"]  # t2 handled once, t1 not again
            assert await bb.get("plans.t2") is not None

    run(scenario())


def test_a_controller_idle_for_a_while_still_wakes_on_the_next_write(server: EmbeddedServer) -> None:
    """Idle pulls time out every second (nats-py raises two kinds of timeout); the board loop outlives them."""

    async def scenario() -> None:
        async with board(server) as (nc, bb):
            planner = Planner("planner", ("tasks.*",))
            controller = Controller(bb, [planner])
            await controller.start(nc.jetstream())
            try:
                await asyncio.sleep(3.5)
                await bb.put("tasks.late", {"title": "late", "status": "open"}, writer="human")
                await _settled(controller, lambda: planner.seen)
            finally:
                await controller.stop()
            assert planner.seen == ["tasks.late"]

    run(scenario())


def test_a_value_that_is_not_json_wakes_nobody_and_does_not_block_the_next_write(server: EmbeddedServer) -> None:
    async def scenario() -> None:
        async with board(server) as (nc, bb):
            planner = Planner("planner", ("tasks.*",))
            controller = Controller(bb, [planner])
            await controller.start(nc.jetstream())
            try:
                await nc.jetstream().publish(f"$KV.bb_{bb.hive}.tasks.raw", b"not json {")  # another tool wrote it
                await bb.put("tasks.t1", {"title": "a", "status": "open"}, writer="human")
                await _settled(controller, lambda: planner.seen)
            finally:
                await controller.stop()
            assert planner.seen == ["tasks.t1"]

    run(scenario())


def test_operations_are_answered_by_the_declaring_source(server: EmbeddedServer) -> None:
    @dataclass
    class Notes:
        name: str = "notes"
        triggers: tuple[str, ...] = ()  # woken by its operation only
        operations: tuple[str, ...] = ("notes_api.create_note",)
        priority: int = 5

        async def activate(self, entry: Entry, blackboard: Any) -> Sequence[Write | Reply]:
            return [Write("notes.n1", entry.value), Reply({"id": "n1", "asked": entry.key})]

    async def scenario() -> None:
        async with board(server) as (nc, bb):
            controller = Controller(bb, [Notes()])
            await controller.start(nc.jetstream())
            try:
                reply = await controller.answer("notes_api", "create_note", {"text": "hi"})
                with pytest.raises(KnowledgeSourceFailed, match=r"no knowledge source answers notes_api\.delete"):
                    await controller.answer("notes_api", "delete", {})
            finally:
                await controller.stop()
            assert reply == {"id": "n1", "asked": "op.notes_api.create_note"}
            note = await bb.get("notes.n1")
            assert note is not None
            assert (note.value, note.writer) == ({"text": "hi"}, "notes")

    run(scenario())


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (Recorder("", ("a",)), "has no name"),
        (Recorder("x", ("tasks.>.x",)), "'>' may only be the last token"),
        (Recorder("x", ()), "declares nothing that wakes it"),
    ],
)
def test_sources_the_controller_cannot_schedule_are_refused_by_name(source: Recorder, message: str) -> None:
    with pytest.raises(InputError, match=message):
        Controller(None, [source])  # type: ignore[arg-type]


def test_two_sources_with_one_name_are_refused() -> None:
    with pytest.raises(InputError, match="two knowledge sources are called 'x'"):
        Controller(None, [Recorder("x", ("a",)), Recorder("x", ("b",))])  # type: ignore[arg-type]
