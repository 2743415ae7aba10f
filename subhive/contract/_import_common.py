"""What importing an OpenAPI or AsyncAPI document shares: reading files, following ``$ref``s across files (never
over a network), gathering the schemas into one ``$defs`` document, collecting every problem, and writing the
contract version all at once or not at all (docs/contracts.md#importing-and-exporting).
"""

from __future__ import annotations

import json
import math
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from .._dialects import DRAFT7, META_URIS, looks_like, translate
from .._schema_positions import LEGACY_ONE, LISTS, MAPS, ONE
from .._source import SourceDocument, escape_pointer_token, load_document
from .._yaml import dump_yaml
from ..errors import ContractInvalid, InputError, Location, Problem

__all__ = ["ImportedContract", "Importer", "snake", "write_contract"]

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"


def snake(text: str) -> str:
    """A contract member name from any text: ``snake("listPets")`` is 'list_pets', ``snake("GET /pets/{id}")``
    is 'get_pets_id'. Empty when nothing usable is left."""
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", text)
    text = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", text)
    out = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")
    if out and not out[0].isalpha():
        out = "n_" + out
    return out[:63].rstrip("_")


@dataclass
class ImportedContract:
    """A contract version read out of a document, not yet written: the manifest and its one schema file."""

    manifest: dict[str, Any]
    defs: dict[str, Any]
    #: $defs name -> where it was written (file, pointer): lint problems on the output are told there.
    origins: dict[str, tuple[Path, str]] = field(default_factory=dict)
    #: Problems that did not stop the import (siblings of $ref ignored in OpenAPI 3.0...).
    warnings: list[Problem] = field(default_factory=list)


