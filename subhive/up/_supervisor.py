"""The supervisor: the process ``subhive up`` leaves running, which starts and watches everything else.
The order of start-up, restarts and stopping: docs/up.md#what-up-does-in-order.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Coroutine, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from .._bounded import bounded
from ..errors import InputError, Location, SubhiveError
from ..workspace import Workspace, open_workspace
from ._follow import QUICK_EXIT, SAME_FAILURES, Settle, Snapshot, Stamp, TreeChange, refused_requirements, tree_stamp
from ._hosts import Host, HostedRun, group_hives
from ._layout import UpLayout, process_start, read_json, workspace_id, write_json

__all__ = ["Supervisor", "UpOptions", "start_waves"]

log = logging.getLogger("subhive.up")

BACKOFF_FIRST = 1.0
BACKOFF_MAX = 30.0
HEALTHY_AFTER = 60.0
_POLL = 0.2
#: Seconds between two looks at how full the hives' dead-letter streams are; while nothing changes, the looks
#: grow apart up to DLQ_CHECK_MAX (each costs NATS a list of every hive's stream: decision 0118).
DLQ_CHECK = 3.0
DLQ_CHECK_MAX = 10.0
#: Hives for which the workspace is looked at once a second; a larger tree is looked at every
#: hives / TREE_LOOKS_PER_SECOND seconds (each look stats every manifest and contract file).
TREE_LOOKS_PER_SECOND = 100
#: Seconds the workspace's files must stay as they are before up follows a change to them (decision 0135): a
#: version copied, renumbered, then edited is acted on once, whole, not as the copy (accepted, so immutable).
TREE_SETTLE = 1.5
#: Provisioning requests (a hive's stream, board, consumer) in flight at once on the admin connection.
PROVISION_AT_ONCE = 16
#: Consumers made between two progress lines (``nats.provisioning``).
_CONSUMERS_A_STEP = 1000
#: Seconds to wait for each answer of JetStream's API while provisioning.
_PROVISION_API_TIMEOUT = 30.0
# Tries (0.2 s apart) at provisioning replicated streams while a new cluster settles.
_PLACEMENT_TRIES = 50
#: Seconds to wait for a host process to say it has imported before the next one starts anyway.
HOST_IMPORT_WAIT = 5.0


@dataclass(frozen=True)
class UpOptions:
    """``root_port``/``nats_port`` 0: free ports; ``ready_timeout``: seconds for every hive to be ready."""

    root_port: int = 0
    nats_port: int = 0
    ready_timeout: float = 120.0
    stop_timeout: float = 5.0


@dataclass
class _Child:
    """A process the supervisor keeps alive."""

    name: str
    argv: list[str]
    env: dict[str, str]
    log_path: Path
    process: subprocess.Popen[bytes] | HostedRun | None = None
    started: float = 0.0
    restarts: int = 0
    backoff: float = BACKOFF_FIRST
    next_start: float = 0.0
    exits: list[int] = field(default_factory=list)
    #: Exits in a row soon after a start with one code; at SAME_FAILURES the hive is stopped, with ``failed``.
    quick_exits: int = 0
    failed: str = ""
    #: Where this run's output starts in the (appended) log: failure reports quote this run, not an older one.
    log_offset: int = 0
    #: The id of a `subhive restart` request this run answers once it is ready (or exits).
    request: str | None = None
    #: The host process this hive runs in, with others (``[up] hives_per_process``); None: its own process.
    host: Host | None = None
    #: What the host is handed for this hive alone: its seed file, root token, heartbeat and key files.
    secrets: dict[str, str] = field(default_factory=dict)

    def launch(self, cwd: Path) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as out:
            self.log_offset = _mark_start(out, self.name)
            if self.host is not None:
                self.process = self.host.start_hive(self.name, {**self.secrets, "log": str(self.log_path)})
                self.started = time.monotonic()
                return
            # Its own session: a Ctrl-C in the terminal that ran `subhive up` reaches the supervisor only,
            # which then stops the children in order.
            self.process = subprocess.Popen(
                self.argv,
                cwd=cwd,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.started = time.monotonic()

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None and self.process.poll() is None else None


class Supervisor:
    """Runs a workspace; :meth:`run` returns the process's exit code.

    It starts the pieces in the order they need each other (:meth:`_start_all`), then watches: a child that
    exits is restarted with exponential backoff (:data:`BACKOFF_FIRST` doubling to :data:`BACKOFF_MAX`, back to
    the first after :data:`HEALTHY_AFTER` seconds of good health). SIGTERM (``subhive down``) stops the hives,
    then the root, then NATS, and removes nothing: its record is marked stopped. Every step is appended to
    ``progress.jsonl``, which ``subhive up`` prints live.
    """

    def __init__(self, workspace_root: Path, options: UpOptions | None = None) -> None:
        self.layout = UpLayout(Path(workspace_root))
        self.options = options or UpOptions()
        self.workspace: Workspace | None = None
        self.hives: dict[str, _Child] = {}
        #: Processes that run several hives (``[up] hives_per_process``), by name, and which host runs which hive.
        self.hosts: dict[str, Host] = {}
        self._host_of: dict[str, str] = {}
        self.root: _Child | None = None
        #: Mock providers of what hives consume and no hive here provides (subhive.up._mocks), by package.
        self.mocks: _Child | None = None
        self._mocked: dict[str, str] = {}
        self.root_address = ""
        #: The root's HTTP API (and console), e.g. http://127.0.0.1:8765; kept across root restarts.
        self.root_http = ""
        self.nats: Any = None
        self._stop = asyncio.Event()
        self._lock_seen = b""
        self._lock_stamp = (0, 0)
        self._keys: dict[str, Any] = {}  # each hive's public NKey (subhive.bus.NKey)
        self._admin: Any = None
        #: Every gRPC token of this run derives from it (subhive.rpc.issue_keys); it never leaves this process.
        self._grpc_master = secrets.token_bytes(32)
        self._progress: IO[str] | None = None
        self._emitting = threading.Lock()
        self._started = time.monotonic()
        self._dlq_alarm: Any = None
        self._dlq_next = 0.0
        self._dlq_every = DLQ_CHECK
        self._dlq_seen: list[Any] = []
        # Following the workspace while it runs (docs/up.md, "Changing a running tree"):
        self._snapshot = Snapshot()
        self._tree_stamp: Stamp = ()
        #: A stamp unlike ``_tree_stamp``, followed once it has stayed the same for TREE_SETTLE seconds.
        self._settle = Settle(TREE_SETTLE)
        self._tree_refused = False
        self._refusal: frozenset[str] = frozenset()  # the problems of the refusal last said
        self._ticks = 0
        #: What each running hive consumed when it (re)started: contract -> range.
        self._consumed: dict[str, dict[str, str]] = {}
        #: Warnings already said (code and message): said again only after they went away and came back.
        self._warned: set[tuple[str, str]] = set()
        #: The start time of each pid this run recorded (see _record), and the workspace it runs (device, inode).
        self._starts: dict[int, int] = {}
        self._workspace_id = workspace_id(self.layout.workspace)
        #: Hives that run on other machines ([up] elsewhere): up makes all they need but starts no process of them.
        self._elsewhere: list[str] = []
        #: The CA the root's certificate is verified with, when it serves TLS ([grpc]).
        self._root_ca: Path | None = None
        #: What the record says of the run: starting, ready, stopped (each child is recorded the moment it starts).
        self._state = "starting"
        #: nats-server processes launched before ``self.nats`` exists (a cluster's nodes, while they start), with
        #: their start times: a node that failed to start is not recorded under a pid the system gave away since.
        self._nats_launched: dict[int, int | None] = {}
        #: Starts the host processes one after the other while the tree starts (:meth:`_start_hosts`).
        self._hosts_starting: asyncio.Task[None] | None = None

    # -- reporting ----------------------------------------------------------------------------------------

    def emit(self, event: str, message: str, **data: Any) -> None:
        """One line of progress: what ``subhive up`` prints and tests read."""
        record = {"t": round(time.time(), 3), "event": event, "message": message, **data}
        with self._emitting:  # codegen's thread says its lines while NATS starts (whole lines, one at a time)
            if self._progress is not None:
                self._progress.write(json.dumps(record, sort_keys=True) + "\n")
                self._progress.flush()
        log.info("%s: %s", event, message)

    def _record(self, state: str | None = None) -> None:
        """Write ``supervisor.json``: every child's pid, which ``down`` stops whatever this process was doing when
        it died. Called the moment each child starts (``state`` None: the state stays as it was)."""
        self._state = state or self._state
        nats_pids = (
            self.nats.pids
            if self.nats is not None
            else [pid for pid, start in self._nats_launched.items() if start and process_start(pid) == start]
        )
        hives = {
            name: {
                "pid": child.pid,
                "restarts": child.restarts,
                "exits": child.exits[-5:],
                **({"failed": child.failed} if child.failed else {}),
            }
            for name, child in sorted(self.hives.items())
        }
        hives |= {name: {"pid": None, "restarts": 0, "exits": [], "elsewhere": True} for name in self._elsewhere}
        # Each live pid's start time, which `down` and `status` compare before they call a recorded pid ours
        # (subhive.up._control). Exact: a child not yet reaped keeps its pid (``_Child.pid`` is None once reaped).
        live = [
            os.getpid(),
            *(c.pid for c in (self.root, self.mocks, *self.hives.values()) if c is not None),
            *(h.pid for h in self.hosts.values()),
            *nats_pids,
        ]
        starts: dict[int, int] = {}
        for pid in live:
            if pid is not None and (start := self._starts.get(pid) or process_start(pid)) is not None:
                starts[pid] = start
        self._starts = starts
        write_json(
            self.layout.supervisor_file,
            {
                "pid": os.getpid(),
                "state": self._state,
                "workspace": str(self.layout.workspace),
                "workspace_id": self._workspace_id,
                "root": self.root_address,
                "http": self.root_http,
                "nats": ",".join(self.nats.urls) if self.nats is not None else "",
                "nats_pid": nats_pids[0] if nats_pids else None,
                "nats_pids": nats_pids,
                "nats_monitor": self.nats.monitor_urls if self.nats is not None else [],
                "nats_ca": self._nats_ca_env().get("SUBHIVE_NATS_CA"),
                "root_pid": self.root.pid if self.root is not None else None,
                "mocks_pid": self.mocks.pid if self.mocks is not None else None,
                "hives": hives,
                # Each host process (several hives in one): `down` stops one that runs no hive just now too.
                "hosts": {name: host.pid for name, host in sorted(self.hosts.items()) if host.pid is not None},
                "starts": {str(pid): start for pid, start in sorted(starts.items())},
            },
        )

    # -- the whole run ------------------------------------------------------------------------------------

    async def run(self) -> int:
        self.layout.up_dir.mkdir(parents=True, exist_ok=True)
        self._progress = open(self.layout.progress_file, "w", encoding="utf-8")  # noqa: SIM115 (lives with us)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self._stop.set)
        self._record("starting")
        code = 0
        try:
            await self._start_all()
            if self._stop.is_set():  # told to stop (subhive down, Ctrl-C) before every hive was ready
                raise SubhiveError(
                    "stopped before every hive was ready",
                    code="up.stopped",
                    hint="subhive down or a signal stopped it; run subhive up again",
                )
            self._record("ready")
            self.emit(
                "ready",
                f"all {len(self.hives)} hives ready in {time.monotonic() - self._started:.1f} s",
                seconds=round(time.monotonic() - self._started, 3),
                hives=sorted(self.hives),
            )
            await self._watch()
        except SubhiveError as exc:
            # The whole message (a server's log tail can run long) stays in the supervisor's log.
            log.error("start-up failed: %s", exc)
            lines = str(exc).splitlines()
            shown = "\n".join(lines[:1] + (["  ..."] if len(lines) > 7 else []) + lines[1:][-6:])
            # Every problem (all the manifests' at once), not only the first the message names.
            problems = [p.to_dict() for p in exc.problems] if len(exc.problems) > 1 else []
            self.emit("failed", shown, code=exc.code, hint=exc.hint or "", problems=problems)
            code = exc.exit_code
        except Exception as exc:  # a bug: still stop what was started, and say what happened
            log.exception("supervisor failed")
            self.emit("failed", f"internal error: {type(exc).__name__}: {exc}", code="up.internal")
            code = 70
        finally:
            await self._stop_all()
            self._record("stopped")
            self.emit("stopped", "every process stopped")
            self._progress.close()
        return code

    async def _start_all(self) -> None:
        self.workspace = open_workspace(self.layout.workspace)
        hives = _checked_hives(self.workspace)
        self._elsewhere = _elsewhere(self.workspace, hives)
        self._group({name: m for name, m in hives.items() if name not in self._elsewhere})
        self._snapshot, self._tree_stamp = Snapshot.read(self.workspace.root), tree_stamp(self.workspace.root)
        self._consumed = {name: _consumes(m) for name, m in hives.items()}
        await self._start_root()
        await self._negotiate(hives)
        if self._stop.is_set():
            return
        # Stubs are written in a thread while NATS starts and is provisioned, and the hosts go on starting: NATS
        # needs the lock, not the stubs, and its start and its (fsynced) consumers wait on the disk while codegen
        # uses a core (decision 0139). A failure of either is raised once both have ended.
        codegen = asyncio.ensure_future(asyncio.to_thread(self._codegen))
        try:
            self._issue_grpc_keys(hives)
            await self._start_nats(hives)
        except BaseException:
            with contextlib.suppress(Exception):
                await codegen  # its thread ends before anything is stopped
            raise
        await codegen
        await self._run_mocks(hives)  # before the hives: a consumer may call the moment it starts
        # Hives that run elsewhere (subhive join) got their identities, accounts, boards and keys above.
        await self._start_hives({name: m for name, m in hives.items() if name not in self._elsewhere})

    # -- root ---------------------------------------------------------------------------------------------

    async def _start_root(self, *, loopback: bool = False) -> None:
        """Start the root where ``[grpc]`` says (``loopback``: on 127.0.0.1 whatever it says, for a moment's
        negotiation), and keep the CA its clients verify it with."""
        port = self.options.root_port
        self.root = _Child(
            "root",
            [
                sys.executable,
                "-m",
                "subhive",
                "root",
                "--format",
                "json",
                "--no-codegen",
                "--port",
                str(port),
                "--http-port",
                "0",
                "-C",
                str(self.layout.workspace),
                *([] if loopback else self._root_listen()),
            ],
            _child_env(),
            self.layout.log_file("root"),
        )
        self.root_address = await self._launch_root(self.root)
        api = f"; HTTP API on {self.root_http}, console at {self.root_http}/console/" if self.root_http else ""
        self.emit(
            "root.started",
            f"root hive listening on {self.root_address}{api}",
            address=self.root_address,
            http=self.root_http,
        )

    def _root_listen(self) -> list[str]:
        """``subhive root``'s options for ``[grpc]`` (decision 0123): the interface, the advertised host and the
        certificate; the CA becomes every client's of the root here."""
        assert self.workspace is not None
        settings = self.workspace.config.grpc
        argv = ["--host", settings.listen]
        if settings.advertise is not None:
            argv += ["--advertise", settings.advertise]
        files = settings.files(self.layout.workspace)
        if files is not None:
            argv += ["--tls-cert", str(files[0]), "--tls-key", str(files[1])]
            self._root_ca = files[2]
        return argv

    async def _launch_root(self, child: _Child) -> str:
        """Start the root and read the address it prints; its errors (a port in use) become ours."""
        child.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(child.log_path, "ab") as err:
            child.log_offset = _mark_start(err, child.name)
            child.process = subprocess.Popen(
                child.argv,
                cwd=self.layout.workspace,
                env=child.env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=err,
                start_new_session=True,
            )
        child.started = time.monotonic()
        self._record()  # before its address: it may take a while, and `down` must find it meanwhile
        assert child.process.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(child.process.stdout.readline), 60)
        try:
            started = json.loads(line)
            address = started["address"]
            self.root_http = str(started.get("http") or "")
        except (ValueError, KeyError, TypeError, AttributeError):
            child.process.wait(5)
            raise SubhiveError(
                f"the root hive did not start: {_tail(child.log_path, since=child.log_offset)}",
                code="up.root_failed",
                hint=f"see {child.log_path}",
            ) from None
        return str(address)

    async def _negotiate(self, hives: dict[str, Any]) -> None:
        from ..root_hive import RootClient, admin_token_of
        from ..semver import Version

        assert self.workspace is not None
        providers = {contract: name for name, manifest in hives.items() for contract in manifest.provides}
        drafts: list[tuple[str, Version, Path]] = []
        for directory in sorted(self.workspace.contracts_dir.glob("*/*/contract.yaml")):
            name = directory.parent.parent.name
            with contextlib.suppress(ValueError):
                if name in providers:
                    drafts.append((name, Version.parse(directory.parent.name), directory.parent))
        async with RootClient(self.root_address, admin_token_of(self.layout.workspace), ca_file=self._root_ca) as root:
            known = {(c.name, str(v.version)) for c in await root.contracts() for v in c.versions}
            for name, version, directory in sorted(drafts, key=lambda d: (d[0], d[1])):
                if (name, str(version)) in known:
                    continue
                try:  # the root lints and checks it; a bad draft comes back as the error said below
                    outcome = await root.propose(directory, on_behalf_of=providers[name])
                except SubhiveError as exc:
                    self.emit(
                        "contract.refused",
                        f"{name} {version}: {exc}",
                        contract=name,
                        version=str(version),
                        code=exc.code,
                    )
                    continue
                self.emit(
                    f"contract.{outcome.status}",
                    f"{name} {version}: {outcome.status}"
                    + (f" ({outcome.message})" if outcome.status != "accepted" and outcome.message else ""),
                    contract=name,
                    version=str(version),
                )
            accepted = sorted(f"{c.name} {v.version}" for c in await root.contracts() for v in c.versions)
        await self._lock_written(set(accepted))
        self.emit(
            "negotiated",
            f"{len(accepted)} contract versions in the lock: {', '.join(accepted) or 'none'}",
            contracts=accepted,
        )

    async def _lock_written(self, accepted: set[str], timeout: float = 30.0) -> None:
        """Wait until contracts.lock on disk holds every accepted version: the root answers a proposal once
        its log is durable and writes the lock (after the contract's directory) in the background, while
        codegen and the bus plan read the lock from disk right after negotiation."""
        from ..root_hive import Lock

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(SubhiveError):  # unreadable: codegen says why, below
                if accepted <= {f"{e.name} {e.version}" for e in Lock.load(self.layout.workspace)}:
                    return
            await asyncio.sleep(0.02)

    def _codegen(self) -> None:
        from ..codegen import generate_stubs
        from ..errors import ContractInvalid

        assert self.workspace is not None
        result = generate_stubs(self.workspace)
        problems = [p for p in result.problems if p.code != "codegen.not_in_lock"]
        if problems:
            raise ContractInvalid(problems, summary=f"codegen failed: {problems[0].message}")
        self.emit(
            "codegen",
            f"stubs: {len(result.written)} files written, {len(result.unchanged)} packages up to date",
            written=len(result.written),
        )
        self._warn_tree()  # a requirement no version meets: its hive runs without those stubs, the rest too

    # -- NATS ---------------------------------------------------------------------------------------------

    async def _start_nats(self, hives: dict[str, Any]) -> None:
        from ..bus import ADMIN_USER, EmbeddedCluster, EmbeddedServer, ServerConfig, bus_plan, nkey_of
        from ..root_hive import Lock

        assert self.workspace is not None
        self._lock_seen = _lock_digest(self.layout.workspace)
        plan = bus_plan(self.workspace, Lock.load(self.layout.workspace))
        # One NKey per identity, each seed in its own owner-only file; the server's configuration holds only
        # public keys. A password file of an older release goes: those passwords open nothing any more.
        self.layout.creds_file.unlink(missing_ok=True)
        self._admin = nkey_of(self.layout.seed_file(ADMIN_USER))
        self._new_identities(list(hives))
        settings = self.workspace.config.nats
        if settings.external:
            await self._join_nats(plan, hives)
            return
        config = ServerConfig(
            self.layout.nats_dir,
            port=self.options.nats_port,
            accounts=self._accounts(plan, hives),
            sync_always=settings.sync == "always",
            max_file_store=_store_budget(self.layout.nats_dir),
            monitor=True,  # on loopback: `status` counts each hive's connections (a replica that joined, say)
        )
        if settings.clustered:
            if self.options.nats_port:
                raise SubhiveError(
                    f"--nats-port {self.options.nats_port} names one server, but hive.toml asks for a cluster of "
                    f"{settings.nodes} nodes",
                    code="up.nats_port_cluster",
                    hint="leave out --nats-port: each node of a cluster picks its own port",
                )
            self.nats = await EmbeddedCluster.start(config, nodes=settings.nodes, launched=self._nats_started)
            where = f"a {settings.nodes}-node cluster on {', '.join(self.nats.urls)}"
        else:
            self.nats = await EmbeddedServer.start(config, launched=self._nats_started)
            where = self.nats.url
        self._record()  # with every node's URL
        self.emit("nats.started", f"NATS: {where} (JetStream in {self.layout.nats_dir})", url=",".join(self.nats.urls))
        await self._provision(plan, hives, added=list(hives))

    def _nats_started(self, pid: int) -> None:
        """A nats-server process exists (at start, or a node restarted): recorded before it is even ready, since
        a cluster may take long to start and provisioning longer (a supervisor killed meanwhile orphaned it)."""
        if self.nats is None:
            self._nats_launched[pid] = process_start(pid)
        self._record()

    async def _join_nats(self, plan: Any, hives: dict[str, Any]) -> None:
        """``[nats] urls``: a cluster someone else runs, started, reloaded and stopped by its operator; it must
        hold this tree's accounts already (decision 0121), then the framework provisions as on its own servers."""
        from ._external import external_cluster

        assert self.workspace is not None
        if self.options.nats_port:
            raise SubhiveError(
                f"--nats-port {self.options.nats_port} names a server up starts, but hive.toml names a cluster it "
                "joins ([nats] urls)",
                code="up.nats_port_cluster",
                hint="leave out --nats-port",
            )
        self.nats = external_cluster(self.layout, self.workspace.config.nats)
        await self.nats.check(self._accounts(plan, hives), source=str(self.layout.workspace))
        urls = ",".join(self.nats.urls)
        self.emit("nats.joined", f"NATS: the cluster at {urls}, which down leaves running", url=urls, external=True)
        await self._provision(plan, hives, added=list(hives))
        self._record("starting")

    async def _provision(self, plan: Any, hives: dict[str, Any], *, added: list[str]) -> None:
        """Streams, dead-letter streams, the boards of ``added`` hives and every consumer, with the framework's
        admin connection (hives may create none); copies on every node of a cluster's three."""
        import nats

        from ..bus import (
            ensure_consumers,
            ensure_dead_letter_stream,
            ensure_dead_letter_streams,
            ensure_event_streams,
            jetstream_ready,
        )
        from ..hive import ensure_blackboard

        assert self.workspace is not None
        assert self.nats is not None
        replicas = self.workspace.config.nats.replicas
        nc = await nats.connect(**self._admin_endpoint().connect_options())
        try:
            await jetstream_ready(nc)
            # A loaded cluster answers JetStream's API slowly while it makes thousands of replicated objects: wait
            # longer than nats-py's 5 s for each answer.
            js = nc.jetstream(timeout=_PROVISION_API_TIMEOUT)
            # A cluster may refuse a replicated stream for a moment after it starts ("no suitable peers").
            for attempt in range(_PLACEMENT_TRIES):
                try:
                    await ensure_event_streams(js, plan.streams, replicas=replicas)
                    # Each hive's own dead-letter stream, with its limits (subhive.toml over hive.toml over defaults).
                    default = self.workspace.config.dead_letters
                    await ensure_dead_letter_streams(js, {}, default=default, replicas=replicas)  # the shared ones
                    # Hundreds of hives: many requests in flight at once, not one round trip after another.
                    await _bounded(
                        ensure_dead_letter_stream(js, name, m.dead_letters.over(default), replicas=replicas)
                        for name, m in sorted(hives.items())
                    )
                    # Each board with its controller's consumer.
                    await _bounded(ensure_blackboard(js, name, replicas=replicas) for name in added)
                    # Hives may not create consumers: the framework does. Thousands take minutes on a cluster:
                    # say how far it is, so that a follower sees progress, not silence.
                    consumers = list(plan.consumers)
                    for start in range(0, len(consumers), _CONSUMERS_A_STEP):
                        await ensure_consumers(js, consumers[start : start + _CONSUMERS_A_STEP])
                        if len(consumers) > _CONSUMERS_A_STEP:
                            done = min(start + _CONSUMERS_A_STEP, len(consumers))
                            self.emit(
                                "nats.provisioning",
                                f"NATS: {done} of {len(consumers)} consumers",
                                done=done,
                                total=len(consumers),
                            )
                    return
                except (nats.js.errors.APIError, nats.errors.TimeoutError):
                    # Every step is idempotent (what exists is left as it is): after a refusal or a slow answer
                    # on a cluster, provisioning starts again.
                    if attempt == _PLACEMENT_TRIES - 1 or replicas == 1:
                        raise
                    await asyncio.sleep(0.2)
        finally:
            await nc.close()

    def _accounts(self, plan: Any, hives: dict[str, Any]) -> Any:
        """One NATS user per hive, with the permissions the lock gives it (none yet: its own board only)."""
        from ._external import tree_accounts

        return tree_accounts(plan, hives, self._keys, self._admin)

    def _issue_grpc_keys(self, hives: dict[str, Any]) -> None:
        """Each hive's gRPC tokens, from the lock, in its own 0600 file (rewritten only when they change; a
        provider re-reads its file when it does)."""
        from ..root_hive import Lock
        from ..rpc import issue_keys, write_keys

        write_keys(self.layout.keys_dir, issue_keys(self._grpc_master, hives, Lock.load(self.layout.workspace)))

    # -- following the lock -------------------------------------------------------------------------------

    async def _follow_lock(self) -> bool:
        """When the lock changed (a contract accepted or approved while the tree runs) or the workspace did (a
        manifest edited, a hive added or removed, a new contract version): the root re-registers the manifests
        and negotiates, then new stubs, new NATS permissions (reloaded in place), new event streams, and a
        restart of only the hives whose stubs or manifest changed; new hives start, removed ones stop."""
        stamp = _lock_stamp(self.layout.workspace)  # 5 times a second: read and hash only what changed
        moved = stamp != self._lock_stamp
        change = await self._follow_tree(moved) if self.workspace is not None and self.nats is not None else None
        if not moved and change is None:
            return False
        self._lock_stamp = _lock_stamp(self.layout.workspace)  # the root may have rewritten it meanwhile
        digest = _lock_digest(self.layout.workspace)
        if (digest == self._lock_seen and change is None) or self.workspace is None or self.nats is None:
            return False
        self._lock_seen = digest

        from ..bus import bus_plan
        from ..codegen import generate_stubs
        from ..root_hive import Lock

        added = change.added if change is not None else []
        try:
            result = generate_stubs(self.workspace)
            problems = [p for p in result.problems if p.code != "codegen.not_in_lock"]  # those run without
            if problems:
                raise SubhiveError(problems[0].message, code=problems[0].code, hint=problems[0].hint)
            hives = {
                name: m
                for name, m in self.workspace.hives().hives.items()
                if name in self.hives or name in added or name in self._elsewhere
            }
            self._new_identities(added)
            plan = bus_plan(self.workspace, Lock.load(self.layout.workspace))
            await self.nats.reload(self._accounts(plan, hives))
            self._issue_grpc_keys(hives)  # a new consumer: its provider lets it in without a restart
            # New streams and a new hive's board; a new consumer's durables; a manifest's changed limits.
            await self._provision(plan, hives, added=added)
        except SubhiveError as exc:
            self.emit(
                "lock.failed",
                f"the tree could not follow the change: {exc}",
                code=exc.code,
                hint=exc.hint or "fix it; up follows the next change (or: subhive down && subhive up)",
            )
            return False
        stubs = {p.split("/")[1] for p in result.written + result.removed if p.startswith("stubs/")}
        edited = set(change.edited) if change is not None else set()
        failed = {name for name, child in self.hives.items() if child.failed}
        touched = sorted((stubs | edited | failed) & set(self.hives) - set(added))
        await self._apply_change(change, hives, touched)
        await self._run_mocks(dict(self.workspace.hives().hives))
        self.emit(
            "lock.followed",
            "the tree follows the change: stubs and permissions are up to date"
            + (f"; restarted {', '.join(touched)}" if touched else "; no running hive's stubs changed"),
            restarted=touched,
            started=added,
            stopped=change.removed if change is not None else [],
        )
        self._warn_tree()
        return True

    async def _apply_change(self, change: TreeChange | None, hives: dict[str, Any], touched: list[str]) -> None:
        """Stop removed hives, restart the touched ones, start new ones (providers first), in that order."""
        for name in change.removed if change is not None else []:
            child = self.hives.pop(name, None)
            self._consumed.pop(name, None)
            self._host_of.pop(name, None)
            if child is not None and child.process is not None:
                await _terminate([child.process], self.options.stop_timeout)
            if child is not None and child.host is not None and child.host.idle:  # its last hive: free the memory
                await asyncio.to_thread(child.host.stop, self.options.stop_timeout)
            self.emit("hive.removed", f"{name}: its directory is gone; stopped", hive=name)
        for name in touched:
            await self._restart(self.hives[name])
            self._consumed[name] = _consumes(hives[name])
        added = {name: hives[name] for name in change.added} if change is not None else {}
        deadline = time.monotonic() + self.options.ready_timeout
        for wave in start_waves(added) if added else []:
            try:
                await self._start_wave(wave, deadline)
            except SubhiveError as exc:  # the rest of the tree runs on; the watch loop restarts it
                self.emit("hive.failed", str(exc), code=exc.code, hint=exc.hint or "")
            self._consumed.update({name: _consumes(added[name]) for name in wave})

    async def _follow_tree(self, lock_moved: bool) -> TreeChange | None:
        """Once a second, or when the lock moved and a change waits for it: what changed in the workspace (once
        its files have settled: :meth:`_stamp_to_follow`), once the root has registered it and proposed new
        contract versions; None when there is nothing to follow, or when the change is refused (said once, with
        the command that makes it work)."""
        from ..root_hive import Lock, RootClient, admin_token_of

        assert self.workspace is not None
        root = self.workspace.root
        stamp = self._stamp_to_follow(lock_moved)
        if stamp is None:
            return None
        self._tree_stamp = stamp
        self._warn_tree()  # an accepted version edited in place is said here, whatever else changed
        snapshot = Snapshot.read(root)
        change = snapshot.change_from(self._snapshot)
        if not change:  # e.g. a refused edit undone: nothing waits any more
            if self._tree_refused:
                self.emit("tree.restored", "the refused change is undone: the tree runs as it did")
            self._tree_refused, self._refusal = False, frozenset()
            return None
        tree = self.workspace.hives()
        refusal = list(tree.problems)
        try:
            if not refusal:
                async with RootClient(self.root_address, admin_token_of(root), ca_file=self._root_ca) as client:
                    pending: dict[str, list[str]] = {}
                    for approval in await client.approvals("pending", kind="contract"):
                        pending.setdefault(approval.contract, []).append(approval.id)
                refusal = refused_requirements(
                    tree.hives, {n: self._consumed.get(n, {}) for n in self.hives}, Lock.load(root), pending
                )
            if not refusal:
                await self._negotiate(dict(tree.hives))  # the root registers the manifests as they are now
                await self._lock_settled()
        except SubhiveError as exc:  # the root is restarting, say: look again in a second
            log.warning("the workspace changed, but the root could not be asked yet: %s", exc)
            self._tree_stamp = ()
            self._settle.wait_again(stamp, time.monotonic())  # settled already: asked again in TREE_SETTLE
            return None
        if refusal:
            self._tree_refused = True
            said = self._refusal
            self._refusal = frozenset(p.message for p in refusal)
            for problem in refusal:  # each problem once, not at every look: every one, each where it is
                if problem.message not in said:
                    self.emit(
                        "tree.refused",
                        problem.message,
                        code=problem.code,
                        hint=problem.hint or "",
                        where=str(problem.location),
                    )
            return None
        self._tree_refused, self._refusal = False, frozenset()
        self._snapshot = snapshot
        self.emit(
            "tree.changed",
            f"the workspace changed ({change.describe()}): up follows it",
            added=change.added,
            removed=change.removed,
            edited=change.edited,
            contracts=change.contracts,
        )
        return change

    def _stamp_to_follow(self, lock_moved: bool) -> Stamp | None:
        """The workspace's stamp when there is a change to follow now; None when it is not time to look, nothing
        changed, or what changed is still changing (decision 0135: the first look that finds a change says so,
        ``tree.settling``). A refused change is looked at again when the lock moved."""
        assert self.workspace is not None
        self._ticks += 1
        every = max(5, round(5 * len(self.hives) / TREE_LOOKS_PER_SECOND))  # in ticks of _POLL (0.2 s)
        now = time.monotonic()
        again = lock_moved and self._tree_refused
        if self._ticks % every and not again and not self._settle.due(now):
            return None
        stamp = tree_stamp(self.workspace.root)
        if stamp == self._tree_stamp:
            self._settle.reset()  # a change undone before it settled
            return stamp if again else None
        seen = self._settle.see(stamp, now)
        if seen == "new":
            paths = sorted({p for p, *_ in set(stamp) ^ set(self._tree_stamp)})
            shown = [os.path.relpath(p, self.layout.workspace) for p in paths]
            more = f" and {len(shown) - 3} more" if len(shown) > 3 else ""
            self.emit(
                "tree.settling",
                f"the workspace is changing ({', '.join(shown[:3])}{more}): up follows once its files have stayed "
                f"as they are for {TREE_SETTLE:g} s",
                paths=shown[:20],
                seconds=TREE_SETTLE,
            )
        return stamp if seen == "settled" else None

    async def _lock_settled(self, timeout: float = 30.0) -> None:
        """Wait until contracts.lock on disk says what the root says: who consumes which version."""
        from ..root_hive import Lock, RootClient, admin_token_of

        async with RootClient(
            self.root_address, admin_token_of(self.layout.workspace), ca_file=self._root_ca
        ) as client:
            wanted = {(c.name, str(v.version)): dict(v.consumers) for c in await client.contracts() for v in c.versions}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(SubhiveError):
                if {(e.name, str(e.version)): dict(e.consumers) for e in Lock.load(self.layout.workspace)} == wanted:
                    return
            await asyncio.sleep(0.02)

    def _new_identities(self, names: list[str]) -> None:
        """The NKey of each hive in ``names`` that has none yet (its seed made, owner-only, on first use)."""
        from ..bus import nkey_of

        for name in names:
            if name not in self._keys:
                self._keys[name] = nkey_of(self.layout.seed_file(name))

    def _nats_ca_env(self) -> dict[str, str]:
        """``SUBHIVE_NATS_CA`` for the processes up starts, when the cluster it joined has a CA of its own."""
        ca = getattr(self.nats, "tls_ca", None)
        return {"SUBHIVE_NATS_CA": str(ca)} if ca is not None else {}

    def _admin_endpoint(self) -> Any:
        """NATS as the framework (the admin NKey)."""
        from ..bus import ADMIN_USER

        assert self.nats is not None
        return self.nats.endpoint(nkey_seed=self.layout.seed_file(ADMIN_USER))

    def _warn_tree(self) -> None:
        """Say each problem of the tree once (up's progress): requirements no version meets, events no one
        publishes, accepted versions edited in place (docs/up.md)."""
        from ..codegen import check_tree

        assert self.workspace is not None
        try:
            problems = check_tree(self.workspace)
        except SubhiveError as exc:
            problems = list(exc.problems)
        self._warned &= {(p.code, p.message) for p in problems}  # one that went and came back is said again
        for p in problems:
            if (p.code, p.message) not in self._warned:
                self._warned.add((p.code, p.message))
                self.emit("tree.warning", p.message, code=p.code, hint=p.hint or "", where=str(p.location))

    async def _run_mocks(self, hives: dict[str, Any]) -> None:
        """Serve a mock provider for each contract major a hive consumes whose provider is no hive of this
        workspace (docs/up.md): consumers build against it until the provider exists. Restarted when that set
        changes; stopped when it is empty."""
        from ..bus import ADMIN_USER
        from ..codegen import plan_stubs
        from ..root_hive import Lock
        from ._mocks import mocked_packages

        assert self.workspace is not None
        assert self.nats is not None
        mocked = mocked_packages(plan_stubs(self.workspace, Lock.load(self.workspace.root)), hives)
        if mocked == self._mocked:
            return
        self._mocked = mocked
        if self.mocks is not None and self.mocks.process is not None:
            await _terminate([self.mocks.process], self.options.stop_timeout)
        self.mocks = None
        if not mocked:
            return
        status = self.layout.up_dir / "mocks.json"
        status.unlink(missing_ok=True)
        env = _child_env(
            SUBHIVE_NATS_URL=",".join(self.nats.urls),
            SUBHIVE_NATS_NKEY=str(self.layout.seed_file(ADMIN_USER)),
            SUBHIVE_STATUS_FILE=str(status),
            **self._nats_ca_env(),
        )
        self.mocks = _Child(
            "mocks",
            [
                sys.executable,
                "-m",
                "subhive.up._mocks",
                "--workspace",
                str(self.layout.workspace),
                *sorted(mocked.values()),
            ],
            env,
            self.layout.log_file("mocks"),
        )
        self.mocks.launch(self.layout.workspace)
        self._record()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and self.mocks.pid is not None:
            if (read_json(status) or {}).get("pid") == self.mocks.pid:
                break
            await asyncio.sleep(0.05)
        self.emit(
            "mocks.started",
            f"mock providers serve {', '.join(sorted(mocked))}: no hive of this workspace "
            "provides them (they answer with schema-valid data until one does)",
            mocked=sorted(mocked),
            pid=self.mocks.pid,
        )

    async def _restart(self, child: _Child) -> None:
        if child.process is not None:
            await _terminate([child.process], self.options.stop_timeout)
        child.failed, child.quick_exits = "", 0  # what it failed on may be what changed
        child.launch(self.layout.workspace)
        self._record()
        self.emit(
            "hive.reloaded",
            f"{child.name}: restarted on its new stubs (pid {child.pid})",
            hive=child.name,
            pid=child.pid,
        )

    # -- hives --------------------------------------------------------------------------------------------

    def _group(self, hives: dict[str, Any]) -> None:
        """Which hives share a host process (decision 0117); the hosts start now, one after the other, so that
        their imports run while the root negotiates, codegen writes stubs and NATS starts (their hives come
        later, on stdin)."""
        assert self.workspace is not None
        per_process = self.workspace.config.up.per_process(len(hives))
        for host, names in group_hives({name: m.parent for name, m in hives.items()}, per_process).items():
            self._host_of.update(dict.fromkeys(names, host))
        if per_process > 1:
            hosts = sorted(set(self._host_of.values()))
            self._hosts_starting = asyncio.create_task(self._start_hosts(hosts))
            self.emit(
                "hives.grouped",
                f"{len(hives)} hives in {len(hosts)} processes, up to {per_process} siblings each",
                per_process=per_process,
            )

    async def _start_hosts(self, names: list[str]) -> None:
        """Start the host processes one after the other, each once the one before has imported (or after
        :data:`HOST_IMPORT_WAIT`), while the root starts, contracts are negotiated and codegen runs (decision
        0139): thirty hosts importing at once took every core from the root and codegen, which the tree waits
        for; one at a time, they are done before their hives are handed to them. A hive whose host has not
        started yet starts it itself (:meth:`Host.start_hive`)."""
        for name in names:
            if self._stop.is_set():
                return
            host = self._host(name)
            host.ensure_running()
            self._record()  # `down` finds it if this process is killed
            deadline = time.monotonic() + HOST_IMPORT_WAIT
            while not host.listening.is_set() and host.pid is not None and time.monotonic() < deadline:
                await asyncio.sleep(0.05)

    async def _start_hives(self, hives: dict[str, Any]) -> None:
        # Providers first: a consumer's experts may call a contract the moment they start (work left on the
        # board from the last run), and a provider that is not there yet would only cost them a retry.
        deadline = time.monotonic() + self.options.ready_timeout  # for all waves together, as --help says
        for wave in start_waves(hives):
            await self._start_wave(wave, deadline)
            if self._stop.is_set():
                return

    async def _start_wave(self, wave: list[str], deadline: float) -> None:
        from ..root_hive import TOKENS_DIR

        for name in wave:
            status = self.layout.status_file(name)
            status.unlink(missing_ok=True)
            token_file = self.layout.workspace / TOKENS_DIR / f"{name}.token"
            token = token_file.read_text(encoding="utf-8").strip() if token_file.exists() else ""
            secrets = {
                "nkey": str(self.layout.seed_file(name)),  # its own seed, no other
                "token": token,
                "status": str(status),
                "grpc_keys": str(self.layout.keys_dir / f"{name}.json"),
                # Where to connect: a host may have started before NATS did.
                "nats_url": ",".join(self.nats.urls),
                "root": self.root_address,
                "failover": str(self.workspace.config.nats.failover_seconds if self.workspace else 0),
                **({"nats_ca": ca} if (ca := self._nats_ca_env().get("SUBHIVE_NATS_CA")) else {}),
            }
            child = _Child(
                name,
                [sys.executable, "-m", "subhive.hive", "--workspace", str(self.layout.workspace), "--hive", name],
                self._hive_env(
                    SUBHIVE_NATS_NKEY=secrets["nkey"],
                    SUBHIVE_TOKEN=token,
                    SUBHIVE_STATUS_FILE=secrets["status"],
                    SUBHIVE_GRPC_KEYS=secrets["grpc_keys"],
                ),
                self.layout.log_file(name),
                host=self._host_for(name),
                secrets=secrets,
            )
            self.hives[name] = child
            child.launch(self.layout.workspace)
        # Recorded before anyone hears of them: a supervisor killed right after (an OOM killer) leaves pids that
        # `up` and `down` can stop.
        self._record()
        for name in wave:
            child = self.hives[name]
            self.emit("hive.starting", f"{name}: starting (pid {child.pid})", hive=name, pid=child.pid)
        waiting = set(wave)
        while waiting:
            if self._stop.is_set():
                return
            for name in sorted(waiting):
                child = self.hives[name]
                assert child.process is not None
                code = child.process.poll()
                if code is not None:
                    raise SubhiveError(
                        f"sub-hive {name} exited with code {code} while starting: "
                        f"{_tail(child.log_path, since=child.log_offset)}",
                        code="up.hive_failed",
                        location=Location(file=str(child.log_path)),
                        hint=f"fix what its log says, then run subhive up again ({child.log_path})",
                    )
                heartbeat = read_json(self.layout.status_file(name))
                if heartbeat and heartbeat.get("state") == "ready" and heartbeat.get("pid") == child.pid:
                    waiting.discard(name)
                    self.emit("hive.ready", f"{name}: ready", hive=name, pid=child.pid)
            if time.monotonic() > deadline:
                raise SubhiveError(
                    f"sub-hives not ready after {self.options.ready_timeout:g} s: {', '.join(sorted(waiting))}",
                    code="up.timeout",
                    hint="see their logs: subhive logs HIVE",
                )
            # Each look reads every waiting hive's heartbeat: for hundreds of hives, look less often.
            await asyncio.sleep(0.05 if len(waiting) < 50 else 0.25)

    def _hive_env(self, **secrets: str) -> dict[str, str]:
        """A hive process's environment: where to connect, and (for a process of one hive) its secrets."""
        return _child_env(
            SUBHIVE_NATS_URL=",".join(self.nats.urls),
            SUBHIVE_NATS_FAILOVER=str(self.workspace.config.nats.failover_seconds if self.workspace else 0),
            SUBHIVE_ROOT=self.root_address,
            **self._nats_ca_env(),
            **secrets,
        )

    def _host_for(self, hive: str) -> Host | None:
        """The host process ``hive`` runs in (made on first use), or None when it runs in its own process. A
        hive added while the tree runs joins a host of its siblings that has room, or a new one."""
        assert self.workspace is not None
        name = self._host_of.get(hive)
        if name is None and hive not in self.hives:
            per_process = self.workspace.config.up.per_process(len(self._host_of) + len(self.hives) + 1)
            manifest = self.workspace.hives().hives.get(hive)
            if per_process <= 1 or manifest is None:
                return None
            taken = {h: list(self._host_of.values()).count(h) for h in set(self._host_of.values())}
            n = 1
            while taken.get(f"host.{manifest.parent}.{n}", 0) >= per_process:
                n += 1
            name = self._host_of[hive] = f"host.{manifest.parent}.{n}"
        return None if name is None else self._host(name)

    def _host(self, name: str) -> Host:
        if name not in self.hosts:
            self.hosts[name] = Host(
                name,
                [sys.executable, "-m", "subhive.hive", "--workspace", str(self.layout.workspace), "--host", name],
                _child_env(),  # addresses and secrets come with each hive's start, on its stdin
                self.layout.log_file(name),
                self.layout.workspace,
            )
        return self.hosts[name]

    async def _watch(self) -> None:
        """Restart what exits, until told to stop."""
        while not self._stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), _POLL)
            if self._stop.is_set():
                return
            now = time.monotonic()
            changed = False
            for child in self.hives.values():
                changed |= self._tend(child, now)
            if self.mocks is not None:
                changed |= self._tend(self.mocks, now)
            if changed:  # a restarted hive is recorded now, not after following a change that may take a while
                self._record()
            if self.root is not None and self.root.process is not None and self.root.process.poll() is not None:
                code = self.root.process.returncode
                self.emit("root.crashed", f"the root hive exited with code {code}; restarting", code=code)
                port = self.root_address.rsplit(":", 1)[-1]
                self.root.argv[self.root.argv.index("--port") + 1] = port  # same address: hives keep using it
                if self.root_http:  # and the same URL for a person's open console
                    self.root.argv[self.root.argv.index("--http-port") + 1] = self.root_http.rsplit(":", 1)[-1]
                self.root.restarts += 1
                self.root_address = await self._launch_root(self.root)
                self.emit(
                    "root.restarted",
                    f"the root hive is back on {self.root_address} (restart {self.root.restarts})",
                    address=self.root_address,
                    restarts=self.root.restarts,
                )
                changed = True
            if self.nats is not None and not self.nats.running:
                # One server, or the nodes of a cluster that died (the others kept serving meanwhile).
                self.emit("nats.crashed", "NATS exited; restarting on the same port with the same store")
                await self.nats.restart()
                urls = ",".join(self.nats.urls)
                self.emit("nats.restarted", f"NATS is back on {urls}", url=urls)
                changed = True
            changed |= await self._follow_lock()
            await self._check_dead_letters(now)
            changed |= await self._serve_requests()
            if changed:
                self._record()

    def _tend(self, child: _Child, now: float) -> bool:
        if child.failed:
            if child.process is None:
                return False
            child.failed, child.quick_exits = "", 0  # started again (subhive restart): watched as any other
        process = child.process
        if process is not None and process.poll() is None:
            if now - child.started > HEALTHY_AFTER:
                child.backoff = BACKOFF_FIRST
            return False
        if process is not None:
            code = process.poll()
            assert code is not None
            child.exits.append(code)
            child.process = None
            child.next_start = now + child.backoff
            tail = _tail(child.log_path, 3, since=child.log_offset)
            same = len(child.exits) < 2 or child.exits[-2] == code
            child.quick_exits = child.quick_exits + 1 if now - child.started < QUICK_EXIT and same else 0
            if child.quick_exits >= SAME_FAILURES:
                # Restarting it again would fail again: stop, and say what to fix (a crash loop helps no one).
                child.failed = (
                    f"exited {child.quick_exits} times in a row with code {code}, each within "
                    f"{QUICK_EXIT:g} s of its start"
                )
                self.emit(
                    "hive.stopped",
                    f"{child.name}: {child.failed}; stopped, not restarted again; its log ends: {tail}",
                    hive=child.name,
                    code=code,
                    tail=tail,
                    hint=f"fix what its log says (subhive logs {child.name}), then: subhive restart "
                    f"{child.name} (up also starts it again with the next change to the workspace)",
                )
                return True
            self.emit(
                "hive.crashed",
                f"{child.name}: exited with code {code}; restarting in {child.backoff:g} s; its log ends: {tail}",
                hive=child.name,
                code=code,
                backoff=child.backoff,
                tail=tail,
            )
            child.backoff = min(child.backoff * 2, BACKOFF_MAX)
            return True
        if now >= child.next_start:
            child.restarts += 1
            child.launch(self.layout.workspace)
            self.emit(
                "hive.restarted",
                f"{child.name}: restarted (pid {child.pid}, restart {child.restarts})",
                hive=child.name,
                pid=child.pid,
                restarts=child.restarts,
            )
            return True
        return False

    # -- requests (subhive restart) -----------------------------------------------------------------------

    async def _serve_requests(self) -> bool:
        """Restart the hives `subhive restart` asked for, and answer the requests whose hive is back (or not)."""
        from ._restart import take_requests

        changed = False
        for request in take_requests(self.layout.workspace):
            child = self.hives.get(str(request.get("hive")))
            if child is None or request.get("action") != "restart":
                self.emit(
                    "hive.restart_failed",
                    f"no hive {request.get('hive')!r} to restart",
                    hive=request.get("hive"),
                    request=request.get("id"),
                )
                continue
            if child.process is not None:
                await _terminate([child.process], self.options.stop_timeout)
            self.layout.status_file(child.name).unlink(missing_ok=True)
            child.launch(self.layout.workspace)
            self._record()
            child.backoff, child.request = BACKOFF_FIRST, str(request.get("id"))
            self.emit(
                "hive.restarting",
                f"{child.name}: restarted on request (pid {child.pid})",
                hive=child.name,
                pid=child.pid,
                request=child.request,
            )
            changed = True
        for child in self.hives.values():
            if child.request is None:
                continue
            if child.process is None or child.process.poll() is not None:  # it exited again: say why
                code = child.process.poll() if child.process is not None else (child.exits[-1] if child.exits else None)
                tail = _tail(child.log_path, since=child.log_offset)
                self.emit(
                    "hive.restart_failed",
                    f"{child.name} exited with code {code} after its restart: {tail}",
                    hive=child.name,
                    request=child.request,
                    tail=tail,
                )
                child.request = None
                continue
            beat = read_json(self.layout.status_file(child.name))
            if beat and beat.get("state") == "ready" and beat.get("pid") == child.pid:
                self.emit("hive.ready", f"{child.name}: ready", hive=child.name, pid=child.pid, request=child.request)
                child.request = None
        return changed

    async def _check_dead_letters(self, now: float) -> None:
        """Every few seconds: say when a hive's dead letters rise to near full or full
        (``deadletters.near_full``, ``deadletters.full``; ``subhive status`` shows the same)."""
        if self.nats is None or now < self._dlq_next:
            return
        from ..bus import DeadLetters, FullnessAlarm

        self._dlq_alarm = self._dlq_alarm or FullnessAlarm()
        try:
            nc = await self._admin_endpoint().connect_once(timeout=2)
            try:
                usages = await DeadLetters(nc).usage()
            finally:
                await nc.close()
        except Exception:  # NATS restarting or busy: the next check says it
            self._dlq_next = now + DLQ_CHECK
            return
        # Soon again while dead letters come in; further apart while they stay as they are.
        self._dlq_every = DLQ_CHECK if usages != self._dlq_seen else min(self._dlq_every * 2, DLQ_CHECK_MAX)
        self._dlq_seen, self._dlq_next = usages, now + self._dlq_every
        for usage in self._dlq_alarm.rises(usages):
            self.emit(
                f"deadletters.{usage.level}",
                usage.warning() or "",
                hive=usage.hive,
                bytes=usage.bytes,
                max_bytes=usage.max_bytes,
                messages=usage.messages,
            )

    # -- stopping -----------------------------------------------------------------------------------------

    async def _stop_all(self) -> None:
        if self._hosts_starting is not None:  # no host starts once stopping began
            self._hosts_starting.cancel()
            # A host that could not start says so when its first hive starts it; stopping goes on regardless.
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._hosts_starting
        await _terminate(
            [c.process for c in [*self.hives.values(), *([self.mocks] if self.mocks else [])] if c.process is not None],
            self.options.stop_timeout,
        )
        # Their hives have stopped (or their host was killed): what is left of each host exits on SIGTERM.
        await asyncio.gather(*(asyncio.to_thread(h.stop, self.options.stop_timeout) for h in self.hosts.values()))
        if self.root is not None and self.root.process is not None:
            await _terminate([self.root.process], self.options.stop_timeout)
        if self.nats is not None:
            await self.nats.stop()


