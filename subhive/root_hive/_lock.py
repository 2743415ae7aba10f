"""The lock, ``contracts.lock``: every accepted contract version with its content hash, provider and consumers.

Sorted JSON, written atomically, so it diffs well and two roots that accepted the same versions write the
same bytes. Format and hash: docs/root-hive.md#the-lock-and-tamper-detection.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

from .._source import SourceDocument, parse_document
from ..errors import InputError, Location, Problem
from ..semver import Version

__all__ = [
    "LOCK_FILE",
    "LOCK_FORMAT",
    "Lock",
    "LockEntry",
    "contract_hash",
    "directory_files",
    "render_lock",
    "write_atomic",
]

LOCK_FILE = "contracts.lock"
LOCK_FORMAT = 1


def contract_hash(files: Mapping[str, bytes] | Path) -> str:
    """``"sha256:<hex>"`` of a contract's files (``{relative posix path: bytes}``) or of a directory.

    Files are hashed sorted by path, each as ``path NUL length NUL bytes``, so no two different directories hash
    alike by moving bytes between names and contents.

    >>> contract_hash({"contract.yaml": b"contract: x"}) == contract_hash({"contract.yaml": b"contract: x"})
    True
    """
    if isinstance(files, Path):
        files = directory_files(files)
    digest = hashlib.sha256()
    for name in sorted(files):
        content = files[name]
        digest.update(name.encode("utf-8") + b"\0" + str(len(content)).encode("ascii") + b"\0")
        digest.update(content)
    return "sha256:" + digest.hexdigest()


def directory_files(directory: Path) -> dict[str, bytes]:
    """Every file under ``directory`` by relative POSIX path. A symbolic link counts as its target's path,
    so replacing a file with a link to identical bytes still changes the hash."""
    out: dict[str, bytes] = {}
    for current, dirs, names in os.walk(directory):
        dirs.sort()
        base = Path(current)
        for name in (*names, *(d for d in dirs if (base / d).is_symlink())):
            path = base / name
            rel = path.relative_to(directory).as_posix()
            out[rel] = (b"symlink:" + os.readlink(path).encode()) if path.is_symlink() else path.read_bytes()
    return out


@dataclass(frozen=True, slots=True)
class LockEntry:
    """One accepted contract version: ``LockEntry("orders", Version.parse("1.1.0"), "sha256:...", "backend")``."""

    name: str
    version: Version
    hash: str
    provider: str
    #: hive -> the version range it declared, for the consumers this version currently serves.
    consumers: Mapping[str, str] = field(default_factory=dict)

    def directory(self, workspace_root: Path) -> Path:
        return workspace_root / "contracts" / self.name / str(self.version)

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "version": str(self.version),
            "hash": self.hash,
            "provider": self.provider,
            "consumers": dict(sorted(self.consumers.items())),
        }


class Lock:
    """The accepted versions, by ``(name, version)``. Load with :meth:`load`, write with :meth:`save`."""

    def __init__(self, entries: Mapping[tuple[str, Version], LockEntry] | None = None) -> None:
        self._entries: dict[tuple[str, Version], LockEntry] = dict(entries or {})
        self._rendered: dict[int, tuple[LockEntry, str]] = {}
        self._order: list[LockEntry] | None = None
        self._by_name: dict[str, dict[Version, LockEntry]] = {}
        for entry in self._entries.values():
            self._by_name.setdefault(entry.name, {})[entry.version] = entry

    @classmethod
    def load(cls, path: Path) -> Lock:
        """Read ``path`` (the lock file, or a workspace directory holding ``contracts.lock``).

        A missing file is an empty lock; a malformed one raises :class:`InputError` with file, line and pointer.
        """
        path = _lock_path(path)
        if not path.exists():
            return cls()
        document = _load_json(path)
        data = document.data

        def bad(pointer: str, message: str) -> InputError:
            return InputError(
                f"{path.name} is not a valid lock: {message}",
                code="lock.invalid",
                location=document.location(pointer),
                hint="restore it from version control; the root rewrites it on the next acceptance",
            )

        if not isinstance(data, dict) or data.get("format") != LOCK_FORMAT or not isinstance(data.get("entries"), list):
            raise bad("", f'expected {{"format": {LOCK_FORMAT}, "entries": [...]}}')
        entries: dict[tuple[str, Version], LockEntry] = {}
        for index, raw in enumerate(data["entries"]):
            entry = _entry(raw, partial(bad, f"/entries/{index}"))
            entries[(entry.name, entry.version)] = entry
        return cls(entries)

    def save(self, path: Path) -> None:
        """Write atomically (temp file + fsync + rename + directory fsync)."""
        write_atomic(_lock_path(path), self.dumps().encode("utf-8"))

    def dumps(self) -> str:
        """The file's text (see :func:`render_lock`)."""
        return render_lock(self, self._rendered)

    def entries(self) -> list[LockEntry]:
        """The entries in file order, as a list of their own: a snapshot another thread may render."""
        return list(self)

    def __iter__(self) -> Iterator[LockEntry]:
        if self._order is None:
            self._order = sorted(self._entries.values(), key=_order_key)
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._entries)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Lock) and self._entries == other._entries

    __hash__ = None  # type: ignore[assignment]  # mutable

    def get(self, name: str, version: Version) -> LockEntry | None:
        return self._entries.get((name, version))

    def put(self, entry: LockEntry) -> None:
        old = self._entries.get((entry.name, entry.version))
        if old is not None:
            self._rendered.pop(id(old), None)
        self._entries[(entry.name, entry.version)] = entry
        self._by_name.setdefault(entry.name, {})[entry.version] = entry
        if self._order is not None:  # kept sorted in place: the lock is rendered after every batch
            if old is not None:  # found by its key: list.remove would compare whole entries one by one
                del self._order[bisect.bisect_left(self._order, _order_key(old), key=_order_key)]
            bisect.insort(self._order, entry, key=_order_key)

    def versions(self, name: str) -> list[LockEntry]:
        """The accepted versions of ``name``, oldest first."""
        return sorted(self._by_name.get(name, {}).values(), key=lambda e: e.version)

    def names(self) -> list[str]:
        return sorted(self._by_name)

    def verify(self, workspace_root: Path) -> list[Problem]:
        """A ``lock.tampered`` (or ``lock.missing``) problem per entry whose directory no longer matches its hash.

        >>> Lock.load(Path(".")).verify(Path("."))  # doctest: +SKIP
        []
        """
        problems: list[Problem] = []
        for entry in self:
            directory = entry.directory(workspace_root)
            where = Location(file=str(directory))
            if not directory.is_dir():
                problems.append(
                    Problem(
                        "lock.missing",
                        f"{entry.name} {entry.version} is in the lock but its directory is gone",
                        where,
                        "restore the directory from version control; accepted versions are immutable",
                    )
                )
                continue
            actual = contract_hash(directory)
            if actual != entry.hash:
                problems.append(
                    Problem(
                        "lock.tampered",
                        f"{entry.name} {entry.version} was changed after it was "
                        f"accepted: its files hash to {actual}, the lock says {entry.hash}",
                        where,
                        "restore the accepted files from version control and propose a new "
                        "version instead; accepted versions are immutable",
                    )
                )
        return problems


