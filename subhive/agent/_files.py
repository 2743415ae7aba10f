"""The file tools, ``list_files``, ``read_file`` and ``search``, confined to the hive's own directory (its slice).

A path the model sends is relative to the slice. :meth:`FileSlice.resolve` refuses what could leave it, whatever
the spelling: an absolute path, ``..`` going above the root, a symlink (anywhere on the way) whose target is
outside, a NUL byte. What is read is the resolved real path, never the path as written.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from ._tools import Tool, ToolError, schema_object

__all__ = ["FileSlice", "file_tools"]

#: Directories the tools never enter: machine state, not the hive's own files.
SKIPPED = frozenset({".git", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache", ".venv", "node_modules"})
MAX_LISTED = 500
MAX_READ_BYTES = 1_000_000
MAX_MATCHES = 100


class FileSlice:
    """The files one hive may read: everything under ``root`` that resolves to under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = Path(os.path.realpath(root))

    def resolve(self, path: str) -> Path:
        """The real path ``path`` (relative to the slice) names, or ``file.outside_slice``."""
        if not isinstance(path, str) or "\x00" in path:
            raise _outside(repr(path))
        text = path.replace("\\", "/").strip() or "."
        if PurePosixPath(text).is_absolute() or re.match(r"[A-Za-z]:", text):
            raise _outside(path, "an absolute path")
        real = Path(os.path.realpath(self.root / text))
        if real != self.root and self.root not in real.parents:
            raise _outside(path)
        return real

    def relative(self, real: Path) -> str:
        return real.relative_to(self.root).as_posix() if real != self.root else "."

    def walk(self, start: Path) -> Iterator[Path]:
        """Every regular file under ``start`` that stays in the slice, sorted, skipping machine directories."""
        for directory, dirs, files in os.walk(start, followlinks=False):
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED)
            for name in sorted(files):
                candidate = Path(directory, name)
                real = Path(os.path.realpath(candidate))
                if (real == self.root or self.root in real.parents) and real.is_file():
                    yield candidate


def _outside(path: str, what: str = "outside the hive's files") -> ToolError:
    return ToolError(
        f"{path} is {what}",
        code="file.outside_slice",
        hint="paths are relative to the hive's directory and stay inside it: e.g. src/app.py",
    )


async def _list_files(files: FileSlice, arguments: dict[str, Any]) -> dict[str, Any]:
    start = files.resolve(arguments.get("path", "."))
    if not start.exists():
        raise ToolError(
            f"{arguments.get('path')} does not exist",
            code="file.not_found",
            hint="list_files with path '.' shows what there is",
        )
    if start.is_file():
        return {"files": [files.relative(start)], "truncated": False}
    found: list[str] = []
    for path in files.walk(start):
        if len(found) == MAX_LISTED:
            return {"files": found, "truncated": True}
        found.append(path.relative_to(files.root).as_posix())  # start is real, so every path is under root
    return {"files": found, "truncated": False}


def _text(path: Path, shown: str) -> str:
    data = path.read_bytes()[:MAX_READ_BYTES]
    if b"\x00" in data[:8192]:
        raise ToolError(f"{shown} is a binary file", code="file.binary", hint="read text files only")
    return data.decode("utf-8", errors="replace")


async def _read_file(files: FileSlice, arguments: dict[str, Any]) -> dict[str, Any]:
    path = files.resolve(arguments["path"])
    if not path.is_file():
        raise ToolError(
            f"{arguments['path']} is not a file of this hive", code="file.not_found", hint="list_files shows the files"
        )
    lines = _text(path, arguments["path"]).splitlines()
    first = int(arguments.get("start_line", 1))
    count = int(arguments.get("max_lines", 400))
    return {
        "path": files.relative(path),
        "start_line": first,
        "lines": len(lines),
        "text": "\n".join(lines[first - 1 : first - 1 + count]),
        "more": first - 1 + count < len(lines),
    }


async def _search(files: FileSlice, arguments: dict[str, Any]) -> dict[str, Any]:
    query = arguments["query"]
    start = files.resolve(arguments.get("path", "."))
    try:
        pattern = re.compile(query if arguments.get("regex") else re.escape(query))
    except re.error as exc:
        raise ToolError(
            f"{query!r} is not a regular expression: {exc}",
            code="file.bad_pattern",
            hint="fix the pattern, or search for plain text (regex false)",
        ) from None
    matches: list[str] = []
    for path in [start] if start.is_file() else files.walk(start):
        real = Path(os.path.realpath(path))
        try:
            text = _text(real, str(path))
        except ToolError:
            continue  # binary files are skipped, not an error of the search
        for number, line in enumerate(text.splitlines(), 1):
            if pattern.search(line):
                matches.append(f"{files.relative(real)}:{number}: {line.strip()[:200]}")
                if len(matches) == MAX_MATCHES:
                    return {"matches": matches, "truncated": True}
    return {"matches": matches, "truncated": False}


def file_tools(files: FileSlice) -> list[Tool]:
    """``list_files``, ``read_file`` and ``search`` over ``files``."""

    async def list_files(arguments: dict[str, Any]) -> dict[str, Any]:
        return await _list_files(files, arguments)

    async def read_file(arguments: dict[str, Any]) -> dict[str, Any]:
        return await _read_file(files, arguments)

    async def search(arguments: dict[str, Any]) -> dict[str, Any]:
        return await _search(files, arguments)

    path = {"type": "string", "description": "a path relative to the hive's directory"}
    return [
        Tool(
            "list_files",
            "List the hive's files under a directory (relative paths, sorted).",
            schema_object({"path": path}),
            list_files,
            concurrent=True,
        ),
        Tool(
            "read_file",
            "Read a text file of the hive, by lines.",
            schema_object(
                {
                    "path": path,
                    "start_line": {"type": "integer", "minimum": 1},
                    "max_lines": {"type": "integer", "minimum": 1, "maximum": 2000},
                },
                ["path"],
            ),
            read_file,
            concurrent=True,
        ),
        Tool(
            "search",
            "Search the hive's text files for a string (or a regular expression); path:line: text.",
            schema_object(
                {"query": {"type": "string", "minLength": 1}, "path": path, "regex": {"type": "boolean"}}, ["query"]
            ),
            search,
            concurrent=True,
        ),
    ]
