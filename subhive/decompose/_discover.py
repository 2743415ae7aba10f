"""Finding the files of a repository (git's tracked files, else a walk honouring ignore files) and reading them
safely. One bad file never raises: it is skipped and counted under a reason (:data:`SKIP_REASONS`), so a plan
always says how much of the tree it did not cover. Rules: docs/decompose.md#which-files.
"""

from __future__ import annotations

import codecs
import os
import stat
import subprocess
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

__all__ = ["ENORMOUS", "SKIP_REASONS", "Listing", "ReadResult", "discover", "read_file"]

#: Why a file or directory was left out, with what each reason means (docs/decompose.md).
SKIP_REASONS = {
    "symlink": "a symbolic link to something inside the tree (the target is read on its own)",
    "symlink_outside": "a symbolic link leading outside the tree (never followed)",
    "special": "not a regular file (a socket, a device, a git submodule)",
    "unreadable": "a file that cannot be opened or read (permissions, vanished meanwhile)",
    "unreadable_dir": "a directory that cannot be listed (permissions)",
    "binary": "a NUL byte in its first 8 KiB",
    "invalid_encoding": "not valid UTF-8",
    "too_large": "larger than the byte budget of one hive, or than 16 MiB",
}
#: Files above this are never read, whatever the byte budget.
ENORMOUS = 16 * 1024 * 1024
#: How much of a file is read to tell text from binary when its content is not otherwise needed.
_SNIFF = 8192
_NEVER_ENTER = frozenset({".git", ".hg", ".svn", "__pycache__", "node_modules", ".subhive"})
_IGNORE_FILES = (".gitignore", ".ignore")


@dataclass(slots=True)
class Listing:
    """The candidate files of a tree (sorted, relative, '/'-separated) and what was skipped while listing."""

    root: Path
    source: str  # "git" or "walk"
    paths: list[str]
    skipped: Counter[str] = field(default_factory=Counter)


def discover(root: Path, exclude: Sequence[str] = ()) -> Listing:
    """List the files of ``root`` (an existing directory): tracked files in a git checkout, else a walk.

    ``exclude`` holds more gitignore-style patterns, relative to ``root`` (``site-packages/``, ``*.min.js``).

    >>> listing = discover(Path("shop"))  # doctest: +SKIP
    >>> listing.source, listing.paths[:2], dict(listing.skipped)  # doctest: +SKIP
    ('git', ['api/app.py', 'api/models.py'], {'symlink': 1})
    """
    extra = (("", pathspec.GitIgnoreSpec.from_lines(exclude)),) if exclude else ()
    tracked = _git_files(root)
    if tracked:
        skipped: Counter[str] = Counter()
        paths = [p for p in tracked if not (extra and _excluded(extra, p)) and _tracked_ok(root, p, skipped)]
        return Listing(root, "git", sorted(paths), skipped)
    listing = Listing(root, "walk", [])
    _walk(root, listing, extra)
    listing.paths.sort()
    return listing


def _excluded(specs: tuple[tuple[str, pathspec.GitIgnoreSpec], ...], path: str) -> bool:
    """Whether ``path`` or one of its directories is excluded."""
    parts = path.split("/")
    return any(_ignored(specs, "/".join(parts[:i]), is_dir=True) for i in range(1, len(parts))) or _ignored(
        specs, path, is_dir=False
    )


