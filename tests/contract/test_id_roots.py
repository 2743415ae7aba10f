"""``$ref`` URLs on hosts the referring ``$id`` does not place: ``[schemas] id_roots`` in hive.toml and
``--id-root PREFIX=DIR`` map URL prefixes to local directories (decision 0107), for lint, diff and validation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from subhive._id_roots import extra_id_roots
from subhive._rs_validator import runtime_validator
from subhive.codegen.bundle import bundle
from subhive.compat import diff_schemas
from subhive.compat.files import diff_files
from subhive.contract import lint_paths, load_schema_file
from subhive.errors import InputError
from tests.kit import cli

D7 = "http://json-schema.org/draft-07/schema#"
JSON_HOST = "https://json.schemastore.org/"
WWW_HOST = "https://www.schemastore.org/"
SHARED = "https://shared.example.com/lib/"


def _write(root: Path, files: dict[str, Any]) -> None:
    for name, value in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(json.dumps(value, indent=2) if not isinstance(value, str) else value)


def _catalog() -> dict[str, Any]:
    """SchemaStore's case: one directory served under two hosts; package.json refers to the other one."""
    return {
        "package.json": {
            "$schema": D7,
            "$id": JSON_HOST + "package.json",
            "type": "object",
            "properties": {"prettier": {"$ref": WWW_HOST + "prettierrc.json"}},
        },
        "prettierrc.json": {
            "$schema": D7,
            "$id": WWW_HOST + "prettierrc.json",
            "type": "object",
            "properties": {"tabWidth": {"type": "integer", "minimum": 0}},
        },
    }


def _workspace(root: Path, id_roots: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "hive.toml").write_text(f'[workspace]\nname = "shop"\nformat = 1\n\n[schemas]\nid_roots = {id_roots}\n')
    return root


