"""Soundness of the JSON Schema compatibility engine, searched for with hypothesis and real instances.

OLD is drawn from a small draft 2020-12 grammar; NEW is OLD after one to three random mutations (a bound
moved, a property or a required name added or removed, a type changed, an enum member added, ...), so that
"compatible" verdicts actually occur. Whenever the engine claims a direction, instances drawn from three
sources -- values on the schemas' own edges, sketches that follow a schema's structure, and
hypothesis-jsonschema where the schema is draft-7 expressible (objects included, through a small adapter for
the hypothesis internal it calls: :class:`_Many`) -- are validated with jsonschema-rs under both schemas, and
none may contradict the claim:

* backward claimed: no instance valid under OLD and invalid under NEW;
* forward claimed: no instance valid under NEW and invalid under OLD.

A second property starts from a family of realistic schemas (orders, discriminated events, conditionals,
ranges and enums) readable alike as draft-07 and 2020-12, rewrites them the way decisions 0099-0101 must see
through (a range as its enum, oneOf as anyOf over disjoint branches, a moved if, and the same one value off),
and checks every claimed direction with instances hypothesis-jsonschema generates from the source side.

A failure here is an engine bug (a "compatible" verdict a real instance refutes); hypothesis prints the
minimal pair and instance, and its database replays it on the next run.
"""

from __future__ import annotations

import copy
import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import hypothesis.strategies as st
from hypothesis import HealthCheck, event, given, note, reject, settings
from hypothesis.database import DirectoryBasedExampleDatabase
from hypothesis.errors import InvalidArgument

from tests.compat.jsonschema_corpus import literals, make_validator

Json = Any
Draw = Callable[[st.SearchStrategy[Any]], Any]
Ptr = tuple[str | int, ...]

_DATABASE = DirectoryBasedExampleDatabase(str(Path(__file__).resolve().parents[2] / ".hypothesis" / "examples"))
_MAX_EXAMPLES = 1500

NAMES = ("a", "b", "c", "x-1")
PATTERNS: dict[str, tuple[str, ...]] = {
    "^a": ("a", "ab", "ba", ""),
    "^[a-z]+$": ("abc", "a1", ""),
    "^[0-9]+$": ("12", "1a", ""),
    "b": ("abc", "a", "b"),
    "^x-": ("x-1", "y-1"),
}
FORMATS: dict[str, tuple[str, ...]] = {
    "email": ("a@b.c", "x"),
    "date": ("2024-01-01", "2024-13-01"),
    "ipv4": ("10.0.0.1", "1.2.3"),
    "uuid": ("123e4567-e89b-12d3-a456-426614174000", "x"),
}
NUMBERS = (-2, -1, 0, 1, 2, 3, 0.5, 1.5, 2.5, 10)
STEPS = (1, 2, 3, 0.5, 0.25)
TYPES = ("null", "boolean", "integer", "number", "string", "array", "object")
SCALARS: tuple[Json, ...] = (None, True, False, 0, 1, -1, 1.5, 2, 2.0, "", "a", "ab", "x-1")
NUMERIC_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
LENGTH_BOUNDS = ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties")
DEF_REF = "#/$defs/D"

# Keywords whose value is one schema, a list of schemas, or a map of schemas: where mutations may land.
_ONE = (
    "items",
    "contains",
    "additionalProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
    "not",
    "propertyNames",
    "if",
    "then",
    "else",
)
_LIST = ("prefixItems", "anyOf", "oneOf", "allOf")
_MAP = ("properties", "patternProperties", "$defs", "dependentSchemas")
# A $ref placed below one of these consumes part of the instance, so a cycle through it terminates.
_GUARDS = {"properties", "patternProperties", "additionalProperties", "items", "prefixItems", "contains"}


# ---------------------------------------------------------------------------------------------------------
# Schemas

_nums = st.sampled_from(NUMBERS)
_lengths = st.integers(0, 4)


@lru_cache(maxsize=4)
def _leaves(with_ref: bool, with_bool: bool = True) -> st.SearchStrategy[Json]:
    options = [
        *([st.booleans()] if with_bool else []),
        st.just({}),
        st.fixed_dictionaries(
            {"type": st.sampled_from(["integer", "number"])},
            optional={
                "minimum": _nums,
                "maximum": _nums,
                "exclusiveMinimum": _nums,
                "exclusiveMaximum": _nums,
                "multipleOf": st.sampled_from(STEPS),
            },
        ),
        st.fixed_dictionaries(
            {"type": st.just("string")},
            optional={
                "minLength": _lengths,
                "maxLength": _lengths,
                "pattern": st.sampled_from(sorted(PATTERNS)),
                "format": st.sampled_from(sorted(FORMATS)),
            },
        ),
        st.fixed_dictionaries(
            {
                "enum": st.lists(
                    st.sampled_from(SCALARS), min_size=1, max_size=4, unique_by=lambda v: (type(v).__name__, v)
                )
            },
            optional={"type": st.sampled_from(TYPES)},
        ),
        st.fixed_dictionaries({"const": st.sampled_from(SCALARS)}),
        st.fixed_dictionaries({"type": st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True)}),
        st.fixed_dictionaries(
            {},
            optional={
                "minimum": _nums,
                "maxLength": _lengths,
                "minItems": _lengths,
                "pattern": st.sampled_from(sorted(PATTERNS)),
            },
        ),
    ]
    if with_ref:
        options.append(st.just({"$ref": DEF_REF}))
    return st.one_of(options)


def _merged(
    core: st.SearchStrategy[dict[str, Json]], extra: st.SearchStrategy[dict[str, Json]]
) -> st.SearchStrategy[dict[str, Json]]:
    return st.builds(lambda a, b: {**a, **b}, core, extra)


