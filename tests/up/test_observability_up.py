"""``subhive up`` and observability, end to end: the standard OTEL_* variables reach each hive's process (its
spans arrive at an OTLP receiver named after the hive), and ``status`` names each hive's metrics endpoint, which
answers over HTTP with counters that moved with the work the hive did."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.telemetry._otlp import receiver, spans_by_service
from tests.telemetry._scrape import Samples, scrape, value

from ._tree import CopyTemplate, subhive, up, wait_for


def test_hives_trace_as_the_otel_variables_say_and_status_names_their_metrics(
    module_template_copy: CopyTemplate, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace: Path = module_template_copy("web", "backend", "backend_api")  # the db hive alone
    with receiver() as (endpoint, got):
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")  # milliseconds between exports
        ran = up(workspace)
        assert ran.code == 0, ran
        try:
            data = json.loads(subhive(workspace, "status", "--format", "json").out)
            url = data["runtime"]["hives"]["db"]["metrics"]
            assert url.startswith("http://127.0.0.1:")
            assert f"metrics {url}" in subhive(workspace, "status").out
            assert value(asyncio.run(scrape(url)), "subhive_activations_total", hive="db") == 0

            put = subhive(workspace, "board", "put", "db", "tasks.t1", '{"title": "Index", "status": "open"}')
            assert put.code == 0, put

            def activated() -> Samples | None:
                samples = asyncio.run(scrape(url))
                return samples if value(samples, "subhive_activations_total", hive="db") > 0 else None

            samples = wait_for(activated, "the activation counted at the metrics endpoint")
            assert value(samples, "subhive_activations_total", hive="db") >= 1
            activations = wait_for(
                lambda: [s for s in spans_by_service(got).get("db", []) if s.name.startswith("activate ")],
                "the db hive's activation span at the OTLP receiver",
            )
            hive = {a.key: a.value.string_value for a in activations[0].attributes}["subhive.hive"]
            assert hive == "db"
        finally:
            assert subhive(workspace, "down").code == 0
