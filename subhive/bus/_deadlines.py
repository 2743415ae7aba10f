"""Handler deadlines, cheaply: one watchdog task per transport cancels the handler calls that ran past theirs.

``asyncio.timeout`` costs ~4 us a call (a timer handle in the loop's heap, made and cancelled each time): more
than the rest of a small request's handling on the provider's side. Here a call costs two dict operations;
the watchdog runs only while calls are in flight. See docs/decisions/0048-handler-deadlines-and-crash-backstop.md.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import TypeVar

__all__ = ["Deadlines", "Late"]

T = TypeVar("T")
#: Longest the watchdog sleeps while calls are in flight: a deadline fires at most this late.
_TICK = 0.05


class Late(Exception):
    """A handler call ran past its deadline and was cancelled."""


class Deadlines:
    """Handler calls in flight, each with the time it must end by (``time.monotonic``)."""

    def __init__(self) -> None:
        self._due: dict[asyncio.Task[object], float] = {}
        self._cancelled: set[asyncio.Task[object]] = set()
        self._watchdog: asyncio.Task[None] | None = None

    async def call(self, call: Awaitable[T], seconds: float) -> T:
        """Await ``call`` (a handler's coroutine, run in the current task); raise :class:`Late` if it has not
        finished within ``seconds``: it is cancelled then. Another cancellation of the task passes through."""
        task = asyncio.current_task()
        if task is None:  # not in a task: nothing to cancel
            return await call
        self._due[task] = time.monotonic() + seconds
        if self._watchdog is None:
            self._watchdog = asyncio.get_running_loop().create_task(self._watch())
        try:
            return await call
        except asyncio.CancelledError:
            if task not in self._cancelled:
                raise
            raise Late(f"not finished within {seconds:g} s") from None
        finally:
            self._due.pop(task, None)
            if task in self._cancelled:  # the watchdog's cancel was delivered (or swallowed): it is over now
                self._cancelled.discard(task)
                task.uncancel()

    async def _watch(self) -> None:
        try:
            while self._due:
                now = time.monotonic()
                for task, due in list(self._due.items()):
                    if due <= now and task not in self._cancelled:
                        self._cancelled.add(task)
                        task.cancel()
                waiting = [due for task, due in self._due.items() if task not in self._cancelled]
                await asyncio.sleep(min(_TICK, max(0.0, min(waiting, default=now + _TICK) - now)))
        finally:
            self._watchdog = None
