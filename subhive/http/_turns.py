"""Agents' turns and their steps, indexed as frames are committed.

Reading ``/turns`` used to walk the root's whole log on its commit worker for every request, holding up the
commits behind it. The index is filled once from the log, then by a listener on each committed frame, and the
routes read it under a lock on the API's own thread.
"""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING

from ._models import FrameOut, TurnOut

if TYPE_CHECKING:
    from ..root_hive import Frame, RootHive, RootServer

__all__ = ["TurnIndex"]

_Key = tuple[str, str]  # (hive, turn)


class TurnIndex:
    """Every agent frame (``agent.*``) by (hive, turn), and a summary of each turn, oldest turn first."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._turns: dict[_Key, TurnOut] = {}
        self._frames: dict[_Key, list[FrameOut]] = {}
        self._seen = 0  # the newest seq indexed: the backlog and the listener may both offer a frame
        self._attached = asyncio.Lock()
        self._server: RootServer | None = None

    async def attach(self, server: RootServer) -> TurnIndex:
        """Follow ``server`` (once): the listener goes on and the backlog is read in the same step on the
        commit worker, so no frame committed in between is missed."""
        async with self._attached:
            if self._server is None:
                await server.call(self._start)
                self._server = server
        return self

    def _start(self, root: RootHive) -> None:
        root.add_listener(self.add)
        for frame in root.frames_since(0):
            self.add(frame)

    def add(self, frame: Frame) -> None:
        if not frame.kind.startswith("agent."):
            return
        out = FrameOut.model_validate(frame.to_dict())
        key = (str(out.data.get("hive")), str(out.data.get("turn")))
        kind = out.kind.removeprefix("agent.")
        with self._lock:
            if out.seq <= self._seen:
                return
            self._seen = out.seq
            self._frames.setdefault(key, []).append(out)
            found = self._turns.get(key)
            if found is None:
                agent = str(out.data.get("agent"))
                self._turns[key] = TurnOut(
                    hive=key[0],
                    agent=agent,
                    turn=key[1],
                    steps=1,
                    first_seq=out.seq,
                    last_seq=out.seq,
                    started=out.time,
                    last_kind=kind,
                )
            else:
                found.steps += 1
                found.last_seq, found.last_kind = out.seq, kind

    def turns(self, hive: str | None) -> list[TurnOut]:
        """The turns (of ``hive``, or all), in the order they started; copies, safe to hand out."""
        with self._lock:
            return [t.model_copy() for t in self._turns.values() if hive is None or t.hive == hive]

    def frames(self, hive: str, turn: str) -> list[FrameOut]:
        with self._lock:
            return list(self._frames.get((hive, turn), ()))
