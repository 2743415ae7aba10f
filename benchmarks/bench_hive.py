"""The sub-hive runtime against raw nats-py KV on one embedded nats-server, and how long `subhive up` takes.

    .venv/bin/python benchmarks/bench_hive.py              # a table
    .venv/bin/python benchmarks/bench_hive.py --json       # one JSON object
    .venv/bin/python benchmarks/bench_hive.py --hives 0    # without the generated workspace

Measured in the same run, each next to its baseline:

* compare-and-set: ``--writers`` writers (20), each on its own connection, increment one counter
  ``--updates`` times each with ``KvBlackboard.update`` (read, change, compare-and-set, jittered backoff after
  a lost race), against raw nats-py ``kv.get`` + ``kv.update(last=revision)`` with the same retry loop and
  the same backoff, on a nats-py KV bucket (history 1, its default; direct gets like the blackboard's).
  Updates per second, how many attempts one update took, and the final counts (no update may be lost).
  Unconditional puts from the same writers (``KvBlackboard.put`` against ``kv.put``) for reference;
* trigger latency: from just before a ``KvBlackboard.put`` to a knowledge source's activation starting (a
  ``Controller`` over the board, its source stamping ``perf_counter``), against a plain nats-py KV watch
  receiving the same put on an identical bucket; sequential, p50/p99 (``trigger_p50_ratio``: ours/raw, so
  above 1 is slower);
* ``subhive up``: seconds to every hive ready (the ``ready`` event's ``seconds``, from ``up --format
  json``) for each example workspace under ``examples/`` (run in a temporary copy) and for a generated
  workspace of ``--hives`` sub-hives of mixed kinds (db, backend, ui, custom in turn; ``--bare-share`` of
  them bare, providing and consuming nothing, as most leaves of a decomposed repository are; hives under
  ``--parents`` parents), as ``[up] hives_per_process`` says (``--hives-per-process``, default auto); then, at
  rest, memory per hive (the PSS of every process that runs hives, over the number of hives; the median
  process's PSS and RSS), the whole tree's CPU as a share of one core over ``--idle-seconds`` (and the
  busiest processes), and ``subhive status``'s time (issue #17's targets for 500 hives: up in <= 60 s,
  <= 20 MB per idle hive, < 0.05 of a core); then ``subhive down``. ``--cluster`` runs the generated tree
  again on a local 3-node NATS cluster (``[nats] nodes = 3``), its hives spread over the nodes.
  ``--up-only`` skips the runtime measurements and the examples (a 500-hive run on a shared machine):

    .venv/bin/python benchmarks/bench_hive.py --up-only --hives 500 --cluster   # --cluster-only: that part alone

The runtime measurements run ``--rounds`` times, raw and ours back to back; rates are medians, a ratio is the
median of the rounds' ratios (ours/raw) with its spread (lowest, highest), since the machine is shared.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import nats
import nats.js.errors
from _common import latency, parser, percentile, render
from nats.js.api import KeyValueConfig, StorageType
from nats.js.kv import KeyValue

from subhive.bus import EmbeddedServer, ServerConfig
from subhive.hive import Controller, Entry, KvBlackboard, Write, board_stream, ensure_blackboard

REPO = Path(__file__).resolve().parents[1]
KINDS = ("db", "backend", "ui", "custom")
#: What a writer does with its own connection's JetStream context.
Work = Callable[[Any], Awaitable[None]]


def backoff(attempt: int) -> float:
    """The blackboard's pause after a lost race (KvBlackboard.update), used by the raw loop too."""
    return random.uniform(0, min(0.002 * (attempt + 1), 0.05))


def increment(old: Any) -> dict[str, int]:
    return {"n": (old or {"n": 0})["n"] + 1}


