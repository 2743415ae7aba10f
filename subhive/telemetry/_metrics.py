"""Prometheus metrics of one hive, read at scrape time from the counters its transport and controller keep anyway
(a publish pays a dict increment, nothing more), served on a loopback HTTP endpoint. See docs/observability.md
and docs/decisions/0084-metrics-endpoint-per-hive.md.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

__all__ = [
    "AGENT_USAGE",
    "HiveCollector",
    "Latency",
    "MetricsServer",
    "record_agent_usage",
    "serve_metrics",
]

#: Handler latency buckets in seconds: a validated round trip is ~0.1 ms, an agent's turn minutes.
BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class Latency:
    """A histogram of handler run times: counts per bucket (not cumulative), their sum and number."""

    __slots__ = ("count", "counts", "sum")

    def __init__(self) -> None:
        self.counts = [0] * (len(BUCKETS) + 1)  # the last: above every bucket
        self.sum = 0.0
        self.count = 0

    def observe(self, seconds: float) -> None:
        self.counts[bisect.bisect_left(BUCKETS, seconds)] += 1
        self.sum += seconds
        self.count += 1

    def cumulative(self) -> list[tuple[str, int]]:
        """Prometheus buckets: ``(le, observations at most le)``, ending with ``+Inf``."""
        out, total = [], 0
        for bound, n in zip((*map(str, BUCKETS), "+Inf"), self.counts, strict=True):
            total += n
            out.append((bound, total))
        return out


class _AgentUsage:
    """Tokens and model calls of the agents that ran in this process, by (agent, model)."""

    def __init__(self) -> None:
        self.tokens: Counter[tuple[str, str, str]] = Counter()  # (agent, model, prompt|completion|cached)
        self.calls: Counter[tuple[str, str]] = Counter()


#: What the agents of this process used (subhive.agent records each model request here).
AGENT_USAGE = _AgentUsage()


def record_agent_usage(agent: str, model: str, prompt: int, completion: int, cached: int = 0) -> None:
    """Count one model request of ``agent``: its prompt, completion and cached prompt tokens."""
    AGENT_USAGE.calls[agent, model] += 1
    AGENT_USAGE.tokens[agent, model, "prompt"] += prompt
    AGENT_USAGE.tokens[agent, model, "completion"] += completion
    if cached:
        AGENT_USAGE.tokens[agent, model, "cached"] += cached


def _member(subject: str) -> tuple[str, str, str, str]:
    """``subhive.<contract>.v<line>.<op|ev>.<member>[.<sender>]`` as (contract, line, kind, member); the line as
    ``Version.line`` spells it ("1", "0.2": the subject token ``v0_2``, decision 0140)."""
    parts = subject.split(".")
    if len(parts) >= 5 and parts[0] == "subhive" and parts[2][:1] == "v":
        return parts[1], parts[2][1:].replace("_", "."), "request" if parts[3] == "op" else "event", parts[4]
    return subject, "", "other", ""


class HiveCollector:
    """A ``prometheus_client`` collector of one hive: ``bus()`` returns its transport's ``BusStats`` (or None before
    it connected), ``controller()`` its ``ControllerStats`` (or None). Metric names and labels:
    docs/observability.md#metrics."""

    def __init__(self, hive: str, bus: Callable[[], Any], controller: Callable[[], Any] = lambda: None) -> None:
        self.hive = hive
        self.bus = bus
        self.controller = controller

    def collect(self) -> Iterator[Any]:
        stats = self.bus()
        if stats is not None:
            yield from _bus_metrics(self.hive, stats)
        controller = self.controller()
        if controller is not None:
            yield from _controller_metrics(self.hive, controller)
        yield from _agent_metrics(self.hive)


_MEMBER = ["hive", "contract", "major", "kind", "member"]


def _bus_metrics(hive: str, stats: Any) -> Iterator[Any]:
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

    sent = CounterMetricFamily("subhive_messages_sent", "Messages this hive sent", labels=_MEMBER)
    received = CounterMetricFamily("subhive_messages_received", "Messages this hive received", labels=_MEMBER)
    for family, counts, reply in (
        (sent, stats.sent_on, None),
        (sent, stats.replied_on, "reply"),
        (received, stats.received_on, None),
        (received, stats.replies_on, "reply"),
    ):
        for (contract, major, kind, name), n in sorted(_by_member(counts).items()):
            family.add_metric([hive, contract, major, reply or kind, name], n)
    yield sent
    yield received
    refused = CounterMetricFamily(
        "subhive_messages_refused", "Messages refused or failed, by error code", labels=["hive", "code"]
    )
    invalid = CounterMetricFamily(
        "subhive_validation_failures",
        "Payloads that broke their contract's schema, by direction and code",
        labels=["hive", "direction", "code"],
    )
    for code, n in sorted(dict(stats.refused).items()):
        refused.add_metric([hive, code], n)
        if code.startswith("payload."):
            invalid.add_metric([hive, "incoming", code], n)
    for code, n in sorted(dict(stats.invalid_out).items()):
        invalid.add_metric([hive, "outgoing", code], n)
    yield refused
    yield invalid
    yield _one(CounterMetricFamily, "subhive_dead_letters", "Messages kept as dead letters", hive, stats.dead_lettered)
    yield _one(
        GaugeMetricFamily,
        "subhive_dead_letters_blocked",
        "Events held back because their dead letter could not be kept",
        hive,
        stats.dead_letter_blocked,
    )
    yield _one(
        CounterMetricFamily,
        "subhive_retries",
        "Event deliveries retried after a handler failure, and durable publishes retried through failover",
        hive,
        stats.retried,
    )
    latency = HistogramMetricFamily("subhive_handler_seconds", "Time a request or event handler ran", labels=_MEMBER)
    for (contract, major, kind, name), hist in sorted(dict(stats.handled).items()):
        labels = [hive, contract, str(major), "request" if kind == "op" else "event", name]
        latency.add_metric(labels, hist.cumulative(), hist.sum)
    yield latency


