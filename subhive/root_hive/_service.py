"""The root hive's gRPC service: a ``grpc.aio`` servicer over the sync engine, plus server start and stop.

Engine calls run as group commits on one worker thread (:class:`_Engine`), so a linted proposal never blocks
the event loop watchers stream on. See docs/root-hive.md#the-grpc-service.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import queue
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from ..errors import InputError, Problem
from ._errors import Conflict, PermissionDenied, Unauthenticated
from ._log import Frame as _Frame
from ._model import AgentStep, Approval, ContractInfo, Endpoint, HiveStatus, ProposalOutcome
from ._proto import root_hive_pb2 as pb
from ._proto import root_hive_pb2_grpc as pb_grpc
from ._status import STATUS_OF, abort_with, error_details
from ._tls import ServerTls, check_listen_address
from ._window import EncodedFrame, FrameWindow, encode_frame, passthrough

if TYPE_CHECKING:
    from ..codegen import CodegenTrigger
    from ._engine import Frame, RootHive

__all__ = ["SERVICE_FILE", "SERVICE_NAME", "STATUS_OF", "RootServer", "error_details"]

log = logging.getLogger("subhive.root_hive.service")

T = TypeVar("T")

SERVICE_NAME = pb.DESCRIPTOR.services_by_name["RootHive"].full_name  # "subhive.root.v1.RootHive"
#: Where a running server records its address and pid, so the CLI finds it (relative to the workspace root).
SERVICE_FILE = Path(".subhive") / "root" / "service.json"

_WINDOW = 4096  # recent frames kept in memory for watchers; older ones are read from the log
_LOG_PAGE = 1024  # frames per read from the log for a watcher behind the window
_WAKE_INTERVAL = 0.02  # seconds: under load watchers wake at most this often, so group commits share messages


@dataclass(frozen=True, slots=True)
class Caller:
    """Who sent a request: a hive's name, or the admin (a human)."""

    name: str
    admin: bool


def _token_of(context: grpc.aio.ServicerContext[Any, Any]) -> str:
    for key, value in context.invocation_metadata() or ():
        if key == "authorization":
            text = value.decode() if isinstance(value, bytes) else value
            scheme, _, token = text.partition(" ")
            if scheme.lower() == "bearer" and token.strip():
                return token.strip()
            raise Unauthenticated(
                "the authorization metadata is not 'Bearer <token>'",
                code="auth.malformed",
                hint="send the metadata 'authorization: Bearer <token>'",
            )
    raise Unauthenticated(
        "no token: every call needs the metadata 'authorization: Bearer <token>'",
        code="auth.missing",
        hint="a hive's token comes from RegisterHive; the admin token is in .subhive/root/admin.token",
    )


