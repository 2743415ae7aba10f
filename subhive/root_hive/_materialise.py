"""Writing accepted contracts' directories (and the lock) after their log records are durable.

They are derived state, so a proposal is acknowledged after one log fsync and its directory comes later,
whole or not at all. See docs/root-hive.md#durable-state.
"""

from __future__ import annotations

import base64
import logging
import os
import shutil
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from .._files import write_tree
from ._durable import Barrier
from ._lock import LOCK_FILE, LockEntry, contract_hash, render_lock, write_atomic
from ._lock_check import LockGuard

__all__ = ["Materialiser", "decode_files", "encode_files"]

log = logging.getLogger("subhive.root_hive")

Job = tuple[Path, Mapping[str, bytes]]


def encode_files(files: Mapping[str, bytes]) -> dict[str, str]:
    """``{path: base64}``: a contract's files as JSON a log record can hold.

    >>> decode_files(encode_files({"a.json": b"{}"}))
    {'a.json': b'{}'}
    """
    return {name: base64.b64encode(content).decode("ascii") for name, content in files.items()}


def decode_files(encoded: Mapping[str, str]) -> dict[str, bytes]:
    """The inverse of :func:`encode_files`."""
    return {name: base64.b64decode(text) for name, text in encoded.items()}


class Materialiser:
    """Writes contract directories and the lock handed to it, in order, whole or not at all.

    The lock comes as a snapshot of its entries and is rendered here, off the engine's thread; only the newest
    snapshot is written, so while the writer is busy the lock is rendered once however many batches pass.
    """

    def __init__(self, workspace_root: Path, *, guard: LockGuard | None = None) -> None:
        self.workspace_root = workspace_root
        #: Holds the lock back while it carries a hash edited by hand (the root never writes over one).
        self._guard = guard
        self._barrier = Barrier(workspace_root)
        self._jobs: list[Job] = []
        self._lock_entries: list[LockEntry] | None = None
        self._rendered: dict[int, tuple[LockEntry, str]] = {}
        self._cond = threading.Condition()
        self._busy = False
        self._bytes = 0  # of the directories queued or being written: what wait(limit) bounds
        self._closing = False
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Write on a background thread from now on (the service does, so acknowledgements do not wait)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="subhive-root-files", daemon=True)
            self._thread.start()

    def submit(self, jobs: Sequence[Job], lock: list[LockEntry] | None) -> None:
        """Queue directories (target, files) and the newest lock (its entries, in file order); without a
        thread, write them now."""
        with self._cond:
            self._jobs.extend(jobs)
            self._bytes += sum(len(content) for _, files in jobs for content in files.values())
            if lock is not None:
                self._lock_entries = lock  # only the newest lock matters: it is derived state
            self._cond.notify_all()
        if self._thread is None:
            self._drain()

    def wait(self, limit: int | None = None) -> None:
        """Return once everything submitted so far is written (or failed: the log still holds it), or with
        ``limit``, once at most ``limit`` bytes of directories are left to write (a bound on memory)."""
        if self._thread is None:
            return
        with self._cond:
            if limit is not None:
                while self._bytes > limit:
                    self._cond.wait()
                return
            while self._jobs or self._lock_entries is not None or self._busy:
                self._cond.wait()

    def close(self) -> None:
        """Write what is queued and stop the thread."""
        if self._thread is not None:
            with self._cond:
                self._closing = True
                self._cond.notify_all()
            self._thread.join()
            self._thread = None
        self._drain()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not (self._jobs or self._lock_entries is not None or self._closing):
                    self._cond.wait()
                if self._closing and not self._jobs and self._lock_entries is None:
                    return
            self._drain()

    def _drain(self) -> None:
        with self._cond:
            jobs, self._jobs = self._jobs, []
            lock, self._lock_entries = self._lock_entries, None
            self._busy = True
        try:
            if jobs:
                self.write(jobs)
            if lock is not None:
                text = render_lock(lock, self._rendered)
                if len(self._rendered) > 2 * len(lock):  # forget replaced entries now and then
                    live = {id(e) for e in lock}
                    self._rendered = {k: v for k, v in self._rendered.items() if k in live}
                if not self._held_back(lock):
                    write_atomic(self.workspace_root / LOCK_FILE, text.encode("utf-8"))
                    if self._guard is not None:
                        self._guard.wrote((e.name, e.version) for e in lock)
        except OSError:
            # Nothing is lost: the log holds the files and the lock's entries; the next open writes them again.
            log.exception("root hive: writing accepted contracts failed; they will be rewritten at the next open")
        finally:
            with self._cond:
                self._busy = False
                self._bytes -= sum(len(content) for _, files in jobs for content in files.values())
                self._cond.notify_all()

    def _held_back(self, lock: list[LockEntry]) -> bool:
        """Whether the lock on disk was edited by hand (a hash, an entry added or removed), which writing ``lock``
        would silently undo."""
        if self._guard is None:
            return False
        edited = self._guard.edited({(e.name, e.version): e.hash for e in lock})
        if edited:
            log.error("root hive: contracts.lock not rewritten: %s (%s)", edited[0].message, edited[0].hint)
            self._guard.held_back = True
        return bool(edited)

    def write(self, jobs: Sequence[Job]) -> None:
        """Write each (target, files) to a temporary sibling, make them durable, then rename them into place.

        A target that already exists is left alone: with the same bytes it is already done; with other bytes
        someone edited it, and tamper detection reports it rather than the root overwriting it.
        """
        placed: list[tuple[Path, Path]] = []
        for target, files in jobs:
            tmp = target.parent / f".{target.name}.{os.getpid()}.tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            write_tree(tmp, files)
            self._barrier.add_tree(tmp)
            placed.append((tmp, target))
        self._barrier.flush()  # the bytes before the names: a renamed directory is never torn
        for tmp, target in placed:
            if target.exists():
                if not (target.is_dir() and contract_hash(target) == contract_hash(tmp)):
                    log.warning("root hive: %s exists with other files; not overwritten", target)
                shutil.rmtree(tmp, ignore_errors=True)
                continue
            os.rename(tmp, target)
