"""The sub-hive manifest, ``subhives/<name>/subhive.toml``: model, validation and rendering.
Reading reports every problem of a manifest at once, each located. See docs/workspace.md#subhivetoml.
"""

from __future__ import annotations

import difflib
import keyword
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path, PurePosixPath
from typing import Any

from .._source import join_pointer
from ..errors import InputError, Location, Problem
from ._agents import AgentSpec, read_agents
from ._checks import MemorySpec, QuorumSpec, ReviewSpec, read_memory, read_quorum, read_review
from ._limits import DeadLetterLimits
from ._ranges import VersionRange
from ._toml import TomlDocument, read_toml, toml_key, toml_string

__all__ = [
    "MANIFEST_NAME",
    "ROOT_HIVE",
    "Budgets",
    "Kind",
    "ManifestInvalid",
    "Requirement",
    "SubhiveManifest",
    "check_hive_name",
    "load_manifest",
    "parse_manifest",
]

MANIFEST_NAME = "subhive.toml"
#: The root hive: the parent of every top-level sub-hive, so no sub-hive may take its name.
ROOT_HIVE = "root"
HIVE_NAME_RE = re.compile(r"[a-z][a-z0-9_]*\Z")
#: Hive names are embedded in longer derived names (contracts ``<hive>_storage``, NATS users, key-value
#: buckets, the ``<hive>_hive`` package), so they stay well below the 63 characters of a contract name.
MAX_HIVE_NAME = 32
#: Same rule as a contract's name in contract.yaml (docs/contracts.md).
CONTRACT_NAME_RE = re.compile(r"[a-z][a-z0-9_-]{0,62}\Z")
_SOURCES_RE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*\Z")
_TOP_KEYS = (
    "name",
    "kind",
    "parent",
    "description",
    "provides",
    "consumes",
    "budgets",
    "blackboard",
    "knowledge",
    "dead_letters",
    "agents",
    "review",
    "quorum",
    "memory",
)
_BUDGET_KEYS = ("max_files", "max_bytes")
_BLACKBOARD_KEYS = ("schema",)
_KNOWLEDGE_KEYS = ("sources",)


class Kind(StrEnum):
    """What a sub-hive does; each kind starts with its own defaults (docs/workspace.md)."""

    ui = "ui"
    backend = "backend"
    db = "db"
    custom = "custom"


class ManifestInvalid(InputError):
    """A sub-hive manifest (or the tree of them) is not valid; ``problems`` lists every finding."""

    default_code = "hive.manifest_invalid"

    def __init__(self, problems: Iterable[Problem], *, summary: str | None = None) -> None:
        self._problems = tuple(problems)
        if not self._problems:
            raise ValueError("ManifestInvalid needs at least one problem")
        first = self._problems[0]
        count = len(self._problems)
        super().__init__(
            summary or (first.message if count == 1 else f"{count} problems, first: {first.message}"),
            code=first.code if count == 1 else None,
            location=first.location,
            hint=first.hint,
        )

    @property
    def problems(self) -> tuple[Problem, ...]:
        return self._problems

    def __iter__(self) -> Iterator[Problem]:
        return iter(self._problems)


@dataclass(frozen=True, slots=True)
class Budgets:
    """How big a leaf sub-hive may grow before decomposition splits it."""

    max_files: int = 200
    max_bytes: int = 2_000_000


@dataclass(frozen=True, slots=True)
class Requirement:
    """A contract a hive consumes and the versions it accepts: ``Requirement("orders", VersionRange.parse("^1.2"))``."""

    contract: str
    versions: VersionRange


