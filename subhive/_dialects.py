"""JSON Schema dialects: which one a document is written in, and the draft 2020-12 schema that means the same.

Every reader of schemas (lint, the diff engine, bundling for code generation and the bus) works on draft
2020-12. A draft-04, -06, -07 or 2019-09 document is translated once, on reading, into the 2020-12 schema that
accepts exactly the same instances (docs/contracts.md#dialects, docs/decisions/0066-one-translation-to-2020-12.md):

>>> translate({"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "string"}]}).schema
{'$schema': 'https://json-schema.org/draft/2020-12/schema', 'prefixItems': [{'type': 'string'}]}

References keep the text they were written with; pointers into the original document are mapped onto the
translation with :meth:`Translation.forward`, and pointers into the translation back with :meth:`Translation.back`
(so every problem and change names the place the user wrote).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote

import orjson

from ._schema_positions import LISTS, MAPS, ONE

__all__ = [
    "DEFAULT_DIALECT",
    "DIALECTS",
    "DRAFT4",
    "DRAFT6",
    "DRAFT7",
    "DRAFT2019",
    "DRAFT2020",
    "IGNORED_SIBLINGS",
    "KEYWORDS",
    "META_URIS",
    "OPENAPI30",
    "RECURSIVE_ANCHOR",
    "NotASchema",
    "Translation",
    "dialect_of",
    "looks_like",
    "names_no_draft",
    "translate",
    "walk_unknown",
]

DRAFT4, DRAFT6, DRAFT7, DRAFT2019, DRAFT2020 = "draft-04", "draft-06", "draft-07", "2019-09", "2020-12"
DIALECTS = (DRAFT4, DRAFT6, DRAFT7, DRAFT2019, DRAFT2020)
#: The Schema Object of OpenAPI 3.0 (an extended subset of draft-04 with ``nullable``): how the schemas under
#: ``#/components/schemas`` of an OpenAPI 3.0 document are read. Never named by ``$schema``.
OPENAPI30 = "openapi-3.0"
#: What a schema without ``$schema`` is read as (lint notes it: ``schema.dialect_default``).
DEFAULT_DIALECT = DRAFT2020
#: The canonical ``$schema`` URI of each dialect.
META_URIS = {
    DRAFT4: "http://json-schema.org/draft-04/schema#",
    DRAFT6: "http://json-schema.org/draft-06/schema#",
    DRAFT7: "http://json-schema.org/draft-07/schema#",
    DRAFT2019: "https://json-schema.org/draft/2019-09/schema",
    DRAFT2020: "https://json-schema.org/draft/2020-12/schema",
}
_CANONICAL = META_URIS[DRAFT2020]
# Written with http or https, with or without the empty fragment: all seen in real schemas.
_BY_URI = {uri.split("://", 1)[1].rstrip("#"): name for name, uri in META_URIS.items()}
# The unversioned meta-schema address: it has served whichever draft was current, so it names none. A schema
# written with it is read as one without $schema, with a lint note (decision 0133).
_UNVERSIONED = "json-schema.org/schema"
_LEGACY_REF = frozenset({DRAFT4, DRAFT6, DRAFT7, OPENAPI30})  # where every sibling of "$ref" is ignored
_BOOLEAN_BOUNDS = frozenset({DRAFT4, OPENAPI30})  # where exclusiveMaximum/exclusiveMinimum are booleans

_COMMON = frozenset(
    {
        "$ref", "$schema", "title", "description", "default", "enum", "type", "multipleOf", "maximum",
        "exclusiveMaximum", "minimum", "exclusiveMinimum", "maxLength", "minLength", "pattern", "items",
        "maxItems", "minItems", "uniqueItems", "maxProperties", "minProperties", "required", "properties",
        "patternProperties", "additionalProperties", "allOf", "anyOf", "oneOf", "not", "format",
    }
)  # fmt: skip
# "$defs" counts for the older drafts too: used there as often as "definitions", reached by pointer the same way.
_D4 = _COMMON | {"id", "definitions", "$defs", "additionalItems", "dependencies"}
_D6 = (_D4 - {"id"}) | {"$id", "const", "contains", "propertyNames", "examples"}
_D7 = _D6 | {"if", "then", "else", "$comment", "readOnly", "writeOnly", "contentMediaType", "contentEncoding"}
_D2019 = (_D7 - {"definitions", "dependencies"}) | {
    "$anchor", "$recursiveRef", "$recursiveAnchor", "$vocabulary", "$defs", "dependentRequired",
    "dependentSchemas", "unevaluatedItems", "unevaluatedProperties", "minContains", "maxContains", "deprecated",
    "contentSchema",
}  # fmt: skip
_D2020 = (_D2019 - {"additionalItems", "$recursiveRef", "$recursiveAnchor"}) | {"prefixItems", "$dynamicRef",
                                                                                "$dynamicAnchor"}  # fmt: skip
#: The keywords each dialect defines. ``definitions`` counts for 2019-09 and 2020-12 too (their meta-schemas keep
#: it for old documents; a pointer into it still resolves). ``dependencies`` is gone from 2019-09, whose validators
#: ignore it, but jsonschema-rs, subhive's runtime validator, still enforces it in a 2020-12 schema.
KEYWORDS: dict[str, frozenset[str]] = {
    DRAFT4: _D4,
    DRAFT6: _D6,
    DRAFT7: _D7,
    DRAFT2019: _D2019 | {"definitions"},
    DRAFT2020: _D2020 | {"definitions", "dependencies"},
    OPENAPI30: (_COMMON | {"nullable", "discriminator", "readOnly", "writeOnly", "xml", "externalDocs", "example",
                           "deprecated"}) - {"$schema", "patternProperties"},
}  # fmt: skip
# OpenAPI 3.0 annotations without a 2020-12 keyword: kept as x- extensions (annotations, never constraints).
_OPENAPI_NOTES = ("discriminator", "xml", "externalDocs")
#: Where a sibling of a legacy "$ref" that a reference points into is kept (see _Walk._keep_ignored): no keyword,
#: and not compared as one (what it holds is compared where it is referenced).
IGNORED_SIBLINGS = "x-subhive-ignored"
# Left beside a "$ref" of draft-04..07 (its siblings are ignored): they never change what is accepted, and a
# reference into "definitions" must keep working.
_KEPT_BY_REF = frozenset(
    {"$ref", "$schema", "title", "description", "default", "examples", "$comment", "readOnly", "writeOnly",
     "definitions", "$defs"}
)  # fmt: skip
# Keywords that 2020-12 defines but that never change what is accepted, with the shape 2020-12 wants of them:
# kept in any dialect when they have it (a meta-schema check of the translation would refuse them otherwise).
_HARMLESS: dict[str, type | tuple[type, ...]] = {
    "$defs": dict,
    "$comment": str,
    "examples": list,
    "deprecated": bool,
    "readOnly": bool,
    "writeOnly": bool,
    "contentMediaType": str,
    "contentEncoding": str,
    "contentSchema": (dict, bool),
    "$anchor": str,
}
_ONE = tuple(k for k in ONE if k != "items")  # "items" means one thing or another by dialect: _SPECIAL
_MAPS = MAPS
_LISTS = LISTS
#: The ``$dynamicAnchor`` standing for a 2019-09 ``"$recursiveAnchor": true`` (anchor names may start with "_").
RECURSIVE_ANCHOR = "_recursiveAnchor"


def dialect_of(uri: Any) -> str | None:
    """The dialect a ``$schema`` value names, or None if it names none subhive reads.

    >>> dialect_of("http://json-schema.org/draft-07/schema"), dialect_of("https://example.com/mine")
    ('draft-07', None)
    """
    if not isinstance(uri, str) or "://" not in uri:
        return None
    return _BY_URI.get(uri.split("://", 1)[1].rstrip("#"))


def names_no_draft(uri: Any) -> bool:
    """Whether a ``$schema`` value is the unversioned meta-schema address: read as if absent (the surrounding
    dialect, at the root the default), with a lint note (``Translation.unversioned``).

    >>> names_no_draft("http://json-schema.org/schema#"), names_no_draft("http://json-schema.org/draft-04/schema#")
    (True, False)
    """
    return isinstance(uri, str) and "://" in uri and uri.split("://", 1)[1].rstrip("#") == _UNVERSIONED


# Keywords no package.json has at its root but a schema usually does.
_SCHEMA_SIGNS = ("type", "properties", "$ref", "$defs", "definitions", "allOf", "anyOf", "oneOf", "items", "enum")


@dataclass(frozen=True, slots=True)
class NotASchema:
    """What a document given as a schema really is: ``code`` (``schema.openapi_document``...) and its name."""

    code: str
    what: str


def looks_like(data: Any) -> NotASchema | None:
    """Recognise documents that are not JSON Schemas but are often given as one, or return None.

    An OpenAPI or AsyncAPI document, or a package.json, read as a schema is all unknown keywords: it would
    accept anything, and every change to it would look harmless.

    >>> looks_like({"openapi": "3.1.0", "paths": {}}).code
    'schema.openapi_document'
    """
    if not isinstance(data, dict):
        return None
    if isinstance(data.get("openapi"), str):
        return NotASchema("schema.openapi_document", f"an OpenAPI {data['openapi']} document")
    if isinstance(data.get("swagger"), str):
        return NotASchema("schema.openapi_document", f"a Swagger (OpenAPI) {data['swagger']} document")
    if isinstance(data.get("asyncapi"), str):
        return NotASchema("schema.asyncapi_document", f"an AsyncAPI {data['asyncapi']} document")
    if _package_json(data):
        return NotASchema("schema.package_json", "a package.json (an npm package manifest)")
    return None


def _package_json(data: dict[str, Any]) -> bool:
    if "$schema" in data or any(k in data for k in _SCHEMA_SIGNS):
        return False  # a schema that happens to carry name/version/license annotations
    npm = ("scripts", "devDependencies", "peerDependencies", "main", "private", "author", "license", "engines")
    deps = data.get("dependencies")
    npm_deps = isinstance(deps, dict) and bool(deps) and all(isinstance(v, str) for v in deps.values())
    return (
        isinstance(data.get("name"), str)
        and isinstance(data.get("version"), str)
        and (npm_deps or any(k in data for k in npm))
    )


@dataclass(slots=True)
class Translation:
    """A schema document and its draft 2020-12 equivalent, with pointers mapped between the two.

    ``schema`` is the document itself (not a copy) when it needs no translation.
    """

    dialect: str
    schema: Any
    #: The document as written.
    original: Any = None
    #: Original pointer -> translated pointer, where a keyword was renamed (longest prefix applies).
    to_new: dict[str, str] = field(default_factory=dict)
    to_old: dict[str, str] = field(default_factory=dict)
    #: (original pointer, keyword, why) for keywords the original's dialect ignores and the translation drops.
    ignored: list[tuple[str, str, str]] = field(default_factory=list)
    #: (original pointer, keyword, what was written) for annotations of the wrong shape the translation mends
    #: (``examples`` that is no array, a string ``deprecated``): they cannot change what is accepted.
    mended: list[tuple[str, str, str]] = field(default_factory=list)
    #: (original pointer, dialect read) of each schema whose ``$schema`` is the unversioned address, which names
    #: no draft: it is read as if absent, in the surrounding dialect (at the root, the default).
    unversioned: list[tuple[str, str]] = field(default_factory=list)

    @property
    def identity(self) -> bool:
        """The translation is the document as it is (no keyword moved, dropped or mended)."""
        return self.schema is self.original

    def forward(self, pointer: str) -> str:
        """Where the value at ``pointer`` of the original document is in the translation."""
        return _map(self.to_new, pointer)

    def back(self, pointer: str) -> str:
        """Where the value at ``pointer`` of the translation was written in the original document."""
        return _map(self.to_old, pointer)


def _map(table: dict[str, str], pointer: str) -> str:
    if not table or not pointer:
        return pointer
    cut = len(pointer)
    while cut > 0:
        prefix = pointer[:cut]
        if prefix in table:
            return table[prefix] + pointer[cut:]
        cut = pointer.rfind("/", 0, cut)
    return pointer


def translate(data: Any, default: str = DEFAULT_DIALECT, *, text: str | None = None) -> Translation:
    """The draft 2020-12 schema meaning what ``data`` means in its own dialect (``$schema``, else ``default``).

    An unknown ``$schema`` is read as ``default``: callers refuse it first (``schema.dialect``). ``text``, the
    document's source when known, lets a 2020-12 document that cannot need translating skip the look inside.
    """
    if _openapi30(data):
        return _translate_openapi30(data)
    dialect = (dialect_of(data.get("$schema")) if isinstance(data, dict) else None) or default
    # A 2020-12 document is used as it is, unless its $schema is spelt otherwise (http, no "#": then written
    # canonically for the validators) or something inside it needs translating.
    canonical = not isinstance(data, dict) or data.get("$schema", _CANONICAL) in (_CANONICAL, _CANONICAL + "#")
    if dialect == DRAFT2020 and canonical and (_plain(text, data) or not _needs_walk(data)):
        return Translation(dialect, data, data)
    out = Translation(dialect, None, data)
    holder: list[Any] = [None]
    _run(out, [(data, "", "", dialect, holder, 0, ("", False))])
    out.schema = holder[0]
    if dialect == DRAFT2020 and canonical and not (out.to_new or out.ignored or out.mended or out.unversioned):
        out.schema = data  # looked inside, found nothing to change: the document itself, not a copy of it
    return out


def _run(out: Translation, stack: list[_Task]) -> None:
    """Translate the subschemas on ``stack`` and all below them, each into its place; then the subschemas that
    ``#/...`` references reach inside plain containers (``#/$defs/lib/generic/x``), which no walk of schema
    positions meets; then rewrite those references to the translation's places."""
    walk = _Walk(out, stack)
    walk.drain()
    done = 0
    while done < len(walk.refs):  # grafting may translate subschemas holding references of their own
        node, resource, dialect = walk.refs[done]
        done += 1
        walk.graft(resource + unquote(node["$ref"][1:]), dialect)
    for node, resource, _ in walk.refs:
        node["$ref"] = _moved_ref(out, node["$ref"], resource)


