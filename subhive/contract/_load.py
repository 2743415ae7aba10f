"""Reading ``contract.yaml``: every manifest rule, with every problem collected (not just the first).
The rules are in docs/contracts.md; the problem codes in docs/lint.md#manifest-contractyaml.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from .._source import SourceDocument, join_pointer, parse_document
from ..errors import InputError, Location, Problem
from ..semver import Version
from ._files import FileSource
from ._model import Contract, Event, GrpcSpec, Operation, SchemaRef
from ._refs import SchemaDocuments, locate

__all__ = ["MANIFEST_NAME", "ManifestDraft", "contract_directory", "read_manifest"]

MANIFEST_NAME = "contract.yaml"
SCHEMA_SUFFIXES = frozenset({".json", ".yaml", ".yml"})

#: Contract and provider names: one NATS subject token each, also a directory name and part of user names.
NAME_RE = re.compile(r"[a-z][a-z0-9_-]*\Z")
#: Operation and event names: a subject token too, and a method name in generated Python code (no "-").
MEMBER_RE = re.compile(r"[a-z][a-z0-9_]*\Z")
MAX_NAME_LENGTH = 63
SERVICE_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
_VERSION_LIKE = re.compile(r"v?\d+(\.\d+)*([-+].*)?\Z")

_TOP_KEYS = ("contract", "version", "provider", "description", "operations", "events", "grpc")
_OPERATION_KEYS = ("description", "input", "output", "idempotent")
_EVENT_KEYS = ("description", "payload")
_GRPC_KEYS = ("proto", "service")

_NAME_WHY = {
    "contract": "contract names become NATS subject tokens, directory names and parts of NATS user names",
    "provider hive": "hive names become NATS subject tokens, directory names and parts of NATS user names",
    "operation": "operation names become NATS subject tokens and method names in generated code (so no '-')",
    "event": "event names become NATS subject tokens and method names in generated code (so no '-')",
}
_NAME_ALLOWED = "lower-case letters, digits, '_' and '-'"
_MEMBER_ALLOWED = "lower-case letters, digits and '_'"


def contract_directory(path: str | Path) -> Path:
    """The contract directory for ``path`` (a directory or its ``contract.yaml``).

    Raises :class:`InputError` when the path does not exist or is a file other than a manifest.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(
            "no such file or directory",
            code="input.not_found",
            location=Location(file=str(path)),
            hint="check the path; it is resolved from the current directory",
        )
    if path.is_dir():
        return path
    if path.name == MANIFEST_NAME:
        return path.parent
    raise InputError(
        f"not a contract: expected a directory or its {MANIFEST_NAME}",
        code="contract.not_a_manifest",
        location=Location(file=str(path)),
        hint="pass the contract directory, e.g. contracts/orders/1.0.0 (use `subhive contract lint` "
        "for single schema or .proto files)",
    )


