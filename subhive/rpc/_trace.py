"""The trace context a gRPC call carries: W3C ``traceparent`` metadata, one current trace per task.

    >>> with start_trace() as traceparent:                    # doctest: +SKIP
    ...     reply = await stub.GetStock(request)               # sends the same trace id, a new span id

The current trace lives in one contextvar shared with the NATS transport (``subhive._trace``), so a
hive handling a NATS message that calls a gRPC service, or the reverse, keeps one trace id end to end.
"""

from __future__ import annotations

from .._trace import (
    continue_trace,
    current_traceparent,
    new_traceparent,
    outgoing_traceparent,
    parse_traceparent,
    start_trace,
    trace_id,
)

__all__ = ["TRACEPARENT", "continue_trace", "current_traceparent", "new_traceparent", "outgoing_traceparent",
           "parse_traceparent", "start_trace", "trace_id"]

#: The metadata key (gRPC keys are lower case), as in W3C Trace Context.
TRACEPARENT = "traceparent"
