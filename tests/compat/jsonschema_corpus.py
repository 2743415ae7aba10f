"""A corpus of JSON Schema (draft 2020-12) pairs with the verdicts the compatibility rules demand.

Every case was written from the rules, not from the engine's output:

* **backward**: every instance valid under OLD is valid under NEW;
* **forward**: every instance valid under NEW is valid under OLD.

A direction expected ``False`` carries a *witness* (an instance valid under one side and invalid under the
other, checked with jsonschema-rs) or, where the rules say the engine cannot prove it (two different
patterns, ``$dynamicRef``, remote ``$ref``, ``if``/``then``/``else`` changes, overlapping ``oneOf``), an
``unprovable`` reason. A direction expected ``True`` is checked against a pool of instances drawn from
the schemas' own literals and boundaries (see :func:`instance_pool`), so the corpus proves itself.

``sound_only`` marks a case whose ``True`` directions are real but beyond what the engine is required to
prove: the engine may answer ``False`` there; it may never answer ``True`` where the corpus says ``False``.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CASES", "NO_WITNESS", "Case", "instance_pool", "literals", "make_validator"]


class _NoWitness:
    """Sentinel: ``None`` is a real JSON instance (null), so it cannot mean "no witness"."""

    def __repr__(self) -> str:
        return "NO_WITNESS"


NO_WITNESS: Any = _NoWitness()


@dataclass(frozen=True)
class Case:
    """One schema pair and what the rules say about it."""

    id: str
    group: str
    old: Any
    new: Any
    backward: bool
    forward: bool
    why: str
    witness_backward: Any = NO_WITNESS  # valid under OLD, invalid under NEW
    witness_forward: Any = NO_WITNESS  # valid under NEW, invalid under OLD
    unprovable: dict[str, str] = field(default_factory=dict)  # direction -> why the rules say False
    sound_only: bool = False
    codes_include: tuple[str, ...] = ()
    paths_under: tuple[str, ...] = ()  # every change must be reported under one of these pointers
    instances: tuple[Any, ...] = ()  # extra instances for the pool
    remote: dict[str, Any] = field(default_factory=dict)  # documents a remote $ref resolves to (tests only)


_CASES: list[Case] = []
_group = ""


def _case(  # noqa: PLR0917 -- a corpus row reads best as id, old, new, verdicts, why
    id: str, old: Any, new: Any, backward: bool, forward: bool, why: str, **kw: Any
) -> None:
    # Deep copies: cases share small building blocks (S, INT, ...) and an engine must not see aliasing.
    _CASES.append(Case(f"{_group}-{id}", _group, copy.deepcopy(old), copy.deepcopy(new), backward, forward, why, **kw))


S: dict[str, Any] = {"type": "string"}
INT: dict[str, Any] = {"type": "integer"}
N: dict[str, Any] = {"type": "number"}
NULL: dict[str, Any] = {"type": "null"}


def obj(props: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    """An object schema; keyword arguments become keywords (use dict literals for ``$``-keywords)."""
    schema: dict[str, Any] = {"type": "object"}
    if props is not None:
        schema["properties"] = props
    schema.update(kw)
    return schema


def arr(**kw: Any) -> dict[str, Any]:
    return {"type": "array", **kw}


def num(**kw: Any) -> dict[str, Any]:
    return {"type": "number", **kw}


def string(**kw: Any) -> dict[str, Any]:
    return {"type": "string", **kw}


# ---------------------------------------------------------------------------------------------------------
_group = "neutral"
_ORDER = obj(
    {
        "id": {"type": "string", "format": "uuid"},
        "qty": {"type": "integer", "minimum": 1},
        "address": {"$ref": "#/$defs/Address"},
    },
    required=["id", "qty"],
    additionalProperties=False,
)
_ORDER["$defs"] = {"Address": obj({"street": S, "zip": string(pattern="^[0-9]{5}$")}, required=["street"])}
_case("identical-empty", {}, {}, True, True, "the same schema accepts the same instances")
_case("identical-object", _ORDER, _ORDER, True, True, "identical realistic schema with $defs and $ref")
_case("identical-true", True, True, True, True, "identical boolean schemas")
_case("title-changed", string(title="A"), string(title="B"), True, True, "title is an annotation")
_case("description-added", S, string(description="A name."), True, True, "description is an annotation")
_case("examples-changed", string(examples=["a"]), string(examples=["b", "c"]), True, True, "examples are annotations")
_case(
    "default-changed",
    {"type": "integer", "default": 1},
    {"type": "integer", "default": 2},
    True,
    True,
    "default is an annotation; validators never inject it",
)
_case(
    "comment-changed",
    {"type": "integer", "$comment": "x"},
    {"type": "integer", "$comment": "y"},
    True,
    True,
    "$comment is for humans only",
)
_case("deprecated-added", S, string(deprecated=True), True, True, "deprecated is an annotation")
_case(
    "readonly-writeonly-added",
    obj({"a": S, "b": S}),
    obj({"a": string(readOnly=True), "b": string(writeOnly=True)}),
    True,
    True,
    "readOnly/writeOnly are annotations",
)
_case(
    "enum-reordered",
    {"enum": ["a", "b", "c"]},
    {"enum": ["c", "a", "b"]},
    True,
    True,
    "enum is a set; order is irrelevant",
)
_case(
    "required-reordered",
    obj({"a": S, "b": S}, required=["a", "b"]),
    obj({"a": S, "b": S}, required=["b", "a"]),
    True,
    True,
    "required is a set",
)
_case(
    "anyof-reordered",
    {"anyOf": [S, INT, NULL]},
    {"anyOf": [NULL, S, INT]},
    True,
    True,
    "anyOf is a disjunction; order is irrelevant",
)
_case(
    "oneof-reordered", {"oneOf": [S, INT]}, {"oneOf": [INT, S]}, True, True, "oneOf counts matches; order is irrelevant"
)
_case(
    "unknown-keyword-added",
    S,
    {"type": "string", "x-internal": True},
    True,
    True,
    "2020-12 ignores unknown keywords (they are annotations)",
)
_case(
    "defs-unused-added",
    S,
    {"type": "string", "$defs": {"X": INT}},
    True,
    True,
    "an unreferenced definition constrains nothing",
)
_case(
    "defs-unused-removed",
    {"type": "string", "$defs": {"X": INT}},
    S,
    True,
    True,
    "removing an unreferenced definition constrains nothing",
)
_case(
    "content-media-type-added",
    S,
    string(contentMediaType="application/json", contentEncoding="base64"),
    True,
    True,
    "contentMediaType/contentEncoding are annotations in 2020-12",
    instances=("{", "!!"),
)
_case(
    "nested-description-changed",
    obj({"a": obj({"b": string(description="x")})}),
    obj({"a": obj({"b": string(description="y")})}),
    True,
    True,
    "annotation deep inside properties",
)
_case(
    "properties-reordered",
    obj({"a": S, "b": INT}),
    obj({"b": INT, "a": S}),
    True,
    True,
    "properties is a mapping; key order is irrelevant",
)
_case(
    "schema-keyword-added",
    S,
    {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "string"},
    True,
    True,
    "declaring the dialect we already assume changes nothing",
    sound_only=True,
)
_case(
    "annotations-everywhere",
    _ORDER,
    {**_ORDER, "title": "Order", "description": "An order.", "examples": [{"id": "x", "qty": 1}]},
    True,
    True,
    "only annotations added at the root of a realistic schema",
)

# ---------------------------------------------------------------------------------------------------------
_group = "boolean"
_case("true-to-false", True, False, False, True, "false accepts nothing", witness_backward=1)
_case("false-to-true", False, True, True, False, "true accepts everything", witness_forward=1)
_case("true-to-empty", True, {}, True, True, "{} is equivalent to true")
_case("empty-to-true", {}, True, True, True, "{} is equivalent to true")
_case("not-empty-to-false", {"not": {}}, False, True, True, '{"not": {}} is equivalent to false')
_case("false-to-not-empty", False, {"not": {}}, True, True, '{"not": {}} is equivalent to false')
_case("not-true-to-false", {"not": True}, False, True, True, '{"not": true} is equivalent to false')
_case("empty-to-string", {}, S, False, True, "adding a type narrows", witness_backward=1)
_case("string-to-true", S, True, True, False, "true accepts more", witness_forward=1)
_case("false-to-string", False, S, True, False, "nothing is valid under false", witness_forward="a")
_case("string-to-false", S, False, False, True, "nothing is valid under false", witness_backward="a")
_case(
    "property-false-to-true",
    obj({"a": False}),
    obj({"a": True}),
    True,
    False,
    "a forbidden property becomes allowed",
    witness_forward={"a": 1},
)
_case(
    "items-true-to-false",
    arr(items=True),
    arr(items=False),
    False,
    True,
    "items false allows only the empty array",
    witness_backward=[1],
)
_case(
    "additional-true-to-empty",
    obj({"a": S}, additionalProperties=True),
    obj({"a": S}, additionalProperties={}),
    True,
    True,
    "additionalProperties true and {} are the same",
)

# ---------------------------------------------------------------------------------------------------------
_group = "type"
_case("integer-to-number", INT, N, True, False, "integer is a subset of number", witness_forward=1.5)
_case("number-to-integer", N, INT, False, True, "integer is a subset of number", witness_backward=1.5)
_case("string-to-number", S, N, False, False, "disjoint types", witness_backward="a", witness_forward=1)
_case(
    "string-to-nullable", S, {"type": ["string", "null"]}, True, False, "null added to the union", witness_forward=None
)
_case(
    "nullable-to-string",
    {"type": ["string", "null"]},
    S,
    False,
    True,
    "null removed from the union",
    witness_backward=None,
)
_case("union-reordered", {"type": ["string", "null"]}, {"type": ["null", "string"]}, True, True, "type lists are sets")
_case("missing-to-object", {}, {"type": "object"}, False, True, "a missing type means any", witness_backward=1)
_case("object-to-missing", {"type": "object"}, {}, True, False, "a missing type means any", witness_forward=1)
_case(
    "union-integer-to-number",
    {"type": ["integer", "string"]},
    {"type": ["number", "string"]},
    True,
    False,
    "integer widened to number inside a union",
    witness_forward=1.5,
)
_case(
    "integer-to-integer-or-number",
    INT,
    {"type": ["integer", "number"]},
    True,
    False,
    "integer|number is number",
    witness_forward=1.5,
)
_case(
    "number-or-integer-to-number",
    {"type": ["number", "integer"]},
    N,
    True,
    True,
    "integer is absorbed by number: same set",
)
_case("integer-to-nullable", INT, {"type": ["integer", "null"]}, True, False, "null added", witness_forward=None)
_case(
    "array-to-object",
    {"type": "array"},
    {"type": "object"},
    False,
    False,
    "disjoint types",
    witness_backward=[],
    witness_forward={},
)
_case(
    "boolean-to-integer",
    {"type": "boolean"},
    INT,
    False,
    False,
    "true is not 1 in JSON Schema",
    witness_backward=True,
    witness_forward=1,
)
_case(
    "integer-vs-multipleof-one",
    INT,
    num(multipleOf=1),
    True,
    True,
    "1.0 is an integer in 2020-12, so integer == number with multipleOf 1",
    instances=(1.0, 2.0, 1e15, -3.0),
)
_case(
    "null-to-null-or-boolean", NULL, {"type": ["null", "boolean"]}, True, False, "boolean added", witness_forward=True
)
_case("single-item-list", {"type": ["string"]}, S, True, True, "a one-element type list is that type")
_case(
    "type-removed-keeping-bound",
    string(maxLength=3),
    {"maxLength": 3},
    True,
    False,
    "without type, maxLength constrains only strings",
    witness_forward=1,
)
_case(
    "type-added-to-bound",
    {"minimum": 0},
    num(minimum=0),
    False,
    True,
    "a bound without type accepts every non-number",
    witness_backward="a",
)
_case(
    "integer-to-string-or-integer",
    INT,
    {"type": ["string", "integer"]},
    True,
    False,
    "string added",
    witness_forward="a",
)
_case(
    "number-to-integer-or-string",
    N,
    {"type": ["integer", "string"]},
    False,
    False,
    "integer|string neither contains nor is contained in number",
    witness_backward=1.5,
    witness_forward="a",
)
_case(
    "object-nullable-to-object",
    {"type": ["object", "null"], "properties": {"a": S}},
    obj({"a": S}),
    False,
    True,
    "null removed from an object union",
    witness_backward=None,
)

# ---------------------------------------------------------------------------------------------------------
_group = "enum"
_case("widened", {"enum": ["a", "b"]}, {"enum": ["a", "b", "c"]}, True, False, "member added", witness_forward="c")
_case("narrowed", {"enum": ["a", "b", "c"]}, {"enum": ["a", "b"]}, False, True, "member removed", witness_backward="c")
_case("int-vs-float-equal", {"enum": [1, 2]}, {"enum": [1.0, 2]}, True, True, "1 and 1.0 are the same JSON number")
_case(
    "true-is-not-one",
    {"enum": [True]},
    {"enum": [1]},
    False,
    False,
    "true != 1 in JSON Schema",
    witness_backward=True,
    witness_forward=1,
)
_case(
    "zero-is-not-false",
    {"enum": [0]},
    {"enum": [False]},
    False,
    False,
    "0 != false in JSON Schema",
    witness_backward=0,
    witness_forward=False,
)
_case("const-to-enum-of-one", {"const": "a"}, {"enum": ["a"]}, True, True, "const x == enum [x]")
_case(
    "const-changed",
    {"const": "a"},
    {"const": "b"},
    False,
    False,
    "disjoint singletons",
    witness_backward="a",
    witness_forward="b",
)
_case("const-to-enum-widened", {"const": "a"}, {"enum": ["a", "b"]}, True, False, "member added", witness_forward="b")
_case("enum-added", S, string(enum=["a", "b"]), False, True, "enum restricts", witness_backward="c")
_case("enum-removed", string(enum=["a", "b"]), S, True, False, "enum lifted", witness_forward="c")
_case("const-added", INT, {"type": "integer", "const": 3}, False, True, "const restricts", witness_backward=1)
_case("const-removed", {"type": "integer", "const": 3}, INT, True, False, "const lifted", witness_forward=1)
_case(
    "object-members",
    {"enum": [{"a": 1}]},
    {"enum": [{"a": 1}, {"a": 2}]},
    True,
    False,
    "object member added",
    witness_forward={"a": 2},
)
_case(
    "array-order-matters",
    {"enum": [[1, 2]]},
    {"enum": [[2, 1]]},
    False,
    False,
    "arrays compare element by element",
    witness_backward=[1, 2],
    witness_forward=[2, 1],
)
_case(
    "object-key-order-irrelevant",
    {"enum": [{"a": 1, "b": 2}]},
    {"enum": [{"b": 2, "a": 1}]},
    True,
    True,
    "objects compare as mappings",
)
_case(
    "member-excluded-by-type",
    string(enum=["a"]),
    string(enum=["a", 1]),
    True,
    True,
    "the added member 1 fails type string, so nothing new is accepted",
    instances=(1,),
)
_case(
    "type-dropped-beside-enum",
    string(enum=["a", "b"]),
    {"enum": ["a", "b"]},
    True,
    True,
    "every enum member is a string, so type adds nothing",
)
_case("const-int-to-float", {"const": 1}, {"const": 1.0}, True, True, "1 == 1.0")
_case(
    "const-null-vs-type-null",
    {"const": None},
    NULL,
    True,
    True,
    "null is the only instance of type null",
)
_case("null-member-added", {"enum": ["a"]}, {"enum": ["a", None]}, True, False, "null added", witness_forward=None)
_case("enum-to-type", {"enum": [1]}, INT, True, False, "every integer accepted", witness_forward=2)
_case(
    "const-float-to-integer",
    {"const": 1.5},
    INT,
    False,
    False,
    "1.5 is not an integer",
    witness_backward=1.5,
    witness_forward=1,
)
_case(
    "enum-shifted",
    {"enum": ["a", "b"]},
    {"enum": ["b", "c"]},
    False,
    False,
    "one out, one in",
    witness_backward="a",
    witness_forward="c",
)
_case(
    "integer-enum-as-number",
    {"type": "integer", "enum": [1, 2]},
    {"type": "number", "enum": [1.0, 2.0]},
    True,
    True,
    "1.0 and 2.0 are integers in 2020-12: the same two values",
)
_case(
    "enum-narrowed-by-type",
    {"enum": ["a", 1]},
    {"type": "string", "enum": ["a", 1]},
    False,
    True,
    "type string removes the member 1",
    witness_backward=1,
)

# ---------------------------------------------------------------------------------------------------------
_group = "numeric"
_case("minimum-tightened", num(minimum=0), num(minimum=1), False, True, "0 no longer allowed", witness_backward=0)
_case("minimum-relaxed", num(minimum=1), num(minimum=0), True, False, "0 newly allowed", witness_forward=0)
_case("minimum-added", N, num(minimum=0), False, True, "negatives refused", witness_backward=-1)
_case("minimum-removed", num(minimum=0), N, True, False, "negatives allowed", witness_forward=-1)
_case("maximum-tightened", num(maximum=10), num(maximum=5), False, True, "6 refused", witness_backward=6)
_case("maximum-relaxed", num(maximum=5), num(maximum=10), True, False, "6 allowed", witness_forward=6)
_case("maximum-added", N, num(maximum=10), False, True, "11 refused", witness_backward=11)
_case("maximum-removed", num(maximum=10), N, True, False, "11 allowed", witness_forward=11)
_case(
    "exclusive-minimum-tightened",
    num(exclusiveMinimum=0),
    num(exclusiveMinimum=1),
    False,
    True,
    "0.5 refused",
    witness_backward=0.5,
)
_case(
    "exclusive-minimum-relaxed",
    num(exclusiveMinimum=1),
    num(exclusiveMinimum=0),
    True,
    False,
    "0.5 allowed",
    witness_forward=0.5,
)
_case("exclusive-minimum-added", N, num(exclusiveMinimum=0), False, True, "0 refused", witness_backward=0)
_case("exclusive-minimum-removed", num(exclusiveMinimum=0), N, True, False, "0 allowed", witness_forward=0)
_case(
    "exclusive-maximum-tightened",
    num(exclusiveMaximum=10),
    num(exclusiveMaximum=5),
    False,
    True,
    "7 refused",
    witness_backward=7,
)
_case(
    "exclusive-maximum-relaxed",
    num(exclusiveMaximum=5),
    num(exclusiveMaximum=10),
    True,
    False,
    "7 allowed",
    witness_forward=7,
)
_case("exclusive-maximum-added", N, num(exclusiveMaximum=10), False, True, "10 refused", witness_backward=10)
_case("exclusive-maximum-removed", num(exclusiveMaximum=10), N, True, False, "10 allowed", witness_forward=10)
_case(
    "multipleof-tightened",
    num(multipleOf=2),
    num(multipleOf=4),
    False,
    True,
    "multiples of 4 are multiples of 2, not conversely",
    witness_backward=2,
)
_case(
    "multipleof-relaxed",
    num(multipleOf=4),
    num(multipleOf=2),
    True,
    False,
    "multiples of 4 are multiples of 2",
    witness_forward=2,
)
_case(
    "multipleof-changed",
    num(multipleOf=2),
    num(multipleOf=3),
    False,
    False,
    "neither divides the other",
    witness_backward=2,
    witness_forward=3,
)
_case("multipleof-added", N, num(multipleOf=2), False, True, "odd numbers refused", witness_backward=1)
_case("multipleof-removed", num(multipleOf=2), N, True, False, "odd numbers allowed", witness_forward=1)
_case(
    "multipleof-fraction-relaxed",
    num(multipleOf=0.5),
    num(multipleOf=0.25),
    True,
    False,
    "0.25 divides 0.5 exactly in binary; an engine may refuse fractional divisors",
    witness_forward=0.25,
    sound_only=True,
    instances=(0.5, 1.5, 1e308, 2.5e-300),
)
_case(
    "multipleof-decimal-tightened",
    num(multipleOf=0.1),
    num(multipleOf=0.2),
    False,
    True,
    "multiples of 0.2 are multiples of 0.1 (jsonschema-rs checks decimals exactly); floats make this hard to prove",
    witness_backward=0.1,
    sound_only=True,
    instances=(0.2, 0.4, 0.6, 1.2, 0.8, 2.2),
)
_case(
    "minimum-to-exclusive-same", num(minimum=5), num(exclusiveMinimum=5), False, True, "5 refused", witness_backward=5
)
_case("exclusive-to-minimum-same", num(exclusiveMinimum=5), num(minimum=5), True, False, "5 allowed", witness_forward=5)
_case(
    "integer-minimum-vs-exclusive",
    {"type": "integer", "minimum": 5},
    {"type": "integer", "exclusiveMinimum": 4},
    True,
    True,
    "for integers, >= 5 and > 4 are the same",
    instances=(4.5, 5, 4),
)
_case(
    "minimum-without-type-tightened",
    {"minimum": 0},
    {"minimum": 1},
    False,
    True,
    "bounds constrain numbers only; strings stay valid",
    witness_backward=0.5,
    instances=("a", [], {}),
)
_case(
    "minimum-on-string",
    S,
    string(minimum=5),
    True,
    True,
    "minimum only applies to numbers, and no string is a number",
)
_case(
    "range-shifted",
    num(minimum=0, maximum=10),
    num(minimum=1, maximum=20),
    False,
    False,
    "0 refused, 15 allowed",
    witness_backward=0,
    witness_forward=15,
)
_case(
    "exclusive-maximum-to-maximum",
    num(exclusiveMaximum=10),
    num(maximum=10),
    True,
    False,
    "10 allowed",
    witness_forward=10,
)
_case(
    "integer-minimum-fraction",
    {"type": "integer", "minimum": 0},
    {"type": "integer", "minimum": 0.5},
    False,
    True,
    "0 refused",
    witness_backward=0,
)
_case("minimum-int-vs-float", num(minimum=1), num(minimum=1.0), True, True, "1 == 1.0")
_case(
    "both-lower-bounds-same-value",
    num(minimum=5, exclusiveMinimum=5),
    num(exclusiveMinimum=5),
    True,
    True,
    "the exclusive bound dominates at the same value",
)
_case(
    "exclusive-to-higher-minimum",
    num(exclusiveMinimum=5),
    num(minimum=5.5),
    False,
    True,
    "5.1 refused; x >= 5.5 implies x > 5",
    witness_backward=5.1,
)
_case(
    "minimum-to-lower-exclusive",
    num(minimum=5),
    num(exclusiveMinimum=4.9),
    True,
    False,
    "x >= 5 implies x > 4.9; 4.95 allowed",
    witness_forward=4.95,
)
_case(
    "integer-multipleof-tightened",
    {"type": "integer", "multipleOf": 3},
    {"type": "integer", "multipleOf": 6},
    False,
    True,
    "3 refused",
    witness_backward=3,
)
_case("negative-minimum-tightened", num(minimum=-10), num(minimum=-5), False, True, "-7 refused", witness_backward=-7)
_case("maximum-without-type-removed", {"maximum": 3}, {}, True, False, "4 allowed", witness_forward=4)

# ---------------------------------------------------------------------------------------------------------
_group = "string"
_case("minlength-tightened", string(minLength=1), string(minLength=2), False, True, '"a" refused', witness_backward="a")
_case("minlength-relaxed", string(minLength=2), string(minLength=1), True, False, '"a" allowed', witness_forward="a")
_case("minlength-added", S, string(minLength=1), False, True, "empty string refused", witness_backward="")
_case("minlength-removed", string(minLength=1), S, True, False, "empty string allowed", witness_forward="")
_case(
    "maxlength-tightened",
    string(maxLength=5),
    string(maxLength=3),
    False,
    True,
    '"abcd" refused',
    witness_backward="abcd",
)
_case(
    "maxlength-relaxed", string(maxLength=3), string(maxLength=5), True, False, '"abcd" allowed', witness_forward="abcd"
)
_case("maxlength-added", S, string(maxLength=3), False, True, '"abcd" refused', witness_backward="abcd")
_case("maxlength-removed", string(maxLength=3), S, True, False, '"abcd" allowed', witness_forward="abcd")
_case("pattern-added", S, string(pattern="^[a-z]+$"), False, True, "a pattern restricts", witness_backward="1")
_case("pattern-removed", string(pattern="^[a-z]+$"), S, True, False, "a pattern lifted", witness_forward="1")
_case(
    "pattern-changed-disjoint",
    string(pattern="^[a-z]+$"),
    string(pattern="^[0-9]+$"),
    False,
    False,
    "two different patterns",
    witness_backward="a",
    witness_forward="1",
)
_case(
    "pattern-changed-superset",
    string(pattern="^[a-z]+$"),
    string(pattern="^[a-z0-9]+$"),
    False,
    False,
    "two different patterns: regex inclusion is not decided",
    witness_forward="1",
    unprovable={
        "backward": "the new pattern does accept more, but the rules treat any two different patterns as unprovable"
    },
)
_case(
    "pattern-kept-maxlength-relaxed",
    string(pattern="^a", maxLength=3),
    string(pattern="^a", maxLength=5),
    True,
    False,
    "identical patterns are fine",
    witness_forward="aaaa",
)
_case("pattern-without-type-removed", {"pattern": "^a"}, {}, True, False, "pattern lifted", witness_forward="b")
_case(
    "pattern-anchored",
    string(pattern="a"),
    string(pattern="^a"),
    False,
    False,
    "patterns are unanchored: 'a' matches anywhere",
    witness_backward="ba",
    unprovable={"forward": "^a does imply 'contains a', but two different patterns are unprovable"},
)
_case("format-added", S, string(format="email"), False, True, "format is asserted at run time", witness_backward="x")
_case("format-removed", string(format="email"), S, True, False, "format lifted", witness_forward="x")
_case(
    "format-email-to-uri",
    string(format="email"),
    string(format="uri"),
    False,
    False,
    "different formats",
    witness_backward="a@b.c",
    witness_forward="http://x",
)
_case(
    "format-date-to-datetime",
    string(format="date"),
    string(format="date-time"),
    False,
    False,
    "different formats",
    witness_backward="2024-01-01",
    witness_forward="2024-01-01T00:00:00Z",
)
_case(
    "format-without-type-added",
    {},
    {"format": "ipv4"},
    False,
    True,
    "format applies to strings only",
    witness_backward="x",
    instances=(1, None),
)
_case(
    "length-and-pattern",
    string(minLength=1, pattern="^[a-z]*$"),
    string(minLength=2, pattern="^[a-z]*$"),
    False,
    True,
    "same pattern, minLength tightened",
    witness_backward="a",
)

# ---------------------------------------------------------------------------------------------------------
_group = "array"
_case("items-added", arr(), arr(items=S), False, True, "items restricts", witness_backward=[1])
_case("items-removed", arr(items=S), arr(), True, False, "items lifted", witness_forward=[1])
_case("items-narrowed", arr(items=N), arr(items=INT), False, True, "1.5 refused", witness_backward=[1.5])
_case("items-widened", arr(items=INT), arr(items=N), True, False, "1.5 allowed", witness_forward=[1.5])
_case(
    "prefixitems-added",
    arr(),
    arr(prefixItems=[S]),
    False,
    True,
    "first element must be a string",
    witness_backward=[1],
)
_case(
    "prefixitems-extended-closed",
    arr(prefixItems=[S], items=False),
    arr(prefixItems=[S, INT], items=False),
    True,
    False,
    "a second element becomes allowed",
    witness_forward=["a", 1],
)
_case(
    "prefixitems-shortened-open",
    arr(prefixItems=[S, INT]),
    arr(prefixItems=[S]),
    True,
    False,
    "the second element is free now",
    witness_forward=["a", "b"],
)
_case(
    "prefixitems-absorbs-items",
    arr(prefixItems=[S], items=INT),
    arr(prefixItems=[S, INT], items=INT),
    True,
    True,
    "position 1 was already constrained by items",
)
_case("items-false-removed", arr(items=False), arr(), True, False, "any element allowed", witness_forward=[1])
_case("minitems-tightened", arr(minItems=1), arr(minItems=2), False, True, "[1] refused", witness_backward=[1])
_case("minitems-relaxed", arr(minItems=2), arr(minItems=1), True, False, "[1] allowed", witness_forward=[1])
_case("minitems-added", arr(), arr(minItems=1), False, True, "[] refused", witness_backward=[])
_case("minitems-removed", arr(minItems=1), arr(), True, False, "[] allowed", witness_forward=[])
_case(
    "maxitems-tightened",
    arr(maxItems=3),
    arr(maxItems=2),
    False,
    True,
    "3 elements refused",
    witness_backward=[1, 2, 3],
)
_case(
    "maxitems-relaxed", arr(maxItems=2), arr(maxItems=3), True, False, "3 elements allowed", witness_forward=[1, 2, 3]
)
_case("maxitems-added", arr(), arr(maxItems=2), False, True, "3 elements refused", witness_backward=[1, 2, 3])
_case("maxitems-removed", arr(maxItems=2), arr(), True, False, "3 elements allowed", witness_forward=[1, 2, 3])
_case("uniqueitems-added", arr(), arr(uniqueItems=True), False, True, "duplicates refused", witness_backward=[1, 1])
_case("uniqueitems-removed", arr(uniqueItems=True), arr(), True, False, "duplicates allowed", witness_forward=[1, 1])
_case("uniqueitems-false-added", arr(), arr(uniqueItems=False), True, True, "uniqueItems false is the default")
_case(
    "uniqueitems-int-float",
    arr(items=N),
    arr(items=N, uniqueItems=True),
    False,
    True,
    "1 and 1.0 are duplicates",
    witness_backward=[1, 1.0],
)
_case("contains-added", arr(), arr(contains=S), False, True, "an array without a string refused", witness_backward=[])
_case("contains-removed", arr(contains=S), arr(), True, False, "[] allowed", witness_forward=[])
_case("contains-narrowed", arr(contains=N), arr(contains=INT), False, True, "[1.5] refused", witness_backward=[1.5])
_case("contains-widened", arr(contains=INT), arr(contains=N), True, False, "[1.5] allowed", witness_forward=[1.5])
_case(
    "mincontains-tightened",
    arr(contains=S, minContains=1),
    arr(contains=S, minContains=2),
    False,
    True,
    '["a"] refused',
    witness_backward=["a"],
)
_case(
    "mincontains-relaxed",
    arr(contains=S, minContains=2),
    arr(contains=S, minContains=1),
    True,
    False,
    '["a"] allowed',
    witness_forward=["a"],
)
_case(
    "mincontains-zero-added",
    arr(contains=S),
    arr(contains=S, minContains=0),
    True,
    False,
    "minContains 0 makes contains always satisfied",
    witness_forward=[],
)
_case(
    "maxcontains-added",
    arr(contains=S),
    arr(contains=S, maxContains=1),
    False,
    True,
    "two strings refused",
    witness_backward=["a", "b"],
)
_case(
    "maxcontains-removed",
    arr(contains=S, maxContains=1),
    arr(contains=S),
    True,
    False,
    "two strings allowed",
    witness_forward=["a", "b"],
)
_case(
    "maxcontains-tightened",
    arr(contains=S, maxContains=2),
    arr(contains=S, maxContains=1),
    False,
    True,
    "two strings refused",
    witness_backward=["a", "b"],
)
_case(
    "maxcontains-relaxed",
    arr(contains=S, maxContains=1),
    arr(contains=S, maxContains=2),
    True,
    False,
    "two strings allowed",
    witness_forward=["a", "b"],
)
_case(
    "mincontains-without-contains",
    arr(),
    arr(minContains=2),
    True,
    True,
    "minContains is ignored without contains",
    sound_only=True,
)
_case(
    "unevaluateditems-false-added",
    arr(prefixItems=[S]),
    arr(prefixItems=[S], unevaluatedItems=False),
    False,
    True,
    "elements past the prefix refused",
    witness_backward=["a", 1],
)
_case(
    "unevaluateditems-false-removed",
    arr(prefixItems=[S], unevaluatedItems=False),
    arr(prefixItems=[S]),
    True,
    False,
    "elements past the prefix allowed",
    witness_forward=["a", 1],
)
_case(
    "prefixitems-narrowed",
    arr(prefixItems=[N]),
    arr(prefixItems=[INT]),
    False,
    True,
    "[1.5] refused",
    witness_backward=[1.5],
)
_case(
    "tuple-opened",
    arr(prefixItems=[S], items=False),
    arr(prefixItems=[S], items=INT),
    True,
    False,
    "integers allowed after the prefix",
    witness_forward=["a", 1],
)
_case(
    "nested-items-narrowed",
    arr(items=arr(items=N)),
    arr(items=arr(items=INT)),
    False,
    True,
    "inner element narrowed",
    witness_backward=[[1.5]],
)

# ---------------------------------------------------------------------------------------------------------
_group = "object"
_A = {"a": S}
_AB = {"a": S, "b": INT}
_case(
    "property-added-open",
    obj(_A),
    obj(_AB),
    False,
    True,
    "an open object already allowed b, with any value",
    witness_backward={"b": "x"},
)
_case("property-removed-open", obj(_AB), obj(_A), True, False, "b is free again", witness_forward={"b": "x"})
_case("property-narrowed", obj({"a": N}), obj({"a": INT}), False, True, "a: 1.5 refused", witness_backward={"a": 1.5})
_case("property-widened", obj({"a": INT}), obj({"a": N}), True, False, "a: 1.5 allowed", witness_forward={"a": 1.5})
_case(
    "property-true-added-open", obj(_A), obj({"a": S, "b": True}), True, True, "b: true adds nothing to an open object"
)
_case(
    "property-added-closed",
    obj(_A, additionalProperties=False),
    obj(_AB, additionalProperties=False),
    True,
    False,
    "b newly allowed",
    witness_forward={"b": 1},
)
_case(
    "property-removed-closed",
    obj(_AB, additionalProperties=False),
    obj(_A, additionalProperties=False),
    False,
    True,
    "b no longer allowed",
    witness_backward={"b": 1},
)
_case(
    "closed-to-open",
    obj(_A, additionalProperties=False),
    obj(_A),
    True,
    False,
    "extra keys allowed",
    witness_forward={"z": 1},
)
_case(
    "open-to-closed",
    obj(_A),
    obj(_A, additionalProperties=False),
    False,
    True,
    "extra keys refused",
    witness_backward={"z": 1},
)
_case(
    "additional-widened",
    obj(_A, additionalProperties=S),
    obj(_A, additionalProperties={"type": ["string", "number"]}),
    True,
    False,
    "numeric extras allowed",
    witness_forward={"z": 1},
)
_case(
    "additional-changed",
    obj(_A, additionalProperties=S),
    obj(_A, additionalProperties=N),
    False,
    False,
    "extras change type",
    witness_backward={"z": "a"},
    witness_forward={"z": 1},
)
_case(
    "property-declared-like-additional",
    obj(_A, additionalProperties=S),
    obj({"a": S, "b": S}, additionalProperties=S),
    True,
    True,
    "b was already governed by string",
)
_case(
    "property-added-partial",
    obj(_A, additionalProperties=S),
    obj(_AB, additionalProperties=S),
    False,
    False,
    "b changes from string (via additionalProperties) to integer",
    witness_backward={"b": "x"},
    witness_forward={"b": 1},
)
_case(
    "property-removed-partial",
    obj(_AB, additionalProperties=S),
    obj(_A, additionalProperties=S),
    False,
    False,
    "b falls back to additionalProperties string",
    witness_backward={"b": 1},
    witness_forward={"b": "x"},
)
_case(
    "patternproperties-added",
    obj(),
    obj(patternProperties={"^x-": S}),
    False,
    True,
    "x- keys must be strings",
    witness_backward={"x-a": 1},
)
_case(
    "patternproperties-removed",
    obj(patternProperties={"^x-": S}),
    obj(),
    True,
    False,
    "x- keys free again",
    witness_forward={"x-a": 1},
)
_case(
    "pattern-closed-property-added",
    obj(_A, patternProperties={"^x-": {}}, additionalProperties=False),
    obj({"a": S, "y": {}}, patternProperties={"^x-": {}}, additionalProperties=False),
    True,
    False,
    "y newly allowed; it matches no pattern",
    witness_forward={"y": 1},
)
_case(
    "pattern-key-changed-closed",
    obj(patternProperties={"^x-": {}}, additionalProperties=False),
    obj(patternProperties={"^y-": {}}, additionalProperties=False),
    False,
    False,
    "different patterns",
    witness_backward={"x-a": 1},
    witness_forward={"y-a": 1},
)
_case(
    "property-matching-pattern-added",
    obj(patternProperties={"^x-": S}, additionalProperties=False),
    obj({"x-a": S}, patternProperties={"^x-": S}, additionalProperties=False),
    True,
    True,
    "x-a was already allowed and constrained by ^x-",
    sound_only=True,
    instances=({"x-a": 1}, {"x-a": "s"}),
)
_case(
    "patternproperties-widened",
    obj(patternProperties={"^x-": S}),
    obj(patternProperties={"^x-": {"type": ["string", "null"]}}),
    True,
    False,
    "x- keys may be null",
    witness_forward={"x-a": None},
)
_case(
    "unevaluated-false-added",
    obj({"a": {}}),
    obj({"a": {}}, unevaluatedProperties=False),
    False,
    True,
    "undeclared keys refused",
    witness_backward={"b": 1},
)
_case(
    "unevaluated-false-removed",
    obj({"a": {}}, unevaluatedProperties=False),
    obj({"a": {}}),
    True,
    False,
    "undeclared keys allowed",
    witness_forward={"b": 1},
)
_case(
    "unevaluated-allof-property-added",
    {"type": "object", "allOf": [{"properties": {"a": {}}}], "unevaluatedProperties": False},
    {"type": "object", "allOf": [{"properties": {"a": {}, "b": {}}}], "unevaluatedProperties": False},
    True,
    False,
    "b becomes evaluated, hence allowed",
    witness_forward={"b": 1},
    sound_only=True,
)
_case(
    "unevaluated-schema-widened",
    obj(_A, unevaluatedProperties=S),
    obj(_A, unevaluatedProperties={"type": ["string", "null"]}),
    True,
    False,
    "null extras allowed",
    witness_forward={"z": None},
    sound_only=True,
)
_case(
    "unevaluated-kept-property-widened",
    obj(_A, unevaluatedProperties=False),
    obj({"a": {"type": ["string", "null"]}}, unevaluatedProperties=False),
    True,
    False,
    "a may be null",
    witness_forward={"a": None},
    sound_only=True,
)
_case("required-added", obj(_A), obj(_A, required=["a"]), False, True, "{} refused", witness_backward={})
_case(
    "required-added-with-default",
    obj({"a": string(default="x")}),
    obj({"a": string(default="x")}, required=["a"]),
    False,
    True,
    "validators do not inject defaults: {} is refused",
    witness_backward={},
    codes_include=("required.added_with_default",),
)
_case("required-removed", obj(_A, required=["a"]), obj(_A), True, False, "{} allowed", witness_forward={})
_case("required-undeclared-added", obj(), obj(required=["a"]), False, True, "{} refused", witness_backward={})
_case(
    "required-forbidden-property",
    obj(_A, additionalProperties=False),
    obj(_A, additionalProperties=False, required=["b"]),
    False,
    True,
    "b is required but forbidden: no object is valid any more",
    witness_backward={},
)
_case(
    "property-dropped-still-required",
    obj(_A, required=["a"]),
    obj(required=["a"]),
    True,
    False,
    "a may be any value now",
    witness_forward={"a": 1},
)
_case(
    "dependentrequired-added",
    obj(),
    obj(dependentRequired={"a": ["b"]}),
    False,
    True,
    "a without b refused",
    witness_backward={"a": 1},
)
_case(
    "dependentrequired-removed",
    obj(dependentRequired={"a": ["b"]}),
    obj(),
    True,
    False,
    "a without b allowed",
    witness_forward={"a": 1},
)
_case(
    "dependentrequired-extended",
    obj(dependentRequired={"a": ["b"]}),
    obj(dependentRequired={"a": ["b", "c"]}),
    False,
    True,
    "a with b but without c refused",
    witness_backward={"a": 1, "b": 1},
)
_case(
    "dependentschemas-added",
    obj(),
    obj(dependentSchemas={"a": {"required": ["b"]}}),
    False,
    True,
    "a without b refused",
    witness_backward={"a": 1},
)
_case(
    "dependentschemas-removed",
    obj(dependentSchemas={"a": {"required": ["b"]}}),
    obj(),
    True,
    False,
    "a without b allowed",
    witness_forward={"a": 1},
)
_case(
    "propertynames-added",
    obj(),
    obj(propertyNames={"maxLength": 3}),
    False,
    True,
    "long keys refused",
    witness_backward={"abcd": 1},
)
_case(
    "propertynames-removed",
    obj(propertyNames={"maxLength": 3}),
    obj(),
    True,
    False,
    "long keys allowed",
    witness_forward={"abcd": 1},
)
_case(
    "propertynames-relaxed",
    obj(propertyNames={"maxLength": 3}),
    obj(propertyNames={"maxLength": 5}),
    True,
    False,
    "4-character keys allowed",
    witness_forward={"abcd": 1},
)
_case(
    "minproperties-tightened",
    obj(minProperties=1),
    obj(minProperties=2),
    False,
    True,
    "one key refused",
    witness_backward={"a": 1},
)
_case(
    "minproperties-relaxed",
    obj(minProperties=2),
    obj(minProperties=1),
    True,
    False,
    "one key allowed",
    witness_forward={"a": 1},
)
_case("minproperties-added", obj(), obj(minProperties=1), False, True, "{} refused", witness_backward={})
_case("minproperties-removed", obj(minProperties=1), obj(), True, False, "{} allowed", witness_forward={})
_case(
    "maxproperties-tightened",
    obj(maxProperties=2),
    obj(maxProperties=1),
    False,
    True,
    "two keys refused",
    witness_backward={"a": 1, "b": 2},
)
_case(
    "maxproperties-relaxed",
    obj(maxProperties=1),
    obj(maxProperties=2),
    True,
    False,
    "two keys allowed",
    witness_forward={"a": 1, "b": 2},
)
_case(
    "maxproperties-added",
    obj(),
    obj(maxProperties=1),
    False,
    True,
    "two keys refused",
    witness_backward={"a": 1, "b": 1},
)
_case(
    "maxproperties-removed",
    obj(maxProperties=1),
    obj(),
    True,
    False,
    "two keys allowed",
    witness_forward={"a": 1, "b": 1},
)
_case(
    "property-nullable",
    obj(_A),
    obj({"a": {"type": ["string", "null"]}}),
    True,
    False,
    "a may be null",
    witness_forward={"a": None},
)
_case(
    "nested-property-narrowed",
    obj({"addr": obj({"zip": S})}),
    obj({"addr": obj({"zip": string(maxLength=5)})}),
    False,
    True,
    "a 6-character zip refused",
    witness_backward={"addr": {"zip": "123456"}},
)
_case("property-false-removed", obj({"a": False}), obj(), True, False, "a allowed again", witness_forward={"a": 1})
_case(
    "closed-new-required-property",
    obj(_A, additionalProperties=False),
    obj(_AB, additionalProperties=False, required=["b"]),
    False,
    False,
    "old objects lack b; new objects must carry b, which old forbids",
    witness_backward={"a": "x"},
    witness_forward={"b": 1},
)
_case(
    "open-new-required-property",
    obj(_A),
    obj(_AB, required=["b"]),
    False,
    True,
    "new objects carry an integer b, which the open old schema allows",
    witness_backward={},
)
_case(
    "properties-on-untyped-schema",
    {"properties": {"a": S}},
    {"properties": {"a": INT}},
    False,
    False,
    "properties constrain objects only; non-objects stay valid",
    witness_backward={"a": "x"},
    witness_forward={"a": 1},
    instances=(1, "a", None),
)

# ---------------------------------------------------------------------------------------------------------
_group = "compose"
_case("anyof-extended", {"anyOf": [S, INT]}, {"anyOf": [S, INT, NULL]}, True, False, "null added", witness_forward=None)
_case(
    "anyof-narrowed", {"anyOf": [S, INT, NULL]}, {"anyOf": [S, INT]}, False, True, "null removed", witness_backward=None
)
_case("anyof-branch-widened", {"anyOf": [S, INT]}, {"anyOf": [S, N]}, True, False, "1.5 allowed", witness_forward=1.5)
_case("anyof-single-branch-vs-type", {"anyOf": [S]}, S, True, True, "anyOf of one schema is that schema")
_case("anyof-added", S, {"type": "string", "anyOf": [{"minLength": 1}]}, False, True, '"" refused', witness_backward="")
_case(
    "anyof-removed", {"type": "string", "anyOf": [{"minLength": 1}]}, S, True, False, '"" allowed', witness_forward=""
)
_case(
    "oneof-disjoint-extended",
    {"oneOf": [S, INT]},
    {"oneOf": [S, INT, NULL]},
    True,
    False,
    "the branches have different types, so no instance matches two",
    witness_forward=None,
)
_case(
    "oneof-overlap-extended",
    {"oneOf": [INT]},
    {"oneOf": [INT, N]},
    False,
    False,
    "1 matches both new branches, so it is refused",
    witness_backward=1,
    witness_forward=1.5,
)
_case(
    "oneof-overlap-strings",
    {"oneOf": [string(maxLength=5)]},
    {"oneOf": [string(maxLength=5), string(pattern="^a")]},
    False,
    False,
    '"a" matches both new branches',
    witness_backward="a",
    witness_forward="aaaaaaa",
)
_case(
    "oneof-disjoint-narrowed",
    {"oneOf": [S, INT, NULL]},
    {"oneOf": [S, INT]},
    False,
    True,
    "null removed",
    witness_backward=None,
)
_case(
    "oneof-overlap-branch-removed",
    {"oneOf": [INT, N]},
    {"oneOf": [N]},
    True,
    False,
    "old: non-integer numbers; new: all numbers",
    witness_forward=1,
)
_KIND_A = obj({"kind": {"const": "a"}, "x": S}, required=["kind"])
_KIND_B = obj({"kind": {"const": "b"}, "y": INT}, required=["kind"])
_KIND_C = obj({"kind": {"const": "c"}}, required=["kind"])
_case(
    "oneof-discriminator-extended",
    {"oneOf": [_KIND_A, _KIND_B]},
    {"oneOf": [_KIND_A, _KIND_B, _KIND_C]},
    True,
    False,
    "a required const discriminator makes object branches disjoint",
    witness_forward={"kind": "c"},
)
_case(
    "oneof-discriminator-untyped-trap",
    {"oneOf": [{"properties": {"kind": {"const": "a"}}, "required": ["kind"]}]},
    {
        "oneOf": [
            {"properties": {"kind": {"const": "a"}}, "required": ["kind"]},
            {"properties": {"kind": {"const": "b"}}, "required": ["kind"]},
        ]
    },
    False,
    False,
    "without type object, 5 matches every branch: valid under one, refused under two",
    witness_backward=5,
    witness_forward={"kind": "b"},
)
_case(
    "allof-extended", {"allOf": [S]}, {"allOf": [S, {"minLength": 1}]}, False, True, '"" refused', witness_backward=""
)
_case(
    "allof-branch-removed",
    {"allOf": [S, {"minLength": 1}]},
    {"allOf": [S]},
    True,
    False,
    '"" allowed',
    witness_forward="",
)
_case(
    "allof-branch-widened",
    {"allOf": [S, {"maxLength": 3}]},
    {"allOf": [S, {"maxLength": 5}]},
    True,
    False,
    '"abcd" allowed',
    witness_forward="abcd",
)
_case(
    "allof-flattened",
    {"allOf": [S, {"maxLength": 3}]},
    string(maxLength=3),
    True,
    True,
    "allOf of constraints equals their conjunction",
)
_case("not-added", S, {"type": "string", "not": {"const": "x"}}, False, True, '"x" refused', witness_backward="x")
_case("not-removed", {"type": "string", "not": {"const": "x"}}, S, True, False, '"x" allowed', witness_forward="x")
_case("not-content-narrowed", {"not": N}, {"not": INT}, True, False, "not flips: 1.5 allowed", witness_forward=1.5)
_case("not-content-widened", {"not": INT}, {"not": N}, False, True, "not flips: 1.5 refused", witness_backward=1.5)
_case(
    "not-const-changed",
    {"not": {"const": 1}},
    {"not": {"const": 2}},
    False,
    False,
    "1 allowed, 2 refused",
    witness_backward=2,
    witness_forward=1,
)
# Adding or removing a whole conditional adds or removes one conjunct, so one direction is provable.
_case(
    "if-then-added",
    obj(),
    obj(**{"if": {"required": ["a"]}, "then": {"required": ["b"]}}),
    False,
    True,
    "a new conjunct only narrows: a without b refused",
    witness_backward={"a": 1},
)
_IF = {"if": {"required": ["a"]}, "then": {"required": ["b"]}}
_case(
    "if-then-kept-other-change",
    obj(maxProperties=2, **_IF),
    obj(maxProperties=3, **_IF),
    True,
    False,
    "identical conditional, maxProperties relaxed",
    witness_forward={"a": 1, "b": 1, "c": 1},
)
_case(
    "then-changed",
    obj(**_IF),
    obj(**{"if": {"required": ["a"]}, "then": {"required": ["c"]}}),
    False,
    False,
    "a now needs c instead of b",
    witness_backward={"a": 1, "b": 1},
    witness_forward={"a": 1, "c": 1},
)
_case(
    "if-changed",
    obj(**_IF),
    obj(**{"if": {"required": ["c"]}, "then": {"required": ["b"]}}),
    False,
    False,
    "the condition moved from a to c",
    witness_backward={"c": 1},
    witness_forward={"a": 1},
)
_case(
    "if-then-removed",
    obj(**_IF),
    obj(),
    True,
    False,
    "dropping a conjunct only widens: a without b allowed",
    witness_forward={"a": 1},
)
_case(
    "else-added",
    obj(**_IF),
    obj(**_IF, **{"else": {"required": ["c"]}}),
    False,
    True,
    "else under an unchanged if only narrows: objects without a now need c",
    witness_backward={},
)
_case(
    "anyof-to-oneof-overlap",
    {"anyOf": [INT, N]},
    {"oneOf": [INT, N]},
    False,
    True,
    "exactly-one implies at-least-one; 1 matches two branches",
    witness_backward=1,
)
_case(
    "anyof-object-branch-widened",
    {"anyOf": [obj(_A, required=["a"]), NULL]},
    {"anyOf": [obj({"a": {"type": ["string", "integer"]}}, required=["a"]), NULL]},
    True,
    False,
    "a may be an integer",
    witness_forward={"a": 1},
)
_group = "enum"


def _kind_of(kind: str, name: str = "kind") -> dict[str, Any]:
    """An untyped schema requiring a property ``name`` equal to ``kind`` (a discriminator test)."""
    return {"properties": {name: {"const": kind}}, "required": [name]}


# Values pinned down by bounds read as the enum listing them, both ways (decision 0099).
_RANGE_1_3: dict[str, Any] = {"type": "integer", "minimum": 1, "maximum": 3}
_case("integer-range-to-enum", _RANGE_1_3, {"enum": [1, 2, 3]}, True, True, "integers 1..3 are exactly 1, 2, 3")
_case("enum-to-integer-range", {"enum": [1, 2, 3]}, _RANGE_1_3, True, True, "the enum lists the range")
_case(
    "nullable-range-to-enum",
    {"type": ["integer", "null"], "minimum": 1, "maximum": 2},
    {"enum": [None, 1, 2]},
    True,
    True,
    "a nullable range lists its values and null",
)
_case(
    "nullable-range-to-enum-without-null",
    {"type": ["integer", "null"], "minimum": 1, "maximum": 2},
    {"enum": [1, 2]},
    False,
    True,
    "null is no longer accepted",
    witness_backward=None,
)
_case(
    "integer-range-to-enum-missing-member",
    _RANGE_1_3,
    {"enum": [1, 3]},
    False,
    True,
    "2 is in the range, not in the enum",
    witness_backward=2,
)
_case(
    "integer-range-to-wider-enum",
    {"type": "integer", "minimum": 1, "maximum": 2},
    {"enum": [1, 2, 3]},
    True,
    False,
    "3 added",
    witness_forward=3,
)
_case(
    "exclusive-integer-range-to-enum",
    {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 3},
    {"enum": [1, 2]},
    True,
    True,
    "integers strictly between 0 and 3 are 1 and 2",
)
_case(
    "stepped-range-to-enum",
    {"type": "integer", "minimum": 0, "maximum": 10, "multipleOf": 5},
    {"enum": [0, 5, 10]},
    True,
    True,
    "multiples of 5 from 0 to 10",
    instances=(5, 7, 10, 15),
)
_case(
    "number-range-is-not-finite",
    {"type": "number", "minimum": 1, "maximum": 3},
    {"enum": [1, 2, 3]},
    False,
    True,
    "numbers between 1 and 3 include 1.5",
    witness_backward=1.5,
)
_case(
    "number-singleton-to-const",
    {"type": "number", "minimum": 2, "maximum": 2},
    {"const": 2},
    True,
    True,
    "a number bounded to one point is that point",
)
_case(
    "const-to-number-singleton",
    {"const": 2},
    {"type": "number", "minimum": 2, "maximum": 2},
    True,
    True,
    "the const is the one number in the bounds",
)
_case(
    "float-const-to-integer-singleton",
    {"const": 2.0},
    {"type": "integer", "minimum": 2, "maximum": 2},
    True,
    True,
    "2.0 is the integer 2 in JSON Schema",
)
_case(
    "integer-singleton-to-number-singleton",
    {"type": "integer", "minimum": 4, "maximum": 4},
    {"type": "number", "minimum": 4, "maximum": 4},
    True,
    True,
    "the only number in [4, 4] is an integer",
)
_case(
    "enum-member-outside-bounds",
    {"type": "number", "enum": [1]},
    {"type": "number", "enum": [0, 1], "minimum": 1},
    True,
    True,
    "the added member 0 fails minimum, so nothing new is accepted",
)
_case(
    "enum-member-added-beyond-maximum",
    {"enum": ["a", 1]},
    {"enum": ["a", 1, 5], "maximum": 3},
    True,
    True,
    "5 fails maximum; maximum constrains no string",
)
_case(
    "enum-within-new-bounds",
    {"enum": [1, 2, 3]},
    {"type": "integer", "minimum": 0, "maximum": 5},
    True,
    False,
    "every member lies within the bounds; 4 is new",
    witness_forward=4,
)
_group = "numeric"
_case(
    "empty-integer-range-to-false",
    {"type": "integer", "minimum": 2.5, "maximum": 2.7},
    False,
    True,
    True,
    "no integer lies between 2.5 and 2.7",
)
_case(
    "empty-exclusive-range-to-false",
    num(minimum=2, exclusiveMaximum=2),
    False,
    True,
    True,
    "no number is >= 2 and < 2",
)
_group = "compose"
# oneOf partitions: each old branch lands in one new branch and stays clear of the others (decision 0100).
_case(
    "oneof-partition-object-extra-union",
    obj(maxProperties=0),
    {"oneOf": [obj(), {"anyOf": [obj(minProperties=1), S]}]},
    True,
    False,
    "{} matches the first branch only; strings are new",
    witness_forward="a",
)
_case(
    "oneof-partition-string-extra-union",
    string(maxLength=0),
    {"oneOf": [S, {"anyOf": [string(minLength=1), N]}]},
    True,
    False,
    '"" matches the first branch only; numbers are new',
    witness_forward=1,
)
_KIND_BASE = obj({"kind": S}, required=["kind"])
_case(
    "oneof-context-discriminator-widened",
    {**_KIND_BASE, "oneOf": [{"properties": {"kind": {"const": "a"}, "x": string(maxLength=3)}}, _kind_of("b")]},
    {**_KIND_BASE, "oneOf": [{"properties": {"kind": {"const": "a"}, "x": string(maxLength=5)}}, _kind_of("b")]},
    True,
    False,
    "type and required sit beside the oneOf; the kind constants keep the branches apart",
    witness_forward={"kind": "a", "x": "abcd"},
)
_SHAPES = {"Base": _KIND_BASE}


def _shape(kind: str, x: Any) -> dict[str, Any]:
    return {"allOf": [{"$ref": "#/$defs/Base"}], "properties": {"kind": {"const": kind}, "x": x}}


_case(
    "oneof-base-discriminator-widened",
    {"oneOf": [_shape("a", {"type": "integer", "maximum": 5}), _shape("b", S)], "$defs": _SHAPES},
    {"oneOf": [_shape("a", {"type": "integer", "maximum": 10}), _shape("b", S)], "$defs": _SHAPES},
    True,
    False,
    "the discriminator is required by a shared base reached through allOf and $ref",
    witness_forward={"kind": "a", "x": 7},
)
_case(
    "oneof-ranges-widened",
    {"oneOf": [{"type": "integer", "maximum": 0}, {"type": "integer", "minimum": 1, "maximum": 10}]},
    {"oneOf": [{"type": "integer", "maximum": 0}, {"type": "integer", "minimum": 1}]},
    True,
    False,
    "the ranges cannot meet; 11 is new",
    witness_forward=11,
)
_case(
    "oneof-const-beside-pattern-widened",
    {"oneOf": [{"const": "a"}, string(pattern="^b", maxLength=3)]},
    {"oneOf": [{"const": "a"}, string(pattern="^b")]},
    True,
    False,
    '"a" fails the pattern, so the branches stay apart; "bbbb" is new',
    witness_forward="bbbb",
    instances=("b", "bbb"),
)
_case(
    "oneof-branch-narrowed-into-overlap",
    {"oneOf": [N, S]},
    {"oneOf": [INT, {"type": ["number", "string", "null"]}]},
    False,
    False,
    "1 matches both new branches; null is new",
    witness_backward=1,
    witness_forward=None,
)
_case(
    "oneof-lengths-touch",
    string(maxLength=3),
    {"oneOf": [S, string(minLength=3), NULL]},
    False,
    False,
    '"abc" matches two new branches; null is new',
    witness_backward="abc",
    witness_forward=None,
)
_case(
    "oneof-enum-meets-pattern",
    {"enum": ["a", "b"]},
    {"oneOf": [{"enum": ["a", "b"]}, string(pattern="^b")]},
    False,
    False,
    '"b" matches both new branches; "bc" is new',
    witness_backward="b",
    witness_forward="bc",
)
_case(
    "anyof-branches-merged",
    {"anyOf": [INT, S, NULL]},
    {"anyOf": [{"type": ["integer", "string"]}, S, NULL]},
    True,
    True,
    "integers and strings in one branch: the union is the same",
)
_case(
    "anyof-branches-merged-wider",
    {"anyOf": [INT, S]},
    {"anyOf": [{"type": ["number", "string"]}, S]},
    True,
    False,
    "the merged branch takes every number",
    witness_forward=1.5,
)
_case(
    "anyof-branch-split",
    {"anyOf": [{"type": ["integer", "string"], "maxLength": 3}, NULL]},
    {"anyOf": [INT, string(maxLength=3), NULL]},
    True,
    True,
    "one branch per type, the same union",
    instances=("abcd",),
)
_case(
    "oneof-to-anyof-discriminated",
    {"oneOf": [_KIND_A, _KIND_B]},
    {"anyOf": [_KIND_A, _KIND_B]},
    True,
    True,
    "with disjoint branches, exactly one and at least one agree",
)
_case(
    "anyof-to-oneof-discriminated",
    {"anyOf": [_KIND_A, _KIND_B]},
    {"oneOf": [_KIND_A, _KIND_B]},
    True,
    True,
    "with disjoint branches, at least one and exactly one agree",
)
_case(
    "oneof-added-beside-discriminator",
    obj({"kind": {"const": "a"}}, required=["kind"]),
    obj({"kind": {"const": "a"}}, required=["kind"], oneOf=[_kind_of("a"), _kind_of("b")]),
    True,
    True,
    "every old instance matches the first branch and never the second",
)
# if/then/else with a changed if, proven case by case (decision 0101).
_case(
    "if-discriminator-widened",
    obj(**{"if": _kind_of("a"), "then": {"required": ["x"]}}),
    obj(**{"if": obj({"kind": {"enum": ["a", "b"]}}, required=["kind"]), "then": {"required": ["x"]}}),
    False,
    True,
    "kind b now needs x too",
    witness_backward={"kind": "b"},
)
_case(
    "if-discriminator-narrowed",
    obj(**{"if": obj({"kind": {"enum": ["a", "b"]}}, required=["kind"]), "then": {"required": ["x"]}}),
    obj(**{"if": _kind_of("a"), "then": {"required": ["x"]}}),
    True,
    False,
    "kind b no longer needs x",
    witness_forward={"kind": "b"},
)
_case(
    "if-changed-same-branches",
    obj(**{"if": _kind_of("a"), "then": {"required": ["x"]}, "else": {"required": ["x"]}}),
    obj(**{"if": _kind_of("b"), "then": {"required": ["x"]}, "else": {"required": ["x"]}}),
    True,
    True,
    "then and else ask the same, so which applies does not matter",
)
_case(
    "if-discriminator-swapped",
    obj(**{"if": _kind_of("a"), "then": {"required": ["x"]}, "else": {"required": ["y"]}}),
    obj(**{"if": _kind_of("b"), "then": {"required": ["y"]}, "else": {"required": ["x"]}}),
    False,
    False,
    "kind c needed y and now needs x",
    witness_backward={"kind": "c", "y": 1},
    witness_forward={"kind": "c", "x": 1},
)
_case(
    "if-moved-then-meets-stricter-else",
    obj(**{"if": _kind_of("a"), "then": {"required": ["x"]}, "else": {"required": ["x", "y"]}}),
    obj(**{"if": _kind_of("b"), "then": {"required": ["x"]}, "else": {"required": ["x", "y"]}}),
    False,
    False,
    "kind a falls to the else that also needs y now; kind b the other way",
    witness_backward={"kind": "a", "x": 1},
    witness_forward={"kind": "b", "x": 1},
)
_case(
    "if-moved-else-meets-stricter-then",
    obj(**{"if": _kind_of("a"), "then": {"required": ["x", "y"]}, "else": {"required": ["x"]}}),
    obj(**{"if": _kind_of("b"), "then": {"required": ["x", "y"]}, "else": {"required": ["x"]}}),
    False,
    False,
    "kind b now meets the then that needs y; kind a the other way",
    witness_backward={"kind": "b", "x": 1},
    witness_forward={"kind": "a", "x": 1},
)
_case(
    "if-widened-then-meets-other-then",
    obj(**{"if": _kind_of("a"), "then": {"required": ["y"]}, "else": {"required": ["x", "y"]}}),
    obj(**{"if": {"required": ["kind"]}, "then": {"required": ["x"]}, "else": {"required": ["y"]}}),
    False,
    False,
    "kind a still meets the new if, whose then needs x instead of y",
    witness_backward={"kind": "a", "y": 1},
    witness_forward={"kind": "b", "x": 1},
)
_case(
    "if-added-other-discriminator",
    obj({"kind": {"const": "b"}}, required=["kind"]),
    obj({"kind": {"const": "b"}}, required=["kind"], **{"if": _kind_of("a"), "then": {"required": ["x"]}}),
    True,
    True,
    "no old instance has kind a, so the new then never applies",
)
_case(
    "if-removed-other-discriminator",
    obj({"kind": {"const": "b"}}, required=["kind"], **{"if": _kind_of("a"), "then": {"required": ["x"]}}),
    obj({"kind": {"const": "b"}}, required=["kind"]),
    True,
    True,
    "the removed then applied to no instance",
)
_TYPED_RULES = obj({"type": {"enum": ["a", "b"]}}, allOf=[{"if": _kind_of("a", "type"), "then": {"required": ["x"]}}])
_TYPED_RULES_C = obj(
    {"type": {"enum": ["a", "b", "c"]}},
    allOf=[
        {"if": _kind_of("a", "type"), "then": {"required": ["x"]}},
        {"if": _kind_of("c", "type"), "then": {"required": ["y"]}},
    ],
)
_case(
    "allof-rule-for-new-discriminator",
    _TYPED_RULES,
    _TYPED_RULES_C,
    True,
    False,
    "the added rule tests type c, which no old instance has (the if itself is untyped)",
    witness_forward={"type": "c", "y": 1},
)
_case(
    "allof-rule-for-dropped-discriminator",
    _TYPED_RULES_C,
    _TYPED_RULES,
    False,
    True,
    "type c is refused now; the dropped rule applied to it only",
    witness_backward={"type": "c", "y": 1},
)

# ---------------------------------------------------------------------------------------------------------
_group = "ref"
_case(
    "target-narrowed",
    {"$ref": "#/$defs/A", "$defs": {"A": N}},
    {"$ref": "#/$defs/A", "$defs": {"A": INT}},
    False,
    True,
    "the referenced definition narrowed",
    witness_backward=1.5,
)
_case(
    "target-widened",
    {"$ref": "#/$defs/A", "$defs": {"A": INT}},
    {"$ref": "#/$defs/A", "$defs": {"A": N}},
    True,
    False,
    "the referenced definition widened",
    witness_forward=1.5,
)
_case("inlined", {"$ref": "#/$defs/A", "$defs": {"A": S}}, S, True, True, "a $ref equals its target")
_case(
    "def-renamed",
    {"$ref": "#/$defs/A", "$defs": {"A": S}},
    {"$ref": "#/$defs/B", "$defs": {"B": S}},
    True,
    True,
    "the same schema under another name",
)
_ADDR_OLD = obj({"home": {"$ref": "#/$defs/Addr"}, "work": {"$ref": "#/$defs/Addr"}})
_ADDR_OLD["$defs"] = {"Addr": obj({"zip": S})}
_ADDR_NEW = copy.deepcopy(_ADDR_OLD)
_ADDR_NEW["$defs"]["Addr"]["properties"]["zip"] = string(maxLength=5)
_case(
    "shared-def-narrowed",
    _ADDR_OLD,
    _ADDR_NEW,
    False,
    True,
    "used twice, reported once at the definition",
    witness_backward={"home": {"zip": "123456"}},
    paths_under=("/$defs/Addr/properties/zip",),
)
_TREE: dict[str, Any] = {
    "$ref": "#/$defs/node",
    "$defs": {"node": obj({"v": INT, "children": arr(items={"$ref": "#/$defs/node"})})},
}
_TREE_WIDE = copy.deepcopy(_TREE)
_TREE_WIDE["$defs"]["node"]["properties"]["v"] = N
_case("recursive-identical", _TREE, _TREE, True, True, "identical recursive schemas")
_case(
    "recursive-widened",
    _TREE,
    _TREE_WIDE,
    True,
    False,
    "v widened at every depth",
    witness_forward={"children": [{"v": 1.5}]},
)
_case(
    "recursive-narrowed",
    _TREE_WIDE,
    _TREE,
    False,
    True,
    "v narrowed at every depth",
    witness_backward={"children": [{"v": 1.5}]},
)
_case(
    "root-recursion-widened",
    obj({"v": S, "next": {"$ref": "#"}}),
    obj({"v": {"type": ["string", "null"]}, "next": {"$ref": "#"}}),
    True,
    False,
    "a list linked through the root; null allowed deep down",
    witness_forward={"next": {"v": None}},
)
_case(
    "recursive-array-root",
    {"type": ["array", "integer"], "items": {"$ref": "#"}},
    {"type": ["array", "number"], "items": {"$ref": "#"}},
    True,
    False,
    "nested arrays of numbers",
    witness_forward=[[1.5]],
)
_case(
    "remote-ref-added",
    S,
    {"$ref": "https://example.com/s.json"},
    False,
    False,
    "remote documents are never fetched: unprovable both ways",
    remote={"https://example.com/s.json": INT},
    witness_backward="a",
    witness_forward=1,
)
_case(
    "remote-ref-identical",
    {"$ref": "https://example.com/s.json"},
    {"$ref": "https://example.com/s.json"},
    True,
    True,
    "the same remote reference on both sides",
    sound_only=True,
    remote={"https://example.com/s.json": INT},
)
_case(
    "external-ref-changed",
    {"$ref": "other.json#/$defs/X"},
    {"$ref": "other.json#/$defs/Y"},
    False,
    False,
    "a sibling document with no resolver: unprovable",
    witness_backward="a",
    witness_forward=1,
    remote={"json-schema:///other.json": {"$defs": {"X": S, "Y": INT}}},
)
_case(
    "dynamic-ref-changed",
    {"$dynamicRef": "#s", "$defs": {"s": {"$dynamicAnchor": "s", "type": "string"}}},
    {"$dynamicRef": "#s", "$defs": {"s": {"$dynamicAnchor": "s", "type": "integer"}}},
    False,
    False,
    "$dynamicRef is unprovable",
    witness_backward="a",
    witness_forward=1,
)
_case(
    "anchor-target-narrowed",
    {"$ref": "#t", "$defs": {"T": {"$anchor": "t", "type": "string"}}},
    {"$ref": "#t", "$defs": {"T": {"$anchor": "t", "type": "string", "maxLength": 3}}},
    False,
    True,
    "resolved through $anchor",
    witness_backward="abcd",
    sound_only=True,
)
_case(
    "definitions-widened",
    {"$ref": "#/definitions/A", "definitions": {"A": INT}},
    {"$ref": "#/definitions/A", "definitions": {"A": N}},
    True,
    False,
    "legacy definitions still resolve",
    witness_forward=1.5,
)
_case(
    "unused-def-changed",
    {"type": "integer", "$defs": {"A": S}},
    {"type": "integer", "$defs": {"A": INT}},
    True,
    True,
    "nobody references A",
)
_case(
    "ref-sibling-added",
    {"$ref": "#/$defs/A", "$defs": {"A": S}},
    {"$ref": "#/$defs/A", "maxLength": 3, "$defs": {"A": S}},
    False,
    True,
    "2020-12 applies keywords beside $ref",
    witness_backward="abcd",
)
_CLOSED_DEF = {"$ref": "#/$defs/P", "$defs": {"P": obj(_A, additionalProperties=False)}}
_CLOSED_DEF_WIDE = {"$ref": "#/$defs/P", "$defs": {"P": obj(_AB, additionalProperties=False)}}
_case(
    "closed-def-property-added", _CLOSED_DEF, _CLOSED_DEF_WIDE, True, False, "b newly allowed", witness_forward={"b": 1}
)
_case(
    "ref-retargeted",
    {"$ref": "#/$defs/A", "$defs": {"A": S, "B": INT}},
    {"$ref": "#/$defs/B", "$defs": {"A": S, "B": INT}},
    False,
    False,
    "points at another definition",
    witness_backward="a",
    witness_forward=1,
)
_MUTUAL: dict[str, Any] = {
    "$ref": "#/$defs/A",
    "$defs": {"A": obj({"b": {"$ref": "#/$defs/B"}}), "B": obj({"a": {"$ref": "#/$defs/A"}, "n": INT})},
}
_MUTUAL_WIDE = copy.deepcopy(_MUTUAL)
_MUTUAL_WIDE["$defs"]["B"]["properties"]["n"] = N
_case(
    "mutual-recursion-widened",
    _MUTUAL,
    _MUTUAL_WIDE,
    True,
    False,
    "n widened through a two-step cycle",
    witness_forward={"b": {"n": 1.5}},
)
_case("mutual-recursion-identical", _MUTUAL, _MUTUAL, True, True, "identical mutual recursion")
_case(
    "unguarded-cycle",
    {"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/a"}}},
    S,
    False,
    False,
    "a $ref cycle that consumes no instance has no defined meaning",
    witness_backward=1,
    unprovable={"forward": "jsonschema-rs accepts everything under the cycle, but the rules call it unprovable"},
)
_case(
    "ref-in-items-narrowed",
    arr(items={"$ref": "#/$defs/A"}, **{"$defs": {"A": string(maxLength=5)}}),
    arr(items={"$ref": "#/$defs/A"}, **{"$defs": {"A": string(maxLength=2)}}),
    False,
    True,
    '["abc"] refused',
    witness_backward=["abc"],
)

# ---------------------------------------------------------------------------------------------------------
# Interactions between keyword groups, where a per-keyword argument alone would be wrong.
_group = "object"
_case(
    "closed-property-removed-pattern-conflict",
    obj({"x-a": S}, patternProperties={"^x-": INT}, additionalProperties=False),
    obj(patternProperties={"^x-": INT}, additionalProperties=False),
    True,
    False,
    "x-a had to be a string and an integer (impossible); now it only has to be an integer",
    witness_forward={"x-a": 1},
)
_case(
    "pattern-removed-partial",
    obj(patternProperties={"^x-": S}, additionalProperties=INT),
    obj(additionalProperties=INT),
    False,
    False,
    "x- keys fall back to additionalProperties integer",
    witness_backward={"x-a": "s"},
    witness_forward={"x-a": 1},
)
_case(
    "propertynames-enum-narrowed",
    obj(propertyNames={"enum": ["a", "b"]}),
    obj(propertyNames={"enum": ["a"]}),
    False,
    True,
    "key b refused",
    witness_backward={"b": 1},
)
_case(
    "required-traded-for-minproperties",
    obj(required=["a", "b"]),
    obj(required=["a"], minProperties=2),
    True,
    False,
    "any second key will do now",
    witness_forward={"a": 1, "c": 1},
)
_group = "array"
_case(
    "prefixitems-added-over-items",
    arr(items=S),
    arr(prefixItems=[INT], items=S),
    False,
    False,
    "position 0 moves from items (string) to prefixItems (integer)",
    witness_backward=["a"],
    witness_forward=[1],
)
_case(
    "prefixitems-removed-over-items",
    arr(prefixItems=[INT], items=S),
    arr(items=S),
    False,
    False,
    "position 0 falls back to items (string)",
    witness_backward=[1],
    witness_forward=["a"],
)
_case(
    "maxcontains-with-widened-contains",
    arr(contains=INT, maxContains=1),
    arr(contains=N, maxContains=1),
    False,
    False,
    "a wider contains also counts more matches against maxContains",
    witness_backward=[1, 1.5],
    witness_forward=[1.5],
)
# ---------------------------------------------------------------------------------------------------------
# propertyNames, dependencies and contains judged with what the rest of the schema already guarantees.
_group = "object"
_case(
    "propertynames-excludes-removed-property",
    obj({"forbidden": S}),
    obj(propertyNames={"enum": ["allowed"]}),
    False,
    True,
    "NEW objects never have 'forbidden', so OLD's schema for it cannot reject them; OLD allows other names",
    witness_backward={"forbidden": "x"},
)
_case(
    "propertynames-excludes-added-property",
    obj(propertyNames={"enum": ["allowed"]}),
    obj({"forbidden": S}),
    True,
    False,
    "OLD objects never have 'forbidden', so its new schema holds for them",
    witness_forward={"forbidden": "x"},
)
_case(
    "propertynames-narrowed-closed-names-pass",
    obj({"ab": S, "cd": S}, additionalProperties=False, propertyNames={"maxLength": 5}),
    obj({"ab": S, "cd": S}, additionalProperties=False, propertyNames={"maxLength": 2}),
    True,
    True,
    "the closed model only allows ab and cd, which both limits accept",
)
_case(
    "propertynames-narrowed-closed-name-refused",
    obj({"ab": S, "cd": S}, additionalProperties=False, propertyNames={"maxLength": 5}),
    obj({"ab": S, "cd": S}, additionalProperties=False, propertyNames={"maxLength": 1}),
    False,
    True,
    "ab is allowed by OLD's model and refused by NEW's propertyNames",
    witness_backward={"ab": "x"},
)
_case(
    "propertynames-added-enum-covers-closed",
    obj({"a": S}, additionalProperties=False),
    obj({"a": S}, additionalProperties=False, propertyNames={"enum": ["a", "b"]}),
    True,
    True,
    "the only name OLD allows is in the enumeration",
)
_case(
    "propertynames-added-same-pattern-as-closed-model",
    obj(patternProperties={"^x-": S}, additionalProperties=False),
    obj(patternProperties={"^x-": S}, additionalProperties=False, propertyNames={"pattern": "^x-"}),
    True,
    True,
    "the closed model already limits names to the pattern propertyNames now states",
    instances=({"x-a": "s"}, {"y": "s"}),
)
_case(
    "propertynames-removed-closed-model-keeps-names",
    obj({"a": S}, additionalProperties=False, propertyNames={"maxLength": 1}),
    obj({"a": S}, additionalProperties=False),
    True,
    True,
    "without propertyNames NEW still allows the name a only",
)
_case(
    "additional-closed-under-enumerated-names",
    obj({"a": S}, propertyNames={"enum": ["a"]}),
    obj({"a": S}, propertyNames={"enum": ["a"]}, additionalProperties=False),
    True,
    True,
    "propertyNames already allows a alone, so closing the model removes nothing",
)
_case(
    "property-added-outside-enumerated-names",
    obj(propertyNames={"enum": ["a"]}),
    obj({"b": INT}, propertyNames={"enum": ["a"]}),
    True,
    True,
    "b can never appear, so its schema constrains nothing",
)
_case(
    "dependentrequired-to-dependentschemas",
    obj(dependentRequired={"a": ["b"]}),
    obj(dependentSchemas={"a": {"required": ["b"]}}),
    True,
    True,
    "a dependent schema that only requires b says what dependentRequired said",
)
_case(
    "dependentschemas-to-dependentrequired",
    obj(dependentSchemas={"a": {"required": ["b"]}}),
    obj(dependentRequired={"a": ["b"]}),
    True,
    True,
    "the same dependency written the 2019-09 way",
)
_case(
    "dependentschemas-to-dependentrequired-extended",
    obj(dependentSchemas={"a": {"required": ["b"]}}),
    obj(dependentRequired={"a": ["b", "c"]}),
    False,
    True,
    "a with b but without c refused",
    witness_backward={"a": 1, "b": 1},
)
_case(
    "dependentrequired-added-key-never-present",
    obj({"b": S}, additionalProperties=False),
    obj({"b": S}, additionalProperties=False, dependentRequired={"a": ["b"]}),
    True,
    True,
    "the closed model never allows a, so a dependency on it holds vacuously",
)
_case(
    "dependentrequired-removed-key-never-present",
    obj(propertyNames={"enum": ["b"]}, dependentRequired={"a": ["b"]}),
    obj(propertyNames={"enum": ["b"]}),
    True,
    True,
    "propertyNames never allows a on either side",
)
_case(
    "dependentschemas-added-key-never-present",
    obj({"b": S}, additionalProperties=False),
    obj({"b": S}, additionalProperties=False, dependentSchemas={"a": {"required": ["c"]}}),
    True,
    True,
    "a never appears, so its dependent schema never applies",
)
_case(
    "dependentschemas-changed-key-never-present",
    obj(propertyNames={"enum": ["b"]}, dependentSchemas={"a": {"minProperties": 2}}),
    obj(propertyNames={"enum": ["b"]}, dependentSchemas={"a": {"minProperties": 3}}),
    True,
    True,
    "the dependent schema narrowed, but a is never a property name here",
)
_case(
    "dependentschemas-changed-narrowed",
    obj(dependentSchemas={"a": {"maxProperties": 3}}),
    obj(dependentSchemas={"a": {"maxProperties": 2}}),
    False,
    True,
    "three properties next to a refused",
    witness_backward={"a": 1, "b": 1, "c": 1},
)
_case(
    "dependentschemas-added-implied-by-required",
    obj(required=["b"]),
    obj(required=["b"], dependentSchemas={"a": {"required": ["b"]}}),
    True,
    True,
    "b is required anyway",
)
_case(
    "propertynames-false-from-maxproperties-zero",
    obj(maxProperties=0),
    obj(propertyNames=False),
    True,
    True,
    "both accept the empty object only",
)
_case(
    "maxproperties-added-under-enumerated-names",
    obj(propertyNames={"enum": ["a", "b"]}),
    obj(propertyNames={"enum": ["a", "b"]}, maxProperties=2),
    True,
    True,
    "only two names exist, so no object has more than two properties",
)
_case(
    "maxproperties-added-above-enumerated-names",
    obj(propertyNames={"enum": ["a", "b", "c"]}),
    obj(propertyNames={"enum": ["a", "b", "c"]}, maxProperties=2),
    False,
    True,
    "three names allow three properties",
    witness_backward={"a": 1, "b": 1, "c": 1},
)
_group = "array"
_case(
    "contains-removed-guaranteed-by-prefix",
    arr(contains=INT),
    arr(prefixItems=[INT, S], items=False, minItems=1),
    False,
    True,
    "NEW arrays always start with an integer, so they contain one; OLD allows a string first",
    witness_backward=["a", 1],
)
_case(
    "contains-added-guaranteed-by-items",
    arr(items=INT, minItems=2),
    arr(items=INT, minItems=2, contains=INT, minContains=2),
    True,
    True,
    "every item is an integer and there are at least two",
)
_case(
    "contains-narrowed-guaranteed-by-items",
    arr(items=INT, minItems=1, contains=N),
    arr(items=INT, minItems=1, contains=INT),
    True,
    True,
    "items are integers anyway, and there is at least one",
)
_case(
    "contains-narrowed-not-guaranteed",
    arr(items=N, minItems=1, contains=N),
    arr(items=N, minItems=1, contains=INT),
    False,
    True,
    "[1.5] has no integer",
    witness_backward=[1.5],
)
_case(
    "mincontains-tightened-guaranteed-by-items",
    arr(items=S, minItems=3, contains=S, minContains=1),
    arr(items=S, minItems=3, contains=S, minContains=3),
    True,
    True,
    "every item is a string and there are at least three",
)
_case(
    "maxcontains-added-tail-never-matches",
    arr(prefixItems=[S], items=INT),
    arr(prefixItems=[S], items=INT, contains=S, minContains=0, maxContains=1),
    True,
    True,
    "only the first item can be a string",
    instances=(["a", 1, 2], ["a", "b"]),
)
_case(
    "maxcontains-added-tail-may-match",
    arr(prefixItems=[S]),
    arr(prefixItems=[S], contains=S, minContains=0, maxContains=1),
    False,
    True,
    "two strings refused",
    witness_backward=["a", "b"],
)
_group = "object"
_case(
    "unevaluated-anyof-without-properties-property-added",
    obj({"a": S, "b": S}, anyOf=[{"required": ["a"]}, {"required": ["b"]}], unevaluatedProperties=False),
    obj({"a": S, "b": S, "c": S}, anyOf=[{"required": ["a"]}, {"required": ["b"]}], unevaluatedProperties=False),
    True,
    False,
    "the anyOf branches evaluate no property, so unevaluatedProperties acts as additionalProperties; c allowed",
    witness_forward={"a": "x", "c": "y"},
)
_case(
    "unevaluated-oneof-without-properties-to-additional",
    obj({"a": S}, oneOf=[{"required": ["a"]}, {"minProperties": 2}], unevaluatedProperties=False),
    obj({"a": S}, oneOf=[{"required": ["a"]}, {"minProperties": 2}], additionalProperties=False),
    True,
    True,
    "no branch evaluates a property: unevaluatedProperties false means additionalProperties false here",
)
_case(
    "unevaluated-if-without-properties-property-removed",
    obj({"a": S, "b": INT}, unevaluatedProperties=False, **{"if": {"required": ["a"]}, "then": {"required": ["b"]}}),
    obj({"a": S}, unevaluatedProperties=False, **{"if": {"required": ["a"]}, "then": {"required": ["b"]}}),
    False,
    True,
    "b can no longer be present, and then still requires it next to a",
    witness_backward={"b": 1},
)
_case(
    "unevaluated-moot-then-live-next-to-anyof",
    obj(
        anyOf=[{"properties": {"c": INT}}, {"required": ["a"]}],
        unevaluatedProperties=False,
        additionalProperties=True,
    ),
    obj(anyOf=[{"properties": {"c": INT}}, {"required": ["a"]}], unevaluatedProperties=False),
    False,
    True,
    "next to additionalProperties, unevaluatedProperties was moot; without it, b is unevaluated and refused",
    witness_backward={"b": 1},
)
_case(
    "unevaluated-live-then-moot-next-to-anyof",
    obj(anyOf=[{"properties": {"c": INT}}, {"required": ["a"]}], unevaluatedProperties=False),
    obj(
        anyOf=[{"properties": {"c": INT}}, {"required": ["a"]}],
        unevaluatedProperties=False,
        additionalProperties=True,
    ),
    True,
    False,
    "additionalProperties true evaluates b, so unevaluatedProperties no longer refuses it",
    witness_forward={"b": 1},
)
_group = "array"
_case(
    "unevaluateditems-allof-prefix-added",
    arr(prefixItems=[S], allOf=[{"minItems": 1}], unevaluatedItems=False),
    arr(prefixItems=[S, INT], allOf=[{"minItems": 1}], unevaluatedItems=False),
    True,
    False,
    "the allOf evaluates no item, so unevaluatedItems acts as items; a second integer item allowed",
    witness_forward=["a", 1],
)
_case(
    "unevaluateditems-anyof-without-items-prefix-added",
    arr(prefixItems=[S], anyOf=[{"minItems": 1}, {"maxItems": 0}], unevaluatedItems=False),
    arr(prefixItems=[S, S], anyOf=[{"minItems": 1}, {"maxItems": 0}], unevaluatedItems=False),
    True,
    False,
    "no anyOf branch evaluates items; a second string allowed",
    witness_forward=["a", "b"],
)
_case(
    "unevaluateditems-moot-removed",
    arr(allOf=[{"items": S}], unevaluatedItems=False),
    arr(allOf=[{"items": S}]),
    True,
    True,
    "the allOf's items evaluates every item, so unevaluatedItems never applied",
    instances=(["a"], [1], []),
)
_case(
    "unevaluateditems-moot-then-live-next-to-allof",
    arr(allOf=[{"minItems": 1}], unevaluatedItems=S, items=True),
    arr(allOf=[{"minItems": 1}], unevaluatedItems=S),
    False,
    True,
    "items true made unevaluatedItems moot; without it every item must be a string",
    witness_backward=[1],
)
_case(
    "unevaluateditems-moot-then-live-next-to-contains",
    arr(contains={}, unevaluatedItems=False, items=True),
    arr(contains=S, unevaluatedItems=False),
    False,
    True,
    "only the items contains matched are evaluated now, so 1 is refused",
    witness_backward=[1, "a"],
)
_case(
    "unevaluateditems-live-then-moot-next-to-contains",
    arr(contains=S, unevaluatedItems=False),
    arr(contains={}, unevaluatedItems=False, items=True),
    True,
    False,
    "items true evaluates every item: a non-string next to a string is allowed",
    witness_forward=[1, "a"],
)
_case(
    "mincontains-zero-with-narrowed-contains",
    arr(contains=N),
    arr(contains=INT, minContains=0),
    True,
    False,
    "minContains 0 makes the narrower contains vacuous; NEW accepts [] too",
    witness_forward=[],
)
_group = "string"
_case(
    "maxlength-counts-code-points",
    string(maxLength=2),
    string(maxLength=1),
    False,
    True,
    "length is in code points: two emoji are length 2",
    witness_backward="\U0001f600\U0001f600",
)
_group = "numeric"
_case(
    "untyped-maximum-removed-beside-exclusive",
    {"exclusiveMinimum": 0, "maximum": 5},
    {"exclusiveMinimum": 0},
    True,
    False,
    "6 allowed",
    witness_forward=6,
    instances=("a", None),
)
_group = "enum"
_case(
    "const-dropped-beside-enum",
    {"enum": [1, 2], "const": 1},
    {"enum": [1, 2]},
    True,
    False,
    "const and enum are a conjunction: 2 allowed now",
    witness_forward=2,
)
_group = "compose"
_case(
    "oneof-branch-widened-into-overlap",
    {"oneOf": [INT, S]},
    {"oneOf": [{"type": ["integer", "string"]}, S]},
    False,
    True,
    "strings now match both branches, so only integers stay valid",
    witness_backward="a",
)
_case(
    "not-ref-target-widened",
    {"not": {"$ref": "#/$defs/A"}, "$defs": {"A": INT}},
    {"not": {"$ref": "#/$defs/A"}, "$defs": {"A": N}},
    False,
    True,
    "not flips the widened target",
    witness_backward=1.5,
)
_group = "ref"
_NEG: dict[str, Any] = {"$ref": "#/$defs/D", "$defs": {"D": obj({"v": {}, "next": {"not": {"$ref": "#/$defs/D"}}})}}
_case(
    "negated-recursion-annotation",
    _NEG,
    {**_NEG, "description": "A chain that alternates."},
    True,
    True,
    "only a description added; the recursive definition is unchanged (the cycle passes a property)",
)
_case(
    "negated-recursion-annotation-inside",
    _NEG,
    {**_NEG, "$defs": {"D": {**_NEG["$defs"]["D"], "title": "Link"}}},
    True,
    True,
    "a title added inside the recursive definition itself: its assertions are unchanged",
)
_case(
    "negated-recursion-assertion-inside",
    _NEG,
    {**_NEG, "$defs": {"D": obj({"v": {"type": "string"}, "next": {"not": {"$ref": "#/$defs/D"}}})}},
    False,
    False,
    "v narrowed inside a definition that recurs under not",
    witness_backward={"v": 1},
    witness_forward={"v": "a", "next": {"v": 1}},
)
_case(
    "unevaluated-through-ref-property-added",
    {"$ref": "#/$defs/A", "unevaluatedProperties": False, "$defs": {"A": {"properties": {"a": {}}}}},
    {"$ref": "#/$defs/A", "unevaluatedProperties": False, "$defs": {"A": {"properties": {"a": {}, "b": {}}}}},
    True,
    False,
    "b is evaluated through the $ref now, hence allowed",
    witness_forward={"b": 1},
    sound_only=True,
)

# ---------------------------------------------------------------------------------------------------------
_group = "realistic"
_EVENT_OLD = obj(
    {
        "id": string(format="uuid"),
        "status": {"enum": ["placed", "paid"]},
        "total": num(minimum=0),
        "items": arr(items={"$ref": "#/$defs/Line"}, minItems=1),
    },
    required=["id", "status", "total", "items"],
    additionalProperties=False,
)
_EVENT_OLD["$defs"] = {
    "Line": obj(
        {"sku": string(pattern="^[A-Z]{3}-[0-9]+$"), "qty": {"type": "integer", "minimum": 1}},
        required=["sku", "qty"],
        additionalProperties=False,
    )
}
_GOOD_EVENT = {
    "id": "123e4567-e89b-12d3-a456-426614174000",
    "status": "placed",
    "total": 3,
    "items": [{"sku": "ABC-1", "qty": 1}],
}
_EVENT_NOTE = copy.deepcopy(_EVENT_OLD)
_EVENT_NOTE["properties"]["note"] = string(maxLength=200)
_case(
    "event-optional-field-added",
    _EVENT_OLD,
    _EVENT_NOTE,
    True,
    False,
    "a closed event gains an optional field: old readers reject it",
    witness_forward={**_GOOD_EVENT, "note": "x"},
    instances=(_GOOD_EVENT,),
)
_EVENT_STATUS = copy.deepcopy(_EVENT_OLD)
_EVENT_STATUS["properties"]["status"] = {"enum": ["placed", "paid", "shipped"]}
_case(
    "event-status-added",
    _EVENT_OLD,
    _EVENT_STATUS,
    True,
    False,
    "a new enum member breaks old readers",
    witness_forward={**_GOOD_EVENT, "status": "shipped"},
    instances=(_GOOD_EVENT,),
)
_EVENT_QTY = copy.deepcopy(_EVENT_OLD)
_EVENT_QTY["$defs"]["Line"]["properties"]["qty"]["maximum"] = 100
_case(
    "event-qty-capped",
    _EVENT_OLD,
    _EVENT_QTY,
    False,
    True,
    "a line quantity is capped",
    witness_backward={**_GOOD_EVENT, "items": [{"sku": "ABC-1", "qty": 101}]},
    instances=(_GOOD_EVENT,),
)
_EVENT_MIXED = copy.deepcopy(_EVENT_NOTE)
_EVENT_MIXED["properties"]["total"] = num(minimum=0, maximum=10000)
_case(
    "event-mixed",
    _EVENT_OLD,
    _EVENT_MIXED,
    False,
    False,
    "one field added, one bound tightened",
    witness_backward={**_GOOD_EVENT, "total": 20000},
    witness_forward={**_GOOD_EVENT, "note": "x"},
    instances=(_GOOD_EVENT,),
)
_EVENT_DOCS = copy.deepcopy(_EVENT_OLD)
_EVENT_DOCS["description"] = "Emitted when an order is placed."
_EVENT_DOCS["$defs"]["Line"]["properties"]["qty"]["description"] = "How many."
_EVENT_DOCS["properties"]["status"]["title"] = "Status"
_case("event-docs-only", _EVENT_OLD, _EVENT_DOCS, True, True, "documentation only", instances=(_GOOD_EVENT,))
_REQ_OLD = obj({"name": string(minLength=1, maxLength=50), "tags": arr(items=S, maxItems=10)}, required=["name"])
_REQ_NEW = obj(
    {
        "name": string(minLength=1, maxLength=100),
        "tags": arr(items=S, maxItems=20),
        "email": {"type": ["string", "null"], "format": "email"},
    },
    required=["name"],
)
_case(
    "request-relaxed",
    _REQ_OLD,
    _REQ_NEW,
    False,
    False,
    "limits relaxed, but email (free before, on an open object) is now constrained",
    witness_backward={"name": "a", "email": 1},
    witness_forward={"name": "a" * 60},
)


CASES: tuple[Case, ...] = tuple(_CASES)


# ---------------------------------------------------------------------------------------------------------
# Instances: a pool drawn from the schemas' own literals and boundaries, so that a verdict "compatible" is
# tested near every edge the schemas draw.

_BASE: tuple[Any, ...] = (
    None,
    True,
    False,
    0,
    1,
    -1,
    2,
    3,
    1.5,
    0.5,
    -0.5,
    100,
    "",
    "a",
    "ab",
    "abcd",
    "1",
    "x-a",
    [],
    [1],
    ["a"],
    [1, 1],
    [None],
    {},
    {"a": 1},
    {"a": "x"},
    {"a": None},
    {"b": 1},
)
_FORMAT_EXAMPLES: dict[str, tuple[str, ...]] = {
    "email": ("a@b.c", "x"),
    "uri": ("http://x", "a@b.c"),
    "uuid": ("123e4567-e89b-12d3-a456-426614174000", "x"),
    "date": ("2024-01-01", "2024-13-45"),
    "date-time": ("2024-01-01T00:00:00Z", "2024-01-01"),
    "ipv4": ("10.0.0.1", "999.0.0.1"),
}
_NUMERIC = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_LENGTHS = (
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "minContains",
    "maxContains",
)


def _walk(node: Any) -> Iterator[dict[str, Any]]:
    """Every object node of a schema document (schemas, but also enum members: harmless extra literals)."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def _number(value: Any) -> float | None:
    """``value`` when it is a finite JSON number (not a boolean), else None."""
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return value if ok else None


