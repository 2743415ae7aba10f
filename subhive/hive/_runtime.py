"""A running sub-hive: its blackboard, its controller, its contracts on the bus, its gRPC services.
``subhive up`` runs each hive as its own process (``python -m subhive.hive``), which builds a
:class:`HiveRuntime`; tests build one in-process the same way. See docs/hives.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import time
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from .._files import write_json
from ..bus import BusEndpoint, Failure, NatsTransport, kv_bucket, propose_repair
from ..errors import InputError, Location
from ..runtime import ContractBinding
from ..telemetry import TRACING, HiveCollector, MetricsServer, configure_tracing, serve_metrics, shutdown_tracing
from ..workspace import open_workspace
from ._blackboard import KvBlackboard
from ._board_schema import BoardSchema
from ._controller import Controller, ControllerConfig, Escalation
from ._knowledge import Entry
from ._repairs import RepairHandoff
from ._sources import GrpcService, check_members, load_bindings, load_knowledge

__all__ = ["HiveContext", "HiveRuntime"]

log = logging.getLogger("subhive.hive")
HEARTBEAT = 1.0
#: At rest the heartbeat file is rewritten only this often (``subhive status`` calls a hive unresponsive after
#: 15 s without one): hundreds of idle hives must not each write a file and ask NATS for their board's size
#: every second (docs/decisions/0118-idle-hives-stay-idle.md).
KEEPALIVE = 5.0
#: Message rates are averaged over this many heartbeats.
RATE_WINDOW = 10


@dataclass
class HiveContext:
    """What a knowledge source gets as its ``blackboard`` argument: reads of its own board, and the ways out
    of the hive (the bus transport for generated clients, the root, gRPC channels to providers)."""

    hive: str
    board: KvBlackboard
    transport: NatsTransport
    root: Any = None
    #: The hive's gRPC credentials (``subhive.rpc.GrpcKeys`` or ``KeyFile``): sent on every call it makes.
    keys: Any = None
    #: The CA that signed the providers' certificates, when they serve TLS (``[grpc] ca``).
    ca_file: Path | None = None
    _channels: dict[tuple[str, int], Any] = field(default_factory=dict)

    async def get(self, key: str) -> Entry | None:
        return await self.board.get(key)

    async def history(self, key: str) -> list[Entry]:
        return await self.board.history(key)

    async def channel(self, contract: str, major: int) -> Any:
        """A gRPC channel to ``contract`` v``major``'s provider, found through the root and kept."""
        from ..rpc import connect_grpc

        if (contract, major) not in self._channels:
            if self.root is None:
                raise InputError(
                    f"{self.hive} has no root to find {contract} v{major} through",
                    code="rpc.no_root",
                    hint="run the hive under `subhive up`",
                )
            self._channels[(contract, major)] = await connect_grpc(
                self.root, contract, major, keys=self.keys, ca_file=self.ca_file
            )
        return self._channels[(contract, major)]

    async def close(self) -> None:
        for channel in self._channels.values():
            with contextlib.suppress(Exception):
                await channel.close()
        self._channels.clear()