class _Engine:
    """Runs engine calls on one worker thread, several at a time in one group commit.

    Calls queue up while the worker is busy; the worker takes everything queued, runs it inside one
    :meth:`RootHive.batch` (so the calls share one barrier for their files and one fsync of the log), and only
    after the batch is durable hands the new frames to the watchers and answers every call of the batch.
    Under load a batch grows to what arrived during the previous one, which is what makes throughput scale;
    alone, a call is a batch of one. A failed flush fails every call of its batch: none was acknowledged.
    """

    #: The most calls one batch takes: bounds the latency a batch adds to its first call.
    MAX_BATCH = 256

    def __init__(self, root: RootHive) -> None:
        self.root = root
        root.write_files_in_background()  # answers wait for the log fsync, not for contracts/ to be written
        self._queue: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._fresh: list[Frame] = []  # frames made durable by the running batch (filled on the worker)
        self._thread = threading.Thread(target=self._work, name="subhive-root", daemon=True)
        self.window: FrameWindow | None = None
        self.batches = 0  # batches run, for figures: calls / batches is the mean group-commit size
        self.calls = 0

    async def start(self) -> None:
        self._thread.start()

        def tail() -> list[Frame]:
            self.root.add_listener(self._fresh.append)
            return self.root.frames_since(max(0, self.root.last_seq - _WINDOW))

        frames = await self.call(tail)
        self.window = FrameWindow(frames[0].seq - 1 if frames else 0, _WINDOW, wake_interval=_WAKE_INTERVAL)
        self.window.publish([encode_frame(f) for f in frames])

    async def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the worker in the next batch; return (or raise) once that batch is durable."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._queue.put(_Job(fn, loop, future))
        return await future

    def _work(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            jobs = [job]
            stop = False
            while len(jobs) < self.MAX_BATCH:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    stop = True
                    break
                jobs.append(more)
            self._run_batch(jobs)
            if stop:
                return

    def _run_batch(self, jobs: list[_Job]) -> None:
        results: list[tuple[object, BaseException | None]] = []
        try:
            with self.root.batch():
                for job in jobs:
                    try:
                        results.append((job.fn(), None))
                    except Exception as exc:  # answered to that call once the batch is durable
                        results.append((None, exc))
        except BaseException as exc:  # the flush failed: nothing in this batch was acknowledged
            log.exception("root hive: group commit failed")
            results = [(None, exc)] * len(jobs)
        self.batches += 1
        self.calls += len(jobs)
        fresh, self._fresh[:] = list(self._fresh), []
        frames = [encode_frame(f) for f in fresh]  # serialised once, whatever the number of watchers
        window = self.window
        by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Any], object, BaseException | None]]] = {}
        for job, (result, error) in zip(jobs, results, strict=True):
            by_loop.setdefault(job.loop, []).append((job.future, result, error))
        for loop, answers in by_loop.items():
            # One wake-up per loop and batch. Frames go out before the answers: a caller that got its answer
            # can already watch its frames.
            _call_soon(loop, _deliver, window if frames else None, frames, answers)

    async def read_log(self, after: int) -> list[EncodedFrame]:
        frames = await self.call(lambda: self.root.frames_since(after)[:_LOG_PAGE])
        return [encode_frame(f) for f in frames]

    def close(self) -> None:
        if self.window is not None:
            self.window.close()
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()


@dataclass(frozen=True, slots=True)
class _Job:
    fn: Callable[[], Any]
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Any]


def _call_soon(loop: asyncio.AbstractEventLoop, fn: Callable[..., None], *args: object) -> None:
    with contextlib.suppress(RuntimeError):  # the caller's loop has closed: nobody waits for the answer
        loop.call_soon_threadsafe(fn, *args)


def _deliver(
    window: FrameWindow | None,
    frames: list[EncodedFrame],
    answers: list[tuple[asyncio.Future[Any], object, BaseException | None]],
) -> None:
    if window is not None:
        window.publish(frames)
    for future, result, error in answers:
        if future.done():  # the caller gave up (cancelled RPC)
            continue
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)


