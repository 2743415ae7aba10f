"""``$ref``s resolved against an http(s) ``$id`` find the file the ``$id`` places them at (decision 0096)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from subhive.codegen.bundle import bundle_contract
from subhive.compat.files import diff_files
from subhive.contract import lint_paths, load_contract
from subhive.errors import InputError
from subhive.runtime import ContractBinding

D7 = "http://json-schema.org/draft-07/schema#"
HOST = "https://json.schemastore.org/"


def _write(root: Path, files: dict[str, Any]) -> None:
    for name, value in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(json.dumps(value, indent=2))


def _catalog(minimum: int) -> dict[str, Any]:
    """SchemaStore's layout: every schema's $id is its URL; files side by side, referring to each other by it."""
    return {
        "foo.json": {
            "$schema": D7,
            "$id": HOST + "foo.json",
            "type": "object",
            "properties": {
                "b": {"$ref": "bar.json#/definitions/b"},  # relative, resolved against the $id
                "c": {"$ref": HOST + "lib/common.json"},  # absolute, into a subdirectory
            },
        },
        "bar.json": {"$schema": D7, "$id": HOST + "bar.json", "definitions": {"b": {"type": "integer", "minimum": 0}}},
        "lib/common.json": {
            "$schema": D7,
            "$id": HOST + "lib/common.json",
            "properties": {"n": {"$ref": "../bar.json#/definitions/b"}, "m": {"type": "integer", "minimum": minimum}},
        },
    }


def test_refs_relative_to_an_id_resolve_to_the_files_it_places_and_compare(tmp_path: Path) -> None:
    _write(tmp_path / "v1", _catalog(0))
    _write(tmp_path / "v2", _catalog(5))
    same = diff_files(tmp_path / "v1" / "foo.json", tmp_path / "v1" / "foo.json")
    assert (same.backward, same.forward) == (True, True)
    report = diff_files(tmp_path / "v1" / "foo.json", tmp_path / "v2" / "foo.json")
    assert (report.backward, report.forward) == (False, True)
    assert [(c.code, c.path) for c in report.changes] == [
        ("minimum.tightened", HOST + "lib/common.json#/properties/m/minimum")
    ]


MANIFEST = """contract: orders
version: 1.0.0
provider: backend
events:
  order_placed:
    payload: foo.json
"""


def test_a_contract_laid_out_by_id_lints_clean_and_validates_on_the_bus(tmp_path: Path) -> None:
    root = tmp_path / "orders" / "1.0.0"
    _write(root, _catalog(3))
    (root / "contract.yaml").write_text(MANIFEST)
    result = lint_paths([root])
    assert result.ok, result.problems
    schemas = bundle_contract(load_contract(root)).schemas
    binding = ContractBinding.from_dict(
        {"name": "orders", "version": "1.0.0", "provider": "backend", "operations": {},
         "events": {"order_placed": "events.order_placed.payload"}, "schemas": schemas}
    )  # fmt: skip
    validator = binding.validator("events.order_placed.payload")
    assert validator.is_valid({"b": 0, "c": {"n": 1, "m": 3}})
    assert not validator.is_valid({"b": -1})  # bar.json's minimum, reached through the $id
    assert not validator.is_valid({"c": {"m": 2}})  # lib/common.json's
    assert not validator.is_valid({"c": {"n": -1}})  # ../bar.json from lib/common.json's $id


def test_a_missing_file_names_the_ref_its_place_and_the_lookup_tried(tmp_path: Path) -> None:
    files = _catalog(0)
    del files["bar.json"]
    _write(tmp_path, files)
    with pytest.raises(InputError) as raised:
        diff_files(tmp_path / "foo.json", tmp_path / "foo.json")
    problems = getattr(raised.value, "problems", None) or [raised.value]
    found = [p for p in problems if p.code == "schema.ref_unresolved"]
    assert found, problems
    problem = found[0]
    assert "'bar.json#/definitions/b'" in problem.message
    assert f"the $id '{HOST}foo.json' of foo.json places '{HOST}bar.json'" in problem.message
    assert problem.location.pointer == "/properties/b/$ref"
    assert problem.location.line == 7


def test_another_host_is_remote_and_the_error_says_what_was_tried(tmp_path: Path) -> None:
    files = _catalog(0)
    files["foo.json"]["properties"]["c"] = {"$ref": "https://example.com/common.json"}
    _write(tmp_path, files)
    result = lint_paths([tmp_path / "foo.json"])
    [problem] = [p for p in result.problems if p.code == "schema.ref_remote"]
    assert problem.location.pointer == "/properties/c/$ref"
    assert "looked for an $id of this document" in (problem.hint or "")
    assert f"the $id '{HOST}foo.json' of foo.json would place it (another host)" in (problem.hint or "")


def test_an_id_cannot_lead_out_of_the_contract_directory(tmp_path: Path) -> None:
    root = tmp_path / "orders" / "1.0.0"
    # The $id says the file is two levels down its host; the directory holding the contract is not.
    _write(root, {"foo.json": {"$id": HOST + "a/b/foo.json", "properties": {"b": {"$ref": "../../outside.json"}}}})
    (root / "contract.yaml").write_text(MANIFEST)
    _write(tmp_path, {"outside.json": {"type": "string"}})
    result = lint_paths([root])
    assert [p.code for p in result.problems] == ["schema.ref_escape"]
    assert f"places '{HOST}outside.json'" in result.problems[0].message


def test_a_url_without_json_names_the_json_file_as_catalogs_serve_it(tmp_path: Path) -> None:
    files = _catalog(0)
    files["foo.json"]["properties"]["b"] = {"$ref": "bar#/definitions/b"}  # SchemaStore's "feed-1" is feed-1.json
    _write(tmp_path, files)
    assert lint_paths([tmp_path / "foo.json"]).ok
    narrower = _catalog(0)
    narrower["bar.json"]["definitions"]["b"]["minimum"] = 2
    narrower["foo.json"]["properties"]["b"] = {"$ref": "bar#/definitions/b"}
    _write(tmp_path / "v2", narrower)
    report = diff_files(tmp_path / "foo.json", tmp_path / "v2" / "foo.json")
    assert (report.backward, report.forward) == (False, True)
    files["foo.json"]["properties"]["b"] = {"$ref": "baz#/definitions/b"}
    _write(tmp_path, files)
    [problem] = lint_paths([tmp_path / "foo.json"]).problems
    assert problem.code == "schema.ref_unresolved"
    assert f"places '{HOST}baz', then baz.json" in problem.message
