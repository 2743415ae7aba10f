"""The trace context a gRPC call carries: W3C ``traceparent`` metadata, in the one contextvar shared with the
NATS transport (``subhive._trace``), so work keeps one trace id across both. See docs/rpc.md#trace-context.
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

__all__ = [
    "TRACEPARENT",
    "continue_trace",
    "current_traceparent",
    "new_traceparent",
    "outgoing_traceparent",
    "parse_traceparent",
    "start_trace",
    "trace_id",
]

#: The metadata key (gRPC keys are lower case), as in W3C Trace Context.
TRACEPARENT = "traceparent"
