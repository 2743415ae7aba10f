"""Subschemas written the same in OLD and NEW are proven the same by following only their references.

The engine skips an unchanged subschema once the definitions its ``$ref``s reach are unchanged too (the walk
pairs each reference in OLD with the one at the same pointer in NEW). These tests pin what that shortcut must
get right: pairing by pointer however members are ordered, resolving inside embedded ``$id`` resources, and
recursion (including through ``not``, which only this proof can settle).
"""

from __future__ import annotations

import json
import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from subhive.compat.jsonschema import diff_schemas


def _reordered(value: Any, rng: random.Random) -> Any:
    """``value`` with the members of every object in a shuffled order (the same JSON value)."""
    if isinstance(value, dict):
        keys = list(value)
        rng.shuffle(keys)
        return {k: _reordered(value[k], rng) for k in keys}
    if isinstance(value, list):
        return [_reordered(v, rng) for v in value]
    return value


def test_references_pair_up_by_pointer_not_by_member_order() -> None:
    # The two references swap places in the listing only; the definitions they reach swap contents. Paired by
    # member order, string-vs-string and integer-vs-integer would look unchanged.
    old = {
        "properties": {"x": {"properties": {"a": {"$ref": "#/$defs/A"}, "b": {"$ref": "#/$defs/B"}}}},
        "$defs": {"A": {"type": "string"}, "B": {"type": "integer"}},
    }
    new = {
        "properties": {"x": {"properties": {"b": {"$ref": "#/$defs/B"}, "a": {"$ref": "#/$defs/A"}}}},
        "$defs": {"A": {"type": "integer"}, "B": {"type": "string"}},
    }
    report = diff_schemas(old, new)
    assert (report.backward, report.forward) == (False, False)
    assert {c.path for c in report.changes} >= {"/$defs/A/type", "/$defs/B/type"}


def test_references_inside_an_embedded_resource_resolve_there() -> None:
    def doc(kind: str, title: str) -> dict[str, Any]:
        inner = {
            "$id": "https://example.com/inner.json",
            "$defs": {"Inner": {"type": kind}},
            "properties": {"p": {"$ref": "#/$defs/Inner"}},
        }
        # The resource one level down, so that an unchanged walk starts outside it (at /properties/w), where
        # "#/$defs/Inner" would point nowhere.
        return {"title": title, "properties": {"w": {"properties": {"i": inner}}}, "$defs": {"D": {"type": "null"}}}

    unchanged = diff_schemas(doc("string", "v1"), doc("string", "v2"))
    assert [c.code for c in unchanged.changes] == ["annotation.changed"]
    assert (unchanged.backward, unchanged.forward) == (True, True)
    changed = diff_schemas(doc("string", "v1"), doc("integer", "v2"))
    assert (changed.backward, changed.forward) == (False, False)
    assert any(c.path.startswith("/properties/w/properties/i/$defs/Inner") for c in changed.changes), changed.changes


def test_an_unchanged_definition_recursive_through_not_stays_compatible() -> None:
    # Recursion under `not` cannot be proven by comparing keyword by keyword; being the same schema settles it.
    defs = {"n": {"not": {"properties": {"x": {"$ref": "#/$defs/n"}}}}}
    old = {"title": "v1", "properties": {"p": {"$ref": "#/$defs/n"}}, "$defs": defs}
    new = {"title": "v2", "properties": {"p": {"$ref": "#/$defs/n"}}, "$defs": json.loads(json.dumps(defs))}
    report = diff_schemas(old, new)
    assert (report.backward, report.forward) == (True, True)
    assert [c.code for c in report.changes] == ["annotation.changed"]


def test_a_changed_definition_reached_only_through_unchanged_references_is_reported() -> None:
    old = {
        "properties": {"p": {"properties": {"q": {"$ref": "#/$defs/chain1"}}}},
        "$defs": {"chain1": {"$ref": "#/$defs/chain2"}, "chain2": {"items": {"maxLength": 5}}},
    }
    new = json.loads(json.dumps(old))
    new["$defs"]["chain2"]["items"]["maxLength"] = 3
    report = diff_schemas(old, new)
    assert (report.backward, report.forward) == (False, True)
    assert [c.path for c in report.changes] == ["/$defs/chain2/items/maxLength"]


PIECES = [
    {"$ref": "#/$defs/a"}, {"$ref": "#/$defs/b"}, {"type": "string"}, {"minimum": 0}, {"required": ["x"]},
    {"not": {"$ref": "#/$defs/a"}}, {"enum": [1, True, "s"]}, True,
]  # fmt: skip


@st.composite
def schemas(draw: st.DrawFn, depth: int = 3) -> Any:
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(PIECES))
    kind = draw(st.sampled_from(["allOf", "anyOf", "properties", "items", "leaf+"]))
    if kind in ("allOf", "anyOf"):
        return {kind: draw(st.lists(schemas(depth - 1), min_size=1, max_size=3))}
    if kind == "properties":
        names = draw(st.lists(st.sampled_from(["x", "y", "z"]), min_size=1, max_size=3, unique=True))
        return {"properties": {n: draw(schemas(depth - 1)) for n in names}}
    if kind == "items":
        return {"items": draw(schemas(depth - 1))}
    return {"type": "object", "description": "d", "allOf": [draw(schemas(depth - 1))]}


# A definition that is only a reference could close a loop of bare references: unprovable, reported as such.
DEFINITIONS = schemas().filter(lambda s: not (isinstance(s, dict) and list(s) == ["$ref"]))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(DEFINITIONS, DEFINITIONS, schemas(), st.integers(0, 2**32 - 1))
def test_a_reordered_copy_differs_only_where_it_was_edited(a: Any, b: Any, body: Any, seed: int) -> None:
    old = {"title": "v1", "properties": {"body": body}, "$defs": {"a": a, "b": b}}
    new = _reordered(json.loads(json.dumps(old)), random.Random(seed))
    new["title"] = "v2"  # the roots differ, so the comparison descends into the unchanged parts
    report = diff_schemas(old, new)
    assert [c.code for c in report.changes] == ["annotation.changed"], report.changes
    assert (report.backward, report.forward) == (True, True)
