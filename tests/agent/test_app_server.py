"""The agents' app server as a client sees it: `subhive agent serve` in a subprocess, JSON-RPC 2.0 on its
stdin/stdout, a turn's frames as notifications, an approval the server asks the client for, errors by code."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import jsonschema_rs

from subhive.agent import ScriptedServer, Step
from tests.kit import run

from .test_agent_run import workspace

CONTRACT = Path(__file__).resolve().parents[2] / "contracts" / "agent-app-server" / "0.1.0" / "schemas.json"


def valid(definition: str, value: Any) -> bool:
    """Whether ``value`` is valid against the contract's ``$defs/<definition>``."""
    document = json.loads(CONTRACT.read_text())
    return bool(jsonschema_rs.validator_for({**document, "$ref": f"#/$defs/{definition}"}).is_valid(value))


class Client:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.seen: list[dict[str, Any]] = []

    async def send(self, message: dict[str, Any] | str) -> None:
        text = message if isinstance(message, str) else json.dumps({"jsonrpc": "2.0", **message})
        assert self.process.stdin is not None
        self.process.stdin.write(text.encode() + b"\n")
        await self.process.stdin.drain()

    async def next(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), 30)
        assert line, "the server closed its output"
        message: dict[str, Any] = json.loads(line)
        self.seen.append(message)
        return message

    async def until(self, ident: int) -> dict[str, Any]:
        """Read until the response to request ``ident``, approving every approval request on the way."""
        while True:
            message = await self.next()
            if message.get("method") == "approval/request":
                await self.send({"id": message["id"], "result": {"decision": "accept"}})
            elif message.get("id") == ident and "method" not in message:
                return message


def test_a_client_runs_a_turn_answers_an_approval_and_gets_errors_by_code(tmp_path: Path) -> None:
    root = workspace(tmp_path, 'search = "ask"')

    async def session(server: ScriptedServer) -> tuple[Client, list[dict[str, Any]], int]:
        client = await _serve(root, server.base_url)
        answers = []
        await client.send({"id": 1, "method": "initialize", "params": {}})
        answers.append(await client.until(1))
        await client.send({"id": 2, "method": "turn/start", "params": {"hive": "notes", "prompt": "find it"}})
        answers.append(await client.until(2))
        await client.send("{not json")
        answers.append(await client.next())
        for ident, method, params in (
            (3, "turn/stop", {}),
            (4, "turn/start", {"hive": "notes"}),
            (5, "turn/start", {"hive": "ghost", "prompt": "x"}),
        ):
            await client.send({"id": ident, "method": method, "params": params})
            answers.append(await client.until(ident))
        await client.send({"id": 6, "method": "shutdown", "params": {}})
        answers.append(await client.until(6))
        code = await asyncio.wait_for(client.process.wait(), 30)
        return client, answers, code

    with ScriptedServer([Step.call(("search", {"query": "needle"})), Step.say("in docs.md")]) as server:
        client, answers, code = run(session(server))
    initialized, turn, parse, unknown, bad_params, no_hive, shutdown = answers
    assert initialized["result"]["methods"] == ["initialize", "turn/start", "shutdown"]
    assert turn["result"]["stop"]["code"] == "completed"
    assert turn["result"]["answer"] == "in docs.md"
    frames = [m["params"]["frame"] for m in client.seen if m.get("method") == "turn/frame"]
    kinds = [f["kind"] for f in frames]
    assert kinds[0] == "turn.started"
    assert kinds[-1] == "turn.stopped"
    assert "approval.waiting" in kinds
    asked = next(m for m in client.seen if m.get("method") == "approval/request")
    assert asked["params"]["call"]["name"] == "search"
    # Said to wait once the client has been asked, naming the request it must answer.
    waiting = next(m for m in client.seen if m.get("params", {}).get("frame", {}).get("kind") == "approval.waiting")
    assert waiting["params"]["frame"]["approval"] == f"request {asked['id']}"
    assert client.seen.index(waiting) > client.seen.index(asked)
    assert asked["params"]["call"]["arguments"] == '{"query":"needle"}'
    result = next(f for f in frames if f["kind"] == "tool.result")
    assert "the needle is here" in result["content"]  # the approved call ran
    assert parse["error"]["code"] == -32700
    assert unknown["error"]["code"] == -32601
    assert bad_params["error"]["code"] == -32602
    assert no_hive["error"]["code"] == -32000
    assert no_hive["error"]["data"]["error"] == "hive.unknown"
    assert shutdown["result"] == {}
    assert code == 0
    assert all(m.get("jsonrpc") == "2.0" for m in client.seen)
    # Every message is what the contract says (contracts/agent-app-server/0.1.0).
    assert valid("Initialized", initialized["result"])
    assert valid("TurnStart", {"hive": "notes", "prompt": "find it"})
    assert valid("TurnEnded", turn["result"])
    assert valid("ApprovalRequest", asked["params"])
    assert valid("ApprovalDecision", {"decision": "accept"})
    assert all(valid("TurnFrame", {"frame": frame}) for frame in frames)
    assert valid("Empty", shutdown["result"])
    assert not valid("TurnFrame", {"frame": {**frames[0], "kind": "nonsense"}})  # the check can fail


