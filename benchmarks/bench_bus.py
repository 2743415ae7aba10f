"""The contract bus against raw nats-py with the same payloads: one server, hives in their own accounts, a cluster.

    .venv/bin/python benchmarks/bench_bus.py                      # a table
    .venv/bin/python benchmarks/bench_bus.py --json               # one JSON object
    .venv/bin/python benchmarks/bench_bus.py --modes single --sizes 4kb --rounds 9

Modes (``--modes``), each on its own servers, figures prefixed ``<mode>_<size>_``:

* ``single``: one embedded nats-server, no accounts (``[nats] nodes = 1``);
* ``accounts``: one server with an account per hive, as ``subhive up`` runs them (decision 0056): every request
  travels through a service import into the provider's account, and so does the raw nats-py baseline, which
  connects as the same users (the ratio is what subhive adds, not what the server's import costs; the import's
  own cost is ``accounts_4kb_request_raw_vs_single``);
* ``cluster``: three nodes routed on loopback, streams R3 (``[nats] nodes = 3``); the requesting side connects
  to one node and the providing side to another, so a request crosses a route, raw and ours alike.

Measured for a ~40 byte and a ~4 KB payload (``--sizes``):

* ``publish``: NatsTransport.publish (validated, four headers, plain NATS) against the in-process **floor**:
  raw ``nc.publish`` of the same bytes plus what a contract requires before anything leaves, the payload
  validated by a compiled jsonschema-rs validator and encoded by orjson, measured in the same run;
  target ``publish_floor_ratio`` >= 0.8. ``publish_ratio`` (against bare ``nc.publish``) is printed too;
* ``request``: NatsTransport.request to a NatsTransport provider in this process, one at a time, against raw
  ``nc.request`` to a raw responder echoing the bytes; target ``request_ratio`` >= 0.85. ``request_floor``:
  the raw round trip plus the contract's work on both ends (validate and encode the request, decode and
  validate it and the reply, decode and validate the reply), measured in the same run. ``request_*_cpu_us``:
  the CPU of one round trip (both ends are in this process, so client and provider);
* ``hive``: a validated hive round trip: a provider hive in a process of its own (NatsTransport, as ``up``
  runs it) answering 32 requests in flight (``hive32``, target >= 0.95) and one at a time (``hive1``), asked
  by NatsTransport.request, by raw ``nc.request`` of the same bytes and headers (``raw``), and by raw nats-py
  doing the client's part of the contract (``floor``: validate and encode the request, decode and validate
  the reply). ``*_cpu_us``: the CPU that this process, the provider hive and nats-server spent per call;
* ``durable`` (not in ``accounts``): NatsTransport.publish to JetStream (acknowledged) against ``js.publish``.

Before the modes, ``<size>_decode_us``, ``_validate_us`` and ``_encode_us`` give the CPU of the contract's work
on one payload in this run, and ``round_trip_contract_us`` what one request/reply does of it (two decodes, four
validations, two encodes): the per-message budget the floors add to raw nats-py (decision 0131).

Each measurement runs ``--rounds`` times, raw and ours back to back; rates are medians, a ratio is the median
of the rounds' ratios with its spread (``*_spread``: lowest, highest), since the machine is shared.
``*_cpu_ratio`` compares CPU time instead of the clock (this process's; for ``hive``, every process's): the
work the bus adds, which the neighbours' load does not move as it moves the clock. ``missed`` lists the 4 KB
targets not met; ``missed_against_floor`` the same targets taken against the floors, i.e. what the bus adds
beyond the work its contract requires (decision 0116).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import jsonschema_rs
import nats
import orjson
from _common import latency, parser, render
from nats.aio.client import Client
from nats.aio.msg import Msg

from subhive.bus import (
    AccountsConfig,
    BusEndpoint,
    EmbeddedCluster,
    EmbeddedServer,
    NatsTransport,
    ServerConfig,
    ensure_event_streams,
    hive_permissions,
    inbox_prefix,
    jetstream_ready,
)
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
#: ``place``: the in-process provider; ``echo``: the raw responder; ``hive``: the provider hive's process.
OPERATIONS = ("place", "echo", "hive")
TARGETS = {"publish_floor_ratio": 0.8, "request_ratio": 0.85, "hive32_ratio": 0.95}
#: The same targets against the floors (publish's is one already).
FLOOR_TARGETS = {"publish_floor_ratio": 0.8, "request_floor_ratio": 0.85, "hive32_floor_ratio": 0.95}
IN_FLIGHT = 32
PASSWORD_ENV = "SUBHIVE_BENCH_PASSWORD"


def binding(major: int) -> ContractBinding:
    return ContractBinding.from_dict(
        {
            "name": "bench",
            "version": f"{major}.0.0",
            "provider": "backend",
            "operations": {op: {"input": "order", "output": "order"} for op in OPERATIONS},
            "events": {"placed": "order"},
            "schemas": {"order": ORDER},
        }
    )


# v1's events go to a JetStream stream (durable); v2 has no stream, so plain publishes are not stored.
BENCH, PLAIN = binding(1), binding(2)
SUBJECT_EV = "subhive.bench.v1.ev.placed"
SUBJECT_PLAIN = "subhive.bench.v2.ev.placed"
ECHO = "subhive.bench.v1.op.echo.web"
HIVE = "subhive.bench.v1.op.hive.web"
# The four headers every bus message carries, for raw nats-py requests the provider hive accepts.
HEADERS = {
    "Subhive-Contract": "bench@1.0.0",
    "Subhive-Sender": "web",
    "Nats-Msg-Id": "0123456789abcdef0123456789abcdef",
    "traceparent": f"00-{'a' * 32}-{'b' * 16}-01",
}


def payload(size: str) -> dict[str, Any]:
    items = 1 if size == "small" else 130  # ~4 KB of JSON
    return {"id": "o-1", "items": [{"sku": f"SKU-{i:05d}", "qty": i + 1} for i in range(items)]}


# -- timing -----------------------------------------------------------------------------------------------


async def timed(count: int, one: Callable[[], Awaitable[Any]], done: Callable[[], Awaitable[Any]]) -> float:
    """Messages per second for ``count`` calls of ``one``, then ``done`` (a flush)."""
    start = time.perf_counter()
    for _ in range(count):
        await one()
    await done()
    return count / (time.perf_counter() - start)


async def each(count: int, one: Callable[[], Awaitable[Any]]) -> list[float]:
    durations = []
    for _ in range(count):
        start = time.perf_counter()
        await one()
        durations.append(time.perf_counter() - start)
    return durations


async def in_flight(count: int, width: int, one: Callable[[], Awaitable[Any]]) -> float:
    """Calls per second for ``count`` calls of ``one``, ``width`` of them waiting at any time."""
    left = count

    async def worker() -> None:
        nonlocal left
        while left > 0:
            left -= 1
            await one()

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(width)))
    return count / (time.perf_counter() - start)


@contextlib.contextmanager
def _cpu(rates: list[float], count: int) -> Iterator[None]:
    """Append ``count`` per second of this process's CPU time in the block (whatever else the machine runs)."""
    start = time.process_time()
    yield
    rates.append(count / max(time.process_time() - start, 1e-9))


