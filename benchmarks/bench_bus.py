"""The contract bus against raw nats-py, on one embedded nats-server, with the same payloads.

    .venv/bin/python benchmarks/bench_bus.py            # a table
    .venv/bin/python benchmarks/bench_bus.py --json     # one JSON object

For a small payload (~40 bytes) and a ~4 KB one, measured in the same run:

* publish: NatsTransport.publish (validated, headers, plain NATS: ``durable_events=False``) against raw
  ``nc.publish`` of the same bytes; target >= 0.6x. Also printed: raw ``nc.publish`` of the same bytes with
  the same four headers, which separates what nats-py's header encoding costs from what subhive adds;
* request/reply: NatsTransport.request to a NatsTransport provider (validated on both ends) against raw
  ``nc.request`` to a raw responder echoing a reply of the same size; sequential, p50/p99 printed;
  target >= 0.85x;
* durable events: NatsTransport.publish to JetStream (acknowledged) against raw ``js.publish``; printed.

Each measurement runs ``--rounds`` times, raw and ours back to back; rates are medians, a ratio is the median
of the rounds' ratios with its spread (``*_ratio_spread``: lowest, highest), since the machine is shared.
``*_cpu_ratio`` compares the CPU time this process spent instead of the clock: what the bus itself adds,
without nats-server's share or the neighbours' load.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import nats
from _common import latency, parser, render

from subhive.bus import EmbeddedServer, NatsTransport, ServerConfig, ensure_event_streams
from subhive.runtime import ContractBinding

ITEM = {
    "type": "object",
    "required": ["sku", "qty"],
    "properties": {"sku": {"type": "string", "maxLength": 32}, "qty": {"type": "integer", "minimum": 1}},
}
ORDER = {
    "type": "object",
    "required": ["id", "items"],
    "properties": {"id": {"type": "string"}, "items": {"type": "array", "items": ITEM}},
}


def binding(major: int) -> ContractBinding:
    return ContractBinding.from_dict(
        {
            "name": "bench",
            "version": f"{major}.0.0",
            "provider": "backend",
            "operations": {"place": {"input": "order", "output": "order"}},
            "events": {"placed": "order"},
            "schemas": {"order": ORDER},
        }
    )


# v1's events go to a JetStream stream (durable); v2 has no stream, so plain publishes are not stored.
BENCH, PLAIN = binding(1), binding(2)
SUBJECT_EV = "subhive.bench.v1.ev.placed"
SUBJECT_PLAIN = "subhive.bench.v2.ev.placed"


def payload(size: str) -> dict[str, Any]:
    items = 1 if size == "small" else 130  # ~4 KB of JSON
    return {"id": "o-1", "items": [{"sku": f"SKU-{i:05d}", "qty": i + 1} for i in range(items)]}


async def timed(
    count: int, one: Callable[[], Awaitable[Any]], done: Callable[[], Awaitable[Any]] | None = None
) -> float:
    """Messages per second for ``count`` calls of ``one`` (then ``done``, e.g. a flush)."""
    start = time.perf_counter()
    for _ in range(count):
        await one()
    if done is not None:
        await done()
    return count / (time.perf_counter() - start)


async def each(count: int, one: Callable[[], Awaitable[Any]]) -> list[float]:
    durations = []
    for _ in range(count):
        start = time.perf_counter()
        await one()
        durations.append(time.perf_counter() - start)
    return durations


def _ratio(name: str, raw: list[float], ours: list[float]) -> dict[str, Any]:
    """The median of each round's ours/raw (the two run back to back in a round, so they share the machine's
    mood), and its spread over the rounds."""
    ratios = sorted(o / r for r, o in zip(raw, ours, strict=True))
    return {name: round(statistics.median(ratios), 3), f"{name}_spread": [round(ratios[0], 3), round(ratios[-1], 3)]}


def _rate(values: list[float]) -> int:
    return round(statistics.median(values))


@contextlib.contextmanager
def _cpu(rates: list[float], count: int) -> Iterator[None]:
    """Append ``count`` per second of this process's CPU time in the block: the client's work and, for
    requests, the provider's (both live here; nats-server does not), whatever else the machine runs."""
    start = time.process_time()
    yield
    rates.append(count / max(time.process_time() - start, 1e-9))


