"""``subhive root|approvals|status|watch|contract propose|contract list`` against a real root process, and
the same commands on the workspace directly when no root runs."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from subhive.cli import main
from subhive.root_hive import RootHive
from subhive.root_hive._service import SERVICE_FILE
from subhive.workspace import init_workspace
from tests.kit import cli

REPO = Path(__file__).resolve().parents[2]
ORDERS = REPO / "contracts" / "orders"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "shop"
    init_workspace(ws)
    for version in ("1.0.0", "1.1.0", "2.0.0"):
        shutil.copytree(ORDERS / version, ws / "drafts" / "orders" / version)
    with RootHive.open(ws) as root:  # hives register with the root; the CLI has no command for it
        root.register_hive("backend", kind="backend")
        root.register_hive("ui", kind="ui")
        root.declare_requirement("ui", "orders", "^1.0")
    return ws


def test_without_a_root_the_commands_run_the_engine_on_the_workspace(
    workspace: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SUBHIVE_ROOT", raising=False)
    drafts = workspace / "drafts" / "orders"
    code, out, _ = cli(capsys, "contract", "propose", str(drafts / "1.0.0"), "--format", "json")
    assert code == 0
    assert json.loads(out)["status"] == "accepted"
    code, out, err = cli(capsys, "contract", "propose", str(drafts / "2.0.0"), "--format", "json")
    assert code == 1  # waits for a human
    pending = json.loads(out)
    assert pending["status"] == "pending"
    assert "approvals show" in err
    code, out, _ = cli(capsys, "approvals", "list", "-C", str(workspace), "--format", "json")
    assert [a["id"] for a in json.loads(out)["approvals"]] == [pending["id"]]
    code, out, _ = cli(capsys, "approvals", "approve", pending["id"], "-C", str(workspace), "--format", "json")
    assert code == 0
    assert json.loads(out)["status"] == "accepted"
    code, out, _ = cli(capsys, "approvals", "list", "-C", str(workspace), "--format", "json")
    assert json.loads(out)["approvals"] == []
    code, out, _ = cli(capsys, "approvals", "list", "--status", "all", "-C", str(workspace), "--format", "json")
    assert [(a["id"], a["status"]) for a in json.loads(out)["approvals"]] == [(pending["id"], "approved")]
    code, out, _ = cli(capsys, "contract", "list", "-C", str(workspace), "--format", "json")
    versions = {v["version"]: v["status"] for c in json.loads(out)["contracts"] for v in c["versions"]}
    assert versions == {"1.0.0": "active", "2.0.0": "active"}


def test_a_pending_proposal_is_a_state_not_an_error_and_says_why_once(
    workspace: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SUBHIVE_ROOT", raising=False)
    drafts = workspace / "drafts" / "orders"
    assert cli(capsys, "contract", "propose", str(drafts / "1.0.0"))[0] == 0
    code, out, err = cli(capsys, "contract", "propose", str(drafts / "2.0.0"))
    assert code == 1  # documented: not accepted (yet), so a script does not go on as if it were
    assert "orders 2.0.0: pending (proposal.pending_breaking, proposal p-2)" in out
    assert out.count("breaks 1.0.0") == 1
    assert "waits for approval" not in out
    assert "error" not in err.lower()
    assert err.strip() == "next: a person decides: subhive approvals show p-2"


def test_an_invalid_proposal_exits_2_with_located_problems(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    draft = workspace / "drafts" / "orders" / "1.0.0"
    (draft / "schemas.json").write_text("{ not json")
    code, _, err = cli(capsys, "contract", "propose", str(draft))
    assert code == 2
    assert "schemas.json" in err
    assert "Traceback" not in err


def test_the_commands_talk_to_a_running_root(
    workspace: Path, running_root: str, capsys: pytest.CaptureFixture[str]
) -> None:
    drafts = workspace / "drafts" / "orders"
    ws = str(workspace)
    assert json.loads((workspace / SERVICE_FILE).read_text())["address"] == running_root
    code, out, _ = cli(capsys, "contract", "propose", str(drafts / "1.0.0"), "-f", "json")
    assert (code, json.loads(out)["status"]) == (0, "accepted")
    code, out, _ = cli(capsys, "contract", "propose", str(drafts / "1.1.0"), "-f", "json")
    assert (code, json.loads(out)["status"]) == (0, "accepted")
    # Relabel the breaking 2.0.0 as 1.2.0: a dishonest bump is refused with the offending changes (exit 1).
    dishonest = drafts / "1.2.0"
    shutil.copytree(drafts / "2.0.0", dishonest)
    manifest = dishonest / "contract.yaml"
    manifest.write_text(manifest.read_text().replace("2.0.0", "1.2.0"))
    code, out, err = cli(capsys, "contract", "propose", str(dishonest))
    assert code == 1
    assert "major" in err
    code, out, _ = cli(capsys, "contract", "propose", str(drafts / "2.0.0"), "-f", "json")
    assert (code, json.loads(out)["status"]) == (1, "pending")
    code, out, _ = cli(capsys, "approvals", "reject", json.loads(out)["id"], "--reason", "not now", "-C", ws)
    assert code == 0
    code, out, _ = cli(capsys, "approvals", "list", "-C", ws, "-f", "json")
    assert json.loads(out)["approvals"] == []
    code, out, _ = cli(capsys, "approvals", "list", "--status", "all", "-C", ws, "-f", "json")
    assert [a["status"] for a in json.loads(out)["approvals"]] == ["rejected"]
    code, _, err = cli(capsys, "approvals", "list", "--status", "bogus", "-C", ws)
    assert code == 2
    assert "bogus" in err

    code, out, _ = cli(capsys, "status", "-C", ws, "-f", "json")
    tree = {h["name"]: h for h in json.loads(out)["hives"]}
    assert tree["backend"]["provides"] == ["orders"]
    assert tree["ui"]["consumes"][0]["satisfied_by"] == "1.1.0"

    code, out, _ = cli(capsys, "watch", "-C", ws, "--after", "0", "--count", "5", "-f", "json")
    frames = [json.loads(line) for line in out.splitlines()]
    assert [f["seq"] for f in frames] == [1, 2, 3, 4, 5]
    code, out, _ = cli(capsys, "watch", "-C", ws, "--after", "3", "--count", "2", "-f", "json")
    assert [json.loads(line)["seq"] for line in out.splitlines()] == [4, 5]

    code, out, _ = cli(capsys, "contract", "list", "orders", "-C", ws)
    assert code == 0
    assert "1.1.0" in out

    code, _, err = cli(capsys, "approvals", "show", "p-404", "-C", ws)
    assert code == 2
    assert "p-404" in err


def test_an_explicit_root_that_does_not_answer_is_an_error(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "status", "-C", str(workspace), "--root", "127.0.0.1:1")
    assert code == 2
    assert "root.unavailable" in err


def test_propose_uses_the_providers_token_file_written_when_the_root_registered_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SUBHIVE_ROOT", raising=False)
    monkeypatch.delenv("SUBHIVE_TOKEN", raising=False)
    ws = tmp_path / "shop"
    init_workspace(ws)
    assert main(["new", "backend", "--kind", "backend", "-C", str(ws)]) == 0  # the orders contract's provider
    capsys.readouterr()
    for version in ("1.0.0", "1.1.0"):
        shutil.copytree(ORDERS / version, ws / "drafts" / "orders" / version)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from subhive.cli import main; sys.exit(main())",
            "root",
            "--format",
            "json",
            "-C",
            str(ws),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else "no output"
        address = json.loads(line)["address"]
        token_file = ws / ".subhive" / "tokens" / "backend.token"
        assert token_file.is_file()  # the root registered the workspace's hive when it opened
        code, out, _ = cli(
            capsys,
            "contract",
            "propose",
            str(ws / "drafts" / "orders" / "1.0.0"),
            "--root",
            address,
            "--format",
            "json",
        )
        assert code == 0
        assert json.loads(out)["status"] == "accepted"
        # The file is what propose sends: a stale token there is refused, not replaced by the admin's.
        token_file.write_text("stale-token\n")
        code, _, err = cli(
            capsys,
            "contract",
            "propose",
            str(ws / "drafts" / "orders" / "1.1.0"),
            "--root",
            address,
            "--format",
            "json",
        )
        assert code != 0
        assert "auth.unauthenticated" in err
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def test_status_and_down_name_a_root_a_person_started(
    workspace: Path, running_root: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`subhive root` is not `subhive up`'s: status said "not running" while it served, and down said "nothing is
    running". Both now name it, and down leaves it alone (the person may be using it)."""
    pid = json.loads((workspace / SERVICE_FILE).read_text())["pid"]
    code, out, _ = cli(capsys, "status", "-C", str(workspace))
    assert code == 0
    assert f"serving on {running_root}" in " ".join(out.split())
    assert f"pid {pid}" in out
    code, out, _ = cli(capsys, "down", "-C", str(workspace))
    assert code == 0
    said = " ".join(out.split())
    assert "a root started with `subhive root` serves this workspace" in said
    assert f"kill {pid}" in said
    os.kill(pid, 0)  # still running: the fixture stops it and checks it stops cleanly