def _objects(kids: st.SearchStrategy[Json]) -> st.SearchStrategy[Json]:
    core = st.fixed_dictionaries(
        {"type": st.just("object"), "properties": st.dictionaries(st.sampled_from(NAMES), kids, max_size=3)},
        optional={
            "required": st.lists(st.sampled_from(NAMES), max_size=2, unique=True),
            "additionalProperties": st.one_of(st.booleans(), kids),
        },
    )
    extra = st.one_of(
        st.just({}),
        st.just({}),
        st.fixed_dictionaries({"patternProperties": st.fixed_dictionaries({"^x-": kids})}),
        st.fixed_dictionaries({}, optional={"minProperties": st.integers(0, 2), "maxProperties": st.integers(0, 3)}),
        st.fixed_dictionaries({"propertyNames": st.sampled_from([{"maxLength": 1}, {"pattern": "^[a-c]"}])}),
        st.fixed_dictionaries({"dependentRequired": st.just({"a": ["b"]})}),
        st.fixed_dictionaries({"unevaluatedProperties": st.just(False)}),
    )
    return _merged(core, extra)


def _arrays(kids: st.SearchStrategy[Json]) -> st.SearchStrategy[Json]:
    core = st.fixed_dictionaries({"type": st.just("array")}, optional={"items": kids})
    extra = st.one_of(
        st.just({}),
        st.fixed_dictionaries({"prefixItems": st.lists(kids, min_size=1, max_size=2)}),
        st.fixed_dictionaries(
            {"contains": kids}, optional={"minContains": st.integers(0, 2), "maxContains": st.integers(1, 3)}
        ),
        st.fixed_dictionaries(
            {}, optional={"minItems": st.integers(0, 2), "maxItems": st.integers(0, 3), "uniqueItems": st.booleans()}
        ),
    )
    return _merged(core, extra)


def _logic(kids: st.SearchStrategy[Json]) -> st.SearchStrategy[Json]:
    branches = st.lists(kids, min_size=1, max_size=3)
    return st.one_of(
        st.fixed_dictionaries({"anyOf": branches}),
        st.fixed_dictionaries({"oneOf": branches}),
        st.fixed_dictionaries({"allOf": branches}),
        st.fixed_dictionaries({"not": kids}),
        st.fixed_dictionaries({"if": kids, "then": kids}, optional={"else": kids}),
    )


@lru_cache(maxsize=2)
def schemas(with_ref: bool) -> st.SearchStrategy[Json]:
    """Subschemas of the grammar; with ``with_ref`` some leaves are ``{"$ref": "#/$defs/D"}``."""
    return st.recursive(
        _leaves(with_ref), lambda kids: st.one_of(_objects(kids), _arrays(kids), _logic(kids)), max_leaves=6
    )


def _walk(node: Json, path: Ptr = ()) -> list[Ptr]:
    """Pointers (as tuples) to every subschema of ``node``, ``node`` itself first."""
    out = [path]
    if not isinstance(node, dict):
        return out
    for key in _ONE:
        if key in node:
            out += _walk(node[key], (*path, key))
    for key in _LIST:
        for i, sub in enumerate(node.get(key) or ()):
            out += _walk(sub, (*path, key, i))
    for key in _MAP:
        for name, sub in (node.get(key) or {}).items():
            out += _walk(sub, (*path, key, name))
    return out


def _mentions_ref(node: Json) -> bool:
    return DEF_REF in json.dumps(node)


@lru_cache(maxsize=1)
def _document_parts() -> tuple[st.SearchStrategy[Json], st.SearchStrategy[Json]]:
    """(root, definition D) strategies, built once: constructing recursive strategies is not cheap."""
    kids = schemas(True)
    entry = st.sampled_from([{"$ref": DEF_REF}, {"type": "object", "properties": {"d": {"$ref": DEF_REF}}}])
    root = st.one_of(_objects(kids), _objects(kids), _arrays(kids), kids, entry)  # mostly structured roots
    plain = schemas(False)
    ref = {"$ref": DEF_REF}
    # D refers to itself below a property or an item (a guarded cycle), also through not/anyOf/oneOf, where
    # co-inductive reasoning has to keep the two directions apart.
    link = st.one_of(
        st.just(ref),
        st.just({"not": ref}),
        st.builds(lambda x: {"anyOf": [ref, x]}, plain),
        st.builds(lambda x: {"oneOf": [ref, x]}, plain),
        st.just({"type": "array", "items": ref}),
    )
    recursive = st.builds(
        lambda v, nxt, closed: {
            "type": "object",
            "properties": {"v": v, "next": nxt},
            **({"additionalProperties": False} if closed else {}),
        },
        plain,
        link,
        st.booleans(),
    )
    return root, st.one_of(plain, recursive, recursive)


@st.composite
def documents(draw: Draw) -> Json:
    """A root schema; when it references D, ``$defs`` holds D (plain, or recursive through a property)."""
    roots, definitions = _document_parts()
    root = draw(roots)
    if not _mentions_ref(root) and draw(st.integers(0, 5)) != 0:
        return root
    definition = draw(definitions)
    if isinstance(root, bool):
        root = {} if root else {"not": {}}
    return {**root, "$defs": {"D": definition}}


# ---------------------------------------------------------------------------------------------------------
# Mutations: each takes a subschema and returns its replacement. "annotate" is the only neutral one.


def _get(doc: Json, path: Ptr) -> Json:
    for step in path:
        doc = doc[step]
    return doc


def _set(doc: Json, path: Ptr, value: Json) -> Json:
    if not path:
        return value
    _get(doc, path[:-1])[path[-1]] = value
    return doc


def _m_replace(draw: Draw, node: Json) -> Json:
    # true/false replacements are rare on purpose: they tend to make every verdict trivial.
    return draw(st.one_of(_leaves(False, with_bool=False), _leaves(False, with_bool=False), st.booleans()))


def _m_annotate(draw: Draw, node: Json) -> Json:
    key = draw(st.sampled_from(["description", "title", "examples", "default", "$comment", "deprecated"]))
    value = {"examples": [1, "a"], "deprecated": True}.get(key, draw(st.sampled_from(["x", "y"])))
    return {**node, key: value}


def _kinds(node: dict[str, Json]) -> set[str]:
    """The instance types a schema node's own keywords can constrain (all of them when type is absent)."""
    kinds = node.get("type", list(TYPES))
    found = {kinds} if isinstance(kinds, str) else set(kinds)
    return found | {"number"} if "integer" in found else found


_BOUNDS_BY_KIND = {
    "number": ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"),
    "string": ("minLength", "maxLength"),
    "array": ("minItems", "maxItems"),
    "object": ("minProperties", "maxProperties"),
}


