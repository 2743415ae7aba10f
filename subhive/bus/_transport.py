"""The contract bus: :class:`NatsTransport`, the :class:`~subhive.runtime.Transport` of hives over real NATS.
Validation both ends, refusals and dead letters, durable events, self-repair and permission errors are
described in docs/bus.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import nats
import orjson
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription as NatsSubscription
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout
from nats.js.errors import NoStreamResponseError

from .._trace import continue_trace, outgoing_traceparent
from ..errors import Location, SubhiveError
from ..runtime import ContractBinding, EventCallback, Handler, NotServed, PayloadInvalid, Refusal, Subscription
from ..semver import Version
from ..telemetry import TRACING, Latency, span
from ._codec import PayloadError, decode, encode
from ._consumers import HANDLER_ATTEMPTS, bind_consumer, event_consumer
from ._deadletter import publish_dead_letter
from ._deadlines import Deadlines, Late
from ._failover import through_failover
from ._fastpub import Frames, Target
from ._inbox import ConnectionLost, Inbox
from ._keep_backoff import KeepBackoff
from ._permissions import event_subject, inbox_prefix, line_name, op_subject, replay_subject, sender_of
from ._server import BusEndpoint
from ._wire import (
    H_CONTRACT,
    H_ERROR,
    H_MSG_ID,
    H_SENDER,
    H_TRACE,
    BusError,
    PermissionViolation,
    RemoteError,
    WireError,
)

__all__ = ["BusStats", "Failure", "NatsTransport"]

#: A handler is called at most this many times for one event: the first try and one retry.
MAX_DELIVER = HANDLER_ATTEMPTS
#: Seconds after a reconnect during which JetStream's silence means "still starting", not "no stream".
_WARMUP = 10.0
#: Round trips to the server (PING/PONG) after a subscription before it counts as accepted, and the seconds
#: those past the second may take in all (see :meth:`NatsTransport._confirm`).
_CONFIRM_ROUND_TRIPS = 4
_CONFIRM_WITHIN = 0.5
#: Seconds an event handler may run on one delivery (NatsTransport ``event_deadline``).
EVENT_DEADLINE = 60.0
#: Seconds between a connection's pings to its server. A crashed server or node closes the socket, which the
#: client notices at once; pings only find a connection that went silent (a frozen host, a lost network), within
#: two of them. Every 5 s, 500 idle hives sent the server 100 pings a second (decision 0118).
PING_INTERVAL = 20
#: A request handler's deadline as a share of the request timeout: the structured ``handler.timeout`` reply
#: must reach a caller before the caller gives up.
REQUEST_DEADLINE_SHARE = 0.9
#: An event delivered more often than this that the transport never saw fail crashed its consumer each time
#: (docs/decisions/0048-handler-deadlines-and-crash-backstop.md): it is dead-lettered as ``delivery.crashed``.
CRASH_BOUND = 10
#: Seconds a failure count of an event is kept: another replica may have handled its retry (and acked it).
_ATTEMPTS_TTL = 600.0
T = TypeVar("T")
log = logging.getLogger("subhive.bus")
_VIOLATION = re.compile(r'permissions violation for (publish|subscription) to "([^"]+)"', re.IGNORECASE)


@dataclass(frozen=True)
class Failure:
    """A failure class seen twice in this hive: what a repair proposal reports."""

    hive: str
    code: str
    contract: str
    member: str
    subject: str
    count: int
    message: str
    sample: bytes
    #: The error's class (``KeyError``, ``KnowledgeSourceFailed ks.stalled``), where it differs from ``code``.
    error_class: str = ""

    @property
    def repair_code(self) -> str:
        """What the root keeps one pending repair per: the code and the error class (``handler.failed:KeyError``),
        so two classes of failure on one member are two repairs, as they are two here."""
        if not self.error_class or self.error_class == self.code:
            return self.code
        return f"{self.code}:{_NOT_CODE.sub('_', self.error_class.replace(' ', ':'))}"[:128]


#: What a repair code may not hold (the root takes ``[A-Za-z0-9_.:-]``).
_NOT_CODE = re.compile(r"[^A-Za-z0-9_.:-]")


@dataclass
class BusStats:
    """Counters of one transport: what it sent and received, and what it refused, by code. The per-subject
    counters and handler times are what a hive's Prometheus metrics read (subhive.telemetry.HiveCollector)."""

    sent: int = 0
    received: int = 0
    refused: Counter[str] = field(default_factory=Counter)
    dead_lettered: int = 0
    retried: int = 0
    #: Events held back now because their dead letter could not be kept (the stream full): see KeepBackoff.
    dead_letter_blocked: int = 0
    # Plain dicts, not Counters: an exact dict's increment is half the cost on the publish path (a subject's
    # entry is made with its route, so the fast path needs no .get).
    #: Requests and events sent, by subject (a request's names its sender).
    sent_on: dict[str, int] = field(default_factory=dict)
    #: Requests and events received (before they are checked), by subject.
    received_on: dict[str, int] = field(default_factory=dict)
    #: Replies (and error replies) this provider sent, by the request's subject.
    replied_on: dict[str, int] = field(default_factory=dict)
    #: Replies this hive received to its requests, by the request's subject.
    replies_on: dict[str, int] = field(default_factory=dict)
    #: Outgoing payloads refused before anything left (they broke the contract), by code.
    invalid_out: Counter[str] = field(default_factory=Counter)
    #: How long handlers ran, by (contract, line, "op" or "ev", member); the line is ``Version.line``.
    handled: dict[tuple[str, str, str, str], Latency] = field(default_factory=dict)

    def observe(self, where: tuple[str, str, str, str], seconds: float) -> None:
        latency = self.handled.get(where)
        if latency is None:
            latency = self.handled[where] = Latency()
        latency.observe(seconds)