class Importer:
    """Reads the documents of one import and gathers its problems; schemas reached by ``$ref`` become ``$defs``."""

    def __init__(self, path: Path) -> None:
        self.root = path
        self.problems: list[Problem] = []
        self.docs: dict[Path, SourceDocument | None] = {}
        self.defs: dict[str, Any] = {}
        self.origins: dict[str, tuple[Path, str]] = {}
        self._named: dict[tuple[Path, str], str] = {}
        #: The dialect of the schemas being gathered when it is not the document's own (an AsyncAPI payload with
        #: a ``schemaFormat`` naming a JSON Schema draft): marked with ``$schema`` until translated.
        self.schema_dialect: str | None = None

    # -- documents ---------------------------------------------------------------------------------------------
    def load(self, path: Path, at: tuple[Path, str] | None = None) -> SourceDocument | None:
        key = path.resolve()
        if key not in self.docs:
            try:
                self.docs[key] = load_document(path)
            except InputError as exc:
                self.docs[key] = None
                for p in exc.problems:
                    where = p.location if at is None else self.where(*at)
                    self.problems.append(Problem(p.code, p.message, where, p.hint))
        return self.docs[key]

    def where(self, file: Path, pointer: str) -> Location:
        doc = self.docs.get(file.resolve())
        return doc.location(pointer) if doc is not None else Location(file=str(file), pointer=pointer)

    def problem(self, code: str, message: str, file: Path, pointer: str, hint: str | None = None) -> None:
        self.problems.append(Problem(code, message, self.where(file, pointer), hint))

    def fail_if_any(self) -> None:
        if self.problems:
            raise ContractInvalid(self.problems)

    # -- references --------------------------------------------------------------------------------------------
    def target(self, ref: Any, file: Path, pointer: str) -> tuple[Path, str] | None:  # noqa: PLR0911 - one per refusal
        """The file and pointer ``ref`` (written at ``file``, ``pointer``) names, or None with a problem."""
        at = pointer + "/$ref"
        if not isinstance(ref, str):
            self.problem("import.ref_invalid", "a $ref must be a string", file, at)
            return None
        path, _, fragment = ref.partition("#")
        if _SCHEME.match(path) or path.startswith("//"):
            self.problem(
                "import.ref_remote", f"$ref {ref!r} names a URL: subhive never fetches documents", file, at,
                "download it next to the document and refer to it by a relative path",
            )  # fmt: skip
            return None
        where = file
        if path:
            where = (file.parent / unquote(path)).resolve()
            if not where.is_file():
                self.problem(
                    "import.ref_unresolved", f"$ref {ref!r}: file {where} does not exist", file, at,
                    "relative $refs are resolved from the directory of the document holding them",
                )  # fmt: skip
                return None
        target = unquote(fragment)
        if target and not target.startswith("/"):
            self.problem("import.ref_unresolved", f"$ref {ref!r}: only JSON pointer fragments are followed", file, at)
            return None
        doc = self.load(where, (file, at))
        if doc is None:
            return None
        if _get(doc.data, target) is _MISSING:
            self.problem("import.ref_unresolved", f"$ref {ref!r}: {target or '/'} is not in {where.name}", file, at)
            return None
        return where, target

    def follow(self, node: Any, file: Path, pointer: str) -> tuple[Any, Path, str]:
        """A non-schema object (parameter, response, message...) with its ``$ref``s followed to the object itself;
        ``(None, ...)`` with a problem when one does not resolve."""
        seen: set[tuple[Path, str]] = set()
        while isinstance(node, dict) and "$ref" in node:
            found = self.target(node["$ref"], file, pointer)
            if found is None:
                return None, file, pointer
            if found in seen:
                self.problem(
                    "import.ref_cycle", "these $refs refer to each other and never reach an object", file, pointer
                )
                return None, file, pointer
            seen.add(found)
            file, pointer = found
            node = _get(self.docs[file.resolve()].data, pointer)  # type: ignore[union-attr]
        return node, file, pointer

    # -- schemas -----------------------------------------------------------------------------------------------
    def schema(self, node: Any, file: Path, pointer: str) -> Any:
        """A copy of the schema at ``file``/``pointer`` whose ``$ref``s name ``#/$defs/...`` of the output."""
        if isinstance(node, bool):
            return node
        if not isinstance(node, dict):
            self.problem("import.schema_invalid", f"a schema must be an object, not {_kind(node)}", file, pointer)
            return {}
        out: dict[str, Any] = {}
        for key, value in node.items():
            at = f"{pointer}/{escape_pointer_token(key)}"
            if key == "$ref" and isinstance(value, str):
                found = self.schema_target(value, file, pointer)
                out[key] = "#/$defs/" + escape_pointer_token(self.define(*found)) if found else "#"
            elif key in MAPS and isinstance(value, dict):
                out[key] = {k: self.schema(v, file, f"{at}/{escape_pointer_token(k)}") for k, v in value.items()}
            elif key in _SCHEMA_LISTS and isinstance(value, list):
                out[key] = [self.schema(v, file, f"{at}/{i}") for i, v in enumerate(value)]
            elif key in _SCHEMA_ONE and isinstance(value, dict | bool):
                out[key] = self.schema(value, file, at)
            elif key == "dependencies" and isinstance(value, dict):
                out[key] = {
                    k: v if isinstance(v, list) else self.schema(v, file, f"{at}/{escape_pointer_token(k)}")
                    for k, v in value.items()
                }
            else:
                out[key] = value
        return out

    def schema_target(self, ref: str, file: Path, pointer: str) -> tuple[Path, str] | None:
        """Like :meth:`target`, for a ``$ref`` in a schema: a whole OpenAPI or AsyncAPI document is no schema (read
        as one it would accept anything)."""
        found = self.target(ref, file, pointer)
        if found is not None and not found[1] and looks_like(self.docs[found[0]].data) is not None:  # type: ignore[union-attr]
            self.problem(
                "import.ref_invalid", f"$ref {ref!r} names a whole OpenAPI/AsyncAPI document, not a schema",
                file, pointer + "/$ref", "point into it: other.yaml#/components/schemas/Name",
            )  # fmt: skip
            return None
        return found

    def define(self, file: Path, pointer: str, name: str | None = None) -> str:
        """The ``$defs`` name of the schema at ``file``/``pointer``, gathering it on first use."""
        key = (file.resolve(), pointer)
        if key in self._named:
            return self._named[key]
        last = pointer.rsplit("/", 1)[-1].replace("~1", "/").replace("~0", "~")
        wanted = name or _def_name(last or camel(file.stem))
        name = self.fresh(wanted)
        self._named[key] = name
        self.defs[name] = {}
        self.origins[name] = (file, pointer)
        doc = self.docs.get(key[0])
        self.defs[name] = self._marked(self.schema(_get(doc.data, pointer) if doc else {}, file, pointer))
        return name

    def _marked(self, schema: Any) -> Any:
        if self.schema_dialect is None or not isinstance(schema, dict) or "$schema" in schema:
            return schema
        return {"$schema": META_URIS[self.schema_dialect], **schema}

    def define_components(self, data: Any, file: Path) -> None:
        """Every schema of ``#/components/schemas`` under its own name, used or not (in the document's order)."""
        schemas = get(data, "/components/schemas")
        if isinstance(schemas, dict):
            for key in schemas:
                self.define(file, "/components/schemas/" + escape_pointer_token(key))

    def fresh(self, wanted: str) -> str:
        name, n = wanted, 2
        while name in self.defs:
            name, n = f"{wanted}{n}", n + 1
        return name

    def put(self, schema_node: Any, file: Path, pointer: str, name: str) -> str:
        """The ``$defs`` name for a schema written in place (an operation's body): the definition a lone ``$ref``
        names, else a new one called ``name``."""
        if isinstance(schema_node, dict) and set(schema_node) == {"$ref"} and isinstance(schema_node["$ref"], str):
            found = self.schema_target(schema_node["$ref"], file, pointer)
            return self.define(*found) if found else self.add({}, name, file, pointer)
        return self.add(self.schema(schema_node, file, pointer), name, file, pointer)

    def add(self, schema: Any, name: str, file: Path, pointer: str) -> str:
        name = self.fresh(name)
        self.defs[name] = self._marked(schema)
        self.origins[name] = (file, pointer)
        return name

    def translated(self, dialect: str) -> tuple[dict[str, Any], list[Problem]]:
        """The gathered ``$defs`` in draft 2020-12, read as ``dialect`` says (``openapi-3.0``, ``draft-07``,
        ``2020-12``), through the one translation every reader of schemas uses (subhive._dialects)."""
        if dialect == "openapi-3.0":
            result = translate({"openapi": "3.0.3", "components": {"schemas": self.defs}})
            defs = result.schema["components"]["schemas"]
        else:
            wrapper = {"$schema": META_URIS[dialect], "$defs": self.defs}
            result = translate(wrapper, default=DRAFT7)
            defs = result.schema["$defs"]
        # A definition's own $schema did its work (each is translated in its dialect); 2020-12 wants it on roots only.
        defs = {
            k: {x: y for x, y in v.items() if x != "$schema"} if isinstance(v, dict) else v for k, v in defs.items()
        }
        warnings = []
        for pointer, keyword, why in result.ignored:
            file, origin = self._origin_of(pointer)
            warnings.append(
                Problem("import.keyword_ignored", f"{keyword!r} is ignored: {why}", self.where(file, origin))
            )
        return defs, warnings

    def _origin_of(self, pointer: str) -> tuple[Path, str]:
        """Where a pointer into the translation input (``/components/schemas/Name/...`` or ``/$defs/Name/...``)
        was written."""
        tokens = pointer.split("/")
        depth = 3 if pointer.startswith("/components/") else 2
        name = tokens[depth].replace("~1", "/").replace("~0", "~") if len(tokens) > depth else ""
        file, origin = self.origins.get(name, (self.root, ""))
        return file, origin + "".join("/" + t for t in tokens[depth + 1 :])


