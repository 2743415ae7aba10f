"""The durable JetStream consumers hives read through: how each is configured, and how it is created and bound.
The framework creates every consumer, never a hive: a consumer's config can make the server deliver anywhere
(docs/decisions/0025-framework-made-consumers.md); redelivery is unlimited and the transport counts real
failures (docs/decisions/0022-delivery-accounting.md). See docs/bus.md#durable-events.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from dataclasses import dataclass, field

import nats.errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import NotFoundError

from .._bounded import bounded
from ._permissions import Line, deliver_subject, durable_name, event_stream, event_subject, kv_bucket

__all__ = [
    "BOARD_ACK_WAIT",
    "BOARD_CONSUMER",
    "EVENT_ACK_WAIT",
    "EVENT_MAX_ACK_PENDING",
    "HANDLER_ATTEMPTS",
    "ConsumerSpec",
    "Deliveries",
    "bind_consumer",
    "board_consumer",
    "ensure_consumers",
    "event_consumer",
    "event_consumer_config",
]

#: The durable consumer a hive's controller reads its own board's writes through.
BOARD_CONSUMER = "controller"
#: Short, kept alive with ``in_progress`` while a write's activations run: a write handed to a controller that
#: died comes back to the next one within seconds.
BOARD_ACK_WAIT = 6.0
BOARD_MAX_ACK_PENDING = 1000
#: A handler is called at most this many times for one event (the first try and one retry) unless the
#: consumer crashed meanwhile: interrupted deliveries do not count.
HANDLER_ATTEMPTS = 2
#: Seconds before an unacknowledged event goes back to the consumer (a crashed hive's events come back then).
EVENT_ACK_WAIT = 30.0
#: What one hive has in flight per event: about one batch of the transport's loop.
EVENT_MAX_ACK_PENDING = 64
#: Server-side redeliveries are unlimited: the transport (or the controller) decides when a message has failed
#: often enough, so the server never drops one silently.
MAX_DELIVER_UNLIMITED = -1


def event_consumer_config(*, ack_wait: float = EVENT_ACK_WAIT, durable: str | None = None) -> ConsumerConfig:
    """The delivery accounting of a hive's durable consumer of one event: explicit acks, everything from the
    start, redelivered without limit (the transport, not the server, decides when an event is dead).
    :meth:`ConsumerSpec.config` adds where it delivers."""
    return ConsumerConfig(
        durable_name=durable,
        ack_policy=AckPolicy.EXPLICIT,
        deliver_policy=DeliverPolicy.ALL,
        max_deliver=MAX_DELIVER_UNLIMITED,
        ack_wait=ack_wait,
    )


@dataclass(frozen=True)
class ConsumerSpec:
    """One durable push consumer: on ``stream``, only ``filter_subject``, delivered to ``deliver_subject``
    (which only ``hive`` may subscribe to) in queue group ``name``."""

    hive: str
    stream: str
    name: str
    filter_subject: str
    deliver_subject: str
    ack_wait: float
    max_ack_pending: int
    max_deliver: int = MAX_DELIVER_UNLIMITED

    @property
    def ack_prefix(self) -> str:
        """What the reply subject of every real delivery of this consumer starts with."""
        return f"$JS.ACK.{self.stream}.{self.name}."

    def config(self, *, start_after: int = 0) -> ConsumerConfig:
        """The consumer's configuration; ``start_after``: a stream sequence already acknowledged (a consumer
        re-created as push keeps its place instead of redelivering everything)."""
        config = event_consumer_config(ack_wait=self.ack_wait, durable=self.name)
        config.name, config.filter_subject = self.name, self.filter_subject
        config.deliver_subject, config.deliver_group = self.deliver_subject, self.name
        config.max_deliver, config.max_ack_pending = self.max_deliver, self.max_ack_pending
        if start_after:
            config.deliver_policy, config.opt_start_seq = DeliverPolicy.BY_START_SEQUENCE, start_after + 1
        return config


def event_consumer(
    hive: str, contract: str, line: Line, event: str, *, ack_wait: float = EVENT_ACK_WAIT
) -> ConsumerSpec:
    """The consumer through which ``hive`` reads ``event`` of ``contract`` v``line`` (``Version.line``: "1", "0.2").

    >>> event_consumer("web", "orders", 1, "order_placed").deliver_subject
    '_INBOX_web.deliver.web__orders__v1__order_placed'
    """
    name = durable_name(hive, contract, line, event)
    return ConsumerSpec(
        hive,
        event_stream(contract, line),
        name,
        event_subject(contract, line, event),
        deliver_subject(hive, name),
        ack_wait,
        EVENT_MAX_ACK_PENDING,
    )


def board_consumer(hive: str) -> ConsumerSpec:
    """The consumer through which ``hive``'s controller reads every write to its board.

    >>> board_consumer("web").stream, board_consumer("web").filter_subject
    ('KV_bb_web', '$KV.bb_web.>')
    """
    bucket = kv_bucket(hive)
    return ConsumerSpec(
        hive,
        f"KV_{bucket}",
        BOARD_CONSUMER,
        f"$KV.{bucket}.>",
        deliver_subject(hive, BOARD_CONSUMER),
        BOARD_ACK_WAIT,
        BOARD_MAX_ACK_PENDING,
    )


async def ensure_consumers(js: JetStreamContext, specs: Iterable[ConsumerSpec], *, at_once: int = 16) -> list[str]:
    """Create (or bring up to date) each consumer, with the framework's admin connection; their streams must
    exist. Returns ``stream/name`` of those created or changed, in the order given.

    A consumer delivering elsewhere (a pull consumer a hive made before hives lost that right) is replaced,
    starting after what it had acknowledged; any other difference is updated in place. Up to ``at_once`` are
    worked on together: a tree of hundreds of hives has hundreds, and on a cluster each is a round trip through
    its meta leader; the first failure is raised once the others ended."""
    specs = list({(spec.stream, spec.name): spec for spec in specs}.values())  # one name, one spec: the last
    results = await bounded((_ensure_consumer(js, spec) for spec in specs), at_once)
    return [f"{spec.stream}/{spec.name}" for spec, changed in zip(specs, results, strict=True) if changed]


async def _ensure_consumer(js: JetStreamContext, spec: ConsumerSpec) -> bool:
    """One consumer as :func:`ensure_consumers` wants it; whether it was created or changed."""
    wanted = spec.config()
    try:
        info = await js.consumer_info(spec.stream, spec.name)
    except NotFoundError:
        await js.add_consumer(spec.stream, wanted)
        return True
    have = info.config
    if (
        have.deliver_subject != spec.deliver_subject
        or have.deliver_group != spec.name
        or have.filter_subject != spec.filter_subject
    ):
        floor = info.ack_floor.stream_seq if info.ack_floor and info.ack_floor.stream_seq else 0
        await js.delete_consumer(spec.stream, spec.name)
        await js.add_consumer(spec.stream, spec.config(start_after=floor))
        return True
    if (have.ack_wait, have.max_deliver, have.max_ack_pending) != (
        wanted.ack_wait,
        wanted.max_deliver,
        wanted.max_ack_pending,
    ):
        update = spec.config()
        update.deliver_policy, update.opt_start_seq = have.deliver_policy, have.opt_start_seq  # not editable
        await js.add_consumer(spec.stream, update)  # create-or-update
        return True
    return False


@dataclass
class Deliveries:
    """The deliveries of one bound consumer, read in batches like a pull subscription's ``fetch``.

    Anything arriving on the deliver subject that is not a delivery of this consumer (its reply subject is not
    the consumer's ack subject) is dropped and counted in ``dropped``: another hive can make the server or a
    provider send a reply there, never a delivery."""

    spec: ConsumerSpec
    _queue: asyncio.Queue[Msg] = field(default_factory=asyncio.Queue)
    _sub: Subscription | None = None
    _nc: Client | None = None
    dropped: int = 0

    async def _on_message(self, msg: Msg) -> None:
        if not (msg.reply or "").startswith(self.spec.ack_prefix):
            self.dropped += 1
            return
        self._queue.put_nowait(msg)

    async def fetch(self, batch: int = 64, timeout: float = 1.0) -> list[Msg]:
        """Up to ``batch`` deliveries: waits up to ``timeout`` seconds for the first (else nats-py's
        ``TimeoutError``), then takes what has arrived. Raises ``ConnectionClosedError`` once closed."""
        if self._nc is not None and self._nc.is_closed:
            raise nats.errors.ConnectionClosedError
        try:
            first = await asyncio.wait_for(self._queue.get(), timeout)
        except TimeoutError:
            raise nats.errors.TimeoutError from None
        messages = [first]
        while len(messages) < batch and not self._queue.empty():
            messages.append(self._queue.get_nowait())
        return messages

    def waiting(self) -> list[Msg]:
        """Deliveries received but not fetched yet: their ack wait runs, so a consumer busy with a batch keeps
        them alive too (``in_progress``), or a slow batch would have them redelivered behind it."""
        return list(getattr(self._queue, "_queue", ()))  # asyncio.Queue's deque; empty if that ever changes

    async def unsubscribe(self) -> None:
        """Stop receiving; the consumer stays on the server, and what was not acknowledged comes back."""
        if self._sub is not None:
            with contextlib.suppress(nats.errors.Error):
                await self._sub.unsubscribe()
            self._sub = None


async def bind_consumer(js: JetStreamContext, nc: Client, spec: ConsumerSpec) -> Deliveries:
    """Receive ``spec``'s deliveries on ``nc``. The consumer must exist; if it does not, it is created, which
    only a connection with the right to (the framework's, or one on a server without users) may do: with a
    hive's credentials the server refuses it, and ``nats.errors.TimeoutError`` (the caller watches for the
    permission violation to say so sooner)."""
    try:
        await js.consumer_info(spec.stream, spec.name)
    except NotFoundError:
        await js.add_consumer(spec.stream, spec.config())
    deliveries = Deliveries(spec, _nc=nc)
    deliveries._sub = await nc.subscribe(spec.deliver_subject, queue=spec.name, cb=deliveries._on_message)
    return deliveries