class RootHiveServicer(pb_grpc.RootHiveServicer):
    """Each RPC: authenticate, check the caller's role, call the engine, convert the result."""

    def __init__(self, engine: _Engine) -> None:
        self._engine = engine

    @property
    def root(self) -> RootHive:
        return self._engine.root

    async def _do(self, context: grpc.aio.ServicerContext[Any, Any], fn: Callable[[Caller], T]) -> T:
        """Authenticate and run ``fn(caller)`` on the engine thread; map errors to statuses."""
        try:
            token = _token_of(context)

            def job() -> T:
                return fn(self._caller(token))

            return await self._engine.call(job)
        except Exception as exc:
            await abort_with(context, exc, server="the root hive", log=log)

    def _caller(self, token: str) -> Caller:
        if self.root.is_admin(token):
            return Caller("admin", admin=True)
        return Caller(self.root.authenticate(token), admin=False)

    # -- RPCs -----------------------------------------------------------------------------------------

    async def RegisterHive(
        self, request: pb.RegisterHiveRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.RegisterHiveReply:
        def op(caller: Caller) -> pb.RegisterHiveReply:
            _require_admin(caller, "register hives")
            reg = self.root.register_hive(
                request.name, kind=request.kind or "custom", parent=request.parent or "root", rotate=request.rotate
            )
            return pb.RegisterHiveReply(name=reg.name, token=reg.token)

        return await self._do(context, op)

    async def ProposeContract(
        self, request: pb.ProposeContractRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ProposalOutcome:
        files = dict(request.files)

        def op(caller: Caller) -> pb.ProposalOutcome:
            hive = _acting_hive(caller, request.on_behalf_of)
            outcome = self.root.propose(hive, files, announcement_id=request.announcement_id or None)
            return _outcome_pb(outcome)

        return await self._do(context, op)

    async def DeclareRequirement(
        self, request: pb.DeclareRequirementRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.DeclareRequirementReply:
        def op(caller: Caller) -> pb.DeclareRequirementReply:
            if caller.admin:
                raise PermissionDenied(
                    "requirements are declared by the consuming hive, with its own token", code="auth.hive_only"
                )
            out = self.root.declare_requirement(
                caller.name,
                request.contract,
                request.versions,
                operations=tuple(request.operations),
                fields=tuple(request.fields),
            )
            return pb.DeclareRequirementReply(
                satisfied_by=str(out.satisfied_by) if out.satisfied_by is not None else "",
                announcement_id=out.announcement_id or "",
            )

        return await self._do(context, op)

    async def ListContracts(
        self, request: pb.ListContractsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ListContractsReply:
        def op(_: Caller) -> pb.ListContractsReply:
            infos = [c for c in self.root.contracts() if not request.name or c.name == request.name]
            return pb.ListContractsReply(contracts=[_contract_pb(c) for c in infos])

        return await self._do(context, op)

    async def ListApprovals(
        self, request: pb.ListApprovalsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ListApprovalsReply:
        def op(_: Caller) -> pb.ListApprovalsReply:
            # An empty kind is a 1.1.0 client's request: it knows contract approvals only.
            approvals = self.root.approvals(request.status or "pending", kind=request.kind or "contract")
            return pb.ListApprovalsReply(approvals=[_approval_pb(a) for a in approvals])

        return await self._do(context, op)

    async def GetApproval(
        self, request: pb.GetApprovalRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.Approval:
        return await self._do(context, lambda _: _approval_pb(self.root.approval(request.id)))

    async def Approve(
        self, request: pb.ApproveRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ProposalOutcome:
        token = _token_or_empty(context)

        def op(caller: Caller) -> pb.ProposalOutcome:
            _require_admin(caller, "approve proposals")
            return _outcome_pb(self.root.approve(request.id, admin_token=token, note=request.note, by=request.by))

        return await self._do(context, op)

    async def Reject(self, request: pb.RejectRequest, context: grpc.aio.ServicerContext[Any, Any]) -> pb.Approval:
        token = _token_or_empty(context)

        def op(caller: Caller) -> pb.Approval:
            _require_admin(caller, "reject proposals")
            return _approval_pb(self.root.reject(request.id, admin_token=token, reason=request.reason, by=request.by))

        return await self._do(context, op)

    async def ProposeRepair(
        self, request: pb.ProposeRepairRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.Approval:
        def op(caller: Caller) -> pb.Approval:
            if caller.admin and not request.hive:
                raise InputError("the admin proposes a repair for a hive: name it in hive", code="repair.no_hive")
            if not caller.admin and request.hive and request.hive != caller.name:
                raise PermissionDenied(
                    f"hive {caller.name!r} may not propose a repair for {request.hive!r}: a hive "
                    "reports its own errors",
                    code="auth.not_self",
                )
            approval = self.root.propose_repair(
                request.hive or caller.name,
                code=request.code,
                message=request.message,
                contract=request.contract,
                operation=request.operation,
                subject=request.subject,
                count=request.count or 1,
                sample=request.sample,
            )
            return _approval_pb(approval)

        return await self._do(context, op)

    async def ProposeToolCall(
        self, request: pb.ProposeToolCallRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.Approval:
        def op(caller: Caller) -> pb.Approval:
            if caller.admin and not request.hive:
                raise InputError("the admin proposes a tool call for a hive: name it in hive", code="tool_call.no_hive")
            if not caller.admin and request.hive and request.hive != caller.name:
                raise PermissionDenied(
                    f"hive {caller.name!r} may not ask for {request.hive!r}: a hive asks for its own agents",
                    code="auth.not_self",
                )
            return _approval_pb(
                self.root.propose_tool_call(
                    request.hive or caller.name,
                    agent=request.agent,
                    tool=request.tool,
                    arguments=request.arguments,
                    turn=request.turn,
                    call_id=request.call_id,
                )
            )

        return await self._do(context, op)

    async def ReportFrames(
        self, request: pb.ReportFramesRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ReportFramesReply:
        steps = [AgentStep(s.agent, s.turn, s.step, s.kind, s.data_json, s.time) for s in request.steps]

        def op(caller: Caller) -> pb.ReportFramesReply:
            if caller.admin and not request.hive:
                raise InputError(
                    "the admin reports an agent's steps for a hive: name it in hive", code="agent_frames.no_hive"
                )
            if not caller.admin and request.hive and request.hive != caller.name:
                raise PermissionDenied(
                    f"hive {caller.name!r} may not report steps as {request.hive!r}: a hive reports its own agents",
                    code="auth.not_self",
                )
            frames = self.root.report_frames(request.hive or caller.name, steps)
            return pb.ReportFramesReply(first_seq=frames[0].seq, last_seq=frames[-1].seq)

        return await self._do(context, op)

    async def RegisterEndpoint(
        self, request: pb.RegisterEndpointRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.Endpoint:
        def op(caller: Caller) -> pb.Endpoint:
            if caller.admin:  # for the contract's provider, named or not
                hive = request.on_behalf_of or None
            else:
                if request.on_behalf_of and request.on_behalf_of != caller.name:
                    raise PermissionDenied(
                        f"hive {caller.name!r} may not register endpoints on behalf of {request.on_behalf_of!r}",
                        code="auth.not_provider",
                    )
                hive = caller.name
            return _endpoint_pb(
                self.root.register_endpoint(
                    hive, request.contract, request.major, request.address, services=tuple(request.services)
                )
            )

        return await self._do(context, op)

    async def RemoveEndpoint(
        self, request: pb.RemoveEndpointRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.RemoveEndpointReply:
        def op(caller: Caller) -> pb.RemoveEndpointReply:
            removed = self.root.remove_endpoint(
                None if caller.admin else caller.name, request.contract, request.major, request.address
            )
            return pb.RemoveEndpointReply(removed=removed)

        return await self._do(context, op)

    async def LookupEndpoint(
        self, request: pb.LookupEndpointRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.Endpoint:
        def op(caller: Caller) -> pb.Endpoint:
            return _endpoint_pb(
                self.root.endpoint(request.contract, request.major, hive=None if caller.admin else caller.name)
            )

        return await self._do(context, op)

    async def GetStatus(
        self, request: pb.GetStatusRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.GetStatusReply:
        return await self._do(context, lambda _: pb.GetStatusReply(hives=[_hive_pb(h) for h in self.root.status()]))

    # The watch streams yield bytes serialised once for every watcher (``_add_servicer`` registers them with
    # ``passthrough`` serializers), not the messages the generated base class declares.
    async def WatchEvents(  # type: ignore[override]
        self, request: pb.WatchEventsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[bytes]:
        async for frames in self._follow(request, context):
            for frame in frames:
                yield frame.body

    async def WatchEventBatches(  # type: ignore[override]
        self, request: pb.WatchEventsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[bytes]:
        # One message per group commit (or per page of the log) rather than per frame: with 50 watchers a
        # message per frame costs the root ~50 us each, more than the proposals that made the frames.
        window = self._engine.window
        assert window is not None  # set by RootServer.start before the server listens
        async for frames in self._follow(request, context):
            for start in range(0, len(frames), _LOG_PAGE):
                yield window.batch(frames[start : start + _LOG_PAGE])  # serialised FrameBatch, shared

    async def _follow(
        self, request: pb.WatchEventsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[list[EncodedFrame]]:
        """Runs of consecutive frames after ``request.after``: the backlog, then live ones, until the root stops."""

        def check_token(_: Caller) -> None:  # authenticate once, at the start of the stream
            if request.after > self.root.last_seq:
                raise Conflict(
                    f"resume token {request.after} is ahead of the log (last frame "
                    f"{self.root.last_seq}): this root has a different history",
                    code="frames.token_ahead",
                    hint="resume from 0",
                )

        await self._do(context, check_token)
        async for frames in _follow_window(self._engine, request.after):
            yield frames


async def _follow_window(engine: _Engine, after: int) -> AsyncIterator[list[EncodedFrame]]:
    """Runs of consecutive encoded frames after ``after``: from the window, or the log when behind it."""
    window = engine.window
    assert window is not None  # set by RootServer.start before the server listens
    cursor = after
    while not window.closed:
        frames = window.since(cursor)
        if frames is None:  # behind the window: catch up from the log, a page at a time
            frames = await engine.read_log(cursor)
        if not frames:
            await window.wait_after(cursor)
            continue
        yield frames
        cursor = frames[-1].seq


class _Handlers:
    """Stands in for a server to catch the method handlers the generated ``add_*_to_server`` registers."""

    def __init__(self) -> None:
        self.handlers: dict[str, grpc.RpcMethodHandler[Any, Any]] = {}

    def add_generic_rpc_handlers(self, _: object) -> None:
        pass

    def add_registered_method_handlers(self, _: str, handlers: dict[str, grpc.RpcMethodHandler[Any, Any]]) -> None:
        self.handlers = dict(handlers)


#: Streaming methods whose servicer yields bytes it serialised once for every watcher (see ``_window``).
_PRESERIALISED = ("WatchEvents", "WatchEventBatches")


def _add_servicer(servicer: RootHiveServicer, server: grpc.aio.Server) -> None:
    """``add_RootHiveServicer_to_server``, with :func:`passthrough` serializers on the watch streams."""
    caught = _Handlers()
    pb_grpc.add_RootHiveServicer_to_server(servicer, caught)  # type: ignore[arg-type]  # duck-typed on purpose
    handlers = caught.handlers
    for name in _PRESERIALISED:
        handlers[name] = handlers[name]._replace(response_serializer=passthrough)  # type: ignore[attr-defined]
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE_NAME, handlers),))
    server.add_registered_method_handlers(SERVICE_NAME, handlers)


def _token_or_empty(context: grpc.aio.ServicerContext[Any, Any]) -> str:
    try:
        return _token_of(context)
    except Unauthenticated:
        return ""  # _do reports it with the same error


def _require_admin(caller: Caller, what: str) -> None:
    if not caller.admin:
        raise PermissionDenied(
            f"hive {caller.name!r} may not {what}: that is for humans, with the admin token",
            code="auth.not_admin",
            hint="use the admin token from .subhive/root/admin.token",
        )


def _acting_hive(caller: Caller, on_behalf_of: str) -> str:
    if caller.admin:
        if not on_behalf_of:
            raise InputError(
                "the admin proposes on a provider's behalf: name it in on_behalf_of",
                code="propose.no_provider",
                hint="set on_behalf_of to the contract's provider hive",
            )
        return on_behalf_of
    if on_behalf_of and on_behalf_of != caller.name:
        raise PermissionDenied(
            f"hive {caller.name!r} may not propose on behalf of {on_behalf_of!r}", code="auth.not_provider"
        )
    return caller.name


# -- conversions (engine objects -> messages) ---------------------------------------------------------------


def _json(data: object) -> str:
    return "" if data is None else json.dumps(data, separators=(",", ":"), sort_keys=True, default=str)


def _problem_pb(problem: Problem) -> pb.Problem:
    loc = problem.location
    return pb.Problem(
        code=problem.code,
        message=problem.message,
        file=loc.file or "",
        line=loc.line or 0,
        pointer=loc.pointer or "",
        hint=problem.hint or "",
    )


def _outcome_pb(outcome: ProposalOutcome) -> pb.ProposalOutcome:
    """An accepted or pending outcome; a rejected one leaves as an error status instead."""
    error = outcome.error()
    if error is not None:
        raise error
    return pb.ProposalOutcome(
        id=outcome.id,
        contract=outcome.contract,
        version=_version(outcome),
        status=outcome.status,
        check_json=_json(outcome.check),
        message=outcome.message,
        problems=[_problem_pb(p) for p in outcome.problems],
        code=outcome.code,
        hash=outcome.hash,
        awarded=list(outcome.awarded),
        kind=outcome.kind,
    )


def _version(item: ProposalOutcome | Approval) -> str:
    return str(item.version) if item.version is not None else ""  # a repair has none


def _approval_pb(approval: Approval) -> pb.Approval:
    message = pb.Approval(
        id=approval.id,
        contract=approval.contract,
        version=_version(approval),
        proposer=approval.proposer,
        check_json=_json(approval.check),
        created=approval.created,
        status=approval.status,
        reason=approval.reason,
        message=approval.message,
        hash=approval.hash,
        decision=approval.decision,
        decided=approval.decided or 0.0,
        kind=approval.kind,
        decided_by=approval.decided_by,
    )
    if approval.repair is not None:
        r = approval.repair
        message.repair.CopyFrom(
            pb.Repair(
                code=r.code,
                operation=r.operation,
                subject=r.subject,
                count=r.count,
                sample=r.sample,
                last_seen=r.last_seen,
            )
        )
    if approval.tool_call is not None:
        t = approval.tool_call
        message.tool_call.CopyFrom(
            pb.ToolCall(agent=t.agent, tool=t.tool, arguments=t.arguments, turn=t.turn, call_id=t.call_id)
        )
    return message


def _endpoint_pb(endpoint: Endpoint) -> pb.Endpoint:
    return pb.Endpoint(
        contract=endpoint.contract,
        major=endpoint.major,
        address=endpoint.address,
        provider=endpoint.provider,
        service=endpoint.service,
        registered=endpoint.registered,
    )


def _contract_pb(info: ContractInfo) -> pb.ContractInfo:
    return pb.ContractInfo(
        name=info.name,
        versions=[
            pb.VersionInfo(
                version=str(v.version),
                hash=v.hash,
                provider=v.provider,
                status=v.status,
                consumers=dict(v.consumers),
                intact=v.intact,
            )
            for v in info.versions
        ],
    )


def _hive_pb(node: HiveStatus) -> pb.HiveNode:
    return pb.HiveNode(
        name=node.name,
        kind=node.kind,
        parent=node.parent,
        provides=list(node.provides),
        consumes=[
            pb.Need(
                contract=str(c.get("contract", "")),
                versions=str(c.get("versions", "")),
                satisfied_by=str(c.get("satisfied_by") or ""),
                announcement_id=str(c.get("announcement_id") or ""),
            )
            for c in node.consumes
        ],
        children=[_hive_pb(c) for c in node.children],
        endpoints=[_endpoint_pb(e) for e in node.endpoints],
    )


# -- the server ----------------------------------------------------------------------------------------------


class RootServer:
    """A running root hive: the engine, the gRPC server (RootHive, health, reflection) and its address.

    >>> async def main() -> None:  # doctest: +SKIP
    ...     async with await RootServer.start(Path("shop")) as server:
    ...         print(server.address)
    """

    def __init__(
        self,
        root: RootHive,
        server: grpc.aio.Server,
        engine: _Engine,
        *,
        health_servicer: health.aio.HealthServicer,
        address: str,
        workspace_root: Path,
        codegen: CodegenTrigger | None = None,
    ) -> None:
        self.root = root
        #: Regenerates the stubs of the hives a newly accepted contract touches (None: switched off).
        self.codegen = codegen
        self.address = address
        self.workspace_root = workspace_root
        self._server = server
        self._engine = engine
        self._health = health_servicer
        self._stopped = False
        #: Whether it serves TLS (a client then needs the CA that signed its certificate).
        self.tls = False

    @property
    def port(self) -> int:
        return int(self.address.rsplit(":", 1)[1])

    @classmethod
    async def start(
        cls,
        workspace_root: Path,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        root: RootHive | None = None,
        codegen: bool = True,
        tls: ServerTls | None = None,
        advertise: str | None = None,
    ) -> RootServer:
        """Open the engine on ``workspace_root`` (unless ``root`` is given), listen, and record the address.

        With ``codegen``, every accepted contract regenerates the stubs of the hives that use it, in the
        background (``subhive.codegen.CodegenTrigger``).

        ``port=0`` picks a free port; the chosen one is in :attr:`address`. A ``host`` other than loopback
        needs ``tls`` (``root.insecure_address``); with it the root serves TLS only. ``advertise``: the host the
        others dial (in :attr:`address` and the service file), when it is not ``host`` (e.g. on ``0.0.0.0``).
        Raises InputError when the address cannot be bound or the certificate and key do not load.
        """
        check_listen_address(host, tls)
        credentials = tls.credentials() if tls is not None else None
        if root is None:
            from ._engine import RootHive

            root = RootHive.open(workspace_root)
        engine = _Engine(root)
        try:
            await engine.start()
            server = grpc.aio.server()
            _add_servicer(RootHiveServicer(engine), server)
            health_servicer = health.aio.HealthServicer()
            health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
            reflection.enable_server_reflection(
                (SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME),
                server,
            )
            try:
                bound = (
                    server.add_insecure_port(f"{host}:{port}")
                    if credentials is None
                    else server.add_secure_port(f"{host}:{port}", credentials)
                )
            except RuntimeError as exc:
                bound = 0
                cause: Exception | None = exc
            else:
                cause = None
            if not bound:
                raise InputError(
                    f"cannot listen on {host}:{port}",
                    code="root.bind_failed",
                    hint="choose another --port, or stop the process that holds it",
                ) from cause
            await server.start()
        except BaseException:
            engine.close()
            root.close()
            raise
        await health_servicer.set("", health_pb2.HealthCheckResponse.SERVING)
        await health_servicer.set(SERVICE_NAME, health_pb2.HealthCheckResponse.SERVING)
        shown = advertise or host
        address = f"{shown}:{bound}" if ":" not in shown else f"[{shown.strip('[]')}]:{bound}"
        trigger = None
        if codegen:
            from ..codegen import CodegenTrigger

            trigger = CodegenTrigger(workspace_root, settle=root.settle)
            root.add_listener(trigger)
        self = cls(
            root,
            server,
            engine,
            health_servicer=health_servicer,
            address=address,
            workspace_root=workspace_root,
            codegen=trigger,
        )
        self.tls = tls is not None
        self._write_service_file()
        return self

    def _write_service_file(self) -> None:
        path = self.workspace_root / SERVICE_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps({"address": self.address, "pid": os.getpid()}) + "\n", encoding="utf-8")
        tmp.replace(path)

    def _remove_service_file(self) -> None:
        path = self.workspace_root / SERVICE_FILE
        with contextlib.suppress(OSError, ValueError):
            if json.loads(path.read_text(encoding="utf-8")).get("address") == self.address:
                path.unlink()

    async def stop(self, grace: float | None = 1.0) -> None:
        """Stop serving (in-flight calls get ``grace`` seconds), end every watch, close the engine."""
        if self._stopped:
            return
        self._stopped = True
        await self._health.enter_graceful_shutdown()
        if self._engine.window is not None:
            self._engine.window.close()
        await self._server.stop(grace)
        self._remove_service_file()
        await asyncio.get_running_loop().run_in_executor(None, self._engine.close)
        if self.codegen is not None:
            self.root.remove_listener(self.codegen)
            await asyncio.get_running_loop().run_in_executor(None, self.codegen.close)
        self.root.close()

    async def wait_for_termination(self) -> None:
        await self._server.wait_for_termination()

    # -- for other front ends over the same engine (subhive.http) ------------------------------------------

    async def call(self, fn: Callable[[RootHive], T]) -> T:
        """Run ``fn(root)`` on the engine's worker in the next group commit; return once it is durable."""
        return await self._engine.call(lambda: fn(self.root))

    async def follow(self, after: int) -> AsyncGenerator[list[tuple[int, bytes]], None]:
        """Runs of frames after ``after`` (the backlog, then live ones) until the server stops, as ``(seq, body)``:
        the serialised ``Frame`` message every watcher shares (decode with :meth:`frame_of`, once per frame and not
        per watcher). Check ``after`` first (``root.frames_since``): this does not."""
        async for run in _follow_window(self._engine, after):
            yield [(encoded.seq, encoded.body) for encoded in run]

    @staticmethod
    def frame_of(body: bytes) -> Frame:
        """The frame a :meth:`follow` body holds, its ``data`` as watchers see it."""
        message = pb.Frame.FromString(body)
        return _Frame(message.seq, message.kind, json.loads(message.data_json), message.time)

    async def __aenter__(self) -> RootServer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
