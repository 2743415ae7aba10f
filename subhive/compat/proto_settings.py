"""Where ``.proto`` imports are looked up and which buf-style rule category judges a change.

Include paths come from three places, searched in this order after the file's own root: the caller's
``include_dirs``, the command line (``-I/--proto-path``, held by :func:`extra_proto_paths` while a command
runs) and the ``[protobuf]`` table of the workspace that holds the file (``hive.toml``). Then come the
bundled roots: the well-known types of grpcio-tools, the googleapis common protos of
googleapis-common-protos and subhive's stand-in for ``google/longrunning/operations.proto``. See
docs/contracts.md#protobuf-imports-and-rule-categories and docs/decisions/0070-protobuf-include-paths.md.

Light on purpose (no protoc, no protobuf runtime): subhive.workspace reads hive.toml through it. The compat
layer sits below the workspace package, so it reads the one ``[protobuf]`` table of ``hive.toml``
itself; the workspace's own reader validates that table with :func:`read_protobuf_table` too, so both say the
same thing about it.
"""

from __future__ import annotations

import difflib
import functools
import importlib.resources
import importlib.util
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from .._workspace_table import read_workspace_table
from ..errors import InputError, Location

__all__ = [
    "DEFAULT_BREAKING",
    "PROTOBUF_KEYS",
    "BreakingRules",
    "ProtoSettings",
    "bundled_roots",
    "extra_proto_paths",
    "read_protobuf_table",
    "workspace_proto_settings",
]


class BreakingRules(StrEnum):
    """Which changes count as breaking: buf's four categories and subhive's own default, from strictest to
    most lenient ``FILE`` > ``PACKAGE`` > ``RUNTIME`` > ``WIRE_JSON`` > ``WIRE`` (docs/compat-codes.md)."""

    FILE = "FILE"  # also moving a type to another file (generated code per file)
    PACKAGE = "PACKAGE"  # also generated code per package: deletions, type names, file options, syntax
    RUNTIME = "RUNTIME"  # what a running peer sees: binary, ProtoJSON, gRPC paths and type names
    WIRE_JSON = "WIRE_JSON"  # the binary and ProtoJSON encodings only
    WIRE = "WIRE"  # the binary encoding only


#: subhive's behaviour before the categories existed, and still the default.
DEFAULT_BREAKING = BreakingRules.RUNTIME
#: The keys of hive.toml's ``[protobuf]`` table.
PROTOBUF_KEYS = ("proto_paths", "breaking")
WORKSPACE_FILE = "hive.toml"  # the name subhive.workspace finds a workspace by (that layer sits above this one)


@dataclass(frozen=True, slots=True)
class ProtoSettings:
    """A workspace's ``[protobuf]`` settings: absolute include paths and the rule category."""

    proto_paths: tuple[Path, ...] = ()
    breaking: BreakingRules = DEFAULT_BREAKING
    #: The hive.toml they come from (None: no workspace), named in errors.
    source: Path | None = None


NO_SETTINGS = ProtoSettings()
_SHIMS = Path(__file__).parent / "protos"

#: (pointer, code, message, hint): how a reader records one problem (as subhive.workspace's readers do).
Report = Callable[[str, str, str, str], None]


def read_protobuf_table(table: object, root: Path, problem: Report) -> ProtoSettings:
    """Validate hive.toml's ``[protobuf]`` table; include paths are relative to the workspace ``root``.

    ``read_protobuf_table({"proto_paths": ["third_party"]}, Path("/ws"), report).proto_paths``
    -> ``(PosixPath('/ws/third_party'),)``. Every problem goes to ``problem``; what is wrong falls back to the
    default.
    """
    if not isinstance(table, dict):
        problem(
            "/protobuf",
            "workspace.type",
            "protobuf must be a table",
            'write it as a [protobuf] section: proto_paths = ["third_party/googleapis"], breaking = "WIRE_JSON"',
        )
        return ProtoSettings()
    for key in table:
        if key not in PROTOBUF_KEYS:
            close = difflib.get_close_matches(key, PROTOBUF_KEYS, n=1)
            problem(
                f"/protobuf/{key}",
                "workspace.unknown_key",
                f"unknown key {key!r}",
                f"did you mean {close[0]!r}?" if close else f"allowed: {', '.join(PROTOBUF_KEYS)}",
            )
    paths: list[Path] = []
    raw_paths = table.get("proto_paths", [])
    if not isinstance(raw_paths, list) or not all(isinstance(p, str) and p for p in raw_paths):
        problem(
            "/protobuf/proto_paths",
            "workspace.type",
            "proto_paths must be a list of directory names",
            'proto_paths = ["third_party/googleapis", "proto"] (relative to the workspace root)',
        )
    else:
        for index, entry in enumerate(raw_paths):
            path = Path(os.path.normpath(root / entry))
            if not path.is_dir():
                problem(
                    f"/protobuf/proto_paths/{index}",
                    "workspace.proto_path_missing",
                    f"include directory {entry!r} does not exist (resolved to {path})",
                    "proto_paths are directories relative to the workspace root; create it or remove the entry",
                )
            paths.append(path)
    breaking = DEFAULT_BREAKING
    raw = table.get("breaking", DEFAULT_BREAKING.value)
    try:
        breaking = BreakingRules(raw)
    except ValueError:
        problem(
            "/protobuf/breaking",
            "workspace.breaking_unknown",
            f"unknown rule category {raw!r}",
            f"one of {', '.join(r.value for r in BreakingRules)} (default {DEFAULT_BREAKING.value})",
        )
    return ProtoSettings(tuple(paths), breaking, root / WORKSPACE_FILE)