async def _serve(root: Path, base_url: str | None = None) -> Client:
    env = {**os.environ, "OPENAI_BASE_URL": base_url} if base_url else dict(os.environ)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "subhive",
        "agent",
        "serve",
        "-C",
        str(root),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    return Client(process)


async def _rest(client: Client) -> tuple[list[dict[str, Any]], int]:
    """Everything the server still writes, up to its end, and its exit code."""
    assert client.process.stdout is not None
    out = await asyncio.wait_for(client.process.stdout.read(), 30)
    code = await asyncio.wait_for(client.process.wait(), 30)
    return [json.loads(line) for line in out.decode().splitlines() if line.strip()], code


def test_every_request_piped_before_shutdown_is_answered_and_shutdown_last(tmp_path: Path) -> None:
    # All at once, as `printf ... | subhive agent serve` sends them: nothing is left unanswered.
    root = workspace(tmp_path)
    lines = [
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}',
        "garbage",
        '{"jsonrpc":"2.0","id":2,"method":"turn/start","params":{"hive":"nope","prompt":"x"}}',
        '{"jsonrpc":"2.0","id":3,"method":"turn/stop","params":{}}',
        '{"jsonrpc":"2.0","id":4,"method":"shutdown","params":{}}',
    ]

    async def session() -> tuple[list[dict[str, Any]], int]:
        client = await _serve(root)
        assert client.process.stdin is not None
        client.process.stdin.write("".join(line + "\n" for line in lines).encode())
        client.process.stdin.close()
        return await _rest(client)

    answers, code = run(session())
    assert code == 0
    by_id = {a["id"]: a for a in answers}
    assert len(answers) == 5, answers
    assert by_id[1]["result"]["server"] == "subhive"
    assert by_id[None]["error"]["code"] == -32700
    assert by_id[2]["error"]["data"]["error"] == "hive.unknown"
    assert by_id[3]["error"]["code"] == -32601
    assert answers[-1] == {"jsonrpc": "2.0", "id": 4, "result": {}}


def test_shutdown_cancels_a_running_turn_and_answers_it_before_shutdown(tmp_path: Path) -> None:
    root = workspace(tmp_path, 'search = "ask"')

    async def session(server: ScriptedServer) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
        client = await _serve(root, server.base_url)
        await client.send({"id": 1, "method": "turn/start", "params": {"hive": "notes", "prompt": "find it"}})
        while (await client.next()).get("method") != "approval/request":
            pass  # the turn's frames; it now waits for a decision the client never gives
        await client.send({"id": 2, "method": "initialize", "params": {}})
        await client.send({"id": 3, "method": "shutdown", "params": {}})
        rest, code = await _rest(client)
        return client.seen, rest, code

    with ScriptedServer([Step.call(("search", {"query": "needle"})), Step.say("never reached")]) as server:
        seen, rest, code = run(session(server))
    assert code == 0
    answers = [m for m in rest if "method" not in m]
    assert [a["id"] for a in answers] == [2, 1, 3]  # the turn is answered before shutdown is
    started = next(m["params"]["frame"] for m in seen if m.get("method") == "turn/frame")
    cancelled = answers[1]["error"]
    assert cancelled["code"] == -32000
    assert cancelled["data"]["error"] == "agent.turn_cancelled"
    assert f"turn {started['turn']} was cancelled" in cancelled["message"]
    assert "turn/start" in cancelled["data"]["problems"][0]["hint"]  # no tree up: nothing kept to resume
    assert answers[2]["result"] == {}