def _ratio(name: str, raw: list[float], ours: list[float]) -> dict[str, Any]:
    """The median of each round's ours/raw (the two run back to back in a round, so they share the machine's
    mood), and its spread over the rounds."""
    ratios = sorted(o / r for r, o in zip(raw, ours, strict=True))
    return {name: round(statistics.median(ratios), 3), f"{name}_spread": [round(ratios[0], 3), round(ratios[-1], 3)]}


def _lists(count: int) -> list[list[float]]:
    return [[] for _ in range(count)]


def _rate(values: list[float]) -> int:
    return round(statistics.median(values))


# -- the measurements -------------------------------------------------------------------------------------


def measure_contract(size: str, rounds: int) -> dict[str, Any]:
    """CPU microseconds of the contract's work on one payload, as the bus does it (orjson, a jsonschema-rs
    validator compiled once): the lowest of ``rounds`` batches, since only the neighbours make it slower. A
    request/reply round trip does ``round_trip_contract_us`` of it: validate and encode the request, decode and
    validate it, validate and encode the reply, decode and validate it (decision 0131)."""
    body = payload(size)
    data = orjson.dumps(body)
    valid = jsonschema_rs.validator_for(ORDER, validate_formats=True).is_valid
    batch = 2_000
    work: dict[str, Callable[[], object]] = {
        "decode": lambda: orjson.loads(data),
        "validate": lambda: valid(body),
        "encode": lambda: orjson.dumps(body),
    }
    out: dict[str, Any] = {}
    for name, one in work.items():
        best = float("inf")
        for _ in range(rounds):
            start = time.process_time()
            for _ in range(batch):
                one()
            best = min(best, (time.process_time() - start) / batch * 1e6)
        out[f"{name}_us"] = round(best, 2)
    out["round_trip_contract_us"] = round(2 * out["decode_us"] + 4 * out["validate_us"] + 2 * out["encode_us"], 1)
    return out