_SCHEMA_LISTS = (*LISTS, "items")  # "items" a list: the tuple form of drafts before 2020-12
_SCHEMA_ONE = ONE + LEGACY_ONE
_MISSING = object()


def _get(data: Any, pointer: str) -> Any:
    node = data
    for raw in pointer.split("/")[1:] if pointer else ():
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return _MISSING
    return node


def get(data: Any, pointer: str) -> Any:
    """The value at ``pointer`` of ``data``, or None."""
    found = _get(data, pointer)
    return None if found is _MISSING else found


def _kind(value: Any) -> str:
    return {list: "an array", str: "a string", type(None): "null"}.get(type(value), type(value).__name__)


def _def_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "Schema"


def camel(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[^A-Za-z0-9]+", name) if part)


def valid_name(name: str) -> bool:
    return bool(_NAME.match(name)) and len(name) <= 63


def write_contract(imported: ImportedContract, out: Path, lint: Callable[[Path], tuple[Problem, ...]]) -> Path:
    """Write ``out/<contract>/<version>/`` (contract.yaml, schemas.json) whole, after ``lint`` found nothing in a
    private copy; nothing is left behind when it fails. Lint problems are told where the input wrote them."""
    manifest = imported.manifest
    not_json = _not_json(imported)
    if not_json:
        raise ContractInvalid(not_json)
    target = out / manifest["contract"] / manifest["version"]
    if target.exists():
        raise InputError(
            f"{target} exists already: accepted versions are immutable",
            code="import.exists",
            location=Location(file=str(target)),
            hint="import as another --version, or remove the directory first",
        )
    parent = target.parent
    made_parent = not parent.exists()
    parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".import-", dir=parent))
    try:
        staged = scratch / manifest["version"]
        staged.mkdir()
        (staged / "contract.yaml").write_text(dump_yaml(manifest), encoding="utf-8")
        document = {"$schema": DRAFT_2020_12, "$defs": imported.defs}
        (staged / "schemas.json").write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", "utf-8")
        problems = lint(staged)
        if problems:
            raise ContractInvalid([_told_back(p, staged, imported) for p in problems])
        staged.rename(target)
    except BaseException:
        if made_parent:
            shutil.rmtree(parent, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return Path(target)


def _not_json(imported: ImportedContract) -> list[Problem]:
    """An ``import.value_invalid`` problem for each value no JSON document can hold (a date object, bytes, a
    non-string key, NaN), told where the input wrote it. The YAML reader refuses these already (subhive._yaml);
    this keeps json.dumps from ever meeting one, whatever a translation or a future reader hands on."""
    problems = []
    for name, schema in imported.defs.items():
        found = _first_not_json(schema)
        if found is not None:
            file, origin = imported.origins.get(name, (Path("schemas.json"), "/$defs/" + escape_pointer_token(name)))
            problems.append(_not_json_problem(found, file, origin))
    found = _first_not_json(imported.manifest)
    if found is not None:
        problems.append(_not_json_problem(found, Path("contract.yaml"), ""))
    return problems


def _not_json_problem(found: tuple[str, str], file: Path, origin: str) -> Problem:
    pointer, what = found
    try:
        where = load_document(file).location(origin + pointer)
    except InputError:  # the pointer alone still says where
        where = Location(file=str(file), pointer=origin + pointer)
    return Problem(
        "import.value_invalid", f"{what} is no JSON value", where, "write it as a JSON value: quote a date or a name"
    )


def _first_not_json(value: Any) -> tuple[str, str] | None:
    """The pointer of the first value under ``value`` that JSON cannot hold, and what it is; None if all can."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        at, node = stack.pop()
        if node is None or isinstance(node, str | bool | int):
            continue
        if isinstance(node, float):
            if math.isfinite(node):
                continue
            return at, f"the number {node}"
        if isinstance(node, dict):
            for key, child in node.items():
                if not isinstance(key, str):
                    return at, f"the key {key!r} ({type(key).__name__})"
                stack.append((f"{at}/{escape_pointer_token(key)}", child))
        elif isinstance(node, list):
            stack.extend((f"{at}/{i}", child) for i, child in enumerate(node))
        else:
            return at, f"a {type(node).__name__} ({node!r:.40})"
    return None


def _told_back(problem: Problem, staged: Path, imported: ImportedContract) -> Problem:
    """A lint problem of the written schemas.json, named where the imported document wrote the schema."""
    pointer = problem.location.pointer or ""
    if problem.location.file and Path(problem.location.file).name == "schemas.json" and pointer.startswith("/$defs/"):
        tokens = pointer.split("/")
        name = tokens[2].replace("~1", "/").replace("~0", "~")
        if name in imported.origins:
            file, origin = imported.origins[name]
            pointer = origin + "".join("/" + t for t in tokens[3:])
            try:
                where = load_document(file).location(pointer)
            except InputError:  # read once already; should it be gone, the pointer alone still says where
                where = Location(file=str(file), pointer=pointer)
            return Problem(problem.code, problem.message, where, problem.hint)
    return problem
