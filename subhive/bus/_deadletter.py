"""The dead-letter stream: every message a hive refused or failed to handle, bytes intact, with the reason.

One JetStream stream, ``SUBHIVE_DLQ``, captures ``subhive.dlq.>``. A hive dead-letters under its own prefix
(``subhive.dlq.<hive>.<contract>.v<major>.<op|ev|reply>.<member>``, the only DLQ subjects its credentials
allow), with the original message's exact bytes as the payload and the reason in headers::

    Subhive-Dlq-Code      payload.invalid              stable code of the refusal
    Subhive-Dlq-Message   ...                          one line, for people
    Subhive-Dlq-Pointer   /items/0/sku                 where in the payload (JSON pointer), when known
    Subhive-Dlq-Keyword   pattern                      the schema keyword that refused it, when known
    Subhive-Dlq-Subject   subhive.orders.v1.op.place_order   where it was sent
    Subhive-Dlq-Headers   {"Subhive-Sender": "web", ...}     its headers, as JSON

Listing, inspecting and replaying need the framework's (admin) connection: a hive may only add to the
stream. A replay sends the exact bytes and headers again to the original subject, under a new message id.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from nats.aio.client import Client
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout
from nats.js import JetStreamContext
from nats.js.api import StorageType, StreamConfig
from nats.js.errors import NotFoundError

from ..errors import Location
from ._permissions import DLQ_STREAM, dlq_subject
from ._wire import H_ERROR, H_MSG_ID, BusError, WireError, message_id

__all__ = ["DeadLetter", "DeadLetters", "ensure_dead_letter_stream", "publish_dead_letter"]

H_CODE = "Subhive-Dlq-Code"
H_MESSAGE = "Subhive-Dlq-Message"
H_POINTER = "Subhive-Dlq-Pointer"
H_KEYWORD = "Subhive-Dlq-Keyword"
H_SUBJECT = "Subhive-Dlq-Subject"
H_HEADERS = "Subhive-Dlq-Headers"
H_REPLAY_OF = "Subhive-Replay-Of"
_MAX_HEADER = 1000


async def ensure_dead_letter_stream(js: JetStreamContext) -> None:
    """Create ``SUBHIVE_DLQ`` unless it exists (the framework does this with its admin connection)."""
    try:
        await js.stream_info(DLQ_STREAM)
    except NotFoundError:
        await js.add_stream(StreamConfig(name=DLQ_STREAM, subjects=["subhive.dlq.>"], storage=StorageType.FILE,
                                         duplicate_window=120.0))


def _one_line(text: str) -> str:
    # Header values are one line; a long message is cut, never the payload.
    flat = " ".join(text.split())
    return flat if len(flat) <= _MAX_HEADER else flat[:_MAX_HEADER - 3] + "..."


async def publish_dead_letter(js: JetStreamContext, hive: str, *, where: tuple[str, int, str, str], subject: str,
                              data: bytes, headers: Mapping[str, str] | None, error: WireError) -> None:
    """Keep ``data`` (as received on ``subject``) in the hive's dead letters; ``where`` is
    (contract, major, kind, member) with kind ``op``, ``ev`` or ``reply``. Waits for the stream's ack."""
    contract, major, kind, member = where
    original = dict(headers or {})
    dlq_headers = {
        H_CODE: error.code, H_MESSAGE: _one_line(error.message), H_POINTER: error.pointer,
        H_KEYWORD: error.keyword, H_SUBJECT: subject, H_HEADERS: json.dumps(original, sort_keys=True),
        # A redelivered message dead-lettered twice (a crash between the two) is kept once.
        H_MSG_ID: f"dlq-{hive}-{original[H_MSG_ID]}" if original.get(H_MSG_ID) else message_id(),
    }
    target = dlq_subject(hive, contract, f"v{major}", kind, member)
    await js.publish(target, data, headers={k: v for k, v in dlq_headers.items() if v})


@dataclass(frozen=True)
class DeadLetter:
    """One dead letter: ``data`` is the refused message's exact bytes."""

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

    def to_dict(self, *, with_data: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"seq": self.seq, "hive": self.hive, "subject": self.subject, "code": self.code,
                               "message": self.message, "pointer": self.pointer, "keyword": self.keyword,
                               "headers": self.headers, "size": len(self.data),
                               "time": self.time.isoformat() if self.time else None}
        if with_data:
            out["data"] = self.data.decode("utf-8", "replace")
        return out