@dataclass
class Side:
    """The connections of one mode: the requesting/publishing side (``web``) and the providing side."""

    web: BusEndpoint
    backend: BusEndpoint
    durable: bool  # whether JetStream is reachable by the web side (not across accounts)
    servers: list[int]  # the nats-server processes' pids


async def raw_connect(endpoint: BusEndpoint, hive: str) -> Client:
    """A raw nats-py connection as ``hive`` would make it (its credentials and inbox prefix)."""
    return await nats.connect(**endpoint.connect_options(), inbox_prefix=inbox_prefix(hive))  # type: ignore[arg-type]


async def measure_publish(side: Side, size: str, args: Any) -> dict[str, Any]:
    """Publishes nobody subscribes to: both sides measure the client and the socket, not a consumer."""
    body = payload(size)
    data = orjson.dumps(body)
    valid = jsonschema_rs.validator_for(ORDER, validate_formats=True).is_valid  # compiled once, as the bus does
    raw = await raw_connect(side.web, "web")
    hive = await NatsTransport.connect(side.web, "web", durable_events=False)
    try:

        async def floor() -> None:
            if not valid(body):
                raise AssertionError("the benchmark's payload is valid")
            await raw.publish(SUBJECT_PLAIN, orjson.dumps(body))

        n = args.publish
        raw_pub, floor_pub, ours_pub, floor_cpu, ours_cpu = _lists(5)
        for _ in range(args.rounds):
            raw_pub.append(await timed(n, lambda: raw.publish(SUBJECT_PLAIN, data), raw.flush))
            with _cpu(floor_cpu, n):
                floor_pub.append(await timed(n, floor, raw.flush))
            with _cpu(ours_cpu, n):
                ours_pub.append(await timed(n, lambda: hive.publish(PLAIN, "placed", body), hive.connection.flush))
        return {
            "payload_bytes": len(data),
            "publish_raw_per_s": _rate(raw_pub),
            "publish_floor_per_s": _rate(floor_pub),
            "publish_ours_per_s": _rate(ours_pub),
            **_ratio("publish_floor_ratio", floor_pub, ours_pub),
            **_ratio("publish_floor_cpu_ratio", floor_cpu, ours_cpu),
            **_ratio("publish_ratio", raw_pub, ours_pub),
        }
    finally:
        await hive.close()
        await raw.close()


