"""Repairs handed to an agent by the runtime (decision 0053), against a real nats-server, a real root over
gRPC and the scripted model server: a hive whose knowledge source fails twice the same way starts its
repairing agent's turn by itself, whose diff waits for a person at the root; without such an agent, nothing
starts."""

from __future__ import annotations

import asyncio
import difflib
import logging
import textwrap
from pathlib import Path
from typing import Any

import nats
import pytest

from subhive.agent import FIXED_BY, ScriptedServer, Step
from subhive.bus import EmbeddedServer
from subhive.hive import HiveRuntime, KvBlackboard, ensure_blackboard
from subhive.root_hive._client import RootClient, admin_token_of
from subhive.root_hive._service import RootServer
from subhive.workspace import Kind, init_workspace, new_subhive
from tests.kit import run

BROKEN = textwrap.dedent(
    '''
    from subhive.hive import Write


    class Title:
        """Copies a task's text into its title: fails on tasks without text."""

        name = "title"
        triggers = ("tasks.*",)
        priority = 1

        async def activate(self, entry, blackboard):
            text = entry.value["text"]
            return [Write(entry.key, {**entry.value, "title": text})] if entry.value.get("title") != text else []


    SOURCES = (Title(),)
    '''
)
FIXED = BROKEN.replace('entry.value["text"]', 'entry.value.get("text", entry.value["title"])')
DIFF = "".join(
    difflib.unified_diff(
        BROKEN.splitlines(keepends=True),
        FIXED.splitlines(keepends=True),
        "a/solo_hive/knowledge.py",
        "b/solo_hive/knowledge.py",
    )
)
AGENT = """
[agents.fixer]
instructions = "agents/fixer.md"
{repairs}
[agents.fixer.model]
name = "scripted-1"
max_retries = 0

[agents.fixer.tools]
read_file = "allow"
propose_diff = "ask"

[agents.fixer.budgets]
model_calls = 5
wall_time = 60
"""
DEADLINE = 60.0


def _workspace(tmp_path: Path, *, repairs: bool) -> Path:
    workspace = tmp_path / "ws"
    init_workspace(workspace)
    new_subhive("solo", Kind.custom, start=workspace)
    hive = workspace / "subhives" / "solo"
    (hive / "solo_hive" / "knowledge.py").write_text(BROKEN)
    manifest = hive / "subhive.toml"
    manifest.write_text(manifest.read_text() + AGENT.format(repairs="repairs = true\n" if repairs else ""))
    (hive / "agents").mkdir(exist_ok=True)
    (hive / "agents" / "fixer.md").write_text("You fix the solo hive's knowledge sources.")
    return workspace


async def _until(check: Any, what: str) -> Any:
    """Poll ``check`` (async) until it returns something truthy, within DEADLINE."""
    loop = asyncio.get_running_loop()
    end = loop.time() + DEADLINE
    while loop.time() < end:
        found = await check()
        if found:
            return found
        await asyncio.sleep(0.05)
    raise AssertionError(f"gave up waiting for {what}")


async def _failing_twice(server: EmbeddedServer, workspace: Path, root_address: str) -> tuple[HiveRuntime, Any]:
    """The hive, running, after two tasks without text made its source fail twice the same way."""
    nc = await nats.connect(server.url)
    await ensure_blackboard(nc.jetstream(), "solo")
    token = (workspace / ".subhive" / "tokens" / "solo.token").read_text().strip()
    runtime = await HiveRuntime.start(workspace, "solo", server.endpoint(), root_address=root_address, token=token)
    board = KvBlackboard(nc.jetstream(), "solo")
    await board.put("tasks.t1", {"title": "one", "status": "open"}, writer="human")
    await board.put("tasks.t2", {"title": "two", "status": "open"}, writer="human")
    return runtime, nc


def test_a_repeated_failure_is_handed_to_the_hives_repairing_agent(
    server: EmbeddedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    workspace = _workspace(tmp_path, repairs=True)
    caplog.set_level(logging.INFO, logger="subhive.hive")

    async def scenario() -> tuple[Any, Any, Any, int]:
        async with (
            await RootServer.start(workspace, codegen=False) as root,
            RootClient(root.address, admin_token_of(workspace)) as admin,
        ):
            runtime, nc = await _failing_twice(server, workspace, root.address)
            try:

                async def diff_waiting() -> Any:
                    calls = await admin.approvals(kind="tool")
                    return next((a for a in calls if a.tool_call and a.tool_call.tool == "propose_diff"), None)

                asked = await _until(diff_waiting, "the agent's diff at the root")
                waiting = await admin.approval("r-1")  # the diff waits for a person; the repair is still open
                await admin.approve(asked.id, note="looks right")
                assert runtime.repairs is not None
                turn = runtime.repairs.turns["r-1"]
                code = await asyncio.wait_for(turn.wait(), DEADLINE)
                return asked, waiting, await admin.approval("r-1"), code
            finally:
                await runtime.stop()
                await nc.close()

    with ScriptedServer([Step.call(("propose_diff", {"diff": DIFF})), Step.say("title is the fallback")]) as model:
        monkeypatch.setenv("OPENAI_BASE_URL", model.base_url)
        asked, waiting, acknowledged, code = run(scenario())
        requests = model.chat_requests()
    assert asked.proposer == "solo"
    assert asked.tool_call.agent == "fixer"
    assert waiting.status == "pending"
    assert waiting.kind == "repair"
    assert code == 0
    assert (workspace / "subhives" / "solo" / "solo_hive" / "knowledge.py").read_text() == FIXED
    assert acknowledged.status == "approved"
    assert acknowledged.decision.startswith(f"{FIXED_BY} fixer in turn ")
    prompt = requests[0].body["messages"][-1]["content"]
    assert prompt.startswith("Repair r-1: ")
    assert "KeyError: 'text'" in prompt
    assert "repair r-1 handed to agent fixer" in caplog.text
    handed = [r for r in caplog.records if "handed to agent" in r.getMessage()]
    assert len(handed) == 1  # one turn for the repair, however often the error is reported


def test_a_hive_without_a_repairing_agent_only_proposes_the_repair(
    server: EmbeddedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    workspace = _workspace(tmp_path, repairs=False)
    caplog.set_level(logging.INFO, logger="subhive.hive")

    async def scenario() -> tuple[list[Any], list[Any], bool]:
        async with (
            await RootServer.start(workspace, codegen=False) as root,
            RootClient(root.address, admin_token_of(workspace)) as admin,
        ):
            runtime, nc = await _failing_twice(server, workspace, root.address)
            try:
                repairs = await _until(lambda: admin.approvals(kind="repair"), "the repair proposal")
                taker = runtime.repairs is not None
            finally:
                await runtime.stop()  # lets the escalation in flight finish: a handed turn would have started
                await nc.close()
            return repairs, await admin.approvals(kind="tool"), taker

    with ScriptedServer([Step.say("should not be asked")]) as model:
        monkeypatch.setenv("OPENAI_BASE_URL", model.base_url)
        repairs, tool_calls, taker = run(scenario())
        requests = model.chat_requests()
    assert [(r.id, r.status, r.proposer) for r in repairs] == [("r-1", "pending", "solo")]
    assert repairs[0].repair is not None
    assert repairs[0].repair.count == 2
    assert not taker
    assert tool_calls == []
    assert requests == []
    assert not (workspace / ".subhive" / "repairs").exists()
    assert "handed to agent" not in caplog.text
