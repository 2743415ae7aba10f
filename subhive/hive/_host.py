"""Several hives in one process: ``python -m subhive.hive --workspace DIR --host NAME``, as ``subhive up`` starts
it when ``[up] hives_per_process`` groups hives (docs/decisions/0117-hives-share-a-host-process.md).

Each hive keeps its own :class:`HiveRuntime`: its own NATS connection as its own NKey, its own root token, gRPC
keys, heartbeat file and log file. The supervisor drives the host on stdin, one JSON object a line:

    {"op": "start", "hive": "db", "run": 3, "nkey": ".../db.nk", "token": "...", "status": ".../db.json",
     "grpc_keys": ".../db.json", "log": ".../db.log"}
    {"op": "stop", "hive": "db", "run": 3}

and the host answers on stdout when a hive's run ends, with the exit code a process of its own would have had
(0 stopped, 2 it cannot start, 1 anything else): ``{"hive": "db", "run": 3, "exit": 2}``; and once, when its
imports are done and it waits for commands: ``{"host": NAME, "listening": true}``. A hive that fails
ends alone; its siblings run on. SIGTERM stops every hive cleanly, then the host exits 0. Where to connect
comes with each start too (``nats_url``, ``root``, ``failover``: the host may start before NATS does), and
the secrets come only there, never in the environment.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import logging
import os
import signal
import sys
import traceback
from collections.abc import Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ..bus import BusEndpoint
from ..errors import SubhiveError
from ..rpc import KeyFile
from ..telemetry import configure_tracing, shutdown_tracing
from ._runtime import HiveRuntime

__all__ = ["HiveLogs", "current_hive", "serve_host"]

log = logging.getLogger("subhive.host")
#: Hives of one host that start at the same time. Their start is mostly Python work on the one event loop
#: (imports, schemas, stubs): more at once only makes each one's NATS handshake wait, up to its timeout.
STARTING_AT_ONCE = 2
#: Seconds a hive's first NATS handshake may take here. While dozens of hosts import and start on a few cores,
#: each gets a sliver of a core; the server is known to run (up started it), so waiting beats failing the tree.
CONNECT_TIMEOUT = 60.0

#: The hive the running code works for: set in each hive's task, inherited by every task it starts (its NATS
#: connection's, its controller's, its gRPC server's), so its log records reach its own log file.
current_hive: contextvars.ContextVar[str | None] = contextvars.ContextVar("subhive_hive", default=None)


class HiveLogs(logging.Handler):
    """Routes each log record to the log file of the hive it was written for (:data:`current_hive`); records of
    no hive go to the host's own stream (its log)."""

    def __init__(self, fallback: IO[str]) -> None:
        super().__init__()
        self.fallback = fallback
        self.files: dict[str, IO[str]] = {}

    def emit(self, record: logging.LogRecord) -> None:
        hive = current_hive.get()
        record.hive = hive or "host"
        try:
            stream = self.files.get(hive or "", self.fallback)
            stream.write(self.format(record) + "\n")
            stream.flush()
        except Exception:  # a full disk must not take a hive down
            self.handleError(record)

    def open(self, hive: str, path: Path) -> IO[str]:
        path.parent.mkdir(parents=True, exist_ok=True)
        stream = open(path, "a", encoding="utf-8")  # noqa: SIM115 (closed in close())
        self.files[hive] = stream
        return stream

    def close_hive(self, hive: str) -> None:
        stream = self.files.pop(hive, None)
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()


@dataclass
class _Run:
    hive: str
    run: int
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[int] | None = None


