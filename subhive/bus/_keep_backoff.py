"""Events held back because their dead letter could not be kept (the hive's stream full): when each comes
back, and how many there are, for the heartbeat and ``subhive status``. Nothing is lost, and the wait is
made visible (docs/decisions/0023-dead-letter-limits.md, docs/bus.md#dead-letters).
"""

from __future__ import annotations

import time

__all__ = ["KEEP_AGAIN", "KEEP_AGAIN_MAX", "KeepBackoff"]

#: Seconds before an event whose dead letter could not be stored comes back the first time; each further
#: failure doubles it, up to :data:`KEEP_AGAIN_MAX`.
KEEP_AGAIN = 10.0
KEEP_AGAIN_MAX = 300.0
# An entry whose event did not come back this long after it was due was settled elsewhere (another replica
# kept it, or the operator removed it): it no longer counts as held.
_GRACE = 60.0


class KeepBackoff:
    """Per event (stream, sequence): how often its letter was refused, and when it is due back.

    >>> backoff = KeepBackoff()
    >>> [backoff.failed(("S", 1), now=0.0) for _ in range(7)]
    [10.0, 20.0, 40.0, 80.0, 160.0, 300.0, 300.0]
    >>> backoff.held(now=0.0), backoff.kept(("S", 1)), backoff.held(now=0.0)
    (1, None, 0)
    """

    def __init__(self) -> None:
        self._held: dict[tuple[str, int], tuple[int, float]] = {}  # event -> (failures, when it is due back)

    def failed(self, event: tuple[str, int], *, now: float | None = None) -> float:
        """The letter of ``event`` was not kept: the delay (seconds) before it comes back."""
        now = time.monotonic() if now is None else now
        failures = self._held.get(event, (0, 0.0))[0] + 1
        delay = min(KEEP_AGAIN_MAX, KEEP_AGAIN * (1 << min(failures - 1, 16)))
        self._held[event] = (failures, now + delay)
        return delay

    def kept(self, event: tuple[str, int]) -> None:
        """The letter of ``event`` is kept (or the event settled otherwise): it is held no more."""
        self._held.pop(event, None)

    def held(self, *, now: float | None = None) -> int:
        """How many events are held back now (entries long overdue are dropped: settled elsewhere)."""
        now = time.monotonic() if now is None else now
        for event in [e for e, (_, due) in self._held.items() if now > due + _GRACE]:
            del self._held[event]
        return len(self._held)
