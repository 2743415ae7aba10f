"""JSON values as JSON Schema sees them: equality, kinds of values, and checks of one value against keywords.
Checks whose semantics belong to the runtime validator (``pattern``, ``format``, ``multipleOf`` on floats) are
delegated to jsonschema-rs, so the engine never proves something the runtime would contradict.
"""

from __future__ import annotations

import json
import math
from collections.abc import Hashable, Iterable
from typing import Any

import jsonschema_rs
import orjson

from .._rs_validator import runtime_validator
from ..errors import InputError, Location

__all__ = [
    "ALL_KINDS",
    "NUMBER",
    "as_number",
    "canonical_text",
    "contains_ref",
    "equal_given_eq",
    "equal_refs_given_eq",
    "is_integral",
    "jkey",
    "json_equal",
    "kind_of",
    "kinds_of_type",
    "runtime_accepts",
    "type_names",
]

#: Instance kinds. ``int`` is every number with a zero fractional part (``1.0`` is an integer in 2020-12),
#: ``frac`` every other number, so ``integer`` = {int} and ``number`` = {int, frac}.
ALL_KINDS: frozenset[str] = frozenset({"null", "boolean", "object", "array", "string", "int", "frac"})
NUMBER: frozenset[str] = frozenset({"int", "frac"})
_TYPE_KINDS: dict[str, frozenset[str]] = {
    "null": frozenset({"null"}),
    "boolean": frozenset({"boolean"}),
    "object": frozenset({"object"}),
    "array": frozenset({"array"}),
    "string": frozenset({"string"}),
    "integer": frozenset({"int"}),
    "number": NUMBER,
}


# isinstance() with a tuple: "dict | list" would build a union object at every call, on the hottest paths.
_CONTAINERS = (dict, list)
_NUMBERS = (int, float)

_KIND_OF_TYPE: dict[type, str] = {
    type(None): "null",
    bool: "boolean",
    int: "int",
    str: "string",
    list: "array",
    dict: "object",
}


def kind_of(value: Any) -> str:
    """The kind of a JSON value: ``kind_of(1.0) == "int"``, ``kind_of(True) == "boolean"``."""
    if isinstance(value, float):
        return "int" if value.is_integer() else "frac"
    # Exact type lookup: bool must not be taken for int (it subclasses int in Python).
    return _KIND_OF_TYPE.get(type(value)) or (
        "boolean" if isinstance(value, bool) else "int" if isinstance(value, int) else "object"
    )


def kinds_of_type(type_value: Any) -> frozenset[str] | None:
    """The kinds allowed by a ``type`` keyword value, or None when the keyword is absent."""
    if type_value is None:
        return None
    names = [type_value] if isinstance(type_value, str) else type_value
    out: frozenset[str] = frozenset()
    for name in names:
        out |= _TYPE_KINDS.get(name, frozenset())
    return out


def type_names(kinds: Iterable[str]) -> str:
    """A readable spelling of a kind set: ``type_names({"int", "null"}) == "integer|null"``."""
    kinds = set(kinds)
    names = []
    if kinds >= NUMBER:
        names.append("number")
        kinds -= NUMBER
    names += ["integer" if k == "int" else "fractional number" if k == "frac" else k for k in sorted(kinds)]
    return "|".join(sorted(names)) if names else "nothing"


def jkey(value: Any) -> Hashable:
    """A hashable key with JSON Schema equality: ``jkey(1) == jkey(1.0)``, ``jkey(True) != jkey(1)``.

    Python's ``==`` says ``True == 1``, so every comparison of instance values goes through this key.
    """
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, _NUMBERS):
        return ("n", value)  # Python compares and hashes int/float exactly and consistently
    if isinstance(value, list):
        return ("a", tuple(jkey(v) for v in value))
    return ("o", frozenset((k, jkey(v)) for k, v in value.items()))


def as_number(value: Any) -> int | float | None:
    """``value`` when it is a JSON number (not a boolean), else None."""
    if isinstance(value, bool) or not isinstance(value, _NUMBERS):
        return None
    return value


def is_integral(value: Any) -> bool:
    number = as_number(value)
    return number is not None and (isinstance(number, int) or (math.isfinite(number) and number.is_integer()))


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_text(value: Any) -> str:
    """Canonical JSON text (sorted keys); equal texts mean equal JSON values."""
    return _CANONICAL.encode(value)


