"""A turn's steps on the root's event stream (root-hive 1.4.0, ``ReportFrames``): a real root over gRPC on
127.0.0.1, the scripted model server, and ``subhive watch`` as a separate process."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from subhive.agent import ScriptedServer, Step, ToolBox, run_hive_turn
from subhive.agent._hive_turn import sinks
from subhive.agent._report import RootReporter, outline
from subhive.errors import InputError
from subhive.root_hive import AgentStep, PermissionDenied, RootHive
from subhive.root_hive._client import RootClient, admin_token_of
from subhive.root_hive._service import RootServer
from tests.kit import make_workspace, run

from .conftest import echo_tool, make_agent
from .test_agent_run import workspace as agent_workspace

SUBHIVE = [sys.executable, "-m", "subhive"]


async def agent_frames(client: RootClient, count: int, *, after: int = 0, timeout: float = 30.0) -> list[Any]:
    """The first ``count`` agent frames after ``after`` (other frames skipped), within ``timeout``."""
    found: list[Any] = []

    async def follow() -> None:
        async for frame in client.watch(after):
            if frame.kind.startswith("agent."):
                found.append(frame)
                if len(found) == count:
                    return

    await asyncio.wait_for(follow(), timeout)
    return found


async def watch_cli(workspace: Path, after: int, count: int) -> list[dict[str, Any]]:
    """``subhive watch --after N --count K -f json`` in its own process, as a person would run it."""
    process = await asyncio.create_subprocess_exec(
        *SUBHIVE,
        "watch",
        "-C",
        str(workspace),
        "--after",
        str(after),
        "--count",
        str(count),
        "-f",
        "json",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    return [json.loads(line) for line in out.decode().splitlines()]


def test_a_turns_steps_appear_on_the_roots_stream_in_order_and_watch_resumes_without_a_gap(workspace: Path) -> None:
    async def scenario(server: ScriptedServer) -> tuple[Any, list[Any], list[dict[str, Any]], RootReporter]:
        async with (
            await RootServer.start(workspace) as root,
            RootClient(root.address, admin_token_of(workspace)) as admin,
        ):
            notes = admin.with_token((await admin.register_hive("notes")).token)
            reporter = RootReporter(notes, agent="helper")
            agent = make_agent(server, ToolBox([echo_tool()]))
            try:
                result = await agent.run_turn("echo it", turn_id="turn-1", on_frame=sinks(reporter))
            finally:
                await reporter.close()
                await agent.close()
            seen = await agent_frames(admin, len(result.frames))
            middle = seen[2].seq
            resumed = await watch_cli(workspace, middle, len(seen) - 3)
            return result, seen, resumed, reporter

    long_text = "x" * 5000
    with ScriptedServer([Step.call(("echo", {"text": long_text})), Step.say("done")]) as server:
        result, seen, resumed, reporter = run(scenario(server))
    assert result.stop.code == "completed"
    assert reporter.sent == len(result.frames)
    assert reporter.dropped == 0
    # Every step, in the loop's order, one frame each, on consecutive seqs (nothing else happened meanwhile).
    assert [f.kind for f in seen] == ["agent." + f.kind for f in result.frames]
    assert [f.data["step"] for f in seen] == list(range(1, len(result.frames) + 1))
    assert [f.seq for f in seen] == list(range(seen[0].seq, seen[0].seq + len(seen)))
    assert {(f.data["hive"], f.data["agent"], f.data["turn"]) for f in seen} == {("notes", "helper", "turn-1")}
    assert [f.data["time"] for f in seen] == [f.time for f in result.frames]
    call = next(f for f in seen if f.kind == "agent.tool.call")
    assert call.data["data"]["name"] == "echo"
    # Text goes to the stream as its length only (every watcher of the workspace sees it); the board keeps it.
    sent = next(f for f in result.frames if f.kind == "tool.call").data["arguments"]
    assert call.data["data"]["arguments"] == f"<{len(sent)} characters>"
    started = seen[0].data["data"]
    assert started["prompt"] == "<7 characters>"
    assert started["tools"] == ["echo"]
    stopped = seen[-1]
    assert stopped.kind == "agent.turn.stopped"
    assert stopped.data["data"]["stop"]["code"] == "completed"
    # `subhive watch --after N` starts right after N: the same frames, no gap, no repeat.
    assert [f["seq"] for f in resumed] == [f.seq for f in seen[3:]]
    assert [(f["kind"], f["data"]) for f in resumed] == [(f.kind, f.data) for f in seen[3:]]


def test_a_hive_cannot_report_steps_as_another_hive(workspace: Path) -> None:
    step = AgentStep("helper", "t1", 1, "turn.started", '{"prompt": "hi"}', time.time())

    async def scenario() -> tuple[list[str], tuple[int, int], int]:
        async with (
            await RootServer.start(workspace) as root,
            RootClient(root.address, admin_token_of(workspace)) as admin,
        ):
            notes = admin.with_token((await admin.register_hive("notes")).token)
            await admin.register_hive("orders")
            before = root.root.last_seq
            with pytest.raises(PermissionDenied) as denied:
                await notes.report_frames([step], hive="orders")
            assert denied.value.code == "auth.not_self"
            assert root.root.last_seq == before  # nothing written
            with pytest.raises(InputError) as unnamed:
                await admin.report_frames([step])  # the admin must say for which hive
            assert unnamed.value.code == "agent_frames.no_hive"
            own = await notes.report_frames([step, AgentStep("helper", "t1", 2, "model.request", "{}", time.time())])
            by_admin = await admin.report_frames([step], hive="orders")
            frames = await agent_frames(admin, 3)
            return [f"{f.data['hive']}:{f.kind}" for f in frames], own, by_admin[0] - own[1]

    hives, own, gap = run(scenario())
    assert hives == ["notes:agent.turn.started", "notes:agent.model.request", "orders:agent.turn.started"]
    assert own[1] == own[0] + 1
    assert gap == 1


def test_the_loop_keeps_going_when_the_root_is_unreachable(caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket() as probe:  # a port nobody listens on: bound, then closed
        probe.bind(("127.0.0.1", 0))
        unused_tcp_port = probe.getsockname()[1]

    async def scenario(server: ScriptedServer) -> tuple[Any, RootReporter, float]:
        async with RootClient(f"127.0.0.1:{unused_tcp_port}", "no-root-here", timeout=2.0) as nowhere:
            reporter = RootReporter(nowhere, agent="helper", close_timeout=5.0)
            agent = make_agent(server, ToolBox([echo_tool()]))
            try:
                result = await agent.run_turn("echo it", on_frame=sinks(reporter))
            finally:
                started = time.monotonic()
                await reporter.close()
                closing = time.monotonic() - started
                await agent.close()
            return result, reporter, closing

    caplog.set_level(logging.WARNING, logger="subhive.agent")
    with ScriptedServer([Step.call(("echo", {"text": "hello"})), Step.say("done")]) as server:
        result, reporter, closing = run(scenario(server))
    assert result.stop.code == "completed"
    assert result.answer == "done"
    assert reporter.sent == 0
    assert reporter.dropped == len(result.frames)
    assert closing < 6.0  # bounded by close_timeout, whatever the root does
    warnings = [r.getMessage() for r in caplog.records if "root's event stream" in r.getMessage()]
    assert warnings
    assert "the turn goes on" in warnings[0]
    assert len(warnings) <= 2  # once per outage (and the close's count), not once per step


@settings(max_examples=25, deadline=None)
@given(
    kinds=st.lists(
        st.sampled_from(["turn.started", "model.request", "model.reply", "tool.call", "turn.stopped"]),
        min_size=1,
        max_size=20,
    ),
    bad=st.sampled_from(["", "Model.Reply", "a b", "x" * 200, "model..reply"]),
    where=st.integers(min_value=0, max_value=19),
)
def test_a_batch_with_one_malformed_step_adds_no_frame(kinds: list[str], bad: str, where: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, RootHive.open(make_workspace(Path(tmp))) as root:
        root.register_hive("notes")
        steps = [AgentStep("helper", "t1", i + 1, k, "{}", 1.0) for i, k in enumerate(kinds)]
        steps.insert(min(where, len(steps)), AgentStep("helper", "t1", 99, bad, "{}", 1.0))
        last = root.last_seq
        with pytest.raises(InputError) as refused:
            root.report_frames("notes", steps)
        assert refused.value.code == "agent_frames.kind"
        assert root.last_seq == last
        good = root.report_frames("notes", [s for s in steps if s.kind != bad])
        assert [f.kind for f in good] == ["agent." + k for k in kinds]
        assert [f.data["step"] for f in good] == list(range(1, len(kinds) + 1))


@pytest.mark.parametrize("data_json", ['{"text": "\\ud800"}', '{"text": "\ud800"}'])
def test_a_step_with_a_lone_surrogate_is_refused_cleanly(data_json: str) -> None:
    """Escaped or raw, a lone surrogate is JSON but no text: the batch is refused with its code, not a crash."""
    with tempfile.TemporaryDirectory() as tmp, RootHive.open(make_workspace(Path(tmp))) as root:
        root.register_hive("notes")
        last = root.last_seq
        with pytest.raises(InputError) as refused:
            root.report_frames("notes", [AgentStep("helper", "t1", 1, "model.reply", data_json, 1.0)])
        assert refused.value.code == "agent_frames.data"
        assert root.last_seq == last


def test_a_hive_turn_run_with_the_root_reports_its_steps_for_that_hive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``subhive agent run`` and the app server go through run_hive_turn: with the root (the admin's token) the
    steps reach the stream as the hive's."""
    ws = agent_workspace(tmp_path)

    async def scenario() -> tuple[Any, list[Any]]:
        async with (
            await RootServer.start(ws) as root,
            RootClient(root.address, admin_token_of(ws)) as admin,
        ):
            result = await run_hive_turn(ws, "notes", "where is the needle?", root=admin)
            return result, await agent_frames(admin, len(result.frames))

    with ScriptedServer([Step.call(("search", {"query": "needle"})), Step.say("docs.md, line 1")]) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        result, seen = run(scenario())
    assert result.stop.code == "completed"
    assert [f.kind for f in seen] == ["agent." + f.kind for f in result.frames]
    assert {(f.data["hive"], f.data["agent"], f.data["turn"]) for f in seen} == {("notes", "finder", result.turn)}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@given(json_values)
def test_an_outline_keeps_the_shape_and_identifiers_and_no_text(value: Any) -> None:
    shown = outline(value)

    def check(before: Any, after: Any) -> None:
        if isinstance(before, str):
            assert after == before or after == f"<{len(before)} characters>"
            assert not any(c.isspace() or c in '"{}[],' for c in after.strip("<>").replace(" characters", ""))
        elif isinstance(before, dict):
            assert list(after) == list(before)
            for key in before:
                check(before[key], after[key])
        elif isinstance(before, list):
            assert len(after) == len(before)
            for a, b in zip(before, after, strict=True):
                check(a, b)
        else:
            assert after == before

    check(value, shown)
