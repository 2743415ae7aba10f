"""Compiling ``.proto`` files to a ``FileDescriptorSet`` with the real protoc that grpcio-tools ships.
Results are cached per process by the content hash of every source file, so a file is compiled once.
"""

from __future__ import annotations

import hashlib
import os
import re
import sys
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from google.protobuf import descriptor_pb2
from grpc_tools import protoc

from .._source import read_source
from ..errors import ContractInvalid, InputError, Location, Problem
from .proto_settings import bundled_roots, check_include_dirs, command_line_paths, workspace_proto_settings

__all__ = ["compile_proto", "compile_proto_bytes", "proto_roots"]

_PROTOC_LOCK = threading.Lock()  # protoc's globals and the fd-2 redirection are process-wide
_CACHE_LOCK = threading.Lock()
_CACHE_SIZE = 256

# "file.proto:12:5: message" or "file.proto: message"; protoc prints "warning:" lines even on success.
_DIAGNOSTIC = re.compile(r"^(?P<file>[^:\n]+?):(?:(?P<line>\d+):(?:\d+):)?\s*(?P<message>.+)$")
_MISSING_IMPORT = re.compile(r'^Import "(?P<name>[^"]+)" was not found or had errors\.$')
_FILE_NOT_FOUND = re.compile(r"^File not found\.$")


@dataclass(frozen=True, slots=True)
class _Roots:
    """The import roots in protoc's search order: the user's (their files are hashed for the cache), then
    the bundled ones with the words errors use for them."""

    user: tuple[Path, ...]
    bundled: tuple[tuple[Path, str], ...]

    @property
    def all(self) -> tuple[Path, ...]:
        return (*self.user, *(root for root, _ in self.bundled))

    def describe(self) -> str:
        return "; ".join([*(str(r) for r in self.user), *(f"{r} ({what})" for r, what in self.bundled)])


@dataclass(frozen=True, slots=True)
class _Entry:
    roots: _Roots
    sources: tuple[tuple[str, int, str], ...]  # every user file that went in: name, root index, sha256
    data: bytes  # the serialized FileDescriptorSet


_cache: OrderedDict[tuple[str, ...], _Entry] = OrderedDict()


def compile_proto(path: str | Path, *, include_dirs: Sequence[str | Path] = ()) -> descriptor_pb2.FileDescriptorSet:
    """Compile ``path`` and everything it imports; raise instead of printing when it does not compile.

    Imports are looked up in ``path``'s own directory (unless it lies inside another root), ``include_dirs``,
    the command line's ``-I`` paths, the ``proto_paths`` of the workspace holding ``path``, then the
    well-known types (``google/protobuf/timestamp.proto``, ...) and googleapis' common protos
    (``google/api/annotations.proto``, ``google/type/money.proto``, ...), which are always available::

        fds = compile_proto(Path("contracts/orders/1.0.0/orders.proto"))
        fds.file[-1].package  # 'shop.orders.v1' -- the requested file comes last

    Raises :class:`~subhive.errors.InputError` for a missing, binary or non-UTF-8 file and
    :class:`~subhive.errors.ContractInvalid` with one problem per protoc diagnostic: ``proto.import_not_found``
    (naming the import, the importing file and line, and every root searched) or ``proto.compile``.
    """
    return descriptor_pb2.FileDescriptorSet.FromString(compile_proto_bytes(path, include_dirs=include_dirs))


def compile_proto_bytes(path: str | Path, *, include_dirs: Sequence[str | Path] = ()) -> bytes:
    """Like :func:`compile_proto`, but return the serialized set (the form that is cached)."""
    source = Path(path)
    _check_source(source)
    roots = _roots(source, include_dirs)
    key = (str(source.resolve()), *(str(r) for r in roots.all))
    with _CACHE_LOCK:
        entry = _cache.get(key)
        if entry is not None and _still_fresh(entry):
            _cache.move_to_end(key)
            return entry.data
    data = _run_protoc(source, roots)
    entry = _Entry(roots, _sources_of(data, roots), data)
    with _CACHE_LOCK:
        _cache[key] = entry
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return data


def _check_source(path: Path) -> None:
    where = Location(file=str(path))
    raw = read_source(path, split_hint="split it into files joined by imports")
    if b"\x00" in raw:
        raise InputError(
            "file is binary, not protobuf source text",
            code="input.binary",
            location=where,
            hint="pass the .proto source, not a compiled descriptor",
        )
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError(
            f"not valid UTF-8 (byte {exc.start})",
            code="input.encoding",
            location=Location(file=str(path), line=line),
            hint="save the file as UTF-8",
        ) from exc


def proto_roots(source: str | Path, include_dirs: Sequence[str | Path] = ()) -> tuple[Path, ...]:
    """Every import root :func:`compile_proto` searches for ``source``, in order (codegen passes the same)."""
    return _roots(Path(source), include_dirs).all


def _roots(source: Path, include_dirs: Sequence[str | Path]) -> _Roots:
    explicit = check_include_dirs(include_dirs, hint="pass existing directories as include_dirs")
    roots: list[Path] = []
    for root in (*explicit, *command_line_paths(), *workspace_proto_settings(source).proto_paths):
        if root not in roots:
            roots.append(root)
    home = source.resolve().parent
    # The file must lie under exactly the root protoc names it by; its own directory comes first otherwise.
    if not any(home == r or home.is_relative_to(r) for r in roots):
        roots.insert(0, home)
    return _Roots(tuple(roots), bundled_roots())