@dataclass(slots=True)
class ManifestDraft:
    """What a manifest says, as far as it is well-formed, and what is wrong with it.

    Lint goes on to check the schemas and ``.proto`` of the well-formed parts, so one run reports everything;
    only a draft without problems becomes a :class:`~subhive.contract.Contract`.
    """

    directory: Path
    documents: SchemaDocuments
    manifest: SourceDocument | None = None
    name: str | None = None
    version: Version | None = None
    provider: str | None = None
    description: str = ""
    operations: dict[str, Operation] = field(default_factory=dict)
    events: dict[str, Event] = field(default_factory=dict)
    grpc: GrpcSpec | None = None
    #: Every well-formed schema reference with the manifest pointer that names it.
    schema_refs: list[tuple[SchemaRef, str]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    #: What each path text the manifest names came to (several schema references often name one file).
    checked_files: dict[tuple[str, frozenset[str]], tuple[Path, tuple[str, str, str] | None]] = field(
        default_factory=dict
    )

    def problem(self, pointer: str, code: str, message: str, hint: str | None = None) -> None:
        where = locate(self.manifest, pointer) if self.manifest else Location(file=str(self.manifest_path))
        self.problems.append(Problem(code, message, where, hint))

    @property
    def manifest_path(self) -> Path:
        return self.directory / MANIFEST_NAME

    def contract(self) -> Contract | None:
        """The contract, if the manifest had no problems."""
        if self.problems or self.name is None or self.version is None or self.provider is None:
            return None
        return Contract(
            self.name,
            self.version,
            self.provider,
            self.description,
            self.directory,
            dict(self.operations),
            dict(self.events),
            self.grpc,
            self.manifest,
        )


def read_manifest(directory: Path, documents: SchemaDocuments) -> ManifestDraft:
    """Read and check ``directory/contract.yaml``; never raises for bad input (see ``draft.problems``).

    Files are read through ``documents.files`` (the directory on disk, or a map of files standing for it).
    """
    draft = ManifestDraft(directory, documents)
    if not documents.files.is_file(draft.manifest_path):
        draft.problem(
            "",
            "contract.no_manifest",
            f"{directory} has no {MANIFEST_NAME}",
            f"a contract directory holds a {MANIFEST_NAME} naming its operations, events and gRPC "
            "service; see docs/contracts.md",
        )
        return draft
    try:
        draft.manifest = parse_document(documents.files.read(draft.manifest_path), draft.manifest_path)
    except InputError as exc:
        draft.problems.extend(exc.problems)
        return draft
    data = draft.manifest.data
    if not isinstance(data, dict):
        draft.problem(
            "",
            "manifest.not_mapping",
            f"the manifest is a {_kind(data)}, not a mapping",
            "start with 'contract: <name>', 'version: <x.y.z>', 'provider: <hive>' (docs/contracts.md)",
        )
        return draft
    _unknown_keys(draft, data, "", _TOP_KEYS)
    draft.name = _name(draft, data, "contract", what="contract", regex=NAME_RE, allowed=_NAME_ALLOWED)
    draft.provider = _name(draft, data, "provider", what="provider hive", regex=NAME_RE, allowed=_NAME_ALLOWED)
    draft.version = _version(draft, data)
    draft.description = _description(draft, data, "")
    _operations(draft, data)
    _events(draft, data)
    _grpc(draft, data)
    if not any(data.get(k) for k in ("operations", "events", "grpc")) and not draft.problems:
        draft.problem(
            "",
            "manifest.empty",
            "the contract has no operations, events or grpc service",
            "add at least one operation, event or a grpc service",
        )
    return draft


# --- top-level fields ------------------------------------------------------------------------------------


def _kind(value: Any) -> str:
    names = {dict: "mapping", list: "list", str: "string", bool: "boolean", int: "number", float: "number"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _unknown_keys(draft: ManifestDraft, data: dict[Any, Any], pointer: str, known: tuple[str, ...]) -> None:
    for key in data:
        if key in known:
            continue
        close = difflib.get_close_matches(str(key), known, n=1)
        hint = f"did you mean {close[0]!r}?" if close else f"the keys allowed here are: {', '.join(known)}"
        draft.problem(join_pointer(pointer, str(key)), "manifest.unknown_key", f"unknown key {key!r}", hint)


def _required(draft: ManifestDraft, data: dict[Any, Any], pointer: str, key: str, what: str) -> Any:
    if key not in data:
        draft.problem(
            pointer,
            "manifest.missing_key",
            f"{what} has no {key!r}",
            f"add '{key}:' (docs/contracts.md shows a complete manifest)",
        )
        return None
    return data[key]


def _string(draft: ManifestDraft, value: Any, pointer: str, what: str) -> str | None:
    if isinstance(value, str):
        return value
    draft.problem(
        pointer,
        "manifest.type",
        f"{what} must be a string, not a {_kind(value)}",
        "quote the value if YAML read it as something else",
    )
    return None


def _name(
    draft: ManifestDraft, data: dict[Any, Any], key: str, *, what: str, regex: re.Pattern[str], allowed: str
) -> str | None:
    value = _required(draft, data, "", key, "the manifest")
    if value is None:
        return None
    text = _string(draft, value, f"/{key}", f"{key!r}")
    if text is not None and _valid_name(draft, text, f"/{key}", what=what, regex=regex, allowed=allowed):
        return text
    return None


def _valid_name(
    draft: ManifestDraft, text: str, pointer: str, *, what: str, regex: re.Pattern[str], allowed: str
) -> bool:
    if regex.match(text) and len(text) <= MAX_NAME_LENGTH:
        return True
    why = f"is too long for a {what} name" if regex.match(text) else f"is not a valid {what} name"
    draft.problem(pointer, "manifest.name_invalid", f"{text!r} {why}", _name_hint(what, allowed))
    return False


def _name_hint(what: str, allowed: str) -> str:
    return (
        f"{_NAME_WHY[what]}: a '.' would split the token, '*' and '>' are wildcards, spaces are not allowed, "
        f"and mixed case invites names that differ only by case; use {allowed}, starting with a letter, at "
        f"most {MAX_NAME_LENGTH} characters"
    )


def _version(draft: ManifestDraft, data: dict[Any, Any]) -> Version | None:
    value = _required(draft, data, "", "version", "the manifest")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str):
        draft.problem(
            "/version",
            "manifest.version_invalid",
            f"version {value!r} is a {_kind(value)}, not a semantic version",
            "write MAJOR.MINOR.PATCH, e.g. 1.0.0 (YAML reads 1.0 as a number)",
        )
        return None
    try:
        version = Version.parse(value)
    except ValueError as exc:
        draft.problem(
            "/version",
            "manifest.version_invalid",
            str(exc),
            "semver needs all three parts, MAJOR.MINOR.PATCH, without a 'v' (e.g. 1.0.0)",
        )
        return None
    dirname = Path(os.path.abspath(draft.directory)).name
    if _VERSION_LIKE.match(dirname) and dirname != value:
        draft.problem(
            "/version",
            "manifest.version_mismatch",
            f"version {value} does not match its directory name {dirname!r}",
            f"contracts live in contracts/<name>/<version>/: rename the directory to {value} or fix "
            "the version (a new version is a new directory; accepted ones are immutable)",
        )
    return version


def _description(draft: ManifestDraft, data: dict[Any, Any], pointer: str) -> str:
    if "description" not in data:
        return ""
    return _string(draft, data["description"], join_pointer(pointer, "description"), "'description'") or ""


def _mapping(draft: ManifestDraft, value: Any, pointer: str, what: str, example: str) -> dict[Any, Any] | None:
    if isinstance(value, dict):
        return value
    draft.problem(pointer, "manifest.type", f"{what} must be a mapping, not a {_kind(value)}", f"write it as {example}")
    return None


# --- operations, events, grpc ----------------------------------------------------------------------------


def _member_name(draft: ManifestDraft, key: Any, pointer: str, what: str) -> str | None:
    if not isinstance(key, str):
        draft.problem(
            pointer,
            "manifest.name_invalid",
            f"{what} name {key!r} is a {_kind(key)}, not a name",
            _name_hint(what, _MEMBER_ALLOWED),
        )
        return None
    valid = _valid_name(draft, key, pointer, what=what, regex=MEMBER_RE, allowed=_MEMBER_ALLOWED)
    return key if valid else None


def _operations(draft: ManifestDraft, data: dict[Any, Any]) -> None:
    if "operations" not in data:
        return
    ops = _mapping(
        draft,
        data["operations"],
        "/operations",
        "'operations'",
        "'operations: {place_order: {input: in.json, output: out.json}}'",
    )
    for key, body in (ops or {}).items():
        pointer = join_pointer("/operations", str(key))
        name = _member_name(draft, key, pointer, "operation")
        entry = _mapping(draft, body, pointer, f"operation {key!r}", "'input: <schema>' and 'output: <schema>'")
        if entry is None:
            continue
        _unknown_keys(draft, entry, pointer, _OPERATION_KEYS)
        description = _description(draft, entry, pointer)
        refs = [_schema_ref(draft, entry, pointer, k, f"operation {key!r}") for k in ("input", "output")]
        idempotent = entry.get("idempotent", False)
        if not isinstance(idempotent, bool):
            draft.problem(
                join_pointer(pointer, "idempotent"),
                "manifest.type",
                f"idempotent must be true or false, not a {_kind(idempotent)}",
                "idempotent: true promises that handling a request twice does what handling it once does",
            )
            idempotent = False
        if name is not None and refs[0] is not None and refs[1] is not None:
            draft.operations[name] = Operation(name, description, refs[0], refs[1], idempotent)


def _events(draft: ManifestDraft, data: dict[Any, Any]) -> None:
    if "events" not in data:
        return
    events = _mapping(draft, data["events"], "/events", "'events'", "'events: {order_placed: {payload: e.json}}'")
    for key, body in (events or {}).items():
        pointer = join_pointer("/events", str(key))
        name = _member_name(draft, key, pointer, "event")
        if isinstance(ops := data.get("operations"), dict) and key in ops:
            draft.problem(
                pointer,
                "manifest.duplicate_name",
                f"{key!r} is both an operation and an event",
                "operations and events share one namespace (their subjects and generated methods "
                "would collide); rename one of them",
            )
            name = None
        entry = _mapping(draft, body, pointer, f"event {key!r}", "'payload: <schema>'")
        if entry is None:
            continue
        _unknown_keys(draft, entry, pointer, _EVENT_KEYS)
        description = _description(draft, entry, pointer)
        payload = _schema_ref(draft, entry, pointer, "payload", f"event {key!r}")
        if name is not None and payload is not None:
            draft.events[name] = Event(name, description, payload)


def _grpc(draft: ManifestDraft, data: dict[Any, Any]) -> None:
    if "grpc" not in data:
        return
    entry = _mapping(draft, data["grpc"], "/grpc", "'grpc'", "'grpc: {proto: orders.proto, service: pkg.Orders}'")
    if entry is None:
        return
    _unknown_keys(draft, entry, "/grpc", _GRPC_KEYS)
    proto_text = _required(draft, entry, "/grpc", "proto", "'grpc'")
    service_raw = _required(draft, entry, "/grpc", "service", "'grpc'")
    proto = None
    if proto_text is not None and (text := _string(draft, proto_text, "/grpc/proto", "'proto'")) is not None:
        proto = _file(draft, text, "/grpc/proto", frozenset({".proto"}))
    service = None
    if (
        service_raw is not None
        and (service := _string(draft, service_raw, "/grpc/service", "'service'")) is not None
        and not SERVICE_RE.match(service)
    ):
        draft.problem(
            "/grpc/service",
            "manifest.name_invalid",
            f"{service!r} is not a fully qualified service name",
            "write the package and the service name as declared in the .proto, e.g. shop.orders.v1.Orders",
        )
        service = None
    if proto is not None and service is not None:
        draft.grpc = GrpcSpec(proto, service)


# --- file references -------------------------------------------------------------------------------------


def _schema_ref(draft: ManifestDraft, entry: dict[Any, Any], pointer: str, key: str, what: str) -> SchemaRef | None:
    value = _required(draft, entry, pointer, key, what)
    if value is None:
        return None
    pointer = join_pointer(pointer, key)
    text = _string(draft, value, pointer, f"{key!r}")
    if text is None:
        return None
    file_part, _, fragment = text.partition("#")
    if not file_part:
        draft.problem(
            pointer,
            "manifest.ref_invalid",
            f"{text!r} names no file",
            "a schema reference is a file relative to the contract directory, optionally followed by "
            "'#' and a JSON pointer: 'schemas.json#/$defs/Order'",
        )
        return None
    json_pointer = unquote(fragment)
    if json_pointer and not json_pointer.startswith("/"):
        draft.problem(
            pointer,
            "manifest.ref_invalid",
            f"{'#' + fragment!r} is not a JSON pointer",
            "after '#' write a JSON pointer starting with '/', e.g. 'schemas.json#/$defs/Order'",
        )
        return None
    path = _file(draft, file_part, pointer, SCHEMA_SUFFIXES)
    if path is None:
        return None
    ref = SchemaRef(path, json_pointer, draft.documents)
    draft.schema_refs.append((ref, pointer))
    return ref


def _file(draft: ManifestDraft, text: str, pointer: str, suffixes: frozenset[str]) -> Path | None:
    known = draft.checked_files.get((text, suffixes))
    if known is None:
        path = Path(os.path.normpath(draft.directory / text))
        known = path, _path_problem(draft.directory, text, path) or _file_problem(draft, text, path, suffixes)
        draft.checked_files[(text, suffixes)] = known
    path, wrong = known
    if wrong is None:
        return path
    code, message, hint = wrong
    draft.problem(pointer, code, message, hint)
    return None


def _path_problem(directory: Path, text: str, path: Path) -> tuple[str, str, str] | None:
    """What is wrong with the path a manifest names (code, message, hint), or None."""
    if len(_scheme(text)) > 1:
        return (
            "manifest.path_remote",
            f"{text!r} is a URL",
            "subhive never fetches schemas: put the file in the contract directory and name it by its relative path",
        )
    if os.path.isabs(text) or text.startswith("~"):
        return (
            "manifest.path_escape",
            f"{text!r} is an absolute path",
            "name files relative to the contract directory, so the contract means the same everywhere",
        )
    if not _below(os.path.abspath(directory), os.path.abspath(path)):
        return (
            "manifest.path_escape",
            f"{text!r} leaves the contract directory",
            "every file a contract uses lives inside its directory; copy shared schemas in",
        )
    return None


def _file_problem(draft: ManifestDraft, text: str, path: Path, suffixes: frozenset[str]) -> tuple[str, str, str] | None:
    """What is wrong with the file a (well-formed) manifest path names (code, message, hint), or None."""
    if path.suffix.lower() not in suffixes:
        return (
            "manifest.file_type",
            f"{text!r} is not a {' or '.join(sorted(suffixes))} file",
            "JSON Schema files end in .json, .yaml or .yml; protobuf files in .proto",
        )
    files = draft.documents.files
    if not files.exists(path):
        return (
            "manifest.file_missing",
            f"file {text!r} not found in {draft.directory}",
            _missing_hint(files, text, suffixes),
        )
    if not _below(str(files.real_directory), str(files.realpath(path))):
        return (
            "manifest.path_escape",
            f"{text!r} is a symbolic link leading out of the contract",
            "replace the link with a copy of the file: an accepted contract must not change when "
            "something outside it does",
        )
    if not files.is_file(path):
        return ("manifest.file_missing", f"{text!r} is not a regular file", "name a schema file, not a directory")
    return None


def _below(parent: str, child: str) -> bool:
    """``Path(parent) in Path(child).parents`` for normalised absolute paths, without building the Paths."""
    return child.startswith(parent if parent.endswith(os.sep) else parent + os.sep) and child != parent


def _scheme(text: str) -> str:
    try:
        return urlsplit(text).scheme
    except ValueError:  # "http://[x" and the like: a URL anyway
        return text.partition(":")[0] if ":" in text else ""


def _missing_hint(files: FileSource, text: str, suffixes: frozenset[str]) -> str:
    present = sorted(p for p in files.listing() if Path(p).suffix.lower() in suffixes)
    close = difflib.get_close_matches(text, present, n=1)
    if close:
        return f"did you mean {close[0]!r}? (paths are relative to the contract directory)"
    return "paths are relative to the contract directory" + (f"; it holds {', '.join(present[:5])}" if present else "")