class HiveRuntime:
    """One sub-hive, running. Build it with :meth:`start`; :meth:`stop` undoes everything it started.

    Start-up order matters for "nothing lost": the board and the controller first (so a request's writes have
    somewhere to go), then the provided contracts, then the consumed events, then gRPC; the heartbeat file
    says ``ready`` only after all of it.

        runtime = await HiveRuntime.start(workspace_root, "backend", endpoint, root_address=addr, token=tok)
        ...
        await runtime.stop()
    """

    def __init__(self, hive: str) -> None:
        self.hive = hive
        self.state = "starting"
        self.started = time.time()
        self.transport: NatsTransport | None = None
        self.board: KvBlackboard | None = None
        self.controller: Controller | None = None
        self.context: HiveContext | None = None
        self.bindings: list[ContractBinding] = []
        self._root: Any = None
        self._keys: Any = None
        self._subscriptions: list[Any] = []
        self._grpc: list[Any] = []
        self._beating = asyncio.Lock()  # one beat at a time; stop() waits for the one under way
        self._written = 0.0  # when the heartbeat file was last written or touched (time.monotonic)
        self._transport_options: dict[str, float] = {}
        self._status_file: Path | None = None
        #: Set when the hive declares an agent with ``repairs = true`` and has a root (decision 0053).
        self.repairs: RepairHandoff | None = None
        self.endpoints: list[str] = []
        #: What crossed the hive's boundary, by kind and contract member: "answered notes_api.create_note".
        self.flows: Counter[str] = Counter()
        self._samples: deque[tuple[float, int, int]] = deque(maxlen=RATE_WINDOW + 1)
        #: What the last heartbeat file said, in short (see _fingerprint), and the board's size then.
        self._last_beat: tuple[Any, ...] = ()
        self._board_size: dict[str, int] | None = None
        #: The hive's Prometheus endpoint (docs/observability.md#metrics), when it serves one.
        self.metrics: MetricsServer | None = None
        self._metrics_address: str | None = None
        #: Where its gRPC servers listen and the CA its clients verify with (``[grpc]``, decision 0123).
        self._grpc_settings: Any = None
        self._root_ca: Path | None = None
        self._advertise: str | None = None
        self._traces = False  # this runtime turned tracing on (from OTEL_*), so it shuts it down

    @classmethod
    async def start(
        cls,
        workspace_root: Path,
        hive: str,
        endpoint: BusEndpoint,
        *,
        root_address: str | None = None,
        token: str | None = None,
        status_file: Path | None = None,
        config: ControllerConfig | None = None,
        grpc_keys: Any = None,
        event_deadline: float | None = None,
        request_deadline: float | None = None,
        failover: float = 0.0,
        metrics: str | None = None,
        connect_timeout: float | None = None,
        root_ca: Path | None = None,
        advertise: str | None = None,
    ) -> HiveRuntime:
        """``grpc_keys``: the hive's gRPC credentials, ``subhive.rpc.GrpcKeys`` or ``KeyFile`` (``subhive up``
        hands each hive its own file); without them the hive's gRPC calls are anonymous and a hive that serves
        gRPC does not start (``rpc.no_keys``). ``event_deadline``, ``request_deadline``: seconds its event and
        request handlers may run before they count as failed (``handler.timeout``; NatsTransport's defaults).
        ``failover``: seconds its event publishes and board writes retry through a cluster's leader election.
        ``connect_timeout``: seconds its first connection to NATS may take (NatsTransport's default).
        ``metrics``: ``host:port`` of its Prometheus ``/metrics`` endpoint (port 0: a free one); by default
        ``SUBHIVE_METRICS_ADDRESS``, else a free loopback port when it writes a status file (under ``subhive up``),
        else none; ``off``: none. Traces follow the ``OTEL_*`` variables (docs/observability.md).
        Its gRPC servers listen as the workspace's ``[grpc]`` says, and its clients (of the root, of providers)
        verify TLS with its ``ca``; ``root_ca`` replaces that CA, ``advertise`` the host it registers
        (``subhive join`` on another machine)."""
        runtime = cls(hive)
        runtime._metrics_address = _metrics_address(metrics, status_file)
        runtime._transport_options = {
            name: value
            for name, value in (("event_deadline", event_deadline), ("request_deadline", request_deadline))
            if value is not None
        }
        runtime._transport_options["failover"] = failover
        if connect_timeout is not None:
            runtime._transport_options["connect_timeout"] = connect_timeout
        runtime._status_file = status_file
        runtime._keys = grpc_keys
        runtime._root_ca, runtime._advertise = root_ca, advertise
        try:
            await runtime._start(Path(workspace_root), endpoint, root_address, token, config)
        except BaseException:
            await runtime.stop()
            raise
        return runtime

    async def _start(
        self,
        root: Path,
        endpoint: BusEndpoint,
        root_address: str | None,
        token: str | None,
        config: ControllerConfig | None,
    ) -> None:
        if TRACING.tracer is None:
            self._traces = configure_tracing(self.hive)
        workspace = open_workspace(root)
        manifest = _own_manifest(workspace, self.hive)
        if manifest is None:  # read the whole tree to say why (its checks across hives included)
            tree = workspace.hives()
            manifest = tree.hives.get(self.hive)
        if manifest is None:
            problems = tree.problems_by_hive.get(self.hive)
            raise InputError(
                f"no valid sub-hive {self.hive!r} in {workspace.root}",
                code="hive.unknown",
                location=problems[0].location if problems else Location(file=str(workspace.hives_dir)),
                hint=problems[0].message if problems else "subhive new NAME --kind ... creates one",
            )
        hive_dir = workspace.hive_dir(self.hive)
        manifest_file = hive_dir / "subhive.toml"
        schema = BoardSchema.load(hive_dir / manifest.blackboard_schema, hive=self.hive)
        knowledge = load_knowledge(
            manifest.knowledge_sources, hive_dir=hive_dir, workspace=workspace.root, manifest=manifest_file
        )
        self.bindings = load_bindings(workspace.stubs_dir / self.hive)
        check_members(knowledge.sources, self.hive, self.bindings)

        files = workspace.config.grpc.files(workspace.root)
        self._grpc_settings = (workspace.config.grpc, files)
        if self._root_ca is None and files is not None:
            self._root_ca = files[2]
        if root_address:
            from ..root_hive import RootClient

            self._root = RootClient(root_address, token, ca_file=self._root_ca)
            taker = next((spec.name for spec in manifest.agents if spec.repairs), None)
            if taker is not None:
                self.repairs = RepairHandoff(workspace.root, self.hive, taker, root_address)
        self.transport = await NatsTransport.connect(
            endpoint, self.hive, on_repeated_failure=self._report_failure, **self._transport_options
        )
        js = self.transport.connection.jetstream()
        self.board = await KvBlackboard.open(js, self.hive, schema, failover=self.transport.failover)
        self.context = HiveContext(self.hive, self.board, self.transport, self._root, self._keys, self._root_ca)
        self.controller = Controller(
            self.board, knowledge.sources, config=config, context=self.context, on_escalation=self._escalate
        )
        await self.controller.start(js)
        await self._serve_contracts(self.transport, self.controller, knowledge.sources)
        if knowledge.grpc is not None:
            await self._serve_grpc(knowledge.grpc(self.context))
        if self._metrics_address is not None:
            host, _, port = self._metrics_address.rpartition(":")
            collector = HiveCollector(self.hive, self._bus_stats, self._controller_stats)
            try:
                self.metrics = await serve_metrics(collector, host.strip("[]"), int(port))
            except (OSError, ValueError) as exc:  # a port taken (an inherited fixed address), a bad address
                raise InputError(
                    f"hive {self.hive} cannot serve its metrics on {self._metrics_address}: {exc}",
                    code="metrics.unavailable",
                    hint="unset SUBHIVE_METRICS_ADDRESS, or give each hive its own port (port 0 picks a free one)",
                ) from None
        self.state = "ready"
        if self._status_file is not None:
            await self.write_status()
            _heartbeats().add(self)
        log.info(
            "hive %s ready: %d knowledge sources, %d contracts", self.hive, len(knowledge.sources), len(self.bindings)
        )

    async def _serve_contracts(self, transport: NatsTransport, controller: Controller, sources: Sequence[Any]) -> None:
        for binding in self.bindings:
            if binding.provider == self.hive:
                declared = {
                    m.split(".", 1)[1]
                    for s in sources
                    for m in getattr(s, "operations", ())
                    if m.split(".", 1)[0] == binding.name
                }
                handlers = {
                    op: _answerer(controller, binding.name, op, self.flows)
                    for op in sorted(declared & set(binding.operations))
                }
                missing = sorted(set(binding.operations) - declared)
                if missing:
                    log.warning(
                        "%s v%s: no knowledge source answers %s (requests get bus.not_served)",
                        binding.name,
                        binding.line,
                        ", ".join(missing),
                    )
                if handlers:
                    self._subscriptions.append(await transport.serve(binding, handlers))
            else:
                declared = {
                    m.split(".", 1)[1]
                    for s in sources
                    for m in getattr(s, "events", ())
                    if m.split(".", 1)[0] == binding.name
                }
                for event in sorted(declared & set(binding.events)):
                    self._subscriptions.append(
                        await transport.subscribe(binding, event, _reactor(controller, binding.name, event, self.flows))
                    )

    async def _serve_grpc(self, services: Sequence[GrpcService]) -> None:
        from ..root_hive import ServerTls
        from ..rpc import serve_grpc

        settings, files = self._grpc_settings
        tls = ServerTls(files[0], files[1]) if files is not None else None

        if self._root is None:
            raise InputError(
                f"{self.hive} serves gRPC but has no root to register with",
                code="rpc.no_root",
                hint="run the hive under `subhive up`",
            )
        by_contract: dict[tuple[str, int], list[tuple[Any, object]]] = {}
        for service in services:
            by_contract.setdefault((service.contract, service.major), []).append(
                (service.add_to_server, service.servicer)
            )
        for (contract, major), servicers in sorted(by_contract.items(), key=lambda item: item[0]):
            server = await serve_grpc(
                self._root,
                contract,
                major,
                servicers,
                keys=self._keys,
                interceptors=[_CallCounter(self.flows, contract)],
                host=settings.listen,
                tls=tls,
                advertise=self._advertise or settings.advertise,
            )
            self._grpc.append(server)
            self.endpoints.append(f"{contract} v{major} at {server.address}")

    async def _report_failure(self, failure: Failure) -> None:
        if self._root is not None:
            with contextlib.suppress(Exception):
                approval = await propose_repair(self._root, failure)
                await self._hand_repair(approval, failure.count)

    async def _hand_repair(self, approval: Any, reported: int) -> None:
        """A new repair proposal goes to the hive's repairing agent, if it declares one (decision 0053)."""
        if self.repairs is not None and self.repairs.is_new(approval, reported):
            await self.repairs.hand(approval.id)

    async def _escalate(self, escalation: Escalation) -> None:
        log.error("escalating %s of %s: %s", escalation.code, escalation.source, escalation.message)
        if self._root is not None:
            # Not about a contract: the subject is the blackboard key's (the message names the source).
            approval = await self._root.propose_repair(
                code=escalation.code,
                message=escalation.message,
                subject=f"$KV.{kv_bucket(self.hive)}.{escalation.key}",
                count=escalation.count,
                sample=escalation.sample,
            )
            with contextlib.suppress(Exception):
                await self._hand_repair(approval, escalation.count)

    # -- status -------------------------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        stats = self.transport.stats if self.transport else None
        now = time.monotonic()
        if stats is not None:
            self._samples.append((now, stats.sent, stats.received))
            # Rates over the last RATE_WINDOW seconds, however often a heartbeat was written meanwhile.
            while len(self._samples) > 2 and now - self._samples[1][0] >= RATE_WINDOW * HEARTBEAT:
                self._samples.popleft()
        first = self._samples[0] if self._samples else (now, 0, 0)
        span = max(now - first[0], 1e-9)
        rates = {
            "sent_per_s": round((stats.sent - first[1]) / span, 2) if stats and span > 0.5 else 0.0,
            "received_per_s": round((stats.received - first[2]) / span, 2) if stats and span > 0.5 else 0.0,
        }
        return {
            "hive": self.hive,
            "pid": os.getpid(),
            "state": self.state,
            "started": self.started,
            "updated": time.time(),
            "bus": {
                "sent": stats.sent,
                "received": stats.received,
                "refused": sum(stats.refused.values()),
                "dead_lettered": stats.dead_lettered,
                "retried": stats.retried,
                # refused messages that could not be kept (their hive's dead letters full): status says so
                "not_kept": stats.refused.get("deadletter.failed", 0),
                # events held back, unacknowledged, until their dead letter can be kept (decision 0023)
                "dead_letter_blocked": stats.dead_letter_blocked,
            }
            if stats
            else {},
            "controller": self.controller.stats.to_dict() if self.controller else {},
            "rates": rates,
            "flows": dict(sorted(self.flows.items())),
            "contracts": [f"{b.id}{' (provides)' if b.provider == self.hive else ''}" for b in self.bindings],
            "endpoints": list(self.endpoints),
            "metrics": self.metrics.url if self.metrics else None,
        }

    def _bus_stats(self) -> Any:
        return self.transport.stats if self.transport else None

    def _controller_stats(self) -> Any:
        return self.controller.stats if self.controller else None

    def _fingerprint(self) -> tuple[Any, ...]:
        """What the heartbeat reports that can change, cheaply: equal twice means nothing happened between."""
        stats = self.transport.stats if self.transport else None
        controller = self.controller
        return (
            self.state,
            (stats.sent, stats.received, stats.dead_lettered, stats.retried, stats.dead_letter_blocked)
            if stats
            else (),
            sum(stats.refused.values()) if stats else 0,
            (controller.board_writes_seen, controller.stats.activations, controller.stats.failures)
            if controller
            else (),
            (controller.stats.parked, controller.stats.escalations, len(controller.stats.quarantined))
            if controller
            else (),
            sum(self.flows.values()),
        )

    async def write_status(self) -> None:
        if self._status_file is None:
            return
        fingerprint = self._fingerprint()
        data = self.status()
        if self.board is not None:
            # The board's size costs NATS a stream lookup and a scan of its keys: only when it may have changed.
            seen_before = self._last_beat[3] if self._last_beat else None
            if self._board_size is None or fingerprint[3] != seen_before:
                with contextlib.suppress(Exception):
                    keys, revisions, size = await self.board.size()
                    self._board_size = {"keys": keys, "revisions": revisions, "bytes": size}
            if self._board_size is not None:
                data["blackboard"] = self._board_size
        self._last_beat = fingerprint
        write_json(self._status_file, data)
        self._written = time.monotonic()

    async def beat(self) -> None:
        """One heartbeat: a look (in memory) at whether anything changed; the file is written when it did, and
        touched every :data:`KEEPALIVE` seconds anyway (its time is what tells a live hive from a stuck one)."""
        async with self._beating:
            if self.state != "ready" or self._status_file is None:
                return
            now = time.monotonic()
            if self._fingerprint() != self._last_beat:
                await self.write_status()
            elif now - self._written >= KEEPALIVE:
                try:
                    os.utime(self._status_file)
                except OSError:  # removed (a restart on its way): write it whole
                    await self.write_status()
            else:
                return
            self._written = now

    async def stop(self) -> None:
        """Stop serving, let activations in flight finish their writes, close the connection."""
        self.state = "stopping"
        _heartbeats().discard(self)
        async with self._beating:  # a beat under way ends before the last heartbeat below is written
            pass
        for server in self._grpc:
            with contextlib.suppress(Exception):
                await server.stop()
        for sub in self._subscriptions:
            with contextlib.suppress(Exception):
                await sub.stop()
        if self.controller is not None:
            await self.controller.stop()
        if self.repairs is not None:
            await self.repairs.stop()
        if self.context is not None:
            await self.context.close()
        if self.transport is not None:
            await self.transport.close()
        if self._root is not None:
            with contextlib.suppress(Exception):
                await self._root.close()
        if self.metrics is not None:
            await self.metrics.close()
        if self._traces:
            shutdown_tracing()  # exports the spans still pending
        self.state = "stopped"
        if self._status_file is not None:
            with contextlib.suppress(OSError):
                data = self.status()
                write_json(self._status_file, data)


