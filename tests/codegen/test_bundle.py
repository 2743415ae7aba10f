"""Bundling keeps meaning: the original files (python-jsonschema with a registry of them) and the bundle
(the runtime's jsonschema-rs validator, formats asserted on both) give every hand-written instance the verdict
the rules give it."""

from __future__ import annotations

import json
import keyword
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import referencing
import referencing.jsonschema

from subhive._rs_validator import runtime_validator
from subhive.codegen.bundle import bundle, bundle_contract
from subhive.contract import Contract, SchemaRef, load_contract
from tests.helpers import write_contract

REPO = Path(__file__).resolve().parents[2]

COMMON = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$defs": {
        # Same $defs name as one in main.json: the bundle must keep both, under different names.
        "Item": {
            "type": "object",
            "required": ["sku"],
            "properties": {"sku": {"type": "string", "minLength": 3}},
            "additionalProperties": False,
        },
        "Money": {
            "$id": "urn:shop:money",
            "type": "object",
            "required": ["cents"],
            "properties": {"cents": {"$ref": "#/$defs/Cents"}},
            "$defs": {"Cents": {"type": "integer", "minimum": 0}},
        },
        "Day": {"$anchor": "day", "type": "string", "format": "date"},
    },
}
MAIN = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["item", "price"],
    "properties": {
        "item": {"$ref": "common.json#/$defs/Item"},
        "local": {"$ref": "#/$defs/Item"},
        "price": {"$ref": "common.json#/$defs/Money"},
        "due": {"$ref": "common.json#day"},
        "tree": {"$ref": "#/$defs/Tree"},
        "id": {"type": "string", "format": "uuid"},
        # Data, not a reference: a "$ref" key inside const must survive as it is.
        "tag": {"const": {"$ref": "#/$defs/Item"}},
        "never": {"$ref": "#/$defs/Nothing"},
    },
    "additionalProperties": False,
    "$defs": {
        "Item": {"type": "integer", "maximum": 9},
        "Tree": {
            "type": "object",
            "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}, "up": {"$ref": "#"}},
        },
        "Nothing": False,
    },
}
LIST = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "array",
    "items": {"$ref": "#/$defs/Node"},
    "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#"}}}},
}

GOOD = {"item": {"sku": "abc"}, "price": {"cents": 5}}
# (instance, valid?) decided from the schemas above, by hand.
MAIN_CASES: list[tuple[Any, bool]] = [
    (GOOD, True),
    ({**GOOD, "local": 9, "due": "2024-02-29", "id": "3f2b8c1e-9d4a-4b7e-8f00-1a2b3c4d5e6f"}, True),
    ({**GOOD, "tag": {"$ref": "#/$defs/Item"}}, True),
    ({**GOOD, "tag": {"$ref": "#/$defs/Other"}}, False),
    ({**GOOD, "tree": {"kids": [{"kids": []}, {"up": GOOD}]}}, True),
    ({**GOOD, "tree": {"kids": [{"kids": [{"up": {"item": {"sku": "x"}}}]}]}}, False),  # sku too short, deep
    ({**GOOD, "tree": {"up": {"price": {"cents": 1}}}}, False),  # "#" means main.json: item is required
    ({**GOOD, "local": {"sku": "abc"}}, False),  # main.json's Item is an integer, not common.json's
    ({**GOOD, "local": 10}, False),
    ({"item": {"sku": "abc"}, "price": {"cents": -1}}, False),  # the Cents under the urn:shop:money $id
    ({"item": {"sku": "abc"}, "price": {"cents": 1.5}}, False),
    ({**GOOD, "due": "2023-02-29"}, False),  # format asserted: no such day
    ({**GOOD, "id": "not-a-uuid"}, False),
    ({**GOOD, "never": 1}, False),
    ({**GOOD, "extra": 1}, False),
    ({"item": {"sku": "abc"}}, False),
]
LIST_CASES: list[tuple[Any, bool]] = [
    ([], True),
    ([{"next": [{"next": []}]}], True),
    ([{"next": [{"next": {}}]}], False),
    ({}, False),
]


@pytest.fixture(scope="module")
def contract(tmp_path_factory: pytest.TempPathFactory) -> Contract:
    manifest = {
        "contract": "mixed",
        "version": "1.0.0",
        "provider": "backend",
        "operations": {
            "put": {"input": "main.json", "output": "common.json#/$defs/Item"},
            "walk": {"input": "list.json", "output": "main.json#/$defs/Tree"},
        },
        "events": {"priced": {"payload": "common.json#/$defs/Money"}},
    }
    directory = write_contract(
        tmp_path_factory.mktemp("bundle"), manifest, {"main.json": MAIN, "common.json": COMMON, "list.json": LIST}
    )
    return load_contract(directory)


def _original(directory: Path, target: str) -> jsonschema.protocols.Validator:
    resources = [
        (
            p.resolve().as_uri(),
            referencing.Resource.from_contents(
                json.loads(p.read_text()), default_specification=referencing.jsonschema.DRAFT202012
            ),
        )
        for p in directory.glob("*.json")
    ]
    registry: referencing.Registry[Any] = referencing.Registry().with_resources(resources).crawl()
    cls = jsonschema.validators.Draft202012Validator
    file, _, fragment = target.partition("#")
    uri = (directory / file).resolve().as_uri() + (f"#{fragment}" if fragment else "")
    return cls({"$ref": uri}, registry=registry, format_checker=cls.FORMAT_CHECKER)


