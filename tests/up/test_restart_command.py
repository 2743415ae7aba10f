"""``subhive restart HIVE`` and ``subhive logs NAME`` against a real running tree: one hive restarted through
the supervisor while the rest runs on, clear refusals (exit 2) for a tree that is not up or a hive it does not
run, exit 1 with the new run's last lines when the hive does not come back; NATS's log by name."""

from __future__ import annotations

import json
from pathlib import Path

from subhive.up import UpLayout

from ._tree import assert_clean_error, events, recorded_pids, subhive, up


def test_restart_restarts_one_hive_and_leaves_the_rest_running(one_hive_workspace: Path) -> None:
    workspace = one_hive_workspace
    assert up(workspace).code == 0
    before = recorded_pids(workspace)

    ran = subhive(workspace, "restart", "db", "--format", "json")

    assert ran.code == 0, ran
    answer = json.loads(ran.out)
    after = recorded_pids(workspace)
    assert answer == {"hive": "db", "ready": True, "pid": after["db"]}
    assert after["db"] != before["db"]
    assert {k: v for k, v in after.items() if k != "db"} == {k: v for k, v in before.items() if k != "db"}
    kinds = [e["event"] for e in events(workspace) if e.get("hive") == "db"]
    assert kinds[-2:] == ["hive.restarting", "hive.ready"]
    status = json.loads(subhive(workspace, "status", "--format", "json").out)
    assert status["runtime"]["hives"]["db"]["health"] == "ready"


def test_restart_of_a_hive_that_does_not_come_back_says_why(one_hive_workspace: Path) -> None:
    workspace = one_hive_workspace
    assert up(workspace).code == 0
    module = workspace / "subhives" / "db" / "db_hive" / "knowledge.py"
    module.write_text(module.read_text() + "\nraise RuntimeError('the new code is broken')\n")

    ran = subhive(workspace, "restart", "db")

    assert_clean_error(ran, 1, "restart.failed")
    assert "db exited with code 2 after its restart" in ran.err
    assert "the new code is broken" in ran.err  # the latest run's last lines
    assert str(UpLayout(workspace).log_file("db")) in ran.err


def test_restart_refuses_an_unknown_hive_and_a_tree_that_is_not_up(one_hive_workspace: Path) -> None:
    workspace = one_hive_workspace
    not_up = subhive(workspace, "restart", "db")
    assert_clean_error(not_up, 2, "restart.not_up")
    assert "subhive up" in not_up.err

    assert up(workspace).code == 0
    unknown = subhive(workspace, "restart", "dbb")
    assert_clean_error(unknown, 2, "restart.unknown_hive")
    assert "did you mean 'db'? running hives: db" in unknown.err


def test_logs_knows_nats_and_names_the_valid_logs(one_hive_workspace: Path) -> None:
    workspace = one_hive_workspace
    assert up(workspace).code == 0

    nats = subhive(workspace, "logs", "nats", "-n", "200")
    assert nats.code == 0, nats
    assert "Server is ready" in nats.out

    unknown = subhive(workspace, "logs", "natz")
    assert_clean_error(unknown, 2, "logs.unknown")
    assert "did you mean 'nats'? valid names: db, nats, root, supervisor" in unknown.err

    everything = subhive(workspace, "logs", "-n", "400")
    assert everything.code == 0
    assert {line.split(" | ", 1)[0] for line in everything.out.splitlines() if " | " in line} >= {
        "db",
        "nats",
        "root",
        "supervisor",
    }