class _Walk:
    """What one translation keeps while it walks: the work left, the ``#/...`` references met, and the
    translated schema objects by their original pointer."""

    def __init__(self, out: Translation, stack: list[_Task]) -> None:
        self.out = out
        self.stack = stack
        self.refs: list[tuple[dict[str, Any], str, str]] = []  # (translated object, its resource, dialect)
        self.nodes: dict[str, dict[str, Any]] = {}  # original pointer -> translated object
        self._private: set[int] = set()  # containers copied out of the original, safe to write into

    def drain(self) -> None:
        while self.stack:  # iterative: documents may nest deeper than Python's recursion limit
            task = self.stack.pop()
            value, parent, slot = task[0], task[4], task[5]
            parent[slot] = (
                _At(task, self).translate() if isinstance(value, dict) else value
            )  # a boolean schema (or a wrong value, which the meta-schema check reports)

    def graft(self, target: str, dialect: str) -> None:
        """Translate the subschema at original pointer ``target`` where it sits, if no walk reached it."""
        if target in self.nodes or not target.startswith("/"):
            return
        cut = len(target)
        while cut > 0 and target[:cut] not in self.nodes:  # the nearest translated object above it
            cut = target.rfind("/", 0, cut)
        if cut <= 0 and "" not in self.nodes:
            return
        container: Any = self.nodes[target[:cut] if cut > 0 else ""]
        tokens = [t.replace("~1", "/").replace("~0", "~") for t in target[max(cut, 0) + 1 :].split("/")]
        if tokens[0] not in container:  # perhaps inside a sibling of "$ref" the translation dropped
            container = self._keep_ignored(container, target[:cut] if cut > 0 else "", tokens[0])
            if container is None:
                return  # nothing there: lint reports the reference as unresolved
        for token in tokens[:-1]:
            child = _step(container, token)
            if not isinstance(child, dict | list):
                return  # nothing there: lint reports the reference as unresolved
            if id(child) not in self._private:  # still the original's: copy before writing into it
                child = copy.copy(child)
                self._private.add(id(child))
                container[int(token) if isinstance(container, list) else token] = child
            container = child
        value = _step(container, tokens[-1])
        if isinstance(value, dict):
            slot = int(tokens[-1]) if isinstance(container, list) else tokens[-1]
            self.stack.append((value, target, self.out.forward(target), dialect, container, slot, ("", False)))
            self.drain()

    def _keep_ignored(self, node: dict[str, Any], old: str, key: str) -> dict[str, Any] | None:
        """A reference reaches inside ``key``, a sibling of a draft-04..07 ``$ref`` that the translation dropped
        (ignored there, it would constrain in 2020-12): keep it under ``x-subhive-ignored``, an annotation, where
        the reference finds it as a JSON pointer into the original document does. Returns that holder."""
        at = f"{old}/{_esc(key)}"
        if not any(pointer == at for pointer, _, _ in self.out.ignored):
            return None
        value = self.out.original
        for raw in old.split("/")[1:] if old else []:
            value = _step(value, raw.replace("~1", "/").replace("~0", "~"))
        value = _step(value, key)
        if not isinstance(value, dict | list):
            return None
        holder: dict[str, Any] = node.setdefault(IGNORED_SIBLINGS, {})
        holder[key] = copy.copy(value)
        self._private.update((id(holder), id(holder[key])))
        new = f"{self.out.forward(old)}/{IGNORED_SIBLINGS}/{_esc(key)}"
        self.out.to_new[at] = new
        self.out.to_old[new] = at
        return holder


