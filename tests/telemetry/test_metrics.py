"""Prometheus metrics per hive, scraped over real HTTP while real traffic flows between two hives on a real
nats-server: messages in and out by contract member, validation failures by code and direction, dead letters,
retries, handler latency histograms; a running hive names its endpoint in its status file."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import nats
import pytest

from subhive.bus import EmbeddedServer, NatsTransport
from subhive.errors import InputError
from subhive.hive import HiveRuntime, KvBlackboard, ensure_blackboard
from subhive.runtime import PayloadInvalid
from subhive.telemetry import HiveCollector, serve_metrics
from tests.bus._kit import loose, provision, until
from tests.kit import REPO, run

from ._scrape import scrape, value
from ._solo import solo_workspace


def test_counters_move_with_real_traffic_between_two_hives(server: EmbeddedServer) -> None:
    async def scenario() -> None:
        await provision(server, ["web", "backend"], [("loose", 1)])
        web = await NatsTransport.connect(server.endpoint(), "web")
        backend = await NatsTransport.connect(server.endpoint(), "backend")
        web_metrics = await serve_metrics(HiveCollector("web", lambda: web.stats))
        backend_metrics = await serve_metrics(HiveCollector("backend", lambda: backend.stats))
        raw = await nats.connect(server.url)
        failed_once: list[Any] = []

        async def on_noted(payload: Any) -> None:
            if not failed_once:
                failed_once.append(payload)
                raise RuntimeError("first delivery fails: the bus retries it")

        async def echo(payload: Any) -> Any:
            return payload

        try:
            before = await scrape(backend_metrics.url)
            assert value(before, "subhive_messages_received_total") == 0
            await backend.serve(loose(), {"echo": echo, "strict": echo})
            await web.subscribe(loose(), "noted", on_noted)
            for n in range(3):
                assert await web.request(loose(), "echo", {"n": n}) == {"n": n}
            with pytest.raises(PayloadInvalid):
                await web.request(loose(), "strict", {"n": 101})  # refused before it leaves web
            # Past web's own check, as another client might send it: backend refuses and keeps it.
            reply = await raw.request(
                "subhive.loose.v1.op.strict.web",
                b'{"n": 101}',
                headers={"Subhive-Contract": "loose@1.0.0", "Subhive-Sender": "web"},
                timeout=5,
            )
            code = (reply.headers or {})["Subhive-Error"]
            await backend.publish(loose(), "noted", {"n": 1})
            assert await until(lambda: web.stats.handled.get(("loose", "1", "ev", "noted"), None))
            await until(lambda: sum(h.count for h in web.stats.handled.values()) == 2)

            ours = await scrape(backend_metrics.url)
            echo_in = {"contract": "loose", "major": "1", "kind": "request", "member": "echo"}
            assert value(ours, "subhive_messages_received_total", hive="backend", **echo_in) == 3
            assert value(ours, "subhive_messages_sent_total", **{**echo_in, "kind": "reply"}) == 3
            assert value(ours, "subhive_messages_sent_total", kind="event", member="noted") == 1
            assert value(ours, "subhive_validation_failures_total", direction="incoming", code=code) == 1
            assert value(ours, "subhive_messages_refused_total", code=code) == 1
            assert value(ours, "subhive_dead_letters_total", hive="backend") == 1
            assert value(ours, "subhive_handler_seconds_count", member="echo") == 3
            assert value(ours, "subhive_handler_seconds_bucket", member="echo", le="+Inf") == 3
            assert value(ours, "subhive_handler_seconds_sum", member="echo") > 0

            theirs = await scrape(web_metrics.url)
            assert value(theirs, "subhive_messages_sent_total", hive="web", kind="request", member="echo") == 3
            assert value(theirs, "subhive_messages_received_total", kind="reply", member="echo") == 3
            assert value(theirs, "subhive_validation_failures_total", direction="outgoing") == 1
            assert value(theirs, "subhive_retries_total") == 1
            assert value(theirs, "subhive_handler_seconds_count", kind="event", member="noted") == 2
        finally:
            for closing in (web_metrics, backend_metrics):
                await closing.close()
            await raw.close()
            await web.close()
            await backend.close()

    run(scenario(), timeout=60)


def test_the_endpoint_answers_only_metrics(server: EmbeddedServer) -> None:
    async def scenario() -> tuple[int, int]:
        metrics = await serve_metrics(HiveCollector("x", lambda: None))
        try:
            codes = []
            for method, path in (("GET", "/"), ("POST", "/metrics")):
                request = urllib.request.Request(metrics.url.replace("/metrics", path), method=method, data=b"")
                with pytest.raises(urllib.error.HTTPError) as refused:
                    await asyncio.to_thread(urllib.request.urlopen, request, timeout=5)
                codes.append(refused.value.code)
            return codes[0], codes[1]
        finally:
            await metrics.close()

    assert run(scenario()) == (404, 405)


def test_a_running_hive_names_its_endpoint_in_its_status(server: EmbeddedServer, tmp_path: Path) -> None:
    workspace = solo_workspace(tmp_path)
    status_file = tmp_path / "solo.json"

    async def scenario() -> None:
        nc = await nats.connect(server.url)
        await ensure_blackboard(nc.jetstream(), "solo")
        runtime = await HiveRuntime.start(workspace, "solo", server.endpoint(), status_file=status_file)
        try:
            url = json.loads(status_file.read_text())["metrics"]
            assert url.startswith("http://127.0.0.1:")
            assert url.endswith("/metrics")
            assert value(await scrape(url), "subhive_activations_total", hive="solo") == 0
            await KvBlackboard(nc.jetstream(), "solo").put("tasks.t1", {"title": "t", "status": "open"}, writer="human")
            assert runtime.controller is not None
            await runtime.controller.idle()
            samples = await scrape(url)
            assert value(samples, "subhive_activations_total", hive="solo", source="marks") == 2  # the task, its mark
            assert value(samples, "subhive_activation_failures_total") == 0
        finally:
            await runtime.stop()
            await nc.close()

    run(scenario(), timeout=60)


@pytest.mark.parametrize("address", ["nowhere", "127.0.0.1:port", ":9464", "127.0.0.1:70000"])
def test_a_bad_metrics_address_is_named(server: EmbeddedServer, tmp_path: Path, address: str) -> None:
    with pytest.raises(InputError) as failed:
        run(HiveRuntime.start(tmp_path, "solo", server.endpoint(), metrics=address))
    assert failed.value.code == "hive.metrics_address"
    assert address in failed.value.message
    assert "host:port" in failed.value.message


def test_a_metrics_port_already_taken_is_a_clear_error(server: EmbeddedServer, tmp_path: Path) -> None:
    """An inherited fixed address that another hive already holds: the hive says so, no traceback."""
    import socket

    workspace = solo_workspace(tmp_path)

    async def scenario() -> None:
        nc = await nats.connect(server.url)
        await ensure_blackboard(nc.jetstream(), "solo")
        await nc.close()
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            address = f"127.0.0.1:{taken.getsockname()[1]}"
            with pytest.raises(InputError) as failed:
                await HiveRuntime.start(workspace, "solo", server.endpoint(), metrics=address)
            assert failed.value.code == "metrics.unavailable"
            assert address in failed.value.message

    run(scenario(), timeout=60)


LAZY = """
import asyncio, sys, urllib.request
from subhive.telemetry import HiveCollector, serve_metrics

async def main():
    metrics = await serve_metrics(HiveCollector("x", lambda: None))
    assert "prometheus_client" not in sys.modules, "imported before any scrape"
    get = lambda: urllib.request.urlopen(metrics.url, timeout=5).read()
    body = await asyncio.to_thread(get)
    assert b"subhive_agent_tokens" in body, body
    assert "prometheus_client" in sys.modules
    await metrics.close()

asyncio.run(main())
"""


def test_a_hive_nobody_scrapes_never_imports_the_prometheus_client() -> None:
    ran = subprocess.run(
        [sys.executable, "-c", LAZY], cwd=REPO, capture_output=True, text=True, timeout=60, check=False
    )
    assert ran.returncode == 0, ran.stderr