# -- the workspace that holds a file ------------------------------------------------------------------------

_CACHE_LOCK = threading.Lock()
_cache: dict[Path, tuple[int, ProtoSettings]] = {}  # hive.toml -> (mtime_ns, settings)


def workspace_proto_settings(start: str | Path) -> ProtoSettings:
    """The ``[protobuf]`` settings of the nearest ``hive.toml`` at or above ``start`` (defaults outside one).

    Raises :class:`~subhive.errors.InputError` naming hive.toml and the key when the table is invalid:
    a typo in an include path must not become a confusing "import not found" later.
    """
    origin = Path(os.path.abspath(start))
    manifest = _find_manifest(origin if origin.is_dir() else origin.parent)
    if manifest is None:
        return NO_SETTINGS
    try:
        stamp = manifest.stat().st_mtime_ns
    except OSError:
        return NO_SETTINGS
    with _CACHE_LOCK:
        cached = _cache.get(manifest)
        if cached is not None and cached[0] == stamp:
            return cached[1]
    settings = _read(manifest)
    with _CACHE_LOCK:
        _cache[manifest] = (stamp, settings)
    return settings


def _find_manifest(directory: Path) -> Path | None:
    for candidate in (directory, *directory.parents):
        if (candidate / WORKSPACE_FILE).is_file():
            return candidate / WORKSPACE_FILE
    return None


def _read(manifest: Path) -> ProtoSettings:
    return read_workspace_table(manifest, "protobuf", read_protobuf_table) or ProtoSettings(source=manifest)


# -- the command line's -I ------------------------------------------------------------------------------------

_EXTRA_LOCK = threading.Lock()
_extra: list[tuple[Path, ...]] = [()]  # one slot, replaced while a command runs


@contextmanager
def extra_proto_paths(paths: Sequence[str | Path]) -> Iterator[tuple[Path, ...]]:
    """While the block runs, every ``.proto`` compiled in this process also searches ``paths`` (``-I``).

    Process-wide rather than per context: an in-process root hive judges a proposal on its own threads.
    Raises :class:`~subhive.errors.InputError` for a directory that does not exist.
    """
    resolved = check_include_dirs(paths, hint="pass existing directories with -I/--proto-path")
    with _EXTRA_LOCK:
        saved, _extra[0] = _extra[0], resolved
    try:
        yield resolved
    finally:
        with _EXTRA_LOCK:
            _extra[0] = saved


def command_line_paths() -> tuple[Path, ...]:
    with _EXTRA_LOCK:
        return _extra[0]


def check_include_dirs(paths: Sequence[str | Path], *, hint: str) -> tuple[Path, ...]:
    resolved: list[Path] = []
    for entry in paths:
        root = Path(entry).resolve()
        if not root.is_dir():
            raise InputError(
                "include directory not found",
                code="input.not_found",
                location=Location(file=str(entry)),
                hint=hint,
            )
        resolved.append(root)
    return tuple(resolved)


# -- what ships with subhive ----------------------------------------------------------------------------------


@functools.cache  # what is installed does not change while the process runs
def bundled_roots() -> tuple[tuple[Path, str], ...]:
    """The roots searched last, with how errors name them: the well-known types, then googleapis' common
    protos (google/api, google/type, google/rpc, google/longrunning, ...), then subhive's stand-in for
    ``google/longrunning/operations.proto``. The well-known types come first so that
    ``google/protobuf/*.proto`` always matches the protoc that compiles them."""
    # The well-known types (google/protobuf/*.proto) that grpcio-tools ships; looked up here, not at import
    # time: this module is read by every command that opens a workspace, and grpc_tools is slow to import.
    wkt = Path(str(importlib.resources.files("grpc_tools") / "_proto"))
    roots: list[tuple[Path, str]] = [(wkt, "the well-known types of grpcio-tools")]
    common = _common_protos_root()
    if common is not None:
        roots.append((common, "the googleapis common protos of googleapis-common-protos"))
        # googleapis-common-protos renames google/longrunning/operations.proto; subhive ships a stand-in.
        roots.append((_SHIMS, "subhive's stand-ins for renamed common protos"))
    return tuple(roots)


def _common_protos_root() -> Path | None:
    """The directory holding ``google/api/annotations.proto`` as googleapis-common-protos installs it."""
    try:  # googleapis-common-protos' package: its .proto files lie beside its modules
        spec = importlib.util.find_spec("google.api")
    except (ImportError, ValueError):
        spec = None
    if spec is None:  # a dependency of subhive, but an environment may lack it: then only the WKT
        return None
    for location in spec.submodule_search_locations or ():
        root = Path(location).parent.parent
        if (root / "google" / "api" / "annotations.proto").is_file():
            return root
    return None
