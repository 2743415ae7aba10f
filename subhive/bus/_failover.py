"""One JetStream write retried while no stream answers: a cluster electing a new leader after losing a node
(5-9 s measured). The retry carries the same headers, message id included, so the stream stores it once
(docs/cluster.md, decision 0057)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout
from nats.js.errors import NoStreamResponseError

__all__ = ["NO_STREAM_ANSWER", "through_failover"]

T = TypeVar("T")

#: What a write gets while no stream answers: no leader yet, no responders, or no answer in time.
NO_STREAM_ANSWER = (NoStreamResponseError, NatsTimeout, NoRespondersError)
# Between attempts.
_PAUSE = 0.1


async def through_failover(
    attempt: Callable[[], Awaitable[T]],
    seconds: float,
    *,
    give_up: Callable[[], bool] = lambda: False,
    on_retry: Callable[[], None] = lambda: None,
) -> T:
    """``attempt()`` until it succeeds, retried while it raises :data:`NO_STREAM_ANSWER` for up to ``seconds``
    (0: once); ``give_up()`` true stops the retries early (a permission refusal will not go away)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return await attempt()
        except NO_STREAM_ANSWER:
            if time.monotonic() >= deadline or give_up():
                raise
            on_retry()
            await asyncio.sleep(_PAUSE)
