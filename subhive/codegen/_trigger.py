"""Codegen when the root accepts a contract: the hives that provide or consume it get fresh stubs
(:class:`CodegenTrigger`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..root_hive import Frame

__all__ = ["CodegenTrigger", "affected_hives"]

log = logging.getLogger("subhive.codegen")


def affected_hives(workspace_root: Path, contracts: set[str]) -> list[str]:
    """The workspace's hives that provide or consume any of ``contracts``."""
    from ..workspace import open_workspace

    hives = open_workspace(workspace_root).hives().hives
    return sorted(
        name for name, m in hives.items() if contracts & set(m.provides) or contracts & {r.contract for r in m.consumes}
    )


class CodegenTrigger:
    """A root listener: ``root.add_listener(trigger)``; ``background`` runs codegen on a thread.

    It picks ``contract_ready`` frames out of every committed frame and regenerates the stubs of the hives
    concerned: on a thread of its own in the service (acceptances never wait for codegen; bursts coalesce into
    one run), or at :meth:`flush` when the CLI ran the engine in-process. A failure is logged and left for
    ``subhive codegen`` to report: the acceptance itself stands.

    ``settle`` (the root's :meth:`~subhive.root_hive.RootHive.settle`) is called before each run: a served
    root writes accepted directories and the lock after acknowledging them, and codegen reads both from disk.
    """

    def __init__(
        self, workspace_root: Path, *, background: bool = True, settle: Callable[[], None] | None = None
    ) -> None:
        self.workspace_root = workspace_root
        self._settle = settle
        self.runs = 0  # completed codegen runs, for tests and figures
        self._pending: set[str] = set()
        self._cond = threading.Condition()
        self._closing = False
        self._busy = False
        self._thread: threading.Thread | None = None
        if background:
            self._thread = threading.Thread(target=self._loop, name="subhive-codegen", daemon=True)
            self._thread.start()

    def __call__(self, frame: Frame) -> None:
        if frame.kind != "contract_ready":
            return
        with self._cond:
            self._pending.add(str(frame.data.get("contract")))
            self._cond.notify_all()

    def flush(self) -> None:
        """Run codegen for what is pending now (in-process), or wait until the thread has."""
        if self._thread is None:
            self._run_once()
            return
        with self._cond:
            while self._pending or self._busy:
                self._cond.wait()

    def close(self) -> None:
        if self._thread is not None:
            with self._cond:
                self._closing = True
                self._cond.notify_all()
            self._thread.join()
            self._thread = None

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not (self._pending or self._closing):
                    self._cond.wait()
                if self._closing and not self._pending:
                    return
            self._run_once()

    def _run_once(self) -> None:
        with self._cond:
            contracts, self._pending = self._pending, set()
            self._busy = True
        try:
            if contracts:
                self._generate(contracts)
        finally:
            with self._cond:
                self._busy = False
                self.runs += 1
                self._cond.notify_all()

    def _generate(self, contracts: set[str]) -> None:
        from ..errors import SubhiveError
        from ..workspace import open_workspace
        from ._generate import generate_stubs

        try:
            if self._settle is not None:
                self._settle()
            hives = affected_hives(self.workspace_root, contracts)
            if not hives:
                return
            result = generate_stubs(open_workspace(self.workspace_root), hives=hives)
        except (SubhiveError, OSError) as exc:
            log.warning("codegen after accepting %s failed: %s", ", ".join(sorted(contracts)), exc)
            return
        except Exception:  # a bug in codegen must not take the root's listener thread down with it
            log.exception("codegen after accepting %s failed", ", ".join(sorted(contracts)))
            return
        for problem in result.problems:
            log.warning("codegen after accepting %s: %s", ", ".join(sorted(contracts)), problem)
        if result.written or result.removed:
            log.info(
                "codegen after accepting %s: %d file(s) written, %d removed",
                ", ".join(sorted(contracts)),
                len(result.written),
                len(result.removed),
            )
