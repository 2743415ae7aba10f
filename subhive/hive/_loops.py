"""Telling a knowledge source that loops from one that works: pure rules, no I/O (:class:`LoopDetector`)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

__all__ = ["LoopDetector"]


@dataclass
class _Last:
    key: str
    digest: bytes
    count: int
    first: float


class LoopDetector:
    """Per-source memory of the last write; :meth:`check` says why a write is a loop, or ``None``.

    Two shapes of runaway, each caught before the write that would continue it: the same value written to the
    same key ``repeats`` times in a row within ``window`` seconds (a source re-triggering itself with a write
    that changes nothing), and a write deeper than ``max_depth`` in the activation chain (sources waking each
    other: ping-pong, or a counter that triggers itself). A write from outside the experts has depth 0.

    >>> detector = LoopDetector(repeats=3, max_depth=10)
    >>> [detector.check("echo", "a.b", b'{"n":1}', depth=1, now=float(t)) for t in range(3)]
    [None, None, "echo wrote the same value to 'a.b' 3 times in a row"]
    """

    def __init__(self, *, repeats: int = 5, max_depth: int = 32, window: float = 60.0) -> None:
        if repeats < 2 or max_depth < 1 or window <= 0:
            raise ValueError("repeats >= 2, max_depth >= 1 and window > 0 are required")
        self.repeats = repeats
        self.max_depth = max_depth
        self.window = window
        self._last: dict[str, _Last] = {}

    def check(self, source: str, key: str, value: bytes, *, depth: int, now: float) -> str | None:
        """Record that ``source`` is about to write ``value`` (its JSON bytes) to ``key`` at chain ``depth``."""
        if depth > self.max_depth:
            return (
                f"{source} is {depth} activations deep in a chain of knowledge sources waking each other "
                f"(limit {self.max_depth}), writing {key!r}"
            )
        digest = hashlib.blake2b(value, digest_size=16).digest()
        last = self._last.get(source)
        if last is not None and last.key == key and last.digest == digest and now - last.first <= self.window:
            last.count += 1
        else:
            last = self._last[source] = _Last(key, digest, 1, now)
        if last.count >= self.repeats:
            return f"{source} wrote the same value to {key!r} {last.count} times in a row"
        return None

    def forget(self, source: str) -> None:
        """Start afresh for ``source`` (after it was quarantined and released)."""
        self._last.pop(source, None)
