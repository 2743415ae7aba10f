"""The root's durable memory: an append-only log of events, one checksummed JSON record per line.

Records are the frames watchers receive (a ``seq`` is a resume token); a torn last record is dropped at open,
damage before a good record is ``log.corrupt``. See docs/decisions/0008-event-sourced-root-state.md.
"""

from __future__ import annotations

import json
import os
import time
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError, Location

__all__ = ["EventLog", "Frame"]


@dataclass(frozen=True, slots=True)
class Frame:
    """One event as a watcher sees it: ``Frame(seq=7, kind="verdict", data={...}, time=1.7e9)``.

    ``seq`` is the resume token: after seeing ``seq`` N a watcher asks for frames after N.
    """

    seq: int
    kind: str
    data: dict[str, Any]
    time: float
    #: Replay-only facts (never sent to watchers).
    private: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "kind": self.kind, "time": self.time, "data": self.data}


class EventLog:
    """An open log file. Not thread-safe: one writer, the engine."""

    def __init__(self, path: Path, frames: list[Frame], dropped: int) -> None:
        self.path = path
        self._frames = frames
        #: Torn records dropped from the end when the log was opened (0 after a clean shutdown).
        self.dropped = dropped
        self._staged: list[bytes] = []
        self._durable = len(frames)  # frames[:_durable] are on disk; the rest are staged
        self._handle = open(path, "ab")  # noqa: SIM115 - held open for the engine's lifetime

    @classmethod
    def open(cls, path: Path) -> EventLog:
        """Read every record (dropping a torn last one) and open the file for appending."""
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            path.touch()
        frames, good_bytes, dropped = _read(path)
        if dropped:
            # Cut the torn tail so the next append starts on a clean line.
            with open(path, "r+b") as handle:
                handle.truncate(good_bytes)
                handle.flush()
                os.fsync(handle.fileno())
        return cls(path, frames, dropped)

    @property
    def frames(self) -> Sequence[Frame]:
        return self._frames

    @property
    def last_seq(self) -> int:
        """The newest record's seq, staged ones included (the next record gets ``last_seq + 1``)."""
        return self._frames[-1].seq if self._frames else 0

    @property
    def durable_seq(self) -> int:
        """The newest record on disk."""
        return self._durable

    def append(self, records: Iterable[tuple[str, dict[str, Any], dict[str, Any]]]) -> list[Frame]:
        """Append ``(kind, data, private)`` records durably (one write, one fsync) and return their frames."""
        frames = self.stage(records)
        self.sync()
        return frames

    def stage(self, records: Iterable[tuple[str, dict[str, Any], dict[str, Any]]]) -> list[Frame]:
        """Number ``(kind, data, private)`` records and hold them in memory until :meth:`sync`.

        Group commit: several calls stage their records and one :meth:`sync` writes and fsyncs them all.
        Staged frames are not durable yet, so :meth:`since` does not return them.
        """
        now = time.time()
        seq = self.last_seq
        frames: list[Frame] = []
        for kind, data, private in records:
            seq += 1
            frame = Frame(seq, kind, data, now, private)
            # A line is ``<crc32 of the JSON, 8 hex digits> <JSON>\n``; ``data`` is what watchers see, ``private``
            # what only replay needs (such as a token's sha256).
            body = json.dumps(
                {"seq": seq, "kind": kind, "time": now, "data": data, "private": private},
                sort_keys=True,
                separators=(",", ":"),
                ensure_ascii=False,
            ).encode("utf-8")
            self._staged.append(b"%08x %s\n" % (zlib.crc32(body), body))
            frames.append(frame)
        self._frames.extend(frames)
        return frames

    @property
    def staged(self) -> int:
        """Records staged and not yet written and fsynced."""
        return len(self._staged)

    def sync(self) -> int:
        """Write every staged record with one ``write`` and one ``fsync``; return how many became durable."""
        if not self._staged:
            return 0
        count = len(self._staged)
        self._handle.write(b"".join(self._staged))
        self._handle.flush()
        os.fsync(self._handle.fileno())
        # Only after the fsync: a frame handed out by since() is a frame on disk.
        self._staged.clear()
        self._durable = len(self._frames)
        return count

    def since(self, seq: int) -> list[Frame]:
        """Frames after ``seq`` (seq is the record number, so this is a slice)."""
        return list(self._frames[max(seq, 0) : self._durable])

    def close(self) -> None:
        self._handle.close()


def _read(path: Path) -> tuple[list[Frame], int, int]:
    """(frames, bytes of good records, records dropped from a torn tail)."""
    raw = path.read_bytes()
    frames: list[Frame] = []
    offset = 0
    lines = raw.split(b"\n")
    # The piece after the last newline is either empty (clean end) or a torn write.
    complete, tail = lines[:-1], lines[-1]
    for index, line in enumerate(complete):
        frame = _parse(line, len(frames) + 1)
        if frame is None:
            if index == len(complete) - 1 and not tail:
                return frames, offset, 1  # the last full line is torn (e.g. its bytes were not all flushed)
            raise InputError(
                f"event log record {index + 1} is damaged and later records follow it",
                code="log.corrupt",
                location=Location(file=str(path), line=index + 1),
                hint="the log was edited or the disk is damaged; restore .subhive/root from a "
                "backup, or move it aside to start an empty root (registrations are lost)",
            )
        frames.append(frame)
        offset += len(line) + 1
    return frames, offset, 1 if tail else 0


def _parse(line: bytes, expected_seq: int) -> Frame | None:
    if len(line) < 10 or line[8:9] != b" ":
        return None
    body = line[9:]
    try:
        if int(line[:8], 16) != zlib.crc32(body):
            return None
        record = json.loads(body)
    except ValueError:
        return None
    if not isinstance(record, dict) or record.get("seq") != expected_seq:
        return None
    return Frame(record["seq"], record["kind"], record["data"], record["time"], record.get("private", {}))
