"""Soundness of the object and array rules that lean on the rest of the schema (decision 0103), checked
exhaustively over a small instance domain.

OLD and NEW come from a small grammar of the keywords that interact: properties with a closed or partly
open model, ``propertyNames`` (enumerations, lengths, patterns, false), ``required``, ``dependentRequired``,
``dependentSchemas``, ``maxProperties``; ``prefixItems``, ``items``, ``contains`` with its counts,
``minItems``/``maxItems``; ``unevaluated*`` next to ``allOf``/``anyOf`` that do or do not evaluate.
Whenever the engine claims a direction, every instance of the domain (objects over five names, arrays up
to four items, values that tell the grammar's schemas apart) is validated with jsonschema-rs, and none
may contradict the claim. The domain holds each kind of name (in or out of an enumeration, one or two
characters, matching the pattern or not), value (each value schema accepts a different set) and count
the grammar can tell apart.
"""

from __future__ import annotations

import itertools
from typing import Any

import hypothesis.strategies as st
from hypothesis import HealthCheck, given, note, settings

from subhive.compat.jsonschema import diff_schemas
from tests.compat.jsonschema_corpus import make_validator

_NAMES = ("a", "b", "c", "d", "ab")
_VALUES: tuple[Any, ...] = (1, "s", 1.5, None)  # each value schema of the grammar accepts a different set
_VALUE_SCHEMAS: tuple[Any, ...] = ({"type": "string"}, {"type": "integer"}, {"type": "number"}, {}, False)

_ABSENT = object()
_OBJECTS = [
    {name: value for name, value in zip(_NAMES, combo, strict=True) if value is not _ABSENT}
    for combo in itertools.product((_ABSENT, *_VALUES), repeat=len(_NAMES))
]
_ARRAYS = [list(items) for n in range(5) for items in itertools.product(_VALUES, repeat=n)]

_few_names = st.lists(st.sampled_from(_NAMES[:4]), max_size=3, unique=True)


@st.composite
def objects(draw: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object"}
    props = draw(st.dictionaries(st.sampled_from(_NAMES[:4]), st.sampled_from(_VALUE_SCHEMAS), max_size=3))
    if props:
        schema["properties"] = props
    optional: dict[str, st.SearchStrategy[Any]] = {
        "additionalProperties": st.sampled_from([False, True, {"type": "string"}]),
        "propertyNames": st.one_of(
            _few_names.map(lambda names: {"enum": names}),
            st.sampled_from([{"maxLength": 1}, {"pattern": "^[ab]"}, False, {"const": "a"}]),
        ),
        "required": _few_names,
        "dependentRequired": st.dictionaries(st.sampled_from(_NAMES[:4]), _few_names, max_size=2),
        "dependentSchemas": st.dictionaries(
            st.sampled_from(_NAMES[:4]),
            st.one_of(_few_names.map(lambda names: {"required": names}), st.just({"maxProperties": 1})),
            max_size=2,
        ),
        "maxProperties": st.integers(0, 3),
        "unevaluatedProperties": st.sampled_from([False, {"type": "string"}]),
        "anyOf": st.sampled_from(
            [
                [{"required": ["a"]}, {"required": ["b"]}],  # evaluates no property: unevaluated* stays exact
                [{"properties": {"c": {"type": "integer"}}}, {"required": ["a"]}],
            ]
        ),
        "allOf": st.sampled_from([[{"properties": {"d": {}}}], [{"minProperties": 1}]]),
    }
    for key in draw(st.lists(st.sampled_from(sorted(optional)), max_size=4, unique=True)):
        schema[key] = draw(optional[key])
    return schema


@st.composite
def arrays(draw: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "array"}
    optional: dict[str, st.SearchStrategy[Any]] = {
        "prefixItems": st.lists(st.sampled_from(_VALUE_SCHEMAS[:4]), min_size=1, max_size=2),
        "items": st.sampled_from(_VALUE_SCHEMAS),
        "contains": st.sampled_from(_VALUE_SCHEMAS[:3]),
        "minContains": st.integers(0, 2),
        "maxContains": st.integers(1, 2),
        "minItems": st.integers(0, 2),
        "maxItems": st.integers(1, 3),
        "unevaluatedItems": st.sampled_from([False, {"type": "string"}]),
        "allOf": st.sampled_from([[{"minItems": 1}], [{"items": {"type": "string"}}], [{"prefixItems": [{}]}]]),
        "anyOf": st.sampled_from([[{"minItems": 2}, {"maxItems": 0}], [{"prefixItems": [{"type": "integer"}]}, {}]]),
    }
    for key in draw(st.lists(st.sampled_from(sorted(optional)), max_size=4, unique=True)):
        schema[key] = draw(optional[key])
    return schema


def _mutated(draw: Any, old: dict[str, Any], fresh: dict[str, Any]) -> dict[str, Any]:
    """NEW: OLD with a few keywords taken from (or dropped in favour of) another schema of the grammar."""
    differ = sorted(k for k in old.keys() | fresh.keys() if old.get(k, ...) != fresh.get(k, ...))
    if not differ:
        return fresh
    new = dict(old)
    for key in draw(st.lists(st.sampled_from(differ), min_size=1, max_size=2)):
        if key in fresh:
            new[key] = fresh[key]
        else:
            new.pop(key, None)
    return new


def _check(old: dict[str, Any], new: dict[str, Any], domain: list[Any]) -> None:
    report = diff_schemas(old, new)
    note(f"changes={[c.to_dict() for c in report.changes]}")
    valid_old, valid_new = make_validator(old), make_validator(new)
    if report.backward:
        assert [x for x in domain if valid_old(x) and not valid_new(x)][:1] == [], "UNSOUND backward"
    if report.forward:
        assert [x for x in domain if valid_new(x) and not valid_old(x)][:1] == [], "UNSOUND forward"


_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(data=st.data())
def test_object_verdicts_hold_on_every_small_object(data: st.DataObject) -> None:
    old = data.draw(objects(), label="old")
    new = _mutated(data.draw, old, data.draw(objects(), label="fresh"))
    note(f"new={new}")
    _check(old, new, _OBJECTS)


@_SETTINGS
@given(data=st.data())
def test_array_verdicts_hold_on_every_small_array(data: st.DataObject) -> None:
    old = data.draw(arrays(), label="old")
    new = _mutated(data.draw, old, data.draw(arrays(), label="fresh"))
    note(f"new={new}")
    _check(old, new, _ARRAYS)


def test_the_domain_tells_the_grammar_apart() -> None:
    # Two schemas that differ only where the grammar can differ must be told apart by some instance.
    pairs: list[tuple[dict[str, Any], dict[str, Any]]] = [
        ({"type": "object", "propertyNames": {"maxLength": 1}}, {"type": "object", "maxProperties": 1}),
        (
            {"type": "object", "properties": {"a": {"type": "integer"}}},
            {"type": "object", "properties": {"a": {"type": "number"}}},
        ),
        ({"type": "array", "contains": {"type": "integer"}, "maxContains": 2}, {"type": "array", "maxItems": 3}),
        ({"type": "array", "contains": {"type": "number"}}, {"type": "array", "contains": {"type": "integer"}}),
    ]
    for left, right in pairs:
        domain = _OBJECTS if left["type"] == "object" else _ARRAYS
        valid_left, valid_right = make_validator(left), make_validator(right)
        assert any(valid_left(x) != valid_right(x) for x in domain), (left, right)
