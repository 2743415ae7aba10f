"""Awaiting many calls, a few at a time: provisioning hundreds of hives' streams and consumers one round trip
after another would take minutes, all at once would flood the server."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterable
from typing import Any, TypeVar

__all__ = ["bounded"]

T = TypeVar("T")


async def bounded(calls: Iterable[Coroutine[Any, Any, T]], at_once: int) -> list[T]:
    """The results of ``calls`` in order, up to ``at_once`` awaited at a time; the first failure is raised once
    the others ended (none is left running)."""
    gate = asyncio.Semaphore(at_once)

    async def gated(call: Coroutine[Any, Any, T]) -> T:
        async with gate:
            return await call

    results = await asyncio.gather(*(gated(call) for call in calls), return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results  # type: ignore[return-value]  # no exception among them
