"""A turn whose process died goes on from its kept frames: the conversation rebuilt exactly (the next request
extends the last one sent), tool calls that have a result never run again, the others run once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from subhive.agent import Frame, RecordedRequest, ScriptedServer, Step, Tool, ToolBox, schema_object

from .conftest import extensions, make_agent
from .test_loop import _compacting_script


class Crash(BaseException):
    """The process dying mid-turn: nothing in the loop catches it."""


def counting_tool(runs: list[str]) -> Tool:
    async def run(arguments: dict[str, Any]) -> Any:
        runs.append(arguments["text"])
        return {"echo": arguments["text"]}

    return Tool("echo", "echo", schema_object({"text": {"type": "string"}}, ["text"]), run)


def crash_at(kept: list[dict[str, Any]], kind: str, nth: int = 1) -> Any:
    """A frame sink that keeps frames (as the board does) and dies after the ``nth`` frame of ``kind``."""
    seen = {"n": 0}

    def sink(frame: Frame) -> None:
        kept.append(frame.to_dict())
        if frame.kind == kind:
            seen["n"] += 1
            if seen["n"] == nth:
                raise Crash

    return sink


def first_run(server: ScriptedServer, runs: list[str], sink: Any, **model: Any) -> None:
    agent = make_agent(server, ToolBox([counting_tool(runs)]), **model)

    async def go() -> None:
        try:
            await agent.run_turn("echo a and b", turn_id="turn-1", on_frame=sink)
        finally:
            await agent.close()

    with pytest.raises(Crash):
        asyncio.run(go())


def resume(server: ScriptedServer, runs: list[str], kept: list[dict[str, Any]], **model: Any) -> Any:
    agent = make_agent(server, ToolBox([counting_tool(runs)]), **model)

    async def go() -> Any:
        try:
            return await agent.resume_turn("turn-1", kept)
        finally:
            await agent.close()

    return asyncio.run(go())


def test_a_turn_resumes_between_two_tool_calls_and_runs_each_once() -> None:
    runs: list[str] = []
    kept: list[dict[str, Any]] = []
    script = [Step.call(("echo", {"text": "a"}), ("echo", {"text": "b"})), Step.say("done")]
    with ScriptedServer(script) as server:
        first_run(server, runs, crash_at(kept, "tool.result"))
        assert runs == ["a"]
        result = resume(server, runs, kept)
        requests = server.chat_requests()
    assert runs == ["a", "b"]  # a is not run again
    assert result.stop.code == "completed"
    assert result.answer == "done"
    assert all(extensions(requests))
    assert [m["role"] for m in requests[1].body["messages"]] == ["system", "user", "assistant", "tool", "tool"]
    kinds = [f.kind for f in result.frames]
    assert kinds[len(kept)] == "turn.resumed"
    assert [f.seq for f in result.frames] == list(range(1, len(result.frames) + 1))
    assert result.tool_calls == 2
    assert len(result.usage) == 2


def test_an_answer_received_before_the_crash_is_not_asked_for_again() -> None:
    runs: list[str] = []
    kept: list[dict[str, Any]] = []
    with ScriptedServer([Step.say("the answer")]) as server:
        first_run(server, runs, crash_at(kept, "model.reply"))
        result = resume(server, runs, kept)
        assert len(server.chat_requests()) == 1
    assert (result.stop.code, result.answer) == ("completed", "the answer")


def test_a_compacted_turn_resumes_on_the_compacted_history() -> None:
    runs: list[str] = []
    kept: list[dict[str, Any]] = []
    options = {"context_window": 4000, "compact_at": 0.5}
    with ScriptedServer(_compacting_script(30)) as server:
        first_run(server, runs, crash_at(kept, "tool.result", nth=20), **options)
        before: list[RecordedRequest] = server.chat_requests()
        assert any(f["kind"] == "compaction" for f in kept)
        result = resume(server, runs, kept, **options)
        requests = server.chat_requests()
    assert result.stop.code == "completed"
    assert len(runs) == len(set(runs)) == 30  # every step ran exactly once across the crash
    last, first_after = before[-1].body["messages"], requests[len(before)].body["messages"]
    assert first_after[: len(last)] == last  # the first request after the crash extends the last one before it


def test_a_stopped_turn_cannot_be_resumed() -> None:
    async def go(server: ScriptedServer) -> None:
        agent = make_agent(server)
        try:
            result = await agent.run_turn("x")
            with pytest.raises(ValueError, match="already stopped"):
                await agent.resume_turn(result.turn, [f.to_dict() for f in result.frames])
        finally:
            await agent.close()

    with ScriptedServer([Step.say("done")]) as server:
        asyncio.run(go(server))