@dataclass(frozen=True, slots=True)
class SubhiveManifest:
    """What ``subhive.toml`` says. Build it from a file with :func:`load_manifest`."""

    name: str
    kind: Kind
    parent: str = ROOT_HIVE
    description: str = ""
    provides: tuple[str, ...] = ()
    consumes: tuple[Requirement, ...] = ()
    budgets: Budgets = field(default_factory=Budgets)
    #: The blackboard's JSON Schema, relative to the hive's directory.
    blackboard_schema: str = "blackboard.schema.json"
    #: ``module:attribute`` naming the hive's knowledge sources (a sequence of them); default
    #: ``<name>_hive.knowledge:SOURCES``.
    knowledge_sources: str = ""
    #: This hive's own dead-letter limits; what it leaves unset comes from hive.toml.
    dead_letters: DeadLetterLimits = field(default_factory=DeadLetterLimits)
    #: Language-model agents, ``[agents.NAME]`` (read in _agents.py; docs/agents.md).
    agents: tuple[AgentSpec, ...] = ()
    #: ``[review]``, ``[quorum]``, ``[memory]``: how the agents check each other (_checks.py; docs/agents.md).
    review: ReviewSpec | None = None
    quorum: QuorumSpec | None = None
    memory: MemorySpec = field(default_factory=MemorySpec)

    def __post_init__(self) -> None:
        if not self.knowledge_sources:
            object.__setattr__(self, "knowledge_sources", default_sources(self.name))

    @property
    def package(self) -> str:
        """The Python package holding the hive's own code: ``<name>_hive`` (never shadows a stdlib module)."""
        return f"{self.name}_hive"

    def requirement(self, contract: str) -> Requirement | None:
        return next((r for r in self.consumes if r.contract == contract), None)

    def to_toml(self) -> str:
        """The manifest as ``subhive.toml`` text, with comments; :func:`parse_manifest` reads it back equal."""
        consumes = "".join(f"{toml_key(r.contract)} = {toml_string(r.versions.text)}\n" for r in self.consumes)
        provides = ", ".join(toml_string(p) for p in self.provides)
        return (
            (
                f"# Sub-hive {self.name!r}: what it is, what it serves and what it needs (docs/workspace.md).\n"
                f"name = {toml_string(self.name)}\n"
                f"kind = {toml_string(self.kind.value)}\n"
                f"# The hive above this one: {ROOT_HIVE!r} (the root hive) or another sub-hive's name.\n"
                f"parent = {toml_string(self.parent)}\n"
                f"description = {toml_string(self.description)}\n"
                "\n"
                "# Contracts this hive serves (contracts/<name>/<version>/); a contract has one provider.\n"
                f"provides = [{provides}]\n"
                "\n"
                '# Contracts this hive needs, with the versions it accepts: "^1.2", "~1.2.3",\n'
                '# ">=1.0.0,<2.0.0" or an exact "1.2.3". Negotiation satisfies them; they may not exist yet.\n'
                "[consumes]\n"
                f"{consumes}"
                "\n"
                "# A hive bigger than this is split into child hives by `subhive decompose`.\n"
                "[budgets]\n"
                f"max_files = {self.budgets.max_files}\n"
                f"max_bytes = {self.budgets.max_bytes}\n"
                "\n"
                "[blackboard]\n"
                "# JSON Schema (2020-12) of every key on this hive's local blackboard.\n"
                f"schema = {toml_string(self.blackboard_schema)}\n"
                "\n"
                "[knowledge]\n"
                "# module:attribute naming the knowledge sources the runtime activates.\n"
                f"sources = {toml_string(self.knowledge_sources)}\n"
            )
            + (f"\n{self.dead_letters.to_toml()}" if self.dead_letters.is_set else "")
            + "".join(f"\n{agent.to_toml()}" for agent in self.agents)
            + "".join(f"\n{table.to_toml()}" for table in (self.review, self.quorum) if table is not None)
            + (f"\n{self.memory.to_toml()}" if self.memory != MemorySpec() else "")
        )


def check_hive_name(name: str, *, what: str = "hive name") -> None:
    """Raise :class:`InputError` unless ``name`` can name a sub-hive: ``check_hive_name("db")`` passes.

    A hive name is a NATS subject token and a Python identifier (for generated code): ``[a-z][a-z0-9_]*``,
    at most 32 characters, not a Python keyword and not ``root``.
    """
    problem = hive_name_problem(name, Location(), what=what)
    if problem is not None:
        raise InputError(problem.message, code=problem.code, location=problem.location, hint=problem.hint)