async def measure(server: EmbeddedServer, size: str, args: Any) -> dict[str, Any]:
    n_pub, n_req, n_js, rounds = args.publish, args.requests, args.durable, args.rounds
    body = payload(size)
    data = json.dumps(body, separators=(",", ":")).encode()
    raw = await nats.connect(server.url)
    provider_raw = await nats.connect(server.url)
    hive = await NatsTransport.connect(server.endpoint(), "web", durable_events=False)
    durable = await NatsTransport.connect(server.endpoint(), "backend")
    provider = await NatsTransport.connect(server.endpoint(), "backend")
    js = raw.jetstream()
    out: dict[str, Any] = {"payload_bytes": len(data)}
    try:
        # Publish: nobody subscribes, so both sides measure the client and the socket, not a consumer.
        # The same four headers every bus message carries, sent raw: what nats-py itself costs for them.
        headers = {
            "Subhive-Contract": "bench@2.0.0",
            "Subhive-Sender": "web",
            "Nats-Msg-Id": "0123456789abcdef0123456789abcdef",
            "traceparent": f"00-{'a' * 32}-{'b' * 16}-01",
        }
        raw_pub, raw_hdr, ours_pub, raw_cpu, ours_cpu = [], [], [], [], []
        for _ in range(rounds):
            with _cpu(raw_cpu, n_pub):
                raw_pub.append(await timed(n_pub, lambda: raw.publish(SUBJECT_PLAIN, data), raw.flush))
            raw_hdr.append(await timed(n_pub, lambda: raw.publish(SUBJECT_PLAIN, data, headers=headers), raw.flush))
            with _cpu(ours_cpu, n_pub):
                ours_pub.append(await timed(n_pub, lambda: hive.publish(PLAIN, "placed", body), hive.connection.flush))
        out |= {
            "publish_raw_per_s": _rate(raw_pub),
            "publish_raw_with_headers_per_s": _rate(raw_hdr),
            "publish_ours_per_s": _rate(ours_pub),
            **_ratio("publish_ratio", raw_pub, ours_pub),
            **_ratio("publish_ratio_vs_raw_with_headers", raw_hdr, ours_pub),
            **_ratio("publish_cpu_ratio", raw_cpu, ours_cpu),
        }

        async def echo(msg: Any) -> None:
            await provider_raw.publish(msg.reply, msg.data)

        async def answer(request: Any) -> Any:
            return request

        raw_sub = await provider_raw.subscribe("bench.raw.place", cb=echo)
        await provider.serve(BENCH, {"place": answer})
        await provider_raw.flush()
        await hive.request(BENCH, "place", body)  # warm: the first call on a subject listens for refusals
        raw_rr, ours_rr, raw_lat, ours_lat, raw_cpu, ours_cpu = [], [], [], [], [], []
        for _ in range(rounds):
            with _cpu(raw_cpu, n_req):
                raw_lat.append(await each(n_req, lambda: raw.request("bench.raw.place", data, timeout=5)))
            with _cpu(ours_cpu, n_req):
                ours_lat.append(await each(n_req, lambda: hive.request(BENCH, "place", body)))
            raw_rr.append(n_req / sum(raw_lat[-1]))
            ours_rr.append(n_req / sum(ours_lat[-1]))
        out |= {
            "request_raw_per_s": _rate(raw_rr),
            "request_ours_per_s": _rate(ours_rr),
            **_ratio("request_ratio", raw_rr, ours_rr),
            **_ratio("request_cpu_ratio", raw_cpu, ours_cpu),
        }
        out |= {
            **{f"request_raw_{k}": v for k, v in latency([d for r in raw_lat for d in r], "us").items()},
            **{f"request_ours_{k}": v for k, v in latency([d for r in ours_lat for d in r], "us").items()},
        }
        await raw_sub.unsubscribe()

        await durable.publish(BENCH, "placed", body)  # warm, as above
        raw_js, ours_js = [], []
        for _ in range(rounds):
            raw_js.append(await timed(n_js, lambda: js.publish(SUBJECT_EV, data)))
            ours_js.append(await timed(n_js, lambda: durable.publish(BENCH, "placed", body)))
        out |= {
            "durable_raw_per_s": _rate(raw_js),
            "durable_ours_per_s": _rate(ours_js),
            **_ratio("durable_ratio", raw_js, ours_js),
        }
    finally:
        for t in (hive, durable, provider):
            await t.close()
        await raw.close()
        await provider_raw.close()
    return out


async def main_async(args: Any) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="subhive-bench-bus-") as tmp:
        server = await EmbeddedServer.start(ServerConfig(Path(tmp) / "nats", max_payload=8 * 1024 * 1024))
        try:
            nc = await nats.connect(server.url)
            await ensure_event_streams(nc.jetstream(), [("bench", 1)])
            await nc.close()
            figures: dict[str, Any] = {}
            for size in ("small", "4kb"):
                for key, value in (await measure(server, size, args)).items():
                    figures[f"{size}_{key}"] = value
        finally:
            await server.stop()
    figures["targets"] = "publish_ratio >= 0.6, request_ratio >= 0.85"
    figures["within_targets"] = all(
        figures[f"{s}_publish_ratio"] >= 0.6 and figures[f"{s}_request_ratio"] >= 0.85 for s in ("small", "4kb")
    )
    return figures


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--publish", type=int, default=50_000, help="messages per publish measurement")
    p.add_argument("--requests", type=int, default=3_000, help="requests per request/reply measurement")
    p.add_argument("--durable", type=int, default=3_000, help="events per durable measurement")
    p.add_argument("--rounds", type=int, default=3, help="rounds of each measurement (medians are printed)")
    args = p.parse_args(argv)
    figures = asyncio.run(main_async(args))
    print(render("contract bus vs raw nats-py", figures, as_json=args.json))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
