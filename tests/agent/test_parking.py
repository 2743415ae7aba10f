"""Parked turns: a board-woken agent whose call waits for a person at the root frees its controller worker, and
is woken by the decision or the deadline. Real nats-server, real root (gRPC on port 0), the scripted model over
real HTTP with the real ``openai`` client."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import nats
import pytest
from nats.js.errors import NotFoundError

from subhive.agent import AgentSource, RecordedRequest, ScriptedServer, Step, agent_sources, run_hive_turn
from subhive.bus import EmbeddedServer, NatsTransport
from subhive.errors import InputError
from subhive.hive import (
    Controller,
    ControllerConfig,
    Entry,
    HiveContext,
    KvBlackboard,
    Reply,
    Write,
    board_stream,
    ensure_blackboard,
)
from subhive.root_hive._client import RootClient, admin_token_of
from subhive.root_hive._service import RootServer

from .conftest import extensions
from .test_source import AGENT, hive

#: board_write waits for a person, at most TIMEOUT seconds.
ASKING = AGENT.replace('board_write = "allow"', 'board_write = "ask"').replace(
    'instructions = "agents/planner.md"\n\n[agents.planner.model]',
    'instructions = "agents/planner.md"\napproval_timeout = TIMEOUT\n\n[agents.planner.model]',
)
TASK = re.compile(r"The key (tasks\.\w+) of your hive")


def planner(request: RecordedRequest) -> Step:
    """The model: asked about tasks.X, it reads the key, then writes plans.X (an ``ask`` call); told the
    write's outcome, it answers."""
    messages = request.body["messages"]
    found = TASK.search(messages[1]["content"])
    assert found is not None, messages[1]["content"]
    results = sum(m["role"] == "tool" for m in messages)
    if results == 0:
        return Step.call(("board_read", {"key": found.group(1)}))
    if results == 2:
        return Step.say("planned")
    plan = "plans." + found.group(1).split(".")[1]
    return Step.call(("board_write", {"key": plan, "value": {"for": found.group(1)}, "expected_revision": 0}))


class Other:
    """A plain source beside the agent: it must go on while the agent's turns wait for people."""

    name = "other"
    priority = 0
    triggers = ("other.*",)
    operations = ("notes_api.ping",)

    async def activate(self, entry: Entry, ctx: Any) -> Sequence[Write | Reply]:
        if entry.key.startswith("op."):
            return [Reply({"pong": entry.value})]
        return [Write("seen." + entry.key.split(".")[1], entry.value)]


def asking_hive(tmp_path: Path, timeout: float = 120.0) -> Path:
    directory = hive(tmp_path)
    manifest = directory / "subhive.toml"
    manifest.write_text(manifest.read_text().replace(AGENT, ASKING.replace("TIMEOUT", repr(timeout))))
    return directory


class Hive:
    """One run of the hive's controller (its workers, its board consumer) over a shared board: stop it and start
    another to restart the hive."""

    def __init__(self, bus: EmbeddedServer, sources: Sequence[Any], root: RootClient, workers: int) -> None:
        self.bus, self.sources, self.root, self.workers = bus, sources, root, workers
        self.transport: NatsTransport | None = None
        self.controller: Controller | None = None
        self.board: KvBlackboard | None = None

    async def start(self) -> Controller:
        self.transport = await NatsTransport.connect(self.bus.endpoint(), "notes")
        js = self.transport.connection.jetstream()
        self.board = await KvBlackboard.open(js, "notes")
        context = HiveContext("notes", self.board, self.transport, root=self.root)
        config = ControllerConfig(concurrency=self.workers, retry_delay=0.05)
        self.controller = Controller(self.board, self.sources, context=context, config=config)
        await self.controller.start(js)
        return self.controller

    async def stop(self) -> None:
        if self.controller is not None:
            await self.controller.stop()
        if self.transport is not None:
            await self.transport.close()


async def fresh_board(bus: EmbeddedServer) -> None:
    nc = await nats.connect(bus.url)
    js = nc.jetstream()
    with contextlib.suppress(NotFoundError):
        await js.delete_stream(board_stream("notes"))
    await ensure_blackboard(js, "notes")
    await nc.close()