def _m_bound(draw: Draw, node: Json) -> Json:
    node = dict(node)
    key = draw(st.sampled_from([k for kind in sorted(_kinds(node)) for k in _BOUNDS_BY_KIND.get(kind, ())]))
    if key not in node:
        node[key] = draw(
            st.sampled_from(STEPS) if key == "multipleOf" else _nums if key in NUMERIC_BOUNDS else _lengths
        )
    elif draw(st.booleans()):
        del node[key]
    elif key == "multipleOf":
        node[key] = node[key] * draw(st.sampled_from([2, 0.5]))
    elif key in NUMERIC_BOUNDS:
        node[key] = node[key] + draw(st.sampled_from([-1, -0.5, 0.5, 1]))
    else:
        node[key] = max(0, node[key] + draw(st.sampled_from([-1, 1])))
    return node


def _m_object_rules(draw: Draw, node: Json) -> Json:
    """Add, change or drop dependentRequired, dependentSchemas or propertyNames."""
    node = dict(node)
    key = draw(st.sampled_from(["dependentRequired", "dependentSchemas", "propertyNames"]))
    if key in node and draw(st.booleans()):
        del node[key]
    elif key == "dependentRequired":
        node[key] = draw(st.sampled_from([{"a": ["b"]}, {"a": ["b", "c"]}, {"b": ["a"]}, {"a": []}]))
    elif key == "dependentSchemas":
        node[key] = {draw(st.sampled_from(NAMES)): draw(_leaves(False))}
    else:
        node[key] = draw(
            st.sampled_from([{"maxLength": 1}, {"maxLength": 2}, {"pattern": "^[a-c]"}, {"enum": ["a"]}, True])
        )
    return node


def _m_type(draw: Draw, node: Json) -> Json:
    node = dict(node)
    current = node.get("type")
    if current is None:
        node["type"] = draw(st.sampled_from(TYPES))
        return node
    kinds = [current] if isinstance(current, str) else list(current)
    choice = draw(st.sampled_from(["add", "drop", "swap", "delete"]))
    if choice == "add":
        kinds.append(draw(st.sampled_from([t for t in TYPES if t not in kinds] or ["null"])))
    elif choice == "drop" and len(kinds) > 1:
        kinds.remove(draw(st.sampled_from(kinds)))
    elif choice == "swap":
        kinds = [draw(st.sampled_from(TYPES))]
    else:
        del node["type"]
        return node
    node["type"] = kinds[0] if len(set(kinds)) == 1 else sorted(set(kinds), key=kinds.index)
    return node


def _m_enum(draw: Draw, node: Json) -> Json:
    node = dict(node)
    if "const" in node:
        value = node.pop("const")
        if draw(st.booleans()):
            node["enum"] = [value, draw(st.sampled_from(SCALARS))]
    elif "enum" in node:
        members = list(node["enum"])
        if len(members) > 1 and draw(st.booleans()):
            members.remove(draw(st.sampled_from(members)))
        else:
            members.append(draw(st.sampled_from(SCALARS)))
        node["enum"] = members
    else:
        node["enum"] = draw(st.lists(st.sampled_from(SCALARS), min_size=1, max_size=3))
    return node


def _m_property(draw: Draw, node: Json) -> Json:
    node = dict(node)
    props = dict(node.get("properties") or {})
    name = draw(st.sampled_from(NAMES))
    if name in props and draw(st.booleans()):
        del props[name]
    else:
        props[name] = draw(_leaves(False))
    node["properties"] = props
    return node


def _m_required(draw: Draw, node: Json) -> Json:
    node = dict(node)
    required = list(node.get("required") or [])
    name = draw(st.sampled_from(NAMES))
    if name in required:
        required.remove(name)
    else:
        required.append(name)
    node["required"] = required
    return node


def _m_content(draw: Draw, node: Json) -> Json:
    """Open or close an object, or change its extra keys' schema."""
    node = dict(node)
    key = draw(st.sampled_from(["additionalProperties", "patternProperties", "unevaluatedProperties"]))
    if key in node and draw(st.booleans()):
        del node[key]
    elif key == "patternProperties":
        node[key] = {draw(st.sampled_from(["^x-", "^a"])): draw(_leaves(False))}
    else:
        node[key] = draw(st.one_of(st.booleans(), _leaves(False)))
    return node


def _m_items(draw: Draw, node: Json) -> Json:
    node = dict(node)
    key = draw(st.sampled_from(["items", "prefixItems", "contains", "minContains", "maxContains", "uniqueItems"]))
    if key in node and draw(st.booleans()):
        del node[key]
    elif key == "prefixItems":
        node[key] = [*node.get(key, []), draw(_leaves(False))]
    elif key in ("minContains", "maxContains"):
        node[key] = draw(st.integers(0 if key == "minContains" else 1, 3))
    elif key == "uniqueItems":
        node[key] = not node.get(key, False)
    else:
        node[key] = draw(st.one_of(st.booleans(), _leaves(False)))
    return node


def _m_logic(draw: Draw, node: Json) -> Json:
    present = [k for k in ("anyOf", "oneOf", "allOf") if isinstance(node, dict) and k in node]
    if present:
        node = dict(node)
        key = draw(st.sampled_from(present))
        branches = list(node[key])
        if len(branches) > 1 and draw(st.booleans()):
            branches.pop(draw(st.integers(0, len(branches) - 1)))
        else:
            branches.append(draw(_leaves(False)))
        node[key] = branches
        return node
    key = draw(st.sampled_from(["anyOf", "oneOf", "allOf", "not"]))
    return {"not": node} if key == "not" else {key: [node, draw(_leaves(False))]}


def _m_string(draw: Draw, node: Json) -> Json:
    node = dict(node)
    key = draw(st.sampled_from(["pattern", "format"]))
    if key in node and draw(st.booleans()):
        del node[key]
    else:
        node[key] = draw(st.sampled_from(sorted(PATTERNS if key == "pattern" else FORMATS)))
    return node


def _m_delete(draw: Draw, node: Json) -> Json:
    node = dict(node)
    del node[draw(st.sampled_from(sorted(node)))]
    return node


def _m_ref(draw: Draw, node: Json) -> Json:
    return {"$ref": draw(st.sampled_from([DEF_REF, "#"]))}


