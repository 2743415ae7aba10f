"""Frames for watchers: encoded once, kept in a shared in-memory window, sent as pre-serialised bytes.

Every watcher receives every frame, so a frame's cost is paid once, not per watcher; wake-ups are
throttled under load (docs/decisions/0010-watcher-wake-ups.md). See docs/root-hive.md#the-grpc-service.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ._proto import root_hive_pb2 as pb

if TYPE_CHECKING:
    from ._engine import Frame

__all__ = ["EncodedFrame", "FrameWindow", "batch_bytes", "encode_frame", "frame_pb", "passthrough"]

#: The key of one ``FrameBatch.frames`` element: field number, wire type 2 (length-delimited).
_FRAMES_KEY = bytes([pb.FrameBatch.DESCRIPTOR.fields_by_name["frames"].number << 3 | 2])


class EncodedFrame:
    """One frame, serialised: ``body`` is a ``Frame`` message, ``element`` a ``FrameBatch.frames`` element."""

    __slots__ = ("body", "element", "seq")

    def __init__(self, seq: int, body: bytes) -> None:
        self.seq = seq
        self.body = body
        self.element = _FRAMES_KEY + _varint(len(body)) + body


def frame_pb(frame: Frame) -> pb.Frame:
    return pb.Frame(
        seq=frame.seq,
        kind=frame.kind,
        time=frame.time,
        data_json=json.dumps(frame.data, separators=(",", ":"), sort_keys=True, default=str),
    )


def encode_frame(frame: Frame) -> EncodedFrame:
    return EncodedFrame(frame.seq, frame_pb(frame).SerializeToString())


def batch_bytes(frames: Sequence[EncodedFrame]) -> bytes:
    """A serialised ``FrameBatch`` holding ``frames``, in order: the concatenation of their elements."""
    return b"".join(f.element for f in frames)


def passthrough(message: Any) -> bytes:
    """Response serializer for methods that yield bytes already serialised (and messages, for safety)."""
    return message if isinstance(message, bytes) else bytes(message.SerializeToString())


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


class FrameWindow:
    """The recent frames, shared by every watcher, and a wake-up for those waiting on the next one.

    Frames are kept in a list with consecutive seqs (the first is ``_first``), so a watcher's run is one
    slice; the list is trimmed back to ``size`` frames once it holds twice that.
    """

    def __init__(self, last_seq: int, size: int, *, wake_interval: float = 0.0) -> None:
        self._frames: list[EncodedFrame] = []
        self._first = last_seq + 1
        self._size = size
        self.last_seq = last_seq
        self._changed = asyncio.Event()
        self._joined: tuple[int, int, bytes] | None = None  # (first seq, last seq, FrameBatch bytes)
        self._wake_interval = wake_interval
        self._woken = -wake_interval  # loop time of the last wake-up
        self._wake_pending = False
        self.closed = False

    def publish(self, frames: Sequence[EncodedFrame]) -> None:
        for frame in frames:
            if frame.seq > self.last_seq:
                self._frames.append(frame)
                self.last_seq = frame.seq
        if len(self._frames) > 2 * self._size:
            drop = len(self._frames) - self._size
            del self._frames[:drop]
            self._first += drop
        if self._wake_pending:
            return  # the scheduled wake-up will carry these frames too
        loop = asyncio.get_running_loop()
        due = self._woken + self._wake_interval - loop.time()
        if due <= 0:
            self._wake()
        else:
            self._wake_pending = True
            loop.call_later(due, self._wake)

    def _wake(self) -> None:
        self._wake_pending = False
        self._woken = asyncio.get_running_loop().time()
        self._changed.set()
        self._changed = asyncio.Event()

    def close(self) -> None:
        self.closed = True
        self._changed.set()

    def since(self, seq: int) -> list[EncodedFrame] | None:
        """Frames after ``seq`` from the window, or None when some of them have left it already."""
        if seq >= self.last_seq:
            return []
        offset = seq + 1 - self._first
        if offset < 0:
            return None
        return self._frames[offset:]

    def batch(self, frames: Sequence[EncodedFrame]) -> bytes:
        """``batch_bytes(frames)``, reusing the last result: the watchers of one commit ask for the same run."""
        key = (frames[0].seq, frames[-1].seq)
        joined = self._joined
        if joined is not None and joined[:2] == key:
            return joined[2]
        data = batch_bytes(frames)
        self._joined = (*key, data)
        return data

    async def wait_after(self, seq: int) -> None:
        while seq >= self.last_seq and not self.closed:
            await self._changed.wait()
