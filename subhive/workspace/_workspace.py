"""Workspaces: finding the root (the nearest ``hive.toml`` upwards), reading it, and the tree of sub-hives,
which is their manifests' ``parent`` fields. See docs/workspace.md.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._id_roots import read_schemas_table
from ..compat.proto_settings import DEFAULT_BREAKING, BreakingRules, read_protobuf_table
from ..errors import InputError, Location, Problem
from ._grpc import GrpcSettings
from ._limits import DeadLetterLimits
from ._manifest import MANIFEST_NAME, ROOT_HIVE, ManifestInvalid, SubhiveManifest, parse_manifest
from ._nats import NatsSettings
from ._toml import TomlDocument, read_toml, toml_string
from ._up import UpSettings

__all__ = [
    "WORKSPACE_FILE",
    "HiveTree",
    "Workspace",
    "WorkspaceConfig",
    "find_root",
    "open_workspace",
    "read_config",
    "workspace_name_for",
]

WORKSPACE_FILE = "hive.toml"
#: The version of the workspace layout this subhive reads and writes.
WORKSPACE_FORMAT = 1
#: Workspace names may end up in NATS account, stream and bucket names: one subject token.
WORKSPACE_NAME_RE = re.compile(r"[a-z][a-z0-9_-]{0,62}\Z")
_TOP_KEYS = ("workspace", "dead_letters", "protobuf", "nats", "up", "grpc", "schemas")
_WORKSPACE_KEYS = ("name", "format", "description")


@dataclass(frozen=True, slots=True)
class WorkspaceConfig:
    """What ``hive.toml`` says: ``WorkspaceConfig(name="shop")``."""

    name: str
    format: int = WORKSPACE_FORMAT
    description: str = ""
    #: The default limits of every hive's dead-letter stream (``[dead_letters]``; a hive may override them).
    dead_letters: DeadLetterLimits = field(default_factory=DeadLetterLimits)
    #: ``[protobuf] proto_paths``: import roots for every ``.proto`` compiled here, relative to the root.
    proto_paths: tuple[str, ...] = ()
    #: ``[protobuf] breaking``: the rule category protobuf changes are judged under (docs/contracts.md).
    breaking: BreakingRules = DEFAULT_BREAKING
    #: ``[nats]``: one embedded server or a local cluster, and its durability (docs/cluster.md).
    nats: NatsSettings = field(default_factory=NatsSettings)
    #: ``[up]``: how many hives share a process (docs/up.md#large-trees).
    up: UpSettings = field(default_factory=UpSettings)
    #: ``[grpc]``: where the root's and the hives' gRPC servers listen, and their TLS (docs/cluster.md).
    grpc: GrpcSettings = field(default_factory=GrpcSettings)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not WORKSPACE_NAME_RE.match(self.name):
            raise ValueError(
                f"{self.name!r} is not a workspace name (lower-case letters, digits, '_' and '-', "
                "starting with a letter, at most 63 characters)"
            )

    def to_toml(self) -> str:
        """The ``hive.toml`` text; :func:`read_config` reads it back equal."""
        text = (
            "# A subhive workspace: contracts/, subhives/, stubs/ and the git-ignored .subhive/ (docs/workspace.md).\n"
            "[workspace]\n"
            f"name = {toml_string(self.name)}\n"
            f"description = {toml_string(self.description)}\n"
            "# The layout version of this workspace; a newer subhive migrates it, an older one refuses it.\n"
            f"format = {self.format}\n"
        )
        return (
            text
            + (f"\n{self.dead_letters.to_toml()}" if self.dead_letters.is_set else "")
            + self._protobuf_toml()
            + (f"\n{self.nats.to_toml()}" if self.nats.is_set else "")
            + (f"\n{self.up.to_toml()}" if self.up.is_set else "")
            + (f"\n{self.grpc.to_toml()}" if self.grpc.is_set else "")
        )

    def _protobuf_toml(self) -> str:
        if not self.proto_paths and self.breaking is DEFAULT_BREAKING:
            return ""
        paths = ", ".join(toml_string(p) for p in self.proto_paths)
        return f"\n[protobuf]\nproto_paths = [{paths}]\nbreaking = {toml_string(self.breaking.value)}\n"


@dataclass(frozen=True, slots=True)
class HiveTree:
    """Every sub-hive of a workspace whose manifest is valid, and what is wrong with the others."""

    hives: Mapping[str, SubhiveManifest]
    problems: tuple[Problem, ...] = ()
    #: Directories under ``subhives/`` (valid or not), by name: a name is taken even if its manifest is broken.
    directories: frozenset[str] = frozenset()
    #: Problems per hive directory, to explain why a hive someone names is unusable.
    problems_by_hive: Mapping[str, tuple[Problem, ...]] = field(default_factory=dict)

    def children(self, name: str) -> list[str]:
        """Direct children of ``name`` (``"root"`` for the top level), sorted."""
        return sorted(h.name for h in self.hives.values() if h.parent == name)

    def providers(self) -> dict[str, str]:
        """Contract name -> the hive that provides it."""
        return {contract: h.name for h in self.hives.values() for contract in h.provides}

    def error(self) -> ManifestInvalid | None:
        """Every problem of every manifest as one error (None when all are valid): what ``status``, ``codegen``,
        ``up`` and ``contract lint`` report, so that a hive with a broken manifest never silently disappears."""
        if not self.problems:
            return None
        broken = sorted(self.problems_by_hive)
        count = len(self.problems)
        return ManifestInvalid(
            self.problems,
            summary=f"{count} problem{'s' if count != 1 else ''} in the "
            f"manifests of {', '.join(broken)}: {self.problems[0].message}"
            + (" (and more below)" if count > 1 else ""),
        )


@dataclass(frozen=True, slots=True)
class Workspace:
    """An opened workspace: its root directory and its ``hive.toml``."""

    root: Path
    config: WorkspaceConfig

    @property
    def manifest_path(self) -> Path:
        return self.root / WORKSPACE_FILE

    @property
    def contracts_dir(self) -> Path:
        return self.root / "contracts"

    @property
    def hives_dir(self) -> Path:
        return self.root / "subhives"

    @property
    def stubs_dir(self) -> Path:
        return self.root / "stubs"

    @property
    def state_dir(self) -> Path:
        """Runtime state (JetStream store, logs): never committed."""
        return self.root / ".subhive"

    def hive_dir(self, name: str) -> Path:
        return self.hives_dir / name

    def hives(self) -> HiveTree:
        """Read every ``subhives/<name>/subhive.toml`` and check the tree they form."""
        return _load_tree(self.hives_dir)


def find_root(start: str | Path = ".") -> Path:
    """The nearest directory at or above ``start`` holding ``hive.toml``: ``find_root("shop/subhives/db")``.

    Raises :class:`InputError` (``workspace.not_found``) naming the directory searched and saying to run
    ``subhive init``.
    """
    origin = Path(os.path.abspath(start))
    if not origin.exists():
        raise InputError(
            f"no such directory: {origin}",
            code="input.not_found",
            location=Location(file=str(origin)),
            hint="name a directory inside the workspace (it is resolved from the current directory)",
        )
    current = origin
    while True:
        if (current / WORKSPACE_FILE).is_file():
            return current
        if current.parent == current:
            break
        current = current.parent
    raise InputError(
        f"not inside a subhive workspace: no {WORKSPACE_FILE} in {origin} or any directory above it",
        code="workspace.not_found",
        location=Location(file=str(origin)),
        hint="run `subhive init` to make a workspace here (or `subhive init DIR`), or cd into one",
    )


def open_workspace(start: str | Path = ".") -> Workspace:
    """Find the workspace at or above ``start`` and read its ``hive.toml``: ``open_workspace().config.name``."""
    root = find_root(start)
    return Workspace(root, read_config(root / WORKSPACE_FILE))


def read_config(path: Path) -> WorkspaceConfig:
    """Read and validate ``hive.toml``: ``read_config(Path("shop/hive.toml")).name``.

    Raises :class:`InputError` when the file cannot be read or parsed, :class:`ManifestInvalid` listing every
    problem otherwise.
    """
    document = read_toml(path)
    problems: list[Problem] = []
    config = _config(document, problems)
    if problems or config is None:
        raise ManifestInvalid(
            problems,
            summary=f"{path} is not a valid workspace file: "
            + (problems[0].message if len(problems) == 1 else f"{len(problems)} problems"),
        )
    return config


def workspace_name_for(directory: Path) -> str | None:
    """A workspace name derived from a directory's name (``My Shop`` -> ``my-shop``), or None if none fits."""
    name = re.sub(r"[^a-z0-9_-]+", "-", directory.name.lower()).strip("-_")
    name = re.sub(r"^[^a-z]+", "", name)[:63].rstrip("-_")
    return name if WORKSPACE_NAME_RE.match(name) else None


