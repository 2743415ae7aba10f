"""Lint's shortcuts never change what it reports. Older dialects are checked against their meta-schema natively
first (decision 0111): whenever jsonschema-rs and the ECMA-262 pattern check pass a schema, python-jsonschema
(the reference, and the source of the messages) finds nothing either, and every problem it reports still reaches
the user. Loading a schema file for a diff skips the warnings nobody reads, not a single problem."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from subhive._dialects import DRAFT4, DRAFT6, DRAFT7, DRAFT2019, META_URIS
from subhive.contract import lint_paths, load_schema_file
from subhive.contract.lint import _dialect_validator, _rs_dialect_ok
from subhive.errors import ContractInvalid

OLDER = [DRAFT4, DRAFT6, DRAFT7, DRAFT2019]

_KEYWORDS = st.sampled_from(
    ["type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "items", "additionalItems", "properties",
     "patternProperties", "required", "enum", "pattern", "minLength", "dependencies", "anyOf", "not", "$ref", "id",
     "$id", "definitions", "uniqueItems", "format", "title", "examples", "default", "const", "contains"]
)  # fmt: skip
_LEAF = (
    st.none()
    | st.booleans()
    | st.integers(-2, 3)
    | st.sampled_from([1.5, "string", "object", "#/definitions/a", "^a+$", "a(", "\\p{L}", "[", "(?<n>x)"])
)
# Schema-shaped JSON: the meta-schema's keywords holding anything, so that both valid and invalid schemas come up.
_SCHEMAISH = st.recursive(
    _LEAF,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(_KEYWORDS | st.sampled_from(["a", "b"]), inner, max_size=4)
    ),
    max_leaves=10,
)


@pytest.mark.parametrize("dialect", OLDER)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=_SCHEMAISH)
def test_a_schema_the_fast_check_passes_has_no_meta_schema_error(dialect: str, schema: Any) -> None:
    if _rs_dialect_ok(dialect, schema):
        assert list(_dialect_validator(dialect).iter_errors(schema)) == []


@pytest.mark.parametrize("dialect", OLDER)
def test_the_fast_check_passes_real_schemas_and_refuses_broken_ones(dialect: str) -> None:
    good = {"type": "object", "properties": {"a": {"type": "string", "pattern": "^[a-z]+$"}}, "required": ["a"]}
    assert _rs_dialect_ok(dialect, good)  # else it would never save anything
    assert not _rs_dialect_ok(dialect, {"type": "strin"})
    assert not _rs_dialect_ok(dialect, {"pattern": "a("})  # not a regex: python-jsonschema explains it
    assert not _rs_dialect_ok(dialect, {"$ref": "#/definitions/a", "pattern": "(?<n>x"})  # beside $ref too


def _lint(tmp_path: Path, schema: dict[str, Any]) -> list[tuple[str, str]]:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(schema))
    return [(p.code, p.location.pointer or "") for p in lint_paths([path]).problems]


@pytest.mark.parametrize("dialect", [DRAFT4, DRAFT7])
def test_meta_schema_problems_are_still_reported_where_they_are(tmp_path: Path, dialect: str) -> None:
    uri = META_URIS[dialect]
    assert _lint(tmp_path, {"$schema": uri, "properties": {"a": {"type": "strin"}}}) == [
        ("schema.meta", "/properties/a/type")
    ]
    assert _lint(tmp_path, {"$schema": uri, "properties": {"a": {"type": "string", "pattern": "a("}}}) == [
        ("schema.meta", "/properties/a/pattern")
    ]
    assert _lint(tmp_path, {"$schema": uri, "properties": {"a": {"type": "string"}}}) == []


def test_loading_a_schema_skips_warnings_yet_refuses_exactly_what_lint_refuses(tmp_path: Path) -> None:
    # load_schema_file (what schema diff reads files with) does not look for warnings nobody reads.
    uri = META_URIS[DRAFT7]
    noted = {"$schema": uri, "markdownDescription": "x", "properties": {"a": {"type": "string", "examples": "x"}}}
    path = tmp_path / "noted.json"
    path.write_text(json.dumps(noted))
    assert {w.code for w in lint_paths([path]).warnings} == {"schema.keyword_unknown", "schema.annotation_shape"}
    assert load_schema_file(path).document.data["properties"]["a"] == {"type": "string", "examples": ["x"]}

    broken = {**noted, "properties": {"a": {"type": "strin"}, "b": {"$ref": "#/definitions/missing"}}}
    path.write_text(json.dumps(broken))
    expected = lint_paths([path]).problems
    assert len(expected) == 2
    with pytest.raises(ContractInvalid) as raised:
        load_schema_file(path)
    assert raised.value.problems == expected
