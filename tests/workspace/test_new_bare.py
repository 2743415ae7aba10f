"""``subhive new NAME --kind K --bare``: a hive that provides and consumes nothing yet, whatever its kind. It
is valid, its starter test passes, and codegen and status take it as it is."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from subhive.workspace import load_manifest
from tests.kit import cli


@pytest.mark.parametrize("kind", ["ui", "backend", "db"])
def test_a_bare_hive_provides_and_consumes_nothing_and_works(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SUBHIVE_ROOT", raising=False)
    root = tmp_path / "ws"
    assert cli(capsys, "init", str(root))[0] == 0
    code, out, err = cli(capsys, "new", "solo", "--kind", kind, "--bare", "-C", str(root))
    assert code == 0, err
    assert "contracts/" not in out  # no draft
    assert f"created sub-hive 'solo' ({kind}) under the root hive" in out
    assert "Traceback" not in err

    manifest = load_manifest(root / "subhives" / "solo")
    assert (manifest.kind.value, manifest.provides, manifest.consumes) == (kind, (), ())
    assert sorted(p.name for p in (root / "contracts").iterdir()) == ["README.md"]

    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=root / "subhives" / "solo",
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert "5 passed" in tests.stdout

    assert cli(capsys, "codegen", "-C", str(root))[0] == 0
    code, out, err = cli(capsys, "status", "-C", str(root), "--format", "json")
    assert code == 0, err
    (hive,) = json.loads(out)["hives"]
    assert (hive["name"], hive["provides"], hive["consumes"]) == ("solo", [], [])


def test_without_bare_a_ui_consumes_its_default(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "ws"
    assert cli(capsys, "init", str(root))[0] == 0
    assert cli(capsys, "new", "web", "--kind", "ui", "-C", str(root))[0] == 0
    assert [r.contract for r in load_manifest(root / "subhives" / "web").consumes] == ["backend_api"]