class _Violations:
    """Permission violations the server reported (asynchronously, through ``error_cb``), by subject."""

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}
        self._changed = asyncio.Event()
        #: When the connection was last lost or came back (monotonic; 0: never): JetStream may still be starting.
        self.bumped_at = 0.0
        #: Called when the connection is lost (the transport fails the requests waiting on it).
        self.on_disconnect: list[Callable[[], None]] = []

    async def bumped(self) -> None:
        """``reconnected_cb``: the server came back."""
        self.bumped_at = time.monotonic()

    async def disconnected(self) -> None:
        """``disconnected_cb``: the server (or this node of a cluster) went away."""
        self.bumped_at = time.monotonic()
        for listener in self.on_disconnect:
            listener()

    async def error_cb(self, exc: Exception) -> None:
        match = _VIOLATION.search(str(exc))
        if match:
            # nats-py lower-cases the server's error text, subject included: keys are lower-case.
            self.seen[match.group(2).lower()] = match.group(1)
            # Wake everyone waiting on the current event; later waiters get a fresh one.
            self._changed.set()
            self._changed = asyncio.Event()

    def pop(self, subject: str, *, shown: str | None = None) -> PermissionViolation | None:
        """The violation reported for ``subject`` (or, with a trailing ``*``, any subject starting so)."""
        key = subject.lower()
        if key.endswith("*"):
            key = next((s for s in self.seen if s.startswith(key[:-1])), key)
        kind = self.seen.pop(key, None)
        if kind is None:
            return None
        verb = "publish to" if kind.lower() == "publish" else "subscribe to"
        if shown and key.startswith("$js.api."):  # a JetStream API request made to read ``shown``, not a publish
            verb = "consume"
        named = shown or subject
        via = f" (it refused {key})" if shown and shown != subject else ""
        return PermissionViolation(
            f"the NATS server refused to let this hive {verb} {named}{via}",
            location=_at(named),
            hint="a hive may only use the subjects of contracts it provides or consumes "
            "(from the lock); declare the contract in its subhive.toml: a running "
            "`subhive up` follows the change (or run subhive up)",
        )

    async def guard(self, call: Awaitable[T], subject: str, *, shown: str | None = None) -> T:
        """Await ``call``, but raise the violation for ``subject`` as soon as the server reports one, instead
        of waiting for ``call`` to time out (a refused publish is dropped without an answer)."""
        task = asyncio.ensure_future(call)
        while True:
            changed = asyncio.ensure_future(self._changed.wait())
            done, _ = await asyncio.wait({task, changed}, return_when=asyncio.FIRST_COMPLETED)
            if task in done:
                changed.cancel()
                return task.result()
            violation = self.pop(subject, shown=shown)
            if violation is not None:
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
                raise violation


def _at(subject: str) -> Location:
    return Location(subject=subject)


@dataclass(frozen=True, slots=True)
class _Route:
    """A contract member as a sender sees it: the schema it sends (and, for an operation, the reply's), their
    validators' ``is_valid``, and where messages go."""

    contract: ContractBinding
    sends: str
    receives: str
    sends_valid: Callable[[Any], bool]
    receives_valid: Callable[[Any], bool]
    target: Target


def _no_reply(payload: Any) -> bool:
    return True


def _reply_of(route: _Route, operation: str) -> tuple[str, str, str, str]:
    return route.contract.name, route.contract.line, "reply", operation


class _Group:
    def __init__(self, stops: list[Callable[[], Awaitable[None]]]) -> None:
        self._stops = stops

    async def stop(self) -> None:
        for stop in self._stops:
            with contextlib.suppress(Exception):  # the connection may be closed already
                await stop()