async def raw_update(kv: KeyValue, key: str) -> int:
    """nats-py's compare-and-set loop: get, change, update(last=revision); again after a lost race."""
    for attempt in range(1000):
        try:
            entry = await kv.get(key)
            current, revision = json.loads(entry.value or b"null"), entry.revision
        except nats.js.errors.KeyNotFoundError:
            current, revision = None, 0
        try:
            await kv.update(key, json.dumps(increment(current)).encode(), last=revision)
        except nats.js.errors.KeyWrongLastSequenceError:
            await asyncio.sleep(backoff(attempt))
            continue
        return attempt + 1
    raise RuntimeError(f"{key} kept changing: 1000 attempts lost the race")


async def concurrently(url: str, writers: int, work: Work) -> float:
    """Seconds for ``writers`` connections to each run ``work(jetstream)`` at the same time."""
    connections = [await nats.connect(url) for _ in range(writers)]
    try:
        start = time.perf_counter()
        await asyncio.gather(*(work(nc.jetstream()) for nc in connections))
        return time.perf_counter() - start
    finally:
        for nc in connections:
            await nc.close()


def _ratio(name: str, raw: list[float], ours: list[float]) -> dict[str, Any]:
    """The median of each round's ours/raw (the two run back to back in a round, so they share the machine's
    mood), and its spread over the rounds."""
    ratios = sorted(o / r for r, o in zip(raw, ours, strict=True))
    return {name: round(statistics.median(ratios), 3), f"{name}_spread": [round(ratios[0], 3), round(ratios[-1], 3)]}


def ours_cas(key: str, updates: int, attempts: dict[str, int]) -> Work:
    async def work(js: Any) -> None:
        board = KvBlackboard(js, "cas")

        def change(old: Any) -> dict[str, int]:
            attempts["ours"] += 1  # called once per attempt: a lost race calls it again
            return increment(old)

        for _ in range(updates):
            await board.update(key, change, writer="bench")

    return work


def raw_cas(key: str, updates: int, attempts: dict[str, int]) -> Work:
    async def work(js: Any) -> None:
        kv = await js.key_value("raw_cas")
        for _ in range(updates):
            tries = await raw_update(kv, key)  # not `+= await`: that reads the total before awaiting
            attempts["raw"] += tries

    return work


def ours_puts(puts: int) -> Work:
    async def work(js: Any) -> None:
        board = KvBlackboard(js, "cas")
        for n in range(puts):
            await board.put("counters.put", {"n": n}, writer="bench")

    return work


def raw_puts(puts: int) -> Work:
    async def work(js: Any) -> None:
        kv = await js.key_value("raw_cas")
        for n in range(puts):
            await kv.put("counters.put", json.dumps({"n": n}).encode())

    return work


async def measure_cas(url: str, args: Any) -> dict[str, Any]:
    writers, updates, puts = args.writers, args.updates, args.puts
    nc = await nats.connect(url)
    js = nc.jetstream()
    await ensure_blackboard(js, "cas")
    await js.create_key_value(KeyValueConfig(bucket="raw_cas", history=1, direct=True, storage=StorageType.FILE))
    attempts = {"ours": 0, "raw": 0}
    total = writers * updates
    cas: dict[str, list[float]] = {"raw": [], "ours": []}
    put: dict[str, list[float]] = {"raw": [], "ours": []}
    lost = 0
    try:
        for n in range(args.rounds):
            key = f"counters.c{n}"
            cas["raw"].append(total / await concurrently(url, writers, raw_cas(key, updates, attempts)))
            cas["ours"].append(total / await concurrently(url, writers, ours_cas(key, updates, attempts)))
            put["raw"].append(writers * puts / await concurrently(url, writers, raw_puts(puts)))
            put["ours"].append(writers * puts / await concurrently(url, writers, ours_puts(puts)))
            counted_ours = await KvBlackboard(js, "cas").get(key)
            counted_raw = json.loads((await (await js.key_value("raw_cas")).get(key)).value or b"null")
            lost += (total - counted_raw["n"]) + (total - (counted_ours.value["n"] if counted_ours else 0))
    finally:
        await nc.close()
    return {
        "cas_writers": writers,
        "cas_updates_per_round": total,
        "cas_raw_per_s": _rate(cas["raw"]),
        "cas_ours_per_s": _rate(cas["ours"]),
        **_ratio("cas_ratio", cas["raw"], cas["ours"]),
        "cas_raw_attempts_per_update": round(attempts["raw"] / total / args.rounds, 2),
        "cas_ours_attempts_per_update": round(attempts["ours"] / total / args.rounds, 2),
        "cas_lost_updates": lost,
        "put_raw_per_s": _rate(put["raw"]),
        "put_ours_per_s": _rate(put["ours"]),
        **_ratio("put_ratio", put["raw"], put["ours"]),
    }


