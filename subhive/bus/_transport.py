"""The contract bus: :class:`NatsTransport`, the :class:`~subhive.runtime.Transport` of hives over real NATS.

Generated clients and handler interfaces run on it unchanged (they speak only the Transport protocol)::

    transport = await NatsTransport.connect(endpoint, hive="web")
    await serve_orders(MyOrders(), transport)          # the provider: a queue group, so replicas share work
    await OrdersClient(transport).place_order(...)     # a consumer: request/reply, validated both ends

* Every payload is validated when it is sent (an invalid one raises before anything leaves) and when it is
  received. A refused request gets a structured error reply (:mod:`subhive.bus._wire`) and, like any refused
  message, is kept bytes intact in the dead-letter stream with the reason (:mod:`subhive.bus._deadletter`).
* Events are durable: published to JetStream (one stream per contract major, deduplicated by message id),
  consumed through a durable consumer per (hive, contract major, event), acknowledged only after the
  callback returns. A failing callback is retried once, then dead-lettered.
* The same failure twice (same code, same contract member) is reported once to ``on_repeated_failure``:
  the hive sends a repair proposal to the root from there.
* A publish or subscribe the server refuses (the hive's credentials) surfaces as
  :class:`~subhive.bus.PermissionViolation` naming the subject, instead of a silent drop or a timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import nats
import orjson
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription as NatsSubscription
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import NoStreamResponseError

from ..errors import Location, SubhiveError
from ..runtime import ContractBinding, EventCallback, Handler, NotServed, PayloadInvalid, Subscription
from ..runtime._trace import continue_trace, outgoing_traceparent
from ._codec import decode, encode
from ._deadletter import publish_dead_letter
from ._fastpub import Frames, Target
from ._inbox import Inbox
from ._permissions import durable_name, event_stream, event_subject, inbox_prefix, op_subject
from ._server import BusEndpoint
from ._wire import (
    H_CONTRACT,
    H_ERROR,
    H_SENDER,
    H_TRACE,
    BusError,
    PermissionViolation,
    RemoteError,
    WireError,
)

__all__ = ["BusStats", "Failure", "NatsTransport"]

#: A handler is called at most this many times for one event: the first try and one retry.
MAX_DELIVER = 2
T = TypeVar("T")
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


@dataclass
class BusStats:
    """Counters of one transport: what it sent and received, and what it refused, by code."""

    sent: int = 0
    received: int = 0
    refused: Counter[str] = field(default_factory=Counter)
    dead_lettered: int = 0
    retried: int = 0


class _Violations:
    """Permission violations the server reported (asynchronously, through ``error_cb``), by subject."""

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}
        self._changed = asyncio.Event()

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
        named = shown or subject
        via = f" (it refused {key})" if shown and shown != subject else ""
        return PermissionViolation(f"the NATS server refused to let this hive {verb} {named}{via}",
                                   location=_at(named),
                                   hint="a hive may only use the subjects of contracts it provides or consumes "
                                        "(from the lock); declare the contract in its subhive.toml and renegotiate")

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


def _reply_of(route: _Route, operation: str) -> tuple[str, int, str, str]:
    return route.contract.name, route.contract.major, "reply", operation


class _Group:
    def __init__(self, stops: list[Callable[[], Awaitable[None]]]) -> None:
        self._stops = stops

    async def stop(self) -> None:
        for stop in self._stops:
            with contextlib.suppress(Exception):  # the connection may be closed already
                await stop()


class NatsTransport:
    """Contract-typed messaging for hive ``hive`` over the NATS connection ``nc``.

    ``durable_events=False`` sends events as plain NATS messages (at most once, no stream needed): for
    telemetry-like events where throughput matters more than delivery. ``allowed_senders`` maps
    ``(contract, major)`` to the hives registered as its consumers (from the lock): a request from any other
    sender is refused (``bus.sender_unknown``), a second line of defence behind the server's permissions.
    """

    def __init__(self, nc: Client, hive: str, *, request_timeout: float = 5.0, ack_wait: float = 30.0,
                 durable_events: bool = True, max_concurrency: int = 64,
                 allowed_senders: Mapping[tuple[str, int], set[str]] | None = None,
                 on_repeated_failure: Callable[[Failure], Awaitable[None]] | None = None,
                 _violations: _Violations | None = None) -> None:
        self._nc = nc
        self._js = nc.jetstream()
        self.hive = hive
        self.request_timeout = request_timeout
        self.ack_wait = ack_wait
        self.durable_events = durable_events
        self.allowed_senders = allowed_senders
        self.on_repeated_failure = on_repeated_failure
        self.stats = BusStats()
        self._violations = _violations or _Violations()
        self._slots = asyncio.Semaphore(max_concurrency)
        self._tasks: set[asyncio.Task[None]] = set()
        self._failures: Counter[tuple[str, str, str]] = Counter()
        self._allowed: set[str] = set()  # subjects a publish already went through on
        self._subjects: dict[tuple[str, int, str, str], str] = {}
        self._frames = Frames(nc, hive)
        self._inbox = Inbox(nc)
        self._routes: dict[tuple[str, str, str], _Route] = {}

    @classmethod
    async def connect(cls, endpoint: BusEndpoint, hive: str, *, connect_timeout: float = 5.0,
                      **options: Any) -> NatsTransport:
        """Connect as ``hive`` (its own inbox prefix, so its credentials need no other hive's inboxes);
        raises ``bus.unavailable`` when no server answers within ``connect_timeout`` seconds."""
        violations = _Violations()
        try:
            # Reconnect forever once connected (a server restart), but bound the first connection: nats-py
            # keeps retrying it too, and an unreachable server must be an error, not a hang.
            nc = await asyncio.wait_for(nats.connect(**endpoint.connect_options(),  # type: ignore[arg-type]
                                                     name=f"subhive-{hive}", inbox_prefix=inbox_prefix(hive),
                                                     error_cb=violations.error_cb, ping_interval=5,
                                                     max_reconnect_attempts=-1, reconnect_time_wait=0.5,
                                                     connect_timeout=max(1, int(connect_timeout))),
                                        connect_timeout)
        except (OSError, nats.errors.Error, TimeoutError) as exc:
            raise BusError(f"cannot connect hive {hive} to {', '.join(endpoint.servers)}: {exc}",
                           code="bus.unavailable", hint="is the NATS server running (subhive up)?") from exc
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
        key = (contract.name, contract.major, kind, member)
        subject = self._subjects.get(key)
        if subject is None:
            make = op_subject if kind == "op" else event_subject
            subject = self._subjects[key] = make(contract.name, contract.major, member)
        return subject

    def _route(self, contract: ContractBinding, kind: str, member: str) -> _Route:
        """How this transport sends ``member`` of ``contract``: worked out once, then cached by contract version
        (one route per version and member, for the binding used last). Callers look in ``_routes`` first."""
        sends, receives = contract.operation(member) if kind == "op" else (contract.event(member), "")
        target = self._frames.target(self._subject(contract, kind, member), contract.id)
        route = self._routes[contract.id, kind, member] = _Route(
            contract, sends, receives, contract.validator(sends).is_valid,
            contract.validator(receives).is_valid if receives else _no_reply, target)
        return route

    def _encoded(self, route: _Route, payload: Any) -> bytes:
        """``payload`` validated (or :class:`PayloadInvalid` before anything leaves) and encoded."""
        if not route.sends_valid(payload):
            route.contract.check(route.sends, payload, moving="outgoing")  # raises, saying where and why
        try:
            data = orjson.dumps(payload)
        except TypeError:  # an integer past 64 bits, say: the codec's exact path decides
            data = encode(payload)
        limit = self._nc.max_payload
        if len(data) > limit:
            raise BusError(f"the payload is {len(data)} bytes; the server takes at most {limit}",
                           code="payload.too_large", location=_at(route.target.subject),
                           hint="send a reference (a blackboard key, a URL) instead of the data itself")
        return data

    async def request(self, contract: ContractBinding, operation: str, payload: Any) -> Any:
        route = self._routes.get((contract.id, "op", operation))
        if route is None or route.contract is not contract:
            route = self._route(contract, "op", operation)
        data = self._encoded(route, payload)
        subject = route.target.subject
        call = self._inbox.request(self._frames, route.target, data, self.request_timeout)
        try:
            # The first use of a subject listens for a refusal too; after one success it is known allowed.
            msg = await (call if subject in self._allowed else self._violations.guard(call, subject))
            self._allowed.add(subject)
        except NoRespondersError:
            raise self._violations.pop(subject) or NotServed(
                f"nobody serves {contract.name} v{contract.major} operation {operation!r}",
                location=_at(subject), hint="start the provider hive (subhive up) or serve its mock") from None
        except NatsTimeout:
            raise self._violations.pop(subject) or BusError(
                f"{subject}: no answer within {self.request_timeout} s", code="bus.timeout", location=_at(subject),
                hint="the provider is overloaded or stuck; see its logs") from None
        self.stats.sent += 1
        headers = msg.headers or {}
        if H_ERROR in headers:
            raise RemoteError(WireError.from_bytes(msg.data, code=headers[H_ERROR], subject=subject))
        try:
            reply = decode(msg.data)
        except ValueError as exc:
            error = WireError("payload.malformed", f"the payload is not JSON: {exc}", subject=subject)
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
        data = self._encoded(route, payload)
        if not self.durable_events:
            if msg_id is None:
                await self._frames.send(route.target, data)
            else:
                await self._nc.publish(route.target.subject, data, headers=self._headers(contract, msg_id))
            self.stats.sent += 1
            return
        subject = route.target.subject
        call = self._js.publish(subject, data, headers=self._headers(contract, msg_id), timeout=self.request_timeout)
        try:
            await (call if subject in self._allowed else self._violations.guard(call, subject))
            self._allowed.add(subject)
        except (NoStreamResponseError, NatsTimeout, NoRespondersError):
            raise self._violations.pop(subject) or BusError(
                f"no stream stored the event on {subject}", code="bus.no_stream", location=_at(subject),
                hint="the framework creates event streams from the lock (subhive.bus.ensure_event_streams)") from None
        self.stats.sent += 1

    # -- receiving ----------------------------------------------------------------------------------------

    def _refusal(self, contract: ContractBinding, headers: Mapping[str, str], subject: str) -> WireError | None:
        """Why a message's headers make it unacceptable, or None."""
        sent_as = headers.get(H_CONTRACT)
        if not sent_as or not headers.get(H_SENDER):
            return WireError("bus.missing_header", f"the message lacks {H_CONTRACT if not sent_as else H_SENDER}",
                             subject=subject)
        name, _, version = sent_as.partition("@")
        if name != contract.name or version.split(".")[0] != str(contract.major):
            return WireError("bus.wrong_contract", f"sent as {sent_as}, served as {contract.name} "
                             f"v{contract.major}", subject=subject)
        if self.allowed_senders is not None:
            allowed = self.allowed_senders.get((contract.name, contract.major), set())
            if headers[H_SENDER] not in allowed:
                return WireError("bus.sender_unknown", f"{headers[H_SENDER]} is not a registered consumer of "
                                 f"{contract.name} v{contract.major}", subject=subject)
        return None

    async def _accept(self, contract: ContractBinding, schema: str, msg: Msg,
                      where: tuple[str, int, str, str]) -> tuple[Any, WireError | None]:
        """The validated payload of ``msg``, or the reason to refuse it (already dead-lettered)."""
        headers = msg.headers or {}
        refusal = self._refusal(contract, headers, msg.subject)
        payload: Any = None
        if refusal is None:
            try:
                payload = decode(msg.data)
            except ValueError as exc:
                refusal = WireError("payload.malformed", f"the payload is not JSON: {exc}", subject=msg.subject)
        if refusal is None:
            try:
                contract.check(schema, payload, moving="incoming")
            except PayloadInvalid as exc:
                refusal = _wire(exc, msg.subject)
        self.stats.received += 1
        if refusal is not None:
            await self._keep(where, msg.subject, msg.data, headers, refusal)
        return payload, refusal

    async def _keep(self, where: tuple[str, int, str, str], subject: str, data: bytes,
                    headers: Mapping[str, str], error: WireError) -> None:
        """Count a refusal and keep the message in the dead-letter stream; never raises."""
        self.stats.refused[error.code] += 1
        try:
            await publish_dead_letter(self._js, self.hive, where=where, subject=subject, data=data, headers=headers,
                                      error=error)
            self.stats.dead_lettered += 1
        except Exception:  # the refusal itself is answered/counted; losing the copy must not crash the hive
            self.stats.refused["deadletter.failed"] += 1

    async def serve(self, contract: ContractBinding, handlers: Mapping[str, Handler]) -> Subscription:
        """Answer ``handlers``' operations in queue group ``subhive.<contract>.v<major>``: replicas share."""
        subs: list[NatsSubscription] = []
        for operation, handler in handlers.items():
            contract.operation(operation)
            subject = self._subject(contract, "op", operation)
            callback = self._on_request(contract, operation, handler)
            subs.append(await self._nc.subscribe(subject, queue=f"subhive.{contract.name}.v{contract.major}",
                                                 cb=callback))
        await self._confirm([s.subject for s in subs], subs)
        return _Group([s.unsubscribe for s in subs])

    async def _confirm(self, subjects: list[str], subs: list[NatsSubscription]) -> None:
        """Raise if the server refused any of these subscriptions (it says so asynchronously)."""
        # nats-py's flush() writes its PING ahead of commands still buffered; the second PING queues behind
        # them, so its PONG comes after the server's -ERR for a refused SUB (then error_cb needs a turn).
        await self._nc.flush()
        await self._nc.flush()
        await asyncio.sleep(0.01)
        for subject in subjects:
            violation = self._violations.pop(subject)
            if violation is not None:
                for sub in subs:
                    with contextlib.suppress(Exception):
                        await sub.unsubscribe()
                raise violation

    def _on_request(self, contract: ContractBinding, operation: str,
                    handler: Handler) -> Callable[[Msg], Awaitable[None]]:
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
        input_schema, output_schema = contract.operation(operation)
        where = (contract.name, contract.major, "op", operation)
        payload, refusal = await self._accept(contract, input_schema, msg, where)
        reply: Any = None
        if refusal is None:
            with continue_trace((msg.headers or {}).get(H_TRACE)):
                reply, refusal = await self._call(handler, payload, msg, where)
        if refusal is None:
            try:
                contract.check(output_schema, reply, moving="outgoing")
            except PayloadInvalid as exc:
                refusal = WireError("provider.invalid_reply", f"the provider's reply broke the contract: "
                                    f"{exc.message}", exc.pointer, exc.keyword, msg.subject)
                await self._failed(where, refusal, msg.data)
        if not msg.reply:
            return  # a publish, not a request (a replay, say): nobody waits for an answer
        if refusal is not None:
            await self._nc.publish(msg.reply, refusal.to_bytes(),
                                   headers={H_CONTRACT: contract.id, H_SENDER: self.hive, H_ERROR: refusal.code})
            return
        # A reply goes to the one inbox that asked, for the contract it asked about: headers would tell the
        # caller nothing new, and nats-py parses them byte by byte. The absence of Subhive-Error means success.
        await self._nc.publish(msg.reply, encode(reply))
        self.stats.sent += 1

    async def _call(self, handler: Handler, payload: Any, msg: Msg,
                    where: tuple[str, int, str, str]) -> tuple[Any, WireError | None]:
        try:
            return await handler(payload), None
        except SubhiveError as exc:  # the handler refused on purpose: its code and message go back
            return None, WireError(exc.code, exc.message, subject=msg.subject)
        except Exception as exc:  # a bug: the caller learns the class, never a traceback or a repr
            refusal = WireError("handler.failed", f"the provider failed on this request "
                                f"({type(exc).__name__})", subject=msg.subject)
            await self._failed(where, refusal, msg.data, detail=str(exc))
            return None, refusal

    async def _failed(self, where: tuple[str, int, str, str], error: WireError, sample: bytes,
                      detail: str = "") -> None:
        """Count a failure of this hive; the second of a kind goes to ``on_repeated_failure``, once."""
        contract, _, _, member = where
        key = (error.code, contract, member)
        self._failures[key] += 1
        self.stats.refused[error.code] += 1
        if self._failures[key] == 2 and self.on_repeated_failure is not None:
            failure = Failure(self.hive, error.code, contract, member, error.subject, 2,
                              f"{error.message}: {detail}"[:500] if detail else error.message, sample[:4096])
            with contextlib.suppress(Exception):  # reporting must not turn one failure into two
                await self.on_repeated_failure(failure)

    # -- events -------------------------------------------------------------------------------------------

    async def subscribe(self, contract: ContractBinding, event: str, callback: EventCallback) -> Subscription:
        """Deliver ``event`` to ``callback``: durably (a consumer that survives restarts), unless the
        transport was made with ``durable_events=False``."""
        schema = contract.event(event)
        subject = self._subject(contract, "ev", event)
        where = (contract.name, contract.major, "ev", event)
        if not self.durable_events:
            async def on_event(msg: Msg) -> None:
                payload, refusal = await self._accept(contract, schema, msg, where)
                if refusal is None:
                    with continue_trace((msg.headers or {}).get(H_TRACE)):
                        await self._deliver_once(callback, payload, msg, where)

            sub = await self._nc.subscribe(subject, cb=on_event)
            await self._confirm([subject], [sub])
            return _Group([sub.unsubscribe])
        durable = durable_name(self.hive, contract.name, contract.major, event)
        config = ConsumerConfig(ack_policy=AckPolicy.EXPLICIT, max_deliver=MAX_DELIVER, ack_wait=self.ack_wait,
                                deliver_policy=DeliverPolicy.ALL)
        stream = event_stream(contract.name, contract.major)
        try:
            # Creating or reading the hive's own consumer is where a missing grant shows: name the event.
            pull = await self._violations.guard(
                self._js.pull_subscribe(subject, durable=durable, stream=stream, config=config),
                "$JS.API.CONSUMER.*", shown=subject)
        except (NatsTimeout, NoRespondersError, nats.js.errors.Error) as exc:
            raise self._violations.pop("$JS.API.CONSUMER.*", shown=subject) or BusError(
                f"cannot consume {subject}: {exc}", code="bus.no_stream", location=_at(subject),
                hint="the framework creates event streams from the lock (subhive.bus.ensure_event_streams)") from None
        task = asyncio.create_task(self._consume(pull, contract, schema, callback, where))

        async def stop() -> None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await pull.unsubscribe()  # the durable consumer stays: what arrives meanwhile waits for us

        return _Group([stop])

    async def _consume(self, pull: Any, contract: ContractBinding, schema: str, callback: EventCallback,
                       where: tuple[str, int, str, str]) -> None:
        while True:
            try:
                messages = await pull.fetch(batch=64, timeout=1.0)
            except TimeoutError:  # nats-py raises its own and, when its deadline passes early, asyncio's
                continue
            except nats.errors.ConnectionClosedError:
                return
            except (nats.errors.Error, nats.js.errors.Error):
                await asyncio.sleep(0.2)  # reconnecting (a server restart): the durable consumer waits for us
                continue
            for msg in messages:
                await self._deliver(msg, contract, schema, callback, where)

    async def _deliver(self, msg: Msg, contract: ContractBinding, schema: str, callback: EventCallback,
                       where: tuple[str, int, str, str]) -> None:
        payload, refusal = await self._accept(contract, schema, msg, where)
        if refusal is not None:
            await msg.term()  # a message that breaks the contract stays broken: never redeliver it
            return
        with continue_trace((msg.headers or {}).get(H_TRACE)):
            ok = await self._deliver_once(callback, payload, msg, where)
        if ok:
            await msg.ack()
        elif msg.metadata.num_delivered < MAX_DELIVER:
            self.stats.retried += 1
            await msg.nak()
        else:
            error = WireError("handler.failed", f"the handler failed {MAX_DELIVER} times on this event",
                              subject=msg.subject)
            await self._keep(where, msg.subject, msg.data, msg.headers or {}, error)
            await msg.term()

    async def _deliver_once(self, callback: EventCallback, payload: Any, msg: Msg,
                            where: tuple[str, int, str, str]) -> bool:
        try:
            await callback(payload)
            return True
        except Exception as exc:
            refusal = WireError(getattr(exc, "code", None) or "handler.failed",
                                f"the event handler failed ({type(exc).__name__})", subject=msg.subject)
            await self._failed(where, refusal, msg.data, detail=str(exc))
            return False


def _wire(exc: PayloadInvalid, subject: str) -> WireError:
    return WireError(exc.code, exc.message, exc.pointer, exc.keyword, subject)
