"""Dead letters: every message a hive refused or failed to handle, bytes intact, with the reason in headers.
One stream per hive, with limits; a full one refuses new letters and keeps those it has. Listing and replaying
need the framework's connection. See docs/bus.md#dead-letters and decisions 0023 and 0024.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from nats.aio.client import Client
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout
from nats.js import JetStreamContext
from nats.js.api import DeliverPolicy, DiscardPolicy, RawStreamMsg, StorageType, StreamConfig, StreamInfo
from nats.js.errors import APIError, NoStreamResponseError, NotFoundError

from ..errors import Location
from ..workspace import DEFAULT_DEAD_LETTER_LIMITS, DeadLetterLimits, format_age
from ._permissions import DLQ_STREAM, Line, dlq_subject, line_name
from ._replay_rules import ReplayRules
from ._wire import H_ERROR, H_MSG_ID, BusError, WireError, message_id

__all__ = [
    "NEAR_FULL",
    "REPLAYS_STREAM",
    "DeadLetter",
    "DeadLetterUsage",
    "DeadLetters",
    "FullnessAlarm",
    "Replay",
    "dlq_stream",
    "ensure_dead_letter_stream",
    "ensure_dead_letter_streams",
    "new_letter_id",
    "publish_dead_letter",
]

# A dead letter's payload is the original message's exact bytes; the reason travels in these headers.
H_CODE = "Subhive-Dlq-Code"  # stable code of the refusal: payload.invalid
H_MESSAGE = "Subhive-Dlq-Message"  # one line, for people
H_POINTER = "Subhive-Dlq-Pointer"  # where in the payload (JSON pointer), when known: /items/0/sku
H_KEYWORD = "Subhive-Dlq-Keyword"  # the schema keyword that refused it, when known: pattern
H_SUBJECT = "Subhive-Dlq-Subject"  # where it was sent: subhive.orders.v1.op.place_order.web
H_HEADERS = "Subhive-Dlq-Headers"  # its headers, as JSON: {"Subhive-Sender": "web", ...}
H_REPLAY_OF = "Subhive-Replay-Of"
_MAX_HEADER = 1000

#: Where replays are recorded. ``_replays`` cannot be a hive name (those start with a letter), so no hive's
#: grant ``subhive.dlq.<hive>.>`` reaches it and no hive stream captures it.
REPLAYS_STREAM = "SUBHIVE_DLQ_REPLAYS"
_REPLAYS = "subhive.dlq._replays"
_REPLAYS_MAX_BYTES = 16 * 1024 * 1024
#: A stream this full is reported (status, the supervisor's events); at FULL new letters may be refused.
NEAR_FULL = 0.8
FULL = 0.95
_DUPLICATE_WINDOW = 120.0
_ALL = "subhive.dlq.>"
_FULL_CODES = {10077, 10078}  # maximum messages / bytes exceeded, with discard new
#: Seconds a replayed event waits for "no responders" (the server's answer when its hive does not listen).
_EVENT_REPLAY_WAIT = 0.5


def dlq_stream(hive: str) -> str:
    """The stream holding one hive's dead letters.

    >>> dlq_stream("backend")
    'SUBHIVE_DLQ_backend'
    """
    dlq_subject(hive)  # checks the name
    return f"{DLQ_STREAM}_{hive}"


def _stream_config(hive: str, limits: DeadLetterLimits, replicas: int = 1) -> StreamConfig:
    full = limits.over(DEFAULT_DEAD_LETTER_LIMITS)
    age = full.max_age or 0.0
    # nats-server refuses a duplicate window longer than the stream's max age.
    return StreamConfig(
        name=dlq_stream(hive),
        subjects=[dlq_subject(hive)],
        storage=StorageType.FILE,
        max_bytes=full.max_bytes,
        max_age=age,
        discard=DiscardPolicy.NEW,
        duplicate_window=min(_DUPLICATE_WINDOW, age) if age else _DUPLICATE_WINDOW,
        num_replicas=replicas,
    )


async def ensure_dead_letter_stream(
    js: JetStreamContext, hive: str, limits: DeadLetterLimits | None = None, *, replicas: int = 1
) -> bool:
    """Create ``hive``'s dead-letter stream with ``limits`` (unset ones from the defaults), or bring an
    existing one's limits in line; True when it was created. The framework does this with its admin
    connection, after :func:`ensure_dead_letter_streams` moved an old shared stream out of the way.
    ``replicas``: copies on as many nodes of a cluster."""
    wanted = _stream_config(hive, limits or DeadLetterLimits(), replicas)
    try:
        info = await js.stream_info(dlq_stream(hive))
    except NotFoundError:
        await js.add_stream(wanted)
        return True
    have = info.config
    if (have.max_bytes, have.max_age, have.discard, have.duplicate_window) != (
        wanted.max_bytes,
        wanted.max_age,
        wanted.discard,
        wanted.duplicate_window,
    ):
        await js.update_stream(
            have.evolve(
                max_bytes=wanted.max_bytes,
                max_age=wanted.max_age,
                discard=wanted.discard,
                duplicate_window=wanted.duplicate_window,
            )
        )
    return False


async def ensure_dead_letter_streams(
    js: JetStreamContext,
    hives: Mapping[str, DeadLetterLimits] | Iterable[str],
    *,
    default: DeadLetterLimits | None = None,
    replicas: int = 1,
) -> list[str]:
    """Provision every hive's dead-letter stream and the replay record; returns the streams created.

    ``hives`` maps each hive to its own limits (or just names them: the defaults apply). A shared stream
    ``SUBHIVE_DLQ`` from an older subhive stops capturing (its letters stay readable, and expire with
    ``default``'s age) and is deleted once empty.
    """
    limits = dict(hives) if isinstance(hives, Mapping) else dict.fromkeys(hives, DeadLetterLimits())
    await _retire_shared_stream(js, default or DeadLetterLimits())
    created = [
        dlq_stream(hive)
        for hive in sorted(limits)
        if await ensure_dead_letter_stream(js, hive, limits[hive], replicas=replicas)
    ]
    if await _ensure_replays_stream(js, replicas):
        created.append(REPLAYS_STREAM)
    return created


async def _retire_shared_stream(js: JetStreamContext, default: DeadLetterLimits) -> None:
    """The old ``SUBHIVE_DLQ`` captured ``subhive.dlq.>``, which overlaps every hive's stream (nats-server
    refuses that): it now captures only its own name, which nothing publishes to."""
    try:
        info = await js.stream_info(DLQ_STREAM)
    except NotFoundError:
        return
    if not info.state.messages:
        await js.delete_stream(DLQ_STREAM)
        return
    age = default.over(DEFAULT_DEAD_LETTER_LIMITS).max_age or 0.0
    window = min(_DUPLICATE_WINDOW, age) if age else info.config.duplicate_window
    if info.config.subjects != [DLQ_STREAM] or info.config.max_age != age:
        await js.update_stream(info.config.evolve(subjects=[DLQ_STREAM], max_age=age, duplicate_window=window))


async def _ensure_replays_stream(js: JetStreamContext, replicas: int = 1) -> bool:
    try:
        await js.stream_info(REPLAYS_STREAM)
        return False
    except NotFoundError:
        # Marks are small and only matter while their letter exists: the oldest go first when it is full.
        await js.add_stream(
            StreamConfig(
                name=REPLAYS_STREAM,
                subjects=[f"{_REPLAYS}.>"],
                storage=StorageType.FILE,
                max_bytes=_REPLAYS_MAX_BYTES,
                discard=DiscardPolicy.OLD,
                num_replicas=replicas,
            )
        )
        return True


def _one_line(text: str) -> str:
    # Header values are one line; a long message is cut, never the payload.
    flat = " ".join(text.split())
    return flat if len(flat) <= _MAX_HEADER else flat[: _MAX_HEADER - 3] + "..."


async def publish_dead_letter(
    js: JetStreamContext,
    hive: str,
    *,
    where: tuple[str, Line, str, str],
    subject: str,
    data: bytes,
    headers: Mapping[str, str] | None,
    error: WireError,
    letter_id: str = "",
) -> str:
    """Keep ``data`` (as received on ``subject``) in the hive's dead letters; ``where`` is
    (contract, line, kind, member) with kind ``op``, ``ev`` or ``reply``. Waits for the stream's ack and
    returns the letter's message id: ``letter_id`` when given (``dlq-<hive>-...``), else
    :func:`new_letter_id`'s.

    Raises :class:`BusError` ``deadletter.full`` when the hive's stream is full (it keeps what it has), and
    ``deadletter.no_stream`` when no stream captures the hive's dead letters.
    """
    contract, line, kind, member = where
    original = dict(headers or {})
    if letter_id and not letter_id.startswith(f"dlq-{hive}-"):
        raise ValueError(f"a dead letter id of hive {hive} starts with dlq-{hive}-, not {letter_id!r}")
    dlq_headers = {
        H_CODE: error.code,
        H_MESSAGE: _one_line(error.message),
        H_POINTER: error.pointer,
        H_KEYWORD: error.keyword,
        H_SUBJECT: subject,
        H_HEADERS: json.dumps(original, sort_keys=True),
        H_MSG_ID: letter_id or new_letter_id(hive, kind, original),
    }
    target = dlq_subject(hive, contract, line_name(line), kind, member)
    try:
        await js.publish(target, data, headers={k: v for k, v in dlq_headers.items() if v})
        return dlq_headers[H_MSG_ID]
    except APIError as exc:
        if exc.err_code in _FULL_CODES:
            raise BusError(
                f"the dead letters of hive {hive} are full ({exc.description}); this one was not kept",
                code="deadletter.full",
                location=Location(subject=subject),
                hint="see `subhive deadletters list --hive " + hive + "`; raise [dead_letters] "
                "max_bytes in its subhive.toml or hive.toml",
            ) from None
        raise
    except (NoStreamResponseError, NoRespondersError):
        raise BusError(
            f"no stream keeps the dead letters of hive {hive}",
            code="deadletter.no_stream",
            location=Location(subject=target),
            hint="the framework creates each hive's stream before it starts (subhive.bus.ensure_dead_letter_streams)",
        ) from None


def new_letter_id(hive: str, kind: str, headers: Mapping[str, str]) -> str:
    """The message id of a dead letter, which the stream deduplicates on (two minutes).

    An event's comes from its own id, so an event dead-lettered twice (redelivered after a crash between the
    two) is kept once. Anything else gets a fresh one: a request's id is its sender's to choose, and two
    different failing requests reusing one must not collapse into one letter.

    >>> new_letter_id("web", "ev", {"Nats-Msg-Id": "e-1"})
    'dlq-web-e-1'
    >>> new_letter_id("backend", "op", {"Nats-Msg-Id": "r-1"}) == new_letter_id("backend", "op", {"Nats-Msg-Id": "r-1"})
    False
    """
    original = headers.get(H_MSG_ID)
    return f"dlq-{hive}-{original}" if kind == "ev" and original else f"dlq-{hive}-{message_id()}"


# -- reading ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Replay:
    """One replay of a dead letter: when, by whom (when known), and what happened."""

    time: datetime | None
    by: str
    result: str

    def to_dict(self) -> dict[str, Any]:
        return {"time": self.time.isoformat() if self.time else None, "by": self.by, "result": self.result}


@dataclass(frozen=True)
class DeadLetter:
    """One dead letter: ``data`` is the refused message's exact bytes; ``id`` (``<hive>:<seq>``) names it."""

    seq: int
    hive: str
    subject: str
    code: str
    message: str
    pointer: str
    keyword: str
    headers: dict[str, str]
    data: bytes
    time: datetime | None
    stream: str = ""
    msg_id: str = ""
    replays: tuple[Replay, ...] = ()
    #: The subject it was kept on (subhive.dlq.<hive>.<contract>.v<line>.<kind>.<member>): only its hive may
    #: publish there, so unlike ``subject`` and ``headers`` (which the hive wrote) the stream vouches for it.
    kept_on: str = ""

    @property
    def id(self) -> str:
        """``backend:12``; a letter of the old shared stream is ``SUBHIVE_DLQ:12``."""
        return f"{DLQ_STREAM if self.stream == DLQ_STREAM else self.hive}:{self.seq}"

    def to_dict(self, *, with_data: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "seq": self.seq,
            "stream": self.stream,
            "hive": self.hive,
            "subject": self.subject,
            "code": self.code,
            "message": self.message,
            "pointer": self.pointer,
            "keyword": self.keyword,
            "headers": self.headers,
            "size": len(self.data),
            "time": self.time.isoformat() if self.time else None,
            "msg_id": self.msg_id,
            "replayed": bool(self.replays),
            "replays": [r.to_dict() for r in self.replays],
        }
        if with_data:
            out["data"] = self.data.decode("utf-8", "replace")
        return out