async def until(check: Callable[[], Awaitable[Any]], what: str, timeout: float = 30.0) -> Any:
    """Poll ``check`` until it returns something true (bounded: a busy machine is slow, a bug is not)."""
    try:
        async with asyncio.timeout(timeout):
            while not (value := await check()):
                await asyncio.sleep(0.02)
            return value
    except TimeoutError:
        raise AssertionError(f"no {what} within {timeout:g} s") from None


def turns(snapshot: Any) -> dict[str, dict[str, Any]]:
    """The agent's turn summaries on the board, by the task each was about."""
    out = {}
    for key, entry in snapshot.items():
        if key.startswith("agent-turns.planner.") and key.count(".") == 2:
            found = TASK.search(entry.value["prompt"])
            assert found is not None
            out[found.group(1)] = {"key": key, **entry.value}
    return out


def frames_of(snapshot: Any, summary_key: str) -> list[dict[str, Any]]:
    kept = [e.value for k, e in snapshot.items() if k.startswith(summary_key + ".")]
    return sorted(kept, key=lambda f: f["seq"])


def by_task(requests: Sequence[RecordedRequest]) -> dict[str, list[RecordedRequest]]:
    out: dict[str, list[RecordedRequest]] = {}
    for request in requests:
        found = TASK.search(request.body["messages"][1]["content"])
        assert found is not None
        out.setdefault(found.group(1), []).append(request)
    return out