def json_equal(a: Any, b: Any, *, allow_refs: bool = True) -> bool:
    """``a`` and ``b`` are the same JSON value; with ``allow_refs=False`` also free of references.

    Python's ``==`` (C speed) already treats ``1`` and ``1.0`` alike but also ``true`` and ``1``. For the equal
    pairs, equal orjson texts (also made in C, ten times faster than a walk) prove the same value, booleans and
    numbers told apart; when the texts differ (members in another order, ``1`` against ``1.0``) a walk tells.
    Hot path: every unchanged subschema passes here.
    """
    if isinstance(a, _CONTAINERS) or isinstance(b, _CONTAINERS):
        return a == b and equal_given_eq(a, b, allow_refs=allow_refs)
    return jkey(a) == jkey(b)


def equal_given_eq(a: Any, b: Any, *, allow_refs: bool = True) -> bool:
    """``json_equal(a, b, allow_refs=...)`` for two objects or arrays already known to be ``==``."""
    try:
        text = orjson.dumps(a)
        same = text == orjson.dumps(b)
    except TypeError:  # not plain JSON (an integer beyond 64 bits): the walk decides
        same = False
    if not same:
        return _strict(a, b, allow_refs)
    # A reference keyword as a member name is '"$ref":' or ends in 'Ref":' in the text (a quote inside a
    # string is escaped); absent, no object holds one. Present, perhaps only inside a string: look.
    return allow_refs or (b'"$ref":' not in text and b'Ref":' not in text) or not contains_ref(a)


def equal_refs_given_eq(a: Any, b: Any) -> tuple[bool, bool]:
    """For two objects or arrays already known to be ``==``: ``(json_equal(a, b), whether a reference keyword
    may occur in a)``; when the second is False, none does. One pair of texts serves both questions."""
    try:
        text = orjson.dumps(a)
        same = text == orjson.dumps(b)
    except TypeError:  # not plain JSON (an integer beyond 64 bits): the walk decides
        return _strict(a, b, True), True
    if not same:
        return _strict(a, b, True), True
    return True, b'"$ref":' in text or b'Ref":' in text


def _strict(a: Any, b: Any, allow_refs: bool) -> bool:
    # Hot path (every unchanged subschema passes here): plain loops and class checks, no generators.
    pairs: Iterable[tuple[Any, Any]]
    if a.__class__ is dict:
        if not allow_refs and ("$ref" in a or "$dynamicRef" in a or "$recursiveRef" in a):
            return False
        pairs = [(x, b[key]) for key, x in a.items()]
    else:
        pairs = zip(a, b, strict=True)
    for x, y in pairs:
        if x.__class__ is dict or x.__class__ is list:
            if not _strict(x, y, allow_refs):
                return False
        elif (x.__class__ is bool) is not (y.__class__ is bool):
            return False
    return True


def contains_ref(value: Any) -> bool:
    """A reference keyword occurs somewhere inside ``value``."""
    todo = [value]  # a plain loop, stopping at the first one: every unchanged subschema is asked this
    while todo:
        current = todo.pop()
        if isinstance(current, dict):
            if "$ref" in current or "$dynamicRef" in current or "$recursiveRef" in current:
                return True
            todo += [x for x in current.values() if isinstance(x, _CONTAINERS)]
        elif isinstance(current, list):
            todo += [x for x in current if isinstance(x, _CONTAINERS)]
    return False


# Validators for single keywords, shared across diffs: building one costs ~30 us, a check ~1 us.
_VALIDATORS: dict[Hashable, Any] = {}
_MAX_VALIDATORS = 4096


def runtime_accepts(fragment: dict[str, Any], value: Any, *, pointer: str = "") -> bool:
    """Whether the runtime validator (jsonschema-rs, draft 2020-12, formats asserted) accepts ``value``.

    ``fragment`` must be a small schema without references, e.g. ``{"pattern": "^a"}``::

        runtime_accepts({"pattern": "^[0-9]+$"}, "12")  # True
    """
    key = jkey(fragment)
    validator = _VALIDATORS.get(key)
    if validator is None:
        try:
            validator = runtime_validator(fragment, draft=jsonschema_rs.Draft202012Validator, validate_formats=True)
        except (jsonschema_rs.ValidationError, ValueError) as exc:
            keyword = next(iter(fragment), "")
            raise InputError(
                f"the {keyword!r} value cannot be compiled: {str(exc).splitlines()[0]}",
                code="schema.keyword_invalid",
                location=Location(pointer=pointer),
                hint="fix the keyword value (patterns are ECMA-262 regular expressions)",
            ) from exc
        if len(_VALIDATORS) >= _MAX_VALIDATORS:
            _VALIDATORS.clear()
        _VALIDATORS[key] = validator
    return bool(validator.is_valid(value))
