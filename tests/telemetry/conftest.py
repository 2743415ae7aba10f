"""Tracing into memory for one test (the test process is hive ``web``), and hive ``backend`` as its own traced
process (tests/telemetry/_traced_hive.py)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from subhive.bus import EmbeddedServer
from subhive.telemetry import enable_tracing, shutdown_tracing
from tests.bus._kit import provision
from tests.kit import REPO, run

from ._traced_hive import dump


@pytest.fixture
def traced() -> Iterator[InMemorySpanExporter]:
    """This process traces as hive ``web`` into memory; tracing is off again afterwards."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "web"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    enable_tracing(provider)
    try:
        yield exporter
    finally:
        shutdown_tracing()
        provider.shutdown()


@dataclass
class Backend:
    """The ``backend`` process: its gRPC port; :meth:`spans` stops it and returns what it traced."""

    process: subprocess.Popen[str]
    grpc_port: int
    out: Path

    def spans(self) -> list[dict[str, Any]]:
        self.process.send_signal(signal.SIGTERM)
        assert self.process.wait(timeout=20) == 0
        spans: list[dict[str, Any]] = json.loads(self.out.read_text(encoding="utf-8"))
        return spans


@pytest.fixture
def backend(server: EmbeddedServer, tmp_path: Path) -> Iterator[Backend]:
    run(provision(server, ["web", "backend"], [("loose", 1)]))
    out = tmp_path / "backend-spans.json"
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.telemetry._traced_hive", server.url, str(out)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().split()  # "" if it died: the assertion below says so
        assert line[:1] == ["ready"], f"backend did not start (exit code {process.poll()})"
        yield Backend(process, int(line[1]), out)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def finished(exporter: InMemorySpanExporter) -> list[dict[str, Any]]:
    """This process's finished spans, as the backend reports its own."""
    return dump(exporter.get_finished_spans())


def one(spans: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    """The one span of ``kind`` named ``name``."""
    [found] = [s for s in spans if s["kind"] == kind and s["name"] == name]
    return found
