"""Knowledge-source activations in traces: a board write made inside a trace wakes its sources in that trace,
each activation a span whose parent is the work that wrote (a person's span, then the activation that wrote
next), on a real nats-server with the hive's real runtime."""

from __future__ import annotations

from pathlib import Path

import nats
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from subhive.bus import EmbeddedServer
from subhive.hive import HiveRuntime, KvBlackboard, ensure_blackboard
from subhive.telemetry import span
from tests.kit import run

from ._solo import solo_workspace
from .conftest import finished


def test_a_write_wakes_its_sources_in_the_writers_trace(
    server: EmbeddedServer, tmp_path: Path, traced: InMemorySpanExporter
) -> None:
    workspace = solo_workspace(tmp_path)

    async def scenario() -> str:
        nc = await nats.connect(server.url)
        await ensure_blackboard(nc.jetstream(), "solo")
        runtime = await HiveRuntime.start(workspace, "solo", server.endpoint())
        try:
            with span("plan", "internal") as plan:
                board = KvBlackboard(nc.jetstream(), "solo")
                await board.put("tasks.t1", {"title": "t", "status": "open"}, writer="human")
            assert runtime.controller is not None
            await runtime.controller.idle()
        finally:
            await runtime.stop()
            await nc.close()
        return plan.traceparent

    plan = run(scenario())
    _, trace, plan_id, _ = plan.split("-")
    activations = [s for s in finished(traced) if s["name"] == "activate marks"]
    assert len(activations) == 2
    assert {s["trace_id"] for s in activations} == {trace}
    [first] = [s for s in activations if s["parent_id"] == plan_id]  # the person's write woke it
    [second] = [s for s in activations if s is not first]
    assert second["parent_id"] == first["span_id"]  # its own write woke it again
    assert first["attributes"]["subhive.entry"] == "tasks.t1"
    assert first["attributes"]["subhive.knowledge_source"] == "marks"
