"""Where ``$ref`` URLs find their files when the referring ``$id`` does not place them: prefixes of ``$id`` URLs
mapped to local directories (``[schemas] id_roots`` in ``hive.toml``, ``--id-root PREFIX=DIR`` on the command
line). See docs/contracts.md#schemas and docs/decisions/0107-id-roots.md.

A key ending in ``/`` maps every URL below it to the same relative path under a directory
(``"https://json.schemastore.org/" = "schemas/json"``); any other key maps that one URL to one file
(``"https://example.com/spdx/licenses.json" = "vendor/licenses.1.json"``), as import maps do. The command
line's entries are tried first (those for one side of ``schema diff``, ``--old-id-root``/``--new-id-root``, before
``--id-root``), then the workspace's, longest key first within each (decision 0141).

Light on purpose (tomllib only): subhive.workspace validates its ``[schemas]`` table with :func:`read_schemas_table`,
and every schema load asks :func:`id_roots_for` once.
"""

from __future__ import annotations

import difflib
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from ._workspace_table import read_workspace_table
from .errors import InputError

__all__ = [
    "SCHEMAS_KEYS",
    "IdRoot",
    "IdRoots",
    "extra_id_roots",
    "id_roots_for",
    "parse_id_root",
    "read_schemas_table",
]

#: The keys of hive.toml's ``[schemas]`` table.
SCHEMAS_KEYS = ("id_roots",)
WORKSPACE_FILE = "hive.toml"  # the name subhive.workspace finds a workspace by (that layer sits above this one)
_EXAMPLE = 'id_roots = { "https://json.schemastore.org/" = "schemas/json" }'

#: (pointer, code, message, hint): how a reader records one problem (as subhive.workspace's readers do).
Report = Callable[[str, str, str, str], None]


@dataclass(frozen=True, slots=True)
class IdRoot:
    """One entry: a URL prefix (ending in ``/``) and its directory, or one URL and its file."""

    prefix: str
    path: Path  # absolute
    #: Where the entry comes from, as errors name it: "hive.toml [schemas] id_roots", "--id-root" or one side's
    #: "--old-id-root" / "--new-id-root".
    origin: str
    #: The directory or file as it was written there (errors show it so).
    written: str = ""

    @property
    def is_tree(self) -> bool:
        return self.prefix.endswith("/")

    def place(self, uri: str) -> Path | None:
        """The file this entry maps ``uri`` (no fragment) to, or None when it does not cover ``uri``.
        The path may climb out of the directory (``../``): the caller checks that it stays inside."""
        if not self.is_tree:
            return self.path if uri == self.prefix else None
        if not uri.startswith(self.prefix) or urlsplit(uri).query:
            return None
        rest = unquote(uri[len(self.prefix) :])
        return Path(os.path.normpath(self.path.joinpath(*rest.split("/")))) if rest else None

    def describe(self) -> str:
        return f"{self.prefix!r} = {(self.written or str(self.path))!r} in {self.origin}"


@dataclass(frozen=True, slots=True)
class IdRoots:
    """The entries in force for one schema directory: the command line's, then the workspace's."""

    roots: tuple[IdRoot, ...] = ()

    def places(self, uri: str) -> list[tuple[IdRoot, Path]]:
        """Every entry covering ``uri`` with the file it names, in the order they are tried."""
        found = [(root, path) for root in self.roots if (path := root.place(uri)) is not None]
        found.sort(key=lambda item: (_RANK.get(item[0].origin, 2), -len(item[0].prefix)))  # stable: file order
        return found


# One side's entries, then the command line's for both, then the workspace's (any other origin).
_RANK = {"--old-id-root": 0, "--new-id-root": 0, "--id-root": 1}


NO_ROOTS = IdRoots()


def _check_prefix(prefix: object) -> str | None:
    """Why ``prefix`` cannot be a key, or None when it can."""
    if not isinstance(prefix, str) or not prefix:
        return "a key must be an absolute URL"
    try:
        parts = urlsplit(prefix)
    except ValueError as exc:
        return f"{prefix!r} is not a URL ({exc})"
    if not parts.scheme or parts.scheme == "file":
        return f"{prefix!r} is not an absolute http(s) or urn URL"
    if parts.scheme in ("http", "https") and not parts.netloc:
        return f"{prefix!r} names no host"
    if parts.fragment or "#" in prefix or parts.query:
        return f"{prefix!r} has a query or a fragment; a key names where documents are, not a part of one"
    return None


def _entry(prefix: str, target: str, base: Path, origin: str) -> tuple[IdRoot | None, str | None]:
    """The entry ``prefix = target`` (``target`` relative to ``base``), or why it is wrong."""
    why = _check_prefix(prefix)
    if why is not None:
        return None, why
    path = Path(os.path.normpath(base / target))
    if prefix.endswith("/") and not path.is_dir():
        return None, f"directory {target!r} for {prefix!r} does not exist (resolved to {path})"
    if not prefix.endswith("/") and not path.is_file():
        return None, (
            f"file {target!r} for {prefix!r} does not exist (resolved to {path}); a key ending in '/' maps a directory"
        )
    return IdRoot(prefix, path, origin, target), None


