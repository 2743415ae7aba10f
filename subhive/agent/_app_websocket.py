"""The app server over WebSocket: one JSON-RPC message per text frame, one :class:`AppServer` session per
connection, on loopback only, with a bearer token on the opening handshake
(docs/decisions/0052-app-server-websocket-loopback-bearer-token.md, docs/agents.md#over-websocket).
"""

from __future__ import annotations

import contextlib
import hmac
import os
import secrets
from collections.abc import Callable
from http import HTTPStatus
from pathlib import Path
from urllib.parse import urlsplit

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from .._files import read_json, write_json
from ..errors import InputError
from ..root_hive import is_loopback
from ._app_server import AppServer

__all__ = ["TOKEN_FILE", "WebSocketAppServer", "parse_listen"]

#: Where a running server's URL and token are, relative to the workspace (only its owner can read it).
TOKEN_FILE = Path(".subhive") / "app-server.json"


def parse_listen(url: str) -> tuple[str, int]:
    """The host and port of ``ws://HOST:PORT`` (no port: 0, an ephemeral one); anything else is an InputError
    ``agent.bad_listen``, and a host that reaches beyond this machine ``agent.insecure_address``."""
    try:
        parts = urlsplit(url)
        port = parts.port or 0
    except ValueError as exc:
        raise _bad_listen(url, str(exc)) from None
    if parts.scheme != "ws" or not parts.hostname or parts.path not in ("", "/") or parts.query or parts.fragment:
        raise _bad_listen(url, "it is not ws://HOST:PORT")
    host = parts.hostname
    if not is_loopback(host):
        # The root's rule (root_hive.check_listen_address), for this server, which has no TLS to offer.
        raise InputError(
            f"refusing to serve the agents' app server on {host}: its token and every turn would cross the "
            "network in plain text",
            code="agent.insecure_address",
            hint="listen on loopback (ws://127.0.0.1:PORT), and reach it from afar through an SSH tunnel",
        )
    return host, port


def _bad_listen(url: str, why: str) -> InputError:
    return InputError(
        f"cannot listen on {url!r}: {why}",
        code="agent.bad_listen",
        hint="give ws://127.0.0.1:PORT (port 0 picks a free one)",
    )


class WebSocketAppServer:
    """A listening WebSocket server; :meth:`start` makes one, :meth:`stop` closes it and its connections.

    server = await WebSocketAppServer.start(workspace, host="127.0.0.1", port=0, session=lambda: AppServer(ws))
    server.url            # ws://127.0.0.1:PORT
    server.token_file     # .subhive/app-server.json: {"url", "token", "pid"}, 0600
    """

    def __init__(self, server: Server, url: str, token_file: Path, token: str) -> None:
        self._server = server
        self.url, self.token_file, self._token = url, token_file, token

    @classmethod
    async def start(
        cls, workspace: Path, *, session: Callable[[], AppServer], host: str = "127.0.0.1", port: int = 0
    ) -> WebSocketAppServer:
        """Listen on ``host:port`` (loopback only) and write the token file; ``session`` makes the
        :class:`AppServer` each connection talks to."""
        host, _ = parse_listen(f"ws://{f'[{host}]' if ':' in host else host}:{port}")
        token = secrets.token_urlsafe(32)
        expected = f"Bearer {token}".encode()

        def authorize(connection: ServerConnection, request: Request) -> Response | None:
            given = request.headers.get("Authorization", "").encode()
            if hmac.compare_digest(given, expected):
                return None
            refused = connection.respond(
                HTTPStatus.UNAUTHORIZED, f"send Authorization: Bearer <token>, the token in {workspace / TOKEN_FILE}\n"
            )
            refused.headers["WWW-Authenticate"] = "Bearer"
            return refused

        async def converse(connection: ServerConnection) -> None:
            async def send(message: str) -> None:
                with contextlib.suppress(ConnectionClosed):  # the client left: the session ends with its messages
                    await connection.send(message)

            with contextlib.suppress(ConnectionClosed):  # closed without a closing handshake: the same end
                await session().serve(connection, send)

        server = await serve(converse, host, port, process_request=authorize)
        bound = server.sockets[0].getsockname()
        url = f"ws://{f'[{bound[0]}]' if ':' in bound[0] else bound[0]}:{bound[1]}"
        token_file = workspace / TOKEN_FILE
        write_json(token_file, {"url": url, "token": token, "pid": os.getpid()}, private=True)
        return cls(server, url, token_file, token)

    async def stop(self) -> None:
        """Close every connection (their turns are cancelled) and remove the token file if it is still ours."""
        self._server.close()
        await self._server.wait_closed()
        kept = read_json(self.token_file)
        if kept is not None and kept.get("token") == self._token:
            self.token_file.unlink(missing_ok=True)
