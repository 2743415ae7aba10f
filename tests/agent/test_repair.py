"""Self-repair by agents, against a real root: a repair proposal handed to the hive's agent, a diff a person
approves, the repair acknowledged naming the fix, and the same error coming back told as a fix that did not
hold."""

from __future__ import annotations

import asyncio
import difflib
from pathlib import Path
from typing import Any

import pytest

from subhive.agent import FIXED_BY, ScriptedServer, Step, repair_turn
from subhive.errors import InputError
from subhive.root_hive._client import RootClient, admin_token_of
from subhive.root_hive._service import RootServer
from tests.kit import run

from .test_agent_run import workspace

TOOLS = 'read_file = "allow"\nsearch = "allow"\npropose_diff = "ask"'
DIFF = "".join(difflib.unified_diff(["the needle is here\n"], ["the needle is fixed\n"], "a/docs.md", "b/docs.md"))


async def approve_tool_calls(admin: RootClient, stop: asyncio.Event) -> list[str]:
    """A person at the root approving each tool call an agent asks for."""
    approved: list[str] = []
    while not stop.is_set():
        for pending in await admin.approvals(kind="tool"):
            await admin.approve(pending.id, note="ok")
            approved.append(pending.id)
        await asyncio.sleep(0.02)
    return approved


def test_a_repair_is_fixed_by_a_diff_and_a_recurrence_is_told(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = workspace(tmp_path, TOOLS)

    async def scenario() -> tuple[Any, Any, Any, list[str], list[str]]:
        async with await RootServer.start(root) as server, RootClient(server.address, admin_token_of(root)) as admin:
            notes = admin.with_token((root / ".subhive" / "tokens" / "notes.token").read_text().strip())
            first = await notes.propose_repair(
                code="handler.failed",
                message="KeyError: 'text'",
                contract="",
                subject="$KV.bb_notes.tasks.t1",
                sample='{"title": 1}',
                count=2,
            )
            stop = asyncio.Event()
            person = asyncio.create_task(approve_tool_calls(admin, stop))
            fixed = await repair_turn(root, "notes", first.id, root=admin)
            stop.set()
            approved = await person
            again = await notes.propose_repair(
                code="handler.failed", message="KeyError: 'text'", contract="", subject="$KV.bb_notes.tasks.t1", count=2
            )
            retried = await repair_turn(root, "notes", again.id, root=admin)
            codes = []
            for wrong in (first.id, approved[0]):  # decided already; not a repair
                try:
                    await repair_turn(root, "notes", wrong, root=admin)
                except InputError as error:
                    codes.append(error.code)
            return fixed, await admin.approval(first.id), retried, approved, codes

    script = [
        Step.call(("propose_diff", {"diff": DIFF})),
        Step.say("the docs said the wrong thing; fixed"),
        Step.say("it came back; the cause must be elsewhere"),
    ]
    with ScriptedServer(script) as model:
        monkeypatch.setenv("OPENAI_BASE_URL", model.base_url)
        fixed, acknowledged, retried, approved, codes = run(scenario())
        requests = model.chat_requests()
    assert fixed.stop.code == "completed"
    assert (root / "subhives" / "notes" / "docs.md").read_text() == "the needle is fixed\n"
    assert len(approved) == 1  # the diff waited for a person at the root
    assert acknowledged.status == "approved"
    assert acknowledged.decision == f"{FIXED_BY} finder in turn {fixed.turn}: docs.md"
    first_prompt = requests[0].body["messages"][-1]["content"]
    assert first_prompt.startswith("Repair r-1: handler.failed at $KV.bb_notes.tasks.t1, seen 2 times.")
    assert '{"title": 1}' in first_prompt
    retry_prompt = requests[2].body["messages"][-1]["content"]
    assert "An earlier fix of this same error did not hold" in retry_prompt
    assert "r-1" in retry_prompt
    assert retried.stop.code == "completed"
    assert codes == ["agent.repair_decided", "agent.not_a_repair"]


def test_a_repair_needs_the_running_root(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from subhive.cli import main

    monkeypatch.delenv("SUBHIVE_ROOT", raising=False)
    root = workspace(tmp_path, TOOLS)
    assert main(["agent", "run", "notes", "--repair", "r-1", "-C", str(root)]) == 2
    assert "agent.no_root" in capsys.readouterr().err
