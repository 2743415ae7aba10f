"""Stops of turns run from the CLI or the app server, escalated as repairs at a real root (gRPC on 127.0.0.1):
one repair per hive, agent and stop reason, each further stop adding to it; a normal end escalates nothing; the
caller still gets its stop (decision 0055)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from subhive.agent import AppServer, ScriptedServer, Step, stop_subject
from subhive.cli import main
from subhive.root_hive._client import RootClient, admin_token_of
from subhive.root_hive._service import RootServer
from tests.kit import run

from .test_agent_run import frames, workspace

#: Over budget on the second model call: the first asks for a tool, the turn needs another call to answer.
OVER_BUDGET = [Step.call(("search", {"query": "needle"})), Step.say("docs.md, line 1")]


def one_call_workspace(tmp_path: Path) -> Path:
    root = workspace(tmp_path)
    manifest = root / "subhives" / "notes" / "subhive.toml"
    manifest.write_text(manifest.read_text() + "model_calls = 1\n")  # the budgets table is the manifest's last
    return root


async def cli_turn(
    script: list[Any], root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, list[dict[str, Any]], str]:
    """``subhive agent run`` in a worker thread (it runs its own event loop), against ``script``."""
    with ScriptedServer(script) as model:
        monkeypatch.setenv("OPENAI_BASE_URL", model.base_url)
        code = await asyncio.to_thread(main, ["agent", "run", "notes", "find it", "--format", "json", "-C", str(root)])
    captured = capsys.readouterr()
    return code, frames(captured.out), captured.err


def test_cli_stops_make_one_repair_that_grows_and_a_normal_turn_makes_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = one_call_workspace(tmp_path)

    async def scenario() -> tuple[list[Any], list[tuple[int, list[dict[str, Any]], str]], list[Any]]:
        async with await RootServer.start(root) as server, RootClient(server.address, admin_token_of(root)) as admin:
            turns = []
            turns.append(await cli_turn(OVER_BUDGET, root, monkeypatch, capsys))
            after_first = await admin.approvals("all", kind="repair")
            turns.append(await cli_turn(OVER_BUDGET, root, monkeypatch, capsys))
            turns.append(await cli_turn([Step.say("docs.md, line 1")], root, monkeypatch, capsys))
            return after_first, turns, await admin.approvals("all", kind="repair")

    after_first, turns, repairs = run(scenario())
    (first, second, normal) = turns
    assert [first[0], second[0], normal[0]] == [1, 1, 0]  # the caller's exit code is the turn's, as before
    assert first[1][-1]["stop"]["code"] == "budget.model_calls"
    assert normal[1][-1]["stop"]["code"] == "completed"
    (created,) = after_first
    assert created.repair.code == "agent.budget.model_calls"
    assert created.repair.count == 1
    assert first[1][0]["turn"] in created.message
    (repair,) = repairs  # the second stop added to the pending repair; the normal turn made none
    assert repair.id == created.id
    assert repair.proposer == "notes"
    assert repair.status == "pending"
    assert repair.repair.count == 2
    assert repair.repair.subject == stop_subject("notes", "finder")
    assert second[1][0]["turn"] in repair.message  # the latest stop's turn
    sample = json.loads(repair.repair.sample)
    assert sample["turn"] == second[1][0]["turn"]
    assert sample["stop"]["detail"] == {"limit": 1}
    assert f"repair {repair.id}" in second[2]
    assert "escalated" not in normal[2]


def test_without_a_root_the_cli_says_so_once_and_exits_with_the_turns_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = one_call_workspace(tmp_path)
    code, shown, err = run(cli_turn(OVER_BUDGET, root, monkeypatch, capsys))
    assert code == 1
    assert shown[-1]["stop"]["code"] == "budget.model_calls"
    assert err.count("not reachable") == 1
    assert shown[0]["turn"] in err


async def app_server_turn(server: AppServer, params: dict[str, Any]) -> dict[str, Any]:
    """One turn/start through ``server``'s JSON-RPC session; shutdown once its answer came."""
    answered = asyncio.Event()
    answers: list[dict[str, Any]] = []

    async def send(text: str) -> None:
        message = json.loads(text)
        if message.get("id") == 1:
            answers.append(message)
            answered.set()

    async def messages() -> AsyncIterator[str]:
        yield json.dumps({"jsonrpc": "2.0", "id": 1, "method": "turn/start", "params": params})
        await answered.wait()
        yield json.dumps({"jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": {}})

    await server.serve(messages(), send)
    return answers[0]


def test_an_app_server_turns_stop_is_escalated_and_still_answered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = one_call_workspace(tmp_path)

    async def scenario() -> tuple[dict[str, Any], dict[str, Any], list[Any]]:
        async with await RootServer.start(root) as server, RootClient(server.address, admin_token_of(root)) as admin:
            params = {"hive": "notes", "prompt": "find it"}
            with ScriptedServer(OVER_BUDGET) as model:
                monkeypatch.setenv("OPENAI_BASE_URL", model.base_url)
                stopped = await app_server_turn(AppServer(root, root=admin), params)
            with ScriptedServer([Step.say("docs.md, line 1")]) as model:
                monkeypatch.setenv("OPENAI_BASE_URL", model.base_url)
                completed = await app_server_turn(AppServer(root, root=admin), params)
            return stopped, completed, await admin.approvals("all", kind="repair")

    stopped, completed, repairs = run(scenario())
    assert stopped["result"]["stop"]["code"] == "budget.model_calls"  # the client gets its stop as before
    assert completed["result"]["stop"]["code"] == "completed"
    (repair,) = repairs
    assert repair.repair.code == "agent.budget.model_calls"
    assert repair.repair.count == 1
    assert stopped["result"]["turn"] in repair.message
