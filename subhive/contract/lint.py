"""Lint: every check a contract, a schema file or a ``.proto`` must pass, with every problem collected.
What is checked, in which order and why: docs/lint.md#how-schemas-are-checked; problem codes: docs/lint.md.
"""

from __future__ import annotations

import copy
import difflib
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache, lru_cache, partial
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urldefrag, urlsplit

import jsonschema_rs

from .. import _metaschemas
from .._dialects import (
    DEFAULT_DIALECT,
    KEYWORDS,
    META_URIS,
    NotASchema,
    dialect_of,
    looks_like,
    walk_unknown,
)
from .._ecma_regex import EcmaRegexError, to_python
from .._id_roots import IdRoot
from .._rs_validator import runtime_validator
from .._source import SourceDocument, join_pointer
from ..errors import ContractInvalid, InputError, Location, Problem
from ._files import FileSource, MemoryFiles
from ._load import MANIFEST_NAME, SCHEMA_SUFFIXES, ManifestDraft, contract_directory, read_manifest
from ._model import Contract, GrpcSpec, SchemaRef
from ._refs import (
    RefSite,
    SchemaDocuments,
    Target,
    TranslatedDocument,
    locate,
    non_uri_refs,
    resolve_pointer,
    translated_pointer,
)

if TYPE_CHECKING:  # python-jsonschema and protobuf load where they are used: most lints need neither (decision 0110)
    from google.protobuf.descriptor_pb2 import FileDescriptorSet
    from jsonschema import Draft202012Validator, FormatChecker
    from jsonschema.exceptions import ValidationError

__all__ = ["LintResult", "lint_contract", "lint_paths", "load_contract", "load_contract_files", "load_schema_file"]

DIALECTS = frozenset({"https://json-schema.org/draft/2020-12/schema", "https://json-schema.org/draft/2020-12/schema#"})
RPC_NAME_RE = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
_SKIPPED_DIRS = frozenset({".subhive", "node_modules", "__pycache__"})
_MAX_MESSAGE = 240
# Hints for the reader's errors that carry none (see subhive._source).
_INPUT_HINTS = {
    "input.json": "fix the JSON at that line: keys and strings in double quotes, no trailing commas or comments",
    "input.yaml": "fix the YAML at that line (indentation, an unclosed bracket or quote)",
    "input.binary": "a schema is a UTF-8 JSON or YAML text file",
    "input.not_a_file": "name a file, not a directory",
    "input.unreadable": "check the file's permissions",
}


