"""Mock instances: every value is valid under jsonschema-rs with formats asserted, deterministic by seed.

Validity is always judged here by a validator compiled in the test (jsonschema-rs, draft 2020-12, formats
asserted), never by the generator's own check. Unsatisfiable schemas are contradictions a reader can see,
and the tests name the pointer the error must carry.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from subhive._rs_validator import runtime_validator
from subhive.errors import InputError
from subhive.runtime import InstanceGenerator, Unsatisfiable

FORMATS = [
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "uuid",
    "regex",
    "json-pointer",
    "relative-json-pointer",
]


def valid(schema: Any, value: Any) -> bool:
    return bool(runtime_validator(schema, validate_formats=True).is_valid(value))


def sample(schema: Any, count: int = 12, seed: int = 0) -> list[Any]:
    """``count`` instances, each checked by an independent validator."""
    values = InstanceGenerator(schema, label="test").instances(count, seed=seed)
    validator = runtime_validator(schema, validate_formats=True)
    for value in values:
        assert validator.is_valid(value), (schema, value, [e.message for e in validator.iter_errors(value)])
    return values


def unsatisfiable(schema: Any) -> Unsatisfiable:
    with pytest.raises(Unsatisfiable) as caught:
        InstanceGenerator(schema, label="orders 1.1.0 output").instance(seed=3)
    error = caught.value
    assert error.code == "mock.unsatisfiable"
    assert error.message.startswith("orders 1.1.0 output: ")
    assert error.hint
    return error


# ------------------------------------------------------------------------------------------ hand cases


def test_scalars_types_const_enum() -> None:
    assert all(v is None for v in sample({"type": "null"}))
    assert {type(v) for v in sample({"type": "boolean"}, 20)} == {bool}
    assert all(isinstance(v, int) and not isinstance(v, bool) for v in sample({"type": "integer"}))
    assert all(v == {"a": [1]} for v in sample({"const": {"a": [1]}}))
    assert set(sample({"enum": ["x", 2, None]}, 30)) == {"x", 2, None}
    # the type filters the enum: only the integer may be chosen
    assert set(sample({"type": "integer", "enum": ["x", 2, True, 3.0]}, 20)) == {2, 3}
    kinds = {type(v) for v in sample({"type": ["string", "null"]}, 30)}
    assert kinds == {str, type(None)}


def test_const_values_are_copies() -> None:
    schema = {"const": {"a": [1]}}
    gen = InstanceGenerator(schema)
    value = gen.instance()
    value["a"].append(2)
    assert schema == {"const": {"a": [1]}}
    assert gen.instance() == {"a": [1]}


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "integer", "minimum": -3, "maximum": 4},
        {"type": "integer", "exclusiveMinimum": 2, "exclusiveMaximum": 5},
        {"type": "integer", "multipleOf": 7, "minimum": 100, "maximum": 130},
        {"type": "integer", "multipleOf": 2.5},
        {"type": "number", "minimum": 0.1, "maximum": 0.2},
        {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1e-9},
        {"type": "number", "multipleOf": 0.01, "minimum": 1, "maximum": 2},
        {"type": "number", "multipleOf": 0.1, "exclusiveMaximum": -5},
        {"type": "integer", "minimum": 10**20},
    ],
)
def test_numbers(schema: dict[str, Any]) -> None:
    values = sample(schema, 20)
    if schema["type"] == "integer":
        assert all(isinstance(v, int) for v in values)


def test_number_bounds_are_exact() -> None:
    assert set(sample({"type": "integer", "exclusiveMinimum": 2, "exclusiveMaximum": 5}, 40)) == {3, 4}
    assert set(sample({"type": "integer", "multipleOf": 2.5, "minimum": 0, "maximum": 12}, 40)) <= {0, 5, 10}


def test_strings_lengths_in_code_points() -> None:
    for value in sample({"type": "string", "minLength": 3, "maxLength": 3}, 60):
        assert len(value) == 3
    # a non-BMP character is one code point (two UTF-16 units): lengths must still hold
    assert any(ord(c) > 0xFFFF for v in sample({"type": "string", "minLength": 8}, 200) for c in v)


@pytest.mark.parametrize(
    "pattern",
    [
        r"^[A-Z]{2}-\d{3}$",
        r"^(foo|bar)+baz?$",
        r"^\w+@\w+\.com$",
        r"^[^a-z]{4,}$",
        r"ab+c",
        r"^(a)\1$",
        r"^[\u00e9-\u00ff]{2}$",
        r"^x?$",
    ],
)
def test_pattern(pattern: str) -> None:
    sample({"type": "string", "pattern": pattern}, 20)


def test_without_the_private_regex_parser_patterns_degrade_to_a_clear_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    # re._parser is private and may move in a later Python: mocks must then still work where no pattern
    # needs sampling, match patternProperties by the compiled pattern, and refuse a pattern they cannot
    # build with the documented error, never crash.
    from subhive.runtime import _mockdata

    monkeypatch.setattr(_mockdata, "sre_parse", None)
    monkeypatch.setattr(_mockdata, "_PARSED", {})
    values = sample({"type": "object", "required": ["x_a"], "patternProperties": {"^x_": {"type": "integer"}}}, 5)
    assert all(isinstance(v["x_a"], int) for v in values)
    unsatisfiable({"type": "string", "pattern": "^[A-Z]{2}-[0-9]{3}$"})


def test_pattern_with_length_pads_unanchored_matches() -> None:
    values = sample({"type": "string", "pattern": "ab", "minLength": 10, "maxLength": 12}, 20)
    assert all("ab" in v and 10 <= len(v) <= 12 for v in values)


@pytest.mark.parametrize("fmt", FORMATS)
def test_formats_are_asserted(fmt: str) -> None:
    values = sample({"type": "string", "format": fmt}, 15)
    # the validator asserts formats: a plain word would not pass for most of them
    if fmt not in ("regex", "json-pointer", "relative-json-pointer", "uri-reference", "hostname", "idn-hostname"):
        assert not valid({"format": fmt}, "not a valid value at all")
    assert len({json.dumps(v) for v in values}) > 1


def test_unknown_format_is_not_asserted() -> None:
    assert all(isinstance(v, str) for v in sample({"type": "string", "format": "x-shop-sku"}))


def test_objects_required_optional_additional() -> None:
    schema = {
        "type": "object",
        "properties": {"id": {"type": "integer"}, "a": {"type": "string"}, "b": {"type": "boolean"}},
        "required": ["id"],
        "additionalProperties": False,
    }
    values = sample(schema, 40)
    assert all("id" in v for v in values)
    # optional properties are exercised, and not always
    assert any("a" in v for v in values)
    assert any("a" not in v for v in values)


def test_objects_min_max_properties_and_schemas_for_extras() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "minProperties": 3,
        "maxProperties": 4,
        "additionalProperties": {"type": "string", "format": "uuid"},
    }
    assert all(3 <= len(v) <= 4 for v in sample(schema, 20))


def test_pattern_properties_and_property_names() -> None:
    schema = {
        "type": "object",
        "patternProperties": {"^x-[a-z]+$": {"type": "integer"}},
        "additionalProperties": False,
        "minProperties": 2,
    }
    assert all(len(v) >= 2 and all(k.startswith("x-") for k in v) for v in sample(schema))
    schema = {"type": "object", "propertyNames": {"pattern": "^[a-z]{3}$"}, "minProperties": 2}
    assert all(len(v) >= 2 for v in sample(schema))


def test_dependent_required() -> None:
    schema = {
        "type": "object",
        "properties": {"card": {"type": "string"}, "billing": {"type": "string"}},
        "dependentRequired": {"card": ["billing"]},
    }
    values = sample(schema, 40)
    assert any("card" in v for v in values)
    assert all("billing" in v for v in values if "card" in v)


def test_arrays_items_prefix_bounds_unique() -> None:
    values = sample(
        {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": False, "minItems": 2}
    )
    assert all(len(v) == 2 for v in values)
    values = sample(
        {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 5}, "uniqueItems": True, "minItems": 6}
    )
    assert all(sorted(v) == [0, 1, 2, 3, 4, 5] for v in values)
    assert all(2 <= len(v) <= 3 for v in sample({"type": "array", "minItems": 2, "maxItems": 3}))


def test_contains_min_max() -> None:
    schema = {
        "type": "array",
        "items": {"type": "integer", "minimum": 0, "maximum": 9},
        "contains": {"const": 7},
        "minContains": 2,
        "maxContains": 3,
    }
    assert all(2 <= v.count(7) <= 3 for v in sample(schema, 30))


def test_all_of_merges() -> None:
    values = sample({"allOf": [{"type": "integer", "minimum": 3}, {"maximum": 9, "multipleOf": 3}]}, 30)
    assert set(values) <= {3, 6, 9}
    schema = {
        "allOf": [
            {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
            {"properties": {"b": {"type": "string"}}, "required": ["b"]},
        ]
    }
    assert all({"a", "b"} <= set(v) for v in sample(schema))


def test_any_of_uses_several_branches() -> None:
    values = sample({"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]}, 30)
    assert {type(v) for v in values} == {str, int, type(None)}


def test_one_of_exactly_one() -> None:
    # overlapping branches: integers 0..10 match both, so the generator must land outside the overlap
    schema = {"oneOf": [{"type": "integer", "minimum": 0}, {"type": "integer", "maximum": 10}]}
    values = sample(schema, 40)
    assert all(v < 0 or v > 10 for v in values)


def test_not_and_if_then_else() -> None:
    values = sample({"type": "integer", "minimum": 1, "maximum": 5, "not": {"enum": [1, 2, 3]}}, 20)
    assert set(values) == {4, 5}
    schema = {
        "type": "object",
        "properties": {"kind": {"enum": ["card", "cash"]}},
        "required": ["kind"],
        "if": {"properties": {"kind": {"const": "card"}}},
        "then": {"required": ["number"]},
        "else": {"properties": {"number": False}},
    }
    values = sample(schema, 30)
    assert {v["kind"] for v in values} == {"card", "cash"}
    assert all(("number" in v) == (v["kind"] == "card") for v in values)


def test_recursive_ref_terminates() -> None:
    schema = {
        "$defs": {
            "node": {
                "type": "object",
                "properties": {
                    "value": {"type": "integer"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
                    "parent": {"$ref": "#/$defs/node"},
                },
                "required": ["value", "children"],
            }
        },
        "$ref": "#/$defs/node",
    }

    def depth(node: dict[str, Any]) -> int:
        kids = [*node["children"], *([node["parent"]] if "parent" in node else [])]
        return 1 + max((depth(k) for k in kids), default=0)

    values = sample(schema, 20)
    assert max(depth(v) for v in values) > 1  # it does recurse ...
    assert all(depth(v) < 12 for v in values)  # ... and ends


def test_refs_by_anchor_root_and_embedded_id() -> None:
    sample({"$defs": {"money": {"$anchor": "money", "type": "string", "pattern": r"^\d+\.\d{2}$"}}, "$ref": "#money"})
    sample({"type": "object", "properties": {"next": {"$ref": "#"}, "v": {"type": "integer"}}, "required": ["v"]})
    sample(
        {
            "$id": "urn:shop:order",
            "$defs": {"m": {"$id": "urn:shop:money", "type": "integer", "minimum": 1}},
            "type": "array",
            "items": {"$ref": "urn:shop:money"},
            "minItems": 1,
        }
    )


def test_boolean_schemas_and_examples() -> None:
    sample(True, 20)
    values = sample({"type": "string", "pattern": r"^\p{Lu}{3}$", "examples": ["ÀÉÎ"]}, 5)
    assert values == ["ÀÉÎ"] * 5  # an ECMA-only pattern: the valid example is the way out


# ------------------------------------------------------------------------------------------ unsatisfiable


@pytest.mark.parametrize(
    ("schema", "pointer"),
    [
        (False, ""),
        ({"not": {}}, "/not"),
        ({"type": "integer", "minimum": 5, "maximum": 3}, ""),
        ({"type": "number", "exclusiveMinimum": 1, "maximum": 1}, ""),
        ({"type": "integer", "minimum": 1.2, "maximum": 1.8}, ""),
        ({"type": "integer", "multipleOf": 5, "minimum": 1, "maximum": 4}, ""),
        ({"type": "string", "minLength": 5, "maxLength": 2}, ""),
        ({"type": "array", "minItems": 3, "maxItems": 1}, ""),
        ({"type": "object", "minProperties": 3, "maxProperties": 1}, ""),
        ({"type": "object", "properties": {"x": False}, "required": ["x"]}, "/properties/x"),
        (
            {
                "type": "object",
                "properties": {"a": {"$ref": "#/$defs/bad"}},
                "required": ["a"],
                "$defs": {"bad": {"type": "string", "minLength": 2, "maxLength": 1}},
            },
            "/$defs/bad",
        ),
        ({"type": "integer", "enum": ["a", "b"]}, ""),
        ({"allOf": [{"type": "string"}, {"type": "integer"}]}, "/allOf/1/type"),
        ({"anyOf": [False, {"type": "integer", "minimum": 2, "maximum": 1}]}, "/anyOf"),
        ({"type": "array", "prefixItems": [False], "minItems": 1}, "/prefixItems/0"),
        ({"type": "object", "propertyNames": {"maxLength": 2}, "required": ["long"]}, "/propertyNames"),
    ],
)
def test_unsatisfiable_names_the_pointer(schema: Any, pointer: str) -> None:
    assert unsatisfiable(schema).location.pointer == pointer


def test_optional_impossible_parts_are_left_out() -> None:
    values = sample({"type": "object", "properties": {"gone": False, "a": {"type": "integer"}}}, 20)
    assert all("gone" not in v for v in values)
    assert all(v == [] for v in sample({"type": "array", "items": False}))


def test_retries_run_out_on_a_hidden_contradiction() -> None:
    # not structurally visible: every integer 0..3 is excluded by `not`
    error = unsatisfiable({"type": "integer", "minimum": 0, "maximum": 3, "not": {"enum": [0, 1, 2, 3]}})
    assert error.location.pointer == ""
    assert "attempts" in error.message


def test_unresolvable_ref_and_bad_schema_are_input_errors() -> None:
    with pytest.raises(InputError) as caught:
        InstanceGenerator({"$ref": "other.json#/x"}).instance()
    assert caught.value.code in ("mock.ref_unresolved", "mock.schema_invalid")
    with pytest.raises(InputError) as caught:
        InstanceGenerator({"type": "nope"})
    assert caught.value.code == "mock.schema_invalid"


# ------------------------------------------------------------------------------------------ determinism

DETERMINISM = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "format": "uuid"},
        "n": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "kind": {"oneOf": [{"type": "string"}, {"type": "number"}]},
    },
    "required": ["id"],
}


def test_same_seed_same_value_different_seeds_vary() -> None:
    first, second = InstanceGenerator(DETERMINISM), InstanceGenerator(DETERMINISM)
    for seed in range(10):
        assert first.instance(seed) == second.instance(seed) == first.instance(seed)
    assert len({json.dumps(first.instance(seed), sort_keys=True) for seed in range(10)}) > 5
    batch = first.instances(8, seed=4)
    assert batch == second.instances(8, seed=4)
    assert len({json.dumps(v, sort_keys=True) for v in batch}) > 4


# ------------------------------------------------------------------------------------------ property

NAMES = st.sampled_from(["a", "b", "id", "name", "x_y", "n2"])
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-50, 50),
    st.text(max_size=4),
    st.floats(-100, 100, allow_nan=False).map(lambda x: round(x, 2)),
)


@st.composite
def integer_schemas(draw: st.DrawFn) -> dict[str, Any]:
    low = draw(st.integers(-100, 100))
    step = draw(st.sampled_from([None, 1, 3, 0.5]))
    width = draw(st.integers(0, 30)) + (10 if step else 0)
    schema: dict[str, Any] = {"type": "integer"}
    if draw(st.booleans()):
        schema["minimum" if draw(st.booleans()) else "exclusiveMinimum"] = low
    if draw(st.booleans()):
        schema["maximum"] = low + width + 1
    if step:
        schema["multipleOf"] = step
    return schema


@st.composite
def number_schemas(draw: st.DrawFn) -> dict[str, Any]:
    low = draw(st.floats(-1000, 1000, allow_nan=False))
    schema: dict[str, Any] = {"type": "number", "exclusiveMinimum": low, "maximum": low + draw(st.floats(0.5, 100))}
    if draw(st.booleans()):
        schema["multipleOf"] = draw(st.sampled_from([0.25, 0.1, 0.01]))
        schema["maximum"] = low + 5
    return schema


@st.composite
def string_schemas(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["length", "format", "pattern"]))
    if kind == "format":
        return {"type": "string", "format": draw(st.sampled_from(FORMATS))}
    if kind == "pattern":
        pattern = draw(st.sampled_from([r"^[a-z]+$", r"^\d{3}-\d{2}$", r"(ab|cd)+", r"^[A-F0-9]{8}$", r"x"]))
        return {"type": "string", "pattern": pattern, "maxLength": 30}
    low = draw(st.integers(0, 10))
    return {"type": "string", "minLength": low, "maxLength": low + draw(st.integers(0, 10))}


LEAVES = st.one_of(
    integer_schemas(),
    number_schemas(),
    string_schemas(),
    st.lists(SCALARS, min_size=1, max_size=4, unique_by=json.dumps).map(lambda e: {"enum": e}),
    SCALARS.map(lambda v: {"const": v}),
    st.sampled_from(
        [
            {"type": "boolean"},
            {"type": "null"},
            {},
            True,
            {"not": {"type": "string"}},
            {"if": {"type": "integer"}, "then": {"minimum": 0}, "else": {"type": "string"}},
            {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "uniqueItems": True,
                "minItems": 2,
                "maxItems": 4,
            },
        ]
    ),
)


@st.composite
def object_schemas(draw: st.DrawFn, children: st.SearchStrategy[Any]) -> dict[str, Any]:
    props = draw(st.dictionaries(NAMES, children, max_size=4))
    schema: dict[str, Any] = {
        "type": "object",
        "properties": props,
        "required": draw(st.lists(st.sampled_from(sorted(props)), unique=True)) if props else [],
    }
    extra = draw(st.sampled_from(["absent", "true", "false", "schema", "patterns"]))
    if extra == "schema":
        schema["additionalProperties"] = draw(children)
    elif extra in ("true", "false"):
        schema["additionalProperties"] = extra == "true"
    elif extra == "patterns":
        schema["patternProperties"] = {"^x-[a-z]{2}$": draw(children)}
        schema["additionalProperties"] = False
    if extra != "false" and draw(st.booleans()):
        schema["minProperties"] = len(props) + draw(st.integers(0, 2))
    if len(props) >= 2 and draw(st.booleans()):
        first, second = sorted(props)[:2]
        schema["dependentRequired"] = {first: [second]}
    return schema


@st.composite
def array_schemas(draw: st.DrawFn, children: st.SearchStrategy[Any]) -> dict[str, Any]:
    item = draw(children)
    low = draw(st.integers(0, 3))
    schema: dict[str, Any] = {
        "type": "array",
        "items": item,
        "minItems": low,
        "maxItems": low + draw(st.integers(0, 3)),
    }
    if draw(st.booleans()):
        schema["prefixItems"] = draw(st.lists(children, min_size=1, max_size=2))
    if draw(st.booleans()):
        schema["contains"] = item
        schema["minContains"] = low
    return schema


def _extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    # oneOf branches come from different type families, so exactly one matches any value
    disjoint = st.tuples(
        object_schemas(children),
        array_schemas(children),
        string_schemas(),
        integer_schemas(),
        st.just({"type": "null"}),
    )
    return st.one_of(
        object_schemas(children),
        array_schemas(children),
        st.lists(children, min_size=1, max_size=3).map(lambda b: {"anyOf": b}),
        st.tuples(disjoint, st.sets(st.integers(0, 4), min_size=1)).map(
            lambda d: {"oneOf": [d[0][i] for i in sorted(d[1])]}
        ),
        st.tuples(children, children).map(
            lambda c: {
                "allOf": [
                    {"type": "object", "properties": {"a": c[0]}, "required": ["a"]},
                    {"properties": {"b": c[1]}, "minProperties": 1},
                ]
            }
        ),
    )


@st.composite
def document_schemas(draw: st.DrawFn) -> Any:
    body = draw(st.recursive(LEAVES, _extend, max_leaves=8))
    if not draw(st.booleans()):
        return body
    # definitions reached by $ref, one of them recursive
    tree = {
        "type": "object",
        "properties": {"v": {"$ref": "#/$defs/body"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/tree"}}},
        "required": ["kids"],
    }
    return {
        "$defs": {"body": body, "tree": tree},
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/body"}, "t": {"$ref": "#/$defs/tree"}},
        "required": draw(st.lists(st.sampled_from(["a", "t"]), unique=True)),
    }


def _satisfiable_by_construction(schema: Any) -> bool:
    # Every leaf admits a value, oneOf branches are split by type, allOf members constrain different
    # properties: only `contains` beside prefixItems that exclude its item can make a schema unsatisfiable.
    return "contains" not in json.dumps(schema)


def test_generated_schemas_give_valid_instances() -> None:
    stats = {"schemas": 0, "unsatisfiable": 0}

    @settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(document_schemas(), st.integers(0, 2**20))
    def check(schema: Any, seed: int) -> None:
        stats["schemas"] += 1
        validator = runtime_validator(schema, validate_formats=True)
        try:
            values = InstanceGenerator(schema).instances(3, seed=seed)
        except Unsatisfiable:
            assert not _satisfiable_by_construction(schema), schema
            stats["unsatisfiable"] += 1
            return
        for value in values:
            assert validator.is_valid(value), (schema, value)

    check()
    assert stats["unsatisfiable"] < 0.05 * stats["schemas"], stats


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["integer", "string", "array", "object"]), st.integers(0, 6), st.integers(0, 6), st.booleans())
def test_bounds_decide_satisfiability(kind: str, low: int, high: int, exclusive: bool) -> None:
    words = {
        "integer": ("minimum", "maximum"),
        "string": ("minLength", "maxLength"),
        "array": ("minItems", "maxItems"),
        "object": ("minProperties", "maxProperties"),
    }[kind]
    schema: dict[str, Any] = {"type": kind, words[0]: low, words[1]: high}
    if kind == "integer" and exclusive:
        schema = {"type": kind, "exclusiveMinimum": low, "exclusiveMaximum": high}
    possible = high - low >= (2 if kind == "integer" and exclusive else 0)
    if possible:
        sample(schema, 3)
    else:
        assert unsatisfiable(schema).location.pointer == ""
