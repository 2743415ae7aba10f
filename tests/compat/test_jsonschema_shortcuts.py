"""Shortcuts the engine takes for speed must answer exactly what the full comparison answers.

An added property's schema is judged against what the old model allowed for it; in an open model that is
"anything", and the engine answers "is every value valid under the new schema?" without comparing the schema
keyword by keyword when the schema visibly rejects a whole kind of value (``Engine.subset``). The same question
is asked in full when the property exists on both sides, written ``true`` before: both verdicts must agree.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings

from subhive.compat.jsonschema import diff_schemas
from tests.compat.test_jsonschema_soundness import schemas


def _verdicts(schema: Any, definition: Any) -> tuple[tuple[bool, bool], tuple[bool, bool]]:
    """(backward, forward) of adding property ``p`` with ``schema`` to an open model, and of changing ``p`` from
    ``true`` to ``schema``."""
    defs = {"D": definition}
    added = diff_schemas({"$defs": defs}, {"$defs": defs, "properties": {"p": schema}})
    changed = diff_schemas({"$defs": defs, "properties": {"p": True}}, {"$defs": defs, "properties": {"p": schema}})
    return (added.backward, added.forward), (changed.backward, changed.forward)


def test_a_typed_property_added_to_an_open_model_breaks_backward_only() -> None:
    for schema in ({"type": "string"}, {"$ref": "#/$defs/D"}, {"anyOf": [{"type": "null"}, {"enum": [1, "a"]}]}):
        added, changed = _verdicts(schema, {"type": "integer"})
        assert added == changed == (False, True), schema


def test_an_untyped_property_is_still_compared_in_full() -> None:
    # Every kind of value is possible, so the shortcut does not apply: the comparison finds the narrowing
    # ({"required"}) or the proof that nothing is rejected (a type list naming every kind).
    required = {"required": ["a"]}
    every_kind = {"type": ["null", "boolean", "object", "array", "number", "string"]}
    assert _verdicts(required, True) == ((False, True), (False, True))
    assert _verdicts(every_kind, True) == ((True, True), (True, True))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=schemas(with_ref=True), definition=schemas(with_ref=False))
def test_adding_a_property_is_judged_as_changing_it_from_true(schema: Any, definition: Any) -> None:
    added, changed = _verdicts(schema, definition)
    assert added == changed
