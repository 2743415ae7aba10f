"""1,000 hives and 1,000 proposals through the root hive's gRPC service, with 50 watchers following along.

    .venv/bin/python benchmarks/bench_root.py            # a table: proposals/s, latency, watcher checks, ratio
    .venv/bin/python benchmarks/bench_root.py --json     # the same figures as one JSON object

The root runs as its own process (``subhive root``) on a fresh temporary workspace; this process is the
clients. 1,000 hives register; half of them provide a small contract (two operations, one event) and
propose its 1.0.0, then its 1.1.0 (a compatible minor: an optional property added) while the other half
each declared a ``^1.0`` requirement on one of those contracts, so every minor is checked against a
consumer. Each proposal is sent with its own hive's token, ``--concurrency`` in flight.

50 watchers subscribe before the first proposal and must each receive every frame, in order, with no gap
and no duplicate, up to a marker frame sent after the last proposal. They watch with ``RootClient.watch``,
which uses ``WatchEventBatches`` (the frames of one group commit per message); the root answers concurrent
proposals in group commits (one barrier and one log fsync per batch, nothing answered before it).

Baseline, measured in the same run on the same server and connection: the standard gRPC health ``Check``, a
bare unary call, at the same concurrency. "ratio" is proposal time over baseline call time.
Target: >= 200 proposals/s end to end.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from the repo root without installing

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from benchmarks._common import latency, parser, render
from subhive.root_hive._client import RootClient, admin_token_of
from subhive.workspace import init_workspace

TARGET_PROPOSALS_PER_S = 200
REPO = Path(__file__).resolve().parents[1]


def contract(index: int, version: str) -> dict[str, bytes]:
    name = f"svc{index:04d}"
    properties: dict[str, Any] = {
        "id": {"type": "string", "maxLength": 64},
        "amount": {"type": "integer", "minimum": 0},
    }
    if version != "1.0.0":
        properties["note"] = {"type": "string", "maxLength": 200}  # optional: a compatible minor
    request = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "required": ["id"],
        "properties": properties,
        "additionalProperties": False,
    }
    reply = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "required": ["id"],
        "properties": {"id": {"type": "string"}, "ok": {"type": "boolean"}},
        "additionalProperties": False,
    }
    manifest = (
        f"contract: {name}\nversion: {version}\nprovider: p{index:04d}\n"
        f"description: Benchmark contract {index}.\n"
        "operations:\n"
        "  create:\n    input: request.json\n    output: reply.json\n"
        "  read:\n    input: reply.json\n    output: reply.json\n"
        "events:\n  created:\n    payload: reply.json\n"
    )
    return {
        "contract.yaml": manifest.encode(),
        "request.json": json.dumps(request).encode(),
        "reply.json": json.dumps(reply).encode(),
    }


def start_root(workspace: Path) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from subhive.cli import main; sys.exit(main())",
            "root",
            "--format",
            "json",
            "-C",
            str(workspace),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        raise SystemExit("the root did not start")
    return proc, json.loads(line)["address"]


async def bounded(limit: int, jobs: list[Any]) -> list[float]:
    """Run the coroutine factories in ``jobs`` with ``limit`` in flight; return each one's seconds."""
    durations: list[float] = []
    queue = list(reversed(jobs))

    async def worker() -> None:
        while queue:
            job = queue.pop()
            start = time.perf_counter()
            await job()
            durations.append(time.perf_counter() - start)

    await asyncio.gather(*(worker() for _ in range(limit)))
    return durations


async def watcher(address: str, token: str, after: int, marker: str) -> list[int]:
    seqs: list[int] = []
    async with RootClient(address, token) as client:
        async for frame in client.watch(after):
            seqs.append(frame.seq)
            if frame.kind == "hive_registered" and frame.data.get("name") == marker:
                break
    return seqs