@dataclass(frozen=True, slots=True)
class LintResult:
    """Every problem found, and the contracts that loaded without any."""

    problems: tuple[Problem, ...] = ()
    contracts: tuple[Contract, ...] = ()
    #: Findings that do not make the input invalid (unknown keywords, harmless deviations): docs/lint.md#warnings.
    warnings: tuple[Problem, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.problems


# --- public entry points ---------------------------------------------------------------------------------


def load_contract(path: str | Path) -> Contract:
    """Load and fully check a contract directory (or its ``contract.yaml``).

    >>> load_contract("contracts/orders/1.1.0").operations["place_order"].input.pointer  # doctest: +SKIP
    ''

    Raises :class:`InputError` when ``path`` does not exist, :class:`ContractInvalid` listing every problem
    when the contract is not valid.
    """
    contract, problems = lint_contract(contract_directory(path))
    if contract is None:
        raise ContractInvalid(problems, summary=_summary(path, problems))
    return contract


def load_contract_files(files: Mapping[str, bytes], *, directory: str | Path) -> Contract:
    """Load and fully check a contract given as ``{relative POSIX path: bytes}``, as if it were ``directory``.

    >>> c = load_contract_files({"contract.yaml": b"...", "in.json": b"..."}, directory="contracts/x/1.0.0")
    ... # doctest: +SKIP

    The checks, problem codes, lines and pointers are those :func:`load_contract` gives for the same files
    written to ``directory``; problems name files as ``directory/<path>``. Nothing is read from or written to
    ``directory`` (a ``.proto`` is compiled from a temporary copy, since protoc reads files), so the returned
    contract's schemas live in memory; its ``grpc.proto`` names the file's intended path. Raises
    :class:`ContractInvalid` listing every problem.
    """
    contract, problems = lint_contract(Path(directory), files=files)
    if contract is None:
        raise ContractInvalid(problems, summary=_summary(directory, problems))
    return contract


def load_schema_file(
    path: str | Path,
    pointer: str = "",
    *,
    side: tuple[IdRoot, ...] = (),
    remote: list[Problem] | None = None,
) -> SchemaRef:
    """Load and fully check one schema file: ``load_schema_file("orders/1.0.0/order.json").schema``.

    ``pointer`` names a schema inside the file instead (``"/components/schemas/Order"`` of an OpenAPI
    document, which is no schema as a whole). ``$ref``s resolve within the contract directory holding the file
    (the nearest ancestor with a ``contract.yaml``), or within the file's own directory. Raises
    :class:`ContractInvalid` listing every problem, :class:`InputError` for a missing file.

    For ``schema diff`` (decision 0141): ``side`` are id roots tried first for this file's references
    (``--old-id-root``); with a ``remote`` list, a reference to a URL nothing offline places
    (``schema.ref_remote``) is put there as a warning instead of refusing the file (the comparison judges it),
    and the runtime validator, which would need to fetch it, is not built.
    """
    path = Path(path)
    if not path.exists():
        raise InputError(
            "file not found",
            code="input.not_found",
            location=Location(file=str(path)),
            hint="check the path; it is resolved from the current directory",
        )
    ref, problems, _ = _lint_schema_file(path, pointer, warnings=False, side=side, remote=remote)
    if problems:
        raise ContractInvalid(problems, summary=_summary(path, problems))
    return ref


def lint_contract(
    directory: Path, *, files: Mapping[str, bytes] | None = None
) -> tuple[Contract | None, tuple[Problem, ...]]:
    """Check one contract directory, or the map of ``files`` standing for it (see :func:`load_contract_files`);
    the contract is ``None`` unless there are no problems."""
    contract, problems, _ = _lint_contract(directory, files=files)
    return contract, problems


def _lint_contract(
    directory: Path, *, files: Mapping[str, bytes] | None = None
) -> tuple[Contract | None, tuple[Problem, ...], tuple[Problem, ...]]:
    """:func:`lint_contract`, and the warnings found on the way."""
    documents = SchemaDocuments(directory, None if files is None else MemoryFiles(directory, files))
    draft = read_manifest(directory, documents)
    problems = _Problems(draft.problems)
    warnings = _Problems()
    if draft.manifest is not None:
        manifest = draft.manifest
        _SchemaChecks(documents, problems, warnings).run(
            [(ref, partial(locate, manifest, pointer)) for ref, pointer in draft.schema_refs]
        )
        if draft.grpc is not None:
            if files is None:
                _check_grpc(draft.grpc, directory, problems, draft)
            else:
                _check_grpc_copy(draft.grpc, documents.files, problems, draft)
    found = problems.sorted()
    return (draft.contract() if not found else None), found, warnings.sorted()


def lint_paths(paths: Sequence[str | Path]) -> LintResult:
    """Lint contract directories, trees of contracts, ``contract.yaml`` files, schema files and ``.proto`` files.

    Never raises for bad input: every problem is in ``result.problems``. A path with nothing to lint is a
    problem (``lint.nothing_found``), not a silent pass.

    >>> lint_paths(["contracts/orders/1.0.0", "extra/order.json"]).ok  # doctest: +SKIP
    True
    """
    if isinstance(paths, str | Path):  # one path, not the characters of one
        paths = [paths]
    problems: list[Problem] = []
    warnings: list[Problem] = []
    contracts: list[Contract] = []
    seen: set[tuple[str, str]] = set()
    for kind, path in _targets(paths, problems):
        key = (kind, os.path.abspath(path))
        if key in seen:
            continue
        seen.add(key)
        if kind == "contract":
            contract, found, noted = _lint_contract(path)
            problems.extend(found)
            warnings.extend(noted)
            if contract is not None:
                contracts.append(contract)
        elif kind == "schema":
            _, found, noted = _lint_schema_file(path)
            problems.extend(found)
            warnings.extend(noted)
        else:
            problems.extend(_lint_proto_file(path))
    return LintResult(tuple(problems), tuple(contracts), tuple(warnings))


def _summary(path: str | Path, problems: Sequence[Problem]) -> str:
    count = len(problems)
    return f"{path} is not valid: " + (problems[0].message if count == 1 else f"{count} problems")


# --- finding what to lint --------------------------------------------------------------------------------


def _targets(paths: Iterable[str | Path], problems: list[Problem]) -> Iterator[tuple[str, Path]]:
    for raw in paths:
        path = Path(raw)
        where = Location(file=str(path))
        if not path.exists():
            problems.append(
                Problem(
                    "input.not_found",
                    "no such file or directory",
                    where,
                    "check the path; it is resolved from the current directory",
                )
            )
        elif path.is_dir():
            yield from _directory_targets(path, problems)
        elif path.name == MANIFEST_NAME:
            yield "contract", path.parent
        elif path.suffix.lower() in SCHEMA_SUFFIXES:
            yield "schema", path
        elif path.suffix.lower() == ".proto":
            yield "proto", path
        else:
            problems.append(
                Problem(
                    "lint.unsupported_file",
                    f"cannot lint a {path.suffix or 'suffix-less'} file",
                    where,
                    "lint contract directories, contract.yaml, .json/.yaml/.yml schemas or .proto files",
                )
            )


def _directory_targets(path: Path, problems: list[Problem]) -> Iterator[tuple[str, Path]]:
    if (path / MANIFEST_NAME).is_file():
        yield "contract", path
        return
    found = _find_manifests(path)
    if found:
        yield from (("contract", p) for p in found)
        return
    where = Location(file=str(path))
    try:
        loose = any(p.suffix.lower() in (*SCHEMA_SUFFIXES, ".proto") for p in path.iterdir() if p.is_file())
    except OSError:
        loose = False
    if loose:
        problems.append(
            Problem(
                "contract.no_manifest",
                f"{path} holds schema files but no {MANIFEST_NAME}",
                where,
                f"a contract directory needs a {MANIFEST_NAME} naming its operations, events "
                "and gRPC service (docs/contracts.md); to lint the files alone, pass them "
                "one by one",
            )
        )
    else:
        problems.append(
            Problem(
                "lint.nothing_found",
                f"no {MANIFEST_NAME} in {path} or below it",
                where,
                "pass a contract directory (contracts/<name>/<version>/), a tree holding "
                "contracts, or schema/.proto files; hidden directories are skipped",
            )
        )


def _find_manifests(root: Path) -> list[Path]:
    found: list[Path] = []
    for current, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIPPED_DIRS)
        if MANIFEST_NAME in files:
            found.append(Path(current))
    return sorted(found)


def _contract_root(path: Path) -> Path:
    """The directory a lone file's ``$ref``s and imports may reach: its contract's, else its own."""
    for parent in Path(os.path.abspath(path)).parents:
        if (parent / MANIFEST_NAME).is_file():
            return Path(os.path.relpath(parent)) if not path.is_absolute() else parent
    return path.parent


def _lint_schema_file(
    path: Path,
    pointer: str = "",
    *,
    warnings: bool = True,
    side: tuple[IdRoot, ...] = (),
    remote: list[Problem] | None = None,
) -> tuple[SchemaRef, tuple[Problem, ...], tuple[Problem, ...]]:
    """The file's schema, its problems and (unless ``warnings`` is False: nobody reads them) its warnings;
    ``side`` and ``remote`` as :func:`load_schema_file` takes them."""
    documents = SchemaDocuments(_contract_root(path), side=side)
    ref = SchemaRef(path, pointer, documents)
    problems, noted = _Problems(), (_Problems() if warnings else None)
    remote_refs = _Problems() if remote is not None else None
    _SchemaChecks(documents, problems, noted, remote_refs).run([(ref, None)])
    if remote is not None and remote_refs is not None:
        remote.extend(remote_refs.sorted())
    return ref, problems.sorted(), (noted.sorted() if noted is not None else ())


def _lint_proto_file(path: Path) -> tuple[Problem, ...]:
    problems = _Problems()
    _check_grpc(GrpcSpec(path, ""), _contract_root(path), problems, None)
    return problems.sorted()


# --- problems --------------------------------------------------------------------------------------------


