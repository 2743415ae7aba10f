"""A running workspace, read without disturbing it: of two ``up`` at once only one started it, what ``up
--format json`` said, each hive's health, a second ``up`` refused without touching the running tree, and
``logs``; then ``down``, which stops every process the supervisor recorded and leaves none behind.

One tree serves every test here (each ``up`` costs seconds); only the last, ``down``, changes it. (A
supervisor killed with SIGKILL before ``down``: test_restart.py.)
"""

from __future__ import annotations

import json
import stat
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from subhive.bus import ADMIN_USER
from subhive.up import UpLayout, pid_alive, runtime_status

from ._tree import (
    HIVES,
    CopyTemplate,
    Ran,
    assert_clean_error,
    events,
    processes_of,
    recorded_pids,
    subhive,
    up,
)


@dataclass(frozen=True)
class Running:
    workspace: Path
    printed: dict[str, Any]  # what the `up` that started the tree printed (--format json)
    ups: list[Ran]  # both `up`s, in the order they were started


@pytest.fixture(scope="module")
def running_workspace(module_template_copy: CopyTemplate) -> Running:
    """The template, up: two ``up --detach --format json`` started at the same moment, of which one must start
    the tree; down at the end, even when a test failed."""
    workspace = module_template_copy()
    with ThreadPoolExecutor(2) as pool:
        ups = list(pool.map(lambda _: up(workspace, "--format", "json"), range(2)))
    started = [ran for ran in ups if ran.code == 0]
    assert started, ups
    return Running(workspace, json.loads(started[0].out), ups)


def test_of_two_ups_at_once_one_starts_the_tree_and_the_other_is_refused(running_workspace: Running) -> None:
    workspace = running_workspace.workspace
    ok, refused = sorted(running_workspace.ups, key=lambda ran: ran.code)
    assert ok.code == 0, running_workspace.ups
    assert_clean_error(refused, 2, "up.already_running")
    pids = recorded_pids(workspace)
    assert f"supervisor pid {pids['supervisor']}" in refused.err
    assert set(processes_of(workspace)) == set(pids.values())  # one tree, the recorded one


def test_up_json_says_ready_with_every_hive_and_how_long_it_took(running_workspace: Running) -> None:
    workspace, printed = running_workspace.workspace, running_workspace.printed
    assert printed["ready"] is True
    assert printed["hives"] == sorted(HIVES)
    ready = [e for e in events(workspace) if e["event"] == "ready"]
    assert len(ready) == 1
    assert printed["seconds"] == ready[0]["seconds"]
    assert 0 < printed["seconds"] < 60


def test_every_hive_is_ready_with_a_fresh_heartbeat_from_its_recorded_pid(running_workspace: Running) -> None:
    workspace = running_workspace.workspace
    status = runtime_status(workspace)
    assert status is not None
    assert status["state"] == "ready"
    pids = recorded_pids(workspace)
    assert {name: hive["health"] for name, hive in status["hives"].items()} == dict.fromkeys(HIVES, "ready")
    for name in HIVES:
        assert status["hives"][name]["pid"] == pids[name]
        beat = json.loads(UpLayout(workspace).status_file(name).read_text())
        assert (beat["hive"], beat["pid"], beat["state"]) == (name, pids[name], "ready")
    # What each hive serves and consumes is what the lock and the scaffold say.
    contracts = {name: json.loads(UpLayout(workspace).status_file(name).read_text())["contracts"] for name in HIVES}
    assert contracts["db"] == ["db_storage@0.1.0 (provides)"]
    assert sorted(contracts["backend"]) == ["backend_api@0.1.0 (provides)", "db_storage@0.1.0"]
    assert contracts["web"] == ["backend_api@0.1.0"]


def test_nats_identities_are_nkeys_private_to_the_owner_each_process_given_its_own(running_workspace: Running) -> None:
    workspace = running_workspace.workspace
    layout = UpLayout(workspace)
    assert stat.S_IMODE(layout.nkeys_dir.stat().st_mode) == 0o700
    seeds = {p.stem: p for p in layout.nkeys_dir.iterdir()}
    assert sorted(seeds) == sorted([*HIVES, ADMIN_USER])  # one each
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in seeds.values())
    secrets = [p.read_text().strip() for p in seeds.values()]
    assert len(set(secrets)) == len(secrets)  # none shared
    assert all(s.startswith("SU") for s in secrets)  # user seeds
    assert not layout.creds_file.exists()  # no file holds every secret together
    # The server's configuration names public keys only: nothing in it opens a connection.
    conf = (layout.nats_dir / "nats-server.conf").read_text()
    assert not any(s in conf for s in secrets)
    assert '"password"' not in conf
    # Each hive is handed its own seed file's path through its environment, never another's; and no
    # secret is on a command line, which `ps` shows every user.
    for pid, cmdline in processes_of(workspace).items():
        assert not any(s in cmdline for s in secrets), (pid, cmdline)
        environ = Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace").split("\0")
        given = [v.split("=", 1)[1] for v in environ if v.startswith("SUBHIVE_NATS_NKEY=")]
        if "subhive.hive" in cmdline:
            hive = cmdline.split("--hive", 1)[1].split()[0]
            assert given == [str(seeds[hive])], (hive, given)


def test_a_second_up_is_refused_and_leaves_the_running_tree_alone(running_workspace: Running) -> None:
    workspace = running_workspace.workspace
    pids = recorded_pids(workspace)
    before = processes_of(workspace)
    progress = UpLayout(workspace).progress_file.read_bytes()

    ran = up(workspace)
    assert_clean_error(ran, 2, "up.already_running")
    assert f"supervisor pid {pids['supervisor']}" in ran.err
    assert "subhive down" in ran.err  # the hint says how to stop it
    assert recorded_pids(workspace) == pids
    assert all(pid_alive(pid) for pid in pids.values())
    assert processes_of(workspace) == before  # no second supervisor, root or NATS
    assert UpLayout(workspace).progress_file.read_bytes() == progress  # the running tree's progress is kept


def test_logs_shows_a_hive_log_and_refuses_an_unknown_name(running_workspace: Running) -> None:
    workspace = running_workspace.workspace
    ran = subhive(workspace, "logs", "backend", "-n", "50")
    assert ran.code == 0, ran
    assert "hive backend ready" in ran.out

    ran = subhive(workspace, "logs", "nosuch")
    assert_clean_error(ran, 2, "logs.unknown")
    assert "no log for 'nosuch'" in ran.err
    for name in ("backend", "db", "web", "root", "supervisor"):  # the hint names what exists
        assert name in ran.err


def test_deadletters_and_board_find_the_running_bus_without_being_told(running_workspace: Running) -> None:
    workspace = running_workspace.workspace
    ran = subhive(workspace, "deadletters", "list", "--format", "json")  # no --server, no SUBHIVE_NATS_*
    assert ran.code == 0, ran
    assert json.loads(ran.out) == {"dead_letters": []}
    ran = subhive(workspace, "board", "put", "db", "tasks.t9", '{"title": "Index", "status": "done"}')
    assert ran.code == 0, ran
    ran = subhive(workspace, "board", "show", "db", "--format", "json")
    assert ran.code == 0, ran
    entries = {e["key"]: e for e in json.loads(ran.out)["entries"]}
    assert (entries["tasks.t9"]["value"], entries["tasks.t9"]["writer"]) == (
        {"title": "Index", "status": "done"},
        "human",
    )


def test_down_stops_every_recorded_process_and_leaves_none_behind(running_workspace: Running) -> None:
    """The last test here: it ends the tree the others read."""
    workspace = running_workspace.workspace
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