def _node_literals(node: dict[str, Any]) -> Iterator[Any]:
    """The values one schema node puts an edge on: enum members, const, bounds and lengths around them."""
    if isinstance(node.get("enum"), list):
        yield from node["enum"]
    if "const" in node:
        yield node["const"]
    for bound in (_number(node.get(key)) for key in _NUMERIC):
        if bound is not None:
            yield from (bound, bound - 1, bound + 1, bound - 0.5, bound + 0.5, bound - 0.05, bound + 0.05)
    step = _number(node.get("multipleOf"))
    if step is not None and step > 0:
        yield from (step, step * 2, step * 3, step / 2, step * 1.5)
    for length in (node.get(key) for key in _LENGTHS):
        if isinstance(length, int) and not isinstance(length, bool) and 0 <= length <= 50:
            for n in (m for m in (length - 1, length, length + 1) if m >= 0):
                yield from ("a" * n, [1] * n, ["a"] * n, {f"k{i}": 1 for i in range(n)})
    if isinstance(node.get("format"), str):
        yield from _FORMAT_EXAMPLES.get(node["format"], ())


def _node_names(node: dict[str, Any]) -> Iterator[str]:
    """Property names a node mentions; pattern keys like "^x-" become plausible names ("x-a")."""
    for key in ("properties", "patternProperties", "dependentRequired", "dependentSchemas"):
        if isinstance(node.get(key), dict):
            yield from node[key]
    if isinstance(node.get("required"), list):
        yield from (n for n in node["required"] if isinstance(n, str))


