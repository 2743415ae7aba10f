"""Every JSON Schema dialect, with its own meaning (issue #16, item 1).

Draft-04, -06, -07 and 2019-09 documents are read as the draft 2020-12 schema meaning the same
(subhive/_dialects.py): lint checks them against their own meta-schema, the diff engine compares them by
meaning across dialects, and bundles (what generated code and the bus validate with) carry the translation.
The property test holds the translation to the reference: python-jsonschema's validator of the original
dialect, on the original schema.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema.validators import validator_for

from subhive._dialects import (
    DRAFT4,
    DRAFT6,
    DRAFT7,
    DRAFT2019,
    DRAFT2020,
    META_URIS,
    dialect_of,
    translate,
    walk_unknown,
)
from subhive._rs_validator import runtime_validator
from subhive.codegen.bundle import bundle_contract
from subhive.compat.contract_check import check_contract
from subhive.compat.jsonschema import diff_schemas
from subhive.contract import lint_paths, load_contract
from subhive.runtime import ContractBinding, PayloadInvalid
from tests.kit import cli

D4, D6, D7, D2019 = (META_URIS[d] for d in (DRAFT4, DRAFT6, DRAFT7, DRAFT2019))


def _translated(schema: dict[str, Any]) -> Any:
    return translate(schema).schema


@pytest.mark.parametrize(
    ("original", "expected"),
    [
        # draft-04: boolean exclusive bounds, "id"
        (
            {"$schema": D4, "maximum": 5, "exclusiveMaximum": True, "minimum": 1, "exclusiveMinimum": False},
            {"exclusiveMaximum": 5, "minimum": 1},
        ),
        ({"$schema": D4, "id": "urn:x", "exclusiveMinimum": True}, {"$id": "urn:x"}),
        ({"$schema": D4, "id": "#top"}, {"$anchor": "top"}),
        ({"$schema": D7, "$id": "http://e.com/a.json#"}, {"$id": "http://e.com/a.json"}),
        # array-form items
        (
            {"$schema": D7, "items": [{"type": "string"}], "additionalItems": {"type": "integer"}},
            {"prefixItems": [{"type": "string"}], "items": {"type": "integer"}},
        ),
        ({"$schema": D7, "items": {"type": "string"}, "additionalItems": False}, {"items": {"type": "string"}}),
        ({"$schema": D2019, "items": [True], "additionalItems": False}, {"prefixItems": [True], "items": False}),
        # dependencies, split by kind
        (
            {"$schema": D6, "dependencies": {"a": ["b"], "c": {"required": ["d"]}}},
            {"dependentRequired": {"a": ["b"]}, "dependentSchemas": {"c": {"required": ["d"]}}},
        ),
        # siblings of $ref are ignored up to draft-07, applied from 2019-09 on
        (
            {"$schema": D7, "$ref": "#/definitions/a", "type": "string", "title": "t", "definitions": {"a": {}}},
            {"$ref": "#/definitions/a", "title": "t", "definitions": {"a": {}}},
        ),
        ({"$schema": D2019, "$ref": "#/$defs/a", "type": "string"}, {"$ref": "#/$defs/a", "type": "string"}),
        # a 2020-12 keyword in a draft-07 document means nothing there
        ({"$schema": D7, "unevaluatedProperties": False, "$defs": {}}, {"$defs": {}}),
        # $recursiveRef: dynamic only under "$recursiveAnchor": true
        (
            {"$schema": D2019, "$recursiveAnchor": True, "properties": {"a": {"$recursiveRef": "#"}}},
            {"$dynamicAnchor": "_recursiveAnchor", "properties": {"a": {"$dynamicRef": "#_recursiveAnchor"}}},
        ),
        ({"$schema": D2019, "properties": {"a": {"$recursiveRef": "#"}}}, {"properties": {"a": {"$dynamicRef": "#"}}}),
        # a pointer $ref follows the keyword it points into
        (
            {"$schema": D7, "items": [{"type": "integer"}], "properties": {"a": {"$ref": "#/items/0"}}},
            {"prefixItems": [{"type": "integer"}], "properties": {"a": {"$ref": "#/prefixItems/0"}}},
        ),
    ],
)
def test_older_dialects_translate_to_the_2020_12_schema_meaning_the_same(
    original: dict[str, Any], expected: dict[str, Any]
) -> None:
    assert _translated(original) == {"$schema": META_URIS[DRAFT2020], **expected}


def test_a_2020_12_document_is_not_copied() -> None:
    schema = {"type": "object", "properties": {"a": {"items": {"type": "string"}}}}
    assert translate(schema).schema is schema
    assert translate(schema).identity


def test_pointers_map_both_ways() -> None:
    t = translate({"$schema": D7, "properties": {"a": {"items": [{}, {}], "additionalItems": {}}}})
    assert t.forward("/properties/a/items/1") == "/properties/a/prefixItems/1"
    assert t.forward("/properties/a/additionalItems") == "/properties/a/items"
    assert t.back("/properties/a/items") == "/properties/a/additionalItems"
    assert t.back("/properties/a/prefixItems/0") == "/properties/a/items/0"


def test_dialect_uris_are_read_with_or_without_fragment_and_https() -> None:
    assert dialect_of("https://json-schema.org/draft-07/schema") == DRAFT7
    assert dialect_of("http://json-schema.org/draft-04/schema") == DRAFT4
    assert dialect_of("https://json-schema.org/draft/2020-12/schema#") == DRAFT2020
    assert dialect_of("http://json-schema.org/draft-03/schema#") is None


# -- the translation means what the original means: the reference validator of each dialect says so ----------

_NAMES = st.sampled_from(["a", "b", "c"])
_TYPES = st.sampled_from(["string", "integer", "number", "array", "object", "null", "boolean"])
_NUMBER = st.integers(-3, 3)


def _schemas(dialect: str) -> st.SearchStrategy[Any]:
    leaf = st.fixed_dictionaries({}, optional={"type": _TYPES, "minimum": _NUMBER, "maxLength": st.integers(0, 2)})

    def extend(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        bound = st.booleans() if dialect == DRAFT4 else _NUMBER
        optional: dict[str, st.SearchStrategy[Any]] = {
            "type": _TYPES,
            "maximum": _NUMBER,
            "minimum": _NUMBER,
            "exclusiveMaximum": bound,
            "exclusiveMinimum": bound,
            "items": inner | st.lists(inner, min_size=1, max_size=2),
            "additionalItems": inner | st.booleans(),
            "properties": st.dictionaries(_NAMES, inner, max_size=2),
            "required": st.lists(_NAMES, min_size=1, max_size=2, unique=True),
            "dependencies": st.dictionaries(
                _NAMES, st.lists(_NAMES, min_size=1, max_size=2, unique=True) | inner, max_size=2
            ),
            "anyOf": st.lists(inner, min_size=1, max_size=2),
            "$ref": st.just("#/definitions/d"),
        }
        if dialect != DRAFT4:
            optional |= {
                "const": _NUMBER,
                "contains": inner,
                "propertyNames": st.fixed_dictionaries({"maxLength": st.integers(0, 1)}),
            }
        if dialect not in (DRAFT4, DRAFT6):
            optional |= {"if": inner, "then": inner, "else": inner}
        return st.fixed_dictionaries({}, optional=optional)

    body = st.recursive(leaf, extend, max_leaves=6)
    definition = st.fixed_dictionaries({"type": _TYPES})
    return st.builds(
        lambda b, d: {**b, "$schema": META_URIS[dialect], "definitions": {"d": d}},
        body.filter(lambda b: isinstance(b, dict)),
        definition,
    )


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-4, 4) | st.sampled_from([0.5, 2.0, -1.5]) | st.text("ab", max_size=2),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_NAMES, inner, max_size=3),
    max_leaves=6,
)


@pytest.mark.parametrize("dialect", [DRAFT4, DRAFT6, DRAFT7, DRAFT2019])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_translation_accepts_exactly_what_the_original_accepts(dialect: str, data: st.DataObject) -> None:
    schema = data.draw(_schemas(dialect), label="schema")
    reference = validator_for(schema)(schema)
    assert dialect_of(schema["$schema"]) == dialect
    translated = translate(schema).schema
    runtime = runtime_validator(translated)
    for instance in data.draw(st.lists(_JSON, min_size=1, max_size=8), label="instances"):
        if dialect == DRAFT4 and _integral_float_in(instance):
            continue  # draft-04 alone calls 2.0 no integer: listed in tests/data/json-schema-test-suite/known.json
        assert runtime.is_valid(instance) == reference.is_valid(instance), (schema, translated, instance)


def _integral_float_in(value: Any) -> bool:
    """A float such as 2.0 anywhere in ``value`` (members and items too)."""
    if isinstance(value, float):
        return value.is_integer()
    if isinstance(value, dict):
        return any(_integral_float_in(v) for v in value.values())
    return isinstance(value, list) and any(_integral_float_in(v) for v in value)


# -- lint, diff and bundles read every dialect ---------------------------------------------------------------

MANIFEST = """contract: orders
version: 1.0.0
provider: backend
events:
  order_placed:
    payload: {payload}