def read_schemas_table(table: object, root: Path, problem: Report) -> tuple[IdRoot, ...]:
    """Validate hive.toml's ``[schemas]`` table; directories are relative to the workspace ``root``.

    Every problem goes to ``problem``; a wrong entry is left out.
    """
    if not isinstance(table, dict):
        problem("/schemas", "workspace.type", "schemas must be a table", f"write it as a [schemas] section: {_EXAMPLE}")
        return ()
    for key in table:
        if key not in SCHEMAS_KEYS:
            close = difflib.get_close_matches(key, SCHEMAS_KEYS, n=1)
            problem(
                f"/schemas/{key}",
                "workspace.unknown_key",
                f"unknown key {key!r}",
                f"did you mean {close[0]!r}?" if close else f"allowed: {', '.join(SCHEMAS_KEYS)}",
            )
    raw = table.get("id_roots", {})
    if not isinstance(raw, dict):
        problem(
            "/schemas/id_roots",
            "workspace.type",
            "id_roots must be a table of URL prefixes and directories",
            _EXAMPLE + " (directories relative to the workspace root)",
        )
        return ()
    roots: list[IdRoot] = []
    for prefix, target in raw.items():
        pointer = "/schemas/id_roots/" + prefix.replace("~", "~0").replace("/", "~1")
        if not isinstance(target, str) or not target:
            problem(pointer, "workspace.type", f"the directory for {prefix!r} must be a path", _EXAMPLE)
            continue
        entry, why = _entry(prefix, target, root, f"{WORKSPACE_FILE} [schemas] id_roots")
        if entry is None:
            missing = why is not None and "does not exist" in why
            problem(
                pointer,
                "workspace.id_root_missing" if missing else "workspace.id_root_invalid",
                why or "",
                "directories are relative to the workspace root; create it or remove the entry"
                if missing
                else "keys are absolute URL prefixes ending in '/' (or one whole URL): " + _EXAMPLE,
            )
            continue
        roots.append(entry)
    return tuple(roots)


def parse_id_root(option: str, base: Path | None = None, *, origin: str = "--id-root") -> IdRoot:
    """``--id-root PREFIX=DIR`` (``DIR`` relative to ``base``, the current directory by default); ``origin`` names
    the option (``--old-id-root`` and ``--new-id-root`` hold one side's entries).

    Raises :class:`~subhive.errors.InputError` when it is malformed or ``DIR`` does not exist.
    """
    prefix, sep, target = option.partition("=")
    if not sep or not target:
        raise InputError(f"{origin} {option!r} is not PREFIX=DIR", code="usage.id_root", hint=_hint(origin))
    return _option_entry(prefix, target, base, origin)


def _hint(origin: str) -> str:
    return f"write {origin} PREFIX=DIR, e.g. {origin} https://json.schemastore.org/=schemas/json"


def _option_entry(prefix: str, target: str | Path, base: Path | None = None, origin: str = "--id-root") -> IdRoot:
    entry, why = _entry(prefix, str(target), base if base is not None else Path.cwd(), origin)
    if entry is None:
        raise InputError(f"{origin} {prefix}={target}: {why}", code="usage.id_root", hint=_hint(origin))
    return entry


# -- the command line's --id-root ---------------------------------------------------------------------------

_EXTRA_LOCK = threading.Lock()
_extra: list[tuple[IdRoot, ...]] = [()]  # one slot, replaced while a command runs


@contextmanager
def extra_id_roots(options: Mapping[str, str | Path] | tuple[IdRoot, ...] | list[str]) -> Iterator[tuple[IdRoot, ...]]:
    """While the block runs, every schema loaded in this process also maps these prefixes (``--id-root``).

    Takes ``["PREFIX=DIR", ...]``, ``{PREFIX: DIR}`` or parsed entries. Process-wide, as ``-I`` is: an
    in-process root judges a proposal on threads of its own.
    """
    if isinstance(options, Mapping):
        entries = tuple(_option_entry(prefix, target) for prefix, target in options.items())
    else:
        entries = tuple(o if isinstance(o, IdRoot) else parse_id_root(o) for o in options)
    with _EXTRA_LOCK:
        saved, _extra[0] = _extra[0], entries
    try:
        yield entries
    finally:
        with _EXTRA_LOCK:
            _extra[0] = saved


# -- the workspace that holds a schema ------------------------------------------------------------------------

_CACHE_LOCK = threading.Lock()
_cache: dict[Path, tuple[int, tuple[IdRoot, ...]]] = {}  # hive.toml -> (mtime_ns, entries)


def id_roots_for(start: str | Path, side: tuple[IdRoot, ...] = ()) -> IdRoots:
    """The entries in force for schemas under ``start``: ``side``'s (one side of ``schema diff``), ``--id-root``'s,
    then the nearest ``hive.toml``'s.

    Raises :class:`~subhive.errors.InputError` naming hive.toml and the key when its table is invalid: a typo
    in a directory must not become a confusing "reference not found" later.
    """
    with _EXTRA_LOCK:
        extra = _extra[0]
    origin = Path(os.path.abspath(start))
    manifest = _find_manifest(origin if origin.is_dir() else origin.parent)
    workspace = _workspace_roots(manifest) if manifest is not None else ()
    return IdRoots(side + extra + workspace) if side or extra or workspace else NO_ROOTS


def _find_manifest(directory: Path) -> Path | None:
    for candidate in (directory, *directory.parents):
        if (candidate / WORKSPACE_FILE).is_file():
            return candidate / WORKSPACE_FILE
    return None


def _workspace_roots(manifest: Path) -> tuple[IdRoot, ...]:
    try:
        stamp = manifest.stat().st_mtime_ns
    except OSError:
        return ()
    with _CACHE_LOCK:
        cached = _cache.get(manifest)
        if cached is not None and cached[0] == stamp:
            return cached[1]
    roots = _read(manifest)
    with _CACHE_LOCK:
        _cache[manifest] = (stamp, roots)
    return roots


def _read(manifest: Path) -> tuple[IdRoot, ...]:
    return read_workspace_table(manifest, "schemas", read_schemas_table) or ()
