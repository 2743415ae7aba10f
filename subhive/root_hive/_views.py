"""What callers read: contracts and their versions' status, the hive tree, and the frames (backlog, live).

The views sync the manifests first, so they show the workspace as it is now.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from ..errors import InputError, Problem
from ._errors import Conflict
from ._lock import Lock
from ._log import Frame
from ._model import (
    ContractInfo,
    HiveStatus,
    VersionInfo,
)
from ._rules import version_line
from ._state import ROOT, HiveEntry, Requirement, RootState

__all__ = ["Views"]


class Views(RootState):
    """Views and watching."""

    def contracts(self) -> list[ContractInfo]:
        """Every accepted contract with its versions' status and consumers."""
        self.sync_manifests()
        out: list[ContractInfo] = []
        for name in self._lock.names():
            entries = self._lock.versions(name)
            heads = {version_line(e.version): e.version for e in entries}  # ascending: the last write is the newest
            newest_line = version_line(entries[-1].version)
            infos = []
            for e in entries:
                line = version_line(e.version)
                if e.consumers or (heads[line] == e.version and line == newest_line):
                    status = "active"
                elif heads[line] == e.version:
                    status = "retired"
                else:
                    status = "superseded"
                infos.append(
                    VersionInfo(
                        e.version,
                        e.hash,
                        e.provider,
                        status,  # type: ignore[arg-type]
                        dict(e.consumers),
                        (name, e.version) not in self._tampered,
                    )
                )
            out.append(ContractInfo(name, infos))
        return out

    @property
    def lock(self) -> Lock:
        """The lock as the root holds it (equal to ``contracts.lock`` after every acceptance)."""
        return self._lock

    def verify(self) -> list[Problem]:
        """``lock.tampered`` / ``lock.missing`` problems for accepted versions whose files changed.

        Tampered versions found at open are not served: they satisfy no requirement and no proposal is
        checked against them until their files are restored.
        """
        self._materialiser.wait()
        return self._lock.verify(self.workspace_root)

    def status(self) -> list[HiveStatus]:
        """The hive tree under the root: each hive with the contracts it provides and consumes."""
        self.sync_manifests()
        provides: dict[str, list[str]] = {}
        for name in self._lock.names():
            provides.setdefault(self._lock.versions(name)[-1].provider, []).append(name)
        open_needs = {(a.hive, a.contract): a.id for a in self._announcements.values() if a.status == "open"}
        # Each hive's requirements and children looked up, not searched for: a tree of 500 hives holds 16,000
        # requirements, and a search per hive made this view take seconds (decision 0139).
        needs: dict[str, list[tuple[str, Requirement]]] = {}
        for (who, contract), req in sorted(self._requirements.items()):
            needs.setdefault(who, []).append((contract, req))
        children_of: dict[str, list[HiveEntry]] = {}
        for entry in sorted(self._hives.values(), key=lambda h: h.name):
            children_of.setdefault(entry.parent, []).append(entry)

        def node(hive: HiveEntry) -> HiveStatus:
            consumes = []
            for contract, req in needs.get(hive.name, []):
                best = self._resolve(req)
                consumes.append(
                    {
                        "contract": contract,
                        "versions": req.versions,
                        "satisfied_by": str(best) if best else None,
                        "announcement_id": open_needs.get((hive.name, contract)),
                    }
                )
            children = [node(h) for h in children_of.get(hive.name, [])]
            return HiveStatus(
                hive.name,
                hive.kind,
                hive.parent,
                children,
                provides.get(hive.name, []),
                consumes,
                self._endpoints.of_provider(hive.name),
            )

        return [node(h) for h in children_of.get(ROOT, [])]

    def frames_since(self, token: int) -> list[Frame]:
        """Frames after resume token ``token`` (0 for all), in order. A token beyond the log raises Conflict."""
        if not isinstance(token, int) or token < 0:
            raise InputError(
                f"{token!r} is not a resume token", code="frames.token", hint="use 0 or the seq of the last frame seen"
            )
        if token > self._log_.last_seq:
            raise Conflict(
                f"resume token {token} is ahead of the log (last frame {self._log_.last_seq}): this root "
                "has a different history",
                code="frames.token_ahead",
                hint="resume from 0",
            )
        return self._log_.since(token)

    def subscribe(self) -> asyncio.Queue[Frame]:
        """A queue receiving every frame committed from now on (call from the event loop that reads it)."""
        queue: asyncio.Queue[Frame] = asyncio.Queue()
        self._subscribers.append((asyncio.get_running_loop(), queue))
        return queue

    def unsubscribe(self, queue: asyncio.Queue[Frame]) -> None:
        self._subscribers = [(loop, q) for loop, q in self._subscribers if q is not queue]

    def add_listener(self, callback: Callable[[Frame], None]) -> None:
        """Call ``callback(frame)`` for each committed frame, synchronously, in the committing thread."""
        self._listeners.append(callback)

    def remove_listener(self, callback: Callable[[Frame], None]) -> None:
        self._listeners = [c for c in self._listeners if c is not callback]

    async def watch(self, after: int = 0) -> AsyncIterator[Frame]:
        """Frames after ``after``, then live ones: no gap, no duplicate, in ``seq`` order.

        >>> async for frame in root.watch(after=41): ...  # doctest: +SKIP
        """
        queue = self.subscribe()  # before reading the backlog, so nothing falls between the two
        try:
            last = after
            for frame in self.frames_since(after):
                yield frame
                last = frame.seq
            while True:
                frame = await queue.get()
                if frame.seq > last:
                    yield frame
                    last = frame.seq
        finally:
            self.unsubscribe(queue)
