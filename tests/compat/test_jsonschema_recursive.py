"""Recursive schemas, guarded or not, compare soundly against what the runtime validator accepts (decision 0098).

jsonschema-rs reads a cycle that stays on the same instance (through allOf/anyOf) as its greatest fixed point: a
subschema met again on the same instance holds. The engine's co-inductive assumption is checked against that.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from subhive._rs_validator import runtime_validator
from subhive.compat.files import diff_files
from subhive.compat.jsonschema import diff_schemas
from subhive.contract import lint_paths

# Negation and oneOf too: the engine must stay sound on them (lint refuses the cycles through them on the same
# instance, but diff_schemas is an API of its own).
REFS = [
    {"$ref": "#/$defs/a"}, {"$ref": "#/$defs/b"}, {"not": {"$ref": "#/$defs/b"}},
    {"properties": {"x": {"not": {"$ref": "#/$defs/a"}}}},
]  # fmt: skip
LEAVES = [
    {"type": "string"}, {"type": "integer"}, {"type": ["object", "null"]}, {"type": "array"}, {"minimum": 0},
    {"maxLength": 1}, {"required": ["x"]}, {"maxItems": 1}, {"not": {"type": "null"}}, True,
]  # fmt: skip


@st.composite
def bodies(draw: st.DrawFn, depth: int = 2) -> Any:
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(REFS + LEAVES))
    kind = draw(st.sampled_from(["allOf", "anyOf", "oneOf", "properties", "items", "additionalProperties", "leaf+"]))
    if kind in ("allOf", "anyOf", "oneOf"):
        return {kind: draw(st.lists(bodies(depth - 1), min_size=1, max_size=3))}
    if kind == "properties":
        return {"properties": {"x": draw(bodies(depth - 1))}}
    if kind in ("items", "additionalProperties"):
        return {kind: draw(bodies(depth - 1))}
    return {
        **draw(st.sampled_from([leaf for leaf in LEAVES if isinstance(leaf, dict)])),
        "allOf": [draw(bodies(depth - 1))],
    }


@st.composite
def systems(draw: st.DrawFn) -> dict[str, Any]:
    return {"$defs": {"a": draw(bodies()), "b": draw(bodies())}, "$ref": "#/$defs/a"}


def _mutated(draw: Callable[[st.SearchStrategy[Any]], Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Often a small change of ``schema`` (so that verdicts are not all "breaking"), else another system."""
    if draw(st.booleans()):
        another: dict[str, Any] = draw(systems())
        return another
    other: dict[str, Any] = json.loads(json.dumps(schema))
    name = draw(st.sampled_from(["a", "b"]))
    other["$defs"][name] = draw(st.sampled_from([{"anyOf": [other["$defs"][name], draw(bodies(1))]},
                                                 {"allOf": [other["$defs"][name], draw(bodies(1))]},
                                                 other["$defs"][name]]))  # fmt: skip
    return other


INSTANCES = st.recursive(
    st.one_of(st.none(), st.integers(-2, 2), st.sampled_from(["", "s", "xy"])),
    lambda inner: st.one_of(
        st.lists(inner, max_size=2), st.dictionaries(st.sampled_from(["x", "y"]), inner, max_size=2)
    ),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(st.data())
def test_every_compatible_verdict_on_recursive_pairs_holds_for_the_runtime_validator(data: st.DataObject) -> None:
    old = data.draw(systems())
    new = _mutated(data.draw, old)
    report = diff_schemas(old, new)
    vo, vn = runtime_validator(old), runtime_validator(new)
    for instance in data.draw(st.lists(INSTANCES, min_size=8, max_size=8)):
        if report.backward and vo.is_valid(instance):
            assert vn.is_valid(instance), ("backward claimed", instance, [c.code for c in report.changes])
        if report.forward and vn.is_valid(instance):
            assert vo.is_valid(instance), ("forward claimed", instance, [c.code for c in report.changes])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(systems())
def test_a_recursive_schema_is_compatible_with_itself(schema: dict[str, Any]) -> None:
    report = diff_schemas(schema, schema)
    assert (report.backward, report.forward) == (True, True), [c.code for c in report.changes]


def _defs(body: Any, **more: Any) -> dict[str, Any]:
    return {"$defs": {"a": body, **more}, "$ref": "#/$defs/a"}


def test_unguarded_cycles_get_sound_verdicts_both_ways() -> None:
    anything = _defs({"anyOf": [{"type": "string"}, {"$ref": "#/$defs/a"}]})  # the runtime accepts every value
    assert runtime_validator(anything).is_valid(1)
    report = diff_schemas(anything, {"type": "string"})
    assert (report.backward, report.forward) == (False, True)
    strings = _defs({"allOf": [{"$ref": "#/$defs/a"}], "type": "string"})  # exactly the strings
    report = diff_schemas(strings, {"type": "string"})
    assert (report.backward, report.forward) == (True, True)
    renamed = {"$defs": {"z": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/z"}]}}, "$ref": "#/$defs/z"}
    report = diff_schemas(anything, renamed)
    assert (report.backward, report.forward) == (True, True)


def test_tree_linked_list_and_json_value_changes_are_judged(tmp_path: Path) -> None:
    children = {"type": "array", "items": {"$ref": "#/$defs/a"}}
    tree = _defs({"type": "object", "properties": {"v": {"type": "integer"}, "c": children}})
    wider = json.loads(json.dumps(tree).replace('"integer"', '"number"'))
    report = diff_schemas(tree, wider)
    assert (report.backward, report.forward) == (True, False)
    value = _defs({"anyOf": [{"type": ["null", "boolean", "number", "string"]},
                             {"type": "array", "items": {"$ref": "#/$defs/a"}},
                             {"type": "object", "additionalProperties": {"$ref": "#/$defs/a"}}]})  # fmt: skip
    report = diff_schemas(value, value)
    assert (report.backward, report.forward) == (True, True)
    listed = _defs({"anyOf": [{"type": "null"}, {"type": "object", "required": ["head"],
                                                 "properties": {"tail": {"$ref": "#/$defs/a"}}}]})  # fmt: skip
    (tmp_path / "l.json").write_text(json.dumps(listed))
    report = diff_files(tmp_path / "l.json", tmp_path / "l.json")
    assert (report.backward, report.forward) == (True, True)


def test_lint_accepts_a_positive_unguarded_cycle_with_a_warning_and_refuses_one_through_not(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text(json.dumps(_defs({"allOf": [{"$ref": "#/$defs/b"}], "type": "object"},
                                     b={"anyOf": [{"$ref": "#/$defs/a"}, {"type": "string"}]}), indent=2))  # fmt: skip
    result = lint_paths([path])
    assert result.ok, result.problems
    assert [w.code for w in result.warnings] == ["schema.ref_cycle_unguarded"]
    path.write_text(json.dumps(_defs({"not": {"$ref": "#/$defs/a"}}), indent=2))
    result = lint_paths([path])
    assert [p.code for p in result.problems] == ["schema.ref_cycle"]
    assert "not" in result.problems[0].message