def _run_protoc(source: Path, roots: _Roots) -> bytes:
    """Run protoc in-process: a subprocess costs ~60 ms of interpreter start-up per file, in-process ~3 ms.

    protoc writes its diagnostics to fd 2, so while it runs fd 2 points at a temporary file under a lock; the
    price is that another thread's stderr output during those milliseconds lands in that file too.
    """
    with tempfile.TemporaryDirectory(prefix="subhive-protoc-") as tmp:
        out = Path(tmp) / "set.pb"
        errors = Path(tmp) / "stderr.txt"
        argv = [
            "protoc",
            *(f"--proto_path={r}" for r in roots.all),
            f"--descriptor_set_out={out}",
            "--include_imports",
            "--include_source_info",
            str(source.resolve()),
        ]
        with _PROTOC_LOCK:
            status = _main_capturing_stderr(argv, errors)
        diagnostics = errors.read_text("utf-8", errors="replace")
        if status != 0 or not out.exists():
            raise ContractInvalid(_problems(diagnostics, source, roots), summary=f"{source.name} does not compile")
        return out.read_bytes()


def _main_capturing_stderr(argv: list[str], errors: Path) -> int:
    sys.stderr.flush()  # whatever Python buffered for stderr must not end up in protoc's capture
    saved = os.dup(2)
    with errors.open("wb") as sink:
        os.dup2(sink.fileno(), 2)
        try:
            return int(protoc.main(argv))
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def _problems(diagnostics: str, source: Path, roots: _Roots) -> list[Problem]:
    problems: list[Problem] = []
    resolved = str(source.resolve())
    parsed = [m for raw in diagnostics.splitlines() if (m := _DIAGNOSTIC.match(raw.strip()))]
    missing = {
        found["name"]
        for m in parsed
        if (found := _MISSING_IMPORT.match(m["message"])) and _resolve(found["name"], roots.all) is None
    }
    for match in parsed:
        name, line, message = match["file"], match["line"], match["message"]
        if message.startswith("warning:") or (name in missing and _FILE_NOT_FOUND.match(message)):
            continue  # protoc's "x.proto: File not found." repeats what the importing line says, with less
        file = str(source) if name == resolved else _physical(name, roots.all)
        where = Location(file=file, line=int(line) if line else None)
        imported = _MISSING_IMPORT.match(message)
        if imported and imported["name"] in missing:
            problems.append(_missing_import(imported["name"], file, where, roots))
            continue
        problems.append(Problem("proto.compile", message, where, hint=_hint(message, roots)))
    if not problems:  # protoc failed without a diagnostic we understand: keep its words
        text = diagnostics.strip() or "protoc failed without a message"
        problems.append(Problem("proto.compile", text, Location(file=str(source))))
    return problems


def _missing_import(name: str, importer: str, where: Location, roots: _Roots) -> Problem:
    google = name.startswith("google/") and not name.startswith("google/protobuf/")
    bundled = (
        " googleapis' common protos (google/api, google/type, google/rpc, google/longrunning, ...) ship with "
        "subhive; other googleapis files come from a googleapis checkout."
        if google
        else ""
    )
    return Problem(
        "proto.import_not_found",
        f'import "{name}" of {Path(importer).name} was not found; searched, in order: {roots.describe()}',
        where,
        hint=f"add the directory that holds {name} with -I/--proto-path, or to proto_paths in hive.toml's "
        f"[protobuf] table (docs/contracts.md#protobuf-imports-and-rule-categories).{bundled}",
    )


def _physical(name: str, roots: tuple[Path, ...]) -> str:
    """The real file behind protoc's virtual name, so an error points at a file the user can open."""
    for root in roots:
        candidate = root / name
        if candidate.is_file():
            return str(candidate)
    return name


def _hint(message: str, roots: _Roots) -> str | None:
    if "File not found" in message or "was not found" in message:
        return f"imports are resolved under: {roots.describe()}"
    if "is not defined" in message:
        return "import the file that defines it, and use its full name if it is in another package"
    return None


def _sources_of(data: bytes, roots: _Roots) -> tuple[tuple[str, int, str], ...]:
    fds = descriptor_pb2.FileDescriptorSet.FromString(data)
    sources: list[tuple[str, int, str]] = []
    for file in fds.file:
        index = _resolve(file.name, roots.user)
        if index is not None:
            sources.append((file.name, index, _sha256(roots.user[index] / file.name)))
    return tuple(sources)


def _resolve(name: str, roots: tuple[Path, ...]) -> int | None:
    """Which of ``roots`` protoc finds ``name`` under (the first that has it), None if none has it.

    For the cache only the user's roots are looked at: the bundled files never change within a process.
    """
    for index, root in enumerate(roots):
        if (root / name).is_file():
            return index
    return None


def _still_fresh(entry: _Entry) -> bool:
    # Fresh when every input still resolves to the same root (no new file shadows it) with the same content.
    try:
        return all(
            _resolve(name, entry.roots.user) == index and _sha256(entry.roots.user[index] / name) == digest
            for name, index, digest in entry.sources
        )
    except OSError:
        return False


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