async def measure_request(side: Side, size: str, args: Any) -> dict[str, Any]:
    """One request at a time to a provider in this process: raw echo, the floor, ours."""
    body = payload(size)
    data = orjson.dumps(body)
    valid = jsonschema_rs.validator_for(ORDER, validate_formats=True).is_valid
    raw = await raw_connect(side.web, "web")
    responder = await raw_connect(side.backend, "backend")
    hive = await NatsTransport.connect(side.web, "web")
    provider = await NatsTransport.connect(side.backend, "backend")
    validating = [False]  # the raw responder echoes; for the floor it also does the provider's checks

    async def echo(msg: Msg) -> None:
        if validating[0]:
            request = orjson.loads(msg.data)
            if not valid(request) or not valid(request):  # the request as it came, the reply as it goes
                raise AssertionError("the benchmark's payload is valid")
            await responder.publish(msg.reply, orjson.dumps(request))
            return
        await responder.publish(msg.reply, msg.data)

    async def floor() -> None:
        if not valid(body):
            raise AssertionError("the benchmark's payload is valid")
        reply = orjson.loads((await raw.request(ECHO, orjson.dumps(body), timeout=5)).data)
        if not valid(reply):
            raise AssertionError("the benchmark's payload is valid")

    async def answer(request: Any) -> Any:
        return request

    try:
        await responder.subscribe("subhive.bench.v1.op.echo.*", cb=echo)
        await provider.serve(BENCH, {"place": answer})
        await responder.flush()
        await raw.request(ECHO, data, timeout=5)  # warm both: the first request subscribes to its inbox
        await hive.request(BENCH, "place", body)
        n = args.requests
        raw_rr, floor_rr, ours_rr, raw_cpu, floor_cpu, ours_cpu = _lists(6)
        raw_lat: list[list[float]] = []
        ours_lat: list[list[float]] = []
        for _ in range(args.rounds):
            with _cpu(raw_cpu, n):
                raw_lat.append(await each(n, lambda: raw.request(ECHO, data, timeout=5)))
            validating[0] = True
            with _cpu(floor_cpu, n):
                floor_rr.append(n / sum(await each(n, floor)))
            validating[0] = False
            with _cpu(ours_cpu, n):
                ours_lat.append(await each(n, lambda: hive.request(BENCH, "place", body)))
            raw_rr.append(n / sum(raw_lat[-1]))
            ours_rr.append(n / sum(ours_lat[-1]))
        return {
            "request_raw_per_s": _rate(raw_rr),
            "request_floor_per_s": _rate(floor_rr),
            "request_ours_per_s": _rate(ours_rr),
            **_ratio("request_ratio", raw_rr, ours_rr),
            **_ratio("request_floor_ratio", floor_rr, ours_rr),
            **_ratio("request_cpu_ratio", raw_cpu, ours_cpu),
            **_ratio("request_floor_cpu_ratio", floor_cpu, ours_cpu),
            # Both ends are in this process: a round trip's whole client and provider CPU (not nats-server's).
            **{
                f"request_{name}_cpu_us": round(statistics.median(1e6 / r for r in v), 1)
                for name, v in (("raw", raw_cpu), ("floor", floor_cpu), ("ours", ours_cpu))
            },
            **{f"request_raw_{k}": v for k, v in latency([d for r in raw_lat for d in r], "us").items()},
            **{f"request_ours_{k}": v for k, v in latency([d for r in ours_lat for d in r], "us").items()},
        }
    finally:
        for t in (hive, provider):
            await t.close()
        await raw.close()
        await responder.close()


@contextlib.asynccontextmanager
async def provider_hive(endpoint: BusEndpoint) -> AsyncIterator[int]:
    """The provider hive in a process of its own, serving ``hive`` until the block ends; yields its pid."""
    env = {**os.environ, PASSWORD_ENV: endpoint.password or ""}
    command = [sys.executable, __file__, "--serve-hive", endpoint.servers[0], "--user", endpoint.user or ""]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, env=env)
    try:
        assert proc.stdout is not None
        ready = await asyncio.to_thread(proc.stdout.readline)
        if ready.strip() != b"ready":
            raise RuntimeError(f"the provider hive did not start (exit code {proc.wait(10)})")
        yield proc.pid
    finally:
        proc.terminate()
        proc.wait(10)


async def serve_hive(url: str, user: str) -> None:
    """``--serve-hive``: answer ``hive`` requests (validated both ways, as every provider does) until killed."""
    password = os.environ.get(PASSWORD_ENV) or None
    endpoint = BusEndpoint([url], user=user or None, password=password if user else None)
    provider = await NatsTransport.connect(endpoint, "backend")

    async def answer(request: Any) -> Any:
        return request

    await provider.serve(BENCH, {"hive": answer})
    print("ready", flush=True)
    await asyncio.Event().wait()


_TICK = os.sysconf("SC_CLK_TCK")


def _cpu_of(pids: list[int]) -> float:
    """CPU seconds the processes ``pids`` have used (user and system), from /proc."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime: fields 14 and 15 of stat(5)
    return total / _TICK


@contextlib.contextmanager
def _system_cpu(costs: list[float], count: int, pids: list[int]) -> Iterator[None]:
    """Append the CPU microseconds per call that this process and ``pids`` (the provider hive, nats-server)
    spent in the block: the whole round trip's work, whichever process did it."""
    start, others = time.process_time(), _cpu_of(pids)
    yield
    costs.append((time.process_time() - start + _cpu_of(pids) - others) / count * 1e6)