def _step(container: Any, token: str) -> Any:
    if isinstance(container, dict):
        return container.get(token)
    if isinstance(container, list) and token.isdigit() and int(token) < len(container):
        return container[int(token)]
    return None


def _openapi30(data: Any) -> bool:
    return (
        isinstance(data, dict)
        and isinstance(data.get("openapi"), str)
        and data["openapi"].startswith("3.0")
        and isinstance(data.get("components"), dict)
        and isinstance(data["components"].get("schemas"), dict)
    )


def _translate_openapi30(data: dict[str, Any]) -> Translation:
    """An OpenAPI 3.0 document: its ``#/components/schemas`` read as OpenAPI 3.0 Schema Objects (the rest of the
    document is no schema and is left as it is). OpenAPI 3.1's schemas are 2020-12 already."""
    out = Translation(OPENAPI30, None, data)
    schemas: dict[str, Any] = dict(data["components"]["schemas"])
    out.schema = {**data, "components": {**data["components"], "schemas": schemas}}
    at = "/components/schemas"
    _run(
        out, [(v, f"{at}/{_esc(k)}", f"{at}/{_esc(k)}", OPENAPI30, schemas, k, ("", False)) for k, v in schemas.items()]
    )
    return out


def _moved_ref(out: Translation, ref: str, resource: str) -> str:
    """A ``#/pointer`` reference written against the original, pointing at the same place in the translation."""
    pointer = unquote(ref[1:])
    moved = out.forward(resource + pointer)
    start = out.forward(resource)
    if moved == resource + pointer or not moved.startswith(start):
        return ref
    return "#" + quote(moved[len(start) :], safe="/~$!&'()*+,;=:@")