@dataclass(frozen=True)
class DeadLetterUsage:
    """How full one hive's dead-letter stream is; ``max_bytes``/``max_age`` 0 mean no limit."""

    hive: str
    stream: str
    messages: int
    bytes: int
    max_bytes: int
    max_age: float

    @property
    def used(self) -> float | None:
        """The fraction of ``max_bytes`` taken, or None without a size limit."""
        return self.bytes / self.max_bytes if self.max_bytes > 0 else None

    @property
    def level(self) -> str:
        """``ok``, ``near_full`` (at least 80 %) or ``full``: at least 95 %, or no room left for a letter of
        the average size held (the next one is likely refused)."""
        used = self.used
        if used is None:
            return "ok"
        room = self.max_bytes - self.bytes
        if used >= FULL or (self.messages and room < self.bytes / self.messages):
            return "full"
        return "near_full" if used >= NEAR_FULL else "ok"

    def warning(self) -> str | None:
        """One line for people when the stream is near full or full, else None."""
        if self.level == "ok":
            return None
        percent = round((self.used or 0) * 100)
        tail = (
            "new ones are refused and counted, the kept ones stay"
            if self.level == "full"
            else "when full, new ones are refused"
        )
        return (
            f"dead letters of {self.hive} are {self.level.replace('_', ' ')}: {percent}% "
            f"({_size(self.bytes)} of {_size(self.max_bytes)}, {self.messages} letters); {tail}"
        )

    def to_dict(self) -> dict[str, Any]:
        used = self.used
        return {
            "stream": self.stream,
            "messages": self.messages,
            "bytes": self.bytes,
            "max_bytes": self.max_bytes,
            "max_age": self.max_age,
            "max_age_text": format_age(self.max_age) if self.max_age else "none",
            "used": round(used, 4) if used is not None else None,
            "level": self.level,
            "warning": self.warning(),
        }


