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

from ._fixtures import make_workspace

REPO = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[2])
    from subhive.root_hive import RootHive
    from tests.root_hive._fixtures import simple_files

    root = RootHive.open(Path(sys.argv[1]))
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


def _run_and_kill(workspace: Path, acks_before_kill: int, prefix: str = "h", group: int = 1) -> list[dict[str, str]]:
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(workspace), str(REPO), prefix, str(group)],
                             stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, cwd=REPO)
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


@pytest.mark.parametrize("group", [1, 7], ids=["call_by_call", "group_commits"])
def test_sigkill_under_load_loses_nothing_acknowledged(tmp_path: Path, group: int) -> None:
    workspace = make_workspace(tmp_path)
    acks = _run_and_kill(workspace, acks_before_kill=60, group=group)
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