# A subschema still to translate: value, original pointer, translated pointer, dialect, where the result goes
# (container and key), and its schema resource: the original pointer of its root, and whether that root has
# "$recursiveAnchor": true (2019-09).
_Task = tuple[Any, str, str, str, Any, Any, tuple[str, bool]]


def _roots_schema(data: Any) -> int:
    """1 when the document's root names its dialect, else 0: the ``$schema`` occurrences that are not nested."""
    return int(isinstance(data, dict) and "$schema" in data)


def _plain(text: str | None, data: Any) -> bool:
    """The source names no nested ``$schema`` (a root without one defaults to 2020-12, so any occurrence is an
    embedded resource's) and none of the annotations ``_needs_walk`` looks for."""
    return (
        text is not None
        and text.count("$schema") <= _roots_schema(data)
        and "examples" not in text
        and "deprecated" not in text
    )


def _needs_walk(data: Any) -> bool:
    """Whether a 2020-12 document may need translating: a ``$schema`` below the root (an embedded resource may
    name another dialect), or an annotation of the wrong shape (see ``Translation.mended``). Cheap and rough:
    the walk itself tells schema positions from data."""
    try:  # one C-speed serialisation answers for most documents: none of the three words in it
        raw = orjson.dumps(data)
    except (TypeError, ValueError):  # not JSON (a big integer, a non-string key): the walk below says
        pass
    else:
        if raw.count(b'"$schema"') <= _roots_schema(data) and b'"examples"' not in raw and b'"deprecated"' not in raw:
            return False
    stack = [data]
    root = True
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if (not root and "$schema" in node) or _misshapen(node):
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        root = False
    return False


