"""``subhive up --detach`` and ``subhive down`` against real processes: every process the supervisor
recorded runs while the tree is up and none is left after ``down`` (a supervisor killed with SIGKILL:
test_restart.py)."""

from __future__ import annotations

import json
from pathlib import Path

from subhive.up import UpLayout, pid_alive

from ._tree import HIVES, events, processes_of, recorded_pids, subhive, up


def test_down_after_up_leaves_no_process_behind(scaffolded_workspace: Path) -> None:
    workspace = scaffolded_workspace
    assert up(workspace).code == 0
    pids = recorded_pids(workspace)
    assert set(pids) == {"supervisor", "root", "nats", *HIVES}
    assert all(pid_alive(pid) for pid in pids.values()), pids
    # Nothing runs that the record does not name: down could not know about it.
    assert set(processes_of(workspace)) == set(pids.values())

    ran = subhive(workspace, "down")
    assert ran.code == 0, ran
    assert f"stopped {len(pids)} processes" in ran.out
    assert "killed" not in ran.err  # every process stopped when asked, none needed SIGKILL
    # down returns once the supervisor is gone, and the supervisor waits for its children: no grace period.
    assert [name for name, pid in pids.items() if pid_alive(pid)] == []
    assert processes_of(workspace) == {}
    assert json.loads(UpLayout(workspace).supervisor_file.read_text())["state"] == "stopped"
    assert events(workspace)[-1]["event"] == "stopped"

    again = subhive(workspace, "down")
    assert (again.code, again.out.strip()) == (0, "nothing is running in this workspace")


def test_down_when_nothing_ever_ran_says_so(scaffolded_workspace: Path) -> None:
    ran = subhive(scaffolded_workspace, "down")
    assert (ran.code, ran.out.strip(), ran.err) == (0, "nothing is running in this workspace", "")
    ran = subhive(scaffolded_workspace, "down", "--format", "json")
    assert (ran.code, json.loads(ran.out)) == (0, {"was_running": False, "stopped": [], "killed": []})
