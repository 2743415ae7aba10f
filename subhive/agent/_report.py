"""A turn's frames onto the root's event stream (root-hive 1.4.0, ``ReportFrames``), so ``subhive watch`` shows
every step. The sink only queues; a background task sends what has queued up as one batch, so the loop never
waits for the root, and a root that cannot be reached costs a log line, never the turn. Every watcher of the
workspace sees the stream, so a step goes there as its outline: names, ids, codes, numbers; text (prompts,
replies, arguments, results) as its length only. The hive's board keeps the whole frame.
See docs/decisions/0054-agent-steps-on-the-root-stream.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from typing import Any

from ..root_hive import AgentStep
from ._loop import Frame

__all__ = ["BATCH_BYTES", "BATCH_STEPS", "RootReporter", "outline"]

log = logging.getLogger("subhive.agent")

#: Steps per report: one group commit (one fsync) at the root for all of them.
BATCH_STEPS = 64
#: Bytes of step data per report, well under gRPC's 4 MiB message limit.
BATCH_BYTES = 1024 * 1024
#: A string that goes to the root's stream as it is: an identifier (a name, an id, a code, a path, a model), not
#: text. Anything else, which may hold a hive's data or another hive's, goes as ``<N characters>``.
_IDENTIFIER = re.compile(r"[\w.:/@+=-]{1,128}\Z")
#: The root refuses a step's data above this (``agent_frames.too_large``); a step still larger is summarised.
_STEP_MAX = 64 * 1024


class RootReporter:
    """A frame sink for ``root`` (a ``RootClient``: the hive's token, or the admin's naming ``hive``).

    >>> reporter = RootReporter(root, agent="helper")                        # doctest: +SKIP
    >>> await agent.run_turn("hi", on_frame=sinks(transcript, reporter))   # doctest: +SKIP
    >>> await reporter.close()  # sends what is queued, waiting at most close_timeout  # doctest: +SKIP
    """

    def __init__(
        self,
        root: Any,
        *,
        agent: str,
        hive: str | None = None,
        queue_max: int = 4096,
        send_timeout: float = 5.0,
        close_timeout: float = 5.0,
    ) -> None:
        self.root, self.agent, self.hive = root, agent, hive
        self.send_timeout, self.close_timeout = send_timeout, close_timeout
        self._queue: asyncio.Queue[Any] = asyncio.Queue(queue_max)
        self._task: asyncio.Task[None] | None = None
        self._failing = False
        #: Steps on the root's stream, and steps lost (root unreachable, queue full, refused).
        self.sent = 0
        self.dropped = 0

    def __call__(self, frame: Frame) -> None:
        """Queue ``frame`` and return at once (a sink the loop does not await)."""
        try:
            self._queue.put_nowait(self._step(frame))
        except asyncio.QueueFull:
            self.dropped += 1  # the root is slower than the turn: the board still keeps the frame
            return
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._send_all(), name=f"report {self.agent}")

    def _step(self, frame: Frame) -> Any:
        text = json.dumps(outline(frame.data), ensure_ascii=False, sort_keys=True, default=str)
        if len(text.encode("utf-8")) > _STEP_MAX:
            text = json.dumps({"shortened": True, "bytes": len(text.encode("utf-8"))})
        return AgentStep(self.agent, frame.turn, frame.seq, frame.kind, text, frame.time)

    async def _send_all(self) -> None:
        while True:
            batch = [await self._queue.get()]
            size = len(batch[0].data_json)
            # What queued up while the last report was on its way goes as one batch: batching grows with load.
            while not self._queue.empty() and len(batch) < BATCH_STEPS and size < BATCH_BYTES:
                batch.append(self._queue.get_nowait())
                size += len(batch[-1].data_json)
            try:
                await asyncio.wait_for(self.root.report_frames(batch, hive=self.hive), self.send_timeout)
            except Exception as exc:  # a report never fails the turn: the board keeps every frame
                self.dropped += len(batch)
                if not self._failing:  # once per outage, not once per batch
                    log.warning(
                        "agent %s: cannot put turn %s's steps on the root's event stream: %s (the turn goes on; "
                        "its frames stay on the hive's board)",
                        self.agent,
                        batch[0].turn,
                        exc,
                    )
                self._failing = True
            else:
                self.sent += len(batch)
                if self._failing:
                    log.info("agent %s: reporting steps to the root again", self.agent)
                self._failing = False
            finally:
                for _ in batch:
                    self._queue.task_done()

    async def close(self) -> None:
        """Send what is queued (waiting at most ``close_timeout``), then stop; what is left counts as dropped."""
        if self._task is None:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._queue.join(), self.close_timeout)
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None
        self.dropped += self._queue.qsize()
        if self.dropped:
            log.warning("agent %s: %d step(s) did not reach the root's event stream", self.agent, self.dropped)


def outline(value: Any) -> Any:
    """``value`` with its shape, numbers, booleans and identifiers, and every other string as its length.

    >>> outline({"name": "board_write", "arguments": '{"key": "a"}', "ok": True})
    {'name': 'board_write', 'arguments': '<12 characters>', 'ok': True}
    """
    if isinstance(value, str):
        return value if _IDENTIFIER.match(value) else f"<{len(value)} characters>"
    if isinstance(value, dict):
        return {str(k): outline(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [outline(v) for v in value]
    return value