async def measure_hive(side: Side, size: str, args: Any) -> dict[str, Any]:
    """A validated hive round trip: the same provider process, asked by bare raw nats-py, by raw nats-py doing
    the client's part of the contract (the floor), and by NatsTransport."""
    body = payload(size)
    data = orjson.dumps(body)
    valid = jsonschema_rs.validator_for(ORDER, validate_formats=True).is_valid
    raw = await raw_connect(side.web, "web")
    hive = await NatsTransport.connect(side.web, "web")

    async def bare() -> None:
        await raw.request(HIVE, data, headers=HEADERS, timeout=5)

    async def floor() -> None:
        if not valid(body):
            raise AssertionError("the benchmark's payload is valid")
        reply = await raw.request(HIVE, orjson.dumps(body), headers=HEADERS, timeout=5)
        if not valid(orjson.loads(reply.data)):
            raise AssertionError("the benchmark's payload is valid")

    async def ours() -> None:
        await hive.request(BENCH, "hive", body)

    out: dict[str, Any] = {}
    try:
        async with provider_hive(side.backend) as pid:
            answered = await raw.request(HIVE, data, headers=HEADERS, timeout=5)
            if answered.headers:  # an error reply: the hive refused what raw nats-py sent
                raise RuntimeError(f"the provider hive refused the raw request: {answered.data!r}")
            await ours()
            pids = [pid, *side.servers]
            for width, count in ((IN_FLIGHT, args.in_flight), (1, args.requests)):
                rates: dict[str, list[float]] = {"raw": [], "floor": [], "ours": []}
                costs: dict[str, list[float]] = {"raw": [], "floor": [], "ours": []}
                for _ in range(args.rounds):
                    for name, one in (("raw", bare), ("floor", floor), ("ours", ours)):
                        with _system_cpu(costs[name], count, pids):
                            rates[name].append(await in_flight(count, width, one))
                # Cost per call, inverted: a ratio above 1 is less CPU than raw, as for rates.
                speeds = {name: [1 / c for c in values] for name, values in costs.items()}
                out |= {
                    **{f"hive{width}_{name}_per_s": _rate(values) for name, values in rates.items()},
                    **_ratio(f"hive{width}_ratio", rates["raw"], rates["ours"]),
                    **_ratio(f"hive{width}_floor_ratio", rates["floor"], rates["ours"]),
                    **{f"hive{width}_{name}_cpu_us": round(statistics.median(v), 1) for name, v in costs.items()},
                    **_ratio(f"hive{width}_cpu_ratio", speeds["raw"], speeds["ours"]),
                    **_ratio(f"hive{width}_floor_cpu_ratio", speeds["floor"], speeds["ours"]),
                }
    finally:
        await hive.close()
        await raw.close()
    return out


async def measure_durable(side: Side, size: str, args: Any) -> dict[str, Any]:
    body = payload(size)
    data = orjson.dumps(body)
    raw = await raw_connect(side.web, "web")
    js = raw.jetstream()
    durable = await NatsTransport.connect(side.web, "backend")
    try:
        await durable.publish(BENCH, "placed", body)  # warm: the first publish on a subject listens for refusals
        raw_js, ours_js = [], []
        for _ in range(args.rounds):
            raw_js.append(await timed(args.durable, lambda: js.publish(SUBJECT_EV, data), raw.flush))
            ours_js.append(
                await timed(args.durable, lambda: durable.publish(BENCH, "placed", body), durable.connection.flush)
            )
        return {
            "durable_raw_per_s": _rate(raw_js),
            "durable_ours_per_s": _rate(ours_js),
            **_ratio("durable_ratio", raw_js, ours_js),
        }
    finally:
        await durable.close()
        await raw.close()