class _Problems:
    """Problems without repeats (two $refs to one broken file report it once), sorted for stable output."""

    def __init__(self, initial: Iterable[Problem] = ()) -> None:
        self._items: dict[tuple[str, str, str | None, int | None, str | None], Problem] = {}
        self._first = list(initial)  # manifest problems keep their (document) order, first
        self.extend(self._first)

    def add(self, problem: Problem) -> None:
        if problem.hint is None and problem.code in _INPUT_HINTS:
            problem = Problem(problem.code, problem.message, problem.location, _INPUT_HINTS[problem.code])
        loc = problem.location
        self._items.setdefault((problem.code, problem.message, loc.file, loc.line, loc.pointer), problem)

    def extend(self, problems: Iterable[Problem]) -> None:
        for problem in problems:
            self.add(problem)

    def __bool__(self) -> bool:
        return bool(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def sorted(self) -> tuple[Problem, ...]:
        def key(p: Problem) -> tuple[str, int, str, str]:
            return (p.location.file or "", p.location.line or 0, p.location.pointer or "", p.code)

        return tuple(sorted(self._items.values(), key=key))


# --- schemas ---------------------------------------------------------------------------------------------


@cache
def _meta_validator() -> Draft202012Validator:
    # Built once: creating it compiles the meta-schema's own $refs. FORMAT_CHECKER makes "regex" checked,
    # exactly as Draft202012Validator.check_schema does.
    from jsonschema import Draft202012Validator

    return Draft202012Validator(
        Draft202012Validator.META_SCHEMA, format_checker=_ecma(Draft202012Validator.FORMAT_CHECKER)
    )


# Keywords applying a subschema to the same instance, and those among them that are not monotone (a cycle
# through one has no fixed point the validator could settle on).
_IN_PLACE_KEYWORDS = frozenset({"allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas"})
_NON_MONOTONE = frozenset({"not", "if", "oneOf"})


def _ecma(checker: FormatChecker) -> FormatChecker:
    """``checker`` with "regex" meaning ECMA-262, as JSON Schema says (not Python's re): decision 0097."""
    ecma = copy.copy(checker)
    ecma.checkers = {**checker.checkers, "regex": (_check_ecma_regex, (EcmaRegexError,))}
    return ecma


def _check_ecma_regex(instance: object) -> bool:
    if isinstance(instance, str):
        to_python(instance)  # raises EcmaRegexError, saying why
    return True


@lru_cache(maxsize=4096)
def _python_regex_ok(pattern: str) -> bool:
    """The pattern is ECMA-262 that subhive reads exactly (translated to Python's re for lint and mock data)."""
    try:
        to_python(pattern)
    except EcmaRegexError:
        return False
    return True


def _rs_meta_ok(schema: Any) -> bool:
    try:
        return bool(jsonschema_rs.meta.is_valid(schema))
    except Exception:  # an unknown $schema, for one: let python-jsonschema explain
        return False


@cache
def _rs_dialect_validator(dialect: str) -> Any:
    """jsonschema-rs's validator of ``dialect``'s meta-schema, formats not asserted (None if it cannot build one)."""
    try:
        return jsonschema_rs.validator_for(_metaschemas.metaschema(META_URIS[dialect]), validate_formats=False)
    except Exception:  # then python-jsonschema checks every document of that dialect, as before
        return None


def _rs_dialect_ok(dialect: str, schema: Any) -> bool:
    """Proven: python-jsonschema's check of ``schema`` against ``dialect``'s meta-schema finds nothing.

    The same meta-schema validated natively (~100 times faster on SchemaStore's catalog); the one format
    python-jsonschema asserts there, "regex", is checked first as it does (ECMA-262, decision 0097) on every
    string that could be a pattern. Any doubt (invalid, an error) leaves the verdict and its messages to
    python-jsonschema."""
    validator = _rs_dialect_validator(dialect)
    if validator is None or not all(_python_regex_ok(p) for p in _pattern_strings(schema)):
        return False
    try:
        return bool(validator.is_valid(schema))
    except Exception:  # e.g. nested too deeply for it
        return False


def _pattern_strings(schema: Any) -> Iterator[str]:
    """Every ``pattern`` string value and ``patternProperties`` key anywhere in ``schema`` (a superset of the
    strings the meta-schema's format "regex" applies to: more only means python-jsonschema checks more often)."""
    todo = [schema]
    while todo:
        value = todo.pop()
        if isinstance(value, dict):
            pattern = value.get("pattern")
            if isinstance(pattern, str):
                yield pattern
            props = value.get("patternProperties")
            if isinstance(props, dict):
                yield from (key for key in props if isinstance(key, str))
            todo.extend(value.values())
        elif isinstance(value, list):
            todo.extend(value)


class _SchemaChecks:
    """Checks the schema documents a contract names and every document their ``$ref``s reach."""

    def __init__(
        self,
        documents: SchemaDocuments,
        problems: _Problems,
        warnings: _Problems | None = None,
        remote: _Problems | None = None,
    ) -> None:
        self.documents = documents
        self.problems = problems
        # schema diff's references to URLs nothing offline places: warnings there, errors for contracts (the bus
        # must validate every message, docs/contracts.md#schemas).
        self.remote = remote
        # Without a list to fill, the warnings nobody reads are not looked for: their line numbers are most of
        # what checking a large schema costs (``schema diff`` of two real files, docs/lint.md#speed).
        self.noting = warnings is not None
        self.warnings = warnings if warnings is not None else _Problems()
        self._keywords_checked: set[tuple[int, str]] = set()  # (document, pointer) walked for unknown keywords
        self._done: set[int] = set()  # queued or processed
        self._processed: set[int] = set()
        self._queue: list[SourceDocument] = []
        # (document id, pointer) -> same-instance successors, each with the $ref that leads there (if any)
        self._edges: dict[tuple[int, str], list[tuple[tuple[int, str], tuple[SourceDocument, RefSite] | None]]] = {}
        self._by_id: dict[int, SourceDocument] = {}
        self._cycles: set[frozenset[tuple[int, str]]] = set()
        self._rs_registry: jsonschema_rs.Registry | None = None  # built once, for every jsonschema-rs build
        # Not a bound method: jsonschema-rs objects hide what they hold from Python's cycle collector, so a
        # registry holding a method of its holder would keep both, and every document read, alive for good.
        self._retrieve = _retriever(documents)

    def run(self, refs: Sequence[tuple[SchemaRef, Callable[[], Location] | None]]) -> None:
        """Check ``refs``, each with where the manifest names it (computed only if there is a problem)."""
        named: list[tuple[SchemaRef, SourceDocument]] = []
        for ref, where in refs:
            try:
                doc = self.documents.load(ref.file)
            except InputError as exc:
                self.problems.extend(exc.problems)
                continue
            if not ref.pointer and self._not_a_schema(doc, where):
                continue
            if self._check_pointer(doc, ref.pointer, where):
                named.append((ref, doc))
                if ref.pointer and looks_like(doc.data):
                    self._unknown_keywords(doc, ref.pointer)
            self._enqueue(doc)
        while self._queue:
            self._check_document(self._queue.pop(0))
        self._check_cycles()
        if not self.problems and named and not (self.remote is not None and self.remote.sorted()):
            self._check_runtime([ref for ref, _ in named])

    def _enqueue(self, doc: SourceDocument) -> None:
        if id(doc) not in self._done:
            self._done.add(id(doc))
            self._by_id[id(doc)] = doc
            self._queue.append(doc)

    def _check_pointer(self, doc: SourceDocument, pointer: str, where: Callable[[], Location] | None) -> bool:
        pointer = translated_pointer(doc, pointer)  # written against the file; checked in its 2020-12 translation
        try:
            self.documents.subschema(doc, pointer)
        except InputError as exc:
            self.problems.add(Problem(exc.code, exc.message, where() if where else exc.location, exc.hint))
            return False
        if self.documents.ensure_schema(doc, pointer):
            self._meta(doc, pointer)  # a plain container's member: the whole-document check did not cover it
        return True

    def _not_a_schema(self, doc: SourceDocument, where: Callable[[], Location] | None) -> bool:
        """Refuse a whole document that is no schema (read as one, it would accept anything)."""
        found = looks_like(doc.data)
        if found is None:
            return False
        self.problems.add(
            Problem(
                found.code,
                f"{doc.path.name} is {found.what}, not a JSON Schema",
                where() if where else locate(doc, ""),
                _not_a_schema_hint(doc, found),
            )
        )
        return True

    def _unknown_keywords(self, doc: SourceDocument, pointer: str) -> None:
        """Warn about keywords the schema's dialect does not define: validators ignore them silently."""
        if not self.noting or (id(doc), pointer) in self._keywords_checked:
            return
        self._keywords_checked.add((id(doc), pointer))
        if isinstance(doc, TranslatedDocument):  # the keywords as written, in the file's own dialect
            written = doc.translation.back(pointer)
            schema, dialect, where = (
                resolve_pointer(doc.original, written),
                doc.translation.dialect,
                doc.original_location,
            )
        else:
            written, schema, dialect, where = (
                pointer,
                resolve_pointer(doc.data, pointer),
                DEFAULT_DIALECT,
                doc.location,
            )
        for at, keyword, used in walk_unknown(schema, dialect):
            self.warnings.add(
                Problem(
                    "schema.keyword_unknown",
                    f"unknown keyword {keyword!r}: {used} does not define it, so validators ignore it",
                    where(written + at),
                    _unknown_hint(keyword),
                )
            )

    def _check_document(self, doc: SourceDocument) -> None:
        self._processed.add(id(doc))
        index = self.documents.index(doc)
        if looks_like(doc.data) is None:  # else a container of schemas, each checked where it is named
            self._meta(doc, "")
            self._unknown_keywords(doc, "")
        self._dialect_notes(doc)
        self.warnings.extend(doc.notes)  # harmless duplicate keys, found while reading (decision 0136)
        for pointer, value in index.dialects:
            if isinstance(value, str) and dialect_of(value) is None:
                self.problems.add(
                    Problem(
                        "schema.dialect",
                        f"$schema is {value!r}, not a dialect subhive reads",
                        locate(doc, pointer),
                        "subhive reads JSON Schema draft-04, -06, -07, 2019-09 and 2020-12: name one of them, "
                        f'e.g. "{META_URIS["2020-12"]}", or remove $schema (the default is 2020-12)',
                    )
                )
        for pointer, value in index.bad_ids:
            self.problems.add(
                Problem(
                    "schema.id_invalid",
                    f"$id {value!r} is not a URI reference",
                    locate(doc, pointer),
                    "an $id is a URI such as 'urn:shop:money' or 'https://example.com/order.json'; or remove it",
                )
            )
        not_uri = non_uri_refs(index)
        if not_uri:  # one warning a document: generated schemas have hundreds (vega-lite's TopLevel<Spec>)
            pointer, quoted = min(not_uri.items())
            more = f" (and {len(not_uri) - 1} more references)" if len(not_uri) > 1 else ""
            self.warnings.add(
                Problem(
                    "schema.ref_not_uri",
                    f"$ref {resolve_pointer(doc.data, pointer)!r} holds characters a URI may not{more}",
                    locate(doc, pointer),
                    f"read as its percent-encoded form {quoted!r}, which names the same place and which every "
                    "validator accepts; write it so",
                )
            )
        for parent, children in index.in_place.items():
            self._edges.setdefault((id(doc), parent), []).extend(((id(doc), c), None) for c in children)
        for site in list(index.refs):
            try:
                target = self.documents.resolve(doc, site)
            except InputError as exc:
                self._ref_failed(exc, site)
                continue
            self._follow(doc, site, target)
        self._check_ambiguous(doc)

    def _dialect_notes(self, doc: SourceDocument) -> None:
        """Warn where the dialect changes what a keyword means: an older keyword read as 2020-12 (no $schema), or
        keywords the document's dialect ignores (siblings of $ref before 2019-09, 2020-12 keywords in draft-07)."""
        if not self.noting:
            return
        if isinstance(doc, TranslatedDocument):
            self._unversioned_note(doc)
            for at, keyword, kind in doc.translation.mended:
                shape, read = _ANNOTATION_READ.get(keyword, ("text", "left out"))
                self.warnings.add(
                    Problem(
                        "schema.annotation_shape",
                        f"{keyword!r} is a {kind}, not {shape}; read as {read}",
                        doc.original_location(at),
                        f"write {keyword!r} as {shape}"
                        + (' (put the reason in "description")' if keyword == "deprecated" else "")
                        + "; an annotation never changes what the schema accepts, so this is only a warning",
                    )
                )
            for at, keyword, why in doc.translation.ignored:
                self.warnings.add(
                    Problem(
                        "schema.keyword_ignored",
                        f"{keyword!r} has no effect here: {why}",
                        doc.original_location(at),
                        "delete it, or name the dialect that gives it a meaning in $schema",
                    )
                )
            return
        if not isinstance(doc.data, dict) or "$schema" in doc.data or looks_like(doc.data):
            return
        legacy = _legacy_keyword(doc.data)
        if legacy is not None:
            at, keyword, dialect = legacy
            self.warnings.add(
                Problem(
                    "schema.dialect_default",
                    f"no $schema: read as draft 2020-12 (the default), yet {keyword!r} is written as in {dialect}",
                    locate(doc, at),
                    f'if it was written for {dialect}, say so: "$schema": "{META_URIS[dialect]}"',
                )
            )

    def _unversioned_note(self, doc: TranslatedDocument) -> None:
        """``$schema: http://json-schema.org/schema#`` names no draft: say how it is read (as if absent: the
        surrounding dialect, at the root the default), and which draft a keyword there betrays."""
        for pointer, dialect in doc.translation.unversioned:
            node = resolve_pointer(doc.original, pointer)
            legacy = _legacy_keyword(node) if isinstance(node, dict) else None
            seems = f", yet {legacy[1]!r} is written as in {legacy[2]}" if legacy and legacy[2] != dialect else ""
            read = "the default" if pointer == "" else "as the schema around it"
            suggested = legacy[2] if legacy else dialect
            self.warnings.add(
                Problem(
                    "schema.dialect_default",
                    f"$schema {node['$schema']!r} names no draft (that address has served whichever was current): "
                    f"read as {dialect if dialect.startswith('draft') else 'draft ' + dialect}, {read}{seems}",
                    doc.original_location(join_pointer(pointer, "$schema")),
                    f'name the draft it was written for, e.g. "$schema": "{META_URIS[suggested]}"',
                )
            )

    def _ref_failed(self, exc: InputError, site: RefSite | None = None) -> None:
        if self.remote is not None and exc.code == "schema.ref_remote" and site and not site.ref.startswith("file:"):
            self.remote.extend(exc.problems)  # a URL, never fetched: schema diff judges it (decision 0141)
            return
        self.problems.extend(exc.problems)
        if isinstance(exc.__cause__, InputError):  # the referenced file is broken: say where, once
            self.problems.extend(exc.__cause__.problems)

    def _follow(self, doc: SourceDocument, site: RefSite, target: Target) -> None:
        if not target.pointer and self._not_a_schema(target.document, partial(locate, doc, site.pointer)):
            return
        if target.pointer and looks_like(target.document.data):
            self._unknown_keywords(target.document, target.pointer)
        self._enqueue(target.document)
        if self.documents.ensure_schema(target.document, target.pointer):
            self._meta(target.document, target.pointer)
            if id(target.document) in self._processed:
                # The walk just added $refs below the target; a document still queued checks them itself.
                self._recheck_new_refs(target.document, target.pointer)
        self._edges.setdefault((id(doc), site.schema_pointer), []).append(
            ((id(target.document), target.pointer), (doc, site))
        )

    def _recheck_new_refs(self, doc: SourceDocument, pointer: str) -> None:
        index = self.documents.index(doc)
        for site in index.refs:
            if site.schema_pointer == pointer or site.schema_pointer.startswith(pointer + "/"):
                try:
                    target = self.documents.resolve(doc, site)
                except InputError as exc:
                    self._ref_failed(exc, site)
                    continue
                self._follow(doc, site, target)

    def _check_ambiguous(self, doc: SourceDocument) -> None:
        index = self.documents.index(doc)
        by_text: dict[str, set[str]] = {}
        for site in index.refs:
            by_text.setdefault(site.ref, set()).add(site.base)
        for ref, bases in by_text.items():
            if len(bases) > 1 and ":" not in ref.partition("#")[0]:
                try:
                    self.documents.resolve_ref(doc, ref)
                except InputError as exc:
                    if exc.code == "schema.ref_ambiguous":
                        self.problems.extend(exc.problems)

    # --- meta-schema -------------------------------------------------------------------------------------

    def _meta(self, doc: SourceDocument, pointer: str) -> None:
        if isinstance(doc, TranslatedDocument):
            self._dialect_meta(doc, pointer)
            return
        schema = self.documents.subschema(doc, pointer) if pointer else doc.data
        index = self.documents.index(doc)
        inside = pointer + "/"
        regexes_ok = all(_python_regex_ok(p) for at, p in index.patterns if not pointer or at.startswith(inside))
        # jsonschema-rs fetches an unknown $schema over the network: such documents go to python-jsonschema only.
        offline = all(
            isinstance(value, str) and value in DIALECTS
            for at, value in index.dialects
            if not pointer or at.startswith(inside)
        )
        if not offline:
            self._python_meta(doc, pointer, schema)
            return
        if regexes_ok and _rs_meta_ok(schema):
            return
        errors = self._python_meta(doc, pointer, schema)
        if errors:
            return
        if _rs_meta_ok(schema):
            if errors is None:
                self.problems.add(
                    Problem(
                        "schema.too_deep",
                        "the schema is nested too deeply to check",
                        locate(doc, pointer),
                        "move deeply nested subschemas into $defs and refer to them with $ref",
                    )
                )
            return
        # jsonschema-rs (the runtime validator) refuses what python-jsonschema accepts or cannot check: its
        # verdict is the one messages will meet, so report it.
        try:
            jsonschema_rs.meta.validate(schema)
        except jsonschema_rs.ValidationError as exc:
            at = join_pointer(pointer, *exc.instance_path)
            self.problems.add(
                Problem(
                    "schema.meta",
                    _shorten(exc.message),
                    locate(doc, at),
                    "fix the schema so that it follows the JSON Schema 2020-12 meta-schema",
                )
            )
        except Exception as exc:  # a referencing error, e.g. an unknown $schema
            self.problems.add(
                Problem(
                    "schema.meta",
                    _shorten(str(exc).splitlines()[0]),
                    locate(doc, pointer),
                    "fix the schema so that it follows the JSON Schema 2020-12 meta-schema",
                )
            )

    def _dialect_meta(self, doc: TranslatedDocument, pointer: str) -> None:
        """Check a document in an older dialect, as written, against its own dialect's meta-schema. OpenAPI 3.0's
        Schema Object has no meta-schema of its own: its translation is checked against 2020-12's instead."""
        dialect = doc.translation.dialect
        own = dialect in META_URIS
        written = doc.translation.back(pointer) if own else pointer
        where = doc.original_location if own else doc.location
        try:
            schema = resolve_pointer(doc.original if own else doc.data, written)
            if own and _rs_dialect_ok(dialect, schema):
                return  # what python-jsonschema checks holds: it would find nothing (decision 0111)
            errors = list((_dialect_validator(dialect) if own else _meta_validator()).iter_errors(schema))
        except RecursionError:
            self.problems.add(
                Problem(
                    "schema.too_deep",
                    "the schema is nested too deeply to check",
                    where(written),
                    "move deeply nested subschemas into definitions and refer to them with $ref",
                )
            )
            return
        except LookupError:  # a pointer into the translation only (a moved keyword): checked with its parent
            return
        mended = {at for at, _, _ in doc.translation.mended}
        for error in errors:
            best = _best(error)
            if join_pointer(written, *best.absolute_path) in mended:
                continue  # an annotation of the wrong shape: a warning (schema.annotation_shape)
            keyword = next((str(p) for p in reversed(best.absolute_path) if isinstance(p, str)), None)
            self.problems.add(
                Problem(
                    "schema.meta",
                    _shorten(best.message),
                    where(join_pointer(written, *best.absolute_path)),
                    _meta_hint(best, keyword, dialect),
                )
            )

    def _python_meta(self, doc: SourceDocument, pointer: str, schema: Any) -> list[ValidationError] | None:
        """Report python-jsonschema's meta-schema errors; None when the schema is too deep for it."""
        try:
            errors = list(_meta_validator().iter_errors(schema))
        except RecursionError:  # python-jsonschema recurses per level of nesting
            return None
        for error in errors:
            self.problems.add(_meta_problem(doc, pointer, error))
        return errors

    # --- cycles ------------------------------------------------------------------------------------------

    def _check_cycles(self) -> None:
        white, grey, black = 0, 1, 2
        colour: dict[tuple[int, str], int] = {}
        for start in list(self._edges):
            if colour.get(start, white) != white:
                continue
            colour[start] = grey
            path: list[tuple[tuple[int, str], tuple[SourceDocument, RefSite] | None]] = [(start, None)]
            stack = [iter(self._edges.get(start, ()))]
            while stack:
                step = next(stack[-1], None)
                if step is None:
                    stack.pop()
                    colour[path.pop()[0]] = black
                    continue
                node, via = step
                state = colour.get(node, white)
                if state == grey:
                    self._report_cycle(path, node, via)
                elif state == white:
                    colour[node] = grey
                    path.append((node, via))
                    stack.append(iter(self._edges.get(node, ())))

    def _report_cycle(
        self,
        path: list[tuple[tuple[int, str], tuple[SourceDocument, RefSite] | None]],
        node: tuple[int, str],
        via: tuple[SourceDocument, RefSite] | None,
    ) -> None:
        start = next(i for i, (n, _) in enumerate(path) if n == node)
        loop = [*path[start + 1 :], (node, via)]
        nodes = [path[start][0], *(n for n, _ in loop)]
        if frozenset(nodes) in self._cycles:
            return
        self._cycles.add(frozenset(nodes))
        # Reported once, at the cycle's first $ref in file and document order, whichever node DFS began at.
        doc, site = min((v for _, v in loop if v is not None), key=lambda v: (str(v[0].path), v[1].pointer))
        files = {n[0] for n in nodes}
        chain = " -> ".join((f"{self._by_id[d].path.name}#{p}" if len(files) > 1 else f"#{p}") for d, p in nodes)
        # The keywords the cycle applies in place (a $ref step has none): decision 0098.
        steps = {b[1][len(a[1]) + 1 :].split("/", 1)[0] for a, b in pairwise(nodes) if a[0] == b[0]}
        steps &= _IN_PLACE_KEYWORDS
        negating = sorted(steps & _NON_MONOTONE)
        if steps and not negating:
            self.warnings.add(
                Problem(
                    "schema.ref_cycle_unguarded",
                    f"$ref cycle on the same instance: {chain}",
                    locate(doc, site.pointer),
                    "it is read as jsonschema-rs validates it: a subschema met again on the same instance holds (so "
                    "anyOf: [X, <this cycle>] accepts everything); recurse inside a property or an item if that is "
                    "not what you mean",
                )
            )
            return
        why = f" through {', '.join(negating)}" if negating else ""
        self.problems.add(
            Problem(
                "schema.ref_cycle",
                f"unguarded $ref cycle{why}: {chain}",
                locate(doc, site.pointer),
                "a cycle that never goes through 'properties', 'items' (or another keyword that descends into the "
                "instance) and that passes through not, if or oneOf (or only through $refs) has no meaning: an "
                "instance would have to match a schema because it does not; recurse inside a property or an item",
            )
        )

    # --- runtime validator -------------------------------------------------------------------------------

    def _check_runtime(self, refs: list[SchemaRef]) -> None:
        if not self._check_translations():
            return  # said where, in the file; the builds below would only repeat it at the manifest
        # One build for all schemas first (it shares the compiled documents); one per schema only to say
        # which one fails.
        uris = {self._uri(ref): ref for ref in refs}
        if len(uris) > 1 and self._build({"anyOf": [{"$ref": uri} for uri in uris]}) is None:
            return
        for uri, ref in uris.items():
            message = self._build({"$ref": uri})
            if message is not None:
                self.problems.add(
                    Problem(
                        "schema.runtime_rejects",
                        _shorten(f"the runtime validator (jsonschema-rs) rejects it: {message}"),
                        ref.location,
                        "subhive validates messages with jsonschema-rs; change the schema so that it compiles there "
                        "(a regex only Python accepts, or an $id that is not a valid URI)",
                    )
                )

    def _check_translations(self) -> bool:
        """Every translation must be a valid 2020-12 schema: bundles (what the bus validates with) are compiled
        from it, and a part the original's meta-schema never looked at (a plain container a reference points
        into) may hold what 2020-12 refuses. The validator does not check documents it reaches by reference
        itself. True when all are valid."""
        ok = True
        for doc in self.documents.documents():
            if not isinstance(doc, TranslatedDocument) or looks_like(doc.data) or _rs_meta_ok(doc.data):
                continue
            ok = False
            try:
                jsonschema_rs.meta.validate(doc.data)
            except jsonschema_rs.ValidationError as exc:
                self.problems.add(
                    Problem(
                        "schema.runtime_rejects",
                        _shorten(f"read as draft 2020-12, the schema is refused: {exc.message}"),
                        locate(doc, join_pointer("", *exc.instance_path)),
                        f"subhive reads a {doc.translation.dialect} schema as the draft 2020-12 schema meaning the "
                        "same (docs/contracts.md#dialects); fix the value there so that both dialects accept it",
                    )
                )
            except Exception as exc:  # a referencing error
                self.problems.add(
                    Problem(
                        "schema.runtime_rejects", _shorten(str(exc).splitlines()[0]), locate(doc, ""), "fix the schema"
                    )
                )
        return ok

    def _uri(self, ref: SchemaRef) -> str:
        uri = self._own_id(ref.document) or ref.document.path.absolute().as_uri()
        return uri + "#" + quote(ref.data_pointer, safe="/~$!&'()*+,;=:@") if ref.pointer else uri

    def _own_id(self, doc: SourceDocument) -> str | None:
        """The document's root ``$id`` when it is an absolute URL: jsonschema-rs resolves a document registered
        under another URI inconsistently (references against that URI, nested ``$id``s against the root's)."""
        base = self.documents.index(doc).root_base
        return base if not base.startswith("file:") and urlsplit(base).scheme else None

    def _build(self, schema: dict[str, Any]) -> str | None:
        try:
            runtime_validator(schema, registry=self._registry(), retriever=self._retrieve)
        except Exception as exc:  # jsonschema_rs.ValidationError, or a retriever refusal it wraps
            return str(exc).splitlines()[0]
        return None

    def _registry(self) -> jsonschema_rs.Registry:
        """Every document registered up front, with the bundled meta-schemas: jsonschema-rs asks no retriever for
        json-schema.org, nor for what a retrieved document refers to. If one of them breaks the registry, the
        retriever alone finds them, so that the build that fails names the schema that reaches the broken one."""
        if self._rs_registry is None:
            self._rs_registry = self._new_registry()
        return self._rs_registry

    def _new_registry(self) -> jsonschema_rs.Registry:
        docs = self.documents.documents()
        known = [(d.path.absolute().as_uri(), self.documents.runtime_data(d)) for d in docs]
        own: dict[str, Any] = {}  # under its own $id too (the first document claiming one keeps it)
        for (_, data), doc in zip(known, docs, strict=True):
            if (ident := self._own_id(doc)) is not None:
                own.setdefault(ident, data)
        # A catalog's "https://json.schemastore.org/feed-1" is feed-1.json (as the loader reads it, decision 0096).
        known += [(uri.removesuffix(".json"), data) for uri, data in known if uri.endswith(".json")]
        # URLs an id root (decision 0107) or an $id placed at a file whose own $id is another (or none).
        named = {uri for uri, _ in known}  # a file keeps its own URI: a URL placed there is that file anyway
        known += [(ident, data) for ident, data in own.items() if ident not in named]
        named |= own.keys()
        known += [(uri, self.documents.runtime_data(d)) for uri, d in self.documents.placed.items() if uri not in named]
        metas = _metaschemas.resources(self.documents.bundled())
        try:
            return jsonschema_rs.Registry([*metas, *known], retriever=self._retrieve)
        except Exception:  # jsonschema_rs.ReferencingError and the like: reported by the build itself
            return jsonschema_rs.Registry(metas, retriever=self._retrieve)


def _not_a_schema_hint(doc: SourceDocument, found: NotASchema) -> str:
    if found.code == "schema.package_json":
        return "name the JSON Schema file itself; a package.json describes an npm package"
    return (
        f"name one of its schemas with a JSON pointer, e.g. '{doc.path.name}#/components/schemas/<Name>' (in "
        "contract.yaml, or to `subhive schema diff`); `subhive contract import` turns the whole document into a "
        "contract version"
    )


# Annotations of the wrong shape the translation mends: the shape they need, and how they are read instead
# (any other is left out: title, description and $comment need text, readOnly and writeOnly true or false).
_ANNOTATION_READ = {
    "examples": ("an array", "a list of that one example"),
    "deprecated": ("true or false", "true (deprecated)"),
    "readOnly": ("true or false", "left out"),
    "writeOnly": ("true or false", "left out"),
}

# Keywords of neighbouring languages met in real schemas, and what to write instead.
_FOREIGN = {
    "nullable": 'OpenAPI 3.0\'s nullable; in JSON Schema allow null in the type: "type": ["string", "null"]',
    "example": 'OpenAPI\'s example; JSON Schema has "examples": [...]',
    "discriminator": "an OpenAPI keyword; JSON Schema validators ignore it (oneOf with const properties selects)",
    "xml": "an OpenAPI keyword; JSON Schema validators ignore it",
    "externalDocs": "an OpenAPI keyword; JSON Schema validators ignore it",
}


def _unknown_hint(keyword: str) -> str:
    if keyword in _FOREIGN:
        return _FOREIGN[keyword]
    close = difflib.get_close_matches(keyword, sorted(KEYWORDS["2020-12"]), n=1)
    if close:
        return f"did you mean {close[0]!r}? (a misspelt keyword constrains nothing)"
    return "if it is a note for readers, prefix it with 'x-' (an extension) or move it into \"$comment\""


def _meta_problem(doc: SourceDocument, base: str, error: ValidationError) -> Problem:
    best = _best(error)
    pointer = join_pointer(base, *best.absolute_path)
    keyword = next((str(p) for p in reversed(best.absolute_path) if isinstance(p, str)), None)
    return Problem("schema.meta", _shorten(best.message), locate(doc, pointer), _meta_hint(best, keyword))


def _best(error: ValidationError) -> ValidationError:
    from jsonschema.exceptions import best_match

    best: ValidationError = best_match([error])
    # anyOf/oneOf in the meta-schema (e.g. "type": a name or a list of names) explain nothing by themselves;
    # an enum or const branch names the allowed values, which is what a reader needs.
    while best.validator in ("anyOf", "oneOf") and best.context:
        branches = sorted(best.context, key=lambda e: (e.validator not in ("enum", "const"), -len(e.path)))
        best = branches[0]
    return best


@cache
def _dialect_validator(dialect: str) -> Any:
    from jsonschema.validators import validator_for

    cls = validator_for({"$schema": META_URIS[dialect]})
    return cls(cls.META_SCHEMA, format_checker=_ecma(cls.FORMAT_CHECKER))


def _retriever(documents: SchemaDocuments) -> Callable[[str], Any]:
    """What jsonschema-rs asks for a URI it has not been given: a document of the contract, found as the loader
    finds it; anything else is refused."""

    def retrieve(uri: str) -> Any:
        base = urldefrag(uri)[0]
        placed = documents.placed.get(base)
        if placed is not None:  # mapped by an id root or placed by an $id (decisions 0096, 0107)
            return documents.runtime_data(placed)
        for doc in documents.documents():
            aliases = documents.index(doc).aliases
            # "https://json.schemastore.org/feed-1" names feed-1.json, as the loader reads it (decision 0096)
            if base in aliases or (not base.endswith(".json") and base + ".json" in aliases):
                return documents.runtime_data(doc)
        parts = urlsplit(base)
        if parts.scheme == "file" and not parts.netloc:
            from urllib.request import url2pathname  # urllib.request imports http, ssl, email: only here

            return documents.runtime_data(documents.load(Path(url2pathname(parts.path))))
        raise ValueError(f"{uri} is not part of the contract")

    return retrieve


def _legacy_keyword(data: dict[str, Any]) -> tuple[str, str, str] | None:
    """A keyword at the root of a schema without ``$schema`` that means something else (or nothing) in 2020-12
    than in the older draft it is written for: (pointer, keyword, that draft)."""
    if isinstance(data.get("id"), str) and "$id" not in data:
        return "/id", "id", "draft-04"
    if isinstance(data.get("items"), list) or "additionalItems" in data:
        return "/items", "items", "draft-07"
    for keyword in ("exclusiveMaximum", "exclusiveMinimum"):
        if isinstance(data.get(keyword), bool):
            return f"/{keyword}", keyword, "draft-04"
    if "$recursiveRef" in data or "$recursiveAnchor" in data:
        return "", "$recursiveRef", "2019-09"
    return None


def _meta_hint(error: ValidationError, keyword: str | None, dialect: str = "2020-12") -> str:
    if error.validator == "format" and error.validator_value == "regex":
        why = f"{error.cause.reason}; " if isinstance(error.cause, EcmaRegexError) else ""
        return f"{why}patterns are ECMA-262 regular expressions (docs/contracts.md#patterns)"
    if keyword:
        return (
            f"'{keyword}' does not follow the JSON Schema {dialect} meta-schema; see "
            "https://json-schema.org/understanding-json-schema/reference"
        )
    return f"a schema is a JSON object (or true/false) following the JSON Schema {dialect} meta-schema"


def _shorten(text: str) -> str:
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 3] + "..."