def _order_key(entry: LockEntry) -> tuple[str, Version]:
    return entry.name, entry.version


def render_lock(entries: Iterable[LockEntry], cache: dict[int, tuple[LockEntry, str]]) -> str:
    """The lock file's text for ``entries`` (in file order): sorted keys, one line per entry, so a review
    diff shows one line per version.

    The lock is rewritten after every batch of acceptances; ``cache`` keeps each entry's line so only new
    entries are rendered. It is keyed by identity (entries are immutable and replaced, never changed),
    which is cheaper than hashing versions; the entry is kept beside its line so a reused id never matches.
    """
    lines = []
    for entry in entries:
        cached = cache.get(id(entry))
        if cached is None or cached[0] is not entry:
            cached = (entry, json.dumps(entry.to_dict(), sort_keys=True, ensure_ascii=False))
            cache[id(entry)] = cached
        lines.append("    " + cached[1])
    body = "[\n" + ",\n".join(lines) + "\n  ]" if lines else "[]"
    return f'{{\n  "entries": {body},\n  "format": {LOCK_FORMAT}\n}}\n'


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so a crash leaves either the old or the new content."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    fsync_directory(path.parent)


def fsync_directory(directory: Path) -> None:
    """Make a rename or a new entry in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _lock_path(path: Path) -> Path:
    return path / LOCK_FILE if path.is_dir() else path


def _load_json(path: Path) -> SourceDocument:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(
            f"cannot read {path}: {exc.strerror}", code="lock.unreadable", location=Location(file=str(path))
        ) from exc
    # parse_document picks its parser by suffix; the lock is JSON whatever its name says.
    try:
        document = parse_document(raw, path.with_name(path.name + ".json"))
    except InputError as exc:  # located in the lock itself, not in the name given to the parser
        raise InputError(
            exc.message,
            code=exc.code,
            location=replace(exc.location, file=str(path)),
            hint=exc.hint or "restore it from version control",
        ) from None
    document.path = path
    return document


def _entry(raw: object, fail: Callable[[str], InputError]) -> LockEntry:
    if not isinstance(raw, dict):
        raise fail("an entry must be an object")
    for key in ("name", "version", "hash", "provider"):
        if not isinstance(raw.get(key), str):
            raise fail(f"entry needs a string {key!r}")
    consumers = raw.get("consumers", {})
    if not isinstance(consumers, dict) or not all(isinstance(v, str) for v in consumers.values()):
        raise fail("consumers must map hive names to version ranges")
    try:
        version = Version.parse(raw["version"])
    except ValueError as exc:
        raise fail(str(exc)) from None
    if not raw["hash"].startswith("sha256:"):
        raise fail("hash must look like sha256:<hex>")
    return LockEntry(raw["name"], version, raw["hash"], raw["provider"], dict(consumers))
