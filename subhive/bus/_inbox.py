"""Replies to a hive's requests: one wildcard inbox subscription per connection, one future per request.
Unlike nats-py's ``request``, it sends pre-encoded frames, avoids ``asyncio.wait_for``'s extra event-loop turn
per reply (Python 3.11) and keeps no timer per request: one sweeper task expires the requests past their
deadline (docs/decisions/0114-request-deadlines-swept.md). Only nats-py's public API.
"""

from __future__ import annotations

import asyncio
import itertools
import time

from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout
from nats.js.api import Header

from ._fastpub import Frames, Target

__all__ = ["SWEEP", "ConnectionLost", "Inbox"]

_NO_RESPONDERS = "503"  # the status the server sends to a request's inbox when nobody listens on the subject
#: Seconds between two sweeps while requests wait: a request times out at most this late.
SWEEP = 0.025


class ConnectionLost(Exception):
    """The connection went away while a request waited: its reply may never come (decision 0057)."""


class Inbox:
    """``_INBOX_<hive>.<nuid>.<n>``: where the replies to this connection's requests arrive."""

    def __init__(self, nc: Client) -> None:
        self._nc = nc
        self._prefix = ""
        self._waiting: dict[str, asyncio.Future[Msg]] = {}
        #: When each waiting request times out (``time.monotonic``), in the order they were sent.
        self._due: dict[str, float] = {}
        self._sweeper: asyncio.Task[None] | None = None
        self._tokens = itertools.count()

    async def request(
        self, frames: Frames, target: Target, data: bytes, timeout: float, traceparent: str | None = None
    ) -> Msg:
        """Send ``data`` to ``target`` and return the reply that arrives within ``timeout`` seconds; raises
        nats-py's ``TimeoutError`` or ``NoRespondersError`` as its ``request`` does. ``traceparent``: see
        :meth:`Frames.send`."""
        if not self._prefix:
            await self._start()
        token = f"{next(self._tokens):x}"
        future: asyncio.Future[Msg] = asyncio.get_running_loop().create_future()
        self._waiting[token] = future
        self._due[token] = time.monotonic() + timeout
        if self._sweeper is None:
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep())
        try:
            await frames.send(target, data, reply=f"{self._prefix}{token}".encode(), traceparent=traceparent)
            msg = await future
        finally:
            self._waiting.pop(token, None)
            self._due.pop(token, None)
        if not msg.data and msg.headers and msg.headers.get(Header.STATUS) == _NO_RESPONDERS:
            raise NoRespondersError
        return msg

    def fail_all(self) -> None:
        """The connection was lost: a request written just before may be lost with it, and its caller would wait
        its whole timeout for nothing. Fail every waiting request now with :class:`ConnectionLost` instead."""
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(ConnectionLost())

    async def _sweep(self) -> None:
        """While requests wait, time out those past their deadline every :data:`SWEEP` seconds. A timer per
        request costs more than the rest of the client's side of a small request (made, cancelled, and left in
        the loop's heap until it would have fired)."""
        try:
            while self._due:
                now = time.monotonic()
                for token, due in list(self._due.items()):
                    if due <= now:
                        future = self._waiting.get(token)
                        if future is not None and not future.done():
                            future.set_exception(NatsTimeout())
                        del self._due[token]  # answered or not, the caller's finally has nothing left to do
                await asyncio.sleep(min(SWEEP, max(0.0, min(self._due.values(), default=now) - now)))
        finally:
            self._sweeper = None

    async def _start(self) -> None:
        # The prefix is set before subscribing, so a concurrent first request does not subscribe a second
        # time; the SUB is queued ahead of any request on the same connection, so the server knows it first.
        prefix = self._prefix = f"{self._nc.new_inbox()}."
        try:
            await self._nc.subscribe(f"{prefix}*", cb=self._on_reply)
        except BaseException:
            self._prefix = ""
            raise

    async def _on_reply(self, msg: Msg) -> None:
        future = self._waiting.pop(msg.subject[len(self._prefix) :], None)
        if future is not None and not future.done():
            future.set_result(msg)
