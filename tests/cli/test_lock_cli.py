"""``status``, ``contract check`` and ``contract propose`` on a workspace whose contracts.lock disagrees with
what was accepted: each reports it (file, contract@version, both hashes, the fix), propose refuses with exit
2, and nothing rewrites the lock."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from subhive.cli import main
from subhive.root_hive import LOCK_FILE, RootHive
from subhive.workspace import init_workspace
from tests.kit import cli

REPO = Path(__file__).resolve().parents[2]
ORDERS = REPO / "contracts" / "orders"
FORGED = "sha256:" + "ab" * 32


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """orders 1.0.0 accepted; drafts of 1.1.0 ready to propose; no root running."""
    monkeypatch.delenv("SUBHIVE_ROOT", raising=False)
    ws = tmp_path / "shop"
    init_workspace(ws)
    for version in ("1.0.0", "1.1.0"):
        shutil.copytree(ORDERS / version, ws / "drafts" / "orders" / version)
    with RootHive.open(ws) as root:
        root.register_hive("backend", kind="backend")
    assert main(["contract", "propose", str(ws / "drafts" / "orders" / "1.0.0")]) == 0
    return ws


def _accepted_hash(ws: Path) -> str:
    return str(json.loads((ws / LOCK_FILE).read_text())["entries"][0]["hash"])


def _forge(ws: Path) -> bytes:
    path = ws / LOCK_FILE
    path.write_text(path.read_text().replace(_accepted_hash(ws), FORGED))
    return path.read_bytes()


def test_propose_refuses_an_edited_hash_with_exit_2_and_leaves_the_lock_alone(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    real = _accepted_hash(workspace)
    forged = _forge(workspace)
    code, _out, err = cli(capsys, "contract", "propose", str(workspace / "drafts" / "orders" / "1.1.0"))
    assert code == 2
    assert "[lock.hash_edited]" in err
    assert "orders@1.0.0" in err
    assert FORGED[:19] in err
    assert real[:19] in err
    assert "git checkout -- contracts.lock" in err
    assert "Traceback" not in err
    assert (workspace / LOCK_FILE).read_bytes() == forged
    assert not (workspace / "contracts" / "orders" / "1.1.0").exists()


def test_propose_refuses_while_an_accepted_version_was_edited_in_place(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    accepted = workspace / "contracts" / "orders" / "1.0.0"
    manifest = accepted / "contract.yaml"
    manifest.write_text(manifest.read_text() + "\n# edited after acceptance\n")
    code, out, _err = cli(
        capsys, "contract", "propose", str(workspace / "drafts" / "orders" / "1.1.0"), "--format", "json"
    )
    assert code == 2
    body = json.loads(out)
    assert body["error"] == "lock.inconsistent"
    assert [(p["code"], p["file"]) for p in body["problems"]] == [("lock.tampered", str(accepted))]


def test_status_reports_the_edited_hash_in_text_and_json(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    real = _accepted_hash(workspace)
    forged = _forge(workspace)
    code, out, _ = cli(capsys, "status", "-C", str(workspace), "--format", "json")
    assert code == 0
    lock = json.loads(out)["lock"]
    assert lock["ok"] is False
    [problem] = lock["problems"]
    assert (problem["code"], problem["file"], problem["line"]) == ("lock.hash_edited", str(workspace / LOCK_FILE), 3)
    assert real in problem["hint"]
    code, out, _ = cli(capsys, "status", "-C", str(workspace))
    assert code == 0
    assert "contracts.lock disagrees" in out
    assert "orders@1.0.0" in out
    assert "fix:" in out
    assert (workspace / LOCK_FILE).read_bytes() == forged  # status opened the engine: still not rewritten
    _restore(workspace, real)
    code, out, _ = cli(capsys, "status", "-C", str(workspace), "--format", "json")
    assert json.loads(out)["lock"] == {"ok": True, "problems": []}


def _restore(ws: Path, real: str) -> None:
    path = ws / LOCK_FILE
    path.write_text(path.read_text().replace(FORGED, real))


def test_contract_check_against_an_edited_accepted_version_says_so_with_exit_2(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    accepted = workspace / "contracts" / "orders" / "1.0.0"
    draft = workspace / "drafts" / "orders" / "1.1.0"
    code, _, _ = cli(capsys, "contract", "check", str(draft), "--against", str(accepted))
    assert code == 0
    (accepted / "contract.yaml").write_text((accepted / "contract.yaml").read_text() + "\n# edited\n")
    code, out, err = cli(capsys, "contract", "check", str(draft), "--against", str(accepted))
    assert code == 2
    assert "compatible" in out  # the check's own answer is still shown
    assert "[lock.tampered]" in err
    assert "orders@1.0.0" in err
    assert "git checkout -- contracts/orders/1.0.0" in err


def test_a_running_root_gets_no_proposal_while_the_lock_is_edited_and_keeps_the_edit(
    workspace: Path, running_root: str, capsys: pytest.CaptureFixture[str]
) -> None:
    real = _accepted_hash(workspace)
    forged = _forge(workspace)
    code, out, _ = cli(capsys, "status", "-C", str(workspace), "--format", "json")
    assert [p["code"] for p in json.loads(out)["lock"]["problems"]] == ["lock.hash_edited"]  # the root's record
    code, _, err = cli(capsys, "contract", "propose", str(workspace / "drafts" / "orders" / "1.1.0"))
    assert code == 2
    assert "[lock.hash_edited]" in err
    assert real[:19] in err
    assert (workspace / LOCK_FILE).read_bytes() == forged
    _restore(workspace, real)
    code, out, _ = cli(capsys, "contract", "propose", str(workspace / "drafts" / "orders" / "1.1.0"), "-f", "json")
    assert (code, json.loads(out)["status"]) == (0, "accepted")
