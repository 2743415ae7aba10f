"""An OTLP/HTTP receiver on a loopback port: what a collector would get, decoded."""

from __future__ import annotations

import contextlib
import http.server
import threading
from collections.abc import Iterator
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


class _Receiver(http.server.BaseHTTPRequestHandler):
    requests: list[ExportTraceServiceRequest]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.requests.append(ExportTraceServiceRequest.FromString(body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def receiver() -> Iterator[tuple[str, list[ExportTraceServiceRequest]]]:
    """``(endpoint, requests)``: the base URL for ``OTEL_EXPORTER_OTLP_ENDPOINT`` and the export requests it got."""
    got: list[ExportTraceServiceRequest] = []
    handler = type("Receiver", (_Receiver,), {"requests": got})
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", got
    finally:
        httpd.shutdown()
        httpd.server_close()


def spans_by_service(requests: list[ExportTraceServiceRequest]) -> dict[str, list[Any]]:
    """The spans received, by their resource's ``service.name``."""
    out: dict[str, list[Any]] = {}
    for request in requests:
        for resource_spans in request.resource_spans:
            names = [a.value.string_value for a in resource_spans.resource.attributes if a.key == "service.name"]
            for scope in resource_spans.scope_spans:
                out.setdefault(names[0] if names else "", []).extend(scope.spans)
    return out
