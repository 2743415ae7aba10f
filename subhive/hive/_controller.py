"""The controller of a sub-hive: what wakes which knowledge source, in what order (one priority queue, bounded
concurrency), and how a source that loops, stalls or keeps failing is escalated to the root instead of rerun.
See docs/hives.md#the-controller and docs/decisions/0017-controller-escalation.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
import traceback
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import nats.errors
import nats.js.errors
import orjson
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from .._trace import continue_trace, current_traceparent
from ..bus import BOARD_ACK_WAIT, BOARD_CONSUMER, bind_consumer, board_consumer, kv_bucket
from ..errors import InputError, SubhiveError
from ..runtime import Refusal
from ..telemetry import span
from ._blackboard import H_TRACE, H_WRITER, BlackboardError, KvBlackboard, RevisionConflict, stored_entry
from ._knowledge import Entry, KnowledgeSource, Reply, Write, check_key_pattern, key_matches
from ._loops import LoopDetector

__all__ = ["Controller", "ControllerConfig", "ControllerStats", "Escalation", "KnowledgeSourceFailed", "Parked"]

log = logging.getLogger("subhive.hive")

EscalationKind = Literal["loop", "stall", "failure"]
#: The durable consumer the controller reads its hive's board through (the framework creates it with the bucket).
CONSUMER = BOARD_CONSUMER
_SAMPLE_MAX = 4096
_ACK_WAIT = BOARD_ACK_WAIT
#: Seconds a reader waits for a delivery before it looks again (the wait ends at once when one arrives).
IDLE_WAIT = 60.0


class KnowledgeSourceFailed(SubhiveError):
    """A knowledge source raised, stalled, looped or returned something the runtime cannot apply."""

    default_code = "ks.failed"


class Parked(Exception):
    """Raised by an activation that waits for something outside the hive (an agent's call waiting for a person):
    the controller frees the worker, awaits ``wake`` without one, then runs ``resume(context)`` (by default the
    source's ``activate`` on the same entry again; after a lost race, on the entry as it is then) in the next free
    worker. Its result is the activation's: a
    board write stays unacknowledged meanwhile, so after a crash it comes back and the source parks again;
    a request's caller keeps waiting for its reply. See docs/decisions/0064-parked-activations.md."""

    def __init__(
        self,
        wake: Awaitable[Any],
        *,
        resume: Callable[[Any], Awaitable[Sequence[Any]]] | None = None,
        reason: str = "",
    ) -> None:
        super().__init__(reason or "the activation waits")
        self.wake = wake
        self.resume = resume
        self.reason = reason


@dataclass(frozen=True)
class ControllerConfig:
    """``concurrency`` activations at most at once; loop rules (:class:`LoopDetector`); ``stall_after``
    seconds before an activation counts as stalled; ``conflict_retries`` re-activations after a lost race;
    ``retry_delay`` seconds before the one retry of a failed activation."""

    concurrency: int = 4
    loop_repeats: int = 5
    max_depth: int = 32
    stall_after: float = 30.0
    conflict_retries: int = 3
    retry_delay: float = 1.0

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if self.stall_after <= 0 or self.conflict_retries < 0 or self.retry_delay < 0:
            raise ValueError("stall_after must be positive, conflict_retries and retry_delay not negative")


@dataclass(frozen=True)
class Escalation:
    """What the controller reports to the root instead of spinning: a repair proposal's content."""

    kind: EscalationKind
    source: str
    key: str
    message: str
    count: int = 1
    sample: bytes = b""

    @property
    def code(self) -> str:
        return {"loop": "ks.loop", "stall": "ks.stalled", "failure": "ks.failed"}[self.kind]


@dataclass
class ControllerStats:
    """Counters for ``subhive status`` and tests."""

    activations: int = 0
    writes: int = 0
    skipped: int = 0
    conflicts: int = 0
    failures: int = 0
    escalations: int = 0
    #: Activations parked right now (waiting without a worker).
    parked: int = 0
    by_source: Counter[str] = field(default_factory=Counter)
    quarantined: set[str] = field(default_factory=set)
    last_error: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "activations": self.activations,
            "writes": self.writes,
            "skipped": self.skipped,
            "conflicts": self.conflicts,
            "failures": self.failures,
            "escalations": self.escalations,
            "parked": self.parked,
            "by_source": dict(sorted(self.by_source.items())),
            "quarantined": sorted(self.quarantined),
            "last_error": self.last_error,
        }


@dataclass
class _Activation:
    priority: int
    order: int
    source: KnowledgeSource
    entry: Entry
    done: asyncio.Future[Any] = field(compare=False)
    #: Set once the activation parked: what runs when it is woken.
    resume: Callable[[Any], Awaitable[Sequence[Any]]] | None = field(default=None, compare=False)
    #: The trace of what woke the source (a request, an event): the activation runs in it, on a worker.
    trace: str | None = field(default=None, compare=False)

    def __lt__(self, other: _Activation) -> bool:
        return (-self.priority, self.order) < (-other.priority, other.order)


class _Quarantined(KnowledgeSourceFailed):
    """The source was quarantined: its activation is dropped (the escalation already said why)."""

    default_code = "ks.quarantined"

    def __init__(self, source: str) -> None:
        super().__init__(
            f"knowledge source {source} is quarantined after a loop",
            hint="see the ks.loop repair in subhive approvals; restart the hive once it is fixed",
        )


OnEscalation = Callable[[Escalation], Awaitable[None]]


class Controller:
    """Schedules one hive's knowledge sources over its blackboard. ``context`` is what sources get as their
    blackboard argument (it must offer ``get``); by default the board itself."""

    def __init__(
        self,
        board: KvBlackboard,
        sources: Sequence[KnowledgeSource],
        *,
        config: ControllerConfig | None = None,
        context: Any = None,
        on_escalation: OnEscalation | None = None,
    ) -> None:
        self.board = board
        self.config = config or ControllerConfig()
        self.sources = _checked(sources)
        self.context = board if context is None else context
        self.on_escalation = on_escalation
        self.stats = ControllerStats()
        self._loops = LoopDetector(repeats=self.config.loop_repeats, max_depth=self.config.max_depth)
        self._queue: asyncio.PriorityQueue[_Activation] = asyncio.PriorityQueue()
        self._order = itertools.count()
        self._tasks: list[asyncio.Task[None]] = []
        self._failures: Counter[tuple[str, str]] = Counter()
        self._busy = 0
        self._pending_writes = 0
        #: Board writes read so far: a heartbeat that sees it unchanged knows the board is as it last measured it.
        self.board_writes_seen = 0
        self._inflight: set[asyncio.Task[None]] = set()
        self._parked: dict[asyncio.Task[None], _Activation] = {}
        self._pull: Any = None
        self._idle = asyncio.Event()
        self._idle.set()

    # -- lifecycle ----------------------------------------------------------------------------------------

    async def start(self, js: JetStreamContext) -> None:
        """Start the workers and read the board's writes through the hive's durable consumer."""
        self._tasks = [asyncio.create_task(self._work(), name=f"ks-worker-{i}") for i in range(self.config.concurrency)]
        if any(getattr(s, "triggers", ()) for s in self.sources):
            # A short ack wait, kept alive with in_progress while a write's activations run: a write handed to a
            # controller that died comes back to the next one within seconds (subhive.bus._consumers).
            self._pull = await bind_consumer(js, js._nc, board_consumer(self.board.hive))
            self._tasks.append(asyncio.create_task(self._read_board(self._pull), name="ks-board"))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        if self._pull is not None:
            # First, so that what is handed back below goes to the next controller, not to this one's queue.
            with contextlib.suppress(Exception):
                await self._pull.unsubscribe()  # the durable consumer stays: what arrives meanwhile waits
            self._pull = None
        # A board write being worked on is handed back (nak) as its task ends, so the next controller of this
        # hive gets it at once instead of after the ack wait; cancelled first, so none is acknowledged.
        inflight = list(self._inflight)
        for task in inflight:
            task.cancel()
        parked = list(self._parked.items())
        for task, activation in parked:
            task.cancel()
            activation.done.cancel()  # a request's caller is told now, not at its own timeout
        await asyncio.gather(*inflight, *(task for task, _ in parked), return_exceptions=True)

    async def idle(self, timeout: float = 10.0) -> None:
        """Wait until no activation is queued or running and every board write read so far is handled."""
        async with asyncio.timeout(timeout):
            while True:
                await self._idle.wait()
                await asyncio.sleep(0.05)  # a write just applied may still be on its way back to us
                if self._idle.is_set():
                    return

    # -- what wakes sources -------------------------------------------------------------------------------

    def sources_for_key(self, key: str) -> list[KnowledgeSource]:
        return [s for s in self.sources if any(key_matches(p, key) for p in getattr(s, "triggers", ()))]

    async def answer(self, contract: str, operation: str, request: Any) -> Any:
        """Run the source that answers ``contract.operation`` and return its reply payload."""
        member = f"{contract}.{operation}"
        source = next((s for s in self.sources if member in getattr(s, "operations", ())), None)
        if source is None:
            raise KnowledgeSourceFailed(
                f"no knowledge source answers {member}",
                code="ks.no_source",
                hint='declare operations = ("' + member + '",) on one source',
            )
        result = await self._schedule(source, Entry(f"op.{member}", request))
        replies = [item for item in result if isinstance(item, Reply)]
        if len(replies) != 1:
            raise KnowledgeSourceFailed(
                f"{source.name} answered {member} with {len(replies)} replies, not one",
                code="ks.no_reply",
                hint="return exactly one Reply(payload) with the writes",
            )
        return replies[0].payload

    async def on_event(self, contract: str, event: str, payload: Any) -> None:
        """Run every source that reacts to ``contract.event``; raises if one failed (the bus retries once)."""
        member = f"{contract}.{event}"
        sources = [s for s in self.sources if member in getattr(s, "events", ())]
        results = await asyncio.gather(
            *(self._schedule(s, Entry(f"ev.{member}", payload)) for s in sources), return_exceptions=True
        )
        for result in results:
            if isinstance(result, BaseException):
                raise result

    # -- scheduling ---------------------------------------------------------------------------------------

    def _schedule(self, source: KnowledgeSource, entry: Entry) -> asyncio.Future[Any]:
        done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if source.name in self.stats.quarantined:
            done.set_exception(_Quarantined(source.name))
            return done
        self._idle.clear()
        activation = _Activation(source.priority, next(self._order), source, entry, done, trace=current_traceparent())
        self._queue.put_nowait(activation)
        return done

    async def _work(self) -> None:
        while True:
            activation = await self._queue.get()
            self._busy += 1
            try:
                result = await self._traced(activation)
                if not activation.done.done():
                    activation.done.set_result(result)
            except Parked as parked:
                self._park(activation, parked)
            except Exception as exc:
                if not activation.done.done():
                    activation.done.set_exception(exc)
            finally:
                self._busy -= 1
                self._settle()

    async def _traced(self, activation: _Activation) -> list[Any]:
        """:meth:`_run` in the trace of what woke the source, in a span of its own while tracing. A parked
        activation's span ends when it parks (marked ``subhive.parked``); its resumption gets another."""
        source, parked = activation.source, None
        attributes = {
            "subhive.hive": self.board.hive,
            "subhive.knowledge_source": source.name,
            "subhive.entry": activation.entry.key,
        }
        with span(f"activate {source.name}", "internal", attributes, parent=activation.trace) as at:
            try:
                return await self._run(source, activation.entry, activation.resume)
            except Parked as exc:
                at.set("subhive.parked", exc.reason or "waiting")
                parked = exc  # raised outside the span: parking is not a failure
        raise parked

    def _settle(self) -> None:
        if not self._busy and self._queue.empty() and not self._pending_writes and not self._parked:
            self._idle.set()

    def _park(self, activation: _Activation, parked: Parked) -> None:
        """Free the worker: the activation waits for its wake in a task of its own, then queues again."""
        # Without a continuation of its own, the source is activated again on the entry; a lost race then
        # activates it on the entry as it is by then, as for any activation (_run).
        activation.resume = parked.resume
        self.stats.parked += 1
        task = asyncio.create_task(self._wake(activation, parked.wake), name=f"ks-parked-{activation.source.name}")
        self._parked[task] = activation
        log.info("%s parked on %s: %s", activation.source.name, activation.entry.key, parked.reason or "waiting")

    async def _wake(self, activation: _Activation, wake: Awaitable[Any]) -> None:
        try:
            await wake
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the resumed activation meets whatever is wrong and reports it
            log.warning("waking %s on %s: %s", activation.source.name, activation.entry.key, exc)
        finally:
            self.stats.parked -= 1
            self._parked.pop(asyncio.current_task(), None)  # type: ignore[arg-type]
        if activation.done.done():
            self._settle()  # its caller gave up (a request's deadline): nobody wants the result
        elif activation.source.name in self.stats.quarantined:
            activation.done.set_exception(_Quarantined(activation.source.name))
            self._settle()
        else:
            self._queue.put_nowait(activation)  # its old place in the order: before what came after it

    async def _run(
        self,
        source: KnowledgeSource,
        entry: Entry,
        resume: Callable[[Any], Awaitable[Sequence[Any]]] | None = None,
    ) -> list[Any]:
        """One activation, with a retry after a failure and re-activation after a lost race; ``resume``: a
        parked activation's continuation, run instead of ``activate``."""
        attempts = 0
        conflicts = 0
        while True:
            if source.name in self.stats.quarantined:
                raise _Quarantined(source.name)
            self.stats.activations += 1
            self.stats.by_source[source.name] += 1
            try:
                return await self._activate_once(source, entry, resume)
            except RevisionConflict:
                self.stats.conflicts += 1
                conflicts += 1
                if conflicts > self.config.conflict_retries:
                    await self._failed(
                        source,
                        entry,
                        KnowledgeSourceFailed(
                            f"{source.name} lost the compare-and-set race {conflicts} times", code="ks.contended"
                        ),
                    )
                    raise
                fresh = await self.board.get(entry.key) if not entry.key.startswith(("op.", "ev.")) else entry
                entry = fresh or entry
            except (_Quarantined, Refusal, Parked, asyncio.CancelledError):
                raise  # a Refusal is the source's deliberate answer to a request, not a failure
            except Exception as exc:
                attempts += 1
                # A request or an event: the bus transport retries (an event, once), dead-letters and reports the
                # failure (one repair per class); retrying or escalating here too would multiply both.
                from_bus = entry.key.startswith(("op.", "ev."))
                escalated = await self._failed(source, entry, exc, escalate=not from_bus)
                if from_bus or attempts > 1 or escalated:
                    raise
                # A moment before the retry: what failed is often another hive that is starting or restarting.
                await asyncio.sleep(self.config.retry_delay)
                entry = (
                    (await self.board.get(entry.key) or entry) if not entry.key.startswith(("op.", "ev.")) else entry
                )

    async def _activate_once(
        self,
        source: KnowledgeSource,
        entry: Entry,
        resume: Callable[[Any], Awaitable[Sequence[Any]]] | None = None,
    ) -> list[Any]:
        # A source that says how long it may take (an agent's turn: its wall time) is held to that instead of the
        # hive-wide limit. A parked activation's wait is not counted: each run after a wake has the whole limit.
        limit = getattr(source, "stall_after", None) or self.config.stall_after
        work = resume(self.context) if resume is not None else source.activate(entry, self.context)
        try:
            result = await asyncio.wait_for(work, limit)
        except TimeoutError:
            raise KnowledgeSourceFailed(
                f"{source.name} did not finish within {limit:g} s on {entry.key!r}", code="ks.stalled"
            ) from None
        items = list(result or ())
        for item in items:
            if not isinstance(item, Write | Reply):
                raise KnowledgeSourceFailed(
                    f"{source.name} returned {type(item).__name__}, not a Write or Reply",
                    code="ks.bad_result",
                    hint="return a sequence of Write (and one Reply)",
                )
        for item in items:
            if isinstance(item, Write):
                await self._write(source, entry, item)
        return items

    async def _write(self, source: KnowledgeSource, cause: Entry, write: Write) -> None:
        depth = cause.depth + 1
        try:
            data = orjson.dumps(write.value)
        except TypeError as exc:
            raise InputError(
                f"{source.name} wrote a value that is not JSON to {write.key!r}: {exc}", code="blackboard.not_json"
            ) from None
        why = self._loops.check(source.name, write.key, data, depth=depth, now=time.monotonic())
        if why is not None:
            self.stats.quarantined.add(source.name)
            await self._escalate(Escalation("loop", source.name, write.key, why, sample=data[:_SAMPLE_MAX]))
            log.error("knowledge source %s quarantined: %s", source.name, why)
            raise _Quarantined(source.name)
        try:
            await self.board.apply(write, writer=source.name, depth=depth)
        except RevisionConflict:
            if write.on_conflict == "skip":
                self.stats.skipped += 1  # e.g. "create only once": someone did, which is what the source allowed
                return
            raise
        self.stats.writes += 1

    async def _failed(
        self, source: KnowledgeSource, entry: Entry, exc: BaseException, *, escalate: bool = True
    ) -> bool:
        """Record a failure; the same class twice (or any stall) is escalated, unless ``escalate`` is false (the
        bus reports it). Returns whether it was."""
        self.stats.failures += 1
        code = exc.code if isinstance(exc, SubhiveError) else type(exc).__name__
        message = exc.message if isinstance(exc, SubhiveError) else f"{type(exc).__name__}: {exc}"
        self.stats.last_error = f"{source.name} on {entry.key}: {message}"[:500]
        if isinstance(exc, SubhiveError):  # a refusal the framework names (schema, stall, bad result): no bug
            log.warning("knowledge source %s failed on %s: %s", source.name, entry.key, message)
        else:  # the source's own code raised: where, and the traceback, in the hive's log (never to callers)
            log.error(
                "knowledge source %s failed on %s at %s: %s",
                source.name,
                entry.key,
                _raised_at(exc),
                message,
                exc_info=exc,
            )
        self._failures[(source.name, code)] += 1
        count = self._failures[(source.name, code)]
        stalled = code == "ks.stalled"
        if escalate and (count == 2 or stalled):
            sample = orjson.dumps({"key": entry.key, "error": code, "message": message})[:_SAMPLE_MAX]
            await self._escalate(
                Escalation(
                    "stall" if stalled else "failure",
                    source.name,
                    entry.key,
                    f"{source.name}: {message}"[:1000],
                    count=count,
                    sample=sample,
                )
            )
            return stalled
        return False

    async def _escalate(self, escalation: Escalation) -> None:
        self.stats.escalations += 1
        if self.on_escalation is None:
            return
        try:
            await self.on_escalation(escalation)
        except Exception as exc:  # the root being away must not stop the hive: the log keeps the report
            log.error("could not escalate %s of %s to the root: %s", escalation.code, escalation.source, exc)

    # -- the board's writes -------------------------------------------------------------------------------

    async def _read_board(self, pull: Any) -> None:
        prefix = f"$KV.{kv_bucket(self.board.hive)}."
        while True:
            try:
                # A long wait: an idle hive must not wake every second (stop() cancels this task).
                messages = await pull.fetch(batch=64, timeout=IDLE_WAIT)
            except TimeoutError:  # nats-py raises its own and asyncio's: nothing new on the board
                continue
            except nats.errors.ConnectionClosedError:
                return
            except Exception as exc:  # reconnecting, or anything else: this loop must never die quietly
                log.warning("reading the board of %s: %s; trying again", self.board.hive, exc)
                await asyncio.sleep(0.2)  # the durable consumer keeps our place
                continue
            self.board_writes_seen += len(messages)
            for msg in messages:
                self._pending_writes += 1
                self._idle.clear()
                task = asyncio.create_task(self._on_board_write(msg, msg.subject[len(prefix) :]))
                self._inflight.add(task)
                task.add_done_callback(self._inflight.discard)

    async def _on_board_write(self, msg: Msg, key: str) -> None:
        try:
            sources = self.sources_for_key(key)
            if sources and H_WRITER not in (msg.headers or {}):
                # Every subhive write names its writer. One that does not came from another tool, or is a reply
                # another hive made the server or a provider send onto this board (a reply subject can be any
                # subject): nobody acts on it.
                log.error(
                    "%s: revision %s of %r names no writer (not written through subhive); its knowledge "
                    "sources are not woken",
                    self.board.hive,
                    msg.metadata.sequence.stream,
                    key,
                )
                sources = []
            if sources:
                try:
                    entry = _entry_of(key, msg)
                except BlackboardError as exc:  # a value some other tool wrote: nobody can act on it
                    log.error("%s: %s; its knowledge sources are not woken", self.board.hive, exc)
                    sources = []
            if sources:
                alive = asyncio.create_task(_keep_alive(msg))
                try:
                    with continue_trace((msg.headers or {}).get(H_TRACE)):  # activations capture it when scheduled
                        scheduled = [self._schedule(s, entry) for s in sources]
                    await asyncio.gather(*scheduled, return_exceptions=True)
                except asyncio.CancelledError:
                    # The controller stops (the hive restarts): hand the write back now, so the next controller
                    # gets it at once, not after the ack wait; its sources find their durable state there.
                    with contextlib.suppress(Exception):
                        await msg.nak()
                    raise
                finally:
                    alive.cancel()
            # Failures were reported and escalated; the entry stays on the board either way, so acknowledge.
            with contextlib.suppress(nats.errors.Error):
                await msg.ack()
        finally:
            self._pending_writes -= 1
            self._settle()


async def _keep_alive(msg: Msg) -> None:
    """Tell the server a write is still being worked on, so it does not hand it to anyone else meanwhile."""
    while True:
        await asyncio.sleep(_ACK_WAIT / 3)
        with contextlib.suppress(nats.errors.Error):
            await msg.in_progress()


def _entry_of(key: str, msg: Msg) -> Entry:
    stamp = msg.metadata.timestamp
    return stored_entry(
        key,
        msg.data,
        msg.metadata.sequence.stream,
        msg.headers,
        stamp.timestamp() if stamp else None,
        subject=msg.subject,
    )


def _checked(sources: Sequence[KnowledgeSource]) -> tuple[KnowledgeSource, ...]:
    """Refuse sources the controller could not schedule, each with what is wrong."""
    seen: set[str] = set()
    for source in sources:
        name = getattr(source, "name", None)
        if not isinstance(name, str) or not name:
            raise InputError(f"{source!r} has no name", code="ks.invalid", hint="give every source a unique name")
        if name in seen:
            raise InputError(
                f"two knowledge sources are called {name!r}",
                code="ks.invalid",
                hint="names are unique within a hive: history attributes writes to them",
            )
        seen.add(name)
        if not isinstance(getattr(source, "priority", None), int):
            raise InputError(f"{name}.priority must be an integer", code="ks.invalid")
        if not callable(getattr(source, "activate", None)):
            raise InputError(f"{name} has no activate(entry, blackboard) method", code="ks.invalid")
        triggers = tuple(getattr(source, "triggers", ()))
        for pattern in triggers:
            try:
                check_key_pattern(pattern)
            except ValueError as exc:
                raise InputError(f"{name}: {exc}", code="ks.invalid") from None
        if not triggers and not getattr(source, "operations", ()) and not getattr(source, "events", ()):
            raise InputError(
                f"{name} declares nothing that wakes it",
                code="ks.invalid",
                hint="set triggers (key patterns), operations or events",
            )
    return tuple(sources)


def _raised_at(exc: BaseException) -> str:
    """``file:line`` of the frame that raised ``exc`` (the deepest of its traceback)."""
    frames = traceback.extract_tb(exc.__traceback__)
    return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "an unknown place"