class FullnessAlarm:
    """Says when a hive's stream becomes near full or full, once per rise (the supervisor emits it).

    >>> alarm = FullnessAlarm()
    >>> u = DeadLetterUsage("db", "SUBHIVE_DLQ_db", 9, 850, 1000, 0)
    >>> [x.hive for x in alarm.rises([u])], alarm.rises([u])
    (['db'], [])
    """

    _ORDER = {"ok": 0, "near_full": 1, "full": 2}

    def __init__(self) -> None:
        self._levels: dict[str, str] = {}

    def rises(self, usages: Iterable[DeadLetterUsage]) -> list[DeadLetterUsage]:
        risen = []
        for usage in usages:
            before = self._levels.get(usage.stream, "ok")
            self._levels[usage.stream] = usage.level
            if self._ORDER[usage.level] > self._ORDER[before]:
                risen.append(usage)
        return risen


# Named here: inside DeadLetters, ``list`` is its method.
_Letters = list[DeadLetter]
_Marks = dict[int, list[tuple[str, Replay]]]


class DeadLetters:
    """Read and replay the dead letters of every hive (admin connection).

    >>> dl = DeadLetters(nc)                              # doctest: +SKIP
    >>> [d.id for d in await dl.list("backend")]          # doctest: +SKIP
    ['backend:1']
    >>> await dl.replay("backend:1", rules=ReplayRules.from_lock(lock, root), by="alice")  # doctest: +SKIP
    'request re-sent to subhive.orders.v1.op.place_order: answered'
    """

    def __init__(self, nc: Client) -> None:
        self._nc = nc
        self._js = nc.jetstream()

    async def _streams(self) -> list[StreamInfo]:
        """Every stream capturing dead letters (one per hive), and the old shared one if it is still there."""
        found: list[StreamInfo] = []
        offset = 0
        while True:
            reply = await self._nc.request(
                "$JS.API.STREAM.LIST", json.dumps({"subject": _ALL, "offset": offset}).encode(), timeout=5
            )
            body = json.loads(reply.data)
            if "error" in body:
                raise APIError.from_error(body["error"])
            page = [StreamInfo.from_response(s) for s in body.get("streams") or []]
            found += [s for s in page if s.config.name not in (REPLAYS_STREAM, DLQ_STREAM)]
            offset += len(page)
            if not page or offset >= int(body.get("total", 0)):
                break
        with contextlib.suppress(NotFoundError):
            found.append(await self._js.stream_info(DLQ_STREAM))
        if not found:
            raise NotFoundError(description="no dead-letter stream")
        return found

    async def usage(self) -> list[DeadLetterUsage]:
        """How full each hive's stream is (the old shared stream is not a hive's, and is left out)."""
        return sorted(
            (
                DeadLetterUsage(
                    _hive_of(s),
                    s.config.name or "",
                    s.state.messages,
                    s.state.bytes,
                    s.config.max_bytes or 0,
                    s.config.max_age or 0.0,
                )
                for s in await self._streams()
                if s.config.name != DLQ_STREAM
            ),
            key=lambda u: u.hive,
        )

    async def counts(self) -> dict[str, int]:
        """How many dead letters each hive has (from the streams' states, no message is read)."""
        found: dict[str, int] = {}
        for stream in await self._streams():
            if stream.config.name == DLQ_STREAM:
                info = await self._js.stream_info(DLQ_STREAM, subjects_filter=_ALL)
                for subject, n in (info.state.subjects or {}).items():
                    found[subject.split(".")[2]] = found.get(subject.split(".")[2], 0) + n
            elif stream.state.messages:
                hive = _hive_of(stream)
                found[hive] = found.get(hive, 0) + stream.state.messages
        return found

    async def list(
        self, hive: str | None = None, *, limit: int = 1000, after: Mapping[str, int] | None = None
    ) -> list[DeadLetter]:
        """Dead letters oldest first (each stream's in its order: see :func:`oldest_first`), of one hive or all,
        at most ``limit``, with their replays.

        ``after`` maps a stream to the last sequence already seen in it (:meth:`positions` of the previous
        page): each stream is read from the next one, so a deep page costs what a first page costs."""
        per_stream: list[list[DeadLetter]] = []
        for stream in await self._streams():
            name = stream.config.name or ""
            if not stream.state.messages or (hive and name not in (DLQ_STREAM, dlq_stream(hive))):
                continue
            start = (after or {}).get(name, 0) + 1
            per_stream.append(await self._read(name, dlq_subject(hive) if hive else _ALL, limit, start))
        return oldest_first(per_stream, limit)

    @staticmethod
    def positions(letters: Iterable[DeadLetter], after: Mapping[str, int] | None = None) -> dict[str, int]:
        """``after`` moved past ``letters``: per stream, the last sequence seen (the next page's ``after``)."""
        moved = dict(after or {})
        for letter in letters:
            moved[letter.stream] = max(moved.get(letter.stream, 0), letter.seq)
        return moved

    async def _read(self, stream: str, subject: str, limit: int, seq: int = 1) -> _Letters:
        marks = await self._replays(stream)
        found: _Letters = []
        while len(found) < limit:
            try:
                raw = await self._js.get_msg(stream, seq=seq, subject=subject, next=True)
            except NotFoundError:
                break
            letter = _letter(stream, raw, raw.seq or seq)
            found.append(_with_replays(letter, marks.get(letter.seq, [])))
            seq = (raw.seq or seq) + 1
        return found

    async def _replays(self, stream: str, seq: int | None = None) -> _Marks:
        """The recorded replays of one stream's letters (or of one letter): seq -> [(letter's msg id, replay)]."""
        subject = f"{_REPLAYS}.{stream}." + (str(seq) if seq is not None else ">")
        found: _Marks = {}
        cursor = 1
        while True:
            try:
                raw = await self._js.get_msg(REPLAYS_STREAM, seq=cursor, subject=subject, next=True)
            except NotFoundError:  # no more, or no replay stream yet
                break
            cursor = (raw.seq or cursor) + 1
            try:
                mark = json.loads(raw.data or b"{}")
                letter_seq = int((raw.subject or "").rsplit(".", 1)[-1])
            except ValueError:
                continue
            when = raw.time if isinstance(raw.time, datetime) else None
            found.setdefault(letter_seq, []).append(
                (str(mark.get("msg_id", "")), Replay(when, str(mark.get("by", "")), str(mark.get("result", ""))))
            )
        return found

    async def get(self, ref: int | str) -> DeadLetter:
        """One dead letter by id (``backend:12``), by bare sequence when only one hive has that number, or by
        the message id a refused caller was told (``dlq-backend-<id>``, ``RemoteError.dead_letter``)."""
        if isinstance(ref, str) and ref.strip().startswith("dlq-"):
            ref = await self._by_message_id(ref.strip())
        prefix, seq = _parse_ref(ref)
        if prefix is not None:
            stream = DLQ_STREAM if prefix == DLQ_STREAM else dlq_stream(prefix)
            try:
                raw = await self._js.get_msg(stream, seq=seq)
            except NotFoundError:
                raise BusError(
                    f"no dead letter {prefix}:{seq}",
                    code="deadletter.unknown",
                    hint="list them with `subhive deadletters list`",
                ) from None
            candidates = [_letter(stream, raw, seq)]
        else:
            candidates = []
            for info in await self._streams():
                try:
                    raw = await self._js.get_msg(info.config.name or "", seq=seq)
                except NotFoundError:
                    continue
                candidates.append(_letter(info.config.name or "", raw, seq))
        if not candidates:
            raise BusError(
                f"no dead letter {seq}", code="deadletter.unknown", hint="list them with `subhive deadletters list`"
            )
        if len(candidates) > 1:
            raise BusError(
                f"{len(candidates)} hives have a dead letter {seq}",
                code="deadletter.ambiguous",
                hint="name it with its hive: " + ", ".join(sorted(c.id for c in candidates)),
            )
        letter = candidates[0]
        marks = await self._replays(letter.stream, letter.seq)
        return _with_replays(letter, marks.get(letter.seq, []))

    async def _by_message_id(self, msg_id: str) -> str:
        """``backend:12`` for the letter stored under ``msg_id`` (read headers only, oldest first)."""
        # A hive's name may hold "-" too (order-desk): each prefix ending before a "-" may be the hive.
        rest = msg_id.removeprefix("dlq-")
        hives = [rest[:i] for i, c in enumerate(rest) if c == "-" and _is_hive(rest[:i])]
        if not hives:
            raise BusError(
                f"{msg_id!r} is not a dead letter's message id",
                code="deadletter.ref_invalid",
                hint="a refused caller is told dlq-<hive>-<id>; `subhive deadletters list` shows HIVE:SEQ",
            )
        for hive in hives:
            for stream in (dlq_stream(hive), DLQ_STREAM):
                seq = await self._scan(stream, dlq_subject(hive), msg_id)
                if seq is not None:
                    return f"{DLQ_STREAM if stream == DLQ_STREAM else hive}:{seq}"
        raise BusError(
            f"no dead letter {msg_id}",
            code="deadletter.unknown",
            hint="it may have expired (max_age); list them with `subhive deadletters list`",
        )

    async def _scan(self, stream: str, subject: str, msg_id: str) -> int | None:
        try:
            info = await self._js.stream_info(stream, subjects_filter=subject)
        except NotFoundError:
            return None
        if not info.state.subjects:
            return None
        sub = await self._js.subscribe(
            subject, stream=stream, ordered_consumer=True, headers_only=True, deliver_policy=DeliverPolicy.ALL
        )
        try:
            while True:
                msg = await sub.next_msg(timeout=5)
                if (msg.headers or {}).get(H_MSG_ID) == msg_id:
                    return msg.metadata.sequence.stream
                if not msg.metadata.num_pending:
                    return None
        finally:
            await sub.unsubscribe()

    async def replay(self, ref: int | str, *, rules: ReplayRules, by: str = "", timeout: float = 5.0) -> str:
        """Send dead letter ``ref`` again to where it arrived; returns what happened, in words, and records the
        replay (when, ``by`` whom, the outcome) for ``list`` and ``show``.

        The letter's hive wrote its stored subject and headers, so they are not trusted: ``rules`` (from the
        lock) must let that hive receive what the letter was kept as, and the headers are made anew
        (:class:`ReplayRules`; raises :class:`BusError` ``deadletter.replay_refused`` and sends nothing).
        An event goes to the hive that kept it alone, on its replay subject (never to the event stream: its
        bytes are that hive's, not the provider's; decision 0047); raises ``bus.not_served`` and records
        nothing when that hive does not listen (not running). A request is sent as a request to the provider
        that kept it, and its answer (or refusal) is reported.
        """
        letter = await self.get(ref)
        target = rules.target(letter.kept_on, letter.subject, letter.headers, letter.id)
        headers = {**target.headers, H_REPLAY_OF: letter.id}
        if target.kind == "ev":
            said = await self._replay_event(letter, target.subject, target.hive, headers, timeout)
            return said + await self._mark(letter, by, said)
        try:
            reply = await self._nc.request(target.subject, letter.data, timeout=timeout, headers=headers)
        except NoRespondersError:  # nothing was delivered: no mark
            raise BusError(
                f"nobody serves {target.subject} now; dead letter {letter.id} was not replayed",
                code="bus.not_served",
                location=Location(subject=target.subject),
                hint="start the provider hive, then replay again",
            ) from None
        except NatsTimeout:  # it went out and may have been handled: recorded as sent
            await self._mark(letter, by, f"request re-sent to {target.subject}: no answer within {timeout:g} s")
            raise BusError(
                f"{target.subject} did not answer within {timeout:g} s",
                code="bus.timeout",
                location=Location(subject=target.subject),
            ) from None
        code = (reply.headers or {}).get(H_ERROR)
        said = f"request re-sent to {target.subject}: " + (f"refused again ({code})" if code else "answered")
        return said + await self._mark(letter, by, said)

    async def _replay_event(
        self, letter: DeadLetter, subject: str, hive: str, headers: dict[str, str], timeout: float
    ) -> str:
        """Send an event's replay to its hive. Sent as a request, only to learn whether anyone listens: the server
        answers "no responders" at once when nobody does; a hive never answers (it may not publish to our
        inbox), so silence means it was delivered."""
        try:
            await self._nc.request(subject, letter.data, timeout=min(timeout, _EVENT_REPLAY_WAIT), headers=headers)
        except NoRespondersError:  # nothing was delivered: no mark
            raise BusError(
                f"hive {hive} does not listen on {subject} now; dead letter {letter.id} was not replayed",
                code="bus.not_served",
                location=Location(subject=subject),
                hint=f"start hive {hive} (its transport listens while it consumes the event), then replay again",
            ) from None
        except NatsTimeout:
            pass
        return f"event re-sent to {hive} alone ({subject})"

    async def _mark(self, letter: DeadLetter, by: str, result: str) -> str:
        """Record a replay; returns what to add to the result when it could not be recorded."""
        mark = json.dumps({"msg_id": letter.msg_id, "by": by, "result": result, "letter": letter.id})
        try:
            await _ensure_replays_stream(self._js)
            await self._js.publish(f"{_REPLAYS}.{letter.stream}.{letter.seq}", mark.encode())
        except Exception as exc:  # the replay happened; say that its mark is missing rather than fail it
            return f" (the replay could not be recorded: {type(exc).__name__})"
        return ""


