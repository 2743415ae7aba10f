"""The app server on WebSocket as a client sees it: `subhive agent serve --listen ws://127.0.0.1:0` in a
subprocess, a client from the `websockets` library, the token on the handshake, a turn's frames as
notifications, approvals the client decides; and the addresses it refuses to listen on."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import signal
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosedOK, InvalidStatus

from subhive.agent import TOKEN_FILE, AppServer, ScriptedServer, Step, WebSocketAppServer, parse_listen
from subhive.errors import InputError
from tests.kit import cli, run

from .test_agent_run import workspace
from .test_app_server import valid


class Client:
    """One WebSocket connection: JSON-RPC messages in text frames, every message received kept in ``seen``."""

    def __init__(self, connection: ClientConnection) -> None:
        self.connection = connection
        self.seen: list[dict[str, Any]] = []

    async def send(self, message: dict[str, Any]) -> None:
        await self.connection.send(json.dumps({"jsonrpc": "2.0", **message}))

    async def until(self, ident: int, decide: dict[str, Any] | None = None) -> dict[str, Any]:
        """Frames until the response to ``ident``, answering each approval request with ``decide``."""
        while True:
            frame = await asyncio.wait_for(self.connection.recv(), 30)
            assert isinstance(frame, str), "one JSON-RPC message per text frame"
            message: dict[str, Any] = json.loads(frame)
            self.seen.append(message)
            if message.get("method") == "approval/request":
                assert decide is not None, f"an approval nobody expected: {message}"
                await self.send({"id": message["id"], "result": decide})
            elif message.get("id") == ident and "method" not in message:
                return message


async def refused(url: str, headers: dict[str, str]) -> int:
    """The HTTP status with which the server refuses the handshake (the test fails if it accepts)."""
    try:
        async with connect(url, additional_headers=headers, open_timeout=10):
            pass
    except InvalidStatus as exc:
        return exc.response.status_code
    raise AssertionError(f"the server accepted a connection with headers {headers}")


def test_a_websocket_client_with_the_token_runs_turns_and_decides_their_approvals(tmp_path: Path) -> None:
    root = workspace(tmp_path, 'search = "ask"')
    script = [
        Step.call(("search", {"query": "needle"})),
        Step.say("in docs.md"),
        Step.call(("search", {"query": "needle"})),
        Step.say("not searched"),
    ]

    async def session(server: ScriptedServer) -> dict[str, Any]:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            *("-m", "subhive", "agent", "serve", "-C", str(root), "--listen", "ws://127.0.0.1:0"),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "OPENAI_BASE_URL": server.base_url},
        )
        try:
            assert process.stdout is not None
            line = (await asyncio.wait_for(process.stdout.readline(), 30)).decode()
            assert line.startswith("app server listening on ws://127.0.0.1:"), line
            url = line.split()[-1]
            kept = json.loads((root / TOKEN_FILE).read_text())
            seen: dict[str, Any] = {"url": url, "kept": kept, "mode": stat.S_IMODE((root / TOKEN_FILE).stat().st_mode)}
            seen["no_token"] = await refused(url, {})
            seen["wrong_token"] = await refused(url, {"Authorization": "Bearer " + "x" * len(kept["token"])})
            auth = {"Authorization": f"Bearer {kept['token']}"}
            async with connect(url, additional_headers=auth, open_timeout=10) as connection:
                client = Client(connection)
                await client.send({"id": 1, "method": "initialize", "params": {}})
                seen["initialized"] = await client.until(1)
                await client.send({"id": 2, "method": "turn/start", "params": {"hive": "notes", "prompt": "find it"}})
                seen["accepted"] = await client.until(2, {"decision": "accept"})
                seen["first"] = list(client.seen)
                client.seen.clear()
                await client.send({"id": 3, "method": "turn/start", "params": {"hive": "notes", "prompt": "again"}})
                seen["declined"] = await client.until(3, {"decision": "decline", "reason": "not on a Friday"})
                seen["second"] = list(client.seen)
                await client.send({"id": 4, "method": "shutdown", "params": {}})
                seen["shutdown"] = await client.until(4)
                try:  # shutdown ends this connection's session: the server closes it
                    await asyncio.wait_for(connection.recv(), 10)
                except ConnectionClosedOK:
                    seen["closed"] = True
            process.send_signal(signal.SIGTERM)
            seen["code"] = await asyncio.wait_for(process.wait(), 30)
            seen["token_file_left"] = (root / TOKEN_FILE).exists()
            return seen
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()

    with ScriptedServer(script) as server:
        seen = run(session(server))
    assert seen["kept"]["url"] == seen["url"]
    assert seen["mode"] == 0o600
    assert seen["no_token"] == 401
    assert seen["wrong_token"] == 401
    assert seen["initialized"]["result"]["methods"] == ["initialize", "turn/start", "shutdown"]

    def frames(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [m["params"]["frame"] for m in messages if m.get("method") == "turn/frame"]

    first, second = frames(seen["first"]), frames(seen["second"])
    for turn, shown in ((seen["accepted"], first), (seen["declined"], second)):
        assert turn["result"]["stop"]["code"] == "completed"
        assert shown[0]["kind"] == "turn.started"
        assert shown[-1]["kind"] == "turn.stopped"
        assert "approval.waiting" in [f["kind"] for f in shown]
        assert shown[0]["turn"] == turn["result"]["turn"]
    assert seen["accepted"]["result"]["answer"] == "in docs.md"
    asked = next(m for m in seen["first"] if m.get("method") == "approval/request")
    assert asked["params"]["call"]["name"] == "search"
    # The client's answer decides: the accepted call ran, the declined one did not and the model hears why.
    ran = json.dumps([f for f in first if f["kind"] == "tool.result"])
    refused_call = json.dumps([f for f in second if f["kind"] == "tool.result"])
    assert "the needle is here" in ran
    assert "the needle is here" not in refused_call
    assert "not on a Friday" in refused_call
    assert seen["shutdown"]["result"] == {}
    assert seen.get("closed") is True
    assert seen["code"] == 0
    assert seen["token_file_left"] is False
    messages = seen["first"] + seen["second"]
    assert all(m.get("jsonrpc") == "2.0" for m in messages)
    assert valid("ApprovalRequest", asked["params"])
    assert valid("TurnEnded", seen["declined"]["result"])
    assert all(valid("TurnFrame", {"frame": frame}) for frame in first + second)


@pytest.mark.parametrize(
    ("listen", "code"),
    [
        ("ws://0.0.0.0:0", "agent.insecure_address"),
        ("ws://192.168.1.20:8765", "agent.insecure_address"),
        ("ws://example.com:8765", "agent.insecure_address"),
        ("ws://[::]:0", "agent.insecure_address"),
        ("wss://127.0.0.1:0", "agent.bad_listen"),
        ("127.0.0.1:0", "agent.bad_listen"),
        ("ws://127.0.0.1:port", "agent.bad_listen"),
        ("ws://127.0.0.1:0/rpc", "agent.bad_listen"),
    ],
)
def test_an_address_beyond_loopback_or_not_a_ws_url_is_refused_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], listen: str, code: str
) -> None:
    root = workspace(tmp_path)
    exit_code, out, err = cli(capsys, "agent", "serve", "-C", str(root), "--listen", listen)
    assert exit_code == 2
    assert out == ""
    assert f"[{code}]" in err
    assert "hint: " in err
    assert "Traceback" not in err
    assert not (root / TOKEN_FILE).exists()


def test_the_python_api_refuses_a_host_beyond_loopback(tmp_path: Path) -> None:
    async def start() -> None:
        await WebSocketAppServer.start(tmp_path, host="0.0.0.0", session=lambda: AppServer(tmp_path))

    with pytest.raises(InputError) as refused_start:
        run(start())
    assert refused_start.value.code == "agent.insecure_address"
    assert not (tmp_path / TOKEN_FILE).exists()


@given(st.ip_addresses(), st.integers(0, 65535))
def test_an_ip_is_listened_on_exactly_when_it_is_loopback(address: Any, port: int) -> None:
    host = f"[{address}]" if isinstance(address, ipaddress.IPv6Address) else str(address)
    if address.is_loopback:
        assert parse_listen(f"ws://{host}:{port}") == (str(address), port)
    else:
        with pytest.raises(InputError, match="refusing to serve the agents' app server") as refused_listen:
            parse_listen(f"ws://{host}:{port}")
        assert refused_listen.value.code == "agent.insecure_address"
