"""`subhive init` and `subhive new` on the command line: exit codes, output formats, errors without tracebacks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from subhive.workspace import load_manifest
from tests.kit import cli
from tests.workspace._helpers import snapshot


@pytest.mark.parametrize("command", ["init", "new"])
def test_help_has_an_example(capsys: pytest.CaptureFixture[str], command: str) -> None:
    code, out, _ = cli(capsys, command, "--help")
    assert code == 0
    assert f"Example: subhive {command}" in out


def test_top_level_help_lists_init_and_new(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = cli(capsys, "--help")
    assert "init" in out
    assert "new" in out


def test_init_then_new_from_inside_the_workspace(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = cli(capsys, "init", str(tmp_path / "shop"))
    assert code == 0
    assert "created workspace 'shop'" in out
    assert "hive.toml" in out
    monkeypatch.chdir(tmp_path / "shop" / "subhives")
    code, out, err = cli(capsys, "new", "db", "--kind", "db", "--description", "Keeps orders.")
    assert code == 0
    assert "created sub-hive 'db' (db) under the root hive" in out
    assert "subhives/db/subhive.toml" in out
    assert "cd subhives/db && python -m pytest" in err
    manifest = load_manifest(tmp_path / "shop" / "subhives" / "db")
    assert manifest.description == "Keeps orders."
    code, _, _ = cli(capsys, "new", "web", "-k", "ui", "--parent", "db")
    assert code == 0
    assert load_manifest(tmp_path / "shop" / "subhives" / "web").parent == "db"


def test_new_dry_run_json_lists_the_planned_files_and_writes_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert cli(capsys, "init", str(tmp_path), "--name", "shop")[0] == 0
    before = snapshot(tmp_path)
    code, out, err = cli(capsys, "new", "db", "--kind", "db", "-C", str(tmp_path), "--dry-run", "--format", "json")
    assert code == 0
    assert snapshot(tmp_path) == before
    report = json.loads(out)
    assert report["dry_run"] is True
    assert report["root"] == str(tmp_path)
    paths = [f["path"] for f in report["files"]]
    assert "subhives/db/subhive.toml" in paths
    assert "contracts/db_storage/0.1.0/contract.yaml" in paths
    assert all(f["action"] == "create" for f in report["files"])
    manifest = next(f for f in report["files"] if f["path"] == "subhives/db/subhive.toml")
    assert 'name = "db"' in manifest["content"]
    assert manifest["bytes"] == len(manifest["content"].encode())
    # The real run writes exactly what the dry run showed.
    assert cli(capsys, "new", "db", "--kind", "db", "-C", str(tmp_path))[0] == 0
    for planned in report["files"]:
        assert (tmp_path / planned["path"]).read_text() == planned["content"]
    assert "nothing" not in err


def test_init_dry_run_writes_nothing(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = cli(capsys, "init", str(tmp_path / "shop"), "--dry-run")
    assert code == 0
    assert not (tmp_path / "shop").exists()
    assert "would create workspace 'shop'" in out
    assert "hive.toml" in out
    assert "nothing was written" in err


def test_outside_a_workspace_exits_2_naming_the_directory(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    before = snapshot(tmp_path)
    code, _, err = cli(capsys, "new", "db", "--kind", "db")
    assert code == 2
    assert str(tmp_path) in err
    assert "subhive init" in err
    assert "Traceback" not in err
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["new", "Bad-Name", "--kind", "db"], "hive.name_invalid"),
        (["new", "db", "--kind", "db"], "hive.exists"),
        (["new", "web", "--kind", "ui", "--parent", "nowhere"], "hive.parent_unknown"),
    ],
)
def test_bad_input_exits_2_with_the_code_and_changes_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], expected: str
) -> None:
    assert cli(capsys, "init", str(tmp_path), "--name", "shop")[0] == 0
    assert cli(capsys, "new", "db", "--kind", "db", "-C", str(tmp_path))[0] == 0
    before = snapshot(tmp_path)
    code, out, err = cli(capsys, *argv, "-C", str(tmp_path), "--format", "json")
    assert code == 2
    assert json.loads(out)["error"] == expected
    assert "hint" in err
    assert snapshot(tmp_path) == before


def test_an_unknown_or_missing_kind_exits_2_listing_the_kinds(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert cli(capsys, "init", str(tmp_path), "--name", "shop")[0] == 0
    before = snapshot(tmp_path)
    code, _, err = cli(capsys, "new", "web", "--kind", "frontend", "-C", str(tmp_path))
    assert code == 2
    assert "unknown kind 'frontend'" in err
    assert "ui, backend, db, custom" in err
    code, _, err = cli(capsys, "new", "web", "-C", str(tmp_path))
    assert code == 2
    assert "--kind ui|backend|db|custom" in err
    assert snapshot(tmp_path) == before


def test_init_twice_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert cli(capsys, "init", str(tmp_path), "--name", "shop")[0] == 0
    code, _, err = cli(capsys, "init", str(tmp_path))
    assert code == 2
    assert "already a subhive workspace" in err