def _starts_resource(value: dict[str, Any], dialect: str) -> bool:
    """Whether this subschema is the root of a schema resource: an ``$id`` (``id`` in draft-04) with a URI part.
    A fragment-only id (``"#foo"``) is an anchor, and in draft-04 to -07 an id beside ``$ref`` is ignored."""
    ident = value.get("id" if dialect == DRAFT4 else "$id")
    if not isinstance(ident, str) or not ident or ident.startswith("#"):
        return False
    return not (dialect in (DRAFT4, DRAFT6, DRAFT7) and "$ref" in value)


class _At:
    """One schema object being translated; its subschemas are pushed on ``stack`` to be written into ``result``."""

    def __init__(self, task: _Task, walk: _Walk) -> None:
        value, self.old, self.new, dialect, _, _, resource = task
        self.walk = walk
        self.value: dict[str, Any] = value
        self.dialect = dialect_of(value.get("$schema")) or dialect
        self.out = walk.out
        self.stack = walk.stack
        self.result: dict[str, Any] = {}
        if self.old == "" or _starts_resource(value, self.dialect):  # a schema resource's root
            resource = (self.old, self.dialect == DRAFT2019 and value.get("$recursiveAnchor") is True)
        self.resource = resource

    @property
    def recursive(self) -> bool:
        """The schema resource has ``"$recursiveAnchor": true`` (2019-09)."""
        return self.resource[1]

    def translate(self) -> dict[str, Any]:
        self.walk.nodes[self.old] = self.result
        legacy_ref = self.dialect in _LEGACY_REF and "$ref" in self.value
        known = KEYWORDS[self.dialect]
        for key, sub in self.value.items():
            if legacy_ref and key not in _KEPT_BY_REF:
                self.ignore(key, f"siblings of $ref are ignored in {self.dialect}")
            elif key in _ANNOTATION_SHAPES and not isinstance(sub, _ANNOTATION_SHAPES[key][0]):
                # In any dialect (in one that does not define it, it is an annotation too).
                self.result[key] = _ANNOTATION_SHAPES[key][1](sub)
                self.out.mended.append((f"{self.old}/{_esc(key)}", key, type(sub).__name__))
            elif key in _TEXT_ANNOTATIONS and not isinstance(sub, _TEXT_ANNOTATIONS[key]):
                # Met where the dialect's meta-schema never looked (say, under draft-07's unknown "$defs"):
                # an annotation the 2020-12 meta-schema would refuse is left out.
                self.out.mended.append((f"{self.old}/{_esc(key)}", key, type(sub).__name__))
            elif key not in known:
                self._unknown(key, sub)
            elif key in _SPECIAL:
                _SPECIAL[key](self, key, sub)
            elif key in _ONE:
                self.child(sub, key)
            elif key in _MAPS or key in _LISTS:
                self.members(sub, key)
            else:
                self.result[key] = sub
        if self.dialect == OPENAPI30:
            self._openapi30()
        ref = self.result.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            self.walk.refs.append((self.result, self.resource[0], self.dialect))  # rewritten once all is placed
        return self.result

    def _openapi30(self) -> None:
        """``nullable: true`` adds null to an explicit ``type`` (OpenAPI 3.0.3; an enum or other constraint may
        still refuse null); ``example`` is one of ``examples``; other OpenAPI annotations become ``x-`` ones."""
        nullable = self.result.pop("nullable", None)
        kind = self.result.get("type")
        if nullable is True and isinstance(kind, str):
            self.result["type"] = [kind, "null"]
        if "example" in self.result:
            self.result.setdefault("examples", [self.result["example"]])
            del self.result["example"]
            self.rename("example", "examples")
        for key in _OPENAPI_NOTES:
            if key in self.result:
                self.result["x-openapi-" + key] = self.result.pop(key)
                self.rename(key, "x-openapi-" + key)

    def _unknown(self, key: str, sub: Any) -> None:
        """A keyword this dialect does not define: its validators ignore it, so the translation must too."""
        if key in KEYWORDS[DRAFT2020] and not (key in _HARMLESS and isinstance(sub, _HARMLESS[key])):
            self.ignore(key, f"{key!r} is not a {self.dialect} keyword")  # it would mean something in 2020-12
        elif key == "$defs":
            self.members(sub, key)  # a "#/$defs/..." reference reads its members as schemas of this dialect
        elif key == "contentSchema":
            self.child(sub, key)
        else:
            self.result[key] = sub  # unknown in both: ignored by every validator, kept for what reads it

    def ignore(self, key: str, why: str) -> None:
        self.out.ignored.append((f"{self.old}/{_esc(key)}", key, why))

    def rename(self, key: str, to: str, member: str | None = None) -> str:
        tail = "" if member is None else f"/{_esc(member)}"
        old, new = f"{self.old}/{_esc(key)}{tail}", f"{self.new}/{to}{tail}"
        self.out.to_new[old] = new
        self.out.to_old[new] = old
        return new

    def push(self, sub: Any, old: str, new: str, into: Any, slot: Any) -> None:
        self.stack.append((sub, old, new, self.dialect, into, slot, self.resource))

    def child(self, sub: Any, key: str, to: str | None = None) -> None:
        self.result[to or key] = None
        at = self.rename(key, to) if to else f"{self.new}/{_esc(key)}"
        self.push(sub, f"{self.old}/{_esc(key)}", at, self.result, to or key)

    def members(self, sub: Any, key: str, to: str | None = None) -> None:
        old = f"{self.old}/{_esc(key)}"
        new = self.rename(key, to) if to else f"{self.new}/{_esc(key)}"
        if isinstance(sub, dict):
            if key == "$defs" and self.dialect in _LEGACY_REF:
                # Not a keyword of these drafts, only a place references point into: a member that is no schema
                # is nothing to them, and 2020-12 wants schemas there.
                for k in [k for k, v in sub.items() if not isinstance(v, dict | bool)]:
                    why = "a member of $defs that is no schema (nothing can use it)"
                    self.out.ignored.append((f"{old}/{_esc(k)}", k, why))
                sub = {k: v for k, v in sub.items() if isinstance(v, dict | bool)}
            target: dict[str, Any] = dict.fromkeys(sub)
            for k, v in sub.items():
                self.push(v, f"{old}/{_esc(k)}", f"{new}/{_esc(k)}", target, k)
            self.result[to or key] = target
        elif isinstance(sub, list):
            items: list[Any] = list(sub)
            for i, v in enumerate(sub):
                self.push(v, f"{old}/{i}", f"{new}/{i}", items, i)
            self.result[to or key] = items
        else:
            self.result[to or key] = sub


