"""The trace context a gRPC call carries: W3C ``traceparent`` metadata, one current trace per task.

    >>> with start_trace() as traceparent:                    # doctest: +SKIP
    ...     reply = await stub.GetStock(request)               # sends the same trace id, a new span id

The current trace lives in one contextvar shared with the NATS transport (``subhive.runtime._trace``), so a
hive handling a NATS message that calls a gRPC service, or the reverse, keeps one trace id end to end.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator

from ..runtime._trace import continue_trace, current_traceparent, outgoing_traceparent, parse_traceparent, trace_id

__all__ = ["TRACEPARENT", "continue_trace", "current_traceparent", "new_traceparent", "outgoing_traceparent",
           "parse_traceparent", "start_trace", "trace_id"]

#: The metadata key (gRPC keys are lower case), as in W3C Trace Context.
TRACEPARENT = "traceparent"


def new_traceparent() -> str:
    """A traceparent of a new trace: ``00-<32 hex trace id>-<16 hex span id>-01`` (sampled)."""
    return f"00-{secrets.token_hex(16)}-{secrets.token_hex(8)}-01"


@contextlib.contextmanager
def start_trace() -> Iterator[str]:
    """Run the block in a new trace, even inside another one (work that starts a chain of its own)."""
    with continue_trace(new_traceparent()) as traceparent:
        yield traceparent