class NatsTransport:
    """Contract-typed messaging for hive ``hive`` over the NATS connection ``nc``.

    Generated clients and handler interfaces run on it unchanged (they speak only the Transport protocol)::

        transport = await NatsTransport.connect(endpoint, hive="web")
        await serve_orders(MyOrders(), transport)          # the provider: a queue group, so replicas share work
        await OrdersClient(transport).place_order(...)     # a consumer: request/reply, validated both ends

    ``durable_events=False`` sends events as plain NATS messages (at most once, no stream needed): for
    telemetry-like events where throughput matters more than delivery. ``allowed_senders`` maps
    ``(contract, line)`` (``Version.line``: "1", "0.2") to the hives registered as its consumers (from the
    lock): a request from any other sender is refused (``bus.sender_unknown``), a second line of defence
    behind the server's permissions.
    """

    def __init__(
        self,
        nc: Client,
        hive: str,
        *,
        request_timeout: float = 5.0,
        ack_wait: float = 30.0,
        durable_events: bool = True,
        max_concurrency: int = 64,
        allowed_senders: Mapping[tuple[str, str], set[str]] | Mapping[tuple[str, int], set[str]] | None = None,
        on_repeated_failure: Callable[[Failure], Awaitable[None]] | None = None,
        event_deadline: float = EVENT_DEADLINE,
        request_deadline: float | None = None,
        crash_bound: int = CRASH_BOUND,
        failover: float = 0.0,
        _violations: _Violations | None = None,
    ) -> None:
        if event_deadline <= 0 or (request_deadline is not None and request_deadline <= 0) or crash_bound < 2:
            raise ValueError("event_deadline and request_deadline must be positive, crash_bound at least 2")
        self._nc = nc
        self._js = nc.jetstream()
        self.hive = hive
        self.request_timeout = request_timeout
        #: Seconds an event handler may run on one delivery before it counts as failed (``handler.timeout``).
        self.event_deadline = event_deadline
        #: Seconds a request handler may run before the caller gets ``handler.timeout``: by default a little under
        #: this hive's own request timeout, the deadline its callers (with the same default) wait for.
        self.request_deadline = (
            request_timeout * REQUEST_DEADLINE_SHARE if request_deadline is None else request_deadline
        )
        #: Deliveries after which an event this transport has no failure count for is taken to crash its consumer.
        self.crash_bound = crash_bound
        self.ack_wait = ack_wait
        #: Seconds a durable publish keeps retrying (same message id) while no stream answers: a cluster electing
        #: a new leader after losing a node (5-9 s measured). 0: fail at once, as on one server.
        self.failover = failover
        self.durable_events = durable_events
        # Keyed by the line as ContractBinding.line spells it ("1", "0.2"): a major given as an int is its line.
        self.allowed_senders: dict[tuple[str, str], set[str]] | None = (
            None if allowed_senders is None else {(c, str(n)): set(v) for (c, n), v in allowed_senders.items()}
        )
        self.on_repeated_failure = on_repeated_failure
        self.stats = BusStats()
        self._violations = _violations or _Violations()
        self._slots = asyncio.Semaphore(max_concurrency)
        self._deadlines = Deadlines()
        self._tasks: set[asyncio.Task[None]] = set()
        self._failures: Counter[tuple[str, str, str]] = Counter()
        self._held = KeepBackoff()  # events whose dead letter the stream refused (decision 0023)
        #: Handler failures per event still being retried, by (stream, stream sequence), with the last one's code
        #: and time: the transport's own count (JetStream's num_delivered also counts deliveries a crash
        #: interrupted). Per process: a replica that acks the retry cannot tell this one, so entries age out.
        self._attempts: dict[tuple[str, int], tuple[int, str, float]] = {}
        #: Per consumer (its event), the one event this process dead-lettered as ``delivery.crashed``.
        self._crashed: dict[tuple[str, str, str, str], tuple[str, int]] = {}
        self._unsettled = False  # an event was acknowledged since the server last confirmed (see _deliver)
        self._allowed: set[str] = set()  # subjects a publish already went through on
        self._subjects: dict[tuple[str, str, str, str], str] = {}
        self._frames = Frames(nc, hive)
        self._inbox = Inbox(nc)
        self._violations.on_disconnect.append(self._inbox.fail_all)
        self._routes: dict[tuple[str, str, str], _Route] = {}

    @classmethod
    async def connect(
        cls, endpoint: BusEndpoint, hive: str, *, connect_timeout: float = 5.0, **options: Any
    ) -> NatsTransport:
        """Connect as ``hive`` (its own inbox prefix, so its credentials need no other hive's inboxes);
        raises ``bus.unavailable`` when no server answers within ``connect_timeout`` seconds."""
        violations = _Violations()
        try:
            # Reconnect forever once connected (a server restart), but bound the first connection: nats-py
            # keeps retrying it too, and an unreachable server must be an error, not a hang.
            nc = await asyncio.wait_for(
                nats.connect(
                    **endpoint.connect_options(),  # type: ignore[arg-type]
                    name=f"subhive-{hive}",
                    inbox_prefix=inbox_prefix(hive),
                    error_cb=violations.error_cb,
                    ping_interval=PING_INTERVAL,
                    disconnected_cb=violations.disconnected,
                    reconnected_cb=violations.bumped,
                    max_reconnect_attempts=-1,
                    reconnect_time_wait=0.5,
                    connect_timeout=max(1, int(connect_timeout)),
                ),
                connect_timeout,
            )
        except (OSError, nats.errors.Error, TimeoutError) as exc:
            raise BusError(
                f"cannot connect hive {hive} to {', '.join(endpoint.servers)}: {exc}",
                code="bus.unavailable",
                hint="is the NATS server running (subhive up)?",
            ) from exc
        return cls(nc, hive, _violations=violations, **options)

    @property
    def connection(self) -> Client:
        return self._nc

    async def close(self) -> None:
        """Wait for the handlers in flight, then drain and close the connection."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        with contextlib.suppress(Exception):
            await self._nc.drain()

    # -- sending ------------------------------------------------------------------------------------------

    def _headers(self, contract: ContractBinding, msg_id: str | None = None) -> dict[str, str]:
        return self._frames.headers(contract.id, outgoing_traceparent(), msg_id)

    def _subject(self, contract: ContractBinding, kind: str, member: str) -> str:
        """The subject of an operation (``op``) or event (``ev``); names are checked once, then cached."""
        key = (contract.name, contract.line, kind, member)
        subject = self._subjects.get(key)
        if subject is None:
            subject = self._subjects[key] = (
                op_subject(contract.name, contract.line, member, self.hive)
                if kind == "op"
                else event_subject(contract.name, contract.line, member)
            )
        return subject

    def _route(self, contract: ContractBinding, kind: str, member: str) -> _Route:
        """How this transport sends ``member`` of ``contract``: worked out once, then cached by contract version
        (one route per version and member, for the binding used last). Callers look in ``_routes`` first."""
        sends, receives = contract.operation(member) if kind == "op" else (contract.event(member), "")
        target = self._frames.target(self._subject(contract, kind, member), contract.id)
        for counts in (self.stats.sent_on, self.stats.replies_on):
            counts.setdefault(target.subject, 0)
        route = self._routes[contract.id, kind, member] = _Route(
            contract,
            sends,
            receives,
            contract.validator(sends).is_valid,
            contract.validator(receives).is_valid if receives else _no_reply,
            target,
        )
        return route

    def _encoded(self, route: _Route, payload: Any) -> bytes:
        """``payload`` validated (or :class:`PayloadInvalid` before anything leaves) and encoded."""
        try:
            valid = route.sends_valid(payload)
        except Exception:  # a value the validator cannot read (a lone surrogate): check says so, structured
            valid = False
        if not valid:
            try:
                route.contract.check(route.sends, payload, moving="outgoing")  # raises, saying where and why
            except PayloadInvalid as exc:
                self.stats.invalid_out[exc.code] += 1
                raise
        try:
            data = orjson.dumps(payload)
        except TypeError:  # an integer past 64 bits, say: the codec's exact path decides
            try:
                data = encode(payload)
            except PayloadError as exc:
                self.stats.invalid_out[exc.code] += 1
                raise PayloadInvalid(
                    f"outgoing {route.contract.id} {route.sends} payload cannot be sent: {exc.message}",
                    contract=route.contract.id,
                    schema=route.sends,
                    pointer="",
                    keyword="",
                    moving="outgoing",
                    code=exc.code,
                ) from None
        limit = self._nc.max_payload
        if len(data) > limit:
            raise BusError(
                f"the payload is {len(data)} bytes; the server takes at most {limit}",
                code="payload.too_large",
                location=_at(route.target.subject),
                hint="send a reference (a blackboard key, a URL) instead of the data itself",
            )
        return data

    async def request(self, contract: ContractBinding, operation: str, payload: Any) -> Any:
        route = self._routes.get((contract.id, "op", operation))
        if route is None or route.contract is not contract:
            route = self._route(contract, "op", operation)
        if TRACING.tracer is None:
            return await self._request(route, operation, payload, None)
        subject = route.target.subject
        attributes = _attributes(subject, "send", "request", (contract.name, contract.line, "op", operation))
        with span(f"request {subject}", "client", attributes) as at:
            try:
                return await self._request(route, operation, payload, at.traceparent)
            except SubhiveError as exc:
                at.fail(exc.code, exc.message)
                raise

    async def _request(
        self, route: _Route, operation: str, payload: Any, traceparent: str | None, *, again: bool = False
    ) -> Any:
        contract = route.contract
        data = self._encoded(route, payload)
        subject = route.target.subject
        call = self._inbox.request(self._frames, route.target, data, self.request_timeout, traceparent)
        try:
            # The first use of a subject listens for a refusal too; after one success it is known allowed.
            msg = await (call if subject in self._allowed else self._violations.guard(call, subject))
            self._allowed.add(subject)
        except NoRespondersError:
            raise self._violations.pop(subject) or NotServed(
                f"nobody serves {contract.name} v{contract.line} operation {operation!r}",
                location=_at(subject),
                hint="start the provider hive (subhive up) or serve its mock",
            ) from None
        except ConnectionLost:
            if operation in contract.idempotent and not again:
                # Its provider promised that handling it twice is handling it once: send it once more, on the
                # connection coming back (nats-py holds it until then), instead of leaving the caller to guess.
                self.stats.retried += 1
                return await self._request(route, operation, payload, traceparent, again=True)
            raise BusError(
                f"{subject}: the connection to NATS was lost while the request waited; it may or may not have "
                "been handled",
                code="bus.unavailable",
                location=_at(subject),
                hint="retry once the connection is back (it reconnects by itself) if the operation is safe to repeat",
            ) from None
        except NatsTimeout:
            if self._unavailable():
                raise BusError(
                    f"{subject}: no answer within {self.request_timeout} s while the NATS server is "
                    "unavailable (reconnecting)",
                    code="bus.unavailable",
                    location=_at(subject),
                    hint="retry once the server is back",
                ) from None
            raise self._violations.pop(subject) or BusError(
                f"{subject}: no answer within {self.request_timeout} s",
                code="bus.timeout",
                location=_at(subject),
                hint="the provider is overloaded or stuck; see its logs",
            ) from None
        except nats.errors.Error as exc:  # closed, draining, the reconnect buffer full: never nats-py's own error
            raise BusError(
                f"{subject}: the request was not sent ({type(exc).__name__})",
                code="bus.unavailable",
                location=_at(subject),
                hint="retry once the connection is back",
            ) from None
        self.stats.sent += 1
        self.stats.sent_on[subject] += 1
        self.stats.replies_on[subject] += 1
        headers = msg.headers or {}
        if H_ERROR in headers:
            raise RemoteError(WireError.from_bytes(msg.data, code=headers[H_ERROR], subject=subject))
        try:
            reply = decode(msg.data)
        except Exception as exc:  # anything at all: a reply's bytes must not crash the caller
            error = _unreadable(exc, subject)
            await self._keep(_reply_of(route, operation), subject, msg.data, headers, error)
            raise BusError(error.message, code=error.code, location=_at(subject)) from None
        if not route.receives_valid(reply):
            try:
                contract.check(route.receives, reply, moving="incoming")
            except PayloadInvalid as exc:
                await self._keep(_reply_of(route, operation), subject, msg.data, headers, _wire(exc, subject))
                raise
        return reply

    async def publish(self, contract: ContractBinding, event: str, payload: Any, *, msg_id: str | None = None) -> None:
        """Emit ``event``; returns once JetStream stored it. Pass ``msg_id`` when retrying after an unknown
        outcome (a timeout, a restart): the stream keeps one copy per id within its duplicate window."""
        route = self._routes.get((contract.id, "ev", event))
        if route is None or route.contract is not contract:
            route = self._route(contract, "ev", event)
        if TRACING.tracer is not None:
            await self._publish_traced(route, event, payload, msg_id)
            return
        data = self._encoded(route, payload)
        if not self.durable_events:
            if msg_id is None:
                await self._frames.send(route.target, data)
            else:
                await self._nc.publish(route.target.subject, data, headers=self._headers(contract, msg_id))
            self.stats.sent += 1
            self.stats.sent_on[route.target.subject] += 1
            return
        # a message id, always: a retry never stores the event twice
        await self._durable(route.target.subject, data, self._headers(contract, msg_id))

    async def _publish_traced(self, route: _Route, event: str, payload: Any, msg_id: str | None) -> None:
        """:meth:`publish` in a producer span, whose traceparent the event carries."""
        subject, contract = route.target.subject, route.contract
        attributes = _attributes(subject, "send", "publish", (contract.name, contract.line, "ev", event))
        with span(f"publish {subject}", "producer", attributes) as at:
            try:
                data = self._encoded(route, payload)
                at.set("messaging.message.body.size", len(data))
                headers = self._frames.headers(contract.id, at.traceparent, msg_id)
                at.set("messaging.message.id", headers[H_MSG_ID])
                if self.durable_events:
                    await self._durable(subject, data, headers)
                    return
                await self._nc.publish(subject, data, headers=headers)
            except SubhiveError as exc:
                at.fail(exc.code, exc.message)
                raise
            self.stats.sent += 1
            self.stats.sent_on[subject] += 1

    async def _durable(self, subject: str, data: bytes, headers: dict[str, str]) -> None:
        """Store an event in its stream, errors mapped to ``bus.*`` codes."""
        try:
            await self._store(subject, data, headers)
        except (NoStreamResponseError, NatsTimeout, NoRespondersError) as exc:
            violation = self._violations.pop(subject)
            if violation is not None:
                raise violation from None
            if not isinstance(exc, NoStreamResponseError) and self._unavailable():
                raise BusError(
                    f"the event on {subject} was not stored: the NATS server is unavailable "
                    "(reconnecting, or JetStream still starting)",
                    code="bus.unavailable",
                    location=_at(subject),
                    hint="retry with the same msg_id: the stream keeps one "
                    "copy per id, so a retry never stores the event twice",
                ) from None
            raise BusError(
                f"no stream stored the event on {subject}",
                code="bus.no_stream",
                location=_at(subject),
                hint="the framework creates event streams from the lock (subhive.bus.ensure_event_streams)",
            ) from None
        except nats.errors.Error as exc:  # closed, draining, the reconnect buffer full...
            raise BusError(
                f"the event on {subject} was not stored: {type(exc).__name__}",
                code="bus.unavailable",
                location=_at(subject),
                hint="retry with the same msg_id once the server is back",
            ) from None
        self.stats.sent += 1
        self.stats.sent_on[subject] = self.stats.sent_on.get(subject, 0) + 1

    async def _store(self, subject: str, data: bytes, headers: dict[str, str]) -> None:
        """One durable publish, acknowledged by its stream; with ``failover``, retried with the same headers
        (message id included) while no stream answers, until ``failover`` seconds have passed."""

        async def attempt() -> None:
            call = self._js.publish(subject, data, headers=headers, timeout=self.request_timeout)
            await (call if subject in self._allowed else self._violations.guard(call, subject))
            self._allowed.add(subject)

        def retried() -> None:
            self.stats.retried += 1

        await through_failover(attempt, self.failover, give_up=lambda: bool(self._violations.seen), on_retry=retried)

    def _unavailable(self) -> bool:
        """Whether the connection is down, or came back so recently that JetStream may still be starting."""
        nc, bumped = self._nc, self._violations.bumped_at
        return not nc.is_connected or nc.is_reconnecting or (bumped > 0 and time.monotonic() - bumped < _WARMUP)

    # -- receiving ----------------------------------------------------------------------------------------

    def _refusal(self, contract: ContractBinding, headers: Mapping[str, str], subject: str) -> WireError | None:
        """Why a message's headers make it unacceptable, or None."""
        sent_as = headers.get(H_CONTRACT)
        if not sent_as or not headers.get(H_SENDER):
            return WireError(
                "bus.missing_header", f"the message lacks {H_CONTRACT if not sent_as else H_SENDER}", subject=subject
            )
        refusal = _sender_refusal(contract, headers, subject)
        if refusal is not None:
            return refusal
        name, _, version = sent_as.partition("@")
        if name != contract.name or _line_of(version) != contract.line:
            return WireError(
                "bus.wrong_contract", f"sent as {sent_as}, served as {contract.name} v{contract.line}", subject=subject
            )
        if self.allowed_senders is not None:
            allowed = self.allowed_senders.get((contract.name, contract.line), set())
            if headers[H_SENDER] not in allowed:  # the vouched sender: _sender_refusal checked they agree
                return WireError(
                    "bus.sender_unknown",
                    f"{headers[H_SENDER]} is not a registered consumer of {contract.name} v{contract.line}",
                    subject=subject,
                )
        return None

    def _accept(self, contract: ContractBinding, schema: str, msg: Msg) -> tuple[Any, WireError | None]:
        """The validated payload of ``msg``, or the reason to refuse it (the caller keeps it: :meth:`_keep`).
        Never raises: whatever the bytes, the answer is a payload or a structured refusal."""
        headers = msg.headers or {}
        refusal = self._refusal(contract, headers, msg.subject)
        payload: Any = None
        if refusal is None:
            try:
                payload = decode(msg.data)
            except Exception as exc:  # RecursionError, MemoryError...: nothing may escape and stop the consumer
                refusal = _unreadable(exc, msg.subject)
        if refusal is None:
            try:
                contract.check(schema, payload, moving="incoming")
            except PayloadInvalid as exc:
                refusal = _wire(exc, msg.subject)
            except Exception as exc:
                refusal = WireError(
                    "payload.malformed", f"the payload cannot be validated ({type(exc).__name__})", subject=msg.subject
                )
        self.stats.received += 1
        self.stats.received_on[msg.subject] = self.stats.received_on.get(msg.subject, 0) + 1
        return payload, refusal

    async def _keep(
        self, where: tuple[str, str, str, str], subject: str, data: bytes, headers: Mapping[str, str], error: WireError
    ) -> str:
        """Count a refusal and keep the message in the dead-letter stream; never raises. Returns the letter's
        id (``dlq-<hive>-...``), or "" when the stream did not store it (an event that was not kept must not be
        terminated: it comes back later; a caller must not be told of a letter that does not exist)."""
        self.stats.refused[error.code] += 1
        try:
            kept = await publish_dead_letter(
                self._js, self.hive, where=where, subject=subject, data=data, headers=headers, error=error
            )
            self.stats.dead_lettered += 1
            return kept
        except Exception as exc:  # the refusal itself is answered/counted; losing the copy must not crash the hive
            self.stats.refused["deadletter.failed"] += 1
            log.error("%s: could not keep a dead letter from %s (%s): %s", self.hive, subject, error.code, exc)
            return ""

    async def serve(self, contract: ContractBinding, handlers: Mapping[str, Handler]) -> Subscription:
        """Answer ``handlers``' operations in queue group ``subhive.<contract>.v<line>``: replicas share."""
        subs: list[NatsSubscription] = []
        for operation, handler in handlers.items():
            contract.operation(operation)
            subject = op_subject(contract.name, contract.line, operation)  # ...op.<operation>.* : every sender
            callback = self._on_request(contract, operation, handler)
            subs.append(
                await self._nc.subscribe(
                    subject, queue=f"subhive.{contract.name}.{line_name(contract.line)}", cb=callback
                )
            )
        await self._confirm([s.subject for s in subs], subs)
        return _Group([s.unsubscribe for s in subs])

    async def _confirm(self, subjects: list[str], subs: list[NatsSubscription]) -> None:
        """Raise if the server refused any of these subscriptions (it says so asynchronously)."""
        # The server answers a SUB it refuses with -ERR before the PONG of any later PING, and nats-py hands
        # that -ERR to error_cb before it reads the PONG. But flush() writes its PING ahead of commands still
        # buffered, so one round trip proves nothing: loop until _CONFIRM_ROUND_TRIPS have passed with no
        # verdict (a refusal ends it at once); those past the second within _CONFIRM_WITHIN seconds in all.
        await self._nc.flush()
        await self._nc.flush()  # this PING went out behind the SUBs: its PONG is the server's verdict
        until = time.monotonic() + _CONFIRM_WITHIN
        for trip in range(_CONFIRM_ROUND_TRIPS - 1):
            if trip:  # more round trips, each a chance for a late error_cb; a slow one only ends the wait
                with contextlib.suppress(NatsTimeout):
                    await self._nc.flush(timeout=1)
            await asyncio.sleep(0)  # an error_cb the read loop scheduled rather than awaited gets its turn
            for subject in subjects:
                violation = self._violations.pop(subject)
                if violation is not None:
                    for sub in subs:
                        with contextlib.suppress(Exception):
                            await sub.unsubscribe()
                    raise violation
            if trip and time.monotonic() > until:
                return

    def _on_request(
        self, contract: ContractBinding, operation: str, handler: Handler
    ) -> Callable[[Msg], Awaitable[None]]:
        async def on_message(msg: Msg) -> None:
            # One subscription's callbacks run one at a time: answer each request in a task of its own.
            await self._slots.acquire()
            task = asyncio.create_task(self._answer(contract, operation, handler, msg))
            self._tasks.add(task)
            task.add_done_callback(self._done)

        return on_message

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._slots.release()

    async def _answer(self, contract: ContractBinding, operation: str, handler: Handler, msg: Msg) -> None:
        """Answer one request: its reply or a structured error reply, never silence; never raises (a task's
        exception would only be a traceback in the log, and the caller would wait for nothing)."""
        try:
            await self._answer_once(contract, operation, handler, msg)
        except Exception as exc:  # a bug of ours, or the connection went away: the caller still hears, if it can
            log.error("%s: answering %s failed: %s: %s", self.hive, msg.subject, type(exc).__name__, exc)
            if msg.reply:
                error = WireError(
                    "handler.failed", f"the provider could not answer ({type(exc).__name__})", subject=msg.subject
                )
                with contextlib.suppress(Exception):
                    await self._nc.publish(
                        msg.reply,
                        error.to_bytes(),
                        headers={H_CONTRACT: contract.id, H_SENDER: self.hive, H_ERROR: error.code},
                    )

    async def _answer_once(self, contract: ContractBinding, operation: str, handler: Handler, msg: Msg) -> None:
        input_schema, output_schema = contract.operation(operation)
        payload, refusal = self._accept(contract, input_schema, msg)
        kept = refusal is not None  # a request that breaks the contract is kept, as is one the handler failed on
        failure = ""  # the error class of a failure of this hive, for on_repeated_failure
        data = b""
        where = (contract.name, contract.line, "op", operation)
        if refusal is None:
            parent = (msg.headers or {}).get(H_TRACE)
            started = time.perf_counter()
            if TRACING.tracer is None:
                with continue_trace(parent):
                    reply, refusal, failure = await self._call(handler, payload, msg)
            else:
                attributes = _attributes(msg.subject, "process", "process", where)
                with span(f"process {msg.subject}", "server", attributes, parent=parent or "") as at:
                    reply, refusal, failure = await self._call(handler, payload, msg)
                    if refusal is not None:
                        at.fail(refusal.code, refusal.message)
            self.stats.observe(where, time.perf_counter() - started)
            if refusal is None:
                try:
                    contract.check(output_schema, reply, moving="outgoing")
                    data = encode(reply)
                except (PayloadInvalid, PayloadError) as exc:  # e.g. a lone surrogate the schema allowed
                    pointer, keyword = getattr(exc, "pointer", ""), getattr(exc, "keyword", "")
                    refusal = WireError(
                        "provider.invalid_reply",
                        f"the provider's reply broke the contract: {exc.message}",
                        pointer,
                        keyword,
                        msg.subject,
                    )
                    failure = "provider.invalid_reply"
            kept = bool(failure)
        headers = msg.headers or {}
        if kept and refusal is not None:
            # Kept before the answer, which names the letter only once it exists (a full stream keeps none).
            # Only refusals wait for the stream: one JetStream ack, on the error path.
            letter = await self._keep(where, msg.subject, msg.data, headers, refusal)
            refusal = WireError(
                refusal.code, refusal.message, refusal.pointer, refusal.keyword, refusal.subject, letter
            )
        if msg.reply:  # else a publish, not a request (a replay, say): nobody waits for an answer
            self.stats.replied_on[msg.subject] = self.stats.replied_on.get(msg.subject, 0) + 1
            if refusal is not None:
                await self._nc.publish(
                    msg.reply,
                    refusal.to_bytes(),
                    headers={H_CONTRACT: contract.id, H_SENDER: self.hive, H_ERROR: refusal.code},
                )
            else:
                # A reply goes to the one inbox that asked, for the contract it asked about: headers would tell
                # the caller nothing new, and nats-py parses them byte by byte. No Subhive-Error means success.
                await self._frames.reply(msg.reply, data)
                self.stats.sent += 1
        if refusal is None:
            return
        if failure:
            await self._failed(where, refusal, msg.data, failure)

    async def _call(self, handler: Handler, payload: Any, msg: Msg) -> tuple[Any, WireError | None, str]:
        """The handler's reply; or its deliberate refusal (a :class:`Refusal`: its code goes back); or its failure
        (``handler.failed``, or ``handler.timeout`` past ``request_deadline``, and the error class and text for
        the repair report). A hung handler is cancelled: the caller hears in time, and its slot is freed."""
        try:
            return await self._deadlines.call(handler(payload), self.request_deadline), None, ""
        except Refusal as exc:
            return None, WireError(exc.code, exc.message, subject=msg.subject), ""
        except Exception as exc:  # a bug: the caller learns the class, never a traceback or a repr
            if isinstance(exc, Late):
                return (
                    None,
                    WireError(
                        "handler.timeout",
                        f"the provider did not answer within {self.request_deadline:g} s",
                        subject=msg.subject,
                    ),
                    "handler.timeout",
                )
            kind = _error_class(exc)
            return (
                None,
                WireError("handler.failed", f"the provider failed on this request ({kind})", subject=msg.subject),
                f"{kind}: {exc}",
            )

    async def _failed(
        self, where: tuple[str, str, str, str], error: WireError, sample: bytes, detail: str = ""
    ) -> None:
        """Count a failure of this hive; the second of one error class (the detail's ``Class code`` before the
        colon) on one member goes to ``on_repeated_failure``, once: one repair proposal per class."""
        contract, _, _, member = where
        kind = detail.split(":", 1)[0]
        key = (kind or error.code, contract, member)
        self._failures[key] += 1  # stats.refused counts it where it is kept (or, for an event, once it is dead)
        if self._failures[key] == 2 and self.on_repeated_failure is not None:
            # The member's subject, not one sender's (...op.<operation>.<sender>): the root keeps one pending
            # repair per (hive, code, contract, member, subject), whoever sent the failing requests.
            parts = error.subject.split(".")
            subject = ".".join(parts[:5]) if len(parts) == 6 and parts[3] == "op" else error.subject
            failure = Failure(
                self.hive,
                error.code,
                contract,
                member,
                subject,
                2,
                f"{error.message}: {detail}"[:500] if detail else error.message,
                sample[:4096],
                kind,
            )
            with contextlib.suppress(Exception):  # reporting must not turn one failure into two
                await self.on_repeated_failure(failure)

    # -- events -------------------------------------------------------------------------------------------

    async def subscribe(self, contract: ContractBinding, event: str, callback: EventCallback) -> Subscription:
        """Deliver ``event`` to ``callback``: durably (a consumer that survives restarts), unless the
        transport was made with ``durable_events=False``."""
        schema = contract.event(event)
        subject = self._subject(contract, "ev", event)
        where = (contract.name, contract.line, "ev", event)
        if not self.durable_events:

            async def on_event(msg: Msg) -> None:
                try:
                    payload, refusal = self._accept(contract, schema, msg)
                    if refusal is not None:
                        await self._keep(where, msg.subject, msg.data, msg.headers or {}, refusal)
                        return
                    await self._deliver_once(callback, payload, msg, where)
                except Exception as exc:  # never let one message stop the subscription
                    log.error("%s: delivering %s failed: %s: %s", self.hive, msg.subject, type(exc).__name__, exc)

            sub = await self._nc.subscribe(subject, cb=on_event)
            await self._confirm([subject], [sub])
            return _Group([sub.unsubscribe])
        spec = event_consumer(self.hive, contract.name, contract.line, event, ack_wait=self.ack_wait)
        try:
            # Binding to the hive's own consumer (the framework made it) is where a missing grant shows: name the
            # event. Where the consumer is missing, only a connection with the right to create it gets further.
            pull = await self._violations.guard(
                bind_consumer(self._js, self._nc, spec), "$JS.API.CONSUMER.*", shown=subject
            )
        except PermissionViolation as exc:
            if "consumer.create" not in exc.message:
                raise
            raise BusError(
                f"no durable consumer {spec.name} reads {subject} for {self.hive}, and a hive may not create one",
                code="bus.no_consumer",
                location=_at(subject),
                hint="the framework creates every hive's consumers from the lock (subhive up; in code, "
                "subhive.bus.ensure_consumers with an admin connection)",
            ) from None
        except (NatsTimeout, NoRespondersError, nats.js.errors.Error) as exc:
            raise self._violations.pop("$JS.API.CONSUMER.*", shown=subject) or BusError(
                f"cannot consume {subject}: {exc}",
                code="bus.no_stream",
                location=_at(subject),
                hint="the framework creates event streams and consumers from the lock "
                "(subhive.bus.ensure_event_streams, ensure_consumers)",
            ) from None
        task = asyncio.create_task(self._consume(pull, contract, schema, callback, where))

        async def stop() -> None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await pull.unsubscribe()  # the durable consumer stays: what arrives meanwhile waits for us

        try:
            replays = await self._take_replays(contract, schema, callback, where)
        except BaseException:
            with contextlib.suppress(Exception):
                await stop()
            raise
        return _Group([stop, replays.unsubscribe])

    async def _take_replays(
        self, contract: ContractBinding, schema: str, callback: EventCallback, where: tuple[str, str, str, str]
    ) -> NatsSubscription:
        """Listen for the framework's replays of this hive's dead letters of one event (decision 0047): they come
        to this hive alone, on its replay subject, and pass the checks of a delivery of the event itself (headers,
        the provider as the vouched sender, the schema). The handler runs once; a refusal or a failure is kept
        again as a dead letter of the event, which can be replayed once more."""
        subject = self._subject(contract, "ev", where[3])
        listen = replay_subject(self.hive, contract.name, contract.line, where[3])

        async def on_replay(msg: Msg) -> None:
            try:
                as_event = replace(msg, subject=subject, reply="")  # checked as the event it replays
                headers = msg.headers or {}
                payload, refusal = self._accept(contract, schema, as_event)
                if refusal is None:
                    failed = await self._deliver_once(callback, payload, as_event, where)
                    if not failed:
                        return
                    refusal = WireError(failed, "the handler failed on this replayed event", subject=subject)
                await self._keep(where, subject, msg.data, headers, refusal)
            except Exception as exc:  # never let one replay stop the subscription
                log.error("%s: replaying %s failed: %s: %s", self.hive, subject, type(exc).__name__, exc)

        # A queue group: of several replicas of this hive, one takes each replay.
        sub = await self._nc.subscribe(listen, queue="subhive.replay", cb=on_replay)
        await self._confirm([listen], [sub])
        return sub

    async def _consume(
        self,
        pull: Any,
        contract: ContractBinding,
        schema: str,
        callback: EventCallback,
        where: tuple[str, str, str, str],
    ) -> None:
        while True:
            try:
                # A long wait (it ends when a delivery arrives): an idle hive must not wake every second.
                messages = await pull.fetch(batch=64, timeout=60.0)
            except TimeoutError:  # nats-py raises its own and, when its deadline passes early, asyncio's
                continue
            except nats.errors.ConnectionClosedError:
                return
            except (nats.errors.Error, nats.js.errors.Error):
                await asyncio.sleep(0.2)  # reconnecting (a server restart): the durable consumer waits for us
                continue
            # Fetched but not yet handled is not crashed: keep the whole batch alive while a slow handler runs.
            alive = asyncio.create_task(_keep_alive(messages, self.ack_wait / 3, pull))
            try:
                for msg in messages:
                    try:
                        await self._deliver(msg, contract, schema, callback, where)
                    except Exception as exc:  # never stop consuming: unacknowledged, it comes back after ack_wait
                        log.error("%s: delivering %s failed: %s: %s", self.hive, msg.subject, type(exc).__name__, exc)
            finally:
                alive.cancel()

    async def _deliver(
        self,
        msg: Msg,
        contract: ContractBinding,
        schema: str,
        callback: EventCallback,
        where: tuple[str, str, str, str],
    ) -> None:
        payload, refusal = self._accept(contract, schema, msg)
        if refusal is not None:  # a message that breaks the contract stays broken: kept, never redelivered
            await self._dead(msg, where, refusal, None)
            return
        key: tuple[str, int] | None = None
        failures, code = 0, "handler.failed"
        delivered = _delivered(msg)
        if delivered > 1:  # a first delivery has no count yet: only a redelivery pays for reading the metadata
            key = _sequence(msg)
            count = self._attempts.get(key)
            if count is not None:
                failures, code, _ = count
            elif delivered > self.crash_bound and self._crashed.get(where, key) == key:
                # Delivered again and again, never failing here: its handler ends the process. Kept instead of
                # coming back forever; one per consumer and process (the first in line is the one that crashed).
                self._crashed[where] = key
                error = WireError(
                    "delivery.crashed",
                    f"delivered {delivered} times, its handler never finished "
                    "nor failed: it stops the consuming process",
                    subject=msg.subject,
                )
                await self._dead(msg, where, error, None)
                return
            elif self._unsettled:
                # It may be what crashed the last run: before its handler runs, the acks this run sent must
                # reach the server, or a crash now brings those events back too, their count growing with it.
                await self._settle()
        if failures < HANDLER_ATTEMPTS:
            failed = await self._deliver_once(callback, payload, msg, where)
            if not failed:
                await msg.ack()
                self._unsettled = True
                if key is not None:
                    self._attempts.pop(key, None)
                return
            failures, code = failures + 1, failed
            key = key or _sequence(msg)
            self._count(key, failures, code)
            if failures < HANDLER_ATTEMPTS:
                self.stats.retried += 1
                await msg.nak()
                return
        error = WireError(
            code,
            f"the handler failed {HANDLER_ATTEMPTS} times on this event"
            + (f" (the last: not finished within {self.event_deadline:g} s)" if code == "handler.timeout" else ""),
            subject=msg.subject,
        )
        await self._dead(msg, where, error, key)

    async def _settle(self) -> None:
        """Wait until the server has the acks sent so far: the second PING goes out behind them (see _confirm)."""
        with contextlib.suppress(Exception):  # reconnecting: the acks wait in nats-py's buffer either way
            await self._nc.flush()
            await self._nc.flush()
            self._unsettled = False

    def _count(self, key: tuple[str, int], failures: int, code: str) -> None:
        """Remember an event's failures; forget retries older than ``_ATTEMPTS_TTL`` (another replica handled the
        retry, and acknowledged it where this transport cannot see). A count that reached the last attempt stays
        until its event is kept: a full dead-letter stream may hold it longer, and it must not run again."""
        now = time.monotonic()
        self._attempts[key] = (failures, code, now)
        stale = [k for k, (n, _, at) in self._attempts.items() if now - at > _ATTEMPTS_TTL and n < HANDLER_ATTEMPTS]
        for k in stale:
            del self._attempts[k]

    async def _dead(
        self, msg: Msg, where: tuple[str, str, str, str], error: WireError, key: tuple[str, int] | None
    ) -> None:
        """Dead-letter an event, then terminate it; if the dead-letter stream did not take it, the event comes
        back later (nak with a delay doubling each time, up to 5 minutes) instead of being dropped, and the
        handler is not run again for it; ``stats.dead_letter_blocked`` says how many are held so."""
        if await self._keep(where, msg.subject, msg.data, msg.headers or {}, error):
            await msg.term()
            if key is not None:
                self._attempts.pop(key, None)
            self._held.kept(_sequence(msg))
        else:
            await msg.nak(delay=self._held.failed(_sequence(msg)))
        self.stats.dead_letter_blocked = self._held.held()

    async def _deliver_once(
        self, callback: EventCallback, payload: Any, msg: Msg, where: tuple[str, str, str, str]
    ) -> str:
        """Run the handler once, in the sender's trace (a consumer span, while tracing): ``""`` if it returned,
        else the failure's code (``handler.failed``, or ``handler.timeout`` once it ran past ``event_deadline``:
        cancelled, so the events behind it go on)."""
        parent = (msg.headers or {}).get(H_TRACE)
        started = time.perf_counter()
        if TRACING.tracer is None:
            with continue_trace(parent):
                failed = await self._run_event(callback, payload, msg, where)
        else:
            attributes = _attributes(msg.subject, "process", "process", where)
            with span(f"process {msg.subject}", "consumer", attributes, parent=parent or "") as at:
                failed = await self._run_event(callback, payload, msg, where)
                if failed:
                    at.fail(failed)
        self.stats.observe(where, time.perf_counter() - started)
        return failed

    async def _run_event(
        self, callback: EventCallback, payload: Any, msg: Msg, where: tuple[str, str, str, str]
    ) -> str:
        try:
            await self._deadlines.call(callback(payload), self.event_deadline)
            return ""
        except Exception as exc:
            if isinstance(exc, Late):
                refusal = WireError(
                    "handler.timeout",
                    f"the event handler did not finish within {self.event_deadline:g} s",
                    subject=msg.subject,
                )
                detail = "handler.timeout"
            else:
                kind = _error_class(exc)
                refusal = WireError("handler.failed", f"the event handler failed ({kind})", subject=msg.subject)
                detail = f"{kind}: {exc}"
            await self._failed(where, refusal, msg.data, detail)
            return refusal.code