class _Heartbeats:
    """One task beats for every runtime of an event loop: a process of many hives wakes once a second, not once
    per hive (decision 0118)."""

    def __init__(self) -> None:
        self.runtimes: dict[HiveRuntime, None] = {}  # in start order
        self.task: asyncio.Task[None] | None = None

    def add(self, runtime: HiveRuntime) -> None:
        self.runtimes[runtime] = None
        if self.task is None or self.task.done():
            # A context of its own: not the context of the hive that happened to start first (its log, say).
            self.task = asyncio.get_running_loop().create_task(
                self._run(), name="subhive-heartbeats", context=contextvars.Context()
            )

    def discard(self, runtime: HiveRuntime) -> None:
        self.runtimes.pop(runtime, None)

    async def _run(self) -> None:
        while self.runtimes:
            await asyncio.sleep(HEARTBEAT)
            for runtime in list(self.runtimes):
                with contextlib.suppress(Exception):  # a beat that fails is tried again a second later
                    await runtime.beat()
        self.task = None


_BEATS: dict[asyncio.AbstractEventLoop, _Heartbeats] = {}


def _heartbeats() -> _Heartbeats:
    loop = asyncio.get_running_loop()
    for old in [other for other in _BEATS if other.is_closed()]:  # a test's finished loop
        del _BEATS[old]
    return _BEATS.setdefault(loop, _Heartbeats())


