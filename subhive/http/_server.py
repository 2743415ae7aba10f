"""Serving the API: uvicorn in the root's own event loop, on loopback unless told otherwise."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Iterator
from typing import TYPE_CHECKING

import uvicorn

from ..errors import InputError
from ._app import ApiSettings, create_app

if TYPE_CHECKING:
    from ..root_hive import RootServer

__all__ = ["ApiServer"]

log = logging.getLogger("subhive.http")


class _Uvicorn(uvicorn.Server):
    """uvicorn inside a program that owns its signals: the root's Ctrl-C and SIGTERM stop both servers. It ticks
    once a second (the resolution of its Date header) rather than ten times, so that an idle root sleeps; a stop
    wakes it at once."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.wake = asyncio.Event()
        self.ticks = 0

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def on_tick(self, counter: int) -> bool:
        self.ticks += 1
        return await super().on_tick(counter)

    async def main_loop(self) -> None:
        counter = 0
        should_exit = await self.on_tick(counter)
        while not should_exit:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), 1.0)
            counter = (counter + 10) % 864000  # uvicorn's tick is 0.1 s: a multiple of 10 refreshes the Date header
            should_exit = await self.on_tick(counter)


class ApiServer:
    """The HTTP API of a running root: ``await ApiServer.start(root_server, settings)``, then ``url``."""

    def __init__(self, server: _Uvicorn, task: asyncio.Task[None], sock: socket.socket, closing: asyncio.Event) -> None:
        self._server = server
        self._closing = closing
        self._task = task
        self._socket = sock
        host, port = sock.getsockname()[:2]
        self.host, self.port = str(host), int(port)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @classmethod
    async def start(
        cls, root: RootServer, settings: ApiSettings, *, host: str = "127.0.0.1", port: int = 0
    ) -> ApiServer:
        """Bind ``host:port`` (0: a free port) and serve; raises InputError (``http.bind_failed``) when it cannot.

        Only loopback is allowed: the API has no TLS of its own (``http.insecure_address``)."""
        from ..root_hive import is_loopback

        if not is_loopback(host):
            raise InputError(
                f"the HTTP API serves loopback only, not {host}",
                code="http.insecure_address",
                hint="keep the default 127.0.0.1; from elsewhere, go through an SSH tunnel or a proxy with TLS",
            )
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        # IPPROTO_TCP named: asyncio sets TCP_NODELAY on accepted sockets only when their proto says TCP, and
        # without it a keep-alive client waits ~40 ms (Nagle and delayed ACK) for every answer after the first.
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
            sock.listen(128)
            sock.setblocking(False)
        except OSError as exc:
            sock.close()
            raise InputError(
                f"cannot listen on {host}:{port} for HTTP: {exc.strerror}",
                code="http.bind_failed",
                hint="choose another --http-port, or stop the process that holds it",
            ) from None
        app = create_app(root, settings)
        config = uvicorn.Config(
            app,
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=1,
        )
        server = _Uvicorn(config)
        task = asyncio.get_running_loop().create_task(server.serve(sockets=[sock]))
        deadline = asyncio.get_running_loop().time() + 30
        while not server.started:  # uvicorn says nothing when it is up but this flag
            if task.done() or asyncio.get_running_loop().time() > deadline:
                task.cancel()
                sock.close()
                task.result()
                raise InputError("the HTTP API did not start", code="http.start_failed")
            await asyncio.sleep(0.01)
        return cls(server, task, sock, app.state.backend.closing)

    async def stop(self) -> None:
        """End the event streams (each client sees its stream end, and an EventSource reconnects later), give
        open requests a second, then close."""
        self._closing.set()
        self._server.should_exit = True
        self._server.wake.set()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._socket.close()
