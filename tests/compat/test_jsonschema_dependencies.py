"""Dependencies across dialects: draft-07 ``dependencies`` (array and schema forms) against 2020-12's
``dependentRequired``/``dependentSchemas``, compared by meaning.

The corpus (jsonschema_corpus.py) is draft 2020-12 only; these pairs mix dialects, so each witness is
checked with python-jsonschema's validator of the schema's own dialect.
"""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema.validators import validator_for

from subhive.compat.jsonschema import diff_schemas

D7 = "http://json-schema.org/draft-07/schema#"
_NONE: Any = object()

# id, old, new, backward, forward, witness valid under OLD only, witness valid under NEW only
CASES: list[tuple[str, Any, Any, bool, bool, Any, Any]] = [
    (
        "array-form-to-required-only-schema",
        {"$schema": D7, "dependencies": {"a": ["b"]}},
        {"dependentSchemas": {"a": {"required": ["b"]}}},
        True,
        True,
        _NONE,
        _NONE,
    ),
    (
        "schema-form-to-dependent-required",
        {"$schema": D7, "dependencies": {"a": {"required": ["b"]}}},
        {"dependentRequired": {"a": ["b"]}},
        True,
        True,
        _NONE,
        _NONE,
    ),
    (
        "array-form-narrowed-to-schema-form",
        {"$schema": D7, "dependencies": {"a": ["b", "c"]}},
        {"$schema": D7, "dependencies": {"a": {"required": ["b"]}}},
        True,
        False,
        _NONE,
        {"a": 1, "b": 1},
    ),
    (
        "schema-form-added-on-a-forbidden-key",
        {"$schema": D7, "type": "object", "properties": {"b": {}}, "additionalProperties": False},
        {
            "$schema": D7,
            "type": "object",
            "properties": {"b": {}},
            "additionalProperties": False,
            "dependencies": {"a": {"required": ["c"]}},
        },
        True,
        True,
        _NONE,
        _NONE,
    ),
    (
        "schema-form-added",
        {"$schema": D7, "type": "object"},
        {"$schema": D7, "type": "object", "dependencies": {"a": {"maxProperties": 1}}},
        False,
        True,
        {"a": 1, "b": 1},
        _NONE,
    ),
]


def _valid(schema: Any, instance: Any) -> bool:
    return bool(validator_for(schema)(schema).is_valid(instance))


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_dependencies_compare_by_meaning(case: tuple[str, Any, Any, bool, bool, Any, Any]) -> None:
    _, old, new, back, fwd, only_old, only_new = case
    # The expectations prove themselves: a False direction has its witness, under each dialect's validator.
    for expected, witness, (src, dst) in ((back, only_old, (old, new)), (fwd, only_new, (new, old))):
        assert expected == (witness is _NONE)
        if witness is not _NONE:
            assert _valid(src, witness)
            assert not _valid(dst, witness)
    report = diff_schemas(old, new)
    assert (report.backward, report.forward) == (back, fwd), [c.to_dict() for c in report.changes]
