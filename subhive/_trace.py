"""Trace context: the W3C ``traceparent`` a hive's work carries across NATS headers and gRPC metadata.
A handled message runs in its sender's trace, so what it sends on keeps the trace id (new span id each hop).
See docs/rpc.md#trace-context.
"""

from __future__ import annotations

import contextlib
import random
import re
from collections.abc import Iterator
from contextvars import ContextVar

__all__ = [
    "continue_trace",
    "current_traceparent",
    "new_traceparent",
    "outgoing_traceparent",
    "parse_traceparent",
    "start_trace",
    "trace_id",
]

# version 00: 2 hex version, 32 hex trace id (not all zero), 16 hex parent id (not all zero), 2 hex flags.
_TRACEPARENT = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})\Z")
_current: ContextVar[str | None] = ContextVar("subhive_traceparent", default=None)


def parse_traceparent(value: str | None) -> str | None:
    """``value`` if it is a valid version-00 traceparent, else None (an invalid one starts a new trace)."""
    if not value:
        return None
    match = _TRACEPARENT.match(value.strip().lower())
    if match is None or set(match.group(1)) == {"0"} or set(match.group(2)) == {"0"}:
        return None
    return match.group(0)


def trace_id(traceparent: str) -> str:
    """The 32-hex trace id of a traceparent."""
    return traceparent.split("-")[1]


def current_traceparent() -> str | None:
    """The trace the current task works in, if any."""
    return _current.get()


def outgoing_traceparent() -> str:
    """The traceparent for a message sent now: the current trace with a new span id, or a new trace."""
    current = _current.get()
    if current is None:
        return new_traceparent()
    return f"00-{current[3:35]}-{random.getrandbits(64) | 1:016x}-01"


def new_traceparent() -> str:
    """A traceparent of a new trace: ``00-<32 hex trace id>-<16 hex span id>-01`` (sampled)."""
    # Trace and span ids must be unique, not secret: random's generator is seeded from the OS and costs a
    # fraction of a system call per message. "| 1" keeps them from being all zeros, which W3C forbids.
    return f"00-{random.getrandbits(128) | 1:032x}-{random.getrandbits(64) | 1:016x}-01"


@contextlib.contextmanager
def continue_trace(traceparent: str | None) -> Iterator[str]:
    """Run the block in ``traceparent``'s trace (a new trace when it is missing or invalid).

    >>> with continue_trace("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"):  # doctest: +SKIP
    ...     outgoing_traceparent()  # same trace id, new span id
    """
    value = parse_traceparent(traceparent) or outgoing_traceparent()
    token = _current.set(value)
    try:
        yield value
    finally:
        _current.reset(token)


@contextlib.contextmanager
def start_trace() -> Iterator[str]:
    """Run the block in a new trace, even inside another one (work that starts a chain of its own).

    >>> with start_trace() as traceparent:  # doctest: +SKIP
    ...     reply = await stub.GetStock(request)  # sends the same trace id, a new span id
    """
    with continue_trace(new_traceparent()) as traceparent:
        yield traceparent
