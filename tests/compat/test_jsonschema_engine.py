"""Unit tests of the JSON Schema compatibility engine (subhive.compat.jsonschema).

Each row of ``CASES`` states the verdicts the rules demand (backward: OLD is contained in NEW; forward:
NEW is contained in OLD). The rows prove themselves against the runtime validator: a ``False`` direction
names a witness (valid under one side, invalid under the other) or is listed as unprovable by rule, and a
``True`` direction is checked against a pool of instances built from the schemas' own literals.
"""

from __future__ import annotations

import copy
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest

from subhive._rs_validator import runtime_validator
from subhive.compat._report import DiffReport
from subhive.compat.jsonschema import CODES, diff_schemas
from subhive.errors import InputError

_NO = object()  # "no witness": None is a real JSON instance
S: dict[str, Any] = {"type": "string"}
INT: dict[str, Any] = {"type": "integer"}
NUM: dict[str, Any] = {"type": "number"}
NULL: dict[str, Any] = {"type": "null"}


@dataclass(frozen=True)
class Case:
    id: str
    old: Any
    new: Any
    backward: bool
    forward: bool
    codes: tuple[str, ...] = ()
    wb: Any = _NO  # backward witness: valid under OLD, invalid under NEW
    wf: Any = _NO  # forward witness: valid under NEW, invalid under OLD
    unprovable: tuple[str, ...] = ()  # directions the rules call unprovable (no witness needed)


