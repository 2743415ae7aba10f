"""``subhive up --detach`` and ``subhive down`` against real processes: every process the supervisor
recorded runs while the tree is up and none is left after ``down``, even when the supervisor itself was
killed with SIGKILL and could not stop its children."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from subhive.up import UpLayout, pid_alive

from ._tree import HIVES, events, processes_of, recorded_pids, subhive, up, wait_for


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


def test_down_kills_every_child_of_a_supervisor_killed_with_sigkill(scaffolded_workspace: Path) -> None:
    workspace = scaffolded_workspace
    assert up(workspace).code == 0
    pids = recorded_pids(workspace)
    os.kill(pids["supervisor"], signal.SIGKILL)
    wait_for(lambda: not pid_alive(pids["supervisor"]), "the supervisor to die", timeout=10)
    children = {name: pid for name, pid in pids.items() if name != "supervisor"}
    # Each child has its own session: the supervisor's death leaves them running, which is what down is for.
    assert all(pid_alive(pid) for pid in children.values()), children

    ran = subhive(workspace, "down", "--format", "json")
    assert ran.code == 0, ran
    report = json.loads(ran.out)
    assert report["was_running"] is False
    assert sorted(report["killed"]) == sorted(children)
    assert report["stopped"] == ["supervisor"]
    wait_for(lambda: not any(pid_alive(pid) for pid in children.values()), "the killed children to be gone",
             timeout=10)
    assert processes_of(workspace) == {}


def test_down_when_nothing_ever_ran_says_so(scaffolded_workspace: Path) -> None:
    ran = subhive(scaffolded_workspace, "down")
    assert (ran.code, ran.out.strip(), ran.err) == (0, "nothing is running in this workspace", "")
    ran = subhive(scaffolded_workspace, "down", "--format", "json")
    assert (ran.code, json.loads(ran.out)) == (0, {"was_running": False, "stopped": [], "killed": []})
