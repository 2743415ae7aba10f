"""Killing a real root process with SIGKILL mid-load loses nothing it acknowledged.

The child opens the engine on a workspace and loops: register a hive, propose a contract for it, and every
fifth hive propose a breaking major (a pending approval), several of those calls per group commit
(``RootHive.batch()``). Once a batch has ended (its records fsynced) it prints an ``ack`` line per call;
the parent kills it with SIGKILL at an arbitrary point under load, reopens the workspace, and checks every
acknowledged registration, acceptance and pending approval is there, with the lock and files agreeing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from subhive.root_hive import RootHive, contract_hash
from subhive.semver import Version
from tests.kit import make_workspace

from ._fixtures import simple_files

REPO = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[2])
    from subhive.root_hive import RootHive
    from tests.root_hive._fixtures import simple_files

    root = RootHive.open(Path(sys.argv[1]))
    if sys.argv[5] == "background":  # as the service runs it: directories written after the acknowledgement
        root.write_files_in_background()
    group = int(sys.argv[4])  # calls per group commit; their acks are printed only once the batch has ended
    def step(i, acks):
        name = f"{sys.argv[3]}{i}"
        token = root.register_hive(name).token
        acks.append(dict(kind="registered", name=name, token=token))
        files = simple_files(f"c{name}", "1.0.0", name)
        outcome = root.propose(name, files)
        acks.append(dict(kind=outcome.status, id=outcome.id, contract=f"c{name}", version="1.0.0"))
        if i % 5 == 0:
            breaking = simple_files(f"c{name}", "2.0.0", name).copy()
            breaking["event.json"] = b'{"type": "object", "properties": {"at": {"type": "integer"}}}'
            outcome = root.propose(name, breaking)
            acks.append(dict(kind=outcome.status, id=outcome.id, contract=f"c{name}", version="2.0.0"))
    i = 0
    while True:
        acks = []
        with root.batch():
            for _ in range(group):
                step(i, acks)
                i += 1
        for data in acks:
            print(json.dumps(data), flush=True)
""")


def _run_and_kill(
    workspace: Path, acks_before_kill: int, prefix: str = "h", group: int = 1, files: str = "background"
) -> list[dict[str, str]]:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(workspace), str(REPO), prefix, str(group), files],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
    )
    acks: list[dict[str, str]] = []
    assert child.stdout is not None
    try:
        while len(acks) < acks_before_kill:
            line = child.stdout.readline()
            assert line, child.stderr.read().decode() if child.stderr else "child exited"
            acks.append(json.loads(line))
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    # Lines the child printed before it died were acknowledged too.
    acks.extend(json.loads(line) for line in child.stdout.read().splitlines() if line.strip())
    child.stdout.close()
    if child.stderr:
        child.stderr.close()
    return acks


def _check_acknowledged(root: RootHive, workspace: Path, acks: list[dict[str, str]]) -> None:
    for ack in acks:
        if ack["kind"] == "registered":
            assert root.authenticate(ack["token"]) == ack["name"]
        elif ack["kind"] == "accepted":
            entry = root.lock.get(ack["contract"], Version.parse(ack["version"]))
            assert entry is not None
            directory = workspace / "contracts" / ack["contract"] / ack["version"]
            assert contract_hash(directory) == entry.hash
        else:
            assert ack["kind"] == "pending"
            assert root.approval(ack["id"]).status == "pending"
            assert root.pending_files(ack["id"])  # the proposed files survived too
    assert root.verify() == []


@pytest.mark.parametrize("files", ["in_batch", "background"])
@pytest.mark.parametrize("group", [1, 7], ids=["call_by_call", "group_commits"])
def test_sigkill_under_load_loses_nothing_acknowledged(tmp_path: Path, group: int, files: str) -> None:
    workspace = make_workspace(tmp_path)
    acks = _run_and_kill(workspace, acks_before_kill=60, group=group, files=files)
    assert sum(a["kind"] == "pending" for a in acks) >= 3  # the load really exercised pending approvals

    root = RootHive.open(workspace)
    _check_acknowledged(root, workspace, acks)
    # The restarted root carries on: a pending approval from before the kill can be approved.
    first_pending = next(a for a in acks if a["kind"] == "pending")
    outcome = root.approve(first_pending["id"], admin_token=root.admin_token())
    assert outcome.status == "accepted"
    root.close()


def test_repeated_kills_keep_every_generations_acknowledgements(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path)
    acks: list[dict[str, str]] = []
    for generation, count in enumerate((7, 23, 11)):
        acks += _run_and_kill(workspace, acks_before_kill=count, prefix=f"g{generation}_", group=1 + generation * 3)
        root = RootHive.open(workspace)
        _check_acknowledged(root, workspace, acks)
        root.close()
    # Proposal ids stay unique across lives: a restarted root never reuses one it acknowledged.
    ids = [a["id"] for a in acks if a["kind"] != "registered"]
    assert len(ids) == len(set(ids))


def test_a_kill_between_acknowledgement_and_directory_write_loses_no_directory(tmp_path: Path) -> None:
    """Acknowledged after the log fsync alone: directories that were never written come back from the log."""
    workspace = make_workspace(tmp_path)
    # Regular files where the contracts' directories must go: every directory write fails (as a crash right
    # after the acknowledgement would leave it), while the log fsync and so the acknowledgements go on.
    contracts = workspace / "contracts"
    contracts.mkdir(exist_ok=True)
    blockers = [contracts / f"ck{i}" for i in range(12)]
    for blocker in blockers:
        blocker.write_bytes(b"not a directory")
    acks = _run_and_kill(workspace, acks_before_kill=20, prefix="k", group=3)
    accepted = [a for a in acks if a["kind"] == "accepted"]
    assert len(accepted) >= 6
    for ack in accepted:
        assert (contracts / ack["contract"]).is_file()  # nothing was written before the kill
    for blocker in blockers:
        blocker.unlink()

    root = RootHive.open(workspace)
    for ack in accepted:
        entry = root.lock.get(ack["contract"], Version.parse(ack["version"]))
        assert entry is not None
        directory = contracts / ack["contract"] / ack["version"]
        files = simple_files(ack["contract"], ack["version"], ack["contract"][1:])
        assert directory.is_dir()
        assert contract_hash(directory) == entry.hash == contract_hash(files)
    _check_acknowledged(root, workspace, acks)
    assert not list(contracts.glob("*/.*.tmp"))  # no half-written temporary left behind
    # A restored directory edited afterwards is reported as tampered, not silently rewritten.
    first = contracts / accepted[0]["contract"] / "1.0.0" / "contract.yaml"
    root.close()
    first.write_bytes(first.read_bytes() + b"# edited\n")
    again = RootHive.open(workspace)
    assert [p.code for p in again.verify()] == ["lock.tampered"]
    assert b"# edited" in first.read_bytes()
    again.close()