def obj(props: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object"}
    if props is not None:
        schema["properties"] = props
    schema.update(kw)
    return schema


def _discriminated(kind: str, extra: dict[str, Any]) -> dict[str, Any]:
    return obj({"kind": {"const": kind}, **extra}, required=["kind"])


def _nested(leaf: str, *extra: dict[str, Any]) -> dict[str, Any]:
    """A value that is a leaf or an array of such values, as a recursive oneOf."""
    branches = [{"type": leaf}, {"type": "array", "items": {"$ref": "#/$defs/T"}}, *extra]
    return {"$defs": {"T": {"oneOf": branches}}, "$ref": "#/$defs/T"}


_BASE_DEF = obj({"id": S}, required=["id"])

# A tagged union wider than the pairwise disjointness check goes (64 branches), as real ones are (SchemaStore's
# vector.json has 65 sinks, each {"allOf": [{"$ref": config}, {"required": ["type"], "properties": {"type":
# {"const": ...}}}]}).
_SINKS = [{"allOf": [obj({"x": INT}), _discriminated(f"k{i}", {})]} for i in range(70)]


def _extended(props: dict[str, Any], base_id: dict[str, Any] = S) -> dict[str, Any]:
    """The 2020-12 way to extend a closed schema: allOf a base, own properties, unevaluatedProperties."""
    return {
        "type": "object",
        "allOf": [{"$ref": "#/$defs/Base"}],
        "properties": props,
        "unevaluatedProperties": False,
        "$defs": {"Base": obj({"id": base_id})},
    }


_TREE = {"type": "object", "properties": {"v": INT, "kids": {"type": "array", "items": {"$ref": "#"}}}}
_TREE_WIDE = {"type": "object", "properties": {"v": NUM, "kids": {"type": "array", "items": {"$ref": "#"}}}}

CASES = [
    # -- neutral: the set of valid instances does not change ---------------------------------------------
    Case("title-added", S, {**S, "title": "Name"}, True, True, ("annotation.added",)),
    Case(
        "docs-changed",
        {**S, "description": "a", "examples": ["x"], "$comment": "c", "deprecated": False},
        {**S, "description": "b", "examples": ["y"], "$comment": "d", "deprecated": True},
        True,
        True,
        ("annotation.changed",),
    ),
    Case("default-changed", {**INT, "default": 1}, {**INT, "default": 2}, True, True, ("default.changed",)),
    Case("enum-reordered", {"enum": ["a", "b"]}, {"enum": ["b", "a"]}, True, True, ("enum.reordered",)),
    Case("required-reordered", obj(required=["a", "b"]), obj(required=["b", "a"]), True, True, ("required.reordered",)),
    Case("anyof-reordered", {"anyOf": [S, INT]}, {"anyOf": [INT, S]}, True, True, ("any_of.reordered",)),
    Case("unknown-keyword", S, {**S, "x-owner": "team"}, True, True, ("keyword.unknown.changed",)),
    Case("unused-def-added", S, {**S, "$defs": {"X": INT}}, True, True, ("definition.added",)),
    Case("empty-is-true", {}, True, True, True),
    Case(
        "type-list-reordered",
        {"type": ["string", "null"]},
        {"type": ["null", "string"]},
        True,
        True,
        ("type.rewritten",),
    ),
    Case("integer-inside-number", {"type": ["integer", "number"]}, NUM, True, True, ("type.rewritten",)),
    Case("content-is-annotation", S, {**S, "contentMediaType": "application/json"}, True, True, ("annotation.added",)),
    Case("then-without-if", {"then": INT}, {"then": S}, True, True, ("keyword.ignored.changed",)),
    # -- boolean schemas ---------------------------------------------------------------------------------
    Case("true-to-false", True, False, False, True, ("schema.false.added",), wb=1),
    Case("false-to-string", False, S, True, False, ("schema.false.removed",), wf="a"),
    Case("not-empty-is-false", {"not": {}}, False, True, True),
    # -- type ---------------------------------------------------------------------------------------------
    Case("integer-to-number", INT, NUM, True, False, ("type.widened",), wf=1.5),
    Case("number-to-integer", NUM, INT, False, True, ("type.narrowed",), wb=1.5),
    Case("nullable", S, {"type": ["string", "null"]}, True, False, ("type.widened",), wf=None),
    Case("string-to-integer", S, INT, False, False, ("type.changed",), wb="a", wf=1),
    Case("type-added", {}, S, False, True, ("type.added",), wb=1),
    Case("type-removed", S, {}, True, False, ("type.removed",), wf=1),
    Case("integral-float-is-integer", INT, {"enum": [1.0]}, False, True, wb=2),
    Case("enum-outside-new-type", {"enum": [1, "a"]}, {"enum": [1, "a"], **INT}, False, True, ("type.added",), wb="a"),
    Case("type-implied-by-enum", {"enum": [1, 2]}, {"enum": [1, 2], **INT}, True, True, ("type.added",)),
    # -- enum and const -----------------------------------------------------------------------------------
    Case("enum-widened", {"enum": ["a", "b"]}, {"enum": ["a", "b", "c"]}, True, False, ("enum.widened",), wf="c"),
    Case("enum-narrowed", {"enum": ["a", "b", "c"]}, {"enum": ["a", "b"]}, False, True, ("enum.narrowed",), wb="c"),
    Case("enum-changed", {"enum": ["a", "b"]}, {"enum": ["b", "c"]}, False, False, ("enum.changed",), wb="a", wf="c"),
    Case("enum-removed", {"enum": ["a"]}, {}, True, False, ("enum.removed",), wf="b"),
    Case("const-one-is-one-point-zero", {"const": 1}, {"const": 1.0}, True, True),
    Case("const-true-is-not-one", {"const": True}, {"const": 1}, False, False, ("const.changed",), wb=True, wf=1),
    Case("const-as-enum", {"const": "a"}, {"enum": ["a"]}, True, True),
    Case("boolean-as-enum", {"type": "boolean"}, {"enum": [True, False]}, True, True),
    # -- numbers ------------------------------------------------------------------------------------------
    Case("maximum-tightened", {"maximum": 10}, {"maximum": 5}, False, True, ("maximum.tightened",), wb=7),
    Case("maximum-relaxed", {"maximum": 5}, {"maximum": 10}, True, False, ("maximum.relaxed",), wf=7),
    Case("minimum-on-strings-only", S, {**S, "minimum": 5}, True, True, ("minimum.added",)),
    Case("minimum-added", {}, {"minimum": 0}, False, True, ("minimum.added",), wb=-1),
    Case("minimum-removed", {"minimum": 0}, {}, True, False, ("minimum.removed",), wf=-1),
    Case("minimum-to-exclusive", {"minimum": 0}, {"exclusiveMinimum": 0}, False, True, wb=0),
    Case("integer-exclusive-is-minimum", {**INT, "exclusiveMinimum": 0}, {**INT, "minimum": 1}, True, True),
    Case("integer-exclusive-maximum", {**INT, "maximum": 10}, {**INT, "exclusiveMaximum": 11}, True, True),
    Case("multipleof-relaxed", {"multipleOf": 4}, {"multipleOf": 2}, True, False, ("multiple_of.relaxed",), wf=2),
    Case("multipleof-tightened", {"multipleOf": 2}, {"multipleOf": 4}, False, True, ("multiple_of.tightened",), wb=2),
    Case(
        "multipleof-changed", {"multipleOf": 2}, {"multipleOf": 3}, False, False, ("multiple_of.changed",), wb=2, wf=3
    ),
    Case(
        "multipleof-fractional", {"multipleOf": 0.1}, {"multipleOf": 0.2}, False, False, wb=0.1, unprovable=("forward",)
    ),
    Case("enum-within-new-bound", {"enum": [1, 2]}, {"enum": [1, 2], "maximum": 2}, True, True),
    # -- strings ------------------------------------------------------------------------------------------
    Case(
        "maxlength-tightened", {"maxLength": 10}, {"maxLength": 5}, False, True, ("max_length.tightened",), wb="aaaaaaa"
    ),
    Case("minlength-on-numbers-only", NUM, {**NUM, "minLength": 3}, True, True),
    Case("pattern-added", S, {**S, "pattern": "^a"}, False, True, ("pattern.added",), wb="b"),
    Case("pattern-removed", {**S, "pattern": "^a"}, S, True, False, ("pattern.removed",), wf="b"),
    Case(
        "pattern-changed",
        {"pattern": "^a"},
        {"pattern": "^b"},
        False,
        False,
        ("pattern.changed.unprovable",),
        wb="a",
        wf="b",
    ),
    Case("pattern-holds-for-enum", {"enum": ["ab", "ac"]}, {"enum": ["ab", "ac"], "pattern": "^a"}, True, True),
    Case("ecma-digit-class", {"enum": ["\u0663"]}, {"enum": ["\u0663"], "pattern": "^\\d$"}, False, True, wb="\u0663"),
    Case("format-added", S, {**S, "format": "email"}, False, True, ("format.added",), wb="x"),
    Case("format-removed", {**S, "format": "email"}, S, True, False, ("format.removed",), wf="x"),
    Case(
        "format-changed",
        {"format": "email"},
        {"format": "date"},
        False,
        False,
        ("format.changed.unprovable",),
        wb="a@b.co",
        wf="2020-01-01",
    ),
    Case("length-counts-code-points", {"enum": ["\U0001f600"]}, {"enum": ["\U0001f600"], "maxLength": 1}, True, True),
    # -- arrays -------------------------------------------------------------------------------------------
    Case(
        "items-narrowed",
        {"type": "array", "items": NUM},
        {"type": "array", "items": INT},
        False,
        True,
        ("type.narrowed",),
        wb=[1.5],
    ),
    Case("items-added", {"type": "array"}, {"type": "array", "items": S}, False, True, ("items.added",), wb=[1]),
    Case(
        "prefix-item-added",
        {"prefixItems": [S]},
        {"prefixItems": [S, INT]},
        False,
        True,
        ("prefix_items.added",),
        wb=["a", "x"],
    ),
    Case(
        "prefix-item-added-closed",
        {"prefixItems": [S], "items": False},
        {"prefixItems": [S, INT], "items": False},
        True,
        False,
        ("prefix_items.added",),
        wf=["a", 1],
    ),
    Case("max-items-tightened", {"maxItems": 3}, {"maxItems": 2}, False, True, ("max_items.tightened",), wb=[1, 2, 3]),
    Case("min-items-relaxed", {"minItems": 2}, {"minItems": 1}, True, False, ("min_items.relaxed",), wf=[1]),
    Case(
        "unique-added",
        {"type": "array"},
        {"type": "array", "uniqueItems": True},
        False,
        True,
        ("unique_items.added",),
        wb=[1, 1],
    ),
    Case("unique-trivial-with-one-item", {"maxItems": 1}, {"maxItems": 1, "uniqueItems": True}, True, True),
    Case(
        "contains-added", {"type": "array"}, {"type": "array", "contains": INT}, False, True, ("contains.added",), wb=[]
    ),
    Case("contains-widened", {"contains": INT}, {"contains": NUM}, True, False, ("type.widened",), wf=[1.5]),
    Case(
        "max-contains-added",
        {"contains": INT},
        {"contains": INT, "maxContains": 1},
        False,
        True,
        ("max_contains.added",),
        wb=[1, 2],
    ),
    Case(
        "contains-widened-under-max",
        {"contains": INT, "maxContains": 1},
        {"contains": NUM, "maxContains": 1},
        False,
        False,
        ("contains.changed",),
        wb=[1, 1.5],
        wf=[1.5],
    ),
    Case(
        "min-contains-relaxed",
        {"contains": INT, "minContains": 2},
        {"contains": INT, "minContains": 1},
        True,
        False,
        ("min_contains.relaxed",),
        wf=[1],
    ),
    Case(
        "unevaluated-items-as-items",
        {"prefixItems": [S], "items": False},
        {"prefixItems": [S], "unevaluatedItems": False},
        True,
        True,
    ),
    # -- objects ------------------------------------------------------------------------------------------
    Case(
        "property-added-open", obj({"a": S}), obj({"a": S, "b": INT}), False, True, ("property.added",), wb={"b": "x"}
    ),
    Case(
        "property-added-closed",
        obj({"a": S}, additionalProperties=False),
        obj({"a": S, "b": INT}, additionalProperties=False),
        True,
        False,
        ("property.added",),
        wf={"b": 1},
    ),
    Case(
        "property-added-partly-open",
        obj({"a": S}, additionalProperties=S),
        obj({"a": S, "b": {**S, "maxLength": 1}}, additionalProperties=S),
        False,
        True,
        ("property.added",),
        wb={"b": "xx"},
    ),
    Case("property-removed-open", obj({"a": S}), obj({}), True, False, ("property.removed",), wf={"a": 1}),
    Case(
        "property-removed-closed",
        obj({"a": S}, additionalProperties=False),
        obj({}, additionalProperties=False),
        False,
        True,
        ("property.removed",),
        wb={"a": "x"},
    ),
    Case("required-added", obj({"a": S}), obj({"a": S}, required=["a"]), False, True, ("required.added",), wb={}),
    Case(
        "required-added-with-default",
        obj({"a": {**S, "default": "x"}}),
        obj({"a": {**S, "default": "x"}}, required=["a"]),
        False,
        True,
        ("required.added_with_default",),
        wb={},
    ),
    Case("required-removed", obj(required=["a"]), obj(), True, False, ("required.removed",), wf={}),
    Case(
        "closed",
        obj({"a": S}),
        obj({"a": S}, additionalProperties=False),
        False,
        True,
        ("additional_properties.added",),
        wb={"z": 1},
    ),
    Case(
        "opened",
        obj({"a": S}, additionalProperties=False),
        obj({"a": S}),
        True,
        False,
        ("additional_properties.removed",),
        wf={"z": 1},
    ),
    Case(
        "pattern-property-added-open",
        obj(),
        obj(patternProperties={"^x": INT}),
        False,
        True,
        ("pattern_property.added",),
        wb={"x": "s"},
    ),
    Case(
        "pattern-property-added-closed",
        obj(additionalProperties=False),
        obj(patternProperties={"^x": INT}, additionalProperties=False),
        True,
        False,
        ("pattern_property.added",),
        wf={"x": 1},
    ),
    Case(
        "pattern-property-narrowed",
        obj(patternProperties={"^x": NUM}),
        obj(patternProperties={"^x": INT}),
        False,
        True,
        ("type.narrowed",),
        wb={"x": 1.5},
    ),
    Case(
        "unevaluated-as-additional",
        obj({"a": S}, additionalProperties=False),
        obj({"a": S}, unevaluatedProperties=False),
        True,
        True,
    ),
    # The base gains an optional b: the base alone narrows (it used to accept any b), which the engine
    # reports where the base is, without the context (old instances had no b at all) that makes it harmless.
    Case(
        "unevaluated-extension-base-grows",
        {"allOf": [{"properties": {"a": S}}], "unevaluatedProperties": False},
        {"allOf": [{"properties": {"a": S, "b": S}}], "unevaluatedProperties": False},
        False,
        False,
        ("unevaluated_properties.scope_changed",),
        wf={"b": "x"},
        unprovable=("backward",),
    ),
    Case(
        "unevaluated-extension-own-property",
        _extended({"x": INT}),
        _extended({"x": INT, "y": S}),
        True,
        False,
        ("property.added",),
        wf={"id": "a", "y": "s"},
    ),
    Case(
        "unevaluated-extension-base-field-narrowed",
        _extended({"x": INT}, base_id=NUM),
        _extended({"x": INT}, base_id=INT),
        False,
        True,
        ("type.narrowed",),
        wb={"id": 1.5},
    ),
    Case(
        "unevaluated-extension-closed-to-open",
        _extended({"x": INT}),
        {**_extended({"x": INT}), "unevaluatedProperties": S},
        True,
        False,
        ("additional_properties.changed",),
        wf={"id": "a", "z": "s"},
    ),
    Case(
        "unevaluated-behind-anyof",
        {"anyOf": [{"properties": {"a": S}}], "unevaluatedProperties": False},
        {"anyOf": [{"properties": {"a": S, "b": S}}], "unevaluatedProperties": False},
        False,
        False,
        ("unevaluated_properties.unprovable",),
        wf={"b": "x"},
        unprovable=("backward",),
    ),
    Case(
        "min-properties-from-required", obj(required=["a", "b"]), obj(required=["a", "b"], minProperties=2), True, True
    ),
    Case(
        "max-properties-from-closed",
        obj({"a": {}}, additionalProperties=False),
        obj({"a": {}}, additionalProperties=False, maxProperties=1),
        True,
        True,
    ),
    Case(
        "dependent-required-added",
        obj(),
        obj(dependentRequired={"a": ["b"]}),
        False,
        True,
        ("dependent_required.added",),
        wb={"a": 1},
    ),
    Case(
        "dependent-schema-added",
        obj(),
        obj(dependentSchemas={"a": {"required": ["b"]}}),
        False,
        True,
        ("dependent_schema.added",),
        wb={"a": 1},
    ),
    Case(
        "property-names-closed",
        obj({"ab": {}}, additionalProperties=False),
        obj({"ab": {}}, additionalProperties=False, propertyNames={"pattern": "^a"}),
        True,
        True,
    ),
    Case(
        "property-names-open",
        obj(),
        obj(propertyNames={"pattern": "^a"}),
        False,
        True,
        ("property_names.added",),
        wb={"zz": 1},
    ),
    Case("object-keywords-on-strings", S, {**S, "required": ["a"], "maxProperties": 0}, True, True),
    # -- applicators --------------------------------------------------------------------------------------
    Case("anyof-branch-added", {"anyOf": [S]}, {"anyOf": [S, INT]}, True, False, ("any_of.branch_added",), wf=1),
    Case("anyof-branch-removed", {"anyOf": [S, INT]}, {"anyOf": [S]}, False, True, ("any_of.branch_removed",), wb=1),
    Case(
        "nullable-wrapper",
        {"$ref": "#/$defs/A", "$defs": {"A": obj({"a": S})}},
        {"anyOf": [{"$ref": "#/$defs/A"}, NULL], "$defs": {"A": obj({"a": S})}},
        True,
        False,
        ("any_of.branch_added",),
        wf=None,
    ),
    Case("type-union-as-anyof", {"type": ["string", "null"]}, {"anyOf": [S, NULL]}, True, True),
    Case(
        "oneof-disjoint-branch-added",
        {"oneOf": [S, INT]},
        {"oneOf": [S, INT, NULL]},
        True,
        False,
        ("one_of.branch_added",),
        wf=None,
    ),
    Case(
        "oneof-overlapping-branch-added",
        {"oneOf": [INT, S]},
        {"oneOf": [INT, S, NUM]},
        False,
        False,
        ("one_of.exclusivity.unprovable",),
        wb=1,
        wf=1.5,
    ),
    Case("oneof-branch-widened-disjoint", {"oneOf": [INT, S]}, {"oneOf": [NUM, S]}, True, False, wf=1.5),
    Case(
        "oneof-discriminator",
        {"oneOf": [_discriminated("a", {"x": INT}), _discriminated("b", {"y": S})]},
        {"oneOf": [_discriminated("a", {"x": INT}), _discriminated("b", {"y": S}), _discriminated("c", {})]},
        True,
        False,
        wf={"kind": "c"},
    ),
    Case(
        "oneof-many-tagged-branch-added",
        {"oneOf": _SINKS},
        {"oneOf": [*_SINKS, _discriminated("new", {})]},
        True,
        False,
        ("one_of.branch_added",),
        wf={"kind": "new"},
    ),
    Case(
        "oneof-many-tagged-tag-reused",
        {"oneOf": _SINKS},
        {"oneOf": [*_SINKS, _discriminated("k3", {"y": S})]},
        False,
        False,
        ("one_of.exclusivity.unprovable",),
        wb={"kind": "k3", "x": 1},  # now matches two branches
        wf={"kind": "k3", "x": "s"},  # the new branch only (x a string fails the old k3 branch)
    ),
    Case(
        "allof-branch-added",
        {"allOf": [S]},
        {"allOf": [S, {"maxLength": 3}]},
        False,
        True,
        ("all_of.branch_added",),
        wb="aaaa",
    ),
    Case(
        "allof-branch-removed",
        {"allOf": [S, {"maxLength": 3}]},
        {"allOf": [S]},
        True,
        False,
        ("all_of.branch_removed",),
        wf="aaaa",
    ),
    Case("allof-flattened", {"allOf": [S, {"maxLength": 3}]}, {**S, "maxLength": 3}, True, True),
    Case(
        "required-implied-by-allof-ref",
        {"allOf": [{"$ref": "#/$defs/Base"}], "$defs": {"Base": _BASE_DEF}},
        {"allOf": [{"$ref": "#/$defs/Base"}], "required": ["id"], "$defs": {"Base": _BASE_DEF}},
        True,
        True,
    ),
    Case("not-added-disjoint", INT, {**INT, "not": S}, True, True, ("not.added",)),
    Case("not-added", INT, {**INT, "not": {"const": 1}}, False, True, ("not.added",), wb=1),
    Case("not-widened-inside", {"not": INT}, {"not": NUM}, False, True, ("type.widened",), wb=1.5),
    Case(
        "if-changed",
        {"if": {"minimum": 0}, "then": {"multipleOf": 2}},
        {"if": {"minimum": 10}, "then": {"multipleOf": 2}},
        True,  # x >= 10 implies x >= 0, so the old then already held where the new if applies
        False,
        ("conditional.changed",),
        wf=3,
    ),
    Case(
        "then-narrowed",
        {"if": INT, "then": {"minimum": 0}},
        {"if": INT, "then": {"minimum": 5}},
        False,
        True,
        ("minimum.tightened",),
        wb=3,
    ),
    Case("conditional-added", {}, {"if": INT, "then": {"minimum": 0}}, False, True, ("conditional.added",), wb=-1),
    Case(
        "legacy-dependencies-enforced",
        obj(),
        obj(dependencies={"a": ["b"]}),
        False,
        True,
        ("dependencies.added",),
        wb={"a": 1},
    ),
    Case(
        "dynamic-ref",
        {"$dynamicRef": "#node", "$defs": {"n": {"$dynamicAnchor": "node", **INT}}},
        {"$dynamicRef": "#node", "$defs": {"n": {"$dynamicAnchor": "node", **NUM}}},
        False,
        False,
        ("dynamic_ref.unprovable",),
        unprovable=("backward", "forward"),
    ),
    # -- references ---------------------------------------------------------------------------------------
    Case(
        "inline-extracted-to-def", obj({"a": S}), obj({"a": {"$ref": "#/$defs/S"}}, **{"$defs": {"S": S}}), True, True
    ),
    Case("tree-widened", _TREE, _TREE_WIDE, True, False, ("type.widened",), wf={"v": 1.5, "kids": []}),
    Case("tree-narrowed-deep", _TREE_WIDE, _TREE, False, True, ("type.narrowed",), wb={"v": 1, "kids": [{"v": 1.5}]}),
    Case("recursive-oneof-disjoint", _nested("integer"), _nested("number"), True, False, ("type.widened",), wf=[1.5]),
    Case(
        "recursive-oneof-overlapping",
        _nested("integer", {"minimum": 5}),
        _nested("number", {"minimum": 5}),
        False,
        False,
        ("one_of.exclusivity.unprovable",),
        wb=5.5,
        wf=1.5,
    ),
    Case(
        "unguarded-cycle",
        {"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
        {"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a", "title": "t"},
        False,
        False,
        ("ref.cycle.unprovable",),
        unprovable=("backward", "forward"),
    ),
    Case(
        "ref-gets-sibling-constraint",
        {"$ref": "#/$defs/A", "$defs": {"A": obj({"x": S})}},
        {"$ref": "#/$defs/A", "required": ["x"], "$defs": {"A": obj({"x": S})}},
        False,
        True,
        ("required.added",),
        wb={},
    ),
    Case(
        "ref-sibling-constraint-removed",
        {"$ref": "#/$defs/A", "maxProperties": 1, "$defs": {"A": obj()}},
        {"$ref": "#/$defs/A", "$defs": {"A": obj()}},
        True,
        False,
        ("max_properties.removed",),
        wf={"a": 1, "b": 2},
    ),
    Case(
        "anchor-ref",
        {"$ref": "#num", "$defs": {"n": {"$anchor": "num", **INT}}},
        {"$ref": "#num", "$defs": {"n": {"$anchor": "num", **NUM}}},
        True,
        False,
        ("type.widened",),
        wf=1.5,
    ),
]


def _check(report: DiffReport) -> DiffReport:
    undocumented = [c.code for c in report.changes if c.code not in CODES]
    assert undocumented == [], "every emitted code must be listed in CODES"
    return report


def _validator(schema: Any) -> Any:
    """What the runtime accepts (decision 0137's pattern engine): a witness must hold there."""
    return runtime_validator(schema, draft=jsonschema_rs.Draft202012Validator, validate_formats=True)


def _literals(value: Any) -> list[Any]:
    """Values a schema mentions (enum members, consts, bounds and their neighbours)."""
    found: list[Any] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("enum", "examples") and isinstance(item, list):
                found += item
            elif key in ("const", "default"):
                found.append(item)
            elif key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"):
                found += [item, item - 1, item + 1, item + 0.5, -item, item * 2, item * 3]
            found += _literals(item)
    elif isinstance(value, list):
        for item in value:
            found += _literals(item)
    return found


_GENERIC = [
    None,
    True,
    False,
    0,
    1,
    -1,
    2,
    3,
    1.5,
    "",
    "a",
    "ab",
    "b",
    "aaaa",
    "a@b.co",
    "2020-01-01",
    [],
    [1],
    [1, 1],
    [1.5],
    ["a"],
    ["a", 1],
    ["a", "x"],
    [1, 2, 3],
    {},
    {"a": "x"},
    {"a": 1},
    {"b": 1},
    {"b": "x"},
    {"x": 1},
    {"x": "s"},
    {"z": 1},
    {"a": "x", "b": "y"},
    {"kind": "a", "x": 1},
    {"kind": "c"},
    {"v": 1, "kids": [{"v": 2, "kids": []}]},
]


def _pool(case: Case) -> list[Any]:
    scalars = [*_literals(case.old), *_literals(case.new)]
    return [*_GENERIC, *scalars, [*scalars[:3]], {"a": scalars[0]} if scalars else {}]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_verdict(case: Case) -> None:
    report = _check(diff_schemas(case.old, case.new))
    detail = [c.to_dict() for c in report.changes]
    assert (report.backward, report.forward) == (case.backward, case.forward), detail
    assert set(case.codes) <= {c.code for c in report.changes}, detail
    if case.backward and case.forward:
        assert all(c.is_neutral for c in report.changes), detail


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_expectation_holds_on_real_instances(case: Case) -> None:
    old, new = _validator(case.old), _validator(case.new)
    for direction, expected, witness, source, target in (
        ("backward", case.backward, case.wb, old, new),
        ("forward", case.forward, case.wf, new, old),
    ):
        if expected:
            assert witness is _NO
            assert direction not in case.unprovable
            refuted = [x for x in _pool(case) if source.is_valid(x) and not target.is_valid(x)]
            assert refuted == [], f"{direction} expected True, but these instances refute it"
        elif witness is not _NO:
            assert source.is_valid(witness), f"{direction} witness must be valid under the source side"
            assert not target.is_valid(witness), f"{direction} witness must be invalid under the target side"
        else:
            assert direction in case.unprovable, f"{direction} is False without a witness or a rule"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_identical_schemas_give_no_changes(case: Case) -> None:
    assert diff_schemas(case.old, copy.deepcopy(case.old)).changes == ()
    assert diff_schemas(case.new, copy.deepcopy(case.new)).changes == ()


def test_swapping_old_and_new_swaps_the_verdicts() -> None:
    for case in CASES:
        if case.unprovable:
            continue
        report = diff_schemas(case.new, case.old)
        assert (report.backward, report.forward) == (case.forward, case.backward), case.id


# -- paths ---------------------------------------------------------------------------------------------------


def test_a_changed_definition_is_reported_once_where_it_is_defined() -> None:
    def doc(zip_type: str) -> dict[str, Any]:
        address = obj({"zip": {"type": zip_type}})
        uses = {f"p{i}": {"$ref": "#/$defs/Address"} for i in range(30)}
        return obj(
            {**uses, "list": {"type": "array", "items": {"$ref": "#/$defs/Address"}}}, **{"$defs": {"Address": address}}
        )

    report = _check(diff_schemas(doc("string"), doc("integer")))
    assert [(c.code, c.path) for c in report.changes] == [("type.changed", "/$defs/Address/properties/zip/type")]


def test_additions_point_into_new_and_removals_into_old() -> None:
    old = {"$defs": {"A": obj({"gone": S})}, "properties": {"x": {"$ref": "#/$defs/A"}}}
    new = {"$defs": {"B": obj({"fresh": S})}, "properties": {"x": {"$ref": "#/$defs/B"}}}
    paths = {c.code: c.path for c in _check(diff_schemas(old, new)).changes}
    assert paths["property.removed"] == "/$defs/A/properties/gone"
    assert paths["property.added"] == "/$defs/B/properties/fresh"


def test_json_pointer_tokens_are_escaped() -> None:
    report = _check(diff_schemas(obj({"a/b~c": S}), obj({"a/b~c": INT})))
    assert [c.path for c in report.changes] == ["/properties/a~1b~0c/type"]


def test_not_reverses_the_directions_of_inner_changes() -> None:
    report = _check(diff_schemas({"not": {"maximum": 5}}, {"not": {"maximum": 10}}))
    [change] = report.changes
    assert (change.code, change.path, change.backward, change.forward) == (
        "maximum.relaxed",
        "/not/maximum",
        False,
        True,
    )


def test_required_with_default_message_says_validators_do_not_insert_defaults() -> None:
    report = diff_schemas(obj({"a": {"default": 1}}), obj({"a": {"default": 1}}, required=["a"]))
    [change] = [c for c in report.changes if c.code == "required.added_with_default"]
    assert "do not insert" in change.message
    assert change.path == "/required/0"


# -- recursion -----------------------------------------------------------------------------------------------


def test_mutually_recursive_definitions_terminate_and_are_judged() -> None:
    def doc(leaf: dict[str, Any]) -> dict[str, Any]:
        defs = {
            f"D{i}": obj(
                {
                    "next": {"$ref": f"#/$defs/D{(i + 1) % 12}"},
                    "all": {"type": "array", "items": {"anyOf": [{"$ref": f"#/$defs/D{j}"} for j in range(12)]}},
                    "leaf": leaf,
                }
            )
            for i in range(12)
        }
        return {"$defs": defs, "$ref": "#/$defs/D0"}

    started = time.perf_counter()
    same = _check(diff_schemas(doc(INT), {**doc(INT), "title": "walked, not short-cut"}))
    assert (same.backward, same.forward) == (True, True)
    widened = _check(diff_schemas(doc(INT), doc(NUM)))
    assert (widened.backward, widened.forward) == (True, False)
    assert {c.path for c in widened.changes} == {f"/$defs/D{i}/properties/leaf/type" for i in range(12)}
    assert time.perf_counter() - started < 5  # memoised: no blow-up over the cycles


def test_recursion_through_not_is_unprovable() -> None:
    old = obj({"a": {"not": {"$ref": "#"}}})
    report = _check(diff_schemas(old, {**old, "title": "t"} | {"properties": {"a": {"not": {"$ref": "#"}}, "b": S}}))
    assert "ref.cycle.unprovable" in {c.code for c in report.changes}
    assert not report.backward
    assert not report.forward


# -- scale: graphs of definitions, long chains of references ----------------------------------------------------


def _graph(n: int) -> dict[str, Any]:
    """``n`` mutually recursive definitions, each an object with a string and 3 references to the next ones."""
    defs = {
        f"D{i}": obj({"name": {"type": "string"}, **{f"x{j}": {"$ref": f"#/$defs/D{(i + j) % n}"} for j in (1, 2, 3)}})
        for i in range(n)
    }
    return {"$defs": defs, "$ref": "#/$defs/D0"}


def _chain(n: int, leaf: dict[str, Any], negated: bool = False) -> dict[str, Any]:
    """D0 -> D1 -> ... -> Dn through a property each (``negated``: through not/not), Dn is ``leaf``."""

    def hop(i: int) -> dict[str, Any]:
        ref = {"$ref": f"#/$defs/D{i + 1}"}
        return {"not": {"not": ref}} if negated else ref

    defs: dict[str, Any] = {f"D{i}": obj({"next": hop(i)}) for i in range(n)}
    return {"$defs": {**defs, f"D{n}": leaf}, "$ref": "#/$defs/D0"}


@pytest.fixture
def budget(monkeypatch: pytest.MonkeyPatch) -> Any:
    """``budget(per)``: fail the test as soon as the engine does more than ``per`` of one kind of work:
    compared pairs, equivalence checks, or changes and inner results linked into results. Each is a
    few per pair when results are shared; copying change lists along every path through a graph of
    references, or rewalking it from every pair, costs exponentially (or quadratically) more, and
    fails here at once instead of running out of time or memory."""
    from subhive.compat import _js_engine, _js_pair

    def limit(per: int) -> None:
        spent = {"pairs": 0, "checks": 0, "links": 0}

        def charge(kind: str, amount: int) -> None:
            spent[kind] += amount
            assert spent[kind] <= per, f"more than {per} {kind}: the work is not linear in the schema"

        compare_nodes, same_assertions, result_of = (
            _js_engine.Engine._compare_nodes,
            _js_engine.Engine._same_assertions,
            _js_pair.result_of,
        )

        def counted_compare(self: Any, *args: Any) -> Any:
            charge("pairs", 1)
            return compare_nodes(self, *args)

        def counted_check(self: Any, *args: Any) -> Any:
            charge("checks", 1)
            return same_assertions(self, *args)

        def counted_result(items: Any) -> Any:
            items = list(items)
            charge("links", len(items))
            return result_of(items)

        monkeypatch.setattr(_js_engine.Engine, "_compare_nodes", counted_compare)
        monkeypatch.setattr(_js_engine.Engine, "_same_assertions", counted_check)
        monkeypatch.setattr(_js_pair, "result_of", counted_result)
        monkeypatch.setattr(_js_engine, "result_of", counted_result)

    return limit


@pytest.mark.parametrize("n", [40, 200])
def test_a_dense_graph_of_definitions_reports_only_the_real_change(budget: Any, n: int) -> None:
    old = _graph(n)
    new = copy.deepcopy(old)
    new["$defs"][f"D{n - 1}"]["properties"]["name"]["maxLength"] = 64
    budget(30 * n)  # both diffs together: about 13 per definition
    narrowed = _check(diff_schemas(old, new))
    assert [(c.code, c.path, c.backward, c.forward) for c in narrowed.changes] == [
        ("max_length.added", f"/$defs/D{n - 1}/properties/name/maxLength", False, True)
    ]
    widened = _check(diff_schemas(new, old))
    assert [(c.code, c.path, c.backward, c.forward) for c in widened.changes] == [
        ("max_length.removed", f"/$defs/D{n - 1}/properties/name/maxLength", True, False)
    ]


def test_a_reference_replaced_in_a_dense_graph_is_reported_where_it_was_replaced(budget: Any) -> None:
    old = _graph(40)
    new = copy.deepcopy(old)
    new["$defs"]["D39"]["properties"]["x1"] = {"type": "string"}  # was {"$ref": "#/$defs/D0"}
    budget(800)  # about 260
    report = _check(diff_schemas(old, new))
    site = "/$defs/D39/properties/x1"
    assert all(c.path.startswith(site + "/") for c in report.changes), [c.to_dict() for c in report.changes]
    assert [(c.code, c.path) for c in report.changes if not c.is_neutral] == [("type.changed", site + "/type")]
    assert (report.backward, report.forward) == (False, False)


def test_a_reference_replaced_by_an_inline_schema_is_reported_at_the_reference() -> None:
    shared = {"$defs": {"A": obj({"a": INT})}}
    old = {**shared, **obj({"f": {"$ref": "#/$defs/A"}, "g": {"$ref": "#/$defs/A"}})}
    new = {**shared, **obj({"f": obj(), "g": {"$ref": "#/$defs/A"}})}
    # A itself did not change (g still uses it): f lost A's property, so that is where it is reported.
    removed = _check(diff_schemas(old, new))
    assert [(c.code, c.path, c.backward, c.forward) for c in removed.changes] == [
        ("property.removed", "/properties/f/properties/a", True, False)
    ]
    added = _check(diff_schemas(new, old))
    assert [(c.code, c.path, c.backward, c.forward) for c in added.changes] == [
        ("property.added", "/properties/f/properties/a", False, True)
    ]


@pytest.mark.parametrize("negated", [False, True], ids=["plain", "through-not-not"])
def test_a_long_chain_of_references_is_compared(budget: Any, negated: bool) -> None:
    limit = sys.getrecursionlimit()
    hops = 200
    budget(15 * hops)  # at most 8 per hop
    report = _check(diff_schemas(_chain(hops, S, negated), _chain(hops, {**S, "minLength": 1}, negated)))
    assert [(c.code, c.path, c.backward, c.forward) for c in report.changes] == [
        ("min_length.added", f"/$defs/D{hops}/minLength", False, True)
    ]
    assert sys.getrecursionlimit() == limit  # raised only while a deep comparison runs


def test_a_chain_too_long_to_compare_is_an_input_error_that_says_why() -> None:
    hops = 20_000
    with pytest.raises(InputError) as info:
        diff_schemas(_chain(hops, S), _chain(hops, {**S, "minLength": 1}))
    assert info.value.code == "schema.too_deep"
    assert re.fullmatch(r"/\$defs/D\d+", info.value.location.pointer or "")  # where it got too deep
    assert "$ref" in info.value.message
    # The chain already is in $defs: the hint must not say to move subschemas there.
    assert info.value.hint is not None
    assert "$ref" in info.value.hint
    assert "$defs" not in info.value.hint


# -- references to other documents ---------------------------------------------------------------------------


def _resolver(files: dict[str, Any], calls: list[str]) -> Any:
    def resolve(ref: str) -> tuple[Any, Any]:
        calls.append(ref)
        return files[ref], resolve

    return resolve


def test_external_refs_need_a_resolver() -> None:
    schema = obj({"money": {"$ref": "common.json#/$defs/Money"}})
    report = _check(diff_schemas(schema, {**schema, "required": ["money"]}))
    assert {c.code for c in report.changes} >= {"ref.external_unresolved"}
    assert not report.backward
    assert not report.forward


def test_external_refs_are_followed_through_resolvers() -> None:
    schema = obj({"money": {"$ref": "common.json#/$defs/Money"}})
    old_files = {
        "common.json": {
            "$defs": {"Money": obj({"units": INT, "cur": {"$ref": "#/$defs/Cur"}}), "Cur": {"enum": ["EUR", "USD"]}}
        }
    }
    new_files = copy.deepcopy(old_files)
    new_files["common.json"]["$defs"]["Cur"]["enum"].append("GBP")
    calls: list[str] = []
    report = _check(
        diff_schemas(
            schema,
            copy.deepcopy(schema),
            old_resolver=_resolver(old_files, calls),
            new_resolver=_resolver(new_files, calls),
        )
    )
    assert [(c.code, c.path, c.backward, c.forward) for c in report.changes] == [
        ("enum.widened", "common.json#/$defs/Cur/enum", True, False)
    ]
    assert calls == ["common.json", "common.json"]  # the document part only, once per side


def test_remote_refs_are_never_fetched() -> None:
    calls: list[str] = []
    schema = obj({"a": {"$ref": "https://example.com/s.json#/$defs/A"}})
    report = _check(
        diff_schemas(
            schema, {**schema, "required": ["a"]}, old_resolver=_resolver({}, calls), new_resolver=_resolver({}, calls)
        )
    )
    # The same URI at the same place on both sides is the same target (decision 0141): only "required" changed.
    assert [(c.code, c.backward, c.forward) for c in report.changes] == [("required.added", False, True)]
    assert calls == []


def test_another_remote_uri_is_unprovable_naming_both() -> None:
    old = obj({"a": {"$ref": "https://example.com/s.json#/$defs/A"}})
    new = obj({"a": {"$ref": "https://example.com/s.json#/$defs/B"}})
    report = _check(diff_schemas(old, new))
    assert [(c.code, c.path, c.backward, c.forward) for c in report.changes] == [
        ("ref.remote.unprovable", "/properties/a/$ref", False, False)
    ]
    assert "s.json#/$defs/A in OLD" in report.changes[0].message
    assert "s.json#/$defs/B in NEW" in report.changes[0].message


def test_a_resolver_that_finds_nothing_gives_an_unprovable_change() -> None:
    schema = obj({"a": {"$ref": "missing.json"}})
    report = _check(
        diff_schemas(schema, {**schema, "title": "x"}, old_resolver=lambda ref: None, new_resolver=lambda ref: None)
    )
    assert "ref.external_unresolved" in {c.code for c in report.changes}


def test_a_failing_resolver_becomes_an_input_error() -> None:
    def broken(ref: str) -> Any:
        raise OSError("disk on fire")

    schema = obj({"a": {"$ref": "x.json"}})
    with pytest.raises(InputError) as info:
        diff_schemas(schema, {**schema, "title": "t"}, old_resolver=broken, new_resolver=broken)
    assert info.value.code == "schema.ref_unresolvable"
    assert "disk on fire" in info.value.message
    assert info.value.location.pointer == "/properties/a/$ref"


# -- bad input -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "code", "pointer"),
    [
        ({"type": "strin"}, "schema.invalid", "/type"),
        ({"properties": {"a": {"minLength": -1}}}, "schema.invalid", "/properties/a/minLength"),
        ("not a schema", "schema.invalid", ""),
        ({"$schema": "http://json-schema.org/draft-03/schema#"}, "schema.draft_unsupported", "/$schema"),
        ({"properties": {"a": {"$ref": "#/$defs/Missing"}}}, "schema.ref_not_found", "/properties/a/$ref"),
        ({"$ref": "#nowhere"}, "schema.ref_not_found", "/$ref"),
    ],
)
def test_bad_schemas_raise_input_errors_with_a_pointer(old: Any, code: str, pointer: str) -> None:
    with pytest.raises(InputError) as info:
        diff_schemas(old, {"title": "new"})
    assert (info.value.code, info.value.location.pointer) == (code, pointer)
    assert info.value.message
    assert info.value.hint


def test_an_uncompilable_pattern_is_an_input_error() -> None:
    with pytest.raises(InputError) as info:
        diff_schemas(obj(patternProperties={"((": S}), obj({"x": S}, patternProperties={"((": S}))
    assert info.value.code == "schema.keyword_invalid"


# -- codes ---------------------------------------------------------------------------------------------------


def test_codes_are_dotted_lowercase_with_descriptions() -> None:
    assert all(re.fullmatch(r"[a-z_]+(\.[a-z_]+)+", code) for code in CODES), CODES
    assert all(isinstance(text, str) and text for text in CODES.values())


def test_every_code_is_documented() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "compat-codes.md").read_text(encoding="utf-8")
    section = doc.split("## JSON Schema", 1)[1].split("\n## ", 1)[0]
    assert [code for code in CODES if f"`{code}`" not in section] == []


