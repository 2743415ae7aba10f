"""Resolving Rust, C/C++, Ruby and PHP imports to files of the repository (C# goes the JVM way, by namespace).
Rules: docs/decompose.md#the-import-graph. Like the rest, a guess that finds nothing is an unresolved import,
never an error.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Mapping, Sequence

__all__ = ["MoreResolver"]

_CARGO_NAME = re.compile(r'^\[package\][^\[]*?^name[ \t]*=[ \t]*"([^"]+)"', re.M | re.S)
_INCLUDE_FLAG = re.compile(r"(?:^|\s)-I\s*(\S+)")
_SUFFIX_DEPTH = 4
_SUFFIXED = (".h", ".hh", ".hpp", ".hxx", ".c", ".cc", ".cpp", ".cxx", ".rb", ".php")


def _dirname(path: str) -> str:
    return path.rpartition("/")[0]


def _join(*parts: str) -> str:
    joined = posixpath.normpath("/".join(p for p in parts if p))
    return "" if joined == "." else joined


class MoreResolver:
    """Indexes for Rust crates, C/C++ include directories and path suffixes (headers, Ruby, PHP files).

    * **Rust**: ``mod x;`` is ``x.rs`` or ``x/mod.rs`` beside the module's file; ``use crate::a::b`` walks
      the crate's ``src/`` (``a/b.rs``, ``a/b/mod.rs``, else ``a.rs``...), ``super::`` and ``self::`` from the
      module, and ``use other::...`` another crate of the workspace by its Cargo.toml name.
    * **C/C++**: ``#include "x.h"`` beside the file, then the ``-I`` directories of compile_commands.json, then
      the one header whose path ends so; ``<a/b.h>`` the same without the first step.
    * **Ruby**: ``require_relative`` by path, ``require 'a/b'`` the file ending ``a/b.rb`` (under ``lib/`` first).
    * **PHP**: ``use A\\B\\C`` the file ending ``B/C.php`` (PSR-4 maps the vendor prefix to some ``src/``), an
      ``include`` by path.
    """

    def __init__(
        self, paths: Sequence[str], index: Mapping[str, int], side_files: Mapping[str, str], root: str
    ) -> None:
        self.paths = paths
        self.index = index
        self._suffix: dict[str, list[int]] = {}
        for i, path in enumerate(paths):
            if path.endswith(_SUFFIXED):
                parts = path.split("/")
                for depth in range(1, min(_SUFFIX_DEPTH, len(parts)) + 1):
                    self._suffix.setdefault("/".join(parts[-depth:]), []).append(i)
        self._crates: dict[str, str] = {}  # crate name (as in `use`) -> its directory
        self._crate_dirs: list[str] = []
        self._include_dirs: list[str] = []
        for path, text in sorted(side_files.items()):
            name = path.rpartition("/")[2]
            if name == "Cargo.toml":
                self._crate_dirs.append(_dirname(path))
                match = _CARGO_NAME.search(text)
                if match:
                    self._crates.setdefault(match.group(1).replace("-", "_"), _dirname(path))
            elif name == "compile_commands.json":
                self._include_dirs.extend(_include_dirs(text, root, _dirname(path)))
        self._crate_dirs.sort(key=lambda d: (-len(d), d))
        self._include_dirs = list(dict.fromkeys(self._include_dirs))

    def resolve(self, path: str, spec: str) -> int | None:
        if path.endswith(".rs"):
            return self._rust(path, spec)
        if path.endswith(".rb"):
            return self._ruby(path, spec)
        if path.endswith(".php"):
            return self._php(path, spec)
        return self._c(path, spec)

    # --- Rust

    def _module_dir(self, path: str) -> str:
        directory, _, name = path.rpartition("/")
        return directory if name in ("lib.rs", "main.rs", "mod.rs") else _join(directory, name[:-3])

    def _crate_src(self, path: str) -> str:
        for directory in self._crate_dirs:
            if not directory or path.startswith(directory + "/"):
                return _join(directory, "src")
        return _dirname(path)

    def _rust(self, path: str, spec: str) -> int | None:
        kind, _, rest = spec.partition(":")
        if kind == "mod":
            return self._rust_file(self._module_dir(path), [rest])
        segments = rest.lstrip(":").split("::")
        head = segments[0]
        if head == "crate":
            base = self._crate_src(path)
        elif head == "self":
            base = self._module_dir(path)
        elif head == "super":
            base = _dirname(self._module_dir(path))
            while len(segments) > 1 and segments[1] == "super":
                segments = segments[1:]
                base = _dirname(base)
        elif head in self._crates:
            base = _join(self._crates[head], "src")
        else:
            return None
        found = self._rust_file(base, segments[1:])
        if found is None and head in self._crates:
            for root in ("lib.rs", "main.rs"):
                target = self.index.get(_join(base, root))
                if target is not None:
                    return target
        return found

    def _rust_file(self, base: str, segments: list[str]) -> int | None:
        for length in range(len(segments), 0, -1):
            stem = _join(base, *segments[:length])
            for candidate in (f"{stem}.rs", f"{stem}/mod.rs"):
                target = self.index.get(candidate)
                if target is not None:
                    return target
        return None

    # --- C / C++

    def _c(self, path: str, spec: str) -> int | None:
        quote, name = spec[:1], spec[1:]
        candidates = [_join(_dirname(path), name)] if quote == '"' else []
        candidates += [_join(directory, name) for directory in self._include_dirs]
        for candidate in candidates:
            target = self.index.get(candidate)
            if target is not None:
                return target
        if quote == "<" and "/" not in name:
            return None  # <stdio.h>: a system header unless an include directory has it
        return self._unique_suffix(name)

    def _unique_suffix(self, suffix: str) -> int | None:
        found = self._suffix.get(suffix.lstrip("./"))
        return found[0] if found and len(found) == 1 else None

    # --- Ruby, PHP

    def _ruby(self, path: str, spec: str) -> int | None:
        name = spec if spec.endswith(".rb") else f"{spec}.rb"
        if spec.startswith(("./", "../")):
            return self.index.get(_join(_dirname(path), name))
        found = self._suffix.get(name)
        if not found:
            return None
        under_lib = [f for f in found if f"lib/{name}" in self.paths[f]]
        return (under_lib or found)[0] if len(under_lib or found) == 1 else None

    def _php(self, path: str, spec: str) -> int | None:
        if not spec.startswith("use:"):
            return self.index.get(_join(_dirname(path), spec.lstrip("/")))
        parts = spec[4:].split("\\")
        for start in range(len(parts)):
            if len(parts) - start < min(2, len(parts)):
                break
            found = self._unique_suffix("/".join(parts[start:]) + ".php")
            if found is not None:
                return found
        return None


def _include_dirs(text: str, root: str, here: str) -> list[str]:
    """The ``-I`` directories of a compile_commands.json, relative to the repository's root."""
    try:
        entries = json.loads(text)
    except ValueError:
        return []
    out: list[str] = []
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict):
            continue
        command = entry.get("command")
        if not isinstance(command, str):
            arguments = entry.get("arguments")
            command = " ".join(a for a in arguments if isinstance(a, str)) if isinstance(arguments, list) else ""
        directory = entry.get("directory") if isinstance(entry.get("directory"), str) else ""
        for flag in _INCLUDE_FLAG.findall(command):
            absolute = flag if flag.startswith("/") else posixpath.join(str(directory) or "/", flag)
            absolute = posixpath.normpath(absolute)
            if root and (absolute == root or absolute.startswith(root.rstrip("/") + "/")):
                out.append(_join(absolute[len(root) :].lstrip("/")))
            elif not flag.startswith("/") and not directory:
                out.append(_join(here, flag))
    return out
