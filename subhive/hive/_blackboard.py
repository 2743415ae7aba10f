"""A sub-hive's local blackboard: a JetStream key-value bucket only that hive may touch, readable by ``nats kv``,
with full history (no per-key limit) and every write attributed (``Subhive-Writer``, ``Subhive-Depth``).
See docs/hives.md#the-blackboard and docs/decisions/0015-blackboard-bucket.md.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import nats.errors
import nats.js.errors
import orjson
from nats.js import JetStreamContext
from nats.js.api import DiscardPolicy, PubAck, RawStreamMsg, StorageType, StreamConfig

from .._trace import current_traceparent
from ..bus import board_consumer, ensure_consumers, kv_bucket, through_failover
from ..errors import InputError, Location, SubhiveError
from ._board_schema import BoardSchema
from ._knowledge import Entry, Write, check_key, check_key_pattern

__all__ = [
    "BlackboardError",
    "BoardSnapshot",
    "BrokenValue",
    "KvBlackboard",
    "RevisionConflict",
    "board_stream",
    "ensure_blackboard",
    "stored_entry",
]

H_WRITER = "Subhive-Writer"
#: The writer's trace (W3C), when it wrote inside one: the activations the write wakes continue it.
H_TRACE = "traceparent"
H_DEPTH = "Subhive-Depth"
_EXPECTED = "Nats-Expected-Last-Subject-Sequence"
_MSG_ID = "Nats-Msg-Id"
#: What a bucket may hold before it refuses writes (history included).
DEFAULT_MAX_BYTES = 256 * 1024 * 1024
# JetStream's "wrong last sequence" errors: the compare-and-set lost.
_WRONG_LAST = (10071, 10164)
# "maximum bytes exceeded" / "insufficient resources": the bucket (or the disk) is full.
_FULL = (10047, 10077, 10054)
_WRITER_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.:@/")


class BlackboardError(SubhiveError):
    """The blackboard could not do what was asked (no bucket, bucket full, server refused)."""

    default_code = "blackboard.error"


class RevisionConflict(BlackboardError):
    """A compare-and-set lost: ``key`` is no longer at ``expected`` (0: it already exists)."""

    default_code = "blackboard.conflict"

    def __init__(self, key: str, expected: int) -> None:
        what = "already exists" if expected == 0 else f"is no longer at revision {expected}"
        super().__init__(
            f"{key!r} {what}: another writer changed it first",
            location=Location(subject=key),
            hint="read the entry again and decide on its new value (KvBlackboard.update does this)",
        )
        self.key = key
        self.expected = expected


class BrokenValue(BlackboardError):
    """A stored revision that is not a board value: not JSON (written past subhive, e.g. by a tool with the
    admin credentials), or with no writer (``blackboard.unattributed``: every write through the board names
    its writer, so a revision without one was not; the server stores whatever reaches the bucket's subjects,
    its own answers to a reply subject another hive chose included)."""

    default_code = "blackboard.not_json"

    def __init__(
        self, key: str, revision: int, writer: str, reason: str, *, subject: str, code: str | None = None
    ) -> None:
        what = "has no writer" if code == UNATTRIBUTED else "is not JSON"
        super().__init__(
            f"revision {revision} of {key!r} {what} (written by another tool?): {reason}",
            code=code,
            location=Location(subject=subject),
            hint="write it again through subhive, which validates values: subhive board put HIVE KEY VALUE",
        )
        self.key, self.revision, self.writer, self.reason = key, revision, writer, reason


#: The code of a revision stored without a writer: read as broken, never as the key's value.
UNATTRIBUTED = "blackboard.unattributed"


def board_stream(hive: str) -> str:
    """The JetStream stream behind ``hive``'s bucket: ``KV_bb_<hive>``."""
    return f"KV_{kv_bucket(hive)}"