# Annotations often written in the wrong shape (SchemaStore has many): the shape they need, and the value that
# says what the author meant. They never change what is accepted, so the document is read with them mended.
_ANNOTATION_SHAPES: dict[str, tuple[type, Any]] = {
    "examples": (list, lambda value: [value]),
    "deprecated": (bool, lambda value: True),  # "deprecated": "use b instead" says it is deprecated
}


# Other annotations of the wrong shape are dropped; they are not looked for in 2020-12 documents, whose meta-schema
# check reports them (a document of an older dialect is walked anyway).
_TEXT_ANNOTATIONS: dict[str, type] = {
    "title": str,
    "description": str,
    "$comment": str,
    "readOnly": bool,
    "writeOnly": bool,
}


def _misshapen(node: dict[str, Any]) -> bool:
    return any(k in node and not isinstance(node[k], shape) for k, (shape, _) in _ANNOTATION_SHAPES.items())


def _schema(at: _At, key: str, sub: Any) -> None:
    unversioned = names_no_draft(sub)
    if unversioned:
        at.out.unversioned.append((at.old, at.dialect))
    at.result[key] = META_URIS[DRAFT2020] if unversioned or dialect_of(sub) is not None else sub


def _identifier(at: _At, key: str, sub: Any) -> None:
    """``id`` (draft-04) and ``$id`` (draft-06/07): a URI whose plain-name fragment was an anchor."""
    if at.dialect not in _LEGACY_REF or not isinstance(sub, str):
        at.result[key] = sub  # 2019-09 and later; or a wrong value, which the meta-schema check reports
        return
    uri, _, fragment = sub.partition("#")
    if uri:
        at.result["$id"] = uri
        if key != "$id":
            at.rename(key, "$id")
    if fragment and not fragment.startswith("/"):
        at.result["$anchor"] = fragment