def _config(document: TomlDocument, problems: list[Problem]) -> WorkspaceConfig | None:
    def problem(pointer: str, code: str, message: str, hint: str) -> None:
        problems.append(Problem(code, message, document.location(pointer), hint))

    data = document.data
    for key in data:
        if key not in _TOP_KEYS:
            close = difflib.get_close_matches(key, _TOP_KEYS, n=1)
            problem(
                f"/{key}",
                "workspace.unknown_key",
                f"unknown key {key!r}",
                f"did you mean [{close[0]}]?"
                if close
                else "hive.toml holds a [workspace] table and optional [dead_letters], [protobuf], [nats], [up], "
                "[grpc] and [schemas] tables (docs/workspace.md)",
            )
    dead_letters = _dead_letters(data.get("dead_letters", {}), problem)
    nats = NatsSettings.read(data.get("nats", {}), "/nats", problem)
    up = UpSettings.read(data.get("up", {}), "/up", problem)
    grpc = GrpcSettings.read(data.get("grpc", {}), "/grpc", problem)
    protobuf = read_protobuf_table(data.get("protobuf", {}), document.path.parent, problem)
    # [schemas] id_roots: checked here; subhive.contract reads it where $refs are resolved (decision 0107).
    read_schemas_table(data.get("schemas", {}), document.path.parent, problem)
    raw_paths = data.get("protobuf", {}).get("proto_paths", []) if isinstance(data.get("protobuf"), dict) else []
    table = data.get("workspace")
    if not isinstance(table, dict):
        problem(
            "",
            "workspace.missing_key",
            "hive.toml has no [workspace] table",
            '[workspace] with name = "<workspace>" and format = 1 (docs/workspace.md)',
        )
        return None
    for key in table:
        if key not in _WORKSPACE_KEYS:
            close = difflib.get_close_matches(key, _WORKSPACE_KEYS, n=1)
            problem(
                f"/workspace/{key}",
                "workspace.unknown_key",
                f"unknown key {key!r}",
                f"did you mean {close[0]!r}?" if close else f"allowed: {', '.join(_WORKSPACE_KEYS)}",
            )
    name = _workspace_name(table, problem)
    fmt = table.get("format", WORKSPACE_FORMAT)
    if isinstance(fmt, bool) or not isinstance(fmt, int):
        problem(
            "/workspace/format",
            "workspace.format",
            f"format must be an integer, not {fmt!r}",
            f"format = {WORKSPACE_FORMAT}",
        )
    elif fmt != WORKSPACE_FORMAT:
        hint = (
            "this workspace was made by a newer subhive: upgrade subhive"
            if fmt > WORKSPACE_FORMAT
            else f"format = {WORKSPACE_FORMAT}"
        )
        problem(
            "/workspace/format",
            "workspace.format",
            f"workspace format {fmt} is not supported (this subhive reads format {WORKSPACE_FORMAT})",
            hint,
        )
    description = table.get("description", "")
    if not isinstance(description, str):
        problem("/workspace/description", "workspace.type", "description must be a string", "quote it")
    if problems or name is None:
        return None
    return WorkspaceConfig(
        name, WORKSPACE_FORMAT, str(description), dead_letters, tuple(raw_paths), protobuf.breaking, nats, up, grpc
    )