async def ensure_blackboard(
    js: JetStreamContext, hive: str, *, max_bytes: int = DEFAULT_MAX_BYTES, replicas: int = 1
) -> None:
    """Create ``hive``'s bucket if it does not exist, and the durable consumer its controller reads the board's
    writes through (the framework does this, with admin rights, at ``up``: a hive may create neither).
    ``replicas``: copies kept on as many nodes of a cluster (docs/cluster.md)."""
    bucket = kv_bucket(hive)
    config = StreamConfig(
        name=board_stream(hive),
        subjects=[f"$KV.{bucket}.>"],
        allow_direct=True,
        allow_rollup_hdrs=True,
        deny_delete=True,
        deny_purge=False,
        discard=DiscardPolicy.NEW,
        max_msgs_per_subject=-1,
        max_msgs=-1,
        max_bytes=max_bytes,
        storage=StorageType.FILE,
        duplicate_window=120.0,
        num_replicas=replicas,
        description=f"the blackboard of sub-hive {hive}",
    )
    try:
        await js.stream_info(config.name or "")
    except nats.js.errors.NotFoundError:
        await js.add_stream(config)
    await ensure_consumers(js, [board_consumer(hive)])


class BoardSnapshot(dict[str, Entry]):
    """The latest entry of every key (a dict by key), and ``broken``: the keys whose latest revision is not a
    board value (:class:`BrokenValue`, each with its key, revision and why), sorted by key."""

    def __init__(self) -> None:
        super().__init__()
        self.broken: list[BrokenValue] = []


