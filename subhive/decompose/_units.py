"""The code's own units, found from paths alone: the pieces a maintainer would never want cut in two when they
fit one hive. Rules: docs/decompose.md#units; why: docs/decisions/0078-decompose-units-kept-whole.md.

A unit is either a directory with everything below it (a Python package with its subpackages, a JS/TS
package with a ``package.json``, a Rust crate or module tree, a Go module) or the files directly in one
directory (a Go package, a Java/Kotlin package). Such sets never partly overlap: two units are disjoint or
one holds the other, so the fitting units that no larger fitting unit holds are disjoint *atoms* that a
plan keeps whole.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Unit", "atoms", "find_units", "home_paths", "split_units"]

#: Directories that hold tests: never a unit of their own, so tests can join the code they test.
TEST_DIRS = frozenset({"test", "tests", "__tests__", "spec", "specs", "testing", "e2e", "testdata", "fixtures"})
_DIRECT = {".go": "go", ".java": "java", ".kt": "java"}
_MARKERS = {
    "__init__.py": "python",
    "__init__.pyi": "python",
    "package.json": "javascript",
    "Cargo.toml": "rust",
    "go.mod": "go_module",
    "mod.rs": "rust_module",
}


@dataclass(frozen=True, slots=True)
class Unit:
    """One unit: its kind (``python``, ``javascript``, ``rust``, ``rust_module``, ``go_module``, ``go``,
    ``java``), its directory, and its files (indexes into the sorted paths, ascending)."""

    kind: str
    directory: str
    files: tuple[int, ...]


def _dirname(path: str) -> str:
    return path.rpartition("/")[0]


def _is_test_dir(directory: str) -> bool:
    return any(part.lower() in TEST_DIRS for part in directory.split("/")) if directory else False


def home_paths(paths: Sequence[str]) -> list[str]:
    """The path each file is grouped under: itself, except a Rust module file ``x.rs`` beside a directory
    ``x/`` of Rust files, which belongs in that directory (``src/net.rs`` + ``src/net/tcp.rs``)."""
    rust_dirs = {_dirname(p) for p in paths if p.endswith(".rs")}
    out = list(paths)
    for i, path in enumerate(paths):
        if path.endswith(".rs"):
            stem = path[:-3]
            name = stem.rpartition("/")[2]
            if stem in rust_dirs and name not in ("mod", "lib", "main"):
                out[i] = f"{stem}/{name}.rs"
    return out


def find_units(paths: Sequence[str]) -> list[Unit]:
    """Every unit of the repository whose files are ``paths`` (sorted, '/'-separated), outermost first.

    >>> [(u.kind, u.directory, u.files) for u in find_units(["a/__init__.py", "a/b/__init__.py", "a/b/x.py", "g/m.go"])]
    [('python', 'a', (0, 1, 2)), ('go', 'g', (3,)), ('python', 'a/b', (1, 2))]
    """
    homes = home_paths(paths)
    order = sorted(range(len(paths)), key=lambda i: homes[i])
    ordered = [homes[i] for i in order]
    recursive: dict[str, str] = {}
    direct: dict[str, str] = {}
    rust_dirs: set[str] = set()
    for path in paths:
        directory, _, name = path.rpartition("/")
        kind = _MARKERS.get(name)
        if kind is not None and not _is_test_dir(directory):
            recursive.setdefault(directory, kind)
        dot = name.rfind(".")
        direct_kind = _DIRECT.get(name[dot:]) if dot > 0 else None
        if direct_kind is not None and not _is_test_dir(directory):
            direct.setdefault(directory, direct_kind)
        if name.endswith(".rs"):
            rust_dirs.add(directory)
    known = set(paths)
    for directory in sorted(rust_dirs):  # a module tree: x.rs beside x/ (home_paths moved x.rs under x/)
        if directory and f"{directory}.rs" in known and not _is_test_dir(directory):
            recursive.setdefault(directory, "rust_module")
    units: list[tuple[str, int, Unit]] = []
    for directory, kind in recursive.items():
        prefix = f"{directory}/" if directory else ""
        lo = bisect.bisect_left(ordered, prefix)
        hi = bisect.bisect_left(ordered, prefix + "\U0010ffff") if prefix else len(ordered)
        files = tuple(sorted(order[lo:hi]))
        if files:
            units.append((directory, 0, Unit(kind, directory, files)))
    for directory, kind in direct.items():
        files = tuple(sorted(i for i in _direct_files(ordered, order, directory)))
        if files:
            units.append((directory, 1, Unit(kind, directory, files)))
    units.sort(key=lambda item: (item[0].count("/") if item[0] else -1, item[0], item[1]))
    return [unit for _, _, unit in units]


def _direct_files(ordered: list[str], order: list[int], directory: str) -> list[int]:
    prefix = f"{directory}/" if directory else ""
    lo = bisect.bisect_left(ordered, prefix)
    out: list[int] = []
    for k in range(lo, len(ordered)):
        home = ordered[k]
        if not home.startswith(prefix):
            break
        if "/" not in home[len(prefix) :]:
            out.append(order[k])
    return out


def atoms(units: Sequence[Unit], sizes: Sequence[int], max_files: int, max_bytes: int) -> list[int]:
    """Each file's atom: the index of the outermost fitting unit holding it, or ``-1 - file`` when no fitting
    unit holds it (the file alone is its atom)."""
    atom = [-1 - f for f in range(len(sizes))]
    outer = [0] * len(sizes)  # size in files of the unit the file's atom is, 0: none yet
    for index, unit in enumerate(units):
        count = len(unit.files)
        if count > max_files or sum(sizes[f] for f in unit.files) > max_bytes:
            continue
        for f in unit.files:
            if count > outer[f]:
                outer[f] = count
                atom[f] = index
    return atom


def split_units(
    units: Sequence[Unit], leaf_of: Sequence[int], sizes: Sequence[int], max_files: int, max_bytes: int
) -> list[Unit]:
    """The units that fit the budget yet whose files lie in more than one leaf (``leaf_of[file]``)."""
    out: list[Unit] = []
    for unit in units:
        if len(unit.files) > max_files or sum(sizes[f] for f in unit.files) > max_bytes:
            continue
        if len({leaf_of[f] for f in unit.files}) > 1:
            out.append(unit)
    return out