async def measure(side: Side, size: str, args: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if side.durable:  # across accounts only requests are measured (what the service imports carry)
        out |= await measure_publish(side, size, args)
    out |= await measure_request(side, size, args)
    out |= await measure_hive(side, size, args)
    if side.durable:
        out |= await measure_durable(side, size, args)
    return out


# -- the modes ----------------------------------------------------------------------------------------------


def _accounts() -> AccountsConfig:
    """web consumes bench v1 and backend provides it, each in its account (as the lock would grant them)."""
    operations = {("bench", 1): list(OPERATIONS)}
    events = {("bench", 1): ["placed"]}
    return AccountsConfig(
        {
            "web": ("web-bench-password", hive_permissions("web", {}, {"bench": [1]}, operations, events)),
            "backend": ("backend-bench-password", hive_permissions("backend", {"bench": [1]}, {}, operations, events)),
        },
        admin_password="admin-bench-password",
    )


async def _start(mode: str, store: Path) -> tuple[EmbeddedServer | EmbeddedCluster, Side]:
    """``mode``'s servers, and how each side connects to them."""
    config = ServerConfig(store, max_payload=8 * 1024 * 1024)
    if mode == "cluster":
        cluster = await EmbeddedCluster.start(config, nodes=3)
        return cluster, Side(cluster.nodes[0].endpoint(), cluster.nodes[1].endpoint(), True, cluster.pids)
    if mode == "single":
        server = await EmbeddedServer.start(config)
        return server, Side(server.endpoint(), server.endpoint(), True, server.pids)
    accounts = _accounts()
    server = await EmbeddedServer.start(dataclasses.replace(config, accounts=accounts))
    web, backend = (str(accounts.users[hive][0]) for hive in ("web", "backend"))
    return server, Side(server.endpoint("web", web), server.endpoint("backend", backend), False, server.pids)


async def run_mode(mode: str, store: Path, args: Any) -> dict[str, Any]:
    """Start ``mode``'s servers, measure every size, stop them."""
    bus, side = await _start(mode, store)
    figures: dict[str, Any] = {}
    try:
        if side.durable:
            admin = await nats.connect(bus.urls)
            try:
                await jetstream_ready(admin)  # a cluster elects its meta leader first
                await ensure_event_streams(admin.jetstream(), [("bench", 1)], replicas=len(side.servers))
            finally:
                await admin.close()
        for size in args.sizes:
            for key, value in (await measure(side, size, args)).items():
                figures[f"{mode}_{size}_{key}"] = value
    finally:
        await bus.stop()
    return figures


async def main_async(args: Any) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    for size in args.sizes:
        figures |= {f"{size}_{key}": value for key, value in measure_contract(size, args.rounds).items()}
    with tempfile.TemporaryDirectory(prefix="subhive-bench-bus-") as tmp:
        for mode in args.modes:
            figures |= await run_mode(mode, Path(tmp) / mode, args)
    if "single" in args.modes and "accounts" in args.modes:
        for size in args.sizes:
            for kind in ("request_raw", "request_ours", "hive32_raw", "hive32_ours"):
                single, accounts = figures[f"single_{size}_{kind}_per_s"], figures[f"accounts_{size}_{kind}_per_s"]
                figures[f"accounts_{size}_{kind}_vs_single"] = round(accounts / single, 3)
    figures["targets"] = ", ".join(f"{name} >= {floor}" for name, floor in TARGETS.items()) + " (4 KB, every mode)"
    figures["missed"] = _missed(figures, args.modes, TARGETS)
    figures["missed_against_floor"] = _missed(figures, args.modes, FLOOR_TARGETS)
    figures["within_targets"] = not figures["missed"]
    return figures


def _missed(figures: dict[str, Any], modes: list[str], targets: dict[str, float]) -> list[str]:
    return [
        f"{mode}_4kb_{name}"
        for mode in modes
        for name, floor in targets.items()
        if f"{mode}_4kb_{name}" in figures and figures[f"{mode}_4kb_{name}"] < floor
    ]


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--modes", type=lambda s: s.split(","), default=["single", "accounts", "cluster"])
    p.add_argument("--sizes", type=lambda s: s.split(","), default=["small", "4kb"])
    p.add_argument("--publish", type=int, default=20_000, help="messages per publish measurement")
    p.add_argument("--requests", type=int, default=1_000, help="requests per one-at-a-time measurement")
    p.add_argument("--in-flight", type=int, default=3_000, help=f"requests per {IN_FLIGHT}-in-flight measurement")
    p.add_argument("--durable", type=int, default=300, help="events per durable measurement")
    p.add_argument("--rounds", type=int, default=5, help="rounds of each measurement (medians are printed)")
    p.add_argument("--serve-hive", metavar="URL", help=argparse.SUPPRESS)
    p.add_argument("--user", default="", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.serve_hive:
        asyncio.run(serve_hive(args.serve_hive, args.user))
        return 0
    unknown = set(args.modes) - {"single", "accounts", "cluster"} or set(args.sizes) - {"small", "4kb"}
    if unknown:
        p.error(f"unknown mode or size: {', '.join(sorted(unknown))}")
    figures = asyncio.run(main_async(args))
    print(render("contract bus vs raw nats-py", figures, as_json=args.json))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