class _Host:
    def __init__(self, workspace: Path, logs: HiveLogs, out: IO[str]) -> None:
        self.workspace = workspace
        self.logs = logs
        self.out = out
        self.runs: dict[str, _Run] = {}
        #: Hives that ran here before: a restart of one re-imports its modules.
        self.started: set[str] = set()
        self.stopping = asyncio.Event()
        self.starting = asyncio.Semaphore(STARTING_AT_ONCE)

    def say(self, message: dict[str, Any]) -> None:
        with contextlib.suppress(OSError, ValueError):  # the supervisor went away: nobody listens
            self.out.write(json.dumps(message) + "\n")
            self.out.flush()

    def command(self, line: bytes) -> None:
        try:
            message = json.loads(line)
            op, hive = message["op"], str(message["hive"])
        except (ValueError, KeyError, TypeError):
            log.error("ignoring a command that is not understood: %r", line[:200])
            return
        if op == "start":
            self.start(hive, message)
        elif op == "stop":
            current = self.runs.get(hive)
            if current is not None and current.run == message.get("run", current.run):
                current.stop.set()
        else:
            log.error("ignoring an unknown command %r", op)

    def start(self, hive: str, spec: dict[str, Any]) -> None:
        if hive in self.runs:  # a start for a hive that still runs: the supervisor stops it first, always
            log.error("%s is already running here; start ignored", hive)
            return
        run = _Run(hive, int(spec.get("run", 0)))
        self.runs[hive] = run
        context = contextvars.copy_context()
        context.run(current_hive.set, hive)
        run.task = asyncio.get_running_loop().create_task(self._serve(run, spec), name=f"hive-{hive}", context=context)

    async def _serve(self, run: _Run, spec: dict[str, Any]) -> int:
        """One hive's whole run: start, serve until told to stop, stop; its exit code as a process's."""
        stream = None
        code = 0
        try:
            # Inside the try: a log that cannot be opened still ends the run with an exit the supervisor hears.
            stream = self.logs.open(run.hive, Path(spec["log"])) if spec.get("log") else None
            self._forget_modules(run.hive)
            # Where to connect comes with the hive (the host may have started before NATS did), else from the
            # environment.
            env = {**os.environ, "SUBHIVE_NATS_NKEY": str(spec["nkey"])}
            if spec.get("nats_url"):
                env["SUBHIVE_NATS_URL"] = str(spec["nats_url"])
            if spec.get("nats_ca"):  # a cluster joined over TLS: the host's own environment holds no SUBHIVE_*
                env["SUBHIVE_NATS_CA"] = str(spec["nats_ca"])
            keys = spec.get("grpc_keys")
            status = spec.get("status")

            async def start() -> HiveRuntime:
                async with self.starting:
                    return await HiveRuntime.start(
                        self.workspace,
                        run.hive,
                        BusEndpoint.from_env(env),
                        root_address=spec.get("root") or os.environ.get("SUBHIVE_ROOT"),
                        token=spec.get("token") or None,
                        status_file=Path(status) if status else None,
                        grpc_keys=KeyFile(Path(keys)) if keys else None,
                        failover=float(spec.get("failover") or os.environ.get("SUBHIVE_NATS_FAILOVER") or 0),
                        connect_timeout=CONNECT_TIMEOUT,
                    )

            runtime = await _unless_stopped(run, start())
            if runtime is None:
                return code  # stopped while it waited for its turn or for NATS: nothing was left running
            try:
                await run.stop.wait()
            finally:
                await runtime.stop()
        except SubhiveError as exc:  # what `python -m subhive.hive` prints, in this hive's log
            if stream is not None:
                stream.write(f"error: {exc.code}: {exc}" + (f"\nhint: {exc.hint}" if exc.hint else "") + "\n")
            code = exc.exit_code
        except Exception:
            log.error("the hive failed:\n%s", traceback.format_exc().rstrip())
            code = 1
        finally:
            self.runs.pop(run.hive, None)
            self.logs.close_hive(run.hive)
            self.say({"hive": run.hive, "run": run.run, "exit": code})
        return code

    def _forget_modules(self, hive: str) -> None:
        """Drop what an earlier run of this hive imported (its knowledge module, its stubs), so that a restart
        here loads the files as they are now, as a new process would. Nothing to drop on a first run."""
        if hive not in self.started:
            self.started.add(hive)
            return
        mine = tuple(
            os.path.join(str(d), "")
            for base in (self.workspace / "subhives" / hive, self.workspace / "stubs" / hive)
            for d in {base, base.resolve()}
        )
        for name, module in list(sys.modules.items()):
            origin = getattr(module, "__file__", None)
            if origin and (origin.startswith(mine) or os.path.realpath(origin).startswith(mine)):
                del sys.modules[name]

    async def stop_all(self) -> None:
        runs = list(self.runs.values())
        for run in runs:
            run.stop.set()
        await asyncio.gather(*(r.task for r in runs if r.task is not None), return_exceptions=True)


async def _unless_stopped(run: _Run, starting: Coroutine[Any, Any, HiveRuntime]) -> HiveRuntime | None:
    """The started runtime, or None when the supervisor stops the run first. A start may wait long (its turn
    among siblings, then a NATS handshake of up to :data:`CONNECT_TIMEOUT`): a stop must not wait for it, or the
    supervisor would give up and kill the whole host, siblings and all."""
    start = asyncio.ensure_future(starting)
    stopped = asyncio.ensure_future(run.stop.wait())
    try:
        await asyncio.wait({start, stopped}, return_when=asyncio.FIRST_COMPLETED)
    except BaseException:  # this run itself cancelled: its start goes with it
        await _abandon(run, start)
        raise
    finally:
        stopped.cancel()
    if start.done():
        return start.result()  # started (a stop at the same moment is heard next), or failed: its error
    await _abandon(run, start)
    return None


async def _abandon(run: _Run, start: asyncio.Future[HiveRuntime]) -> None:
    """Cancel a start and leave nothing of it running. A cancelled start stops what it opened; but one may
    finish anyway (``asyncio.wait_for`` in Python 3.11 returns a result it already had instead of raising), and
    that runtime must be stopped here, or a hive the supervisor counts as stopped would run on."""
    start.cancel()
    try:
        runtime = await start
    except asyncio.CancelledError:
        if start.cancelled():  # ended as asked
            return
        raise  # this task itself was cancelled meanwhile
    except Exception:  # failing while it was being stopped: the stop is what was asked for
        log.warning("%s failed while its start was cancelled:\n%s", run.hive, traceback.format_exc().rstrip())
        return
    await runtime.stop()


async def serve_host(workspace: Path, name: str, stdin: IO[bytes], stdout: IO[str], logs: HiveLogs) -> int:
    """Run hives as the supervisor's commands on ``stdin`` say, until SIGTERM or SIGINT; returns 0.

    The end of ``stdin`` (the supervisor died) stops nothing: like hives in their own processes, they run on
    until ``subhive down`` finds them. Tracing (``OTEL_*``) is the process's: turned on once, as the host's
    ``service.name``, so that no hive's stop turns it off for its siblings."""
    loop = asyncio.get_running_loop()
    traces = configure_tracing(name)
    host = _Host(workspace, logs, stdout)
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, host.stopping.set)
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
    # Its imports are done: the supervisor starts the next host (decision 0139: one imports at a time).
    host.say({"host": name, "listening": True})

    async def read() -> None:
        while line := await reader.readline():
            if line.strip():
                host.command(line)

    commands = asyncio.create_task(read(), name="host-commands")
    try:
        await host.stopping.wait()
    finally:
        commands.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await commands
        await host.stop_all()
        if traces:
            shutdown_tracing()
    return 0