def hive_name_problem(name: object, where: Location, *, what: str = "hive name") -> Problem | None:
    """What is wrong with ``name`` as a hive name, or None."""
    rule = (
        "hive names become NATS subject tokens, directory names and Python identifiers: use lower-case "
        f"letters, digits and '_', starting with a letter, at most {MAX_HIVE_NAME} characters"
    )
    if not isinstance(name, str):
        return Problem("hive.type", f"{what} must be a string", where, rule)
    if not HIVE_NAME_RE.match(name):
        suggestion = re.sub(r"[^a-z0-9_]+", "_", name.lower()).strip("_")
        hint = rule + (f" (e.g. {suggestion!r})" if HIVE_NAME_RE.match(suggestion) else "")
        return Problem("hive.name_invalid", f"{name!r} is not a valid {what}", where, hint)
    if len(name) > MAX_HIVE_NAME:
        return Problem(
            "hive.name_too_long", f"{what} {name!r} has {len(name)} characters, over {MAX_HIVE_NAME}", where, rule
        )
    if keyword.iskeyword(name):
        return Problem(
            "hive.name_keyword",
            f"{name!r} is a Python keyword",
            where,
            f"generated code imports the hive by name; pick another, e.g. {name + '_hive'!r}",
        )
    if name == ROOT_HIVE:
        return Problem(
            "hive.name_reserved",
            f"{name!r} is the root hive's name",
            where,
            "every top-level sub-hive has parent 'root'; pick another name",
        )
    return None


def load_manifest(path: str | Path) -> SubhiveManifest:
    """Read and validate ``subhive.toml`` (or the hive directory holding it): ``load_manifest("subhives/db").kind``.

    Raises :class:`InputError` when the file is missing or not TOML, :class:`ManifestInvalid` listing every
    problem when a field is wrong.
    """
    path = Path(path)
    if path.is_dir():
        path = path / MANIFEST_NAME
    return parse_manifest(read_toml(path))


def parse_manifest(document: TomlDocument) -> SubhiveManifest:
    """Validate a parsed manifest: ``parse_manifest(read_toml(path))``; raise :class:`ManifestInvalid` listing
    every problem."""
    reader = _Reader(document)
    manifest = reader.read()
    if reader.problems or manifest is None:
        raise ManifestInvalid(
            reader.problems,
            summary=f"{document.path} is not a valid sub-hive manifest: "
            + (reader.problems[0].message if len(reader.problems) == 1 else f"{len(reader.problems)} problems"),
        )
    return manifest


def _kind_of(value: Any) -> str:
    names = {dict: "table", list: "array", str: "string", bool: "boolean", int: "integer", float: "float"}
    return names.get(type(value), type(value).__name__)


