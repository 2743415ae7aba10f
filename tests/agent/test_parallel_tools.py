"""Several tool calls in one reply: those that may run together (read-only, under ``allow``) do, bounded; any
other call runs alone, in its place; results join the conversation in the reply's order whatever order they
finish in, so the requests are the same bytes; budgets count as if the calls ran one by one."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from subhive.agent import (
    Agent,
    AgentSettings,
    Budgets,
    Frame,
    ModelSettings,
    ScriptedServer,
    Step,
    Tool,
    ToolBox,
    schema_object,
)
from subhive.agent._files import FileSlice, file_tools
from subhive.agent._hive_tools import board_tools

from .conftest import extensions

TEXT = schema_object({"text": {"type": "string"}}, ["text"])


class Ordered:
    """Tools that all start, then finish in a chosen order: proof that they ran at once, and a way to make
    them finish in any order. ``log`` records ``start x`` and ``end x``."""

    def __init__(self, finish_order: Sequence[str]) -> None:
        self.finish_order = list(finish_order)
        self.log: list[str] = []
        self.all_started = asyncio.Event()
        self.ended: dict[str, asyncio.Event] = {name: asyncio.Event() for name in finish_order}

    async def run(self, arguments: dict[str, Any]) -> Any:
        name = arguments["text"]
        self.log.append(f"start {name}")
        if sum(e.startswith("start") for e in self.log) == len(self.finish_order):
            self.all_started.set()
        await asyncio.wait_for(self.all_started.wait(), 5)
        place = self.finish_order.index(name)
        if place:
            await asyncio.wait_for(self.ended[self.finish_order[place - 1]].wait(), 5)
        self.log.append(f"end {name}")
        self.ended[name].set()
        return {"read": name}


def agent_for(server: ScriptedServer, tools: Sequence[Tool], *, budgets: Budgets | None = None, **extra: Any) -> Agent:
    settings = AgentSettings(
        "helper",
        "You read.",
        ModelSettings("scripted-1", base_url=server.base_url, max_retries=0, timeout=5.0),
        budgets=budgets or Budgets(),
        **extra,
    )
    return Agent(settings, ToolBox(tools))


def turn(script: list[Step], tools: Sequence[Tool], **options: Any) -> tuple[Any, list[bytes]]:
    """One turn against its own scripted server: the result and the raw bytes of every request."""
    with ScriptedServer(script) as server:
        agent = agent_for(server, tools, **options)

        async def go() -> Any:
            try:
                return await agent.run_turn("read them")
            finally:
                await agent.close()

        result = asyncio.run(go())
        return result, [r.raw for r in server.chat_requests()]


def reads(names: Sequence[str], tool: str = "fetch") -> Step:
    return Step.call(*((tool, {"text": n}) for n in names))


def test_reads_run_at_once_and_finishing_backwards_changes_no_byte() -> None:
    names = ["a", "b", "c"]

    def run(order: Sequence[str]) -> tuple[Any, list[bytes], list[str]]:
        ordered = Ordered(order)
        fetch = Tool("fetch", "read one thing", TEXT, ordered.run, concurrent=True)
        result, raw = turn([reads(names), Step.say("done")], [fetch])
        return result, raw, ordered.log

    forwards, raw_forwards, log_forwards = run(names)
    backwards, raw_backwards, log_backwards = run(names[::-1])
    assert log_backwards == ["start a", "start b", "start c", "end c", "end b", "end a"]  # at once, then reversed
    assert log_forwards[3:] == ["end a", "end b", "end c"]
    assert raw_backwards == raw_forwards  # byte-identical requests, whatever order the tools finished in
    assert backwards.answer == forwards.answer == "done"
    results = [f for f in backwards.frames if f.kind == "tool.result"]
    assert [f.data["content"] for f in results] == ['{"read": "a"}', '{"read": "b"}', '{"read": "c"}']
    assert backwards.tool_calls == 3


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.permutations(["a", "b", "c", "d"]))
def test_any_finishing_order_sends_the_same_requests(order: list[str]) -> None:
    def run(finish: Sequence[str]) -> tuple[list[bytes], list[str]]:
        ordered = Ordered(finish)
        fetch = Tool("fetch", "read one thing", TEXT, ordered.run, concurrent=True)
        _result, raw = turn([reads(["a", "b", "c", "d"]), Step.say("done")], [fetch])
        return raw, ordered.log

    baseline, _ = run(["a", "b", "c", "d"])
    raw, log = run(order)
    assert [e[4:] for e in log if e.startswith("end")] == order
    assert len(raw) == 2
    assert raw == baseline


def test_a_call_that_may_not_run_beside_others_runs_alone_in_its_place() -> None:
    log: list[str] = []
    reading: dict[str, asyncio.Event] = {}

    async def fetch(arguments: dict[str, Any]) -> Any:
        name = arguments["text"]
        log.append(f"start {name}")
        # The two reads of a pair wait for each other: they can only both end if they run at once.
        pair = {"a": "b", "b": "a", "c": "d", "d": "c"}[name]
        reading.setdefault(name, asyncio.Event()).set()
        await asyncio.wait_for(reading.setdefault(pair, asyncio.Event()).wait(), 5)
        log.append(f"end {name}")
        return name

    async def write(arguments: dict[str, Any]) -> Any:
        log.append("start write")
        await asyncio.sleep(0)
        log.append("end write")
        return "written"

    tools = [Tool("fetch", "read", TEXT, fetch, concurrent=True), Tool("write", "write", TEXT, write)]
    script = [
        Step.call(
            ("fetch", {"text": "a"}),
            ("fetch", {"text": "b"}),
            ("write", {"text": "w"}),
            ("fetch", {"text": "c"}),
            ("fetch", {"text": "d"}),
        ),
        Step.say("done"),
    ]
    result, _raw = turn(script, tools)
    assert result.stop.code == "completed"
    assert log.index("start write") > max(log.index("end a"), log.index("end b"))
    assert min(log.index("start c"), log.index("start d")) > log.index("end write")
    calls = [f.data["name"] for f in result.frames if f.kind == "tool.result"]
    assert calls == ["fetch", "fetch", "write", "fetch", "fetch"]


def test_at_most_parallel_tools_run_at_once() -> None:
    running = {"now": 0, "most": 0}

    async def fetch(arguments: dict[str, Any]) -> Any:
        running["now"] += 1
        running["most"] = max(running["most"], running["now"])
        for _ in range(5):
            await asyncio.sleep(0)
        running["now"] -= 1
        return arguments["text"]

    tool = Tool("fetch", "read", TEXT, fetch, concurrent=True)
    result, _raw = turn([reads("abcdef"), Step.say("done")], [tool], parallel_tools=2)
    assert result.tool_calls == 6
    assert running["most"] == 2


def outline(frames: Sequence[Frame]) -> list[tuple[str, str]]:
    return sorted((f.kind, str(f.data.get("content") or f.data.get("arguments") or "")) for f in frames)


@pytest.mark.parametrize(
    ("budgets", "calls", "stop"),
    [
        (Budgets(tool_calls=3), ["a", "b", "c", "d", "e"], "budget.tool_calls"),
        (Budgets(repeat_limit=2), ["a", "b", "a", "c"], "loop.repeated_call"),
    ],
)
def test_budgets_count_calls_run_together_as_if_one_by_one(budgets: Budgets, calls: list[str], stop: str) -> None:
    """The same stop, after the same calls, with the same results, whether the calls may run together or not."""
    outcomes = []
    for concurrent in (True, False):
        ran: list[str] = []

        async def fetch(arguments: dict[str, Any], ran: list[str] = ran) -> Any:
            ran.append(arguments["text"])
            return arguments["text"]

        tool = Tool("fetch", "read", TEXT, fetch, concurrent=concurrent)
        result, _raw = turn([reads(calls), Step.say("done")], [tool], budgets=budgets)
        outcomes.append((result.stop.code, result.tool_calls, sorted(ran), outline(result.frames[:-1])))
    assert outcomes[0] == outcomes[1]  # the same stop, count, calls run, and frames (in another order)
    assert outcomes[0][0] == stop
    assert len(outcomes[0][2]) == (3 if stop == "budget.tool_calls" else 2)


def test_only_reads_under_allow_run_together(tmp_path: Path) -> None:
    async def nothing(arguments: dict[str, Any]) -> Any:
        return None

    files = {t.name: t.concurrent for t in file_tools(FileSlice(tmp_path))}
    board = {t.name: t.concurrent for t in board_tools(cast(Any, None), "agent:x")}  # built, never called
    assert files == {"list_files": True, "read_file": True, "search": True}
    assert board == {"board_read": True, "board_write": False}
    tools = [Tool(name, name, TEXT, nothing, concurrent=True) for name in ("r1", "r2", "r3")]
    box = ToolBox([*tools, Tool("w", "w", TEXT, nothing)], {"r2": "ask", "r3": "deny"})
    assert [box.concurrent(n) for n in ("r1", "r2", "r3", "w", "nope")] == [True, False, False, False, False]


def test_a_turn_dying_mid_way_through_calls_run_together_resumes_in_the_replys_order() -> None:
    from .test_resume import Crash, crash_at

    kept: list[dict[str, Any]] = []
    runs: list[str] = []

    async def fetch(arguments: dict[str, Any]) -> Any:
        runs.append(arguments["text"])
        await asyncio.sleep(0.01 if arguments["text"] == "a" else 0)  # a finishes last
        return arguments["text"]

    tool = Tool("fetch", "read", TEXT, fetch, concurrent=True)
    with ScriptedServer([reads(["a", "b", "c"]), Step.say("done")]) as server:

        async def first() -> None:
            agent = agent_for(server, [tool])
            try:
                await agent.run_turn("read", turn_id="t1", on_frame=crash_at(kept, "tool.result"))
            finally:
                await agent.close()

        with pytest.raises(Crash):
            asyncio.run(first())
        assert [f["content"] for f in kept if f["kind"] == "tool.result"] == ["a"]  # recorded in order: a first

        async def again() -> Any:
            agent = agent_for(server, [tool])
            try:
                return await agent.resume_turn("t1", kept)
            finally:
                await agent.close()

        result = asyncio.run(again())
        requests = server.chat_requests()
    assert result.stop.code == "completed"
    assert runs.count("a") == 1  # its result was kept: not run again
    assert all(extensions(requests))
    contents = [m["content"] for m in requests[-1].body["messages"] if m["role"] == "tool"]
    assert contents == ["a", "b", "c"]