class KvBlackboard:
    """One hive's blackboard. Reads and writes go to the server; nothing is cached, so every reader sees the
    latest revision. ``schema`` validates every write (``None``: any JSON value).

    Reads use ``STREAM.MSG.GET`` (the answer is the server's JSON with the message inside), not direct gets: a
    direct get answers with the stored message itself, headers and all, on whatever reply subject the asker
    chose, so a hive allowed one could pass its own board's bytes off as a message anywhere.

    Compare-and-set is the stream's ``Nats-Expected-Last-Subject-Sequence``: the server refuses a write with
    ``expected_revision`` if another writer got there first (:class:`RevisionConflict`)::

        board = await KvBlackboard.open(js, "backend", BoardSchema.load(path, hive="backend"))
        await board.put("tasks.t1", {"title": "Add login", "status": "open"}, writer="human")
        await board.update("counters.c1", lambda old: {"n": (old or {"n": 0})["n"] + 1}, writer="counter")
    """

    def __init__(
        self,
        js: JetStreamContext,
        hive: str,
        schema: BoardSchema | None = None,
        *,
        timeout: float = 5.0,
        failover: float = 0.0,
    ) -> None:
        self.hive = hive
        self.schema = schema or BoardSchema(None, hive=hive)
        self._js = js
        self._stream = board_stream(hive)
        self._prefix = f"$KV.{kv_bucket(hive)}."
        self._timeout = timeout
        #: Seconds a write keeps retrying, with the same message id, while the bucket's stream does not answer (a
        #: cluster electing a leader); the stream keeps one copy per id, so a write that did land is not repeated.
        self.failover = failover

    @classmethod
    async def open(
        cls, js: JetStreamContext, hive: str, schema: BoardSchema | None = None, *, failover: float = 0.0
    ) -> KvBlackboard:
        """The hive's board; raises ``blackboard.missing`` when its bucket was never created."""
        board = cls(js, hive, schema, failover=failover)
        try:
            await js.stream_info(board._stream)
        except nats.js.errors.NotFoundError:
            raise BlackboardError(
                f"sub-hive {hive} has no blackboard bucket ({board._stream})",
                code="blackboard.missing",
                location=Location(subject=board._prefix + ">"),
                hint="`subhive up` creates every hive's bucket",
            ) from None
        return board

    # -- reading ------------------------------------------------------------------------------------------

    async def get(self, key: str) -> Entry | None:
        """The current entry at ``key``, or ``None`` when it was never written."""
        check_key(key)
        try:
            msg = await self._js.get_msg(self._stream, subject=self._prefix + key)
        except nats.js.errors.NotFoundError:
            return None
        return self._entry(key, msg)

    async def history(self, key: str) -> list[Entry]:
        """Every revision of ``key``, oldest first, each with who wrote it; revisions that are not board values
        (:class:`BrokenValue`) are left out: :meth:`revisions` has them."""
        return [r for r in await self.revisions(key) if isinstance(r, Entry)]

    async def revisions(self, key: str) -> list[Entry | BrokenValue]:
        """Every stored revision of ``key``, oldest first: an :class:`Entry`, or why it is not one."""
        check_key(key)
        found: list[Entry | BrokenValue] = []
        seq = 1
        while True:
            try:
                msg = await self._js.get_msg(self._stream, seq=seq, subject=self._prefix + key, next=True)
            except nats.js.errors.NotFoundError:
                return found
            try:
                found.append(self._entry(key, msg))
            except BrokenValue as broken:
                found.append(broken)
            seq = (msg.seq or seq) + 1

    async def keys(self, pattern: str = ">") -> list[str]:
        """Every key that has a value (or only those matching ``pattern``: ``tasks.*``), sorted; the server
        filters, so a narrow pattern stays cheap on a board with many keys."""
        if pattern != ">":
            try:
                check_key_pattern(pattern)
            except ValueError as exc:
                raise InputError(
                    str(exc),
                    code="blackboard.pattern_invalid",
                    location=Location(subject=pattern),
                    hint="tokens separated by '.', '*' for one token, a final '>' for the rest",
                ) from None
        info = await self._js.stream_info(self._stream, subjects_filter=self._prefix + pattern)
        return sorted(subject[len(self._prefix) :] for subject in (info.state.subjects or {}))

    async def snapshot(self) -> BoardSnapshot:
        """The latest entry of every key, by key: what a human reads (``subhive board show``). A key whose latest
        revision is not a board value is left out and listed in ``.broken`` instead: one broken value hides
        nothing else."""
        found = BoardSnapshot()
        for key in await self.keys():
            try:
                entry = await self.get(key)
            except BrokenValue as broken:
                found.broken.append(broken)
                continue
            if entry is not None:
                found[key] = entry
        return found

    async def size(self) -> tuple[int, int, int]:
        """``(keys, revisions, bytes)`` stored, history included."""
        state = (await self._js.stream_info(self._stream)).state
        return (len(await self.keys()) if state.messages else 0), state.messages, state.bytes

    # -- writing ------------------------------------------------------------------------------------------

    async def put(
        self, key: str, value: Any, *, writer: str, expected_revision: int | None = None, depth: int = 0
    ) -> int:
        """Store ``value`` at ``key`` and return its new revision.

        ``expected_revision``: ``None`` writes unconditionally, ``0`` only if ``key`` has no value yet, ``n``
        only if ``key`` is still at revision ``n``; otherwise :class:`RevisionConflict`.
        """
        check_key(key)
        _check_writer(writer)
        self.schema.check(key, value, writer=writer)
        try:
            data = orjson.dumps(value)
        except (TypeError, orjson.JSONEncodeError) as exc:
            raise InputError(
                f"the value for {key!r} is not JSON: {exc}",
                code="blackboard.not_json",
                location=Location(subject=key),
                hint="write JSON: dicts, lists, numbers",
            ) from None
        headers = {H_WRITER: writer, H_DEPTH: str(depth), _MSG_ID: uuid.uuid4().hex}
        trace = current_traceparent()
        if trace is not None:  # the sources it wakes run in the writer's trace (docs/observability.md)
            headers[H_TRACE] = trace
        if expected_revision is not None:
            headers[_EXPECTED] = str(expected_revision)
        try:
            ack = await self._publish(key, data, headers)
        except nats.js.errors.APIError as exc:
            if exc.err_code in _WRONG_LAST and expected_revision is not None:
                landed = await self._landed(key, headers[_MSG_ID])
                if landed is not None:
                    return landed
                raise RevisionConflict(key, expected_revision) from None
            if exc.err_code in _FULL:
                raise BlackboardError(
                    f"the blackboard of {self.hive} is full: {exc.description}",
                    code="blackboard.full",
                    location=Location(subject=key),
                    hint="raise the bucket's byte limit, or keep smaller values",
                ) from None
            raise BlackboardError(
                f"the server refused the write to {key!r}: {exc.description}", location=Location(subject=key)
            ) from None
        except (nats.errors.TimeoutError, nats.errors.NoRespondersError, nats.js.errors.NoStreamResponseError):
            raise BlackboardError(
                f"no answer from the blackboard of {self.hive} writing {key!r}",
                code="blackboard.unavailable",
                location=Location(subject=key),
                hint="is the NATS server up, and the bucket created?",
            ) from None
        return ack.seq

    async def _landed(self, key: str, msg_id: str) -> int | None:
        """The revision of this very write if a retry's conflict is with itself: a first attempt stored it but
        its answer was lost, and a single server checks the expected revision before the duplicate id (a
        cluster answers "duplicate" instead). None when the key's latest revision is someone else's."""
        try:
            msg = await self._js.get_msg(self._stream, subject=self._prefix + key)
        except nats.js.errors.NotFoundError:
            return None
        return msg.seq if (msg.headers or {}).get(_MSG_ID) == msg_id else None

    async def _publish(self, key: str, data: bytes, headers: dict[str, str]) -> PubAck:
        def attempt() -> Awaitable[PubAck]:
            return self._js.publish(
                self._prefix + key, data, stream=self._stream, headers=headers, timeout=self._timeout
            )

        return await through_failover(attempt, self.failover)

    async def apply(self, write: Write, *, writer: str, depth: int = 0) -> int:
        """:meth:`put` for a :class:`Write` a knowledge source returned."""
        return await self.put(
            write.key, write.value, writer=writer, expected_revision=write.expected_revision, depth=depth
        )

    async def update(
        self, key: str, change: Callable[[Any | None], Any], *, writer: str, attempts: int = 1000
    ) -> Entry:
        """Read ``key``, compute ``change(current value or None)`` and compare-and-set it, again on a lost race,
        until it lands: an increment from 20 concurrent writers counts 20. Returns the stored entry."""
        for attempt in range(attempts):
            current = await self.get(key)
            value = change(None if current is None else current.value)
            try:
                revision = await self.put(
                    key, value, writer=writer, expected_revision=0 if current is None else current.revision
                )
            except RevisionConflict:
                # Lost the race: back off a little, growing, so 20 writers spread out instead of colliding again.
                await asyncio.sleep(random.uniform(0, min(0.002 * (attempt + 1), 0.05)))
                continue
            return Entry(key, value, revision, writer=writer)
        raise BlackboardError(
            f"{key!r} kept changing under {writer}: {attempts} attempts lost the race",
            code="blackboard.contended",
            location=Location(subject=key),
            hint="fewer writers on one key, or split the key",
        )

    def _entry(self, key: str, msg: RawStreamMsg) -> Entry:
        return stored_entry(
            key,
            msg.data,
            msg.seq or 0,
            msg.headers,
            msg.time.timestamp() if msg.time else None,
            subject=self._prefix + key,
        )


def stored_entry(
    key: str, data: bytes | None, revision: int, headers: Mapping[str, str] | None, time: float | None, *, subject: str
) -> Entry:
    """The :class:`Entry` a stored message stands for: its JSON value, writer and depth from its headers."""
    headers = headers or {}
    if not headers.get(H_WRITER):
        raise BrokenValue(
            key,
            revision,
            "",
            "no Subhive-Writer header: not written through a blackboard",
            subject=subject,
            code=UNATTRIBUTED,
        )
    try:
        depth = int(headers.get(H_DEPTH, "0"))
    except ValueError:
        depth = 0
    try:
        value = orjson.loads(data or b"null")
    except orjson.JSONDecodeError as exc:
        raise BrokenValue(key, revision, headers.get(H_WRITER, ""), str(exc)[:120], subject=subject) from None
    return Entry(key, value, revision, writer=headers.get(H_WRITER, ""), depth=depth, time=time)


def _check_writer(writer: str) -> None:
    if not writer or len(writer) > 128 or not set(writer) <= _WRITER_CHARS:
        raise InputError(
            f"{writer!r} is not a writer name",
            code="blackboard.writer_invalid",
            hint="name who writes: a knowledge source's name, 'human', 'cli' (letters, digits, _-.:@/)",
        )