def test_turns_waiting_for_people_do_not_hold_the_hives_workers(
    tmp_path: Path, bus: EmbeddedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two workers, three turns waiting for approvals: other keys and requests are still handled at once; each
    turn is woken by its decision and goes on from its kept frames, the model not asked again."""
    directory = asking_hive(tmp_path)
    workspace = tmp_path / "ws"
    tasks = ["tasks.t1", "tasks.t2", "tasks.t3"]

    async def scenario() -> tuple[Any, Any, list[Any], dict[str, int]]:
        await fresh_board(bus)
        async with (
            await RootServer.start(workspace) as root,
            RootClient(root.address, admin_token_of(workspace)) as admin,
        ):
            notes = admin.with_token((workspace / ".subhive" / "tokens" / "notes.token").read_text().strip())
            running = Hive(bus, [*agent_sources(directory), Other()], notes, workers=2)
            controller = await running.start()
            board = running.board
            assert board is not None
            try:
                for task in tasks:
                    await board.put(task, {"title": task}, writer="human")
                asked = await until(
                    lambda: _when(admin.approvals(kind="tool"), lambda a: len(a) == 3), "three approvals"
                )
                await until(lambda: _now(controller.stats.parked == 3), "three parked turns")
                # Every worker is free: another key and a request are handled while the three turns wait.
                await board.put("other.x", {"n": 1}, writer="human")
                await until(lambda: board.get("seen.x"), "the other source's write")
                pong = await asyncio.wait_for(controller.answer("notes_api", "ping", {"n": 2}), 10)
                assert pong == {"pong": {"n": 2}}
                assert controller.stats.parked == 3
                assert len(await admin.approvals(kind="tool")) == 3  # nobody decided yet
                by_plan = {json.loads(a.tool_call.arguments)["key"]: a for a in asked}
                await admin.approve(by_plan["plans.t1"].id, note="go")
                await admin.approve(by_plan["plans.t2"].id, note="go")
                await admin.reject(by_plan["plans.t3"].id, reason="not now")
                await controller.idle(timeout=30)
                return (
                    await board.snapshot(),
                    await board.history("plans.t1"),
                    await admin.approvals("all", kind="tool"),
                    dict(controller.stats.by_source),
                )
            finally:
                await running.stop()

    with ScriptedServer(planner) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        snapshot, history, approvals, activations = asyncio.run(scenario())
        requests = by_task(server.chat_requests())
    assert len(approvals) == 3  # each call asked once, across its park and wake
    assert snapshot["plans.t2"].value == {"for": "tasks.t2"}
    assert "plans.t3" not in snapshot
    assert [(e.value, e.writer) for e in history] == [({"for": "tasks.t1"}, "agent:planner")]
    assert activations["agent_planner"] == 6  # three turns, each activated, parked, woken once
    summaries = turns(snapshot)
    for task in tasks:
        assert summaries[task]["status"] == "completed"
        assert "parked" not in summaries[task]
        assert len(requests[task]) == 3  # the model was not asked again after the wake
        assert all(extensions(requests[task]))  # the request after the wake extends the one before the park
        frames = frames_of(snapshot, summaries[task]["key"])
        kinds = [f["kind"] for f in frames]
        assert kinds.count("turn.parked") == kinds.count("turn.resumed") == 1
        results = [f["name"] for f in frames if f["kind"] == "tool.result"]
        assert results == ["board_read", "board_write"]  # the read before the park did not run again
        last_result = max(i for i, kind in enumerate(kinds) if kind == "tool.result")
        assert kinds.index("turn.parked") < kinds.index("turn.resumed") < last_result
    rejected = json.loads(requests["tasks.t3"][-1].body["messages"][-1]["content"])
    assert (rejected["error"], "not now" in rejected["message"]) == ("tool.rejected", True)


def test_a_parked_turn_survives_a_restart_and_is_woken_by_the_decision_or_the_deadline(
    tmp_path: Path, bus: EmbeddedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hive restarts while two turns wait. After the restart one is approved and goes on; nobody answers the
    other, which reaches its deadline (kept at the root) and tells the model ``tool.approval_timeout``. Each call
    is asked once, each write made at most once, and no request is sent twice."""
    directory = asking_hive(tmp_path, timeout=5.0)
    workspace = tmp_path / "ws"

    async def scenario() -> tuple[Any, list[Any], Any]:
        await fresh_board(bus)
        async with (
            await RootServer.start(workspace) as root,
            RootClient(root.address, admin_token_of(workspace)) as admin,
        ):
            notes = admin.with_token((workspace / ".subhive" / "tokens" / "notes.token").read_text().strip())
            first = Hive(bus, agent_sources(directory), notes, workers=1)
            controller = await first.start()
            assert first.board is not None
            await first.board.put("tasks.t1", {"title": "one"}, writer="human")
            await first.board.put("tasks.t2", {"title": "two"}, writer="human")
            asked = await until(lambda: _when(admin.approvals(kind="tool"), lambda a: len(a) == 2), "two approvals")
            await until(lambda: _now(controller.stats.parked == 2), "two parked turns")
            await first.stop()  # the hive dies while both wait

            second = Hive(bus, agent_sources(directory), notes, workers=1)
            controller = await second.start()
            board = second.board
            assert board is not None
            try:
                # The same writes come back to the new controller at once (the old one handed them back); t1
                # resumes and parks again, then its decision wakes it.
                await until(lambda: _parked_again(board, "tasks.t1"), "t1 parked again")
                by_plan = {json.loads(a.tool_call.arguments)["key"]: a for a in asked}
                await admin.approve(by_plan["plans.t1"].id, note="go")
                await until(lambda: _status(board, "tasks.t1", "completed"), "t1 completed")
                await until(lambda: _status(board, "tasks.t2", "completed"), "t2 completed at its deadline")
                return (
                    await board.snapshot(),
                    await admin.approvals("all", kind="tool"),
                    await board.history("plans.t1"),
                )
            finally:
                await second.stop()

    with ScriptedServer(planner) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        snapshot, approvals, history = asyncio.run(scenario())
        requests = by_task(server.chat_requests())
    assert len(approvals) == 2  # asked once each, across the restart
    assert sorted(a.status for a in approvals) == ["approved", "pending"]
    assert [(e.value, e.writer) for e in history] == [({"for": "tasks.t1"}, "agent:planner")]
    assert "plans.t2" not in snapshot
    for task in ("tasks.t1", "tasks.t2"):
        assert len(requests[task]) == 3
        assert all(extensions(requests[task]))
    timed_out = json.loads(requests["tasks.t2"][-1].body["messages"][-1]["content"])
    assert timed_out["error"] == "tool.approval_timeout"
    assert "within 5 s" in timed_out["message"]  # the same outcome as a wait that ran out
    summaries = turns(snapshot)
    kinds = [f["kind"] for f in frames_of(snapshot, summaries["tasks.t2"]["key"])]
    # Parked, and after the restart parked again (or, on a slow machine, already past its deadline).
    assert kinds.count("turn.parked") in (1, 2)
    assert kinds.count("turn.resumed") == kinds.count("turn.parked")  # the restart, or the deadline's wake
    assert kinds.count("tool.result") == 2  # board_read once, board_write once
    kinds = [f["kind"] for f in frames_of(snapshot, summaries["tasks.t1"]["key"])]
    assert (kinds.count("turn.parked"), kinds.count("turn.resumed")) == (2, 2)  # the restart, then the decision
    assert kinds[-1] == "turn.stopped"


async def _now(value: Any) -> Any:
    return value


async def _when(read: Awaitable[Any], test: Callable[[Any], bool]) -> Any:
    value = await read
    return value if test(value) else None


async def _parked_again(board: KvBlackboard, task: str) -> bool:
    snapshot = await board.snapshot()
    summary = turns(snapshot).get(task)
    if summary is None or summary["status"] != "parked":
        return False
    return [f["kind"] for f in frames_of(snapshot, summary["key"])].count("turn.parked") == 2


async def _status(board: KvBlackboard, task: str, status: str) -> bool:
    summaries = turns(await board.snapshot())
    return task in summaries and summaries[task]["status"] == status


def test_a_source_under_a_root_parks_instead_of_waiting(
    tmp_path: Path, bus: EmbeddedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The contract between the agent and the controller, without the controller: an activation whose call is
    still pending raises Parked (with a wake), and the turn's summary says what it waits for."""
    from subhive.hive import Parked

    directory = asking_hive(tmp_path)
    workspace = tmp_path / "ws"
    entry = Entry("tasks.t9", {"title": "x"}, revision=3, writer="human")

    async def scenario() -> tuple[Parked, dict[str, Any]]:
        await fresh_board(bus)
        transport = await NatsTransport.connect(bus.endpoint(), "notes")
        board = await KvBlackboard.open(transport.connection.jetstream(), "notes")
        try:
            async with (
                await RootServer.start(workspace) as root,
                RootClient(root.address, admin_token_of(workspace)) as admin,
            ):
                notes = admin.with_token((workspace / ".subhive" / "tokens" / "notes.token").read_text().strip())
                source: AgentSource = agent_sources(directory)[0]
                with pytest.raises(Parked) as parked:
                    await source.activate(entry, HiveContext("notes", board, transport, root=notes))
                wake = parked.value.wake
                assert isinstance(wake, Awaitable)
                (asked,) = await admin.approvals(kind="tool")
                await admin.approve(asked.id)
                await asyncio.wait_for(wake, 10)  # the decision wakes it
                summary = turns(await board.snapshot())["tasks.t9"]
                # The hive resumes it: `subhive agent run --resume` says so instead of running it beside.
                with pytest.raises(InputError) as refused:
                    await run_hive_turn(
                        workspace, "notes", "", agent="planner", endpoint=bus.endpoint(), resume=summary["turn"]
                    )
                assert refused.value.code == "agent.turn_parked"
                assert asked.id in refused.value.message
                return parked.value, summary
        finally:
            await transport.close()

    with ScriptedServer(planner) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        parked, summary = asyncio.run(scenario())
    assert parked.resume is None  # a board write's turn is found again by its write
    assert summary["status"] == "parked"
    assert summary["parked"]["name"] == "board_write"
    assert summary["parked"]["approval"].startswith("t-")


def test_a_turn_serving_a_request_parks_and_its_caller_gets_the_reply(
    tmp_path: Path, bus: EmbeddedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An operation-serving turn parks too: the request's caller waits for its reply, but the one worker is
    free for another request meanwhile; the decision wakes the turn, which resumes by its id and answers."""
    from .test_source import serving_hive

    directory = serving_hive(tmp_path)
    manifest = directory / "subhive.toml"
    manifest.write_text(manifest.read_text().replace('board_write = "allow"', 'board_write = "ask"'))
    workspace = tmp_path / "ws"

    def model(request: RecordedRequest) -> Step:
        if request.body["messages"][-1]["role"] == "tool":
            return Step.say('{"summary": "logins"}')
        return Step.call(("board_write", {"key": "notes.summary", "value": "logins", "expected_revision": 0}))

    async def scenario() -> tuple[Any, Any, list[Any]]:
        await fresh_board(bus)
        async with (
            await RootServer.start(workspace) as root,
            RootClient(root.address, admin_token_of(workspace)) as admin,
        ):
            notes = admin.with_token((workspace / ".subhive" / "tokens" / "notes.token").read_text().strip())
            running = Hive(bus, [*agent_sources(directory), Other()], notes, workers=1)
            controller = await running.start()
            try:
                asking = asyncio.create_task(controller.answer("notes_api", "summarise", {"text": "Add login"}))
                (asked,) = await until(lambda: _when(admin.approvals(kind="tool"), bool), "an approval")
                await until(lambda: _now(controller.stats.parked == 1), "a parked turn")
                assert not asking.done()
                pong = await asyncio.wait_for(controller.answer("notes_api", "ping", {"n": 1}), 10)
                assert pong == {"pong": {"n": 1}}  # the only worker was free
                await admin.approve(asked.id, note="go")
                reply = await asyncio.wait_for(asking, 30)
                assert running.board is not None
                return reply, await running.board.get("notes.summary"), await admin.approvals("all", kind="tool")
            finally:
                await running.stop()

    with ScriptedServer(model) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        reply, written, approvals = asyncio.run(scenario())
        requests = server.chat_requests()
    assert reply == {"summary": "logins"}
    assert written is not None
    assert written.value == "logins"
    assert len(approvals) == 1
    assert len(requests) == 2
    assert all(extensions(requests))


def test_two_asking_calls_in_one_reply_park_one_after_the_other_in_order(
    tmp_path: Path, bus: EmbeddedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Calls that wait for a person never run beside others: the second is asked only once the first is
    decided and has run, so a person decides them in the reply's order and the writes land in that order."""
    directory = asking_hive(tmp_path)
    workspace = tmp_path / "ws"
    writes = [{"key": f"plans.p{n}", "value": {"n": n}, "expected_revision": 0} for n in (1, 2)]

    def model(request: RecordedRequest) -> Step:
        if request.body["messages"][-1]["role"] == "tool":
            return Step.say("both written")
        return Step.call(*(("board_write", w) for w in writes))

    async def scenario() -> tuple[list[str], list[Any], Any]:
        await fresh_board(bus)
        async with (
            await RootServer.start(workspace) as root,
            RootClient(root.address, admin_token_of(workspace)) as admin,
        ):
            notes = admin.with_token((workspace / ".subhive" / "tokens" / "notes.token").read_text().strip())
            running = Hive(bus, agent_sources(directory), notes, workers=1)
            controller = await running.start()
            board = running.board
            assert board is not None
            try:
                await board.put("tasks.t1", {"title": "two plans"}, writer="human")
                decided: list[str] = []
                for _ in writes:
                    (asked,) = await until(lambda: _when(admin.approvals(kind="tool"), bool), "the next approval")
                    await until(lambda: _now(controller.stats.parked == 1), "the turn parked")
                    decided.append(json.loads(asked.tool_call.arguments)["key"])
                    await admin.approve(asked.id, note="go")
                await until(lambda: _status(board, "tasks.t1", "completed"), "the turn completed")
                snapshot = await board.snapshot()
                plans = sorted((e.revision, k) for k, e in snapshot.items() if k.startswith("plans."))
                return decided, [k for _, k in plans], snapshot
            finally:
                await running.stop()

    with ScriptedServer(model) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        decided, written, snapshot = asyncio.run(scenario())
        requests = server.chat_requests()
    assert decided == ["plans.p1", "plans.p2"]  # asked in the reply's order, one at a time
    assert written == ["plans.p1", "plans.p2"]  # written in that order
    assert len(requests) == 2
    assert all(extensions(requests))
    frames = frames_of(snapshot, turns(snapshot)["tasks.t1"]["key"])
    assert [f["kind"] for f in frames].count("turn.parked") == 2