async def _bounded(calls: Iterable[Coroutine[Any, Any, Any]], at_once: int = PROVISION_AT_ONCE) -> None:
    """Await ``calls``, up to ``at_once`` at a time; the first failure is raised once the others ended."""
    await bounded(calls, at_once)


async def _terminate(processes: list[subprocess.Popen[bytes] | HostedRun], timeout: float) -> None:
    """SIGTERM all, wait up to ``timeout`` together, SIGKILL what is left, reap everything."""
    for process in processes:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
    deadline = time.monotonic() + timeout
    while any(p.poll() is None for p in processes) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    for process in processes:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(5)


def _lock_stamp(workspace: Path) -> tuple[int, int]:
    from ..root_hive import LOCK_FILE

    try:
        info = (workspace / LOCK_FILE).stat()
    except OSError:
        return (0, 0)
    return (info.st_mtime_ns, info.st_size)


def _lock_digest(workspace: Path) -> bytes:
    from ..root_hive import LOCK_FILE

    try:
        return hashlib.sha256((workspace / LOCK_FILE).read_bytes()).digest()
    except OSError:
        return b""


def start_waves(hives: dict[str, Any]) -> list[list[str]]:
    """Hives in the order to start them: each wave after the providers of what it consumes; hives that
    consume each other (a cycle through contracts) start together in the last wave.

    >>> class M:
    ...     def __init__(self, provides, consumes): self.provides, self.consumes = provides, consumes
    >>> class R:
    ...     def __init__(self, contract): self.contract = contract
    >>> start_waves({"ui": M((), (R("api"),)), "api": M(("api",), (R("db"),)), "db": M(("db",), ())})
    [['db'], ['api'], ['ui']]
    """
    provider = {contract: name for name, manifest in hives.items() for contract in manifest.provides}
    needs = {
        name: {provider[r.contract] for r in manifest.consumes if r.contract in provider} - {name}
        for name, manifest in hives.items()
    }
    waves: list[list[str]] = []
    started: set[str] = set()
    while len(started) < len(hives):
        wave = sorted(name for name in hives if name not in started and needs[name] <= started)
        if not wave:
            wave = sorted(set(hives) - started)
        waves.append(wave)
        started.update(wave)
    return waves