_MUTATIONS: dict[str, Callable[[Draw, Json], Json]] = {
    "replace": _m_replace,
    "annotate": _m_annotate,
    "bound": _m_bound,
    "type": _m_type,
    "enum": _m_enum,
    "property": _m_property,
    "required": _m_required,
    "content": _m_content,
    "object_rules": _m_object_rules,
    "items": _m_items,
    "logic": _m_logic,
    "string": _m_string,
    "delete": _m_delete,
    "ref": _m_ref,
}
# Keyword-level mutations are drawn more often than wholesale ones, so that every keyword family gets its
# share of single, sharp changes.
_WEIGHTS = {
    "bound": 4,
    "items": 3,
    "property": 2,
    "required": 2,
    "content": 2,
    "object_rules": 2,
    "string": 2,
    "enum": 2,
}
# Mutations that need a dict node, and the instance type they act on (None: any type).
_NEEDS_KIND: dict[str, str | None] = {
    "annotate": None,
    "bound": None,
    "type": None,
    "enum": None,
    "delete": None,
    "property": "object",
    "required": "object",
    "content": "object",
    "object_rules": "object",
    "items": "array",
    "string": "string",
}


def _applicable(doc: Json, path: Ptr, node: Json) -> list[str]:
    """Mutations that can change what ``node`` accepts: keywords of the types it admits, and a few generic ones."""
    kinds = _kinds(node) if isinstance(node, dict) else set()
    names = [
        n for n in _MUTATIONS if n not in _NEEDS_KIND or (isinstance(node, dict) and _NEEDS_KIND[n] in (None, *kinds))
    ]
    if isinstance(node, dict) and not node:
        names.remove("delete")
    if "bound" in names and not any(kind in _BOUNDS_BY_KIND for kind in kinds):
        names.remove("bound")
    guarded = bool(_GUARDS & {p for p in path if isinstance(p, str)}) and "$defs" not in path
    if not (guarded and isinstance(doc, dict) and "D" in (doc.get("$defs") or {})):
        names.remove("ref")
    return names


@st.composite
def related_pairs(draw: Draw) -> tuple[Json, Json, list[str]]:
    """(OLD, NEW, names of the mutations that turned OLD into NEW)."""
    old = draw(documents())
    new = copy.deepcopy(old)
    applied: list[str] = []
    for _ in range(draw(st.sampled_from([1, 1, 1, 2, 3]))):  # mostly one change, so each verdict is sharp
        path = draw(st.sampled_from(_walk(new)))
        node = _get(new, path)
        # At the root, mutate the body and keep $defs where "#/$defs/D" expects it.
        defs = node.pop("$defs", None) if not path and isinstance(node, dict) else None
        names = _applicable(new, path, node)
        name = draw(st.sampled_from([n for n in names for _ in range(_WEIGHTS.get(n, 1))]))
        mutated = _MUTATIONS[name](draw, node)
        if defs is not None:
            mutated = {**({} if mutated is True else {"not": {}} if mutated is False else mutated), "$defs": defs}
        new = _set(new, path, mutated)
        applied.append(name)
    return old, new, applied


# ---------------------------------------------------------------------------------------------------------
# Instances


def _scalars(old: Json, new: Json) -> list[Json]:
    found = [v for v in literals(old, new) if not isinstance(v, dict | list)]
    found += [s for examples in (*PATTERNS.values(), *FORMATS.values()) for s in examples]
    return list(SCALARS) + found


class _Slot(int):
    """A leaf of a generic shape, filled with one of the pair's literals after drawing."""


_SHAPES: st.SearchStrategy[Json] = st.recursive(
    st.one_of(st.builds(_Slot, st.integers(0, 255)), st.integers(-3, 12), st.text("abx-1@.", max_size=5)),
    lambda kids: (
        st.lists(kids, max_size=4)
        | st.dictionaries(st.sampled_from([*NAMES, "zz", "x-q", "v", "next"]), kids, max_size=4)
    ),
    max_leaves=8,
)


def _fill(shape: Json, scalars: list[Json]) -> Json:
    if isinstance(shape, _Slot):
        return scalars[shape % len(scalars)]
    if isinstance(shape, list):
        return [_fill(v, scalars) for v in shape]
    if isinstance(shape, dict):
        return {k: _fill(v, scalars) for k, v in shape.items()}
    return shape


def _generic(old: Json, new: Json) -> st.SearchStrategy[Json]:
    """Any JSON value, biased towards the schemas' own literals, bounds and property names."""
    scalars = _scalars(old, new)
    return _SHAPES.map(lambda shape: _fill(shape, scalars))


def _resolve(node: Json, doc: Json) -> Json:
    for _ in range(4):  # follow a few $ref hops; the sketch is a heuristic, the validator decides
        if not (isinstance(node, dict) and isinstance(node.get("$ref"), str)):
            break
        ref = node["$ref"]
        rest = {k: v for k, v in node.items() if k != "$ref"}
        target = doc if ref == "#" else doc.get("$defs", {}).get("D", True)
        node = {**target, **rest} if isinstance(target, dict) else target
    return node


@st.composite
def sketch(draw: Draw, node: Json, doc: Json, depth: int = 0) -> Json:
    """An instance that follows ``node``'s structure: often valid, always checked by the real validator."""
    node = _resolve(node, doc)
    if depth > 4 or not isinstance(node, dict):
        return draw(st.sampled_from(SCALARS))
    for key in ("anyOf", "oneOf", "allOf"):
        if node.get(key):
            branch = draw(st.sampled_from(node[key]))
            rest = {k: v for k, v in node.items() if k != key}
            node = {**rest, **branch} if isinstance(branch, dict) else rest
    if "const" in node:
        return node["const"]
    if node.get("enum"):
        return draw(st.sampled_from(node["enum"]))
    kinds = node.get("type", draw(st.sampled_from(TYPES)))
    kind = draw(st.sampled_from(kinds)) if isinstance(kinds, list) and kinds else kinds
    maker = {
        "integer": _sketch_number,
        "number": _sketch_number,
        "string": _sketch_string,
        "array": _sketch_array,
        "object": _sketch_object,
    }.get(kind)
    return maker(draw, node, doc, depth) if maker else draw(st.sampled_from(SCALARS))