def test_most_codes_are_reachable_from_the_cases() -> None:
    emitted = {c.code for case in CASES for c in diff_schemas(case.old, case.new).changes}
    emitted |= {c.code for case in CASES for c in diff_schemas(case.new, case.old).changes}
    # Every code is emitted somewhere in the engine; the cases reach the bulk of them, which guards
    # against a family silently going quiet.
    assert len(emitted) >= 0.6 * len(CODES), sorted(set(CODES) - emitted)


# -- a small, deterministic instance check over mutated pairs -----------------------------------------------

_BASE = obj(
    {
        "id": {**S, "pattern": "^[a-z]+$", "maxLength": 8},
        "n": {**INT, "minimum": 0, "maximum": 9},
        "tags": {"type": "array", "items": S, "maxItems": 3, "uniqueItems": True},
        "kind": {"enum": ["a", "b"]},
        "meta": {"anyOf": [S, NULL]},
    },
    required=["id"],
    additionalProperties=False,
)
# (where, property, keyword, new value, expected backward, expected forward); pattern changes are
# unprovable by rule, every other False direction has a refuting instance in _INSTANCES.
_MUTATIONS = [
    ("properties", "n", "maximum", 5, False, True),
    ("properties", "n", "maximum", 20, True, False),
    ("properties", "n", "type", "number", True, False),
    ("properties", "id", "maxLength", 4, False, True),
    ("properties", "id", "pattern", "^[a-c]+$", False, False),
    ("properties", "tags", "maxItems", 5, True, False),
    ("properties", "tags", "uniqueItems", False, True, False),
    ("properties", "kind", "enum", ["a", "b", "c"], True, False),
    ("properties", "kind", "enum", ["a"], False, True),
    ("properties", "meta", "anyOf", [S], False, True),
    ("properties", "meta", "anyOf", [S, NULL, INT], True, False),
    ("additionalProperties", None, None, True, True, False),
    ("required", None, None, ["id", "n"], False, True),
    ("required", None, None, [], True, False),
]
_INSTANCES = [
    {"id": "ab"},
    {"id": "ab", "n": 7},
    {"id": "ab", "n": 7.5},
    {"id": "ab", "n": 15},
    {"id": "abcdef"},
    {"id": "xyz"},
    {"id": "ab", "tags": ["a", "b", "c", "d"]},
    {"id": "ab", "tags": ["a", "a"]},
    {"id": "ab", "kind": "c"},
    {"id": "ab", "kind": "b"},
    {"id": "ab", "meta": None},
    {"id": "ab", "meta": 1},
    {"id": "ab", "other": 1},
    {},
    {"n": 1},
]


@pytest.mark.parametrize("mutation", _MUTATIONS, ids=[f"{m[0]}-{m[1]}-{m[2]}" for m in _MUTATIONS])
def test_verdicts_on_mutated_pairs(mutation: tuple[Any, ...]) -> None:
    where, name, keyword, value, backward, forward = mutation
    new = copy.deepcopy(_BASE)
    if name is None:
        new[where] = value
    else:
        new[where][name][keyword] = value
    report = _check(diff_schemas(_BASE, new))
    assert (report.backward, report.forward) == (backward, forward), [c.to_dict() for c in report.changes]
    old_v, new_v = _validator(_BASE), _validator(new)
    refuted_b = [x for x in _INSTANCES if old_v.is_valid(x) and not new_v.is_valid(x)]
    refuted_f = [x for x in _INSTANCES if new_v.is_valid(x) and not old_v.is_valid(x)]
    assert bool(refuted_b) is not backward or keyword == "pattern", refuted_b
    assert bool(refuted_f) is not forward or keyword == "pattern", refuted_f
