"""Traces across two hives: the test process is hive ``web``, hive ``backend`` runs as its own process (real
nats-server, real gRPC on a loopback port), each exporting into memory. Parent/child links must cross the
processes exactly as the work did, on the ids the bus's own ``traceparent`` carries."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from subhive._trace import current_traceparent
from subhive.bus import EmbeddedServer, NatsTransport
from subhive.rpc import trace_interceptors
from subhive.runtime import PayloadInvalid
from subhive.telemetry import TRACING, configure_tracing, shutdown_tracing, span
from tests.bus._kit import letters, loose, provision, until
from tests.kit import run

from ._otlp import receiver, spans_by_service
from .conftest import Backend, finished, one


def own(traceparent: str) -> tuple[str, str]:
    """(trace id, span id) of a traceparent."""
    _, trace, span_id, _ = traceparent.split("-")
    return trace, span_id


def test_a_request_and_the_event_it_causes_link_up_across_two_hives(
    server: EmbeddedServer, traced: InMemorySpanExporter, backend: Backend
) -> None:
    async def scenario() -> tuple[str, str]:
        web = await NatsTransport.connect(server.endpoint(), "web")
        noted: asyncio.Queue[str | None] = asyncio.Queue()

        async def on_noted(payload: Any) -> None:
            await noted.put(current_traceparent())

        try:
            await web.subscribe(loose(), "noted", on_noted)
            with span("checkout", "internal") as root:
                assert await web.request(loose(), "echo", {"n": 7}) == {"n": 7}
            seen = await asyncio.wait_for(noted.get(), 10)
        finally:
            await web.close()
        assert seen is not None
        return root.traceparent, seen

    root, seen_by_handler = run(scenario())
    ours, theirs = finished(traced), backend.spans()
    request = one(ours, "client", "request subhive.loose.v1.op.echo.web")
    answer = one(theirs, "server", "process subhive.loose.v1.op.echo.web")
    publish = one(theirs, "producer", "publish subhive.loose.v1.ev.noted")
    consume = one(ours, "consumer", "process subhive.loose.v1.ev.noted")
    trace, root_id = own(root)
    # One trace, each span the child of the one that caused it, across both processes and back.
    assert {s["trace_id"] for s in (request, answer, publish, consume)} == {trace}
    assert request["parent_id"] == root_id
    assert answer["parent_id"] == request["span_id"]
    assert publish["parent_id"] == answer["span_id"]
    assert consume["parent_id"] == publish["span_id"]
    assert (request["service"], answer["service"], publish["service"], consume["service"]) == (
        "web",
        "backend",
        "backend",
        "web",
    )
    # The handler ran in its span: what it logs or sends on names the same ids the exporter has.
    assert own(seen_by_handler) == (trace, consume["span_id"])
    assert publish["attributes"]["messaging.system"] == "nats"
    assert publish["attributes"]["messaging.destination.name"] == "subhive.loose.v1.ev.noted"
    assert publish["attributes"]["messaging.message.id"]
    assert answer["attributes"]["subhive.member"] == "echo"
    assert {s["status"] for s in (request, answer, publish, consume)} == {"UNSET"}


def test_a_request_refused_before_it_leaves_is_a_failed_client_span(
    server: EmbeddedServer, traced: InMemorySpanExporter, backend: Backend
) -> None:
    async def scenario() -> str:
        web = await NatsTransport.connect(server.endpoint(), "web")
        try:
            with pytest.raises(PayloadInvalid) as refused:  # "strict" takes 0..100: refused before it is sent
                await web.request(loose(), "strict", {"n": 101})
            return refused.value.code
        finally:
            await web.close()

    assert run(scenario()) == "payload.invalid"
    request = one(finished(traced), "client", "request subhive.loose.v1.op.strict.web")
    assert request["status"] == "ERROR"
    assert request["attributes"]["error.type"] == "payload.invalid"
    # Nothing left: the provider has no span for it.
    assert not [s for s in backend.spans() if "strict" in s["name"]]


def test_a_grpc_call_between_two_hives_is_one_client_and_one_server_span(
    traced: InMemorySpanExporter, backend: Backend
) -> None:
    async def scenario() -> str:
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{backend.grpc_port}", interceptors=trace_interceptors())
        try:
            with span("lookup", "internal") as root:
                say: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary("/test.Echo/Say")
                assert await say(b"hi") == b"hi"
            # the client span ends once grpc.aio has read the call's status
            assert await until(lambda: [s for s in traced.get_finished_spans() if s.name == "test.Echo/Say"])
        finally:
            await channel.close()
        return root.traceparent

    root = run(scenario())
    call = one(finished(traced), "client", "test.Echo/Say")
    served = one(backend.spans(), "server", "test.Echo/Say")
    trace, root_id = own(root)
    assert (call["trace_id"], served["trace_id"]) == (trace, trace)
    assert call["parent_id"] == root_id
    assert served["parent_id"] == call["span_id"]
    assert served["service"] == "backend"
    for side in (call, served):
        assert {k: side["attributes"][k] for k in ("rpc.system", "rpc.service", "rpc.method")} == {
            "rpc.system": "grpc",
            "rpc.service": "test.Echo",
            "rpc.method": "Say",
        }
    assert call["attributes"]["rpc.grpc.status_code"] == 0


def test_the_otel_variables_send_spans_over_otlp_named_after_the_hive(monkeypatch: pytest.MonkeyPatch) -> None:
    with receiver() as (endpoint, got):
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)  # the exporter reads its own variables
        monkeypatch.setenv("OTEL_SERVICE_NAME", "ignored-for-a-hive")
        try:
            assert configure_tracing("backend")
            with span("work", "internal") as work:
                pass
        finally:
            shutdown_tracing()  # exports what is pending
        assert TRACING.tracer is None
    [sent] = spans_by_service(got)["backend"]
    assert (sent.name, sent.trace_id.hex(), sent.span_id.hex()) == ("work", *own(work.traceparent))


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"OTEL_SERVICE_NAME": "x"},
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"},
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_EXPORTER": "none"},
        {"OTEL_TRACES_EXPORTER": "zipkin"},
    ],
)
def test_without_an_exporter_asked_for_tracing_stays_off(env: dict[str, str]) -> None:
    assert not configure_tracing("backend", env)
    assert TRACING.tracer is None
    with span("work", "internal") as work:
        assert work.traceparent == ""  # off: no span, no trace of its own


def test_a_dead_letter_names_the_trace_and_span_the_viewer_shows(
    server: EmbeddedServer, traced: InMemorySpanExporter
) -> None:
    async def scenario() -> list[Any]:
        await provision(server, ["web", "backend"], [("loose", 1)])
        web = await NatsTransport.connect(server.endpoint(), "web")
        backend = await NatsTransport.connect(server.endpoint(), "backend")

        async def always_fails(payload: Any) -> None:
            raise RuntimeError("this handler never copes")

        try:
            await web.subscribe(loose(), "noted", always_fails)
            await backend.publish(loose(), "noted", {"n": 1})
            return list(await until(lambda: letters(server, "web")))
        finally:
            await web.close()
            await backend.close()

    [letter] = run(scenario(), timeout=60)
    spans = finished(traced)
    publish = one(spans, "producer", "publish subhive.loose.v1.ev.noted")
    handled = [s for s in spans if s["kind"] == "consumer"]
    assert letter.code == "handler.failed"
    # The letter's traceparent is the producer span, as the trace viewer shows it.
    assert own(letter.headers["traceparent"]) == (publish["trace_id"], publish["span_id"])
    assert len(handled) == 2  # the first try and the retry, each a failed child of the publish
    assert {(s["parent_id"], s["status"], s["attributes"]["error.type"]) for s in handled} == {
        (publish["span_id"], "ERROR", "handler.failed")
    }


def test_a_grpc_call_without_a_trace_starts_one_at_the_server(traced: InMemorySpanExporter) -> None:
    """A caller that sends no traceparent (a plain channel): the server span is a root, not the child of a
    parent that never existed (a trace viewer would show it as orphaned)."""
    from subhive.rpc._interceptors import ProviderInterceptor

    async def scenario() -> None:
        async def echo(request: bytes, context: Any) -> bytes:
            return request

        handlers = grpc.method_handlers_generic_handler("t.S", {"Echo": grpc.unary_unary_rpc_method_handler(echo)})
        server = grpc.aio.server(interceptors=[ProviderInterceptor("p")])
        server.add_generic_rpc_handlers((handlers,))
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                echo_call: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary("/t.S/Echo")
                assert await echo_call(b"hi") == b"hi"
        finally:
            await server.stop(0)

    run(scenario())
    (served,) = [s for s in traced.get_finished_spans() if s.name == "t.S/Echo"]
    assert served.parent is None