def _sketch_number(draw: Draw, node: Json, doc: Json, depth: int) -> Json:
    edges = [node[k] for k in NUMERIC_BOUNDS if isinstance(node.get(k), int | float)]
    value = draw(st.sampled_from([*edges, *[e + d for e in edges for d in (-1, 1, 0.5, -0.5)], 0, 1, 2]))
    step = node.get("multipleOf")
    if isinstance(step, int | float) and step > 0:
        value = round(value / step) * step
    return int(value) if node.get("type") == "integer" and float(value).is_integer() else value


def _sketch_string(draw: Draw, node: Json, doc: Json, depth: int) -> Json:
    if node.get("format") in FORMATS:
        return draw(st.sampled_from(FORMATS[node["format"]]))
    if node.get("pattern") in PATTERNS:
        return draw(st.sampled_from(PATTERNS[node["pattern"]]))
    low = node.get("minLength", 0)
    return "a" * draw(st.integers(low, max(low, node.get("maxLength", low + 3))))


def _sketch_array(draw: Draw, node: Json, doc: Json, depth: int) -> Json:
    low = node.get("minItems", 0)
    size = draw(st.integers(low, max(low, min(node.get("maxItems", 3), 4))))
    prefix = node.get("prefixItems") or []
    out = [draw(sketch(prefix[i] if i < len(prefix) else node.get("items", True), doc, depth + 1)) for i in range(size)]
    if "contains" in node and draw(st.booleans()):
        out.insert(draw(st.integers(0, len(out))), draw(sketch(node["contains"], doc, depth + 1)))
    return out


def _sketch_object(draw: Draw, node: Json, doc: Json, depth: int) -> Json:
    props = node.get("properties") or {}
    optional = draw(st.lists(st.sampled_from([*props, "x-1", "zz"]), max_size=3, unique=True))
    out: dict[str, Json] = {}
    for name in [*(node.get("required") or []), *optional]:
        if name in props:
            schema = props[name]
        elif name.startswith("x-") and "^x-" in (node.get("patternProperties") or {}):
            schema = node["patternProperties"]["^x-"]
        else:
            schema = node.get("additionalProperties", True)
        out[name] = draw(sketch(schema, doc, depth + 1))
    return out


_DRAFT7_ONLY_NOT = re.compile(
    r'"(\$ref|\$defs|prefixItems|dependentRequired|dependentSchemas|unevaluated\w+|'
    r'minContains|maxContains)"'
)


class _Many:
    """hypothesis-jsonschema 0.23 drives ``hypothesis.internal.conjecture.utils.many`` through ``more()`` and
    ``reject()``; the installed hypothesis turned it into a context manager iterated with ``for``. This
    adapter offers the old calls on the new object, so the library can generate objects again."""

    def __init__(self, data: Any, **sizes: Any) -> None:
        from hypothesis.internal.conjecture import utils as cu

        self._many = cu.many(data, **sizes)
        self._many.__enter__()
        self._steps = iter(self._many)

    def more(self) -> bool:
        if next(self._steps, False) is None:
            return True
        self._many.__exit__(None, None, None)
        return False

    def reject(self, why: str | None = None) -> None:
        self._many.reject(why)


@contextmanager
def _objects_enabled() -> Iterator[None]:
    """hypothesis-jsonschema with :class:`_Many` in place of the internal it calls (restored on exit)."""
    import hypothesis_jsonschema._from_schema as hjs

    namespace = vars(hjs)  # the module's globals: what its functions look "cu" up in
    saved = namespace["cu"]
    namespace["cu"] = SimpleNamespace(many=_Many)
    try:
        yield
    finally:
        namespace["cu"] = saved


@lru_cache(maxsize=512)
def _from_schema(text: str) -> st.SearchStrategy[Json] | None:
    """hypothesis-jsonschema's generator (drafts 4-7 only), when the schema means the same there; an empty
    strategy when the schema accepts nothing. Draw from it inside :func:`_objects_enabled`.
    """
    import hypothesis_jsonschema._from_schema as hjs

    if _DRAFT7_ONLY_NOT.search(text):
        return None
    try:
        # The public from_schema defers construction errors into the strategy (it raises when drawn), so
        # call the builder it wraps and drop the schemas it cannot handle up front.
        build = getattr(hjs, "__from_schema")
        strategy: st.SearchStrategy[Json] = build(
            json.loads(text), custom_formats=None, alphabet=hjs.CharStrategy.from_args(allow_x00=True, codec="utf-8")
        )
        return strategy
    except Exception:  # unsupported combinations: we simply have one generator less
        return None


_PROBES: tuple[Json, ...] = (None, True, False, 0, 1, -1, 1.5, "", "a", "x-1", [], {}, [1], {"a": 1})
_CAP = 40  # variants kept per subschema: enough to sit on every edge, small enough to stay cheap


def _unique(values: list[Json]) -> list[Json]:
    seen: set[str] = set()
    out = []
    for value in values:
        key = repr(value)  # tells True from 1 and 1 from 1.0, unlike ==; key order may leave a duplicate
        if key not in seen:
            seen.add(key)
            out.append(value)
    return out


def _pick(options: list[Json], n: int) -> list[Json]:
    """At most ``n`` options spread over the whole list (the head alone would keep one kind of value)."""
    if len(options) <= n:
        return options
    step = len(options) / n
    return [options[int(i * step)] for i in range(n)]


def _number_variants(node: dict[str, Json]) -> list[Json]:
    edges = [node[k] for k in NUMERIC_BOUNDS if isinstance(node.get(k), int | float)]
    out: list[Json] = [e + d for e in edges for d in (0, -1, 1, -0.5, 0.5, -0.05, 0.05)]
    step = node.get("multipleOf")
    if isinstance(step, int | float) and step > 0:
        out += [step * k for k in (-1, 0, 1, 2, 3)] + [step / 2]
        out += [round(e / step) * step + d * step for e in edges for d in (-1, 0, 1)]
    return [*out, 0, 1, -1, 2, 1.5, 0.5, 10]