def test_the_workspace_maps_another_host_and_lint_and_validation_follow_it(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws", f'{{ "{JSON_HOST}" = "schemas/json", "{WWW_HOST}" = "schemas/json" }}')
    _write(ws / "schemas" / "json", _catalog())
    package = ws / "schemas" / "json" / "package.json"
    result = lint_paths([package])
    assert result.ok, result.problems
    validator = runtime_validator(bundle(load_schema_file(package)))
    assert validator.is_valid({"prettier": {"tabWidth": 2}})
    assert not validator.is_valid({"prettier": {"tabWidth": -1}})  # prettierrc.json's minimum, on the other host


def test_without_the_mapping_the_other_host_is_remote_and_the_hint_names_id_roots(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws", f'{{ "{JSON_HOST}" = "schemas/json" }}')
    _write(ws / "schemas" / "json", _catalog())
    [problem] = lint_paths([ws / "schemas" / "json" / "package.json"]).problems
    assert (problem.code, problem.location.pointer) == ("schema.ref_remote", "/properties/prettier/$ref")
    assert "[schemas] id_roots" in (problem.hint or "")
    assert "--id-root" in (problem.hint or "")


def _shared(minimum: int) -> dict[str, Any]:
    return {"money.json": {"$defs": {"amount": {"type": "integer", "minimum": minimum}}}}


def _order(ref: str) -> dict[str, Any]:
    return {"$id": "https://orders.example.com/order.json", "properties": {"total": {"$ref": ref}}}


def test_the_command_line_maps_a_prefix_for_diff_outside_any_workspace(tmp_path: Path) -> None:
    _write(tmp_path / "lib1", _shared(0))
    _write(tmp_path / "lib2", _shared(5))
    _write(tmp_path / "v1", {"order.json": _order(SHARED + "money.json#/$defs/amount")})
    _write(tmp_path / "v2", {"order.json": _order(SHARED + "money.json#/$defs/amount")})
    old, new = tmp_path / "v1" / "order.json", tmp_path / "v2" / "order.json"
    with extra_id_roots({SHARED: tmp_path / "lib1"}):
        same = diff_files(old, new)
    assert (same.backward, same.forward, same.changes) == (True, True, ())
    # The old version read against lib1, the new one against lib2: the narrowing is seen, located in money.json.
    with extra_id_roots({SHARED: tmp_path / "lib1"}):
        old_ref = load_schema_file(old)
    with extra_id_roots({SHARED: tmp_path / "lib2"}):
        new_ref = load_schema_file(new)
    report = diff_schemas(
        old_ref.schema, new_ref.schema, old_resolver=old_ref.resolver, new_resolver=new_ref.resolver
    )  # fmt: skip
    assert (report.backward, report.forward) == (False, True)
    assert [c.code for c in report.changes] == ["minimum.tightened"]


def test_schema_diff_and_contract_lint_take_id_root_on_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "lib", _shared(0))
    _write(tmp_path / "v1", {"order.json": _order(SHARED + "money.json#/$defs/amount")})
    _write(tmp_path / "v2", {"order.json": _order(SHARED + "money")})  # no .json: the .json file serves it
    option = f"--id-root={SHARED}=lib"
    code, out, _ = cli(capsys, "schema", "diff", "v1/order.json", "v2/order.json", option, "--format", "json")
    assert code == 0
    assert (json.loads(out)["backward"], json.loads(out)["forward"]) == (True, False)  # money.json: any integer
    code, out, _ = cli(capsys, "contract", "lint", "v1/order.json", option, "--format", "json")
    assert (code, json.loads(out)["ok"]) == (0, True)
    code, out, _ = cli(capsys, "contract", "lint", "v1/order.json", "--format", "json")
    assert code == 2
    assert [p["code"] for p in json.loads(out)["problems"]] == ["schema.ref_remote"]
    code, _, err = cli(capsys, "schema", "diff", "v1/order.json", "v2/order.json", "--id-root", SHARED)
    assert code == 2
    assert "usage.id_root" in err
    assert "PREFIX=DIR" in err
    code, _, err = cli(capsys, "schema", "diff", "v1/order.json", "v2/order.json", "--id-root", f"{SHARED}=nowhere")
    assert code == 2
    assert "does not exist" in err


def test_a_whole_url_maps_to_one_file_of_another_name(tmp_path: Path) -> None:
    url = "https://raw.example.com/spec/Schemata/sarif-schema-2.1.0.json"
    _write(tmp_path, {"sarif-2.1.0.json": {"$id": url, "$defs": {"run": {"type": "object", "required": ["tool"]}}}})
    _write(tmp_path, {"external.json": {"properties": {"run": {"$ref": url + "#/$defs/run"}}}})
    ws = _workspace(tmp_path, f'{{ "{url}" = "sarif-2.1.0.json" }}')
    assert lint_paths([ws / "external.json"]).ok
    validator = runtime_validator(bundle(load_schema_file(ws / "external.json")))
    assert validator.is_valid({"run": {"tool": 1}})
    assert not validator.is_valid({"run": {}})


def test_a_missing_file_names_the_ref_its_pointer_and_every_lookup_tried(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws", f'{{ "{WWW_HOST}" = "schemas/json", "{WWW_HOST}v2/" = "v2" }}')
    (ws / "v2").mkdir()
    files = _catalog()
    files["package.json"]["properties"]["prettier"] = {"$ref": WWW_HOST + "v2/prettier"}
    _write(ws / "schemas" / "json", files)
    [problem] = lint_paths([ws / "schemas" / "json" / "package.json"]).problems
    assert problem.code == "schema.ref_unresolved"
    assert (problem.location.pointer, problem.location.line) == ("/properties/prettier/$ref", 7)
    assert f"{WWW_HOST}v2/prettier" in problem.message
    # The longest prefix first, then the shorter one, each with its .json neighbour and its origin.
    first, second = problem.message.index(f"'{WWW_HOST}v2/' = "), problem.message.index(f"'{WWW_HOST}' = ")
    assert first < second
    for directory in (ws / "v2", ws / "schemas" / "json" / "v2"):
        assert f"{directory / 'prettier'} or {directory / 'prettier.json'}" in problem.message
    assert "hive.toml [schemas] id_roots" in problem.message


def test_a_url_cannot_climb_out_of_its_mapped_directory(tmp_path: Path) -> None:
    _write(tmp_path / "lib", _shared(0))
    _write(tmp_path, {"secret.json": {"type": "string"}})
    _write(tmp_path / "v1", {"order.json": _order(SHARED + "../../secret.json")})
    with extra_id_roots({SHARED: tmp_path / "lib"}):
        [problem] = lint_paths([tmp_path / "v1" / "order.json"]).problems
    assert (problem.code, problem.location.pointer) == ("schema.ref_escape", "/properties/total/$ref")
    assert "id root" in problem.message


def test_the_command_line_comes_before_the_workspace(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws", f'{{ "{SHARED}" = "lib" }}')
    _write(ws / "lib", _shared(0))
    _write(tmp_path / "other", _shared(7))
    _write(ws, {"order.json": _order(SHARED + "money.json#/$defs/amount")})
    plain = runtime_validator(bundle(load_schema_file(ws / "order.json")))
    with extra_id_roots({SHARED: tmp_path / "other"}):
        overridden = runtime_validator(bundle(load_schema_file(ws / "order.json")))
    assert plain.is_valid({"total": 3})
    assert not overridden.is_valid({"total": 3})


def test_a_broken_schemas_table_is_an_error_naming_hive_toml_and_the_key(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "hive.toml").write_text('[workspace]\nname = "shop"\n\n[schemas]\nid_root = {}\n')
    _write(ws, {"order.json": _order(SHARED + "money.json")})
    with pytest.raises(InputError) as raised:
        load_schema_file(ws / "order.json")
    error = raised.value
    assert (error.code, error.location.file, error.location.pointer) == (
        "workspace.unknown_key",
        str(ws / "hive.toml"),
        "/schemas/id_root",
    )
    assert "did you mean 'id_roots'?" in (error.hint or "")


def test_a_neighbour_the_id_places_comes_first_and_the_id_root_fills_in(tmp_path: Path) -> None:
    host = "https://catalog.example.com/"
    foo = {"$id": host + "foo.json", "properties": {"x": {"$ref": "bar.json#/$defs/x"}}}
    _write(tmp_path / "a", {"foo.json": foo, "bar.json": {"$defs": {"x": {"type": "integer", "minimum": 0}}}})
    _write(tmp_path / "b", {"bar.json": {"$defs": {"x": {"type": "integer", "minimum": 5}}}})
    path = tmp_path / "a" / "foo.json"
    with extra_id_roots({host: tmp_path / "b"}):
        assert lint_paths([path]).ok
        beside = runtime_validator(bundle(load_schema_file(path)))
        (tmp_path / "a" / "bar.json").unlink()
        result = lint_paths([path])  # jsonschema-rs finds b/bar.json too, by the URL and by the file's own
        assert result.ok, result.problems
        mapped = runtime_validator(bundle(load_schema_file(path)))
    assert beside.is_valid({"x": 1})
    assert not mapped.is_valid({"x": 1})


def test_a_nested_relative_id_under_a_root_url_compiles_at_run_time(tmp_path: Path) -> None:
    # SchemaStore's older jekyll.json: definitions carrying "$id": "nullable-boolean", referred to by that name.
    schema = {
        "$schema": D7,
        "$id": JSON_HOST + "jekyll.json",
        "definitions": {"nb": {"$id": "nullable-boolean", "type": ["boolean", "null"]}},
        "properties": {"x": {"$ref": "nullable-boolean"}},
    }
    _write(tmp_path, {"jekyll.json": schema})
    result = lint_paths([tmp_path / "jekyll.json"])
    assert result.ok, result.problems
    validator = runtime_validator(bundle(load_schema_file(tmp_path / "jekyll.json")))
    assert validator.is_valid({"x": None})
    assert not validator.is_valid({"x": 1})