def _size(n: int) -> str:
    """For people: ``_size(6654)`` is '6.5KiB'."""
    for unit, factor in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= factor:
            return f"{n / factor:.1f}".removesuffix(".0") + unit
    return f"{n}B"


def _hive_of(stream: StreamInfo) -> str:
    subjects = stream.config.subjects or []
    parts = subjects[0].split(".") if subjects else []
    return parts[2] if len(parts) > 3 else ""


def _parse_ref(ref: int | str) -> tuple[str | None, int]:
    if isinstance(ref, int) and not isinstance(ref, bool):
        return None, ref
    text = str(ref).strip()
    prefix, _, number = text.rpartition(":")
    if number.isdigit() and int(number) > 0 and (not prefix or prefix == DLQ_STREAM or _is_hive(prefix)):
        return prefix or None, int(number)
    raise BusError(
        f"{text!r} is not a dead letter",
        code="deadletter.ref_invalid",
        hint="name it as `subhive deadletters list` shows it: HIVE:SEQ (e.g. backend:12), or SEQ",
    )


def _is_hive(name: str) -> bool:
    try:
        dlq_subject(name)
    except Exception:
        return False
    return True


def _with_replays(letter: DeadLetter, marks: list[tuple[str, Replay]]) -> DeadLetter:
    # A mark names the letter's message id: after a stream was deleted and made again, an old mark on the
    # same sequence number belongs to another letter and is not shown.
    replays = tuple(replay for msg_id, replay in marks if msg_id == letter.msg_id)
    if not replays:
        return letter
    return replace(letter, replays=replays)


