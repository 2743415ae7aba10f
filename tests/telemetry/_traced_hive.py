"""Hive ``backend`` as a process of its own, traced into memory: ``python -m tests.telemetry._traced_hive URL OUT``.

It answers ``loose.echo`` (and, inside the handler, publishes ``loose.noted`` with the same payload) and serves a
gRPC method ``/test.Echo/Say`` on a free loopback port; it prints ``ready <grpc port>``. On SIGTERM it writes its
finished spans to OUT as JSON (ids in hex, as a traceparent shows them) and exits.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from typing import Any

import grpc
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from subhive.bus import BusEndpoint, NatsTransport
from subhive.rpc import ProviderInterceptor
from subhive.telemetry import enable_tracing
from tests.bus._kit import loose


def dump(spans: Any) -> list[dict[str, Any]]:
    """Finished spans as plain data: what the test process compares with its own."""
    return [
        {
            "name": s.name,
            "kind": s.kind.name.lower(),
            "service": s.resource.attributes.get("service.name"),
            "trace_id": f"{s.context.trace_id:032x}",
            "span_id": f"{s.context.span_id:016x}",
            "parent_id": f"{s.parent.span_id:016x}" if s.parent is not None else None,
            "attributes": dict(s.attributes or {}),
            "status": s.status.status_code.name,
        }
        for s in spans
    ]


async def main(url: str, out: str) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "backend"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    enable_tracing(provider)
    contract = loose()
    hive = await NatsTransport.connect(BusEndpoint([url]), "backend")

    async def echo(payload: Any) -> Any:
        await hive.publish(contract, "noted", payload)
        return payload

    await hive.serve(contract, {"echo": echo, "strict": echo})

    async def say(request: bytes, context: Any) -> bytes:
        return request

    server = grpc.aio.server(interceptors=[ProviderInterceptor("backend")])
    handlers: dict[str, grpc.RpcMethodHandler[bytes, bytes]] = {"Say": grpc.unary_unary_rpc_method_handler(say)}
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("test.Echo", handlers),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    print("ready", port, flush=True)
    await stop.wait()
    await server.stop(None)
    await hive.close()
    with open(out, "w", encoding="utf-8") as file:
        json.dump(dump(exporter.get_finished_spans()), file)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
