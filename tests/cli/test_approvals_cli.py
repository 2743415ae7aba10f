"""``subhive approvals approve|reject``: what they print (the approval's id, what it is about, the outcome)
and their exit codes, on the workspace and against a running root. The same decision twice is a no-op
(exit 0); the opposite decision is refused (exit 1, ``approval.decided``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from subhive.cli import main
from subhive.root_hive import RootHive
from subhive.workspace import init_workspace
from tests.kit import cli

REPO = Path(__file__).resolve().parents[2]
ORDERS = REPO / "contracts" / "orders"


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """orders 1.0.0 accepted, 2.0.0 (breaking) pending as p-2; no root runs."""
    monkeypatch.delenv("SUBHIVE_ROOT", raising=False)
    ws = tmp_path / "shop"
    init_workspace(ws)
    for version in ("1.0.0", "2.0.0"):
        shutil.copytree(ORDERS / version, ws / "drafts" / "orders" / version)
    with RootHive.open(ws) as root:
        root.register_hive("backend", kind="backend")
        root.register_hive("ui", kind="ui")
        root.declare_requirement("ui", "orders", "^1.0")
    for version, code in (("1.0.0", 0), ("2.0.0", 1)):
        assert main(["contract", "propose", str(ws / "drafts" / "orders" / version), "--format", "json"]) == code
    return ws


def _pending(ws: Path, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    code, out, _ = cli(capsys, "approvals", "list", "-C", str(ws), "--format", "json")
    assert code == 0
    (approval,) = json.loads(out)["approvals"]
    return str(approval["id"])


def test_approve_prints_the_id_and_outcome_and_again_changes_nothing(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = str(workspace)
    pid = _pending(workspace, capsys)
    code, out, err = cli(capsys, "approvals", "approve", pid, "-C", ws)
    assert code == 0, err
    assert out.startswith(f"{pid}: approved: orders 2.0.0 accepted")

    code, out, err = cli(capsys, "approvals", "approve", pid, "-C", ws)
    assert code == 0, err
    assert out.startswith(f"{pid}: already approved on ")
    assert out.rstrip().endswith("orders 2.0.0; nothing changed")

    code, out, _ = cli(capsys, "approvals", "approve", pid, "-C", ws, "--format", "json")
    assert code == 0
    assert {k: json.loads(out)[k] for k in ("id", "status", "unchanged")} == {
        "id": pid,
        "status": "approved",
        "unchanged": True,
    }

    code, _, err = cli(capsys, "approvals", "reject", pid, "--reason", "too late", "-C", ws)
    assert code == 1
    assert f"{pid} was already approved on " in err
    assert "[approval.decided]" in err
    assert "propose a newer version" in err
    assert "Traceback" not in err


def test_reject_prints_the_id_and_subject_and_again_changes_nothing(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = str(workspace)
    pid = _pending(workspace, capsys)
    code, out, err = cli(capsys, "approvals", "reject", pid, "--reason", "keep the field", "-C", ws)
    assert code == 0, err
    assert out.splitlines() == [f"{pid}: rejected: orders 2.0.0; nothing was published", "  reason: keep the field"]

    code, out, _ = cli(capsys, "approvals", "reject", pid, "--reason", "still no", "-C", ws)
    assert code == 0
    assert "already rejected" in out

    code, _, err = cli(capsys, "approvals", "approve", pid, "-C", ws)
    assert code == 1
    assert "[approval.decided]" in err
    assert "propose the version again" in err


def test_a_repair_is_rejected_by_its_id_and_what_failed(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with RootHive.open(workspace) as root:
        repair = root.propose_repair(
            "backend",
            code="handler.failed",
            message="KeyError: 'sku'",
            contract="orders",
            operation="place_order",
            count=2,
        )
    code, out, err = cli(capsys, "approvals", "reject", repair.id, "--reason", "fixed", "-C", str(workspace))
    assert code == 0, err
    assert out.startswith(f"{repair.id}: rejected: repair handler.failed x2 at orders/place_order")
    assert "None" not in out


def test_an_unknown_id_exits_2(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "approvals", "approve", "p-999", "-C", str(workspace))
    assert code == 2
    assert "[approval.unknown]" in err


def test_the_same_rules_hold_against_a_running_root(
    workspace: Path, running_root: str, capsys: pytest.CaptureFixture[str]
) -> None:
    ws = str(workspace)
    pid = _pending(workspace, capsys)
    assert cli(capsys, "approvals", "approve", pid, "-C", ws)[0] == 0
    code, out, _ = cli(capsys, "approvals", "approve", pid, "-C", ws)
    assert (code, "already approved" in out) == (0, True)
    code, _, err = cli(capsys, "approvals", "reject", pid, "--reason", "no", "-C", ws)
    assert (code, "[approval.decided]" in err) == (1, True)


@pytest.mark.parametrize("where", ["workspace", "running root"])
def test_who_decided_is_recorded_and_shown(
    workspace: Path, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    """``--by`` names who decides (default: the login name); over gRPC too (root-hive 1.5.0)."""
    if where == "running root":
        request.getfixturevalue("running_root")
    ws = str(workspace)
    pid = _pending(workspace, capsys)
    assert cli(capsys, "approvals", "approve", pid, "--by", "ada", "-C", ws)[0] == 0
    code, out, _ = cli(capsys, "approvals", "show", pid, "-C", ws, "--format", "json")
    assert code == 0
    assert json.loads(out)["decided_by"] == "ada"
    code, out, _ = cli(capsys, "approvals", "show", pid, "-C", ws)
    assert "decided by ada" in out