def literals(*schemas: Any) -> list[Any]:
    """Scalars and small values that sit on the edges the schemas draw, plus objects using their names.

    >>> 5 in literals({"minimum": 5})
    True
    """
    nodes = [n for s in schemas for n in _walk(s)]
    out = [value for node in nodes for value in _node_literals(node)]
    names = sorted(
        {
            n.strip("^$").replace("\\", "") + ("a" if n.endswith("-") else "")
            for node in nodes
            for n in _node_names(node)
        }
    )
    scalars = [v for v in out if not isinstance(v, dict | list)]
    values = [None, 1, "a", 1.5, *scalars[:6]]
    out.extend({name: v} for name in names for v in values)
    out.append(dict.fromkeys(names, "a"))
    out.append(dict.fromkeys(names, 1))
    return out


def instance_pool(case: Case) -> list[Any]:
    """The instances a case is checked against: base values, literals, hand-written ones and witnesses."""
    pool = [*_BASE, *literals(case.old, case.new), *case.instances]
    for witness in (case.witness_backward, case.witness_forward):
        if witness is not NO_WITNESS:
            pool.append(witness)
    # Wrap a few in containers so that item/property-level changes are exercised one level down.
    nested = [v for v in pool if not isinstance(v, dict | list)][:20]
    pool.extend([[v] for v in nested])
    pool.extend({"a": v, "v": v, "n": v} for v in nested)
    return pool


def make_validator(schema: Any, remote: dict[str, Any] | None = None) -> Callable[[Any], bool]:
    """A jsonschema-rs draft 2020-12 validator with formats asserted, as subhive validates at run time (its
    ``runtime_validator``: patterns by the linear engine, decision 0137).

    Remote documents come from ``remote`` only; nothing is fetched from the network.

    >>> make_validator({"format": "email"})("x")
    False
    """
    import jsonschema_rs

    from subhive._rs_validator import runtime_validator

    documents = remote or {}

    def retrieve(uri: str) -> Any:
        if uri not in documents:
            raise KeyError(f"no remote document {uri} in this test")
        return documents[uri]

    validator = runtime_validator(
        schema, draft=jsonschema_rs.Draft202012Validator, validate_formats=True, retriever=retrieve
    )
    is_valid: Callable[[Any], bool] = validator.is_valid
    return is_valid