async def _keep_alive(messages: list[Msg], period: float, pull: Any) -> None:
    """Tell the server every ``period`` seconds that ``messages`` (and what ``pull`` received behind them) are
    still being worked on (those already acknowledged refuse quietly), so a slow handler is not taken for a
    crashed consumer, nor are the events waiting behind it."""
    waiting = getattr(pull, "waiting", list)
    while True:
        await asyncio.sleep(period)
        for msg in [*messages, *waiting()]:
            with contextlib.suppress(Exception):
                await msg.in_progress()


def _line_of(version: str) -> str | None:
    """The line of a version a header names, or None when it names none (then no line matches it)."""
    try:
        return Version.parse(version).line
    except ValueError:
        return None


def _attributes(subject: str, kind: str, name: str, where: tuple[str, str, str, str]) -> dict[str, str | int]:
    """A span's attributes, as OpenTelemetry's messaging conventions name them, and the contract member."""
    return {
        "messaging.system": "nats",
        "messaging.destination.name": subject,
        "messaging.operation.type": kind,
        "messaging.operation.name": name,
        "subhive.contract": where[0],
        "subhive.contract.line": where[1],
        "subhive.member": where[3],
    }


def _delivered(msg: Msg) -> int:
    """How many times the server has delivered ``msg``, this time included: read from its ack subject,
    ``$JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<time>.<pending>``, without building
    the metadata (nats-py parses the longer, newer form)."""
    tokens = (msg.reply or "").split(".")
    return int(tokens[4]) if len(tokens) == 9 else msg.metadata.num_delivered


