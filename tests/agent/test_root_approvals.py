"""An ``ask`` call held at a real root (gRPC on port 0): shown with its exact arguments, decided by a person
with the admin token while the turn waits, the decision reaching the model."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from subhive.agent import ScriptedServer, Step, ToolBox, root_approver
from subhive.root_hive._client import RootClient, admin_token_of
from subhive.root_hive._service import RootServer
from tests.kit import run

from .conftest import echo_tool, make_agent


async def decide_when_asked(admin: RootClient, approve: bool) -> Any:
    """What a person does: wait for the pending tool approval, read it, decide."""
    for _ in range(1500):  # up to 30 s on a busy machine
        pending = await admin.approvals(kind="tool")
        if pending:
            (asked,) = pending
            if approve:
                await admin.approve(asked.id, note="looks right")
            else:
                await admin.reject(asked.id, reason="not that text")
            return asked
        await asyncio.sleep(0.02)
    raise AssertionError("no tool approval appeared")


@pytest.mark.parametrize("approve", [True, False])
def test_an_ask_call_waits_for_a_person_at_the_root(workspace: Path, approve: bool) -> None:
    async def scenario(server: ScriptedServer) -> tuple[Any, Any]:
        async with (
            await RootServer.start(workspace) as root,
            RootClient(root.address, admin_token_of(workspace)) as admin,
        ):
            notes = admin.with_token((await admin.register_hive("notes")).token)
            tools = ToolBox(
                [echo_tool()], {"echo": "ask"}, approver=root_approver(notes, agent="helper", turn="turn-1", poll=0.02)
            )
            agent = make_agent(server, tools)
            person = asyncio.create_task(decide_when_asked(admin, approve))
            result = await agent.run_turn("echo it", turn_id="turn-1")
            await agent.close()
            return result, await person

    with ScriptedServer([Step.call(("echo", {"text": "hello"})), Step.say("done")]) as server:
        result, asked = run(scenario(server))
        tool = next(m for m in server.chat_requests()[1].body["messages"] if m["role"] == "tool")
    content = json.loads(tool["content"])
    assert result.stop.code == "completed"
    assert asked.proposer == "notes"
    assert asked.tool_call.agent == "helper"
    assert asked.tool_call.tool == "echo"
    assert asked.tool_call.arguments == '{"text":"hello"}'  # exactly what the model sent
    assert asked.tool_call.turn == "turn-1"
    # The turn says it waits once the approval exists at the root, naming it for the person.
    assert [f.data["approval"] for f in result.frames if f.kind == "approval.waiting"] == [asked.id]
    if approve:
        assert content == {"echo": {"text": "hello"}}
    else:
        assert content["error"] == "tool.rejected"
        assert "not that text" in content["message"]