def _string_variants(node: dict[str, Json]) -> list[Json]:
    lengths = [node[k] + d for k in ("minLength", "maxLength") if isinstance(node.get(k), int) for d in (-1, 0, 1)]
    out: list[Json] = ["a" * n for n in lengths if n >= 0]
    out += [x for examples in PATTERNS.values() for x in examples]
    out += [x for examples in FORMATS.values() for x in examples]
    return [*out, "", "a", "ab", "abc", "abcd", "1", "x-1"]


def _array_variants(node: dict[str, Json], doc: Json, depth: int) -> list[Json]:
    prefix = [_variants(p, doc, depth + 1) for p in node.get("prefixItems") or []]
    rest = _variants(node.get("items", True), doc, depth + 1)
    contained = _pick(_variants(node["contains"], doc, depth + 1), 8) if "contains" in node else []
    firsts = [options[0] for options in prefix if options]
    out: list[Json] = [[], *[[v] for v in _pick(prefix[0] if prefix else rest, 10)], [*firsts]]
    out += [[*firsts, v] for v in _pick(rest, 8)] + [[v, v] for v in _pick(rest, 4)]
    out += [[v] for v in contained] + [[v, v] for v in _pick(contained, 3)]
    out += [[*firsts, v] for v in _pick(contained, 4)]
    for key in ("minItems", "maxItems", "minContains", "maxContains"):
        if isinstance(node.get(key), int) and (rest or contained):
            item = (contained or rest)[0]
            out += [[item] * n for n in (node[key] - 1, node[key], node[key] + 1) if 0 <= n <= 6]
    return out


def _object_variants(node: dict[str, Json], doc: Json, depth: int) -> list[Json]:
    props = node.get("properties") or {}

    def schema_for(name: str) -> Json:
        if name in props:
            return props[name]
        for pattern, schema in (node.get("patternProperties") or {}).items():
            if re.search(pattern, name):
                return schema
        return node.get("additionalProperties", True)

    names = _unique([*props, *NAMES, "x-1", "zz"])
    base = {}
    for name in node.get("required") or []:
        options = _variants(schema_for(name), doc, depth + 1)
        base[name] = options[0] if options else None
    out: list[Json] = [
        {},
        base,
        {**base, **{n: (_variants(schema_for(n), doc, depth + 1) or [None])[0] for n in props}},
    ]
    for name in names:
        out += [{**base, name: v} for v in _pick(_variants(schema_for(name), doc, depth + 1), 12 if depth == 0 else 6)]
    return out


def _variants(node: Json, doc: Json, depth: int = 0) -> list[Json]:
    """A small, deterministic set of instances around every edge ``node`` draws (valid or not)."""
    node = _resolve(node, doc)
    if not isinstance(node, dict) or depth > 3:
        return list(_PROBES)
    out: list[Json] = []
    for key in ("anyOf", "oneOf", "allOf"):
        rest = {k: v for k, v in node.items() if k != key}
        for branch in node.get(key) or []:
            out += _pick(_variants({**rest, **branch} if isinstance(branch, dict) else rest, doc, depth + 1), 10)
    for key in ("not", "if", "then", "else", "dependentSchemas"):
        # These apply to the instance itself: their edges are edges of the node too.
        value = node.get(key)
        subs = value.values() if key == "dependentSchemas" and isinstance(value, dict) else [value]
        for sub in (s for s in subs if isinstance(s, dict)):
            out += _pick(_variants(sub, doc, depth + 1), 10)
    if "const" in node:
        out.append(node["const"])
    out += node.get("enum") or []
    kinds = node.get("type", list(TYPES))
    for kind in [kinds] if isinstance(kinds, str) else kinds:
        if kind in ("integer", "number"):
            out += _number_variants(node)
        elif kind == "string":
            out += _string_variants(node)
        elif kind == "array":
            out += _array_variants(node, doc, depth)
        elif kind == "object":
            out += _object_variants(node, doc, depth)
        else:
            out += [None] if kind == "null" else [True, False] if kind == "boolean" else []
    return _pick(_unique(out), _CAP) if depth else _unique(out)


def instances(old: Json, new: Json) -> st.SearchStrategy[Json]:
    """Edge-biased values and structural sketches of both schemas."""
    return st.one_of(_generic(old, new), sketch(old, old), sketch(new, new))


def draft7_instances(data: st.DataObject, old: Json, new: Json) -> list[Json]:
    """A few instances from hypothesis-jsonschema for whichever side it can handle."""
    drawn: list[Json] = []
    for schema in (old, new):
        strategy = _from_schema(json.dumps(schema, sort_keys=True))
        try:
            if strategy is None or strategy.is_empty:  # is_empty builds the lazy parts, which may raise too
                continue
            drawn += data.draw(st.lists(strategy, max_size=4), label="draft-7 instances")
        except InvalidArgument:  # it builds some strategies for empty subschemas lazily, and they raise
            reject()
    return drawn


# ---------------------------------------------------------------------------------------------------------


def test_compatible_verdicts_are_never_contradicted_by_an_instance() -> None:
    from subhive.compat.jsonschema import CODES, diff_schemas

    stats: Counter[str] = Counter()

    @settings(
        max_examples=_MAX_EXAMPLES,
        deadline=None,
        database=_DATABASE,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )
    @given(pair=related_pairs(), data=st.data())
    def check(pair: tuple[Json, Json, list[str]], data: st.DataObject) -> None:
        old, new, applied = pair
        report = diff_schemas(old, new)
        note(f"mutations={applied}\nchanges={[c.to_dict() for c in report.changes]}")
        assert {c.code for c in report.changes} <= set(CODES)
        assert diff_schemas(old, copy.deepcopy(old)).changes == (), "identical schemas give zero changes"
        if set(applied) == {"annotate"}:
            assert (report.backward, report.forward) == (True, True), "annotations only must be neutral"
        stats["pairs"] += 1
        claims = [d for d, claimed in (("backward", report.backward), ("forward", report.forward)) if claimed]
        event(f"verdict: {'+'.join(claims) or 'none'}")
        if not claims:
            return
        stats["compatible"] += 1
        valid_old, valid_new = make_validator(old), make_validator(new)
        drawn = data.draw(st.lists(instances(old, new), min_size=4, max_size=12), label="instances")
        pool = [*drawn, *draft7_instances(data, old, new), *_variants(old, old), *_variants(new, new)]
        for direction in claims:
            source, dest = (valid_old, valid_new) if direction == "backward" else (valid_new, valid_old)
            accepted = [x for x in pool if source(x)]
            stats["claims"] += 1
            stats["claims_with_instances"] += bool(accepted)
            refuted = [x for x in accepted if not dest(x)]
            assert refuted == [], f"UNSOUND {direction}: {refuted[0]!r} contradicts the verdict"

    with _objects_enabled():
        check()
    # Without these the property has no teeth: compatible verdicts must occur and be put to the test.
    assert stats["compatible"] >= 0.25 * stats["pairs"], stats
    assert stats["claims_with_instances"] >= 0.4 * stats["claims"], stats