def _exclusive(at: _At, key: str, sub: Any) -> None:
    """Draft-04's boolean ``exclusiveMaximum``/``exclusiveMinimum`` make ``maximum``/``minimum`` exclusive."""
    if at.dialect not in _BOOLEAN_BOUNDS:
        at.result[key] = sub
        return
    bound = at.value.get("maximum" if key == "exclusiveMaximum" else "minimum")
    if sub is True and _is_number(bound):
        at.result[key] = bound
    elif not isinstance(sub, bool):
        at.result[key] = sub  # wrong for draft-04: the meta-schema check says so


def _bound(at: _At, key: str, sub: Any) -> None:
    if at.dialect not in _BOOLEAN_BOUNDS or at.value.get("exclusive" + key.title()) is not True:
        at.result[key] = sub  # else it became the exclusive bound


def _items(at: _At, key: str, sub: Any) -> None:
    """An array of ``items`` (before 2020-12) is ``prefixItems``; ``additionalItems`` then is ``items``."""
    if isinstance(sub, list) and at.dialect != DRAFT2020:
        at.members(sub, key, "prefixItems")
        if "additionalItems" in at.value:
            at.child(at.value["additionalItems"], "additionalItems", "items")
    else:
        at.child(sub, key)


def _additional_items(at: _At, key: str, sub: Any) -> None:
    if not isinstance(at.value.get("items"), list):
        at.ignore(key, "additionalItems only applies after an array of items")
    # with an array of items it was translated with them


