"""What checking gRPC callers costs: sequential unary calls to a provider on 127.0.0.1, with and without it.

    .venv/bin/python benchmarks/bench_rpc.py            # a table
    .venv/bin/python benchmarks/bench_rpc.py --json     # one JSON object

Measured in the same run, back to back, ``--rounds`` times, which goes first alternating (medians; the
machine is shared):

* ``open``: a server with ``ProviderInterceptor`` and no check, a client with the trace interceptors (what
  ``serve_grpc(..., anonymous=True)`` and an anonymous ``connect_grpc`` do);
* ``checked``: the same server with a ``CallerCheck`` over a ``KeyFile`` (one ``stat`` per call), a client
  with ``caller_interceptors`` (two more metadata entries), as under ``subhive up``.

``check_us``: the provider's check alone (``CallerCheck.refusal`` over a ``KeyFile``), in microseconds.
"""

from __future__ import annotations

import asyncio
import secrets
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import grpc
from _common import latency, parser, render

from subhive.root_hive import LockEntry
from subhive.rpc import (
    HIVE_HEADER,
    TOKEN_HEADER,
    CallerCheck,
    KeyFile,
    ProviderInterceptor,
    caller_interceptors,
    issue_keys,
    trace_interceptors,
    write_keys,
)
from subhive.semver import Version

METHOD = "/bench.Echo/Call"


async def _server(check: CallerCheck | None) -> tuple[grpc.aio.Server, str]:
    async def echo(request: bytes, context: Any) -> bytes:
        return request

    server = grpc.aio.server(interceptors=[ProviderInterceptor("bench", check=check)])
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("bench.Echo", {"Call": grpc.unary_unary_rpc_method_handler(echo)}),)
    )
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, f"127.0.0.1:{port}"


async def _calls(address: str, interceptors: list[Any], count: int) -> list[float]:
    durations = []
    async with grpc.aio.insecure_channel(address, interceptors=interceptors) as channel:
        call = channel.unary_unary(METHOD)
        for _ in range(20):  # warm the connection up
            await call(b"x" * 64)
        for _ in range(count):
            start = time.perf_counter()
            await call(b"x" * 64)
            durations.append(time.perf_counter() - start)
    return durations


async def measure(calls: int, rounds: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        lock = [LockEntry("echo", Version.parse("1.0.0"), "sha256:" + "0" * 64, "db", {"web": "^1"})]
        paths = write_keys(Path(tmp), issue_keys(secrets.token_bytes(32), ["db", "web"], lock))
        check = CallerCheck(KeyFile(paths["db"]), "echo", 1)
        web = KeyFile(paths["web"])
        open_server, open_address = await _server(None)
        checked_server, checked_address = await _server(check)
        try:
            opened: list[float] = []
            checked: list[float] = []
            ratios = []
            for n in range(rounds):  # which goes first alternates: the machine is shared
                if n % 2:
                    c = await _calls(checked_address, caller_interceptors(web, "db"), calls)
                    o = await _calls(open_address, trace_interceptors(), calls)
                else:
                    o = await _calls(open_address, trace_interceptors(), calls)
                    c = await _calls(checked_address, caller_interceptors(web, "db"), calls)
                opened += o
                checked += c
                ratios.append(statistics.median(c) / statistics.median(o))
        finally:
            await open_server.stop(None)
            await checked_server.stop(None)
        metadata = ((HIVE_HEADER, "web"), (TOKEN_HEADER, web.current().present["db"]), ("traceparent", "x"))
        start = time.perf_counter()
        for _ in range(10_000):
            assert check.refusal(METHOD, metadata) is None
        check_us = (time.perf_counter() - start) / 10_000 * 1e6
    return {
        "calls": calls * rounds,
        **{f"open_{k}": v for k, v in latency(opened, "us").items()},
        **{f"checked_{k}": v for k, v in latency(checked, "us").items()},
        "checked_over_open_p50": round(statistics.median(ratios), 3),
        "added_p50_us": round((statistics.median(checked) - statistics.median(opened)) * 1e6, 1),
        "check_us": round(check_us, 2),
    }


def main() -> None:
    p = parser(__doc__.split("\n")[0])
    p.add_argument("--calls", type=int, default=500, help="calls per round and setup (500)")
    p.add_argument("--rounds", type=int, default=4)
    args = p.parse_args()
    print(render("gRPC caller check", asyncio.run(measure(args.calls, args.rounds)), as_json=args.json))


if __name__ == "__main__":
    main()
