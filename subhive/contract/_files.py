"""Where a contract's files come from: a directory on disk (:class:`DiskFiles`) or a map of files not written yet
(:class:`MemoryFiles`). Lint reads through either, so a proposed ``{path: bytes}`` contract is checked by the
same code, with the same problems, as a directory; only a disk has symbolic links that can lead out.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from .._source import MAX_DOCUMENT_BYTES, read_source
from ..errors import InputError, Location

__all__ = ["DiskFiles", "FileSource", "MemoryFiles"]

SPLIT_HINT = "split the schema into smaller files joined by relative $ref"


class FileSource(Protocol):
    """What lint asks of the place a contract's files are in (paths as lint builds them: directory / name)."""

    directory: Path

    def read(self, path: Path) -> bytes:
        """The bytes of ``path``; raises :class:`InputError` as ``_source.read_source`` does."""

    def exists(self, path: Path) -> bool: ...

    def is_file(self, path: Path) -> bool: ...

    def realpath(self, path: Path) -> Path:
        """``path`` with symbolic links resolved (``os.path.realpath``)."""

    @property
    def real_directory(self) -> Path:
        """The directory with symbolic links resolved."""

    def listing(self) -> list[str]:
        """Every file and directory below the directory, relative to it (for "did you mean" hints)."""


class DiskFiles:
    """The files of a directory on disk."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._real_root: Path | None = None

    def read(self, path: Path) -> bytes:
        return read_source(path, split_hint=SPLIT_HINT)

    def exists(self, path: Path) -> bool:
        return path.exists()

    def is_file(self, path: Path) -> bool:
        return path.is_file()

    def realpath(self, path: Path) -> Path:
        return Path(os.path.realpath(path))

    @property
    def real_directory(self) -> Path:
        if self._real_root is None:  # computed once: every named file is checked against it
            self._real_root = Path(os.path.realpath(self.directory))
        return self._real_root

    def listing(self) -> list[str]:
        try:
            return [str(p.relative_to(self.directory)) for p in self.directory.rglob("*")]
        except OSError:
            return []


class MemoryFiles:
    """``{relative POSIX path: bytes}`` standing for the directory ``directory`` (which need not exist)."""

    def __init__(self, directory: Path, files: Mapping[str, bytes]) -> None:
        self.directory = Path(directory)
        self._root = os.path.abspath(self.directory)
        self._keys: dict[str, str | None] = {}  # lint asks about the same few paths many times
        self._files = {os.path.normpath(name): bytes(content) for name, content in files.items()}
        self._dirs = {"."}
        for name in self._files:
            parent = os.path.dirname(name)
            while parent and parent not in self._dirs:
                self._dirs.add(parent)
                parent = os.path.dirname(parent)

    def _key(self, path: Path) -> str | None:
        text = os.fspath(path)
        if text not in self._keys:
            rel = os.path.relpath(os.path.abspath(text), self._root)
            self._keys[text] = None if rel == ".." or rel.startswith("../") else rel
        return self._keys[text]

    def read(self, path: Path) -> bytes:
        key = self._key(path)
        where = Location(file=str(path))
        if key is None or (key not in self._files and key not in self._dirs):
            raise InputError(
                "file not found",
                code="input.not_found",
                location=where,
                hint="check the path; it is resolved from the current directory",
            )
        if key not in self._files:
            raise InputError("not a regular file", code="input.not_a_file", location=where)
        content = self._files[key]
        if len(content) > MAX_DOCUMENT_BYTES:
            raise InputError(
                f"file is {len(content) / 1e6:.1f} MB, over the {MAX_DOCUMENT_BYTES // (1024 * 1024)} MiB limit",
                code="input.too_large",
                location=where,
                hint=SPLIT_HINT,
            )
        return content

    def exists(self, path: Path) -> bool:
        key = self._key(path)
        return key is not None and (key in self._files or key in self._dirs)

    def is_file(self, path: Path) -> bool:
        key = self._key(path)
        return key is not None and key in self._files

    def realpath(self, path: Path) -> Path:
        return Path(os.path.abspath(path))  # no symbolic links in a map of files

    @property
    def real_directory(self) -> Path:
        return Path(self._root)

    def listing(self) -> list[str]:
        return [*self._files, *(d for d in self._dirs if d != ".")]