class _Reader:
    """Reads one manifest field by field, recording a located problem for each wrong one."""

    def __init__(self, document: TomlDocument) -> None:
        self.document = document
        self.problems: list[Problem] = []

    def problem(self, pointer: str, code: str, message: str, hint: str | None = None) -> None:
        self.problems.append(Problem(code, message, self.document.location(pointer), hint))

    def read(self) -> SubhiveManifest | None:
        data = self.document.data
        self.unknown_keys(data, "", _TOP_KEYS)
        name = self.name(data)
        kind = self.kind(data)
        parent = self.parent(data, name)
        description = self.string(data, "", "description", required=False) or ""
        provides = self.provides(data)
        consumes = self.consumes(data, provides)
        budgets = self.budgets(data)
        schema = self.blackboard(data)
        sources = self.knowledge(data)
        dead_letters = self.dead_letters(data)
        agents = (
            read_agents(
                data["agents"],
                self.problem,
                self.document.location,
                consumes=tuple(r.contract for r in consumes),
                provides=provides,
            )
            if "agents" in data
            else ()
        )
        agent_names = tuple(a.name for a in agents)
        review = read_review(data["review"], self.problem, agent_names) if "review" in data else None
        quorum = read_quorum(data["quorum"], self.problem) if "quorum" in data else None
        memory = read_memory(data["memory"], self.problem) if "memory" in data else MemorySpec()
        if self.problems or name is None or kind is None or parent is None or schema is None or sources is None:
            return None
        return SubhiveManifest(
            name,
            kind,
            parent,
            description,
            provides,
            consumes,
            budgets,
            schema,
            sources,
            dead_letters,
            agents,
            review,
            quorum,
            memory or MemorySpec(),
        )

    # --- helpers

    def unknown_keys(self, data: dict[str, Any], pointer: str, known: tuple[str, ...]) -> None:
        for key in data:
            if key in known:
                continue
            close = difflib.get_close_matches(key, known, n=1)
            # A top-level key written after a [table] header lands in that table: say where it belongs.
            top = difflib.get_close_matches(key, _TOP_KEYS, n=1) if pointer and not close else []
            if close:
                hint = f"did you mean {close[0]!r}?"
            elif top:
                hint = (
                    f"did you mean {top[0]!r}? it is a top-level key: move it above the first [table] "
                    f"(here it is read as part of [{pointer[1:]}])"
                )
            else:
                hint = f"the keys allowed here are: {', '.join(known)}"
            self.problem(join_pointer(pointer, key), "hive.unknown_key", f"unknown key {key!r}", hint)

    def string(self, data: dict[str, Any], pointer: str, key: str, *, required: bool = True) -> str | None:
        if key not in data:
            # A misspelt key ('kynd') is reported once, as unknown with a did-you-mean, not also as missing.
            if required and not any(difflib.get_close_matches(k, (key,), n=1) for k in data if isinstance(k, str)):
                where = f"[{pointer[1:]}]" if pointer else "the manifest"
                self.problem(
                    pointer,
                    "hive.missing_key",
                    f"{where} has no {key!r}",
                    f"add '{key} = ...' (docs/workspace.md shows a complete manifest)",
                )
            return None
        value = data[key]
        if not isinstance(value, str):
            self.problem(
                join_pointer(pointer, key),
                "hive.type",
                f"{key!r} must be a string, not a {_kind_of(value)}",
                "put the value in double quotes",
            )
            return None
        return value

    def table(self, data: dict[str, Any], key: str) -> dict[str, Any] | None:
        value = data.get(key)
        if value is None:
            self.problem(
                "", "hive.missing_key", f"the manifest has no [{key}] table", f"add a [{key}] table (docs/workspace.md)"
            )
            return None
        if not isinstance(value, dict):
            self.problem(
                f"/{key}",
                "hive.type",
                f"{key!r} must be a table, not a {_kind_of(value)}",
                f"write it as a [{key}] section",
            )
            return None
        return value

    # --- fields

    def name(self, data: dict[str, Any]) -> str | None:
        name = self.string(data, "", "name")
        if name is None:
            return None
        problem = hive_name_problem(name, self.document.location("/name"))
        if problem is not None:
            self.problems.append(problem)
            return None
        directory = Path(os.path.abspath(self.document.path)).parent.name
        if directory != name:
            self.problem(
                "/name",
                "hive.name_mismatch",
                f"name {name!r} does not match its directory {directory!r}",
                f"a sub-hive lives in subhives/<name>/: rename the directory to {name!r} or fix the name",
            )
        return name

    def kind(self, data: dict[str, Any]) -> Kind | None:
        text = self.string(data, "", "kind")
        if text is None:
            return None
        try:
            return Kind(text)
        except ValueError:
            self.problem(
                "/kind", "hive.kind_unknown", f"unknown kind {text!r}", f"use one of {', '.join(k.value for k in Kind)}"
            )
            return None

    def parent(self, data: dict[str, Any], name: str | None) -> str | None:
        parent = self.string(data, "", "parent")
        if parent is None or parent == ROOT_HIVE:
            return parent
        problem = hive_name_problem(parent, self.document.location("/parent"), what="parent hive name")
        if problem is not None:
            self.problems.append(problem)
            return None
        if parent == name:
            self.problem(
                "/parent",
                "hive.parent_cycle",
                f"hive {name!r} is its own parent",
                f"name the hive above it, or {ROOT_HIVE!r}",
            )
            return None
        return parent

    def provides(self, data: dict[str, Any]) -> tuple[str, ...]:
        value = data.get("provides", [])
        if not isinstance(value, list):
            self.problem(
                "/provides",
                "hive.type",
                f"'provides' must be an array of contract names, not a {_kind_of(value)}",
                'write provides = ["orders"]',
            )
            return ()
        found: list[str] = []
        for index, item in enumerate(value):
            pointer = join_pointer("/provides", index)
            if self.contract_name(item, pointer):
                if item in found:
                    self.problem(
                        pointer, "hive.duplicate", f"contract {item!r} is listed twice", "remove the second entry"
                    )
                else:
                    found.append(item)
        return tuple(found)

    def contract_name(self, item: object, pointer: str) -> bool:
        if isinstance(item, str) and CONTRACT_NAME_RE.match(item):
            return True
        self.problem(
            pointer,
            "hive.contract_name_invalid",
            f"{item!r} is not a contract name",
            "contract names are lower-case letters, digits, '_' and '-', starting with a letter, at most "
            "63 characters (docs/contracts.md)",
        )
        return False

    def consumes(self, data: dict[str, Any], provides: tuple[str, ...]) -> tuple[Requirement, ...]:
        value = data.get("consumes", {})
        if not isinstance(value, dict):
            self.problem(
                "/consumes",
                "hive.type",
                f"'consumes' must be a table, not a {_kind_of(value)}",
                'write a [consumes] section with lines like orders = "^1.2"',
            )
            return ()
        found: list[Requirement] = []
        for contract, text in value.items():
            pointer = join_pointer("/consumes", contract)
            if not self.contract_name(contract, pointer):
                continue
            if contract in provides:
                self.problem(
                    pointer,
                    "hive.consumes_own",
                    f"the hive consumes {contract!r}, which it provides",
                    "a hive uses its own contract directly; remove it from [consumes]",
                )
                continue
            if not isinstance(text, str):
                self.problem(
                    pointer,
                    "hive.type",
                    f"the version range of {contract!r} must be a string, not a {_kind_of(text)}",
                    f'quote it: {contract} = "^1.2"',
                )
                continue
            try:
                found.append(Requirement(contract, VersionRange.parse(text)))
            except ValueError as exc:
                self.problem(
                    pointer,
                    "hive.range_invalid",
                    str(exc),
                    "ranges: ^1.2 (compatible with 1.2), ~1.2.3 (patches of 1.2), >=1.0.0,<2.0.0, "
                    "or an exact 1.2.3 (docs/workspace.md)",
                )
        return tuple(found)

    def budgets(self, data: dict[str, Any]) -> Budgets:
        table = self.table(data, "budgets") if "budgets" in data else {}
        if table is None:
            return Budgets()
        self.unknown_keys(table, "/budgets", _BUDGET_KEYS)
        defaults = Budgets()
        values = {key: self.positive(table, key, getattr(defaults, key)) for key in _BUDGET_KEYS}
        return Budgets(**values)

    def positive(self, table: dict[str, Any], key: str, default: int) -> int:
        value = table.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            self.problem(
                join_pointer("/budgets", key),
                "hive.budget_invalid",
                f"{key} must be a positive integer, not {value!r}",
                f"e.g. {key} = {default}",
            )
            return default
        return value

    def blackboard(self, data: dict[str, Any]) -> str | None:
        table = self.table(data, "blackboard")
        if table is None:
            return None
        self.unknown_keys(table, "/blackboard", _BLACKBOARD_KEYS)
        schema = self.string(table, "/blackboard", "schema")
        if schema is None:
            return None
        relative = PurePosixPath(schema)
        if relative.is_absolute() or ".." in relative.parts or "\\" in schema or not schema:
            self.problem(
                "/blackboard/schema",
                "hive.path_escape",
                f"{schema!r} is not a path inside the hive",
                "name the schema relative to the hive's directory, e.g. blackboard.schema.json",
            )
            return None
        if relative.suffix not in (".json", ".yaml", ".yml"):
            self.problem(
                "/blackboard/schema",
                "hive.file_type",
                f"{schema!r} is not a .json, .yaml or .yml file",
                "the blackboard schema is a JSON Schema document",
            )
            return None
        return schema

    def knowledge(self, data: dict[str, Any]) -> str | None:
        table = self.table(data, "knowledge")
        if table is None:
            return None
        self.unknown_keys(table, "/knowledge", _KNOWLEDGE_KEYS)
        sources = self.string(table, "/knowledge", "sources")
        if sources is not None and not _SOURCES_RE.match(sources):
            self.problem(
                "/knowledge/sources",
                "hive.sources_invalid",
                f"{sources!r} is not 'module:attribute'",
                "name the module and the sequence of knowledge sources in it, e.g. 'db_hive.knowledge:SOURCES'",
            )
            return None
        return sources

    def dead_letters(self, data: dict[str, Any]) -> DeadLetterLimits:
        table = self.table(data, "dead_letters") if "dead_letters" in data else {}
        if table is None:
            return DeadLetterLimits()
        return DeadLetterLimits.read(table, "/dead_letters", self.problem)


def default_sources(name: str) -> str:
    """Where a scaffolded hive's knowledge sources live: ``default_sources("db")`` is 'db_hive.knowledge:SOURCES'."""
    return f"{name}_hive.knowledge:SOURCES"
