"""The flattened draft 2020-12 meta-schema (decision 0128) must accept exactly what the published one accepts.

``check_schema`` trusts its "valid" without asking jsonschema-rs's own meta-schema check: a document it wrongly
accepted would be compared as if it were a schema. Documents are drawn from a grammar of every 2020-12 keyword
with well-typed and ill-typed values, nested at every schema position, with unknown keywords, embedded
``$schema``/``$id`` and non-schema values where a subschema belongs.
"""

from __future__ import annotations

from typing import Any

import jsonschema_rs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from subhive.compat._js_docs import check_schema
from subhive.compat._js_meta import flat_metaschema, surely_valid
from subhive.errors import InputError

_ROOT = "https://json-schema.org/draft/2020-12/schema"
_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([1.5, -0.0, 2**70]), st.sampled_from(["", "a", "#"])
)
_JSON = st.recursive(
    _SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abc"), inner, max_size=3)
)
# Values that are right for some keywords and wrong for others.
_VALUES = st.one_of(
    _JSON,
    st.sampled_from(
        [
            "string",
            "object",
            "nope",
            ["string", "null"],
            ["string", "string"],
            [],
            ["a", "a"],
            ["a", 1],
            "^[a-z]+$",
            "#/$defs/x",
            "#anchor",
            "http://x.example/s",
            "bad anchor",
            "_ok-anchor.1",
            0,
            -1,
            3.0,
            2.5,
            {"a": ["b"]},
            {"a": "b"},
            {"https://x.example/v": True},
            {"https://x.example/v": 1},
        ]
    ),
)
_SCHEMA_ONE = (
    *("additionalProperties", "unevaluatedProperties", "propertyNames", "items", "unevaluatedItems"),
    *("contains", "not", "if", "then", "else", "contentSchema"),
)
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")


def _keywords() -> list[str]:
    flat = flat_metaschema()
    return sorted(set(flat["properties"]) | {"x-unknown", "$schema"})


def _documents() -> st.SearchStrategy[Any]:
    def extend(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        schema_or_not = inner | _VALUES
        member = st.one_of(
            st.tuples(st.sampled_from(_keywords()), _VALUES),
            st.tuples(st.sampled_from(_SCHEMA_ONE), schema_or_not),
            st.tuples(st.sampled_from(_SCHEMA_MAPS), st.dictionaries(st.sampled_from("ab"), schema_or_not, max_size=2)),
            st.tuples(st.sampled_from(_SCHEMA_LISTS), st.lists(schema_or_not, max_size=2)),
            st.tuples(st.just("$schema"), st.sampled_from([_ROOT, "http://json-schema.org/draft-07/schema#"])),
        )
        return st.lists(member, max_size=4).map(dict)

    return st.recursive(st.booleans() | st.just({}), extend, max_leaves=12)


def test_the_flattening_is_a_valid_schema_and_keeps_every_keyword() -> None:
    flat = flat_metaschema()
    assert jsonschema_rs.meta.is_valid(flat)
    assert {"$ref", "properties", "prefixItems", "unevaluatedItems", "minLength", "contentSchema"} <= set(
        flat["properties"]
    )
    assert "definitions" in flat["properties"]
    assert "$recursiveRef" in flat["properties"]
    assert "$dynamicRef" not in str(flat["properties"]["items"])


@pytest.mark.parametrize(
    "document",
    [
        {"type": "nope"},
        {"properties": {"a": 5}},
        {"$defs": {"x": {"allOf": []}}},
        {"items": [{}]},
        {"dependencies": {"a": 1}},
        {"minLength": -1},
        {"required": ["a", "a"]},
        {"$anchor": "bad anchor"},
        {"$schema": _ROOT, "not": {"if": {"maxItems": 1.5}}},
    ],
)
def test_an_invalid_schema_gets_the_published_check_s_error(document: dict[str, Any]) -> None:
    assert not surely_valid(document)
    with pytest.raises(jsonschema_rs.ValidationError) as published:
        jsonschema_rs.meta.validate(document)
    with pytest.raises(InputError) as caught:
        check_schema(document, "the schema")
    assert caught.value.code == "schema.invalid"
    assert published.value.message in str(caught.value)


def test_only_draft_2020_12_documents_are_judged() -> None:
    # Under draft-07's meta-schema a list of items is valid; the flattened 2020-12 one must not decide it.
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", "items": [{}]}
    assert jsonschema_rs.meta.is_valid(draft7)
    assert not surely_valid(draft7)
    assert not surely_valid(True)
    assert not surely_valid({"$schema": ["x"]})
    assert surely_valid({"$schema": _ROOT + "#", "items": {}})


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=_documents())
def test_the_flattened_meta_schema_accepts_what_the_published_one_accepts(document: Any) -> None:
    judged = isinstance(document, dict) and document.get("$schema", _ROOT) in (_ROOT, _ROOT + "#")
    assert surely_valid(document) == (judged and jsonschema_rs.meta.is_valid(document))
