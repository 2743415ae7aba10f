"""Opening and closing the root engine: one writer per workspace, the log replayed, a crash's leftovers.

Every change after :meth:`Lifecycle.open` goes through ``RootState._commit`` (docs/root-hive.md, durability).
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
from pathlib import Path
from typing import Self

from ..errors import Location
from ..semver import Version
from ..workspace import Workspace, open_workspace
from ._auth import token_sha
from ._errors import Conflict
from ._lock import Lock
from ._log import EventLog
from ._state import RootState

__all__ = ["Lifecycle"]

#: Held with flock(2) by the one engine that writes the state; it names that engine's pid.
WRITER_LOCK = "engine.lock"


class Lifecycle(RootState):
    """Open, replay, release."""

    @classmethod
    def open(cls, workspace_root: Path | str) -> Self:
        """Open the root of the workspace at ``workspace_root``, replaying its event log.

        >>> root = RootHive.open(Path("shop"))  # doctest: +SKIP

        Raises :class:`InputError` if it is not a workspace (``workspace.not_found``), or if the log or the
        lock is damaged (``log.corrupt``, ``lock.invalid``). A torn last record (a crash mid-append) is
        dropped and counted in :attr:`recovered_records`.

        Only one engine may hold a workspace: the open engine keeps an exclusive ``flock`` on
        ``.subhive/root/engine.lock`` (which names its pid) until :meth:`close` or its process ends; a second
        one raises :class:`Conflict` (``root.locked``) naming that pid. Every valid sub-hive manifest not
        registered yet is registered (with its kind and parent), its token written to
        ``.subhive/tokens/<hive>.token`` (mode 0600).
        """
        workspace = open_workspace(workspace_root)
        root = cls(workspace.root)
        root.state_dir.mkdir(parents=True, exist_ok=True)
        root._take_writer_lock()
        try:
            root._load(workspace)
        except BaseException:
            root.close()
            raise
        return root

    def _load(self, workspace: Workspace) -> None:
        self._admin_sha = token_sha(self._admin_token_file())
        base = Lock.load(workspace.root)
        self._lock = Lock({(e.name, e.version): e for e in base})
        self._log = EventLog.open(self.state_dir / "events.log")
        for frame in self._log.frames:
            self._apply(frame, replaying=True)
        self._restore_logged_directories()
        self._tampered = {
            (Path(p.location.file or "").parent.name, Version.parse(Path(p.location.file or "").name)): p
            for p in self._lock.verify(workspace.root)
        }
        for name in self._lock.names():
            self._refresh_consumers(name)
        # A hash in the file that the log contradicts was edited by hand: leave the file as it is (status and
        # propose report it) rather than quietly rewriting it; otherwise the file is derived state.
        edited = any((e := self._lock.get(b.name, b.version)) is not None and e.hash != b.hash for b in base)
        if self._lock != base and not edited:
            self._lock.save(workspace.root)
            self._lock_guard.wrote((e.name, e.version) for e in self._lock)
        self._clean_leftovers()
        self._manifests_seen = self._manifests_digest()
        self._register_workspace_hives(workspace)

    def _take_writer_lock(self) -> None:
        """One engine per workspace: a second one would interleave its records with ours and corrupt the log."""
        path = self.state_dir / WRITER_LOCK
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            raise Conflict(
                f"another root engine (pid {holder}) already holds this workspace's state",
                code="root.locked",
                location=Location(file=str(path)),
                hint="talk to the running root (subhive root prints its address) or stop it first; "
                "the lock is released when that process exits, even if it is killed",
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        self._writer_fd = fd

    @property
    def recovered_records(self) -> int:
        """Torn records dropped from the end of the log when it was opened (a crash mid-append)."""
        return self._log_.dropped

    @property
    def last_seq(self) -> int:
        """The newest frame's ``seq`` (0 for an empty log): a watcher starting now resumes from it."""
        return self._log_.last_seq

    def write_files_in_background(self) -> None:
        """Write accepted directories and the lock on a thread of their own, after acknowledgements.

        The service calls this: a call is then answered after its log fsync alone, and its directory appears
        while the next batch runs (each batch's flush first waits for the previous batch's files).
        Without it, they are written at the end of each batch, before it returns.
        """
        self._materialiser.start()

    def settle(self) -> None:
        """Wait until every accepted directory and the lock are written (the log already holds them)."""
        self._materialiser.wait()

    def close(self) -> None:
        """Close the log and release the workspace. Everything acknowledged is already on disk."""
        self._materialiser.close()
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._writer_fd is not None:
            os.close(self._writer_fd)  # releases the flock
            self._writer_fd = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _clean_leftovers(self) -> None:
        """Staging trees of unfinished proposals and files of decided approvals are garbage after a restart."""
        shutil.rmtree(self.state_dir / "staging", ignore_errors=True)
        for leftover in self.workspace_root.glob("contracts/*/.*.tmp"):  # a write cut short by a crash
            shutil.rmtree(leftover, ignore_errors=True)
        pending = self.state_dir / "pending"
        if pending.is_dir():
            for child in pending.iterdir():
                approval = self._approvals.get(child.name)
                if approval is None or approval.status != "pending":
                    shutil.rmtree(child, ignore_errors=True)
