"""``subhive status`` tells a root process that is down (the supervisor restarts it) from a supervisor that is
gone (nothing restarts anything): then it names what still runs unsupervised, with pids, and that ``subhive
down`` stops it. One tree (a single hive) serves the whole story: each ``up`` costs seconds."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from subhive.up import pid_alive

from ._tree import recorded_pids, subhive, up, wait_for


@contextmanager
def frozen(pid: int) -> Iterator[None]:
    """The process stopped (SIGSTOP) meanwhile: a supervisor that cannot restart anything yet."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def _status(workspace: Path) -> tuple[str, dict[str, Any]]:
    text = subhive(workspace, "status")
    assert text.code == 0, text
    data = subhive(workspace, "status", "--format", "json")
    assert data.code == 0, data
    return text.out, json.loads(data.out)


def test_status_tells_a_dead_root_from_a_lost_supervisor_and_what_still_runs(one_hive_workspace: Path) -> None:
    workspace = one_hive_workspace
    assert up(workspace).code == 0
    pids = recorded_pids(workspace)
    out, data = _status(workspace)
    assert "root  up (NATS" in out
    assert data["runtime"]["state"] == "ready"

    # The root dies while the supervisor is held still: status says so, and who will bring it back.
    with frozen(pids["supervisor"]):
        os.kill(pids["root"], signal.SIGKILL)
        wait_for(lambda: not pid_alive(pids["root"]), "the root to die", timeout=10)
        out, _ = _status(workspace)
        assert "up, but the root process is down" in out
        assert "the supervisor restarts it" in out
    wait_for(lambda: pid_alive(recorded_pids(workspace)["root"]), "the root to be restarted", timeout=30)

    # The supervisor dies: its children run on, and status lists them with their pids.
    pids = recorded_pids(workspace)
    os.kill(pids["supervisor"], signal.SIGKILL)
    wait_for(lambda: not pid_alive(pids["supervisor"]), "the supervisor to die", timeout=10)
    out, data = _status(workspace)
    children = {name: pid for name, pid in pids.items() if name != "supervisor"}
    assert sorted(children) == ["db", "nats", "root"]
    assert data["runtime"] == {"state": "supervisor_lost", "supervisor": pids["supervisor"], "running": children,
                               "root": data["runtime"]["root"], "nats": data["runtime"]["nats"],
                               "hint": "subhive down stops them, then subhive up starts the tree again"}
    assert "not running" not in out
    assert f"supervisor lost: pid {pids['supervisor']} died without stopping its tree" in out
    left = f"nats pid {children['nats']}, root pid {children['root']}, db pid {children['db']}"
    assert f"still running unsupervised: {left}" in out
    assert "fix: subhive down stops them" in out

    ran = subhive(workspace, "down", "--format", "json")
    assert ran.code == 0, ran
    assert sorted(json.loads(ran.out)["killed"]) == ["db", "nats", "root"]
    out, data = _status(workspace)
    assert data["runtime"] is None
    assert "root  not running (subhive up starts it)" in out
