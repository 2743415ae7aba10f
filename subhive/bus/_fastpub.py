"""Bus messages as pre-encoded ``HPUB`` frames, written where nats-py's own ``publish`` writes them.
nats-py encodes headers in Python on every message, most of what a small publish costs; two of our four headers
never change per (contract, sender) and two have a fixed size, so a frame is one bytes formatting. A provider's
replies go out the same way as ``PUB`` frames, and received headers are read by :func:`parse_header_lines`, the
same result as nats-py's parser in a third of the time. Falls back to nats-py's own code when its internals
differ (:func:`supported`). See docs/decisions/0014-bus-wire-cost.md and 0115-provider-replies-as-frames.md.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import itertools
import random
import re
import secrets
from dataclasses import dataclass
from typing import Any

from nats import errors
from nats.aio.client import Client
from nats.protocol import command

from .._trace import current_traceparent, outgoing_traceparent
from ._wire import H_CONTRACT, H_MSG_ID, H_SENDER, H_TRACE

__all__ = ["Frames", "Target", "parse_header_lines", "supported"]

# A header value written as is must be visible ASCII: nats-py would not strip or rewrite it either.
_PLAIN = re.compile(r"[!-~]+")
_PLAIN_BYTES = re.compile(rb"[!-~]+")
_TRACE_LINE = f"\r\n{H_TRACE}: 00-".encode()
_WAKE = "_flush_pending"
# What this module mirrors of nats-py (the checks of ``publish``, the bookkeeping of ``_send_publish``, the
# buffer of ``_send_command``, the header parser and where ``_process_headers`` calls it), by a digest of their
# source as of nats-py 2.16.0. Any other source means nats-py's own code until someone has read the new code and
# updated these; tests/bus/test_fastpub.py fails meanwhile, naming the installed version.
_MIRRORED = {
    "publish": "97d776c391adfd8b",
    "_send_publish": "300b534f8eabee74",
    "_send_command": "ed57e8e86389cf94",
    "_parse_header_lines": "049cf69148e0bb4f",
    "_process_headers": "fe656f61147df989",
}
#: The nats-py releases the digests above were taken from (pyproject.toml pins the same line).
VERIFIED_NATS_PY = ("2.16.0",)


def _frame_format(trace_id: bytes) -> bytes:
    """``HPUB <subject> <reply> <header size> <total size>``; the header block: its constant lines up to the
    message id's counter (16 hex), the counter, the traceparent (``trace_id``, a 16-hex span id), the blank line;
    then the payload."""
    return b"%s%s %d %d\r\n%s%016x" + _TRACE_LINE + trace_id + b"-%016x-01\r\n\r\n%s\r\n"


# The header block's size but for the constant lines: the counter, the traceparent line, the blank line.
_VARYING = 16 + len(_TRACE_LINE) + 32 + len("-") + 16 + len("-01") + 4
_IN_TRACE = _frame_format(b"%s")  # the current trace's id
_REPLY = b"PUB %s  %d\r\n%s\r\n"  # a reply: no reply subject of its own, no headers
_bits = random.getrandbits  # span ids must be unique, not secret (as in subhive._trace)


_checked: dict[type, bool] = {}


def _mirrors(cls: type) -> bool:
    """Whether ``cls`` has the code this module mirrors (read once per class)."""
    if cls not in _checked:
        try:
            _checked[cls] = all(
                hashlib.sha256(inspect.getsource(getattr(cls, name)).encode()).hexdigest()[:16] == digest
                for name, digest in _MIRRORED.items()
            )
        except (OSError, TypeError, AttributeError):  # no source to read: nothing to compare
            _checked[cls] = False
    return _checked[cls]


def supported(nc: Client) -> bool:
    """Whether ``nc`` has the private steps :class:`Frames` uses, and frames an HPUB as this module does.

    A frame goes where nats-py's ``publish`` puts its own, after the same checks (closed, draining, the
    pending-buffer limit while reconnecting; ``max_payload`` is the caller's): the ``stats`` counters, the pending
    buffer (``_send_command``'s three lines, inline: a coroutine call is a tenth of a small publish, and it
    flushes when the buffer is over its limit), then ``_flush_pending`` to wake the flusher unless a wake-up is
    queued already. All of that is private, so this checks, once per connection class, that it is there, that
    the mirrored code is the code it was written against (a digest of its source), and that nats-py frames an
    ``HPUB`` (and a reply's ``PUB``) as this module does. If not, :class:`Frames` sends through the public
    ``publish`` with a header dict, and nats-py parses headers itself: the same bytes on the wire and the same
    headers read, only slower. ``tests/bus/test_fastpub.py`` pins both, byte
    for byte and against a raw subscriber, and fails when the fast path is off.
    """
    head, trace, span = b"NATS/1.0\r\nA: b\r\nNats-Msg-Id: x", b"4bf92f3577b34da6a3ce929d0e0e4736", 0xF067
    block = head + b"%016x" % 7 + _TRACE_LINE + trace + b"-%016x-01\r\n\r\n" % span
    try:
        steps_there = (
            asyncio.iscoroutinefunction(getattr(nc, _WAKE, None))
            and hasattr(nc, "_flush_queue")
            and type(getattr(nc, "_pending", None)) is list
            and all(type(getattr(nc, name, None)) is int for name in ("_pending_data_size", "_max_pending_size"))
            and isinstance(nc.stats, dict)
            and {"out_msgs", "out_bytes"} <= nc.stats.keys()
            and _mirrors(type(nc))
        )
        theirs = command.hpub_cmd("s.x", "", bytearray(block), b"P")
        their_reply = command.pub_cmd("s.x", "", b"P")
    except Exception:  # anything unexpected about nats-py's internals means: use its public API
        return False
    size = len(head) + _VARYING
    ours = _IN_TRACE % (b"HPUB s.x ", b"", size, size + 1, head, 7, trace, span, b"P")
    same_frames = theirs == ours and their_reply == _REPLY % (b"s.x", 1, b"P")
    return bool(steps_there) and len(block) == size and same_frames


def parse_header_lines(raw: bytes) -> dict[str, str]:
    """nats-py 2.16's ``Client._parse_header_lines``, the same result for any bytes (tests/bus/test_fastpub.py
    checks that for all inputs), without its generator over every character of every name: ~2.4 us instead of
    ~8 us for the four bus headers, paid on every message a hive receives."""
    out: dict[str, str] = {}
    for line in raw.split(b"\r\n"):
        name, sep, value = line.partition(b":")
        if not sep:  # an empty line has no colon either
            continue
        try:
            key = name.strip().decode("ascii")
        except UnicodeDecodeError:
            continue
        # Whitespace in a name (str.split() splits on exactly what str.isspace() calls whitespace; bytes.strip()
        # above leaves non-ASCII-space whitespace such as \x1c at the ends, which split() would drop).
        if key and key.split() != [key]:
            continue
        out[key] = value.strip().decode("utf-8", "replace")
    return out


@dataclass(frozen=True, slots=True)
class Target:
    """A subject and the contract its messages are sent as; ``line`` and ``head`` are its frame's constant
    pieces (``HPUB <subject> `` and the header lines up to the message id's counter), None when messages to it
    go through nats-py's public ``publish``."""

    subject: str
    contract_id: str
    line: bytes | None = None
    head: bytes = b""
    size: int = 0  # of the whole header block


class Frames:
    """What one hive sends: the four bus headers on every message, as pre-encoded frames when ``nc`` allows.

    * ``Nats-Msg-Id``: this sender's 16 random hex digits and a 16-hex-digit counter (32 hex, unique).
    * ``traceparent``: inside a trace (a handler sending on), its trace id and a random span id, as
      :func:`~subhive._trace.outgoing_traceparent` makes them; outside any, a new trace whose id is this
      sender's other 16 random hex digits and the same counter, with the counter as span id. Unique like the
      message id and cheaper than 192 random bits per message.

    Every field has a fixed size, so a header block's size is known before it is built.
    """

    def __init__(self, nc: Client, hive: str) -> None:
        self._nc = nc
        self.hive = hive
        self.fast = supported(nc) and _PLAIN.fullmatch(hive) is not None
        if self.fast:  # the instance's attribute shadows the class's static method, for this connection only
            nc._parse_header_lines = parse_header_lines  # type: ignore[method-assign]
        self._id_prefix = secrets.token_hex(8)
        self._new_trace = _frame_format(secrets.token_hex(8).encode() + b"%016x")
        self._ids = itertools.count(1)  # from 1: a span id of zeros is invalid

    def message_id(self) -> str:
        return f"{self._id_prefix}{next(self._ids):016x}"

    def headers(self, contract_id: str, traceparent: str, msg_id: str | None = None) -> dict[str, str]:
        """The four headers as a dict, in wire order (for nats-py's public API: JetStream, the fallback)."""
        return {
            H_CONTRACT: contract_id,
            H_SENDER: self.hive,
            H_MSG_ID: self.message_id() if msg_id is None else msg_id,
            H_TRACE: traceparent,
        }

    def target(self, subject: str, contract_id: str) -> Target:
        """Where :meth:`send` sends, its constant frame pieces encoded once."""
        if not self.fast or _PLAIN.fullmatch(contract_id) is None or _PLAIN.fullmatch(subject) is None:
            return Target(subject, contract_id)
        head = (
            f"NATS/1.0\r\n{H_CONTRACT}: {contract_id}\r\n{H_SENDER}: {self.hive}\r\n{H_MSG_ID}: {self._id_prefix}"
        ).encode()
        return Target(subject, contract_id, f"HPUB {subject} ".encode(), head, len(head) + _VARYING)

    async def send(self, target: Target, data: bytes, reply: bytes = b"", traceparent: str | None = None) -> None:
        """Publish ``data`` to ``target`` with the four headers (and ``reply`` as its reply subject); with
        ``traceparent`` (a span's own, while tracing), that one instead of a new span id in the current trace."""
        line = target.line
        if line is None or traceparent is not None or (reply and _PLAIN_BYTES.fullmatch(reply) is None):
            await self._nc.publish(
                target.subject,
                data,
                reply=reply.decode(),
                headers=self.headers(target.contract_id, traceparent or outgoing_traceparent()),
            )
            return
        nc = self._nc
        if not nc.is_connected or nc.is_draining_pubs:
            self._offline(len(data))
        size = target.size
        n = next(self._ids)
        current = current_traceparent()
        if current is None:
            cmd = self._new_trace % (line, reply, size, size + len(data), target.head, n, n, n, data)
        else:  # "| 1": a span id of zeros is invalid
            cmd = _IN_TRACE % (
                line,
                reply,
                size,
                size + len(data),
                target.head,
                n,
                current[3:35].encode(),
                _bits(64) | 1,
                data,
            )
        stats: dict[str, Any] = nc.stats
        stats["out_msgs"] += 1
        stats["out_bytes"] += len(data)
        # nats-py's _send_command, inline (a coroutine call is a tenth of a small publish)
        nc._pending.append(cmd)
        nc._pending_data_size += len(cmd)
        if 0 < nc._max_pending_size < nc._pending_data_size:
            await nc._flush_pending(force_flush=True)
        queue = nc._flush_queue
        if queue is not None and queue.empty():
            await nc._flush_pending()

    async def reply(self, subject: str, data: bytes) -> None:
        """Answer a request: ``data`` to its reply subject ``subject``, no headers (a success: decision 0014), as
        nats-py's ``publish(subject, data)`` would, its checks included (a payload over the server's limit raises
        ``MaxPayloadError``)."""
        nc = self._nc
        if not self.fast or _PLAIN.fullmatch(subject) is None:
            await nc.publish(subject, data)
            return
        if not nc.is_connected or nc.is_draining_pubs:
            self._offline(len(data))
        if len(data) > nc.max_payload:
            raise errors.MaxPayloadError
        cmd = _REPLY % (subject.encode(), len(data), data)
        stats: dict[str, Any] = nc.stats
        stats["out_msgs"] += 1
        stats["out_bytes"] += len(data)
        nc._pending.append(cmd)  # as in send
        nc._pending_data_size += len(cmd)
        if 0 < nc._max_pending_size < nc._pending_data_size:
            await nc._flush_pending(force_flush=True)
        queue = nc._flush_queue
        if queue is not None and queue.empty():
            await nc._flush_pending()

    def _offline(self, size: int) -> None:
        """Raise what nats-py's ``publish`` raises on a connection that is not sending (or queue quietly)."""
        nc = self._nc
        if nc.is_closed:
            raise errors.ConnectionClosedError
        if nc.is_draining_pubs:
            raise errors.ConnectionDrainingError
        if not nc.is_connected and (nc._max_pending_size <= 0 or size + nc.pending_data_size > nc._max_pending_size):
            raise errors.OutboundBufferLimitError