async def scenario(address: str, admin_token: str, hives: int, watchers: int, concurrency: int) -> dict[str, Any]:
    providers = hives // 2
    async with RootClient(address, admin_token) as admin:
        names = [f"p{i:04d}" for i in range(providers)] + [f"c{i:04d}" for i in range(hives - providers)]
        tokens: dict[str, str] = {}

        def register(name: str) -> Any:
            async def go() -> None:
                tokens[name] = (await admin.register_hive(name, kind="backend")).token

            return go

        t0 = time.perf_counter()
        await bounded(concurrency, [register(n) for n in names])
        register_s = time.perf_counter() - t0

        def need(i: int) -> Any:
            async def go() -> None:
                await admin.with_token(tokens[f"c{i:04d}"]).declare_requirement(f"svc{i % providers:04d}", "^1.0")

            return go

        await bounded(concurrency, [need(i) for i in range(hives - providers)])

        marker = "zz_bench_end"
        follow = [asyncio.create_task(watcher(address, admin_token, 0, marker)) for _ in range(watchers)]
        await asyncio.sleep(0.2)

        def propose(i: int, version: str) -> Any:
            async def go() -> None:
                outcome = await admin.with_token(tokens[f"p{i:04d}"]).propose(contract(i, version))
                if outcome.status != "accepted":
                    raise SystemExit(f"svc{i:04d} {version}: {outcome.status} {outcome.message}")

            return go

        jobs = [propose(i, "1.0.0") for i in range(providers)] + [propose(i, "1.1.0") for i in range(providers)]
        t0 = time.perf_counter()
        first_half = await bounded(concurrency, jobs[:providers])  # every 1.0.0 before its 1.1.0
        second_half = await bounded(concurrency, jobs[providers:])
        propose_s = time.perf_counter() - t0
        await admin.register_hive(marker)
        t1 = time.perf_counter()
        streams = await asyncio.gather(*follow)
        drain_s = time.perf_counter() - t1

        async with grpc.aio.insecure_channel(address) as channel:
            health = health_pb2_grpc.HealthStub(channel)
            request = health_pb2.HealthCheckRequest(service="")

            def check() -> Any:
                async def go() -> None:
                    await health.Check(request)

                return go

            await bounded(concurrency, [check() for _ in range(50)])  # warm-up
            t0 = time.perf_counter()
            baseline = await bounded(concurrency, [check() for _ in range(len(jobs))])
            baseline_s = time.perf_counter() - t0

    durations = first_half + second_half
    expected = list(range(1, streams[0][-1] + 1))
    complete = all(s == expected for s in streams)
    return {
        "hives": hives,
        "proposals": len(jobs),
        "concurrency": concurrency,
        "registrations_per_s": round(hives / register_s, 1),
        "proposals_per_s": round(len(jobs) / propose_s, 1),
        **latency(durations),
        "target_proposals_per_s": TARGET_PROPOSALS_PER_S,
        "meets_target": len(jobs) / propose_s >= TARGET_PROPOSALS_PER_S,
        "watchers": watchers,
        "frames_per_watcher": len(streams[0]),
        "every_watcher_saw_every_frame_in_order": complete,
        "watchers_drained_after_last_proposal_ms": round(drain_s * 1e3, 1),
        "baseline": "gRPC health Check (bare unary call) on the same server, same concurrency",
        "baseline_calls_per_s": round(len(baseline) / baseline_s, 1),
        "ratio_proposal_to_baseline": round(propose_s / baseline_s, 2),
    }


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--hives", type=int, default=1000, help="registered hives; half propose (default 1000)")
    p.add_argument("--watchers", type=int, default=50, help="concurrent watchers (default 50)")
    p.add_argument("--concurrency", type=int, default=8, help="calls in flight (default 8)")
    args = p.parse_args(argv)
    if args.hives < 2 or args.watchers < 1 or args.concurrency < 1:
        p.error("--hives >= 2, --watchers >= 1 and --concurrency >= 1")

    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp) / "bench"
        init_workspace(workspace)
        proc, address = start_root(workspace)
        try:
            figures = asyncio.run(
                scenario(address, admin_token_of(workspace), args.hives, args.watchers, args.concurrency)
            )
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    print(render("root hive over gRPC", figures, as_json=args.json))
    return 0 if figures["every_watcher_saw_every_frame_in_order"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