def _store_budget(store: Path) -> int:
    """JetStream's storage budget: the size of the disk the store is on (decision 0119). Each hive's board and
    dead letters reserve their ``max_bytes`` against it; with nats-server's default (75% of what is free) a
    few hundred hives' limits, ceilings that they hardly ever reach, already exceed it and the next hive's
    streams are refused."""
    store.mkdir(parents=True, exist_ok=True)
    disk = os.statvfs(store)
    return disk.f_blocks * disk.f_frsize


def _consumes(manifest: Any) -> dict[str, str]:
    return {need.contract: str(need.versions) for need in manifest.consumes}


def _elsewhere(workspace: Workspace, hives: dict[str, Any]) -> list[str]:
    """The hives ``[up] elsewhere`` names; ``up.unknown_hive`` for a name the tree does not have."""
    names = list(workspace.config.up.elsewhere)
    for name in names:
        if name not in hives:
            raise InputError(
                f"[up] elsewhere names {name!r}, which is no hive of this workspace "
                f"(it has: {', '.join(sorted(hives))})",
                code="up.unknown_hive",
                location=Location(file=str(workspace.root / "hive.toml"), pointer="/up/elsewhere"),
                hint="name hives of subhives/ that run on other machines (subhive join)",
            )
    return sorted(names)