def _bundled(schema: dict[str, Any]) -> Any:
    return runtime_validator(schema, validate_formats=True)


@pytest.mark.parametrize(
    ("key", "target", "cases"),
    [
        ("operations.put.input", "main.json", MAIN_CASES),
        ("operations.walk.input", "list.json", LIST_CASES),
        (
            "events.priced.payload",
            "common.json#/$defs/Money",
            [({"cents": 0}, True), ({"cents": -3}, False), ({}, False)],
        ),
        (
            "operations.walk.output",
            "main.json#/$defs/Tree",
            [({"up": GOOD}, True), ({"up": {}}, False), ({"kids": [{"up": 1}]}, False)],
        ),
    ],
)
def test_bundled_schemas_give_every_instance_the_verdict_of_the_original_files(
    contract: Contract, key: str, target: str, cases: list[tuple[Any, bool]]
) -> None:
    result = bundle_contract(contract)
    original = _original(contract.directory, target)
    alone = _bundled(result.schemas[key])
    via_document = _bundled({**result.document, "$ref": f"#/$defs/{result.names[key]}"})
    single = _bundled(bundle(contract.schemas[key]))
    for instance, expected in cases:
        assert original.is_valid(instance) is expected, ("the case itself is wrong", instance)
        assert alone.is_valid(instance) is expected, (key, instance)
        assert via_document.is_valid(instance) is expected, (key, instance)
        assert single.is_valid(instance) is expected, (key, instance)


def test_every_reference_points_inside_the_bundle_and_no_identifier_survives(contract: Contract) -> None:
    text = json.dumps(bundle_contract(contract).schemas)
    assert ".json" not in text.replace('"$schema": "https://json-schema.org/draft/2020-12/schema"', "")
    assert '"$id"' not in text
    assert '"$anchor"' not in text
    assert "urn:shop" not in text
    schema = bundle_contract(contract).schemas["operations.put.input"]
    # main.json refers to itself ("#" under Tree), so its root is a named definition too.
    assert schema["$ref"] == "#/$defs/PutInput"
    assert schema["$defs"]["PutInput"]["properties"]["tag"] == {"const": {"$ref": "#/$defs/Item"}}  # data untouched
    # The two different Items are two definitions; the recursive root is named and referenced.
    items = [name for name in schema["$defs"] if name.startswith("Item")]
    assert len(items) == 2
    assert {schema["$defs"][n].get("type") for n in items} == {"object", "integer"}
    walk = bundle_contract(contract).schemas["operations.walk.input"]
    assert walk["$ref"] == "#/$defs/WalkInput"
    assert walk["$defs"]["Node"]["properties"]["next"] == {"$ref": "#/$defs/WalkInput"}


def test_names_are_class_names_from_the_manifest_and_from_defs(contract: Contract) -> None:
    result = bundle_contract(contract)
    assert result.names["operations.put.input"] == "PutInput"
    assert result.names["operations.put.output"] == "Item"  # a $defs entry keeps its own name
    assert result.names["events.priced.payload"] == "Money"
    assert result.names["operations.walk.output"] == "Tree"
    assert set(result.names.values()) <= set(result.document["$defs"])
    for name in result.document["$defs"]:
        assert name.isidentifier(), name
        assert not keyword.iskeyword(name), name
    # Distinct schemas get distinct names; the document holds each schema once.
    distinct = {(str(r.file.resolve()), r.pointer) for r in contract.schemas.values()}
    assert len(set(result.names.values())) == len(distinct)


def test_the_same_contract_bundles_to_the_same_bytes(contract: Contract) -> None:
    first = bundle_contract(contract)
    again = bundle_contract(load_contract(contract.directory))
    assert json.dumps(first.document) == json.dumps(again.document)
    assert json.dumps(first.schemas) == json.dumps(again.schemas)
    assert first.names == again.names


def test_orders_shares_its_definitions_once() -> None:
    contract = load_contract(REPO / "contracts/orders/1.1.0")
    result = bundle_contract(contract)
    assert result.names == {
        "operations.place_order.input": "PlaceOrderInput",
        "operations.place_order.output": "OrderRef",
        "operations.get_order.input": "OrderRef",
        "operations.get_order.output": "Order",
        "events.order_placed.payload": "Order",
        "events.order_shipped.payload": "OrderRef",
    }
    assert sorted(result.document["$defs"]) == ["Order", "OrderLine", "OrderRef", "PlaceOrderInput"]
    place = _bundled(result.schemas["operations.place_order.input"])
    assert place.is_valid({"customer_id": "c", "lines": [{"sku": "abc", "quantity": 1}]})
    assert not place.is_valid({"customer_id": "c", "lines": [{"sku": "abc", "quantity": 1000}]})
    assert not place.is_valid({"customer_id": "c", "lines": []})


def test_a_boolean_schema_bundles_under_a_name(tmp_path: Path) -> None:
    directory = write_contract(
        tmp_path,
        {"contract": "b", "version": "1.0.0", "provider": "p", "events": {"e": {"payload": "s.json#/$defs/Never"}}},
        {"s.json": {"$defs": {"Never": False}}},
    )
    schema = bundle(SchemaRef(directory / "s.json", "/$defs/Never"))
    assert schema["$ref"] == "#/$defs/Never"
    assert schema["$defs"] == {"Never": False}
    assert not _bundled(schema).is_valid({})