def _git_files(root: Path) -> list[str]:
    try:
        done = subprocess.run(
            ["git", "-c", "core.quotepath=off", "ls-files", "-z", "--cached"],
            cwd=root,
            capture_output=True,
            timeout=300,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    if done.returncode != 0:
        return []
    out: list[str] = []
    for raw in done.stdout.split(b"\0"):
        if raw:
            out.append(os.fsdecode(raw))
    return sorted(set(out))  # a conflicted file is listed once per stage


def _tracked_ok(root: Path, relative: str, skipped: Counter[str]) -> bool:
    path = root / relative
    try:
        info = os.lstat(path)
    except OSError:
        skipped["unreadable"] += 1
        return False
    if stat.S_ISLNK(info.st_mode):
        skipped[_link_reason(root, path)] += 1
        return False
    if not stat.S_ISREG(info.st_mode):
        skipped["special"] += 1
        return False
    return True


def _link_reason(root: Path, link: Path) -> str:
    target = os.path.realpath(link)
    inside = target == str(root) or target.startswith(str(root) + os.sep)
    return "symlink" if inside else "symlink_outside"


def _walk(root: Path, listing: Listing, extra: tuple[tuple[str, pathspec.GitIgnoreSpec], ...]) -> None:
    # (directory relative to root, the ignore specs in force there with the directory each is relative to)
    stack: list[tuple[str, tuple[tuple[str, pathspec.GitIgnoreSpec], ...]]] = [("", extra)]
    real_root = Path(os.path.realpath(root))
    while stack:
        relative, specs = stack.pop()
        directory = root / relative if relative else root
        try:
            with os.scandir(directory) as scan:
                entries = sorted(scan, key=lambda e: e.name)
        except OSError:
            listing.skipped["unreadable_dir"] += 1
            continue
        specs = specs + _ignore_specs(directory, relative, entries)
        for entry in reversed(entries):
            path = f"{relative}/{entry.name}" if relative else entry.name
            try:
                is_link = entry.is_symlink()
                is_dir = not is_link and entry.is_dir(follow_symlinks=False)
                is_file = not is_link and entry.is_file(follow_symlinks=False)
            except OSError:
                listing.skipped["unreadable"] += 1
                continue
            if is_dir and entry.name in _NEVER_ENTER:
                continue
            if _ignored(specs, path, is_dir=is_dir):
                continue
            if is_link:
                listing.skipped[_link_reason(real_root, Path(entry.path))] += 1
            elif is_dir:
                stack.append((path, specs))
            elif is_file:
                listing.paths.append(path)
            else:
                listing.skipped["special"] += 1


def _ignore_specs(
    directory: Path, relative: str, entries: list[os.DirEntry[str]]
) -> tuple[tuple[str, pathspec.GitIgnoreSpec], ...]:
    found: list[tuple[str, pathspec.GitIgnoreSpec]] = []
    names = {e.name for e in entries}
    for name in _IGNORE_FILES:
        if name not in names:
            continue
        try:
            with open(directory / name, encoding="utf-8", errors="replace") as handle:
                lines = handle.read(1 << 20).splitlines()
        except OSError:
            continue
        found.append((relative, pathspec.GitIgnoreSpec.from_lines(lines)))
    return tuple(found)


def _ignored(specs: tuple[tuple[str, pathspec.GitIgnoreSpec], ...], path: str, *, is_dir: bool) -> bool:
    verdict = False
    for base, spec in specs:  # outermost first: a deeper ignore file overrides, as in git
        below = path[len(base) + 1 :] if base else path
        result = spec.check_file(below + "/" if is_dir else below)
        if result.include is not None:
            verdict = result.include
    return verdict


@dataclass(frozen=True, slots=True)
class ReadResult:
    """A file's size and, when it was asked for and is readable text, its text; else why it was skipped."""

    size: int
    text: str | None = None
    skipped: str | None = None


def read_file(path: Path, *, limit: int, want_text: bool) -> ReadResult:  # noqa: PLR0911 - one return per reason
    """Check one file: readable, text (no NUL in the first 8 KiB, UTF-8), at most ``limit`` bytes.

    With ``want_text`` the whole file is read and decoded; otherwise only its first 8 KiB are checked.
    Never raises for a file system problem: the answer says which :data:`SKIP_REASONS` applies.
    """
    try:
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        fd = os.open(path, flags)
    except OSError:
        return ReadResult(0, skipped="unreadable")
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return ReadResult(0, skipped="special")
        size = info.st_size
        if size > limit or size > ENORMOUS:
            return ReadResult(size, skipped="too_large")
        data = _read(fd, size if want_text else min(size, _SNIFF))
    except OSError:
        return ReadResult(0, skipped="unreadable")
    finally:
        os.close(fd)
    if b"\0" in data[:_SNIFF]:
        return ReadResult(size, skipped="binary")
    try:
        if want_text:
            return ReadResult(size, text=data.decode("utf-8-sig"))
        codecs.getincrementaldecoder("utf-8")().decode(data, final=len(data) == size)
    except UnicodeDecodeError:
        return ReadResult(size, skipped="invalid_encoding")
    return ReadResult(size)


def _read(fd: int, size: int) -> bytes:
    chunks: list[bytes] = []
    remaining = size
    while remaining > 0:
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)