def _checked_hives(workspace: Workspace) -> dict[str, Any]:
    from ..errors import ContractInvalid

    tree = workspace.hives()
    if tree.problems:
        error = ContractInvalid(
            tree.problems,
            summary=f"the hive tree has {len(tree.problems)} problem(s), first: {tree.problems[0].message}",
        )
        # `up` reports one code: the first problem's (hive.parent_cycle, ...), not the generic contract.invalid
        # that ContractInvalid takes for more than one problem.
        error.code = tree.problems[0].code
        raise error
    if not tree.hives:
        raise InputError(
            f"the workspace {workspace.root} has no sub-hives to run",
            code="up.no_hives",
            location=Location(file=str(workspace.hives_dir)),
            hint="add one: subhive new NAME --kind ui|backend|db|custom",
        )
    return dict(tree.hives)


def _child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SUBHIVE_")}
    env.update(extra)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _mark_start(log_file: IO[bytes], name: str) -> int:
    """Write a line saying a run of ``name`` starts, and return where its output begins in the log."""
    log_file.write(f"--- {name} started at {time.strftime('%Y-%m-%d %H:%M:%S')} ---\n".encode())
    log_file.flush()
    return log_file.tell()


def _tail(path: Path, lines: int = 6, *, since: int = 0) -> str:
    """The last ``lines`` lines a run wrote to its log (from ``since``, where that run's output begins)."""
    try:
        with open(path, "rb") as log_file:
            log_file.seek(since)
            text = log_file.read().decode("utf-8", errors="replace").strip().splitlines()
    except OSError:
        return "(no log)"
    return " | ".join(line.strip() for line in text[-lines:]) or "(nothing in its log)"