def oldest_first(per_stream: Iterable[list[DeadLetter]], limit: int) -> list[DeadLetter]:
    """The first ``limit`` letters of several streams, oldest first, each stream's kept in sequence order.

    A page must be a prefix of every stream's letters: the next page resumes each stream after the last sequence
    shown (:meth:`DeadLetters.positions`). Sorting all by time would break that where a stream's times go back
    (a new leader's clock behind the old one's, after a failover): a letter left behind a later one is skipped
    for good. Merging by each stream's next letter keeps the prefix, and is oldest first wherever times rise.
    """
    merged = heapq.merge(*per_stream, key=lambda d: (d.time or _NO_TIME, d.stream, d.seq))
    return list(itertools.islice(merged, limit))


_NO_TIME = datetime.min.replace(tzinfo=UTC)


def _letter(stream: str, raw: RawStreamMsg, seq: int) -> DeadLetter:
    headers: Mapping[str, str] = raw.headers or {}
    subject, when = raw.subject or "", raw.time
    try:
        original = json.loads(headers.get(H_HEADERS, "{}"))
    except ValueError:
        original = {}
    parts = subject.split(".")
    return DeadLetter(
        seq=seq,
        hive=parts[2] if len(parts) > 2 else "",
        subject=headers.get(H_SUBJECT, ""),
        code=headers.get(H_CODE, ""),
        message=headers.get(H_MESSAGE, ""),
        pointer=headers.get(H_POINTER, ""),
        keyword=headers.get(H_KEYWORD, ""),
        headers={str(k): str(v) for k, v in original.items()} if isinstance(original, dict) else {},
        data=raw.data or b"",
        time=when if isinstance(when, datetime) else None,
        stream=stream,
        msg_id=str(headers.get(H_MSG_ID, "")),
        kept_on=subject,
    )