def _dead_letters(table: object, problem: Callable[[str, str, str, str], None]) -> DeadLetterLimits:
    if not isinstance(table, dict):
        problem(
            "/dead_letters",
            "workspace.type",
            "dead_letters must be a table",
            'write it as a [dead_letters] section: max_bytes = "64MiB", max_age = "7d"',
        )
        return DeadLetterLimits()
    return DeadLetterLimits.read(table, "/dead_letters", problem)


def _workspace_name(table: dict[str, Any], problem: Callable[[str, str, str, str], None]) -> str | None:
    name = table.get("name")
    if name is None:
        problem("/workspace", "workspace.missing_key", "[workspace] has no 'name'", 'add name = "<workspace>"')
        return None
    if not isinstance(name, str) or not WORKSPACE_NAME_RE.match(name):
        problem(
            "/workspace/name",
            "workspace.name_invalid",
            f"{name!r} is not a valid workspace name",
            "workspace names become NATS names: lower-case letters, digits, '_' and '-', starting with a "
            "letter, at most 63 characters",
        )
        return None
    return name


# --- the tree of sub-hives -------------------------------------------------------------------------------


def _load_tree(hives_dir: Path) -> HiveTree:
    documents: dict[str, TomlDocument] = {}
    manifests: dict[str, SubhiveManifest] = {}
    per_hive: dict[str, list[Problem]] = {}
    directories: set[str] = set()
    try:
        entries = sorted(p for p in hives_dir.iterdir() if p.is_dir() and not p.name.startswith("."))
    except FileNotFoundError:
        entries = []
    for directory in entries:
        directories.add(directory.name)
        manifest_path = directory / MANIFEST_NAME
        if not manifest_path.is_file():
            per_hive[directory.name] = [
                Problem(
                    "hive.no_manifest",
                    f"{directory} has no {MANIFEST_NAME}",
                    Location(file=str(directory)),
                    "scaffold sub-hives with `subhive new NAME --kind ...`, or remove the directory",
                )
            ]
            continue
        try:
            documents[directory.name] = read_toml(manifest_path)
            manifests[directory.name] = parse_manifest(documents[directory.name])
        except InputError as exc:
            per_hive[directory.name] = list(exc.problems)
    _check_tree(manifests, documents, per_hive)
    valid = {name: m for name, m in manifests.items() if name not in per_hive}
    problems = tuple(p for name in sorted(per_hive) for p in per_hive[name])
    return HiveTree(valid, problems, frozenset(directories), {k: tuple(v) for k, v in per_hive.items()})


