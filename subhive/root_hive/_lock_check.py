"""Is ``contracts.lock`` honest? Its hashes against the accepted directories and against what the root accepted.

Read-only: a disagreement is reported with the fix, never repaired by rewriting a hash
(docs/decisions/0030-lock-disagreements-are-reported.md, docs/root-hive.md#the-lock-and-tamper-detection).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Collection, Iterable, Mapping
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
        super().__init__(
            f"contracts.lock disagrees with the accepted contracts ({count} problem{'s' if count != 1 else ''})",
            location=first.location,
            hint="fix what each problem says; until then the root accepts no proposal, and it never "
            "rewrites a hash that disagrees",
            problems=problems,
        )


def short(digest: str) -> str:
    """``sha256:`` and the first 12 hex digits: enough to tell two hashes apart in a message."""
    return digest[:19] + "…" if len(digest) > 19 else digest


def check_lock(
    workspace_root: Path, *, accepted: Mapping[Key, str] | None = None, names: Collection[str] | None = None
) -> list[Problem]:
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
            problems.append(
                Problem(
                    "lock.missing",
                    f"{what} is in contracts.lock but {rel} is gone",
                    Location(file=str(directory)),
                    f"restore {rel} from version control (git checkout -- {rel}); accepted versions are immutable",
                )
            )
            continue
        files = contract_hash(directory)
        root = None if accepted is None else accepted.get((entry.name, entry.version))
        problem = _disagreement(
            what, rel, locked=entry.hash, files=files, root=root, in_lock=in_lock, in_dir=Location(file=str(directory))
        )
        if problem is not None:
            problems.append(problem)
    return problems


def _disagreement(
    what: str, rel: str, *, locked: str, files: str, root: str | None, in_lock: Location, in_dir: Location
) -> Problem | None:
    """The problem, if any, for one version: ``locked`` (the file says), ``files`` (the directory hashes to),
    ``root`` (the root accepted; None when unknown)."""
    if locked == files and root in (None, locked):
        return None
    keep = "accepted versions are immutable: to change a contract, propose a new version"
    if locked != files and root == files:
        return Problem(
            "lock.hash_edited",
            f"contracts.lock was edited: it says {what} hashes to {short(locked)}, "
            f"but its files and the root both say {short(files)}",
            in_lock,
            f"restore contracts.lock from version control (git checkout -- {LOCK_FILE}), or put back the hash {files}",
        )
    if locked == files:  # both changed alike: only the root's record remembers what was accepted
        return Problem(
            "lock.tampered",
            f"{what} and its hash in contracts.lock were both changed after it was "
            f"accepted: they say {short(locked)}, the root accepted {short(root or '')}",
            in_dir,
            f"restore {rel} and {LOCK_FILE} from version control (git checkout -- {rel} {LOCK_FILE}); {keep}",
        )
    either = "" if root == locked else f" (or, if it was contracts.lock that was edited, restore that: {LOCK_FILE})"
    return Problem(
        "lock.tampered",
        f"{what} was changed after it was accepted: contracts.lock expects "
        f"{short(locked)}, its files hash to {short(files)}",
        in_dir,
        f"restore {rel} from version control (git checkout -- {rel}){either}; {keep}",
    )


class LockGuard:
    """Whether ``contracts.lock`` on disk disagrees with what the root accepted: a hash edited, an entry added
    or one removed by hand.

    The root asks before each proposal and before each rewrite of the lock; the file is parsed again only
    when its stat changed since the last answer (or since the root's own write, :meth:`wrote`), so asking
    costs a ``stat`` while nobody edits the lock. Safe to use from the engine's and the writer's threads.
    """

    def __init__(self, workspace_root: Path) -> None:
        self.path = workspace_root / LOCK_FILE
        self._mutex = threading.Lock()
        self._stamp: tuple[int, int, int] | None = None
        self._edited: list[Problem] = []
        #: The entries the file held when the root last wrote it (before that: when the root opened it). An
        #: accepted version missing from the file was removed by hand only if the file had it: one accepted
        #: moments ago is simply not written yet.
        self._written: frozenset[Key] = _keys(self.path)
        #: Set when a rewrite of the lock was held back: once the file is fixed, the root writes it again.
        self.held_back = False

    def wrote(self, keys: Iterable[Key]) -> None:
        """The root just wrote the lock from its own state, with these entries: that file agrees with it."""
        with self._mutex:
            self._stamp, self._edited, self._written = _stamp(self.path), [], frozenset(keys)

    def edited(self, accepted: Mapping[Key, str]) -> list[Problem]:
        """How the file disagrees with ``accepted`` (the hash the root accepted per contract and version):
        ``lock.hash_edited`` per entry with another hash, ``lock.entry_added`` per entry the root never
        accepted, ``lock.entry_removed`` per accepted entry the file had when the root last wrote it and
        lacks now. A version the file lacks because it is not written yet is no disagreement.
        """
        stamp = _stamp(self.path)
        with self._mutex:
            if stamp is not None and stamp == self._stamp:
                return list(self._edited)
            written = self._written
        edited: list[Problem] = []
        if stamp is not None:
            try:
                lock = Lock.load(self.path)
            except InputError as exc:
                edited = list(exc.problems)
            else:
                edited = self._disagreements(lock, accepted, written)
        with self._mutex:
            self._stamp, self._edited = stamp, edited
        return list(edited)

    def _disagreements(self, lock: Lock, accepted: Mapping[Key, str], written: frozenset[Key]) -> list[Problem]:
        where = Location(file=str(self.path))
        restore = f"restore contracts.lock from version control (git checkout -- {LOCK_FILE})"
        found: list[Problem] = []
        in_file: set[Key] = set()
        for entry in lock:
            key = (entry.name, entry.version)
            in_file.add(key)
            root = accepted.get(key)
            what = f"{entry.name}@{entry.version}"
            if root is None:
                found.append(
                    Problem(
                        "lock.entry_added",
                        f"contracts.lock was edited: it lists {what}, which the root never accepted",
                        where,
                        f"{restore}, or remove that entry; a new version is added by proposing it "
                        "(subhive contract propose)",
                    )
                )
            elif root != entry.hash:
                found.append(
                    Problem(
                        "lock.hash_edited",
                        f"contracts.lock was edited: it says {what} hashes to "
                        f"{short(entry.hash)}, the root accepted {short(root)}",
                        where,
                        f"{restore}, or put back the hash {root}",
                    )
                )
        for name, version in sorted(written - in_file):
            if (name, version) in accepted:
                found.append(
                    Problem(
                        "lock.entry_removed",
                        f"contracts.lock was edited: {name}@{version}, which the root accepted, is no longer in it",
                        where,
                        f"{restore}; an accepted version stays in the lock (one no consumer needs "
                        "is retired, not removed)",
                    )
                )
        return found


def _keys(path: Path) -> frozenset[Key]:
    """The (contract, version) of each entry of the lock at ``path``; none when it is missing or unreadable."""
    try:
        return frozenset((e.name, e.version) for e in Lock.load(path)) if path.exists() else frozenset()
    except InputError:
        return frozenset()


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size, info.st_ino
