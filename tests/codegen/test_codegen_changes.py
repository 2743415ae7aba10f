"""Codegen as the lock and the workspace change: what is regenerated, what is refused, and how."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from subhive.cli import main
from subhive.codegen import generate_stubs
from subhive.root_hive import RootHive
from subhive.root_hive._client import contract_files
from subhive.workspace import open_workspace
from tests.kit import rewrite_manifest


def _mtimes(root: Path, hive: str) -> dict[Path, int]:
    return {p: p.stat().st_mtime_ns for p in (root / "stubs" / hive).rglob("*") if p.is_file()}


def test_a_new_accepted_version_regenerates_only_the_hives_that_use_it(
    shop: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    untouched = {hive: _mtimes(shop, hive) for hive in ("api", "db")}
    directory = shop / "contracts" / "orders" / "1.2.0"
    shutil.copytree(shop / "contracts" / "orders" / "1.1.0", directory)
    manifest = directory / "contract.yaml"
    manifest.write_text(manifest.read_text().replace("version: 1.1.0", "version: 1.2.0"))
    engine = RootHive.open(shop)
    try:
        assert engine.propose("backend", contract_files(directory)).status == "accepted"
    finally:
        engine.close()

    assert main(["codegen", "--check", "-C", str(shop)]) == 1
    stale = capsys.readouterr().out
    assert "stubs/web/orders_v1" in stale
    assert "stubs/backend/orders_v1" in stale
    assert "stubs/api" not in stale
    assert "stubs/db" not in stale

    result = generate_stubs(open_workspace(shop))
    assert {Path(p).parts[1] for p in result.written} == {"web", "backend"}
    binding = json.loads((shop / "stubs/web/orders_v1/contract.json").read_text())
    assert binding["version"] == "1.2.0"
    assert {hive: _mtimes(shop, hive) for hive in ("api", "db")} == untouched


def test_a_contract_no_longer_consumed_loses_its_package_once_the_lock_lets_it_go(shop: Path) -> None:
    rewrite_manifest(shop, "web", consumes={"api_api": "^0.1"})
    kept = generate_stubs(open_workspace(shop))  # the lock still records web on orders: NATS grants follow it
    assert (shop / "stubs/web/orders_v1").is_dir()
    assert not [p for p in kept.removed if "orders_v1" in p]
    assert any("orders_v1 kept" in note for note in kept.notes)
    RootHive.open(shop).close()  # the root registers the manifest as it is now, and the lock follows
    result = generate_stubs(open_workspace(shop))
    assert not (shop / "stubs/web/orders_v1").exists()
    assert "stubs/web/orders_v1" in result.removed
    assert (shop / "stubs/web/api_api_v0_1").is_dir()


def test_a_requirement_the_lock_cannot_meet_is_an_error_naming_the_manifest(
    shop: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rewrite_manifest(shop, "web", consumes={"orders": "^2.0"})
    assert main(["codegen", "web", "-C", str(shop), "--format", "json"]) == 2
    data = json.loads(capsys.readouterr().out)
    problem = data["problems"][0]
    assert problem["code"] == "codegen.not_in_lock"
    assert problem["file"].endswith("subhives/web/subhive.toml")
    assert "1.1.0" in problem["message"]


def test_an_unknown_hive_is_an_error(shop: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["codegen", "nosuch", "-C", str(shop)]) == 2
    assert "no sub-hive named 'nosuch'" in capsys.readouterr().err


def test_an_edited_accepted_contract_is_refused_not_generated(shop: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.rmtree(shop / "stubs" / "backend")
    schema = shop / "contracts/orders/1.1.0/schemas.json"
    schema.write_text(schema.read_text().replace('"Order"', '"Order" '))
    assert main(["codegen", "backend", "-C", str(shop)]) == 2
    assert "lock.tampered" in capsys.readouterr().err
    assert not (shop / "stubs/backend/orders_v1").exists()


def test_an_unwritable_stubs_directory_is_a_clear_error(shop: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A file where the hive's package directory must go: no write can succeed, whoever runs it.
    shutil.rmtree(shop / "stubs" / "web")
    (shop / "stubs" / "web").write_text("in the way")
    assert main(["codegen", "web", "-C", str(shop)]) == 2
    err = capsys.readouterr().err
    assert "codegen.unwritable" in err
    assert "stubs/web" in err
    assert (shop / "stubs" / "web").read_text() == "in the way"


def test_an_operation_made_idempotent_reaches_the_stubs_binding(shop: Path) -> None:
    """``idempotent: true`` is an additive promise (1.2.0): the generated contract.json carries it, so the bus
    may send such a request again on a dropped connection; the operations without it say nothing new."""
    from subhive.runtime import ContractBinding

    directory = shop / "contracts" / "orders" / "1.2.0"
    shutil.copytree(shop / "contracts" / "orders" / "1.1.0", directory)
    manifest = directory / "contract.yaml"
    text = manifest.read_text().replace("version: 1.1.0", "version: 1.2.0")
    manifest.write_text(
        text.replace(
            "    description: Read one order by id.\n", "    description: Read one order by id.\n    idempotent: true\n"
        )
    )
    engine = RootHive.open(shop)
    try:
        assert engine.propose("backend", contract_files(directory)).status == "accepted"
    finally:
        engine.close()
    generate_stubs(open_workspace(shop))
    path = shop / "stubs/web/orders_v1/contract.json"
    operations = json.loads(path.read_text())["operations"]
    assert operations["get_order"]["idempotent"] is True
    assert "idempotent" not in operations["place_order"]
    assert ContractBinding.load(path).idempotent == frozenset({"get_order"})
