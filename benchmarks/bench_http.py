"""The root's HTTP API at the issue's scale: 200 hives, 1,000 contract versions, 10,000 dead letters, and the
event stream fanned out to 50 Server-Sent-Events clients.

    .venv/bin/python benchmarks/bench_http.py            # a table: latency per page, SSE delivery
    .venv/bin/python benchmarks/bench_http.py --json     # the same figures as one JSON object

A temporary workspace gets 200 hives (10 parents of 19 children each) and ``--versions`` accepted versions of
one contract (documentation-only patches, each checked by the root as any proposal); a real nats-server holds
``--letters`` dead letters of one hive. The root (``RootServer``) and its API (``ApiServer``) run in a thread
of this process, on 127.0.0.1; the clients are plain HTTP connections from the main thread, one request at a
time, so each figure is the server's latency without queueing. Pages: the tree, the first and the last page of
versions and of dead letters (``limit=100``), one dead letter with its bytes, the approvals inbox, the event
backlog. Then 50 clients follow ``/api/v1/events``; 100 agent steps are committed in one batch and each client
must receive all of them in order: the figure is commit-to-last-frame time per client.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import sys
import tempfile
import threading
import time
from collections.abc import Coroutine
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from the repo root without installing

import yaml

from benchmarks._common import latency, parser, render
from subhive.bus import BusEndpoint, EmbeddedServer, ServerConfig, ensure_dead_letter_stream
from subhive.http import ApiServer, ApiSettings
from subhive.root_hive import AgentStep, RootHive, RootServer
from subhive.workspace import init_workspace

T = TypeVar("T")
SCHEMA = {"type": "object", "properties": {"id": {"type": "string"}}, "additionalProperties": False}


def contract_files(version: str) -> dict[str, bytes]:
    manifest = {
        "contract": "bench",
        "version": version,
        "provider": "h000",
        "description": f"Benchmark contract, revision {version}.",
        "operations": {"get": {"description": "Get one.", "input": "in.json", "output": "in.json"}},
    }
    return {"contract.yaml": yaml.safe_dump(manifest).encode(), "in.json": json.dumps(SCHEMA).encode()}


def build(ws: Path, versions: int) -> float:
    """200 hives and ``versions`` accepted versions; returns the seconds the proposals took."""
    init_workspace(ws)
    with RootHive.open(ws) as root:
        with root.batch():
            for parent in range(10):
                root.register_hive(f"h{parent * 20:03d}", kind="backend")
                for child in range(1, 20):
                    root.register_hive(f"h{parent * 20 + child:03d}", kind="custom", parent=f"h{parent * 20:03d}")
        start = time.perf_counter()
        for patch in range(versions):
            outcome = root.propose("h000", contract_files(f"0.1.{patch}"))
            assert outcome.status == "accepted", outcome
        return time.perf_counter() - start


async def fill_letters(endpoint: BusEndpoint, count: int) -> None:
    nc = await endpoint.connect_once()
    js = nc.jetstream()
    await ensure_dead_letter_stream(js, "h000")
    headers = {"Subhive-Dlq-Code": "payload.invalid", "Subhive-Dlq-Subject": "subhive.bench.v0.op.get.h001"}
    for start in range(0, count, 500):
        await asyncio.gather(
            *(
                js.publish("subhive.dlq.h000.bench.v0.op.get", b'{"n": %d}' % i, headers=headers)
                for i in range(start, min(count, start + 500))
            )
        )
    await nc.close()


class Served:
    """The root and its API on a loop in a thread; ``run`` hands it coroutines."""

    def __init__(self, ws: Path, endpoint: BusEndpoint) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.root: RootServer = self.run(RootServer.start(ws, codegen=False))
        settings = ApiSettings(ws, bus=lambda: endpoint)
        self.api: ApiServer = self.run(ApiServer.start(self.root, settings))

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        future: Future[T] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return future.result(timeout=120)

    def stop(self) -> None:
        self.run(self.api.stop())
        self.run(self.root.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


def get(conn: http.client.HTTPConnection, path: str, token: str = "") -> bytes:
    conn.request("GET", path, headers={"Authorization": f"Bearer {token}"} if token else {})
    response = conn.getresponse()
    body = response.read()
    assert response.status == 200, (path, response.status, body[:300])
    return body


def time_pages(port: int, last_seq: int, rounds: int, versions: int, letters: int, *, token: str) -> dict[str, Any]:
    pages = {
        "tree": "/api/v1/hives",
        "versions_first": "/api/v1/contracts/bench/versions?limit=100",
        "versions_last": f"/api/v1/contracts/bench/versions?limit=100&cursor={max(0, versions - 100)}",
        "approvals": "/api/v1/approvals?status=all",
        "letters_first": "/api/v1/deadletters?limit=100",
        "letters_last": f"/api/v1/deadletters?limit=100&cursor=kSUBHIVE_DLQ_h000.{max(0, letters - 100)}",
        "letter": f"/api/v1/deadletters/h000:{max(1, letters // 2)}",
        "events_backlog": f"/api/v1/events?follow=false&after={max(0, last_seq - 100)}",
    }
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    figures: dict[str, Any] = {}
    for name, path in pages.items():
        get(conn, path, token)  # warm (dead letters are read with the admin token)
        durations = []
        for _ in range(rounds):
            start = time.perf_counter()
            get(conn, path, token)
            durations.append(time.perf_counter() - start)
        figures.update({f"{name}_{k}": v for k, v in latency(durations, "ms").items()})
    conn.close()
    return figures


def fan_out(served: Served, clients: int, steps: int) -> dict[str, Any]:
    port = served.api.port
    after = served.run(served.root.call(lambda r: r.last_seq))
    received: list[list[int]] = [[] for _ in range(clients)]
    done_at: list[float] = [0.0] * clients
    ready = threading.Barrier(clients + 1)

    def follow(index: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        conn.request("GET", f"/api/v1/events?after={after}")
        response = conn.getresponse()
        assert response.status == 200
        ready.wait()
        while len(received[index]) < steps:
            line = response.readline().decode()
            if line.startswith("id: "):
                received[index].append(int(line[4:]))
        done_at[index] = time.perf_counter()
        conn.close()

    threads = [threading.Thread(target=follow, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    ready.wait()
    batch = [AgentStep("bench", "t1", n + 1, "model.reply", "{}", time.time()) for n in range(steps)]
    start = time.perf_counter()
    served.run(served.root.call(lambda r: r.report_frames("h001", batch)))
    for thread in threads:
        thread.join(60)
    expected = list(range(after + 1, after + steps + 1))
    assert all(r == expected for r in received), "a client missed, repeated or reordered a frame"
    return {f"sse_{clients}_clients_{k}": v for k, v in latency([t - start for t in done_at], "ms").items()}


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--versions", type=int, default=1000)
    p.add_argument("--letters", type=int, default=10_000)
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--clients", type=int, default=50)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        proposing = build(ws, args.versions)
        nats = EmbeddedServer.start_sync(ServerConfig(store_dir=Path(tmp) / "nats"))
        try:
            asyncio.run(fill_letters(nats.endpoint(), args.letters))
            served = Served(ws, nats.endpoint())
            try:
                last = served.run(served.root.call(lambda r: r.last_seq))
                figures: dict[str, Any] = {
                    "hives": 200,
                    "versions": args.versions,
                    "letters": args.letters,
                    "proposals_per_s": round(args.versions / proposing, 1),
                }
                token = served.run(served.root.call(lambda r: r.admin_token()))
                figures.update(time_pages(served.api.port, last, args.rounds, args.versions, args.letters, token=token))
                figures.update(fan_out(served, args.clients, 100))
            finally:
                served.stop()
        finally:
            nats.stop_sync()
    print(render("HTTP API at scale", figures, as_json=args.json))


if __name__ == "__main__":
    main()