def _dependencies(at: _At, key: str, sub: Any) -> None:
    """``dependencies``: a list of names is ``dependentRequired``, a schema is ``dependentSchemas``."""
    if at.dialect not in _LEGACY_REF or not isinstance(sub, dict):
        at.result[key] = sub
        return
    required: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    for name, value in sub.items():
        if isinstance(value, list):
            required[name] = value
            at.rename(key, "dependentRequired", name)
        else:
            schemas[name] = None
            at.push(value, f"{at.old}/{key}/{_esc(name)}", at.rename(key, "dependentSchemas", name), schemas, name)
    if required:
        at.result["dependentRequired"] = required
    if schemas:
        at.result["dependentSchemas"] = schemas


def _recursive_anchor(at: _At, key: str, sub: Any) -> None:
    """2019-09 ``"$recursiveAnchor": true`` on a resource root: the same ``$dynamicAnchor`` on every such root."""
    if sub is True and at.recursive and (at.old == "" or "$id" in at.value):
        at.result["$dynamicAnchor"] = RECURSIVE_ANCHOR
        at.rename(key, "$dynamicAnchor")


def _recursive_ref(at: _At, key: str, sub: Any) -> None:
    """2019-09 ``"$recursiveRef": "#"``: dynamic when its resource has ``"$recursiveAnchor": true``, else the plain
    reference to the resource root (a ``"$dynamicRef"`` without an anchor fragment is static). It may stand
    beside a ``"$ref"``: in 2019-09 as in 2020-12, both apply."""
    if sub != "#":
        at.result[key] = sub  # not a valid 2019-09 value; the meta-schema check reports it
        return
    at.result["$dynamicRef"] = "#" + RECURSIVE_ANCHOR if at.recursive else "#"
    at.rename(key, "$dynamicRef")


_SPECIAL = {
    "$schema": _schema,
    "id": _identifier,
    "$id": _identifier,
    "exclusiveMaximum": _exclusive,
    "exclusiveMinimum": _exclusive,
    "maximum": _bound,
    "minimum": _bound,
    "items": _items,
    "additionalItems": _additional_items,
    "dependencies": _dependencies,
    "$recursiveAnchor": _recursive_anchor,
    "$recursiveRef": _recursive_ref,
}


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _esc(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1") if "~" in token or "/" in token else token


def walk_unknown(data: Any, default: str = DEFAULT_DIALECT) -> Iterator[tuple[str, str, str]]:
    """``(pointer, keyword, dialect)`` for every keyword of ``data``'s dialect it does not define (``x-...``
    extensions excepted): validators ignore them, so a typo or a keyword of another language goes unnoticed."""
    dialect = (dialect_of(data.get("$schema")) if isinstance(data, dict) else None) or default
    stack: list[tuple[Any, str, str]] = [(data, "", dialect)]
    while stack:
        node, at, current = stack.pop()
        if not isinstance(node, dict):
            continue
        if "$schema" in node:
            current = dialect_of(node["$schema"]) or current
        for key in node.keys() - KEYWORDS[current]:  # most schemas have none: one set difference says so
            if not key.startswith("x-"):
                yield f"{at}/{_esc(key)}", key, current
        for key in node.keys() & _DESCEND:
            sub, where = node[key], f"{at}/{_esc(key)}"
            if isinstance(sub, list):
                stack.extend((v, f"{where}/{i}", current) for i, v in enumerate(sub))
            elif key in _MAPS or key == "dependencies":
                if isinstance(sub, dict):
                    stack.extend((v, f"{where}/{_esc(k)}", current) for k, v in sub.items())
            elif key not in _LISTS:
                stack.append((sub, where, current))


_DESCEND = frozenset({*_ONE, *_MAPS, *_LISTS, "items", "additionalItems", "dependencies"})
