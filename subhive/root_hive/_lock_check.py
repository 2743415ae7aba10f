"""Is ``contracts.lock`` honest? Its hashes against the accepted directories and against what the root accepted.

    >>> [p.code for p in check_lock(Path("shop"))]          # doctest: +SKIP
    ['lock.hash_edited']

Read-only: a disagreement is reported with the fix, never repaired by rewriting a hash
(docs/decisions/0030-lock-disagreements-are-reported.md).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Collection, Mapping
from pathlib import Path

from ..errors import InputError, Location, Problem
from ..semver import Version
from ._errors import Conflict
from ._lock import LOCK_FILE, Lock, _load_json, contract_hash

__all__ = ["LockGuard", "LockInconsistent", "check_lock"]

Key = tuple[str, Version]


class LockInconsistent(Conflict):
    """``contracts.lock`` disagrees with the accepted contracts; each problem says where and how to fix it."""

    default_code = "lock.inconsistent"
    exit_code = 2

    def __init__(self, problems: Collection[Problem]) -> None:
        first = next(iter(problems))
        count = len(problems)
        super().__init__(f"contracts.lock disagrees with the accepted contracts ({count} problem"
                         f"{'s' if count != 1 else ''})", location=first.location,
                         hint="fix what each problem says; until then the root accepts no proposal, and it never "
                              "rewrites a hash that disagrees", problems=problems)


def short(digest: str) -> str:
    """``sha256:`` and the first 12 hex digits: enough to tell two hashes apart in a message."""
    return digest[:19] + "…" if len(digest) > 19 else digest


def check_lock(workspace_root: Path, *, accepted: Mapping[Key, str] | None = None,
               names: Collection[str] | None = None) -> list[Problem]:
    """Every entry of ``contracts.lock`` whose hash disagrees with its directory's files, or with ``accepted``.

    ``accepted`` is the hash the root accepted per (contract, version) (``RootHive.lock``, or
    ``RootClient.contracts()``); with it a hand-edited hash (``lock.hash_edited``) is told apart from files
    edited in place (``lock.tampered``). ``names`` limits the check to those contracts. A gone directory is
    ``lock.missing``; an unreadable lock, ``lock.invalid``. An empty list means the lock is consistent.
    """
    path = workspace_root / LOCK_FILE
    if not path.exists():
        return []
    try:
        lock = Lock.load(path)
        document = _load_json(path)
    except InputError as exc:
        return list(exc.problems)
    rows = document.data["entries"] if isinstance(document.data, dict) else []
    index = {(str(raw.get("name")), str(raw.get("version"))): i for i, raw in enumerate(rows) if isinstance(raw, dict)}
    problems: list[Problem] = []
    for entry in lock:
        if names is not None and entry.name not in names:
            continue
        what = f"{entry.name}@{entry.version}"
        directory = entry.directory(workspace_root)
        rel = directory.relative_to(workspace_root).as_posix()
        in_lock = document.location(f"/entries/{index.get((entry.name, str(entry.version)), 0)}/hash")
        if not directory.is_dir():
            problems.append(Problem("lock.missing", f"{what} is in contracts.lock but {rel} is gone",
                                    Location(file=str(directory)),
                                    f"restore {rel} from version control (git checkout -- {rel}); accepted "
                                    "versions are immutable"))
            continue
        files = contract_hash(directory)
        root = None if accepted is None else accepted.get((entry.name, entry.version))
        problem = _disagreement(what, rel, locked=entry.hash, files=files, root=root, in_lock=in_lock,
                                in_dir=Location(file=str(directory)))
        if problem is not None:
            problems.append(problem)
    return problems


def _disagreement(what: str, rel: str, *, locked: str, files: str, root: str | None, in_lock: Location,
                  in_dir: Location) -> Problem | None:
    """The problem, if any, for one version: ``locked`` (the file says), ``files`` (the directory hashes to),
    ``root`` (the root accepted; None when unknown)."""
    if locked == files and root in (None, locked):
        return None
    keep = "accepted versions are immutable: to change a contract, propose a new version"
    if locked != files and root == files:
        return Problem("lock.hash_edited", f"contracts.lock was edited: it says {what} hashes to {short(locked)}, "
                       f"but its files and the root both say {short(files)}", in_lock,
                       f"restore contracts.lock from version control (git checkout -- {LOCK_FILE}), or put back "
                       f"the hash {files}")
    if locked == files:  # both changed alike: only the root's record remembers what was accepted
        return Problem("lock.tampered", f"{what} and its hash in contracts.lock were both changed after it was "
                       f"accepted: they say {short(locked)}, the root accepted {short(root or '')}", in_dir,
                       f"restore {rel} and {LOCK_FILE} from version control (git checkout -- {rel} {LOCK_FILE}); "
                       f"{keep}")
    either = "" if root == locked else f" (or, if it was contracts.lock that was edited, restore that: {LOCK_FILE})"
    return Problem("lock.tampered", f"{what} was changed after it was accepted: contracts.lock expects "
                   f"{short(locked)}, its files hash to {short(files)}", in_dir,
                   f"restore {rel} from version control (git checkout -- {rel}){either}; {keep}")


class LockGuard:
    """Whether ``contracts.lock`` on disk holds a hash other than the one the root accepted for that version.

    The root asks before each proposal and before each rewrite of the lock; the file is parsed again only
    when its stat changed since the last answer (or since the root's own write, :meth:`wrote`), so asking
    costs a ``stat`` while nobody edits the lock. Safe to use from the engine's and the writer's threads.
    """

    def __init__(self, workspace_root: Path) -> None:
        self.path = workspace_root / LOCK_FILE
        self._mutex = threading.Lock()
        self._stamp: tuple[int, int, int] | None = None
        self._edited: list[Problem] = []
        #: Set when a rewrite of the lock was held back: once the file is fixed, the root writes it again.
        self.held_back = False

    def wrote(self) -> None:
        """The root just wrote the lock from its own state: that file agrees with it."""
        with self._mutex:
            self._stamp, self._edited = _stamp(self.path), []

    def edited(self, accepted: Callable[[str, Version], str | None]) -> list[Problem]:
        """``lock.hash_edited`` per entry whose hash differs from ``accepted(name, version)`` (None: unknown).

        A version the file lacks (not written yet) or the root does not know is no disagreement.
        """
        stamp = _stamp(self.path)
        with self._mutex:
            if stamp is not None and stamp == self._stamp:
                return list(self._edited)
        edited: list[Problem] = []
        if stamp is not None:
            try:
                lock = Lock.load(self.path)
            except InputError as exc:
                edited = list(exc.problems)
            else:
                for entry in lock:
                    root = accepted(entry.name, entry.version)
                    if root is not None and root != entry.hash:
                        edited.append(Problem(
                            "lock.hash_edited", f"contracts.lock was edited: it says {entry.name}@{entry.version} "
                            f"hashes to {short(entry.hash)}, the root accepted {short(root)}",
                            Location(file=str(self.path)),
                            f"restore contracts.lock from version control (git checkout -- {LOCK_FILE}), or put "
                            f"back the hash {root}"))
        with self._mutex:
            self._stamp, self._edited = stamp, edited
        return list(edited)


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size, info.st_ino