# --- gRPC ------------------------------------------------------------------------------------------------


def _check_grpc(spec: GrpcSpec, directory: Path, problems: _Problems, draft: ManifestDraft | None) -> None:
    from ..compat.protobuf import compile_proto

    try:
        compiled = compile_proto(spec.proto, include_dirs=[directory])
    except InputError as exc:  # ContractInvalid: one problem per protoc diagnostic
        problems.extend(exc.problems)
        return
    services = _services(compiled)
    if spec.service and spec.service not in services:
        declared = ", ".join(sorted(services)) or "none"
        where = locate(draft.manifest, "/grpc/service") if draft and draft.manifest else Location(file=str(spec.proto))
        problems.add(
            Problem(
                "grpc.service_missing",
                f"{spec.proto.name} declares no service {spec.service!r}",
                where,
                f"services declared there: {declared}; write the package-qualified name",
            )
        )
    text = _read_text(spec.proto)
    for service, methods in sorted(services.items()):
        if spec.service and service != spec.service:
            continue
        for method in methods:
            if not RPC_NAME_RE.match(method) or len(method) > 63:
                problems.add(
                    Problem(
                        "grpc.rpc_name_invalid",
                        f"RPC name {method!r} of {service} is not a valid subject token",
                        Location(file=str(spec.proto), line=_line_of(text, rf"\brpc\s+{re.escape(method)}\b")),
                        "RPC names become NATS subject tokens: start with a letter, then letters, digits or '_', "
                        "at most 63 characters",
                    )
                )