def _check_tree(
    manifests: dict[str, SubhiveManifest], documents: dict[str, TomlDocument], per_hive: dict[str, list[Problem]]
) -> None:
    """Unknown parents, parent cycles and contracts with two providers, reported on the hives concerned."""

    def add(name: str, pointer: str, code: str, message: str, hint: str) -> None:
        per_hive.setdefault(name, []).append(Problem(code, message, documents[name].location(pointer), hint))

    for name, manifest in sorted(manifests.items()):
        if manifest.parent != ROOT_HIVE and manifest.parent not in manifests:
            add(
                name,
                "/parent",
                "hive.parent_unknown",
                f"parent {manifest.parent!r} is not a sub-hive of this workspace",
                _parent_hint(manifest.parent, manifests),
            )
        elif _in_cycle(name, manifests):
            add(
                name,
                "/parent",
                "hive.parent_cycle",
                f"hive {name!r} is its own ancestor",
                "the hives form a tree: follow the parents up to 'root' and break the loop",
            )
    seen: dict[str, str] = {}
    for name, manifest in sorted(manifests.items()):
        for contract in manifest.provides:
            if contract in seen:
                add(
                    name,
                    "/provides",
                    "hive.provides_conflict",
                    f"contract {contract!r} is also provided by hive {seen[contract]!r}",
                    "a contract has exactly one provider; consume it instead",
                )
            else:
                seen[contract] = name
    # A hive below an invalid one has no path to the root: report it too, so the valid hives form a tree.
    changed = True
    while changed:
        changed = False
        for name, manifest in sorted(manifests.items()):
            if name not in per_hive and manifest.parent != ROOT_HIVE and manifest.parent in per_hive:
                add(
                    name,
                    "/parent",
                    "hive.parent_invalid",
                    f"parent {manifest.parent!r} has an invalid manifest",
                    f"fix subhives/{manifest.parent}/{MANIFEST_NAME} first",
                )
                changed = True


def _in_cycle(name: str, manifests: dict[str, SubhiveManifest]) -> bool:
    """Whether following parents up from ``name`` comes back to ``name`` (a loop above it is not its own)."""
    seen: set[str] = set()
    current = manifests[name].parent
    while current != ROOT_HIVE and current in manifests and current not in seen:
        if current == name:
            return True
        seen.add(current)
        current = manifests[current].parent
    return False


def _parent_hint(parent: str, known: Mapping[str, object]) -> str:
    close = difflib.get_close_matches(parent, list(known), n=1)
    if close:
        return f"did you mean {close[0]!r}?"
    listing = ", ".join(sorted(known)) if known else "none yet"
    return f"name an existing sub-hive (this workspace has: {listing}) or 'root'"