class DeadLetters:
    """Read and replay the dead-letter stream (admin connection).

    >>> dl = DeadLetters(nc)                         # doctest: +SKIP
    >>> [d.code for d in await dl.list("backend")]   # doctest: +SKIP
    ['payload.invalid']
    """

    def __init__(self, nc: Client) -> None:
        self._nc = nc
        self._js = nc.jetstream()

    async def list(self, hive: str | None = None, *, limit: int = 1000) -> list[DeadLetter]:
        """Dead letters oldest first, of one hive or all, at most ``limit``."""
        subject = dlq_subject(hive) if hive else "subhive.dlq.>"
        found: list[DeadLetter] = []
        seq = 1
        while len(found) < limit:
            try:
                raw = await self._js.get_msg(DLQ_STREAM, seq=seq, subject=subject, next=True)
            except NotFoundError:
                break
            found.append(_letter(raw.seq or seq, raw.subject or "", raw.headers or {}, raw.data or b"", raw.time))
            seq = (raw.seq or seq) + 1
        return found

    async def counts(self) -> dict[str, int]:
        """How many dead letters each hive has (from the stream's subject counts, no message is read)."""
        info = await self._js.stream_info(DLQ_STREAM, subjects_filter="subhive.dlq.>")
        found: dict[str, int] = {}
        for subject, n in (info.state.subjects or {}).items():
            hive = subject.split(".")[2]
            found[hive] = found.get(hive, 0) + n
        return found

    async def get(self, seq: int) -> DeadLetter:
        try:
            raw = await self._js.get_msg(DLQ_STREAM, seq=seq)
        except NotFoundError:
            raise BusError(f"no dead letter {seq}", code="deadletter.unknown",
                           hint="list them with `subhive deadletters list`") from None
        return _letter(seq, raw.subject or "", raw.headers or {}, raw.data or b"", raw.time)

    async def replay(self, seq: int, *, timeout: float = 5.0) -> str:
        """Send dead letter ``seq`` again to its original subject; returns what happened, in words.

        An event goes back through JetStream (so every consumer gets it, and it is acknowledged); a request
        is sent as a request and the provider's answer (or refusal) is reported.
        """
        letter = await self.get(seq)
        headers = {**letter.headers, H_MSG_ID: message_id(), H_REPLAY_OF: str(seq)}
        if ".ev." in letter.subject:
            ack = await self._js.publish(letter.subject, letter.data, headers=headers, timeout=timeout)
            return f"event re-published to {letter.subject} (stream {ack.stream}, seq {ack.seq})"
        try:
            reply = await self._nc.request(letter.subject, letter.data, timeout=timeout, headers=headers)
        except NoRespondersError:
            raise BusError(f"nobody serves {letter.subject} now; dead letter {seq} was not replayed",
                           code="bus.not_served", location=Location(subject=letter.subject),
                           hint="start the provider hive, then replay again") from None
        except NatsTimeout:
            raise BusError(f"{letter.subject} did not answer within {timeout} s", code="bus.timeout",
                           location=Location(subject=letter.subject)) from None
        code = (reply.headers or {}).get(H_ERROR)
        return f"request re-sent to {letter.subject}: " + (f"refused again ({code})" if code else "answered")


def _letter(seq: int, subject: str, headers: Mapping[str, str], data: bytes, when: Any) -> DeadLetter:
    try:
        original = json.loads(headers.get(H_HEADERS, "{}"))
    except ValueError:
        original = {}
    parts = subject.split(".")
    return DeadLetter(seq=seq, hive=parts[2] if len(parts) > 2 else "", subject=headers.get(H_SUBJECT, ""),
                      code=headers.get(H_CODE, ""), message=headers.get(H_MESSAGE, ""),
                      pointer=headers.get(H_POINTER, ""), keyword=headers.get(H_KEYWORD, ""),
                      headers={str(k): str(v) for k, v in original.items()} if isinstance(original, dict) else {},
                      data=data, time=when if isinstance(when, datetime) else None)
