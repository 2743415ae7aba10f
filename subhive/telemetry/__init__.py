"""Traces and metrics: OpenTelemetry spans on the W3C ``traceparent`` the bus and gRPC calls carry (an optional
extra: ``pip install 'subhive[otel]'``), and Prometheus metrics per hive on a loopback ``/metrics`` endpoint.
See docs/observability.md.
"""

from ._metrics import AGENT_USAGE, HiveCollector, Latency, MetricsServer, record_agent_usage, serve_metrics
from ._tracing import (
    TRACING,
    SpanHandle,
    Tracing,
    configure_tracing,
    enable_tracing,
    shutdown_tracing,
    span,
    start_span,
)

__all__ = [
    "AGENT_USAGE",
    "TRACING",
    "HiveCollector",
    "Latency",
    "MetricsServer",
    "SpanHandle",
    "Tracing",
    "configure_tracing",
    "enable_tracing",
    "record_agent_usage",
    "serve_metrics",
    "shutdown_tracing",
    "span",
    "start_span",
]
