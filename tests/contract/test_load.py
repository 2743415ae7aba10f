"""Loading contracts: the model, schema references, and the resolver the diff engine follows $refs with."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import subhive.contract as contract_pkg
from subhive.contract import (
    Contract,
    Event,
    GrpcSpec,
    LintResult,
    Operation,
    SchemaRef,
    lint_paths,
    load_contract,
    load_schema_file,
)
from subhive.errors import ContractInvalid, InputError
from subhive.semver import Version

FIXTURES = Path(__file__).parent / "fixtures"
VALID = FIXTURES / "valid"


@pytest.fixture(scope="module")
def orders() -> Contract:
    return load_contract(VALID)


def test_public_surface() -> None:
    assert set(contract_pkg.__all__) >= {
        "Contract",
        "Operation",
        "Event",
        "GrpcSpec",
        "SchemaRef",
        "load_contract",
        "lint_paths",
        "LintResult",
    }
    for name in contract_pkg.__all__:
        assert getattr(contract_pkg, name) is not None


def test_manifest_fields(orders: Contract) -> None:
    assert orders.name == "orders"
    assert orders.version == Version(1, 0, 0)
    assert orders.provider == "backend"
    assert orders.description == "Orders placed by the storefront."
    assert orders.directory == VALID
    assert orders.grpc is None
    assert list(orders.operations) == ["place_order", "get_order"]  # manifest order
    assert list(orders.events) == ["order_placed", "category_changed"]
    place = orders.operations["place_order"]
    assert isinstance(place, Operation)
    assert place.description == "Place an order and get its id back."
    assert orders.operations["get_order"].description == ""  # optional
    assert isinstance(orders.events["order_placed"], Event)


def test_schema_refs_point_at_files_and_pointers(orders: Contract) -> None:
    place = orders.operations["place_order"]
    assert place.input == SchemaRef(VALID / "place_order.input.json", "")
    assert place.output == SchemaRef(VALID / "schemas.json", "/$defs/OrderRef")
    assert place.input.schema["title"] == "PlaceOrder"  # type: ignore[index]
    assert place.output.schema["required"] == ["order_id"]  # type: ignore[index]
    assert orders.operations["get_order"].input.file == VALID / "schemas" / "get_order.yaml"
    location = place.output.location
    assert (location.file, location.line, location.pointer) == (str(VALID / "schemas.json"), 4, "/$defs/OrderRef")
    # one document object per file, shared by every reference to it
    assert place.output.document is orders.events["order_placed"].payload.document
    assert set(orders.schemas) == {
        "operations.place_order.input",
        "operations.place_order.output",
        "operations.get_order.input",
        "operations.get_order.output",
        "events.order_placed.payload",
        "events.category_changed.payload",
    }


def test_a_contract_loads_from_its_manifest_path_too(orders: Contract) -> None:
    again = load_contract(VALID / "contract.yaml")
    assert again.operations.keys() == {"place_order", "get_order"}
    assert again == orders  # equal by content, and usable as a key
    assert {again: 1}[orders] == 1


def test_grpc_spec() -> None:
    contract = load_contract(FIXTURES / "valid_grpc" / "1.0.0")
    assert contract.grpc == GrpcSpec(FIXTURES / "valid_grpc" / "1.0.0" / "orders.proto", "shop.orders.v1.Orders")
    assert contract.version == Version(1, 0, 0)


# --- the resolver ---------------------------------------------------------------------------------------


def test_resolver_follows_references_to_other_files(orders: Contract) -> None:
    ref = orders.operations["place_order"].input
    line, there = ref.resolver("schemas.json#/$defs/OrderLine")
    assert line["$anchor"] == "line"
    assert there.document.path == VALID / "schemas.json"
    # the returned resolver works relative to the document it belongs to
    assert there("#line")[0] is line
    # the diff engine asks for the document part alone and walks the fragment itself
    root, _ = ref.resolver("schemas.json")
    assert root is ref.resolver("schemas.json#")[0]
    assert set(root["$defs"]) == {"OrderRef", "OrderLine", "Money", "Order", "Category"}


def test_resolver_knows_ids_declared_in_the_same_document(orders: Contract) -> None:
    shared = orders.operations["place_order"].output.resolver  # schemas.json
    money, there = shared("urn:shop:money")
    assert money["$id"] == "urn:shop:money"
    # inside that resource, "#/$defs/Currency" is relative to the resource, not to the file's root
    currency, _ = there("#/$defs/Currency")
    assert currency == {"enum": ["EUR", "USD"]}
    # another document's $id is not a name subhive resolves: files are named by path
    with pytest.raises(InputError) as info:
        orders.operations["place_order"].input.resolver("urn:shop:money")
    assert info.value.code == "schema.ref_remote"


def test_resolver_resolves_dot_dot_inside_the_contract(orders: Contract) -> None:
    ref_target, there = orders.operations["get_order"].input.resolver("../schemas.json#/$defs/OrderRef")
    assert ref_target["required"] == ["order_id"]
    assert there.document.path == VALID / "schemas.json"


@pytest.mark.parametrize(
    ("ref", "code"),
    [
        ("https://example.com/schemas/x.json", "schema.ref_remote"),
        ("urn:nowhere", "schema.ref_remote"),
        ("file:///etc/passwd", "schema.ref_remote"),
        ("../../missing_version/in.json", "schema.ref_escape"),
        ("nothing.json", "schema.ref_unresolved"),
        ("schemas.json#/$defs/Nope", "schema.ref_unresolved"),
        ("schemas.json#nope", "schema.ref_unresolved"),
        ("schemas.json#/$defs/OrderRef/required", "schema.ref_unresolved"),  # a list, not a schema
    ],
)
def test_resolver_refuses_what_is_outside_or_missing(orders: Contract, ref: str, code: str) -> None:
    resolver = orders.operations["place_order"].input.resolver
    with pytest.raises(InputError) as info:
        resolver(ref)
    assert info.value.code == code
    assert info.value.hint


def test_a_free_standing_schema_ref_resolves_in_its_own_directory() -> None:
    ref = SchemaRef(VALID / "schemas.json", "/$defs/Order")
    assert ref.schema["allOf"] == [{"$ref": "#/$defs/OrderRef"}]  # type: ignore[index]
    assert ref.resolver("place_order.input.json")[0]["title"] == "PlaceOrder"
    assert str(ref) == f"{VALID / 'schemas.json'}#/$defs/Order"


# --- errors ---------------------------------------------------------------------------------------------


def test_a_missing_path_is_an_input_error_not_a_lint_failure(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        load_contract(tmp_path / "nope")
    assert not isinstance(info.value, ContractInvalid)
    assert info.value.code == "input.not_found"


def test_a_file_other_than_the_manifest_is_refused() -> None:
    with pytest.raises(InputError) as info:
        load_contract(VALID / "schemas.json")
    assert info.value.code == "contract.not_a_manifest"


def test_an_invalid_contract_raises_with_every_problem(tmp_path: Path) -> None:
    root = tmp_path / "c"
    root.mkdir()
    (root / "contract.yaml").write_text(
        "contract: Orders\nversion: 1.0\nprovider: backend\nevents:\n"
        "  placed:\n    payload: gone.json\n  shipped:\n    payload: bad.json\n"
    )
    (root / "bad.json").write_text('{"type": "strin"}')
    with pytest.raises(ContractInvalid) as info:
        load_contract(root)
    codes = sorted(p.code for p in info.value.problems)
    assert codes == ["manifest.file_missing", "manifest.name_invalid", "manifest.version_invalid", "schema.meta"]
    assert "4 problems" in info.value.message
    assert all(p.location.line for p in info.value.problems)


def test_a_directory_without_manifest_is_contract_invalid() -> None:
    with pytest.raises(ContractInvalid) as info:
        load_contract(FIXTURES / "no_manifest")
    assert [p.code for p in info.value.problems] == ["contract.no_manifest"]


def test_lint_result_lists_loaded_contracts_and_problems(tmp_path: Path) -> None:
    shutil.copytree(VALID, tmp_path / "orders" / "1.0.0")
    shutil.copytree(FIXTURES / "ref_to_network", tmp_path / "broken" / "1.0.0")
    result = lint_paths([tmp_path])
    assert isinstance(result, LintResult)
    assert [c.name for c in result.contracts] == ["orders"]
    assert [p.code for p in result.problems] == ["schema.ref_remote"]
    assert not result.ok


# --- single schema files --------------------------------------------------------------------------------


def test_load_schema_file_checks_it_and_resolves_within_its_contract() -> None:
    ref = load_schema_file(VALID / "schemas" / "get_order.yaml")
    assert ref.pointer == ""
    assert ref.schema["required"] == ["order"]  # type: ignore[index]
    assert ref.resolver("../schemas.json#/$defs/OrderRef")[0]["required"] == ["order_id"]


def test_load_schema_file_raises_with_every_problem(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text('{"type": "strin", "properties": {"a": {"$ref": "http://example.com/a"}}}')
    with pytest.raises(ContractInvalid) as info:
        load_schema_file(path)
    assert sorted(p.code for p in info.value.problems) == ["schema.meta", "schema.ref_remote"]
    with pytest.raises(InputError) as missing:
        load_schema_file(tmp_path / "missing.json")
    assert missing.value.code == "input.not_found"


# --- with the real diff engine ----------------------------------------------------------------------------


def test_the_diff_engine_follows_references_through_the_resolver(tmp_path: Path) -> None:
    from subhive.compat.jsonschema import diff_schemas

    old_dir, new_dir = tmp_path / "orders" / "1.0.0", tmp_path / "orders" / "1.1.0"
    shutil.copytree(VALID, old_dir)
    shutil.copytree(VALID, new_dir)
    (new_dir / "contract.yaml").write_text((new_dir / "contract.yaml").read_text().replace("1.0.0", "1.1.0"))
    shared = new_dir / "schemas.json"
    # the change lives in another file than the schema the manifest names: only a followed $ref sees it
    shared.write_text(
        shared.read_text().replace(
            '"quantity": {"type": "integer", "minimum": 1}', '"quantity": {"type": "integer", "minimum": 0}'
        )
    )
    old, new = load_contract(old_dir), load_contract(new_dir)
    before, after = old.operations["place_order"].input, new.operations["place_order"].input
    report = diff_schemas(before.schema, after.schema, old_resolver=before.resolver, new_resolver=after.resolver)
    # minimum 1 -> 0 accepts every old line (backward) and a quantity of 0 the old schema refused (not forward)
    assert (report.backward, report.forward) == (True, False)
    unchanged = diff_schemas(
        before.schema,
        before.schema,
        old_resolver=before.resolver,
        new_resolver=load_contract(old_dir).operations["place_order"].input.resolver,
    )
    assert (unchanged.backward, unchanged.forward) == (True, True)