def _controller_metrics(hive: str, controller: Any) -> Iterator[Any]:
    from prometheus_client.core import CounterMetricFamily

    activations = CounterMetricFamily("subhive_activations", "Knowledge-source activations", labels=["hive", "source"])
    for source, n in sorted(dict(controller.by_source).items()):
        activations.add_metric([hive, source], n)
    yield activations
    yield _one(CounterMetricFamily, "subhive_activation_failures", "Failed activations", hive, controller.failures)


def _agent_metrics(hive: str) -> Iterator[Any]:
    from prometheus_client.core import CounterMetricFamily

    tokens = CounterMetricFamily(
        "subhive_agent_tokens", "Tokens the hive's agents used", labels=["hive", "agent", "model", "kind"]
    )
    for (agent, model, kind), n in sorted(dict(AGENT_USAGE.tokens).items()):
        tokens.add_metric([hive, agent, model, kind], n)
    yield tokens
    calls = CounterMetricFamily(
        "subhive_agent_model_calls", "Model requests the hive's agents made", labels=["hive", "agent", "model"]
    )
    for (agent, model), n in sorted(dict(AGENT_USAGE.calls).items()):
        calls.add_metric([hive, agent, model], n)
    yield calls


def _one(family: Any, name: str, documentation: str, hive: str, value: float) -> Any:
    metric = family(name, documentation, labels=["hive"])
    metric.add_metric([hive], value)
    return metric


def _by_member(counts: dict[str, int]) -> Counter[tuple[str, str, str, str]]:
    """Per-subject counts summed per contract member (a request's subject also names its sender)."""
    out: Counter[tuple[str, str, str, str]] = Counter()
    for subject, n in dict(counts).items():
        if n:  # a route's entry exists from its first use, sent or not
            out[_member(subject)] += n
    return out


class MetricsServer:
    """The ``/metrics`` endpoint of one hive: Prometheus's text format over HTTP/1.1 on asyncio, in the hive's
    own event loop (no thread reads the counters while the loop changes them). ``prometheus_client`` is imported
    at the first scrape: ~0.1 s of CPU a hive nobody scrapes never spends (trees of hundreds of hives)."""

    def __init__(self, server: asyncio.Server, collector: Any) -> None:
        self._server = server
        self._collector = collector
        self._registry: Any = None
        host, port = server.sockets[0].getsockname()[:2]
        shown = f"[{host}]" if ":" in host else host  # an IPv6 address in a URL is bracketed
        self.url = f"http://{shown}:{port}/metrics"

    def render(self) -> bytes:
        """The metrics in Prometheus's text format."""
        from prometheus_client.exposition import generate_latest

        if self._registry is None:
            from prometheus_client import CollectorRegistry

            self._registry = CollectorRegistry(auto_describe=False)
            self._registry.register(self._collector)
        body: bytes = generate_latest(self._registry)
        return body

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Answer one connection: ``GET /metrics`` (or ``HEAD``), 404 elsewhere, 405 for other methods."""
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            method, _, rest = head.partition(b" ")
            path = rest.split(b" ", 1)[0].split(b"?", 1)[0]
            if method not in (b"GET", b"HEAD"):
                status, body, kind = b"405 Method Not Allowed", b"GET /metrics\n", b"text/plain"
            elif path != b"/metrics":
                status, body, kind = b"404 Not Found", b"metrics are at /metrics\n", b"text/plain"
            else:
                status, body, kind = b"200 OK", self.render(), _CONTENT_TYPE
            writer.write(
                b"HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
                % (status, kind, len(body), b"" if method == b"HEAD" else body)
            )
            await writer.drain()
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            pass  # a client that went away or sent no request: nothing to answer
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def close(self) -> None:
        self._server.close()
        with contextlib.suppress(Exception):
            await self._server.wait_closed()


#: Prometheus's text format 0.0.4, which every scraper reads (prometheus_client's CONTENT_TYPE_PLAIN_0_0_4).
_CONTENT_TYPE = b"text/plain; version=0.0.4; charset=utf-8"


async def serve_metrics(collector: Any, host: str = "127.0.0.1", port: int = 0) -> MetricsServer:
    """Serve ``collector``'s metrics at ``http://host:port/metrics`` (port 0: one the system picks)."""
    metrics: MetricsServer | None = None

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        assert metrics is not None  # set before the loop runs any connection's handler
        await metrics.handle(reader, writer)

    metrics = MetricsServer(await asyncio.start_server(handle, host, port), collector)
    return metrics