def _own_manifest(workspace: Any, hive: str) -> Any:
    """The hive's manifest when it reads cleanly on its own, else None. Reading only its own (not the tree's,
    which ``up`` has checked) keeps a tree of N hives from parsing N manifests N times as it starts."""
    from ..errors import SubhiveError
    from ..workspace import load_manifest

    try:
        manifest = load_manifest(workspace.hive_dir(hive))
    except SubhiveError:
        return None
    return manifest if manifest.name == hive else None


def _metrics_address(given: str | None, status_file: Path | None) -> str | None:
    """Where the hive serves its metrics (see :meth:`HiveRuntime.start`), checked: ``host:port`` or None."""
    value = given if given is not None else os.environ.get("SUBHIVE_METRICS_ADDRESS")
    if value is None:
        return "127.0.0.1:0" if status_file is not None else None
    if value.strip().lower() == "off":
        return None
    host, _, port = value.strip().rpartition(":")
    if not host or not port.isdigit() or int(port) > 65535:
        raise InputError(
            f"the metrics address {value!r} is not host:port",
            code="hive.metrics_address",
            hint="e.g. 127.0.0.1:9464, 127.0.0.1:0 (a free port), 0.0.0.0:9464 (reachable from other machines) or off",
        )
    return value.strip()


class _CallCounter(grpc.aio.ServerInterceptor):
    """Counts the gRPC calls a hive serves, for ``flows`` in its heartbeat (refused callers never get here)."""

    def __init__(self, flows: Counter[str], contract: str) -> None:
        self.flows = flows
        self.contract = contract

    async def intercept_service(self, continuation: Callable[[Any], Awaitable[Any]], handler_call_details: Any) -> Any:
        method = str(handler_call_details.method).rsplit("/", 1)[-1]
        if not str(handler_call_details.method).startswith("/grpc.health"):
            self.flows[f"served gRPC {self.contract}.{method}"] += 1
        return await continuation(handler_call_details)


def _answerer(
    controller: Controller, contract: str, operation: str, flows: Counter[str]
) -> Callable[[Any], Awaitable[Any]]:
    async def answer(payload: Any) -> Any:
        flows[f"answered {contract}.{operation}"] += 1
        return await controller.answer(contract, operation, payload)

    return answer


def _reactor(
    controller: Controller, contract: str, event: str, flows: Counter[str]
) -> Callable[[Any], Awaitable[None]]:
    async def react(payload: Any) -> None:
        flows[f"received {contract}.{event}"] += 1
        await controller.on_event(contract, event, payload)

    return react
