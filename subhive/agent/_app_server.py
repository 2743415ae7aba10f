"""The agents' app server: JSON-RPC 2.0 where a client starts turns in a workspace's hives, follows every frame
and answers approvals; each transport (stdio, WebSocket in ``_app_websocket``) only frames the messages.
Schemas: ``contracts/agent-app-server/0.1.0``; see docs/agents.md#the-app-server.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from collections.abc import AsyncIterable, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import SubhiveError
from ._escalate import escalate_stop
from ._hive_turn import run_hive_turn
from ._loop import Frame, TurnResult
from ._tools import Approval, ToolCall, announcing, approval_asked

__all__ = ["PROTOCOL_VERSION", "AppServer"]

log = logging.getLogger(__name__)

PROTOCOL_VERSION = "0.1.0"
#: Sends one message (its JSON text); the transport frames it (a line on stdio, a text frame on WebSocket).
Send = Callable[[str], Awaitable[None]]
#: JSON-RPC 2.0's own codes, and the one this server uses for a subhive error (its code and hint in data).
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, SUBHIVE_ERROR = -32700, -32600, -32601, -32602, -32000
#: Seconds the session's end waits for requests that are not running turns (an answer, an error, a turn still
#: being set up) before it cancels what is left: setup is bounded, but a client must never wait on it for long.
SETTLE_SECONDS = 10.0


class _Invalid(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class _Request:
    """A request being handled: its id, and whether it has settled (answered, or its turn is running)."""

    ident: Any
    settled: asyncio.Event = field(default_factory=asyncio.Event)
    turn: str | None = None
    hive: str = "HIVE"


class AppServer:
    """One client's session. ``endpoint`` and ``root`` are the running tree's (as ``subhive agent run`` finds
    them); ``client`` an OpenAI client to use instead of one per agent (tests)."""

    def __init__(self, workspace: Path, *, endpoint: Any = None, root: Any = None, client: Any = None) -> None:
        self.workspace = workspace
        self.endpoint, self.root, self.client = endpoint, root, client
        self._send: Send | None = None
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._requests: dict[asyncio.Task[None], _Request] = {}

    async def serve(self, messages: AsyncIterable[str | bytes], send: Send) -> None:
        """Answer ``messages`` (one JSON-RPC message each: a line, a frame) through ``send`` until the client says
        shutdown or closes its side. Every request received before then is answered: turns still running are
        cancelled, each answered ``agent.turn_cancelled``; then ``shutdown`` is answered, last."""
        self._send = send
        shutdown: dict[str, Any] | None = None
        try:
            async for text in messages:
                if text.strip():
                    shutdown = await self._receive(text)
                if shutdown is not None:
                    break
        finally:
            await self._finish()
        if shutdown is not None:
            await self._handle(shutdown, _Request(shutdown.get("id")))

    async def _finish(self) -> None:
        """Let every request that is not a running turn settle (bounded), then cancel the turns still running
        and answer each of them, in the order they were received."""
        requests = dict(self._requests)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(*(r.settled.wait() for r in requests.values())), SETTLE_SECONDS)
        running = [task for task in requests if not task.done()]
        for task in running:
            task.cancel()
        await asyncio.gather(*requests, return_exceptions=True)
        for waiting in self._waiting.values():
            waiting.cancel()
        for task in running:
            # A turn that ended on its own meanwhile has sent its own answer; a notification gets none.
            if task.cancelled() and requests[task].ident is not None:
                await self._write({"id": requests[task].ident, **_cancelled(requests[task], self.endpoint)})

    async def _write(self, message: dict[str, Any]) -> None:
        if self._send is None:
            raise RuntimeError("AppServer.serve() sets where messages go; nothing can be sent before it")
        await self._send(json.dumps({"jsonrpc": "2.0", **message}, ensure_ascii=False, separators=(",", ":")))

    async def _receive(self, text: str | bytes) -> dict[str, Any] | None:
        """Handle one message; a well-formed ``shutdown`` request is returned instead, for :meth:`serve` to
        answer once everything before it is."""
        try:
            message = json.loads(text)
        except ValueError as exc:
            await self._write({"id": None, "error": {"code": PARSE_ERROR, "message": f"not JSON: {exc}"}})
            return None
        if not isinstance(message, dict):
            await self._write({"id": None, "error": {"code": INVALID_REQUEST, "message": "a message is an object"}})
            return None
        if "method" not in message and message.get("id") in self._waiting:  # the answer to one of our requests
            waiting = self._waiting.pop(message["id"])
            if not waiting.done():
                waiting.set_result(message)
            return None
        if message.get("method") == "shutdown" and isinstance(message.get("params", {}), dict):
            return message
        request = _Request(message.get("id"))
        task = asyncio.create_task(self._handle(message, request))
        self._requests[task] = request
        task.add_done_callback(self._requests.pop)
        return None

    async def _handle(self, message: dict[str, Any], request: _Request) -> None:
        try:
            await self._answer(message, request)
        finally:
            request.settled.set()

    async def _answer(self, message: dict[str, Any], request: _Request) -> None:
        ident = request.ident
        try:
            method, params = message.get("method"), message.get("params", {})
            if not isinstance(method, str) or not isinstance(params, dict):
                raise _Invalid(INVALID_REQUEST, "a request has a method (a string) and params (an object)")
            result = await self._call(method, params, request)
        except _Invalid as invalid:
            await self._write({"id": ident, "error": {"code": invalid.code, "message": str(invalid)}})
            return
        except SubhiveError as error:
            await self._write(
                {"id": ident, "error": {"code": SUBHIVE_ERROR, "message": error.message, "data": error.to_dict()}}
            )
            return
        if ident is not None:
            await self._write({"id": ident, "result": result})

    async def _call(self, method: str, params: dict[str, Any], request: _Request) -> Any:
        if method == "initialize":
            return {
                "server": "subhive",
                "version": PROTOCOL_VERSION,
                "methods": ["initialize", "turn/start", "shutdown"],
            }
        if method == "shutdown":
            return {}
        if method == "turn/start":
            return await self._turn(params, request)
        raise _Invalid(METHOD_NOT_FOUND, f"no method {method!r}: initialize, turn/start or shutdown")

    async def _turn(self, params: dict[str, Any], request: _Request) -> dict[str, Any]:
        hive, prompt, agent = params.get("hive"), params.get("prompt"), params.get("agent")
        if (
            not isinstance(hive, str)
            or not isinstance(prompt, str)
            or not prompt.strip()
            or (agent is not None and not isinstance(agent, str))
        ):
            raise _Invalid(
                INVALID_PARAMS, "turn/start needs hive and prompt (strings), and agent when the hive has several"
            )

        async def frame(each: Frame) -> None:
            request.turn, request.hive = each.turn, hive
            request.settled.set()  # the turn runs: a shutdown from now on cancels it
            await self._write({"method": "turn/frame", "params": {"frame": each.to_dict()}})

        result = await run_hive_turn(
            self.workspace,
            hive,
            prompt,
            agent=agent,
            endpoint=self.endpoint,
            on_frame=frame,
            approver=announcing(self._ask),
            root=self.root,
            client=self.client,
        )
        if not result.stop.normal:
            await self._escalate(hive, result)
        return {"turn": result.turn, "stop": result.stop.to_dict(), "answer": result.answer}

    async def _escalate(self, hive: str, result: TurnResult) -> None:
        """An abnormal stop becomes a repair at the root (decision 0055) before the client hears of it, so a
        client that sees the stop finds the repair; without a root it is only logged, and the client still
        gets its stop."""
        if self.root is None:
            log.warning("turn %s stopped (%s); no root to escalate it to", result.turn, result.stop.code)
            return
        try:
            repair = await escalate_stop(self.root, hive, result)
        except Exception as exc:  # the root went away: the turn's stop still goes to the client
            log.warning(
                "turn %s stopped (%s); the root did not take the repair: %s", result.turn, result.stop.code, exc
            )
            return
        log.info("turn %s stopped (%s): escalated as %s", result.turn, result.stop.code, repair.id)

    async def _ask(self, call: ToolCall) -> Approval:
        """Send ``approval/request`` and wait for the client's decision (the tool box bounds the wait)."""
        ident = next(self._ids)
        answered: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[ident] = answered
        await self._write(
            {
                "id": ident,
                "method": "approval/request",
                "params": {"call": {"id": call.id, "name": call.name, "arguments": call.arguments}},
            }
        )
        await approval_asked(f"request {ident}")  # the client's approval/request, by its JSON-RPC id
        try:
            reply = await answered
        finally:
            self._waiting.pop(ident, None)
        result = reply.get("result") if isinstance(reply.get("result"), dict) else {}
        decision = result.get("decision")
        return Approval(
            decision == "accept",
            str(result.get("reason") or ("declined by the client" if decision != "accept" else "")),
        )


def _cancelled(request: _Request, endpoint: Any) -> dict[str, Any]:
    """The answer to a ``turn/start`` whose turn the session's end cancelled."""
    turn = request.turn
    which = f"turn {turn}" if turn else "the turn"
    hint = (
        f"its frames so far are on the hive's board; go on with it: subhive agent run {request.hive} --resume {turn}"
        if turn and endpoint is not None
        else "start it again (turn/start) in a new session"
    )
    error = SubhiveError(
        f"{which} was cancelled: the session ended (shutdown, or the client closed its side) while it ran",
        code="agent.turn_cancelled",
        hint=hint,
    )
    return {"error": {"code": SUBHIVE_ERROR, "message": error.message, "data": error.to_dict()}}