"""


def _contract(tmp_path: Path, payload: str, files: dict[str, Any], version: str = "1.0.0") -> Path:
    root = tmp_path / "orders" / version
    root.mkdir(parents=True)
    (root / "contract.yaml").write_text(MANIFEST.format(payload=payload).replace("1.0.0", version))
    for name, value in files.items():
        (root / name).write_text(json.dumps(value, indent=2))
    return root


DRAFT7_ORDER = {
    "$schema": D7,
    "$id": "http://shop.example/order.json#",
    "type": "object",
    "required": ["lines"],
    "properties": {
        "lines": {"type": "array", "items": [{"$ref": "#/definitions/sku"}], "additionalItems": False},
        "total": {"type": "number", "minimum": 0},
    },
    "dependencies": {"total": ["lines"]},
    "definitions": {"sku": {"type": "string", "pattern": "^[A-Z]+$"}},
}


def test_a_draft_07_contract_lints_clean_and_its_bundle_validates_as_draft_07(tmp_path: Path) -> None:
    root = _contract(tmp_path, "order.json", {"order.json": DRAFT7_ORDER})
    result = lint_paths([root])
    assert result.ok, result.problems
    assert result.warnings == ()
    bundle = bundle_contract(load_contract(root))
    # What the bus checks payloads with: generated stubs ship the bundle's schemas as contract.json.
    binding = ContractBinding.from_dict(
        {"name": "orders", "version": "1.0.0", "provider": "backend", "operations": {},
         "events": {"order_placed": "events.order_placed.payload"}, "schemas": bundle.schemas}
    )  # fmt: skip
    runtime = binding.validator("events.order_placed.payload")
    reference = validator_for(DRAFT7_ORDER)(DRAFT7_ORDER)
    instances: tuple[dict[str, Any], ...] = (
        {"lines": ["AB"]},
        {"lines": ["AB", "CD"]},  # additionalItems: false
        {"lines": ["ab"]},
        {"lines": []},
        {"total": 3},  # dependencies: total needs lines (and lines is required anyway)
        {"lines": [], "total": -1},
    )
    for instance in instances:
        assert runtime.is_valid(instance) == reference.is_valid(instance), instance
    with pytest.raises(PayloadInvalid) as refused:
        binding.check("events.order_placed.payload", {"lines": ["AB", "CD"]}, moving="incoming")
    assert refused.value.location.pointer == "/lines/1"  # the item the draft-07 additionalItems: false refuses


def test_a_draft_04_schema_is_checked_against_the_draft_04_meta_schema(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    # Valid in draft-04 (boolean exclusiveMaximum); "required": [] is not (draft-04 wants at least one name).
    path.write_text(json.dumps({"$schema": D4, "maximum": 3, "exclusiveMaximum": True, "required": []}, indent=2))
    result = lint_paths([path])
    assert [(p.code, p.location.pointer, p.location.line) for p in result.problems] == [("schema.meta", "/required", 5)]
    assert "draft-04" in (result.problems[0].hint or "")


def test_ignored_keywords_are_warned_where_they_are_written(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    schema = {"$schema": D7, "properties": {"a": {"$ref": "#/definitions/x", "maxLength": 2}}, "definitions": {"x": {}}}
    path.write_text(json.dumps(schema, indent=2))
    result = lint_paths([path])
    assert result.ok
    assert [(w.code, w.location.pointer, w.location.line) for w in result.warnings] == [
        ("schema.keyword_ignored", "/properties/a/maxLength", 6)
    ]
    assert "siblings of $ref" in result.warnings[0].message


def test_a_schema_without_schema_is_2020_12_and_lint_says_so_where_it_matters(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text(json.dumps({"id": "urn:a", "type": "string"}))
    result = lint_paths([path])
    assert result.ok
    notes = {w.code: w for w in result.warnings if w.location.pointer == "/id"}
    assert set(notes) == {"schema.dialect_default", "schema.keyword_unknown"}  # "id" is not a 2020-12 keyword
    assert META_URIS[DRAFT4] in (notes["schema.dialect_default"].hint or "")
    plain = tmp_path / "b.json"
    plain.write_text('{"type": "string"}')
    assert lint_paths([plain]).warnings == ()


def test_the_unversioned_meta_schema_address_is_read_as_the_default_with_a_note(tmp_path: Path) -> None:
    # "http://json-schema.org/schema#" has served whichever draft was current: it names none (decision 0133).
    unversioned = "http://json-schema.org/schema#"
    assert translate({"$schema": unversioned, "maxLength": 3}).dialect == DRAFT2020
    assert translate({"$schema": "https://json-schema.org/schema", "maxLength": 3}, DRAFT7).dialect == DRAFT7
    path = tmp_path / "a.json"
    path.write_text(json.dumps({"$schema": unversioned, "id": "urn:a", "type": "string", "maxLength": 3}, indent=2))
    result = lint_paths([path])
    assert result.ok
    notes = [w for w in result.warnings if w.code == "schema.dialect_default"]
    assert [(w.location.pointer, w.location.line) for w in notes] == [("/$schema", 2)]
    assert "names no draft" in notes[0].message
    assert "'id' is written as in draft-04" in notes[0].message
    assert META_URIS[DRAFT4] in (notes[0].hint or "")
    # Read as 2020-12, it compares by meaning with the same schema written in 2020-12 ...
    same = diff_schemas({"$schema": unversioned, "maxLength": 3}, {"$schema": META_URIS[DRAFT2020], "maxLength": 3})
    assert same.backward
    assert same.forward
    assert same.changes == ()
    # ... and its 2020-12 keywords keep their 2020-12 meaning.
    validator = runtime_validator(translate({"$schema": unversioned, "prefixItems": [{"type": "string"}]}).schema)
    assert not validator.is_valid([1])
    assert validator.is_valid(["a", 1])


def test_an_unversioned_schema_inside_a_document_is_read_in_the_dialect_around_it(tmp_path: Path) -> None:
    pair = {"$schema": "http://json-schema.org/schema#", "items": [{"type": "string"}], "additionalItems": False}
    document = {"$schema": META_URIS[DRAFT7], "$defs": {"pair": pair}, "properties": {"p": {"$ref": "#/$defs/pair"}}}
    path = tmp_path / "a.json"
    path.write_text(json.dumps(document, indent=2))
    result = lint_paths([path])
    assert result.ok, result.problems
    notes = [(w.location.pointer, w.message) for w in result.warnings if w.code == "schema.dialect_default"]
    assert len(notes) == 1
    assert notes[0][0] == "/$defs/pair/$schema"
    assert "read as draft-07, as the schema around it" in notes[0][1]
    validator = runtime_validator(translate(document).schema)  # draft-07's tuple items, as around it
    assert validator.is_valid({"p": ["a"]})
    assert not validator.is_valid({"p": ["a", "b"]})


@pytest.mark.parametrize(
    ("old", "new", "backward", "forward"),
    [
        # the same meaning in two dialects: no change in either direction
        (
            {"$schema": D7, "items": [{"type": "string"}], "additionalItems": False},
            {"prefixItems": [{"type": "string"}], "items": False},
            True,
            True,
        ),
        ({"$schema": D4, "maximum": 5, "exclusiveMaximum": True}, {"exclusiveMaximum": 5}, True, True),
        (
            {"$schema": D7, "dependencies": {"a": ["b"]}},
            {"$schema": META_URIS[DRAFT2020], "dependentRequired": {"a": ["b"]}},
            True,
            True,
        ),
        # draft-07 ignores the sibling of $ref; 2020-12 applies it: a narrowing
        (
            {"$schema": D7, "$ref": "#/definitions/s", "maxLength": 1, "definitions": {"s": {"type": "string"}}},
            {"$ref": "#/$defs/s", "maxLength": 1, "$defs": {"s": {"type": "string"}}},
            False,
            True,
        ),
        # the draft-07 tuple allowed more items; 2020-12 forbids them
        (
            {"$schema": D7, "items": [{"type": "string"}]},
            {"prefixItems": [{"type": "string"}], "items": False},
            False,
            True,
        ),
    ],
)
def test_schemas_compare_by_meaning_across_dialects(
    old: dict[str, Any], new: dict[str, Any], backward: bool, forward: bool
) -> None:
    report = diff_schemas(old, new)
    assert (report.backward, report.forward) == (backward, forward), report.changes


def test_changes_are_reported_where_the_original_document_has_them() -> None:
    old = {"$schema": D7, "properties": {"a": {"items": [{"type": "string"}, {"type": "integer"}]}}}
    new = {"$schema": D7, "properties": {"a": {"items": [{"type": "string"}, {"type": "string"}]}}}
    paths = {c.path for c in diff_schemas(old, new).changes}
    assert paths == {"/properties/a/items/1/type"}


def test_a_manifest_pointer_and_a_cross_file_ref_into_a_moved_keyword_resolve(tmp_path: Path) -> None:
    lib = {"$schema": D7, "definitions": {"pair": {"items": [{"type": "integer"}, {"type": "string"}]}}}
    event = {"type": "object", "properties": {"second": {"$ref": "lib.json#/definitions/pair/items/1"}}}
    root = _contract(tmp_path, "event.json", {"lib.json": lib, "event.json": event})
    result = lint_paths([root])
    assert result.ok, result.problems
    bundle = bundle_contract(load_contract(root))
    runtime = runtime_validator(bundle.schemas["events.order_placed.payload"])
    assert runtime.is_valid({"second": "x"})
    assert not runtime.is_valid({"second": 1})
    (root / "contract.yaml").write_text(MANIFEST.format(payload="lib.json#/definitions/pair/items/0"))
    loaded = load_contract(root)
    assert loaded.events["order_placed"].payload.schema == {"type": "integer"}


def test_a_contract_moved_from_draft_07_to_2020_12_checks_by_meaning(tmp_path: Path) -> None:
    old = _contract(
        tmp_path,
        "order.json#/definitions/order",
        {"order.json": {"$schema": D7, "definitions": {"order": DRAFT7_ORDER}}},
    )
    same: dict[str, Any] = {
        "$schema": META_URIS[DRAFT2020],
        "type": "object",
        "required": ["lines"],
        "properties": {
            "lines": {"type": "array", "prefixItems": [{"$ref": "#/$defs/sku"}], "items": False},
            "total": {"type": "number", "minimum": 0},
        },
        "dependentRequired": {"total": ["lines"]},
        "$defs": {"sku": {"type": "string", "pattern": "^[A-Z]+$"}},
    }
    new = _contract(tmp_path, "order.json", {"order.json": same}, version="1.0.1")
    check = check_contract(load_contract(new), load_contract(old))
    assert check.compatible, [c.code for p in check.parts for c in p.breaking]
    # More lines than the draft-07 tuple allowed: an old consumer would reject such an event.
    lines = {**same["properties"]["lines"], "items": {"type": "string"}}
    wider = {**same, "properties": {**same["properties"], "lines": lines}}
    check = check_contract(
        load_contract(_contract(tmp_path, "order.json", {"order.json": wider}, "2.0.0")), load_contract(old)
    )
    assert [c.path for p in check.parts for c in p.breaking] == ["/properties/lines/items"]


# -- harmless deviations: annotations of the wrong shape are warnings, not refusals ----------------------------


@pytest.mark.parametrize("dialect", [DRAFT2019, DRAFT2020])
def test_misshapen_annotations_are_warnings_and_the_schema_still_validates(tmp_path: Path, dialect: str) -> None:
    schema = {
        "$schema": META_URIS[dialect],
        "type": "object",
        "properties": {
            "sku": {"type": "string", "examples": "AB-1"},
            "old": {"type": "integer", "deprecated": "use sku instead"},
        },
    }
    root = _contract(tmp_path, "order.json", {"order.json": schema})
    result = lint_paths([root])
    assert result.ok, result.problems
    assert sorted((w.code, w.location.pointer, w.location.line) for w in result.warnings) == [
        ("schema.annotation_shape", "/properties/old/deprecated", 11),
        ("schema.annotation_shape", "/properties/sku/examples", 7),
    ]
    runtime = runtime_validator(bundle_contract(load_contract(root)).schemas["events.order_placed.payload"])
    assert runtime.is_valid({"sku": "x", "old": 1})
    assert not runtime.is_valid({"sku": 1})
    # The diff engine reads them too; mending an annotation changes nothing that is accepted.
    report = diff_schemas(schema, {**schema, "properties": {"sku": {"type": "string"}, "old": {"type": "integer"}}})
    assert (report.backward, report.forward) == (True, True)


def test_a_property_named_examples_is_not_mended() -> None:
    schema = {"type": "object", "properties": {"examples": {"type": "string"}, "deprecated": {"type": "integer"}}}
    translation = translate(schema)
    assert translation.schema == schema
    assert translation.identity


# -- verdicts across dialects stay sound -----------------------------------------------------------------------


@pytest.mark.parametrize(("old_dialect", "new_dialect"), [(DRAFT4, DRAFT7), (DRAFT7, DRAFT2020), (DRAFT2019, DRAFT6)])
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_a_compatible_verdict_across_dialects_holds_for_every_instance(
    old_dialect: str, new_dialect: str, data: st.DataObject
) -> None:
    old = data.draw(_schemas(old_dialect), label="old")
    if data.draw(st.booleans(), label="derived"):
        # OLD's meaning written in 2020-12, then one keyword dropped somewhere: often a compatible change.
        new = _drop_one(translate(copy.deepcopy(old)).schema, data)
    else:
        new = data.draw(_schemas(new_dialect) if new_dialect != DRAFT2020 else _schemas(DRAFT2019), label="new")
        if new_dialect == DRAFT2020:
            new = translate(new).schema  # a 2020-12 schema, as written in 2020-12
    report = diff_schemas(old, new)
    under_old, under_new = validator_for(old)(old), validator_for(new)(new)
    for instance in data.draw(st.lists(_JSON, min_size=1, max_size=10), label="instances"):
        if DRAFT4 in (old_dialect, new_dialect) and isinstance(instance, float) and instance.is_integer():
            continue  # draft-04's own idea of an integer (see known.json)
        valid_old, valid_new = under_old.is_valid(instance), under_new.is_valid(instance)
        if report.backward:
            assert not valid_old or valid_new, (old, new, instance, report.changes)
        if report.forward:
            assert not valid_new or valid_old, (old, new, instance, report.changes)


def _drop_one(schema: dict[str, Any], data: st.DataObject) -> dict[str, Any]:
    """``schema`` with one keyword of one of its subschema objects removed (``$schema`` and ``definitions`` kept)."""
    objects: list[dict[str, Any]] = []
    stack: list[Any] = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            objects.append(node)
            stack.extend(v for k, v in node.items() if k != "definitions")
            stack.extend(node.get("definitions", {}).values())
        elif isinstance(node, list):
            stack.extend(node)
    choices = [(o, k) for o in objects for k in o if k not in ("$schema", "definitions", "$ref")]
    if choices:
        target, key = data.draw(st.sampled_from(choices), label="dropped")
        del target[key]
    return schema


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=_schemas(DRAFT7))
def test_a_schema_and_its_translation_compare_equal(schema: dict[str, Any]) -> None:
    report = diff_schemas(schema, translate(schema).schema)
    assert (report.backward, report.forward) == (True, True), report.changes


def test_schema_diff_command_compares_a_draft_07_file_with_a_2020_12_one(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps({"$schema": D7, "items": [{"type": "string"}], "additionalItems": False}))
    new.write_text(json.dumps({"prefixItems": [{"type": "string"}], "items": False}))
    code, out, _ = cli(capsys, "schema", "diff", str(old), str(new), "--require", "full", "--format", "json")
    assert code == 0
    report = json.loads(out)
    assert (report["backward"], report["forward"]) == (True, True)
    assert [(c["code"], c["path"]) for c in report["changes"]] == [("identifier.changed", "/$schema")]  # neutral
    new.write_text(json.dumps({"prefixItems": [{"type": "string"}]}))  # more items allowed now
    code, out, err = cli(capsys, "schema", "diff", str(old), str(new), "--require", "full")
    assert code == 1
    assert "/items" in out
    assert "check.incompatible" in err


def test_the_lint_command_prints_dialect_warnings_as_warnings(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "a.json"
    path.write_text(json.dumps({"$schema": D7, "$ref": "#/definitions/x", "type": "string", "definitions": {"x": {}}}))
    code, _, err = cli(capsys, "contract", "lint", str(path))
    assert code == 0
    assert "warning:" in err
    assert "schema.keyword_ignored" in err
    assert "error:" not in err


_ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 2) | st.text("a#/$", max_size=3),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(
        st.sampled_from(
            ["items", "additionalItems", "dependencies", "$ref", "id", "$id", "exclusiveMaximum", "maximum",
             "properties", "definitions", "$recursiveRef", "$recursiveAnchor", "examples", "deprecated", "a"]
        ),
        inner,
        max_size=4,
    ),
    max_leaves=12,
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(body=_ANY_JSON, dialect=st.sampled_from([DRAFT4, DRAFT6, DRAFT7, DRAFT2019, DRAFT2020]))
def test_any_document_translates_without_error_and_pointers_map_back(body: Any, dialect: str) -> None:
    document = {**body, "$schema": META_URIS[dialect]} if isinstance(body, dict) else body
    translation = translate(document)
    for original, moved in translation.to_new.items():
        assert translation.back(moved) == original
        assert translation.forward(original) == moved
    list(walk_unknown(document))  # never raises on any JSON


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=_ANY_JSON, dialect=st.sampled_from([DRAFT4, DRAFT6, DRAFT7, DRAFT2019, DRAFT2020]))
def test_lint_gives_located_problems_for_any_document_of_any_dialect(tmp_path: Path, body: Any, dialect: str) -> None:
    document = {**body, "$schema": META_URIS[dialect]} if isinstance(body, dict) else body
    path = tmp_path / "any.json"
    path.write_text(json.dumps(document))
    result = lint_paths([path])
    for found in (*result.problems, *result.warnings):
        assert found.code.startswith(("schema.", "input.", "manifest."))
        assert found.location.file == str(path)
        assert found.hint


# -- what a draft-07 meta-schema never looks at: "$defs" (unknown there) and plain containers ------------------


def test_a_reference_into_a_plain_container_reads_its_target_in_the_documents_dialect(tmp_path: Path) -> None:
    schema: dict[str, Any] = {
        "$schema": D7,
        "$defs": {"lib": {"generic": {"pair": {"items": [{"type": "string"}], "additionalItems": False}}}},
        "properties": {"a": {"$ref": "#/$defs/lib/generic/pair"}},
    }
    translated = translate(schema).schema
    assert translated["$defs"]["lib"]["generic"]["pair"] == {"prefixItems": [{"type": "string"}], "items": False}
    assert schema["$defs"]["lib"]["generic"]["pair"]["items"] == [{"type": "string"}]  # the original is untouched
    root = _contract(tmp_path, "s.json", {"s.json": schema})
    runtime = runtime_validator(bundle_contract(load_contract(root)).schemas["events.order_placed.payload"])
    assert runtime.is_valid({"a": ["x"]})
    assert not runtime.is_valid({"a": ["x", "y"]})  # draft-07's additionalItems: false


_SIBLING_SCHEMAS = st.fixed_dictionaries(
    {}, optional={"type": _TYPES, "minimum": st.integers(-2, 2), "maxLength": st.integers(0, 2)}
)


@pytest.mark.parametrize("dialect", [DRAFT4, DRAFT6, DRAFT7])
@pytest.mark.parametrize("where", ["/properties/inner", "/items", "/not", "/additionalProperties"])
@settings(max_examples=25, deadline=None)
@given(sibling=_SIBLING_SCHEMAS, instances=st.lists(_JSON, min_size=1, max_size=6))
def test_a_reference_into_an_ignored_sibling_of_ref_reads_it_as_the_original_does(
    dialect: str, where: str, sibling: dict[str, Any], instances: list[Any]
) -> None:
    """Draft-04..07 ignore every sibling of "$ref", but a reference is a JSON pointer into the document as written:
    it may point into one (``#/properties/x/properties/inner``). The translation drops the sibling (2020-12 would
    apply it), yet keeps what a reference reaches, so both read the same schema there."""
    keyword, *rest = where[1:].split("/")
    placed: Any = sibling
    for token in reversed(rest):
        placed = {token: placed}
    schema = {
        "$schema": META_URIS[dialect],
        "properties": {"x": {"$ref": "#/definitions/d", keyword: placed}, "y": {"$ref": f"#/properties/x{where}"}},
        "definitions": {"d": {"type": "object"}},
    }
    reference = validator_for(schema)(schema)
    runtime = runtime_validator(translate(schema).schema)
    for value in instances:
        for instance in ({"y": value}, {"x": value}):
            if dialect == DRAFT4 and _integral_float_in(value):
                continue  # draft-04 alone calls 2.0 no integer (known.json)
            assert runtime.is_valid(instance) == reference.is_valid(instance), (schema, instance)
    assert not diff_schemas(schema, copy.deepcopy(schema)).changes


def test_a_reference_into_an_ignored_sibling_lints_and_diffs_where_it_is_written(tmp_path: Path) -> None:
    old: dict[str, Any] = {
        "$schema": D7,
        "properties": {
            "x": {"$ref": "#/definitions/d", "properties": {"inner": {"type": "integer"}}},
            "y": {"$ref": "#/properties/x/properties/inner"},
        },
        "definitions": {"d": {"type": "object"}},
    }
    new = copy.deepcopy(old)
    new["properties"]["x"]["properties"]["inner"]["type"] = "string"
    root = _contract(tmp_path, "s.json", {"s.json": old})
    assert lint_paths([root]).problems == ()
    changes = diff_schemas(old, new).changes
    assert [(c.code, c.path) for c in changes] == [("type.changed", "/properties/x/properties/inner/type")]


def test_annotations_the_dialect_never_checked_are_mended_and_real_errors_there_are_refused(tmp_path: Path) -> None:
    schema = {
        "$schema": D7,
        "$defs": {"a": {"type": "string", "description": None}},
        "properties": {"a": {"$ref": "#/$defs/a"}},
    }
    root = _contract(tmp_path, "s.json", {"s.json": schema})
    result = lint_paths([root])
    assert result.ok, result.problems
    assert [(w.code, w.location.pointer) for w in result.warnings] == [
        ("schema.annotation_shape", "/$defs/a/description")
    ]
    runtime_validator(bundle_contract(load_contract(root)).schemas["events.order_placed.payload"])
    # A wrong type name under draft-07's "$defs" is no draft-07 error, but the 2020-12 reading cannot take it.
    broken = {**schema, "$defs": {"a": {"type": "strin"}}}
    (root / "s.json").write_text(json.dumps(broken, indent=2))
    result = lint_paths([root])
    assert [(p.code, p.location.pointer) for p in result.problems] == [("schema.runtime_rejects", "/$defs/a/type")]


@pytest.mark.parametrize("root_names_its_dialect", [False, True])
@pytest.mark.parametrize(
    ("embedded", "instances"),
    [
        (  # draft-07 ignores the siblings of $ref: maxLength does not apply
            {
                "$schema": "http://json-schema.org/draft-07/schema#",
                "$id": "http://x/old.json",
                "definitions": {"s": {"type": "string"}},
                "allOf": [{"$ref": "#/definitions/s", "maxLength": 2}],
            },
            ["abcd", 3],
        ),
        (  # draft-04's boolean exclusiveMaximum
            {
                "$schema": "http://json-schema.org/draft-04/schema#",
                "id": "http://x/o4.json",
                "type": "number",
                "maximum": 5,
                "exclusiveMaximum": True,
            },
            [5, 4],
        ),
    ],
)
def test_an_older_dialect_embedded_under_a_root_without_schema_is_read_with_its_own_meaning(
    root_names_its_dialect: bool, embedded: dict[str, Any], instances: list[Any]
) -> None:
    """A document without ``$schema`` is 2020-12; an embedded resource naming an older dialect is still that
    dialect: the translation accepts exactly what the original does under its own validator."""
    root = {"$schema": "https://json-schema.org/draft/2020-12/schema"} if root_names_its_dialect else {}
    document = {**root, "$defs": {"old": embedded}, "$ref": "#/$defs/old"}
    translated = translate(document, text=json.dumps(document)).schema
    for instance in instances:
        assert runtime_validator(translated).is_valid(instance) == validator_for(document)(document).is_valid(
            instance
        ), instance


@pytest.mark.parametrize(
    ("dialect_uri", "id_keyword"),
    [("http://json-schema.org/draft-07/schema#", "$id"), ("http://json-schema.org/draft-04/schema#", "id")],
)
@pytest.mark.parametrize("beside", ["anchor", "ref sibling"])
def test_a_fragment_id_or_an_id_beside_ref_starts_no_resource(dialect_uri: str, id_keyword: str, beside: str) -> None:
    """References below an anchor-only id, or below an id that draft-04..07 ignore next to $ref, still point
    into the document's root: they follow the keywords the translation moved."""
    holder: dict[str, Any] = {"properties": {"a": {"$ref": "#/definitions/t/additionalItems"}}}
    if beside == "anchor":
        holder[id_keyword] = "#U"
        document: dict[str, Any] = {"$ref": "#/definitions/u"}
    else:
        holder = {"allOf": [holder]}
        document = {"$ref": "#/definitions/w"}
    definitions: dict[str, Any] = {
        "t": {"items": [{"type": "string"}], "additionalItems": {"type": "integer"}},
        "u": holder,
        "w": {"$ref": "#/definitions/u", id_keyword: "http://x/ignored.json"},
    }
    document = {"$schema": dialect_uri, "definitions": definitions, **document}
    translated = translate(document).schema
    for instance in ({"a": 1}, {"a": "x"}):
        expected = validator_for(document)(document).is_valid(instance)
        assert runtime_validator(translated).is_valid(instance) == expected, instance