def _check_grpc_copy(spec: GrpcSpec, files: FileSource, problems: _Problems, draft: ManifestDraft) -> None:
    """:func:`_check_grpc` for files not on disk: protoc compiles a temporary copy of the ``.proto`` files,
    and every problem names the file by its intended path again."""
    tmp = Path(tempfile.mkdtemp(prefix="subhive-lint-")).resolve()
    try:
        directory = files.directory
        for name in files.listing():
            if name.lower().endswith(".proto") and files.is_file(directory / name):
                (tmp / name).parent.mkdir(parents=True, exist_ok=True)
                (tmp / name).write_bytes(files.read(directory / name))
        found = _Problems()
        copy = GrpcSpec(tmp / os.path.relpath(os.path.abspath(spec.proto), os.path.abspath(directory)), spec.service)
        _check_grpc(copy, tmp, found, draft)
        for problem in found.sorted():
            problems.add(_renamed(problem, str(tmp), str(directory)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _renamed(problem: Problem, old: str, new: str) -> Problem:
    file, hint = problem.location.file, problem.hint
    if file is not None and (file == old or file.startswith(old + os.sep)):
        file = os.path.normpath(new + file[len(old) :])
    hint = hint.replace(old, new) if hint else hint
    return Problem(problem.code, problem.message, replace(problem.location, file=file), hint)


def _services(compiled: FileDescriptorSet) -> dict[str, list[str]]:
    """``{"pkg.Service": ["Method", ...]}`` declared in the compiled file itself (the set's last file; the
    others are its imports)."""
    if not compiled.file:
        return {}
    file = compiled.file[-1]
    prefix = f"{file.package}." if file.package else ""
    return {prefix + service.name: [m.name for m in service.method] for service in file.service}


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _line_of(text: str, pattern: str) -> int | None:
    match = re.search(pattern, text)
    return text.count("\n", 0, match.start()) + 1 if match else None
