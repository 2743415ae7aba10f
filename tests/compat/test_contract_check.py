"""Contract-level checks: each part judged in its own direction, and semver enforced on the result."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from subhive.compat.contract_check import ContractCheck, check_contract
from subhive.contract import load_contract
from subhive.errors import InputError
from subhive.semver import Bump, Version
from tests.helpers import object_schema, orders_manifest, write_contract

REPO = Path(__file__).resolve().parents[2]

BASE_FILES: dict[str, Any] = {
    "in.json": object_schema({"sku": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}}, ["sku", "qty"]),
    "out.json": object_schema({"id": {"type": "string"}}, ["id"]),
    "event.json": object_schema({"id": {"type": "string"}, "state": {"enum": ["new", "paid"]}}, ["id", "state"]),
}


def versions(
    tmp_path: Path,
    new_version: str,
    *,
    old_version: str = "1.0.0",
    manifest: dict[str, Any] | None = None,
    **file_edits: Any,
) -> tuple[Path, Path]:
    """Write an old contract and a new one whose files are the old ones with ``file_edits`` applied."""
    old = write_contract(tmp_path / "old", orders_manifest(old_version), BASE_FILES)
    files = copy.deepcopy(BASE_FILES)
    files.update({name.replace("_", "."): content for name, content in file_edits.items()})
    new = write_contract(tmp_path / "new", manifest or orders_manifest(new_version), files)
    return old, new


def check(old: Path, new: Path) -> ContractCheck:
    return check_contract(load_contract(new), load_contract(old))


def test_identical_content_needs_no_bump_but_a_new_version_is_still_newer(tmp_path: Path) -> None:
    result = check(*versions(tmp_path, "1.0.1"))
    assert result.required_bump is Bump.NONE
    assert result.compatible
    assert result.semver_ok


def test_republishing_the_same_version_with_changes_is_refused(tmp_path: Path) -> None:
    edited = copy.deepcopy(BASE_FILES["in.json"])
    edited["properties"]["note"] = {"type": "string"}
    result = check(*versions(tmp_path, "1.0.0", in_json=edited))
    assert not result.semver_ok  # accepted versions are immutable


def test_request_growth_is_additive_and_needs_a_minor_bump(tmp_path: Path) -> None:
    grown = copy.deepcopy(BASE_FILES["in.json"])
    grown["properties"]["note"] = {"type": "string"}  # closed model: a new optional property accepts more
    result = check(*versions(tmp_path, "1.0.1", in_json=grown))
    assert result.compatible
    assert result.required_bump is Bump.MINOR
    assert not result.semver_ok
    assert [part for part, _ in result.offending()] == ["operations.place_order.input"]
    assert str(result.suggested_version()) == "1.1.0"
    assert check(*versions(tmp_path / "minor", "1.1.0", in_json=grown)).semver_ok


def test_request_shrink_breaks_and_needs_a_major_bump(tmp_path: Path) -> None:
    narrowed = copy.deepcopy(BASE_FILES["in.json"])
    narrowed["properties"]["qty"]["maximum"] = 10  # requests with qty 11 were valid before
    result = check(*versions(tmp_path, "1.1.0", in_json=narrowed))
    assert not result.compatible
    assert result.required_bump is Bump.MAJOR
    assert not result.semver_ok
    assert {part for part, _ in result.breaking} == {"operations.place_order.input"}
    assert check(*versions(tmp_path / "major", "2.0.0", in_json=narrowed)).semver_ok


def test_reply_shrink_is_additive_but_reply_growth_breaks(tmp_path: Path) -> None:
    shrunk = copy.deepcopy(BASE_FILES["event.json"])
    shrunk["properties"]["state"]["enum"] = ["new"]  # old consumers still understand every event
    result = check(*versions(tmp_path / "shrink", "1.1.0", event_json=shrunk))
    assert result.compatible
    assert result.required_bump is Bump.MINOR

    grown = copy.deepcopy(BASE_FILES["event.json"])
    grown["properties"]["state"]["enum"] = ["new", "paid", "refunded"]  # old consumers reject "refunded"
    result = check(*versions(tmp_path / "grow", "1.1.0", event_json=grown))
    assert not result.compatible
    assert result.required_bump is Bump.MAJOR
    assert {part for part, _ in result.breaking} == {"events.order_placed.payload"}


def test_documentation_only_changes_need_a_patch(tmp_path: Path) -> None:
    documented = copy.deepcopy(BASE_FILES["out.json"])
    documented["properties"]["id"]["description"] = "The order id."
    manifest = orders_manifest("1.0.1", description="Orders, documented.")
    result = check(*versions(tmp_path, "1.0.1", manifest=manifest, out_json=documented))
    assert result.required_bump is Bump.PATCH
    assert result.semver_ok


def test_removing_an_operation_or_event_breaks(tmp_path: Path) -> None:
    manifest = orders_manifest("1.1.0")
    del manifest["events"]
    result = check(*versions(tmp_path, "1.1.0", manifest=manifest))
    assert [c.code for _, c in result.offending()] == ["event.removed"]
    assert result.required_bump is Bump.MAJOR


def test_adding_an_operation_is_additive(tmp_path: Path) -> None:
    manifest = orders_manifest("1.1.0")
    manifest["operations"]["cancel_order"] = {"description": "Cancel.", "input": "out.json", "output": "out.json"}
    result = check(*versions(tmp_path, "1.1.0", manifest=manifest))
    assert result.compatible
    assert result.required_bump is Bump.MINOR
    assert result.semver_ok


def test_pre_1_0_breaking_change_needs_a_minor_bump(tmp_path: Path) -> None:
    narrowed = copy.deepcopy(BASE_FILES["in.json"])
    narrowed["required"] = ["sku", "qty", "note"]
    narrowed["properties"]["note"] = {"type": "string"}
    old, new = versions(tmp_path, "0.1.1", old_version="0.1.0", in_json=narrowed)
    assert not check(old, new).semver_ok
    old, new = versions(tmp_path / "ok", "0.2.0", old_version="0.1.0", in_json=narrowed)
    assert check(old, new).semver_ok


def test_different_contracts_cannot_be_compared(tmp_path: Path) -> None:
    old = write_contract(tmp_path, orders_manifest("1.0.0"), BASE_FILES)
    other = write_contract(tmp_path, orders_manifest("1.0.0", contract="billing"), BASE_FILES)
    with pytest.raises(InputError) as caught:
        check(old, other)
    assert caught.value.code == "check.different_contracts"


def test_example_contracts_in_the_repository() -> None:
    contracts = REPO / "contracts" / "orders"
    minor = check(contracts / "1.0.0", contracts / "1.1.0")
    assert minor.compatible
    assert minor.required_bump is Bump.MINOR
    assert minor.semver_ok
    major = check(contracts / "1.1.0", contracts / "2.0.0")
    assert major.required_bump is Bump.MAJOR
    assert major.semver_ok
    broken_parts = {part for part, _ in major.breaking}
    assert broken_parts == {
        "operations.place_order.input",
        "operations.get_order.output",
        "events.order_placed.payload",
    }
    refused = check(contracts / "1.1.0", REPO / "examples" / "semver-refused" / "orders" / "1.2.0")
    assert not refused.semver_ok
    assert [c.code for _, c in refused.offending()] == ["operation.removed"]
    assert refused.suggested_version() == Version(2, 0, 0)


def test_promising_idempotence_is_additive_and_withdrawing_it_breaks(tmp_path: Path) -> None:
    """``idempotent: true`` lets consumers (and the bus, on a dropped connection) send a request again: adding
    the promise adds to the interface, taking it back breaks whoever relied on it."""
    promised = orders_manifest("1.1.0")
    promised["operations"]["place_order"]["idempotent"] = True
    added = check(*versions(tmp_path / "a", "1.1.0", manifest=promised))
    assert added.compatible
    assert added.required_bump is Bump.MINOR
    assert load_contract(write_contract(tmp_path / "p", promised, BASE_FILES)).operations["place_order"].idempotent

    old = write_contract(tmp_path / "b" / "old", promised, BASE_FILES)
    new = write_contract(tmp_path / "b" / "new", orders_manifest("1.2.0"), BASE_FILES)
    withdrawn = check(old, new)
    assert [c.code for _, c in withdrawn.offending()] == ["operation.idempotent_removed"]
    assert withdrawn.required_bump is Bump.MAJOR


def test_idempotent_must_be_true_or_false(tmp_path: Path) -> None:
    from subhive.errors import ContractInvalid

    manifest = orders_manifest("1.0.0")
    manifest["operations"]["place_order"]["idempotent"] = "yes"
    with pytest.raises(ContractInvalid) as caught:
        load_contract(write_contract(tmp_path, manifest, BASE_FILES))
    [problem] = caught.value.problems
    assert (problem.code, problem.location.pointer) == ("manifest.type", "/operations/place_order/idempotent")