def _rate(values: list[float]) -> int:
    return round(statistics.median(values))


class Stamp:
    """A knowledge source that only notes when it was activated."""

    name = "stamp"
    triggers = ("bench.*",)
    priority = 0

    def __init__(self) -> None:
        self.seen: asyncio.Queue[tuple[str, float]] = asyncio.Queue()

    async def activate(self, entry: Entry, blackboard: Any) -> Sequence[Write]:
        self.seen.put_nowait((entry.key, time.perf_counter()))
        return ()


async def sequential(
    samples: int, board: KvBlackboard, prefix: str, seen: Callable[[], Awaitable[tuple[str, float]]]
) -> list[float]:
    """Seconds from just before each put to its arrival; the first tenth warms up and is not kept."""
    warm = max(1, samples // 10)
    durations = []
    for i in range(warm + samples):
        key = f"bench.{prefix}{i}"
        start = time.perf_counter()
        await board.put(key, {"i": i}, writer="bench")
        seen_key, arrived = await asyncio.wait_for(seen(), 10)
        if seen_key != key:
            raise RuntimeError(f"expected {key}, got {seen_key}")
        if i >= warm:
            durations.append(arrived - start)
    return durations


async def measure_trigger(url: str, samples: int, rounds: int) -> dict[str, Any]:
    nc = await nats.connect(url)
    writer = await nats.connect(url)
    js = nc.jetstream()
    raw: list[list[float]] = []
    ours: list[list[float]] = []
    controller = None
    try:
        # The baseline: a plain KV watch on a bucket just like a hive's, receiving the same puts.
        await ensure_blackboard(js, "watched")
        watched_board = KvBlackboard(writer.jetstream(), "watched")
        # js.key_value() refuses a bucket without a per-key history limit, which the blackboard's is (it keeps
        # everything): bind nats-py's KeyValue to it directly; the watch is nats-py's own.
        kv = KeyValue(name="bb_watched", stream=board_stream("watched"), pre="$KV.bb_watched.", js=js, direct=True)
        watcher: Any = await kv.watch("bench.*")  # nats-py's KeyWatcher is untyped
        if await watcher.updates(timeout=5) is not None:  # None: no history, the watch is live
            raise RuntimeError("the watched bucket was not empty")

        async def watched() -> tuple[str, float]:
            entry = await watcher.updates(timeout=10)
            stamp = time.perf_counter()
            return entry.key, stamp

        await ensure_blackboard(js, "triggered")
        triggered_board = KvBlackboard(writer.jetstream(), "triggered")
        source = Stamp()
        controller = Controller(KvBlackboard(js, "triggered"), [source])
        await controller.start(js)
        for n in range(rounds):
            raw.append(await sequential(samples, watched_board, f"r{n}k", watched))
            ours.append(await sequential(samples, triggered_board, f"r{n}k", source.seen.get))
        await watcher.stop()
    finally:
        if controller is not None:
            await controller.stop()
        await writer.close()
        await nc.close()
    return {
        "trigger_samples": samples * rounds,
        **{f"trigger_raw_watch_{k}": v for k, v in latency([d for r in raw for d in r], "us").items()},
        **{f"trigger_ours_{k}": v for k, v in latency([d for r in ours for d in r], "us").items()},
        **_ratio("trigger_p50_ratio", [percentile(r, 50) for r in raw], [percentile(o, 50) for o in ours]),
    }


# -- subhive up ---------------------------------------------------------------------------------------------


def cli(workspace: Path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SUBHIVE_")}
    return subprocess.run(
        [sys.executable, "-m", "subhive", *args, "-C", str(workspace)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )


def tree_pids(workspace: Path) -> list[int]:
    """Live processes whose command line names ``workspace``: what `up` started there."""
    needle = str(workspace).encode()
    found = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if entry.name.isdigit() and needle in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
    return found


def time_up(workspace: Path, label: str, *, idle_seconds: float = 5.0) -> dict[str, Any]:
    """``subhive up --detach --format json``: the ``ready`` event's seconds and the command's wall time; then
    ``subhive down``, and SIGKILL for anything of the workspace still alive."""
    out: dict[str, Any] = {}
    try:
        start = time.perf_counter()
        ran = cli(workspace, "up", "--detach", "--format", "json", "--ready-timeout", "900", timeout=1200)
        wall = time.perf_counter() - start
        if ran.returncode != 0:
            last = ran.stderr.strip().splitlines()[-2:]
            out[f"up_{label}_failed"] = " | ".join(last)[:300]
            return out
        ready = json.loads(ran.stdout)
        out |= {
            f"up_{label}_hives": len(ready["hives"]),
            f"up_{label}_ready_s": ready["seconds"],
            f"up_{label}_hives_phase_s": _hives_phase(workspace),
            f"up_{label}_phases": _phases(workspace),
            f"up_{label}_command_s": round(wall, 3),
        }
        out |= idle_tree(workspace, label, seconds=idle_seconds)
    finally:
        start = time.perf_counter()
        cli(workspace, "down", timeout=300)
        out[f"down_{label}_s"] = round(time.perf_counter() - start, 3)
        for pid in tree_pids(workspace):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    return out


def idle_tree(workspace: Path, label: str, *, seconds: float = 5.0) -> dict[str, Any]:
    """The running tree at rest: memory per hive process (PSS, which shares the pages of common libraries
    fairly, and RSS), the CPU every process of the tree takes over ``seconds`` as a share of one core, and how
    long ``subhive status`` takes (median of 3)."""
    pids = tree_pids(workspace)
    hives = [pid for pid in pids if b"subhive.hive" in _read(Path(f"/proc/{pid}/cmdline"))]
    record = json.loads((workspace / ".subhive" / "up" / "supervisor.json").read_text())
    hive_count = len(record.get("hives") or {})
    pss = [_memory_kib(pid, "Pss:") for pid in hives]
    rss = [_memory_kib(pid, "Rss:") for pid in hives]
    tree_pss = sum(_memory_kib(pid, "Pss:") for pid in pids)
    time.sleep(2.0)  # the first heartbeats after ready, and anything else the start left in flight, settle
    before, start = {pid: _cpu_ticks([pid]) for pid in pids}, time.perf_counter()
    time.sleep(seconds)
    wall = time.perf_counter() - start
    used = {pid: _cpu_ticks([pid]) - ticks for pid, ticks in before.items()}
    ticks = sum(used.values())
    clock = os.sysconf("SC_CLK_TCK")
    busiest = sorted(used.items(), key=lambda item: -item[1])[:4]
    status = []
    for _ in range(3):
        began = time.perf_counter()
        cli(workspace, "status", "--format", "json", timeout=120)
        status.append(time.perf_counter() - began)
    return {
        f"idle_{label}_hive_processes": len(hives),
        f"idle_{label}_pss_per_hive_mib": round(sum(pss) / 1024 / hive_count, 1) if hive_count else 0,
        f"idle_{label}_tree_pss_mib": round(tree_pss / 1024, 1),
        f"idle_{label}_hive_process_pss_mib": round(statistics.median(pss) / 1024, 1) if pss else 0,
        f"idle_{label}_hive_process_rss_mib": round(statistics.median(rss) / 1024, 1) if rss else 0,
        f"idle_{label}_tree_cpu_share_of_a_core": round(ticks / clock / wall, 3),
        f"idle_{label}_busiest": ", ".join(f"{_role(pid)} {n / clock / wall:.3f}" for pid, n in busiest),
        f"idle_{label}_seconds": seconds,
        f"status_{label}_s": round(statistics.median(status), 3),
        "load_average": os.getloadavg()[0],
    }


def _role(pid: int) -> str:
    """What a process of the tree is, in a word: supervisor, root, nats, host (several hives) or hive."""
    cmdline = _read(Path(f"/proc/{pid}/cmdline")).split(b"\0")
    if b"nats-server" in cmdline[0]:
        return "nats"
    for flag, role in ((b"subhive.up", "supervisor"), (b"root", "root"), (b"--host", "host"), (b"--hive", "hive")):
        if flag in cmdline:
            return role
    return "other"


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def _memory_kib(pid: int, field: str) -> int:
    for line in _read(Path(f"/proc/{pid}/smaps_rollup")).decode(errors="replace").splitlines():
        if line.startswith(field):
            return int(line.split()[1])
    return 0


def _cpu_ticks(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        fields = _read(Path(f"/proc/{pid}/stat")).decode(errors="replace").rsplit(")", 1)[-1].split()
        if len(fields) > 13:
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total


def _hives_phase(workspace: Path) -> float:
    """Seconds from the first hive starting to all ready (the rest of ``ready_s`` is root, negotiation,
    codegen and NATS)."""
    events = [json.loads(line) for line in (workspace / ".subhive" / "up" / "progress.jsonl").read_text().splitlines()]
    first = min(e["t"] for e in events if e["event"] == "hive.starting")
    ready = next(e["t"] for e in events if e["event"] == "ready")
    return round(float(ready) - float(first), 3)


#: The progress events that end a stage of up's start, and the stage's name in `_phases`.
_STAGES = {
    "root.started": "root",
    "negotiated": "negotiation",
    "codegen": "codegen",
    "nats.started": "nats",
    "nats.provisioning": "provisioning",
    "ready": "ready",
}


def _phases(workspace: Path) -> str:
    """When each stage of the start ended, in seconds from its first event, in the order they ended (``root 2.9,
    negotiation 5.3, nats 8.1, codegen 14.4, ...``): where a start's time goes (decision 0139). Codegen runs
    beside NATS's start and provisioning, so stages overlap and are given as ends, not durations; provisioning
    ends with its last step (said every 1,000 consumers; absent below that)."""
    events = [json.loads(line) for line in (workspace / ".subhive" / "up" / "progress.jsonl").read_text().splitlines()]
    start = float(events[0]["t"])
    ends: dict[str, float] = {}
    for e in events:
        if e["event"] in _STAGES:
            ends[_STAGES[e["event"]]] = float(e["t"]) - start
    return ", ".join(f"{stage} {end:.1f}" for stage, end in sorted(ends.items(), key=lambda item: item[1]))


def _pristine(source: Path) -> Callable[[str, list[str]], set[str]]:
    """What not to copy of an example: runtime state and what `up` generates."""

    def ignore(directory: str, names: list[str]) -> set[str]:
        skip = {".subhive", "contracts.lock"} & set(names)
        if Path(directory) == source / "stubs":
            skip |= {n for n in names if (source / "stubs" / n).is_dir()}
        return skip | {n for n in names if n in ("__pycache__", ".pytest_cache")}

    return ignore


def generated_workspace(root: Path, hives: int, *, parents: int = 0, bare_share: float = 0.0) -> float:
    """``subhive init`` and ``hives`` times ``subhive new``, kinds in turn (``bare_share`` of them ``--bare``,
    spread evenly), the first ``parents`` of them parents of the rest in turn; returns the seconds it took."""
    from subhive.cli import main

    start = time.perf_counter()
    names: list[str] = []
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        if main(["init", str(root)]) != 0:
            raise RuntimeError("subhive init failed")
        for n in range(hives):
            kind = KINDS[n % len(KINDS)]
            name = f"{kind}{n:03d}"
            bare = ["--bare"] if int((n + 1) * bare_share) > int(n * bare_share) else []
            parent = ["--parent", names[n % parents]] if parents and n >= parents else []
            if main(["new", name, "--kind", kind, *bare, *parent, "-C", str(root)]) != 0:
                raise RuntimeError(f"subhive new {name} failed")
            names.append(name)
    return time.perf_counter() - start


def measure_up(args: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    hives = args.hives
    with tempfile.TemporaryDirectory(prefix="subhive-bench-up-") as tmp:
        if not args.up_only:
            for example in sorted(p.parent for p in (REPO / "examples").glob("*/hive.toml")):
                copy = Path(tmp) / example.name
                shutil.copytree(example, copy, ignore=_pristine(example))
                out |= time_up(copy, example.name)
        if hives:
            generated = Path(tmp) / f"hives{hives}"
            out[f"scaffold_{hives}_hives_s"] = round(
                generated_workspace(generated, hives, parents=args.parents, bare_share=args.bare_share), 3
            )
            if args.hives_per_process:
                with open(generated / "hive.toml", "a", encoding="utf-8") as config:
                    config.write(f"\n[up]\nhives_per_process = {args.hives_per_process}\n")
            if not args.cluster_only:
                out |= time_up(generated, f"{hives}_hives", idle_seconds=args.idle_seconds)
            if args.cluster or args.cluster_only:
                shutil.rmtree(generated / ".subhive", ignore_errors=True)  # a fresh store: each node makes its own
                with open(generated / "hive.toml", "a", encoding="utf-8") as config:
                    config.write("\n[nats]\nnodes = 3\n")
                out |= time_up(generated, f"{hives}_hives_cluster", idle_seconds=args.idle_seconds)
    return out


async def main_async(args: Any) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="subhive-bench-hive-") as tmp:
        server = await EmbeddedServer.start(ServerConfig(Path(tmp) / "nats"))
        try:
            figures |= await measure_cas(server.url, args)
            figures |= await measure_trigger(server.url, args.samples, args.rounds)
        finally:
            await server.stop()
    return figures


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--writers", type=int, default=20, help="concurrent writers on one key")
    p.add_argument("--updates", type=int, default=50, help="compare-and-set updates per writer")
    p.add_argument("--puts", type=int, default=100, help="unconditional puts per writer")
    p.add_argument("--samples", type=int, default=300, help="puts per trigger-latency measurement and round")
    p.add_argument("--rounds", type=int, default=3, help="rounds of each runtime measurement (medians are printed)")
    p.add_argument("--hives", type=int, default=50, help="sub-hives in the generated workspace (0: skip it)")
    p.add_argument("--parents", type=int, default=0, help="the first N generated hives are the others' parents")
    p.add_argument("--bare-share", type=float, default=0.0, help="share of generated hives made --bare (0 to 1)")
    p.add_argument("--hives-per-process", default="", help='[up] hives_per_process for the generated tree ("auto")')
    p.add_argument("--idle-seconds", type=float, default=5.0, help="how long the idle tree's CPU is measured")
    p.add_argument("--cluster", action="store_true", help="also run the generated tree on a 3-node NATS cluster")
    p.add_argument("--cluster-only", action="store_true", help="run the generated tree on the cluster only")
    p.add_argument("--up-only", action="store_true", help="only the generated tree: no runtime figures, no examples")
    args = p.parse_args(argv)
    if args.hives_per_process and args.hives_per_process != "auto" and not args.hives_per_process.isdigit():
        p.error("--hives-per-process takes a number or auto")
    if args.hives_per_process == "auto":
        args.hives_per_process = '"auto"'
    figures = {} if args.up_only else asyncio.run(main_async(args))
    figures |= measure_up(args)
    if not args.up_only:
        figures["lost_updates_ok"] = figures["cas_lost_updates"] == 0
    print(render("sub-hive runtime vs raw nats-py KV; subhive up", figures, as_json=args.json))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