def _sequence(msg: Msg) -> tuple[str, int]:
    """Which event ``msg`` is, whatever its delivery: its stream and stream sequence."""
    meta = msg.metadata
    return meta.stream, meta.sequence.stream


def _error_class(exc: BaseException) -> str:
    """``KeyError``, or ``KnowledgeSourceFailed ks.stalled`` for a subhive error: what callers and repairs see."""
    return f"{type(exc).__name__} {exc.code}" if isinstance(exc, SubhiveError) else type(exc).__name__


def _unreadable(exc: BaseException, subject: str) -> WireError:
    """The refusal of bytes the codec could not read, whatever it raised."""
    if isinstance(exc, PayloadError):
        return WireError(exc.code, exc.message, subject=subject)
    code = (
        "payload.too_deep"
        if isinstance(exc, RecursionError)
        else "payload.too_large"
        if isinstance(exc, MemoryError)
        else "payload.bad_unicode"
        if isinstance(exc, UnicodeError)
        else "payload.malformed"
    )
    return WireError(code, f"the payload cannot be read ({type(exc).__name__})", subject=subject)


#: What a sender or contract header may hold: a name or ``name@version``, visible ASCII, short.
_HEADER_VALUE = re.compile(r"[!-~]{1,128}")


def _sender_refusal(contract: ContractBinding, headers: Mapping[str, str], subject: str) -> WireError | None:
    """Refuse a message whose ``Subhive-Sender`` is not the sender the server vouches for: a request's comes from
    its subject (``...op.<operation>.<sender>``, which only that hive may publish on), an event's is the
    contract's provider (only the provider may publish events). Also refused: header values that are long or
    hold control characters, and a provider's error reply that a crafted reply subject sent here."""
    sender, sent_as = headers[H_SENDER], headers[H_CONTRACT]
    for name, value in ((H_SENDER, sender), (H_CONTRACT, sent_as)):
        if not _HEADER_VALUE.fullmatch(value):
            return WireError(
                "bus.header_invalid",
                f"{name} must be 1 to 128 visible ASCII characters (got {len(value)} characters)",
                subject=subject,
            )
    if H_ERROR in headers:
        return WireError(
            "bus.misdirected_reply",
            "an error reply, not a message: a request's reply subject sent it here",
            subject=subject,
        )
    kind = subject.split(".")[3:4]
    vouched = sender_of(subject) if kind == ["op"] else (contract.provider or None) if kind == ["ev"] else sender
    if vouched is None and kind == ["op"]:
        return WireError(
            "bus.sender_forged",
            "the subject names no sender (subhive.<contract>.v<line>.op.<operation>.<sender>)",
            subject=subject,
        )
    if vouched is not None and sender != vouched:
        return WireError(
            "bus.sender_forged",
            f"{H_SENDER} says {sender}, but only {vouched} can have sent this message",
            subject=subject,
        )
    return None


def _wire(exc: PayloadInvalid, subject: str) -> WireError:
    return WireError(exc.code, exc.message, exc.pointer, exc.keyword, subject)
