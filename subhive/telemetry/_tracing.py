"""OpenTelemetry spans on the trace the bus already carries: a span's parent is the ``traceparent`` of the message
or call that caused it, and inside a span subhive's current traceparent names that span, so whatever is sent in
it is its child. The ids are the traceparent's, so logs and dead letters agree with the traces.
With tracing off (the default) nothing here imports OpenTelemetry and the bus's hot path checks one attribute.
See docs/observability.md and docs/decisions/0083-tracing-is-an-optional-extra.md.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Mapping
from typing import Any

from .._trace import continue_trace, current_traceparent, parse_traceparent

__all__ = [
    "TRACING",
    "SpanHandle",
    "Tracing",
    "configure_tracing",
    "enable_tracing",
    "shutdown_tracing",
    "span",
    "start_span",
]

log = logging.getLogger("subhive.telemetry")


class Tracing:
    """Whether spans are made: ``tracer`` is an OpenTelemetry tracer while tracing is on, else None (what hot
    paths check before doing anything)."""

    def __init__(self) -> None:
        self.tracer: Any = None
        self.provider: Any = None  # the SDK provider configure_tracing made (shut down on exit), if it made one


#: The process's tracing switch.
TRACING = Tracing()


class SpanHandle:
    """The span a block runs in: its ``traceparent``; :meth:`fail` marks it failed (a refusal is not an
    exception). A no-op handle when tracing is off."""

    __slots__ = ("_span", "traceparent")

    def __init__(self, traceparent: str, otel_span: Any = None) -> None:
        self.traceparent = traceparent
        self._span = otel_span

    def fail(self, code: str, message: str = "") -> None:
        """Status ERROR with ``code`` as ``error.type`` (as the semantic conventions name it)."""
        if self._span is not None:
            from opentelemetry.trace import Status, StatusCode

            self._span.set_attribute("error.type", code)
            self._span.set_status(Status(StatusCode.ERROR, f"{code}: {message}" if message else code))

    def set(self, key: str, value: str | int | float | bool) -> None:
        if self._span is not None:
            self._span.set_attribute(key, value)

    def end(self) -> None:
        """End a span from :func:`start_span` (one from :func:`span` ends with its block)."""
        if self._span is not None:
            self._span.end()


def enable_tracing(provider: Any = None) -> None:
    """Make spans with ``provider``'s tracer (an OpenTelemetry ``TracerProvider``; by default the global one).
    Tests pass an SDK provider with an in-memory exporter; hives call :func:`configure_tracing`."""
    from opentelemetry import trace

    TRACING.tracer = (provider or trace.get_tracer_provider()).get_tracer("subhive")


def configure_tracing(service_name: str, env: Mapping[str, str] | None = None) -> bool:
    """Turn tracing on as the standard ``OTEL_*`` variables say, with ``service.name`` = ``service_name`` (a
    hive's name); False, and tracing stays off, when they ask for no exporter or the ``otel`` extra is missing.

    On when ``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is set or
    ``OTEL_TRACES_EXPORTER`` names ``otlp`` or ``console``; off when ``OTEL_SDK_DISABLED=true`` or
    ``OTEL_TRACES_EXPORTER=none``. The exporter reads its own variables (endpoint, headers, protocol, timeout);
    ``OTEL_RESOURCE_ATTRIBUTES`` adds to the resource; ``OTEL_BSP_*`` tune the batch processor."""
    env = os.environ if env is None else env
    exporter_name = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true" or exporter_name == "none":
        return False
    endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    if not exporter_name and not endpoint:
        return False
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
    except ImportError:
        log.warning("OTEL_* variables ask for traces, but the otel extra is missing: pip install 'subhive[otel]'")
        return False
    if exporter_name not in ("", "otlp", "console"):
        log.warning("OTEL_TRACES_EXPORTER=%s is not supported (otlp, console, none): tracing stays off", exporter_name)
        return False
    exporter: Any
    if exporter_name == "console":
        exporter = ConsoleSpanExporter()
    else:
        exporter = _otlp_exporter(env)
        if exporter is None:
            return False
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    TRACING.provider = provider
    enable_tracing(provider)
    return True


def _otlp_exporter(env: Mapping[str, str]) -> Any:
    """The OTLP span exporter of ``OTEL_EXPORTER_OTLP[_TRACES]_PROTOCOL``: ``http/protobuf`` (the default the
    specification names) or ``grpc``."""
    protocol = (
        env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or env.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "http/protobuf"
    ).strip()
    try:
        if protocol == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

            return GrpcExporter()
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

        return HttpExporter()
    except ImportError:
        log.warning("the OTLP exporter is missing: pip install 'subhive[otel]'; tracing stays off")
        return None


def shutdown_tracing() -> None:
    """Export what is pending and stop: the end of a hive's process."""
    provider, TRACING.provider, TRACING.tracer = TRACING.provider, None, None
    if provider is not None:
        with contextlib.suppress(Exception):
            provider.shutdown()


_KINDS = ("internal", "server", "client", "producer", "consumer")  # SpanKind's values 0-4, in its order


@contextlib.contextmanager
def span(
    name: str, kind: str, attributes: Mapping[str, Any] | None = None, *, parent: str | None = None
) -> Iterator[SpanHandle]:
    """Run the block in a span named ``name`` of ``kind`` (internal, server, client, producer, consumer), the
    child of ``parent`` (the traceparent a message or call came with) or else of the current trace (or of
    OpenTelemetry's current span, for work that starts outside any subhive trace). Inside, the current
    traceparent is the span's own: what the block sends is its child. With tracing off it only continues
    ``parent``'s trace, as the bus always did.

    An exception leaving the block is recorded on the span and marks it failed, then propagates."""
    tracer = TRACING.tracer
    if tracer is None:
        if parent is None:
            yield SpanHandle(current_traceparent() or "")
            return
        with continue_trace(parent) as traceparent:
            yield SpanHandle(traceparent)
        return
    from opentelemetry import trace

    handle = start_span(name, kind, attributes, parent=parent)
    assert handle is not None  # tracing is on
    with trace.use_span(handle._span, end_on_exit=True), continue_trace(handle.traceparent):
        yield handle


def _span_context(traceparent: str) -> Any:
    from opentelemetry.trace import SpanContext, TraceFlags

    _, trace_id, span_id, flags = traceparent.split("-")
    return SpanContext(int(trace_id, 16), int(span_id, 16), is_remote=True, trace_flags=TraceFlags(int(flags, 16)))


def start_span(
    name: str, kind: str, attributes: Mapping[str, Any] | None = None, *, parent: str | None = None
) -> SpanHandle | None:
    """A span that the caller ends with :meth:`SpanHandle.end` (one that outlives a block: a gRPC call ends in
    a callback), not made current; None while tracing is off. Parent as in :func:`span`."""
    tracer = TRACING.tracer
    if tracer is None:
        return None
    from opentelemetry import trace
    from opentelemetry.context import Context

    context: Context | None = None  # OpenTelemetry's current one
    source = parse_traceparent(parent) if parent is not None else current_traceparent()
    if source is not None:
        context = trace.set_span_in_context(trace.NonRecordingSpan(_span_context(source)))
    elif parent is not None:
        context = Context()  # a missing or invalid incoming traceparent starts a new trace, as continue_trace does
    otel_span = tracer.start_span(name, context=context, kind=trace.SpanKind(_KINDS.index(kind)), attributes=attributes)
    return SpanHandle(_traceparent(otel_span), otel_span)


def _traceparent(otel_span: Any) -> str:
    ids = otel_span.get_span_context()
    return f"00-{ids.trace_id:032x}-{ids.span_id:016x}-{int(ids.trace_flags):02x}"