# ---------------------------------------------------------------------------------------------------------
# Realistic schemas, rewritten and mutated, checked with hypothesis-jsonschema instances of the source side.
#
# The family is written in keywords that mean the same in draft-07 (what hypothesis-jsonschema reads) and in
# 2020-12 (what subhive reads): no $defs, prefixItems, dependent*, unevaluated*. Mutations include rewrites
# that keep the meaning (a range as the enum listing it, oneOf as anyOf over disjoint branches, ...) so that
# the sharper verdicts of decisions 0099-0101 are claimed and put to the test, not only the easy ones.


def _kind(value: str) -> Json:
    return {"properties": {"kind": {"const": value}}, "required": ["kind"]}


REALISTIC: tuple[Json, ...] = (
    {
        "type": "object",
        "properties": {
            "id": {"type": "string", "minLength": 1, "maxLength": 8},
            "qty": {"type": "integer", "minimum": 1, "maximum": 5},
            "status": {"enum": ["new", "paid", "shipped"]},
            "price": {"type": "number", "exclusiveMinimum": 0, "maximum": 100},
            "note": {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "null"}]},
        },
        "required": ["id", "qty"],
        "additionalProperties": False,
    },
    {
        "oneOf": [
            {
                "type": "object",
                "properties": {"kind": {"const": "created"}, "at": {"type": "integer"}},
                "required": ["kind", "at"],
            },
            {
                "type": "object",
                "properties": {"kind": {"const": "deleted"}, "why": {"enum": ["a", "b"]}},
                "required": ["kind"],
            },
        ]
    },
    {
        "type": "object",
        "properties": {"kind": {"type": "string"}},
        "required": ["kind"],
        "oneOf": [
            {"properties": {"kind": {"const": "a"}, "x": {"type": "integer", "minimum": 0, "maximum": 3}}},
            {"properties": {"kind": {"const": "b"}, "y": {"type": "string", "maxLength": 2}}},
        ],
    },
    {
        "type": "object",
        "properties": {"kind": {"enum": ["a", "b", "c"]}, "x": {"type": "integer"}, "y": {"type": "boolean"}},
        "if": _kind("a"),
        "then": {"required": ["x"]},
        "else": {"required": ["y"]},
    },
    {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 2}, "maxItems": 3},
    {"anyOf": [{"type": "integer", "minimum": 1, "maximum": 3}, {"type": "null"}]},
    {"oneOf": [{"type": "integer", "maximum": 0}, {"type": "integer", "minimum": 1, "maximum": 4}, {"type": "string"}]},
    {"type": "number", "minimum": 2, "maximum": 2},
    {"type": ["integer", "null"], "minimum": 0, "maximum": 2},
    {"enum": [1, 2, 3, "x"]},
    {"const": 2},
)


def _int_bounds(node: dict[str, Json]) -> tuple[int, int] | None:
    low, high = node.get("minimum"), node.get("maximum")
    if (
        node.get("type") in ("integer", ["integer", "null"])
        and type(low) is int
        and type(high) is int
        and 0 <= high - low <= 6
    ):
        return low, high
    return None


def _rewrites(node: Json) -> list[Json]:
    """Schemas meaning the same as ``node``, spelled the way the sharper rules have to see through."""
    if not isinstance(node, dict):
        return []
    out: list[Json] = []
    rest = {k: v for k, v in node.items() if k not in ("type", "minimum", "maximum", "enum", "const")}
    bounds = _int_bounds(node)
    if bounds is not None:
        nulls = [None] if node["type"] != "integer" else []
        out.append({**rest, "enum": [*range(bounds[0], bounds[1] + 1), *nulls]})
        kinds = "number" if not nulls else ["number", "null"]
        out.append({**rest, "type": kinds, "multipleOf": 1, "minimum": bounds[0], "maximum": bounds[1]})
    members = node.get("enum")
    if isinstance(members, list) and members and all(type(m) is int for m in members):
        low, high = min(members), max(members)
        if sorted(set(members)) == list(range(low, high + 1)):
            out.append({**rest, "type": "integer", "minimum": low, "maximum": high})
    if isinstance(members, list) and len(members) == 1:
        out.append({**rest, "const": members[0]})
    if "const" in node:
        out.append({**rest, "enum": [node["const"]]})
        if type(node["const"]) in (int, float):
            out.append({**rest, "type": "number", "minimum": node["const"], "maximum": node["const"]})
    if node.get("type") == "number" and "minimum" in node and node.get("maximum") == node["minimum"]:
        out.append({**rest, "const": node["minimum"]})
    for one, other in (("oneOf", "anyOf"), ("anyOf", "oneOf")):
        if one in node:
            branches = node[one]
            body = {k: v for k, v in node.items() if k != one}
            out.append({**body, other: branches})  # the same when the branches are disjoint, as in REALISTIC
            out.append({**body, one: branches[::-1]})
    return out


def _near_rewrites(node: Json) -> list[Json]:
    """Schemas one value away from a rewrite of ``node``: where an off-by-one in the sharper rules would show."""
    out: list[Json] = []
    for rewritten in _rewrites(node):
        members = rewritten.get("enum")
        if isinstance(members, list) and members and all(type(m) is int for m in members):
            out += [
                {**rewritten, "enum": members[:-1] or [members[0] + 1]},
                {**rewritten, "enum": [*members, max(members) + 1]},
            ]
        for key, step in (("minimum", 1), ("maximum", -1), ("maximum", 1)):
            if type(rewritten.get(key)) is int:
                out.append({**rewritten, key: rewritten[key] + step})
    return out


