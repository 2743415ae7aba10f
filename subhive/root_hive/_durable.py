"""Making files durable in bulk: what a group commit flushes before the log records that refer to them.

One barrier per batch instead of an fsync per file: ``syncfs(2)`` on Linux, a portable fsync walk elsewhere.
See docs/root-hive.md#durable-state.
"""

from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path

from ._lock import fsync_directory

__all__ = ["Barrier", "has_syncfs"]


def _load_syncfs() -> ctypes._CFuncPtr | None:  # type: ignore[name-defined]
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        function = libc.syncfs
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int]
    function.restype = ctypes.c_int
    return function


_SYNCFS = _load_syncfs()


def has_syncfs() -> bool:
    """Whether barriers use one ``syncfs`` call (Linux) rather than an fsync per file."""
    return _SYNCFS is not None


class Barrier:
    """Files and directories written since the last flush, made durable together by :meth:`flush`."""

    def __init__(self, anchor: Path, *, use_syncfs: bool | None = None) -> None:
        #: Any directory on the filesystem to sync (the workspace root).
        self.anchor = anchor
        self.use_syncfs = has_syncfs() if use_syncfs is None else use_syncfs and has_syncfs()
        self._trees: list[Path] = []
        self._dirs: set[Path] = set()

    def add_tree(self, directory: Path) -> None:
        """Every file and directory under ``directory`` (and itself) must be durable after the flush."""
        self._trees.append(directory)

    def add_dir(self, directory: Path) -> None:
        """``directory``'s entries (a rename into it, a new child) must be durable after the flush."""
        self._dirs.add(directory)

    @property
    def empty(self) -> bool:
        return not self._trees and not self._dirs

    def flush(self) -> None:
        """Make everything registered durable; raises OSError if the system reports a write failure.

        One ``syncfs(2)`` makes every file and rename on the filesystem durable (data, directory entries, the
        journal, with a cache flush); since Linux 5.8 it reports write-back errors. Without it, each file under the
        registered trees and each registered directory is fsynced, the portable way.
        """
        if self.empty:
            return
        trees, dirs = self._trees, self._dirs
        self._trees, self._dirs = [], set()
        if self.use_syncfs and _SYNCFS is not None:
            fd = os.open(self.anchor, os.O_RDONLY)
            try:
                if _SYNCFS(fd) != 0:
                    errno = ctypes.get_errno()
                    raise OSError(errno, f"syncfs failed: {os.strerror(errno)}", str(self.anchor))
            finally:
                os.close(fd)
            return
        for tree in trees:
            for current, _, names in os.walk(tree):
                for name in names:
                    fd = os.open(os.path.join(current, name), os.O_RDONLY)
                    try:
                        os.fsync(fd)
                    finally:
                        os.close(fd)
                dirs.add(Path(current))
        for directory in sorted(dirs, key=lambda p: len(p.parts), reverse=True):
            fsync_directory(directory)
