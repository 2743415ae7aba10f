"""A small typed client of the root hive's gRPC service, and the helpers the CLI uses to find the root.

Replies are the engine's own types and statuses come back as the engine's errors (:data:`ERROR_OF`), so code
written against :class:`RootHive` reads the same against a remote root. See docs/root-hive.md#the-grpc-service.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from .._pids import pid_alive
from ..errors import InputError, Location, Problem, SubhiveError
from ..semver import Version
from . import _status
from ._log import Frame
from ._model import (
    AgentStep,
    Approval,
    ContractInfo,
    Endpoint,
    HiveStatus,
    ProposalOutcome,
    Registration,
    Repair,
    RequirementOutcome,
    ToolCall,
    VersionInfo,
)
from ._proto import root_hive_pb2 as pb
from ._proto import root_hive_pb2_grpc as pb_grpc
from ._tls import CA_ENV, root_channel

__all__ = [
    "ADMIN_TOKEN_FILE",
    "ERROR_OF",
    "RootClient",
    "RootUnavailable",
    "admin_token_of",
    "contract_files",
    "running_root_address",
]

#: The admin token the engine writes on first open (relative to the workspace root).
ADMIN_TOKEN_FILE = Path(".subhive") / "root" / "admin.token"
ROOT_ADDRESS_ENV = "SUBHIVE_ROOT"
_MAX_FILES_BYTES = 32 * 1024 * 1024


class RootUnavailable(SubhiveError):
    """No root hive answers at the address (not started, stopped, or unreachable)."""

    default_code = "root.unavailable"


#: gRPC status -> the error class a caller gets; the status message carries the error's ``to_dict()``.
#: The shared table (``_status.ERROR_OF``) plus a root that does not answer.
ERROR_OF: dict[grpc.StatusCode, type[SubhiveError]] = {
    **_status.ERROR_OF,
    grpc.StatusCode.UNAVAILABLE: RootUnavailable,
    grpc.StatusCode.DEADLINE_EXCEEDED: RootUnavailable,
}


# -- the client ----------------------------------------------------------------------------------------------


class RootClient:
    """An async client of one root hive, authenticated with one token (a hive's, or the admin's)."""

    def __init__(
        self,
        address: str,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        ca_file: Path | None = None,
        _channel: grpc.aio.Channel | None = None,
    ) -> None:
        """``ca_file``: verify a root that serves TLS against this CA (PEM); without it the channel is plain,
        which a root accepts on loopback only."""
        self.address = address
        self._token = token
        self._timeout = timeout
        self._owns_channel = _channel is None
        self._channel = _channel or root_channel(address, ca_file=ca_file)
        self._stub = pb_grpc.RootHiveStub(self._channel)

    def with_token(self, token: str) -> RootClient:
        """A client for another caller on the same connection (closing it leaves the connection open).

        >>> backend = admin.with_token(registration.token)  # doctest: +SKIP
        """
        return RootClient(self.address, token, timeout=self._timeout, _channel=self._channel)

    async def __aenter__(self) -> RootClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._owns_channel:
            await self._channel.close()

    def _metadata(self) -> tuple[tuple[str, str], ...]:
        return (("authorization", f"Bearer {self._token}"),) if self._token else ()

    async def _unary(self, method: Any, request: Any) -> Any:
        try:
            return await method(request, metadata=self._metadata(), timeout=self._timeout)
        except grpc.aio.AioRpcError as exc:
            raise error_from_status(exc, self.address) from None

    async def healthy(self, *, timeout: float = 2.0) -> bool:
        """True when the root answers the standard gRPC health check with SERVING."""
        stub = health_pb2_grpc.HealthStub(self._channel)
        try:
            # grpc_health ships no typed stub for its generated client
            reply = await stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=timeout)  # type: ignore[attr-defined]
        except grpc.aio.AioRpcError:
            return False
        return bool(reply.status == health_pb2.HealthCheckResponse.SERVING)

    async def register_hive(
        self, name: str, *, kind: str = "custom", parent: str = "root", rotate: bool = False
    ) -> Registration:
        """Register a hive (admin token). Its token is in the reply only this once."""
        reply = await self._unary(
            self._stub.RegisterHive, pb.RegisterHiveRequest(name=name, kind=kind, parent=parent, rotate=rotate)
        )
        return Registration(reply.name, reply.token)

    async def propose(
        self, files: Mapping[str, bytes] | Path, *, announcement_id: str | None = None, on_behalf_of: str | None = None
    ) -> ProposalOutcome:
        """Propose a contract version: a directory, or its files as ``{relative posix path: bytes}``.

        Returns an accepted or pending outcome; a rejection raises (InputError for a bad contract or a
        dishonest bump, with the offending changes in ``to_dict()``; Conflict for a clash with accepted state).
        """
        content = contract_files(files) if isinstance(files, Path) else dict(files)
        reply = await self._unary(
            self._stub.ProposeContract,
            pb.ProposeContractRequest(
                files=content, announcement_id=announcement_id or "", on_behalf_of=on_behalf_of or ""
            ),
        )
        return _outcome(reply)

    async def declare_requirement(
        self, contract: str, versions: str, *, operations: Sequence[str] = (), fields: Sequence[str] = ()
    ) -> RequirementOutcome:
        """Declare a need (hive token): satisfied by an accepted version, or announced as an open need."""
        reply = await self._unary(
            self._stub.DeclareRequirement,
            pb.DeclareRequirementRequest(
                contract=contract, versions=versions, operations=list(operations), fields=list(fields)
            ),
        )
        return RequirementOutcome(
            Version.parse(reply.satisfied_by) if reply.satisfied_by else None, reply.announcement_id or None
        )

    async def contracts(self, name: str | None = None) -> list[ContractInfo]:
        """Every contract with its accepted versions (``name`` only, if given)."""
        reply = await self._unary(self._stub.ListContracts, pb.ListContractsRequest(name=name or ""))
        return [
            ContractInfo(
                c.name,
                [
                    VersionInfo(Version.parse(v.version), v.hash, v.provider, v.status, dict(v.consumers), v.intact)
                    for v in c.versions
                ],
            )
            for c in reply.contracts
        ]

    async def approvals(self, status: str = "pending", *, kind: str = "all") -> list[Approval]:
        """Approvals by ``status`` (pending, approved, rejected, all) and ``kind`` (contract, repair, all)."""
        reply = await self._unary(self._stub.ListApprovals, pb.ListApprovalsRequest(status=status, kind=kind))
        return [_approval(a) for a in reply.approvals]

    async def approval(self, approval_id: str) -> Approval:
        return _approval(await self._unary(self._stub.GetApproval, pb.GetApprovalRequest(id=approval_id)))

    async def approve(self, approval_id: str, *, note: str = "", by: str = "") -> ProposalOutcome:
        """Approve a pending proposal (admin token): its new major is published beside the old one. For a
        repair approval, the outcome has ``kind`` ``"repair"``, code ``repair.accepted`` and no version.
        ``by`` names who approves, recorded with the decision (root-hive 1.5.0)."""
        request = pb.ApproveRequest(id=approval_id, note=note, by=by)
        return _outcome(await self._unary(self._stub.Approve, request))

    async def reject(self, approval_id: str, *, reason: str, by: str = "") -> Approval:
        """Reject a pending proposal with ``reason`` (admin token); ``by`` as for :meth:`approve`."""
        request = pb.RejectRequest(id=approval_id, reason=reason, by=by)
        return _approval(await self._unary(self._stub.Reject, request))

    async def propose_repair(
        self,
        *,
        code: str,
        message: str,
        contract: str = "",
        operation: str = "",
        subject: str = "",
        count: int = 1,
        sample: bytes | str = b"",
        hive: str | None = None,
    ) -> Approval:
        """Report an error class this hive saw ``count`` times (hive token; the admin names ``hive``).

        >>> await backend.propose_repair(code="handler.failed", message="KeyError: 'sku'", contract="orders",
        ...                              operation="place_order", count=2)  # doctest: +SKIP
        Approval(id='r-1', ..., kind='repair', repair=Repair(code='handler.failed', ..., count=2, ...))

        Returns the pending repair approval; a repeat while it is pending adds to its count.
        """
        reply = await self._unary(
            self._stub.ProposeRepair,
            pb.ProposeRepairRequest(
                hive=hive or "",
                code=code,
                contract=contract,
                operation=operation,
                subject=subject,
                count=count,
                message=message,
                sample=sample.encode("utf-8") if isinstance(sample, str) else sample,
            ),
        )
        return _approval(reply)

    async def propose_tool_call(
        self, *, agent: str, tool: str, arguments: str, turn: str = "", call_id: str = "", hive: str | None = None
    ) -> Approval:
        """Ask a person whether this hive's ``agent`` may run ``tool`` with ``arguments`` (hive token; the admin
        names ``hive``). Returns the pending approval (kind ``tool``, ``t-N``); :meth:`approval` reads its
        decision (root-hive 1.3.0)."""
        return _approval(
            await self._unary(
                self._stub.ProposeToolCall,
                pb.ProposeToolCallRequest(
                    hive=hive or "", agent=agent, tool=tool, arguments=arguments, turn=turn, call_id=call_id
                ),
            )
        )

    async def report_frames(self, steps: Sequence[AgentStep], *, hive: str | None = None) -> tuple[int, int]:
        """Put this hive's agent ``steps`` on the root's event stream as frames ``agent.<kind>``, in order (hive
        token; the admin names ``hive``); return the first and last frame's seq (root-hive 1.4.0).

        >>> await backend.report_frames([AgentStep("helper", "t1", 1, "turn.started", "{}", time.time())])
        ... # doctest: +SKIP
        (42, 42)
        """
        reply = await self._unary(
            self._stub.ReportFrames,
            pb.ReportFramesRequest(
                hive=hive or "",
                steps=[
                    pb.AgentStep(
                        agent=s.agent, turn=s.turn, step=s.step, kind=s.kind, data_json=s.data_json, time=s.time
                    )
                    for s in steps
                ],
            ),
        )
        return int(reply.first_seq), int(reply.last_seq)

    async def register_endpoint(
        self, contract: str, major: int, address: str, *, services: Sequence[str] = (), on_behalf_of: str | None = None
    ) -> Endpoint:
        """Register where this hive serves ``contract`` v``major`` over gRPC (its provider's token).

        >>> await db.register_endpoint("inventory", 1, "127.0.0.1:40123")  # doctest: +SKIP
        Endpoint(contract='inventory', major=1, address='127.0.0.1:40123', provider='db', ...)
        """
        reply = await self._unary(
            self._stub.RegisterEndpoint,
            pb.RegisterEndpointRequest(
                contract=contract,
                major=major,
                address=address,
                services=list(services),
                on_behalf_of=on_behalf_of or "",
            ),
        )
        return _endpoint(reply)

    async def remove_endpoint(self, contract: str, major: int, address: str) -> bool:
        """Remove this hive's registration of ``contract`` v``major`` if it still names ``address``."""
        reply = await self._unary(
            self._stub.RemoveEndpoint, pb.RemoveEndpointRequest(contract=contract, major=major, address=address)
        )
        return bool(reply.removed)

    async def lookup_endpoint(self, contract: str, major: int) -> Endpoint:
        """Where ``contract`` v``major`` is served (a consumer's or the provider's token); NotFound
        (``endpoint.none``) while nothing is registered."""
        reply = await self._unary(self._stub.LookupEndpoint, pb.LookupEndpointRequest(contract=contract, major=major))
        return _endpoint(reply)

    async def status(self) -> list[HiveStatus]:
        """The hive tree: the root's direct children, each with theirs."""
        reply = await self._unary(self._stub.GetStatus, pb.GetStatusRequest())
        return [_hive(h) for h in reply.hives]

    async def watch(self, after: int = 0) -> AsyncIterator[Frame]:
        """Every frame after ``after`` (0: from the start), then live frames, until the root stops.

        Frames arrive several per message (``WatchEventBatches``, root-hive 1.1.0) and are yielded one by one.
        """
        call = self._stub.WatchEventBatches(pb.WatchEventsRequest(after=after), metadata=self._metadata())
        try:
            async for batch in call:
                for frame in batch.frames:
                    yield Frame(frame.seq, frame.kind, json.loads(frame.data_json or "{}"), frame.time)
        except grpc.aio.AioRpcError as exc:
            if exc.code() != grpc.StatusCode.CANCELLED:
                raise error_from_status(exc, self.address) from None
        finally:
            call.cancel()


def error_from_status(exc: grpc.aio.AioRpcError, address: str) -> SubhiveError:
    """Rebuild the engine's error from a status: its class from the code, its fields from the JSON message."""
    code = exc.code()
    if ERROR_OF.get(code) is RootUnavailable:
        return RootUnavailable(
            f"no root hive answers at {address} ({code.name.lower()})",
            hint="start one with `subhive root`, or point --root at the running one; a root "
            f"that serves TLS needs its CA file in ${CA_ENV}",
        )
    error = _status.error_from_details(code, exc.details())
    if error is None:
        return SubhiveError(f"the root hive failed: {code.name}: {exc.details()}", code="root.internal")
    return error


# -- discovery and helpers for the CLI ---------------------------------------------------------------------


def served_root(workspace_root: Path) -> tuple[str, int] | None:
    """The address and pid of a root serving this workspace by ``.subhive/root/service.json``, when that process
    still exists (a root killed with SIGKILL leaves the file behind): whoever started it, ``subhive up`` or a
    person's ``subhive root``."""
    from ._service import SERVICE_FILE

    try:
        data = json.loads((workspace_root / SERVICE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    address, pid = (data.get("address"), data.get("pid")) if isinstance(data, dict) else (None, None)
    if not isinstance(address, str) or isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
        return None
    return (address, pid) if pid_alive(pid) else None


def running_root_address(workspace_root: Path) -> str | None:
    """The address of this workspace's running root: ``$SUBHIVE_ROOT``, else ``.subhive/root/service.json``.

    The file is only a hint (a root killed with SIGKILL leaves it behind); callers check that something
    answers there with :meth:`RootClient.healthy`.
    """
    from ._service import SERVICE_FILE

    if os.environ.get(ROOT_ADDRESS_ENV):
        return os.environ[ROOT_ADDRESS_ENV]
    try:
        data = json.loads((workspace_root / SERVICE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    address = data.get("address") if isinstance(data, dict) else None
    return address if isinstance(address, str) else None


def admin_token_of(workspace_root: Path) -> str:
    """The workspace's admin token (written by the root on its first start)."""
    path = workspace_root / ADMIN_TOKEN_FILE
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise InputError(
            f"no admin token at {path}",
            code="root.no_admin_token",
            location=Location(file=str(path)),
            hint="start the root once with `subhive root`; it writes the token",
        ) from exc


def contract_files(directory: Path) -> dict[str, bytes]:
    """A contract directory's files as ``{relative posix path: bytes}``, hidden files skipped.

    >>> sorted(contract_files(Path("contracts/orders/1.1.0")))  # doctest: +SKIP
    ['contract.yaml', 'place_order.input.json', 'schemas.json']
    """
    if not directory.is_dir():
        raise InputError(
            f"{directory} is not a contract directory",
            code="propose.not_a_directory",
            location=Location(file=str(directory)),
            hint="name the directory that holds contract.yaml, e.g. contracts/orders/1.2.0",
        )
    out: dict[str, bytes] = {}
    total = 0
    for path in sorted(directory.rglob("*")):
        rel = path.relative_to(directory)
        if any(part.startswith(".") for part in rel.parts) or not path.is_file():
            continue
        data = path.read_bytes()
        total += len(data)
        if total > _MAX_FILES_BYTES:
            raise InputError(
                f"{directory} holds more than {_MAX_FILES_BYTES >> 20} MiB",
                code="propose.too_large",
                location=Location(file=str(directory)),
            )
        out[rel.as_posix()] = data
    return out


def _problem_of(message: pb.Problem) -> Problem:
    return Problem(
        message.code,
        message.message,
        Location(
            file=message.file or None,
            line=message.line or None,
            pointer=message.pointer if message.pointer or message.file else None,
        ),
        message.hint or None,
    )


def _check(text: str) -> dict[str, Any] | None:
    return json.loads(text) if text else None


def _version(text: str) -> Version | None:
    return Version.parse(text) if text else None  # empty for a repair


def _outcome(reply: pb.ProposalOutcome) -> ProposalOutcome:
    status: Any = reply.status
    kind: Any = reply.kind or "contract"
    return ProposalOutcome(
        reply.id,
        reply.contract,
        _version(reply.version),
        status,
        _check(reply.check_json),
        tuple(_problem_of(p) for p in reply.problems),
        reply.message,
        code=reply.code,
        hash=reply.hash,
        awarded=tuple(reply.awarded),
        kind=kind,
    )


def _approval(reply: pb.Approval) -> Approval:
    status: Any = reply.status
    kind: Any = reply.kind or "contract"
    repair = tool_call = None
    if reply.HasField("repair"):
        r = reply.repair
        repair = Repair(r.code, r.operation, r.subject, r.count, r.sample, r.last_seen)
    if reply.HasField("tool_call"):
        t = reply.tool_call
        tool_call = ToolCall(t.agent, t.tool, t.arguments, t.turn, t.call_id)
    return Approval(
        reply.id,
        reply.contract,
        _version(reply.version),
        reply.proposer,
        _check(reply.check_json),
        reply.created,
        status,
        reason=reply.reason,
        message=reply.message,
        hash=reply.hash,
        decision=reply.decision,
        decided=reply.decided or None,
        decided_by=reply.decided_by,
        kind=kind,
        repair=repair,
        tool_call=tool_call,
    )


def _endpoint(reply: pb.Endpoint) -> Endpoint:
    return Endpoint(reply.contract, reply.major, reply.address, reply.provider, reply.service, reply.registered)


def _hive(node: pb.HiveNode) -> HiveStatus:
    consumes = [
        {
            "contract": n.contract,
            "versions": n.versions,
            "satisfied_by": n.satisfied_by or None,
            "announcement_id": n.announcement_id or None,
        }
        for n in node.consumes
    ]
    return HiveStatus(
        node.name,
        node.kind,
        node.parent,
        [_hive(c) for c in node.children],
        list(node.provides),
        consumes,
        [_endpoint(e) for e in node.endpoints],
    )
