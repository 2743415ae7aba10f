"""Every problem of every ``subhive.toml`` is reported by each command that reads the tree, at once, located,
with exit 2: a typo never makes a hive silently disappear."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from subhive.cli import main
from tests.kit import cli


@pytest.fixture
def broken_workspace(tmp_path: Path) -> Path:
    """Four hives: db with a misspelt key, web with a bad value, api whose TOML does not parse, ok valid."""
    root = tmp_path / "ws"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["init", str(root)]) == 0
        for name, kind in (("db", "db"), ("web", "custom"), ("api", "custom"), ("ok", "custom")):
            assert main(["new", name, "--kind", kind, "-C", str(root)]) == 0
    hives = root / "subhives"
    db = hives / "db" / "subhive.toml"
    db.write_text(db.read_text().replace('kind = "db"', 'kynd = "db"'))
    web = hives / "web" / "subhive.toml"
    web.write_text(web.read_text().replace("max_files = 200", "max_files = -3"))
    api = hives / "api" / "subhive.toml"
    api.write_text(api.read_text().replace('kind = "custom"', 'kind = "custom'))
    return root


def _line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def _expected(root: Path) -> list[tuple[str, str]]:
    """(file:line, code) of each problem, in the order the tree reports them (hives sorted by name)."""
    hives = root / "subhives"
    return [
        (f"{hives / 'api' / 'subhive.toml'}:{_line_of(hives / 'api' / 'subhive.toml', 'kind = ')}", "input.toml"),
        (f"{hives / 'db' / 'subhive.toml'}:{_line_of(hives / 'db' / 'subhive.toml', 'kynd')}", "hive.unknown_key"),
        (
            f"{hives / 'web' / 'subhive.toml'}:{_line_of(hives / 'web' / 'subhive.toml', 'max_files')}",
            "hive.budget_invalid",
        ),
    ]


def _reported(err: str) -> list[tuple[str, str]]:
    found = []
    for line in err.splitlines():
        if line.startswith("error: ") and "[" in line:
            where = line[len("error: ") :].split(" ", 1)[0]
            found.append((where.rstrip(":"), line.rsplit("[", 1)[1].rstrip("]")))
    return found


@pytest.mark.parametrize(
    "command", [["status"], ["codegen"], ["up", "--detach"], ["contract", "lint", "contracts"]], ids=" ".join
)
def test_every_manifest_problem_is_reported_with_file_and_line_and_exit_2(
    broken_workspace: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    monkeypatch.chdir(broken_workspace)
    code, _, err = cli(capsys, *command)
    assert code == 2, err
    assert "Traceback" not in err
    reported = _reported(err)
    for problem in _expected(broken_workspace):
        assert problem in reported, err
    assert "did you mean 'kind'?" in err
    # The misspelt key is one problem, not also a second "missing 'kind'".
    assert "hive.missing_key" not in err


def test_up_refuses_before_starting_anything(broken_workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _ = cli(capsys, "up", "--detach", "-C", str(broken_workspace))
    assert code == 2
    assert not (broken_workspace / ".subhive" / "up" / "supervisor.json").exists()


def test_status_json_lists_the_problems_beside_the_tree(
    broken_workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = cli(capsys, "status", "-C", str(broken_workspace), "--format", "json")
    assert code == 2
    report = json.loads(out)
    assert [h["name"] for h in report["hives"]] == ["ok"]  # the valid hive is still shown
    assert sorted({p["code"] for p in report["problems"]}) == ["hive.budget_invalid", "hive.unknown_key", "input.toml"]
    assert all(p["line"] >= 1 and p["file"].endswith("subhive.toml") for p in report["problems"])


def test_a_key_written_below_a_table_is_said_to_belong_above_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "ws"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["init", str(root)]) == 0
        assert main(["new", "db", "--kind", "custom", "-C", str(root)]) == 0
    manifest = root / "subhives" / "db" / "subhive.toml"
    manifest.write_text(manifest.read_text() + 'descripton = "late"\n')
    code, _, err = cli(capsys, "codegen", "-C", str(root))
    assert code == 2
    assert f"{manifest}:{len(manifest.read_text().splitlines())} /knowledge/descripton" in err
    assert "did you mean 'description'? it is a top-level key" in err


def test_a_valid_workspace_is_quiet(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "ws"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["init", str(root)]) == 0
        assert main(["new", "db", "--kind", "custom", "-C", str(root)]) == 0
    code, out, err = cli(capsys, "status", "-C", str(root), "--format", "json")
    assert code == 0, err
    assert json.loads(out)["problems"] == []