def _m_rewrite(draw: Draw, node: Json) -> Json:
    options = _rewrites(node)
    return draw(st.sampled_from(options)) if options else _m_annotate(draw, node)


def _m_near(draw: Draw, node: Json) -> Json:
    options = _near_rewrites(node)
    return draw(st.sampled_from(options)) if options else _m_bound(draw, node)


def _m_conditional(draw: Draw, node: Json) -> Json:
    """Add a conditional on a ``kind`` discriminator, or move its if, or drop or swap its branches."""
    node = dict(node)
    if "if" not in node:
        node["if"] = _kind(draw(st.sampled_from(["a", "b"])))
        node["then"] = {"required": [draw(st.sampled_from(NAMES))]}
        return node
    choice = draw(st.sampled_from(["move", "widen", "drop", "swap"]))
    if choice == "move":
        node["if"] = _kind(draw(st.sampled_from(["a", "b", "c"])))
    elif choice == "widen":
        node["if"] = {"properties": {"kind": {"enum": ["a", draw(st.sampled_from(["b", "c"]))]}}, "required": ["kind"]}
    elif choice == "drop":
        node.pop(draw(st.sampled_from([k for k in ("then", "else") if k in node] or ["if"])))
    else:
        then, otherwise = node.pop("then", None), node.pop("else", None)
        node.update({k: v for k, v in (("then", otherwise), ("else", then)) if v is not None})
    return node


_REALISTIC_MUTATIONS: dict[str, tuple[Callable[[Draw, Json], Json], int]] = {
    "rewrite": (_m_rewrite, 4),
    "near": (_m_near, 3),
    "conditional": (_m_conditional, 2),
    "bound": (_m_bound, 3),
    "enum": (_m_enum, 2),
    "type": (_m_type, 1),
    "required": (_m_required, 1),
    "property": (_m_property, 1),
    "logic": (_m_logic, 1),
    "string": (_m_string, 1),
    "delete": (_m_delete, 1),
}


@st.composite
def realistic_pairs(draw: Draw) -> tuple[Json, Json, list[str]]:
    """(OLD, NEW, mutations): OLD from :data:`REALISTIC`, NEW after one or two changes somewhere inside.
    A third of the changes are (near-)rewrites, made where a node has one, so the sharper rules meet their
    edges."""
    old = draw(st.sampled_from(REALISTIC))
    new = copy.deepcopy(old)
    applied: list[str] = []
    for _ in range(draw(st.sampled_from([1, 1, 2]))):
        nodes = [p for p in _walk(new) if isinstance(_get(new, p), dict)]
        rewritable = [p for p in nodes if _rewrites(_get(new, p))]
        if rewritable and draw(st.sampled_from(["any", "any", "rewrite"])) == "rewrite":
            path = draw(st.sampled_from(rewritable))
            name = draw(st.sampled_from(["rewrite", "near"]))
        else:
            path = draw(st.sampled_from(nodes))
            kinds = _kinds(_get(new, path))
            name = draw(
                st.sampled_from(
                    [
                        n
                        for n, (_, weight) in _REALISTIC_MUTATIONS.items()
                        for _ in range(weight)
                        if (n != "delete" or _get(new, path))
                        and (n not in ("bound", "near") or any(k in _BOUNDS_BY_KIND for k in kinds))
                        and (_NEEDS_KIND.get(n) in (None, *kinds))
                        and (n != "conditional" or "object" in kinds)
                    ]
                )
            )
        new = _set(new, path, _REALISTIC_MUTATIONS[name][0](draw, _get(new, path)))
        applied.append(name)
    return old, new, applied


_REALISTIC_EXAMPLES = 100


def test_realistic_compatible_verdicts_hold_for_hypothesis_jsonschema_instances() -> None:
    """For every direction the engine calls compatible, instances hypothesis-jsonschema generates from the
    source side validate under the target side (jsonschema-rs, as at run time). Rewrites that keep the
    meaning must mostly be recognised as such: the property also checks the engine stays sharp."""
    from subhive.compat.jsonschema import diff_schemas

    stats: Counter[str] = Counter()

    @settings(
        max_examples=_REALISTIC_EXAMPLES,
        deadline=None,
        database=_DATABASE,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )
    @given(pair=realistic_pairs(), data=st.data())
    def check(pair: tuple[Json, Json, list[str]], data: st.DataObject) -> None:
        old, new, applied = pair
        assert not _DRAFT7_ONLY_NOT.search(json.dumps([old, new])), "the family must read the same in draft-07"
        report = diff_schemas(old, new)
        note(f"mutations={applied}\nchanges={[c.to_dict() for c in report.changes]}")
        stats["pairs"] += 1
        if applied == ["rewrite"]:
            stats["rewrites"] += 1
            stats["rewrites_equal"] += report.backward and report.forward
        for direction, claimed in (("backward", report.backward), ("forward", report.forward)):
            if not claimed:
                continue
            source, target = (old, new) if direction == "backward" else (new, old)
            strategy = _from_schema(json.dumps(source, sort_keys=True))
            if strategy is None or strategy.is_empty:
                stats["unchecked" if strategy is None else "vacuous"] += 1  # vacuous: the source accepts nothing
                continue
            try:
                drawn = data.draw(st.lists(strategy, min_size=1, max_size=6), label=f"{direction} instances")
            except InvalidArgument:  # it builds some strategies for empty subschemas lazily, and they raise
                reject()
            stats["claims"] += 1  # counted once drawn: a draw that runs out of data abandons the example
            valid_source, valid_target = make_validator(source), make_validator(target)
            accepted = [x for x in drawn if valid_source(x)]  # the generator reads draft-07; the runtime decides
            stats["checked"] += bool(accepted)
            refuted = [x for x in accepted if not valid_target(x)]
            assert refuted == [], f"UNSOUND {direction}: {refuted[0]!r} is valid under the source side only"

    with _objects_enabled():
        check()
    assert stats["claims"] >= 0.4 * stats["pairs"], stats
    assert stats["checked"] >= 0.8 * stats["claims"], stats
    assert stats["rewrites_equal"] >= 0.8 * stats["rewrites"], stats
