"""What a running tree reports when part of it is broken, without hiding the rest:

* a board value another tool wrote past subhive (not JSON): ``board show`` marks that key broken (revision,
  writer, reason) and still shows every other key, in text and JSON;
* the root process down while the supervisor runs: ``status`` says the supervisor restarts it;
* the supervisor gone (SIGKILL): ``status`` names what still runs unsupervised, with pids, and that ``subhive
  down`` stops it; after ``down``, not running.

One tree (a single hive) serves both tests, in this order: each ``up`` costs seconds.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import nats
import pytest

from subhive.bus import ADMIN_USER
from subhive.hive import board_stream
from subhive.up import UpLayout, pid_alive

from ._tree import CopyTemplate, events, recorded_pids, subhive, up, wait_for


@pytest.fixture(scope="module")
def one_hive_tree(module_template_copy: CopyTemplate) -> Path:
    """The template with only its db hive, up."""
    workspace = module_template_copy("web", "backend", "backend_api")
    ran = up(workspace)
    assert ran.code == 0, ran
    return workspace


async def _write_past_subhive(workspace: Path, key: str, data: bytes, headers: dict[str, str] | None) -> None:
    """What a tool holding the admin's NKey seed can do: put raw bytes on a board, no schema, no JSON."""
    layout = UpLayout(workspace)
    url = json.loads(layout.supervisor_file.read_text())["nats"]
    nc = await nats.connect(url, nkeys_seed=str(layout.seed_file(ADMIN_USER)))
    try:
        await nc.jetstream().publish(f"$KV.bb_db.{key}", data, stream=board_stream("db"), headers=headers)
    finally:
        await nc.close()


def test_board_show_marks_a_broken_value_and_shows_the_rest(one_hive_tree: Path) -> None:
    workspace = one_hive_tree
    assert subhive(workspace, "board", "put", "db", "tasks.ok", '{"title": "Index", "status": "open"}').code == 0
    asyncio.run(
        asyncio.wait_for(_write_past_subhive(workspace, "tasks.bad", b"\x00not json", {"Subhive-Writer": "script"}), 30)
    )
    asyncio.run(asyncio.wait_for(_write_past_subhive(workspace, "tasks.anon", b"{half", None), 30))

    ran = subhive(workspace, "board", "show", "db", "--format", "json")
    assert ran.code == 0, ran
    shown = json.loads(ran.out)
    entries = {e["key"]: e for e in shown["entries"]}
    assert entries["tasks.ok"]["value"] == {"title": "Index", "status": "open"}  # the rest is all there
    assert "tasks.bad" not in entries
    broken = {b["key"]: b for b in shown["broken"]}
    assert sorted(broken) == ["tasks.anon", "tasks.bad"]
    assert (broken["tasks.bad"]["writer"], broken["tasks.bad"]["code"]) == ("script", "blackboard.not_json")
    assert broken["tasks.anon"]["writer"] is None
    assert broken["tasks.bad"]["revision"] > entries["tasks.ok"]["revision"]
    assert all(b["reason"] for b in broken.values())

    ran = subhive(workspace, "board", "show", "db")
    assert ran.code == 0, ran
    lines = {line.split()[0]: line for line in ran.out.splitlines()}
    assert "BROKEN: not JSON" in lines["tasks.bad"]
    assert "by script" in lines["tasks.bad"]
    assert "by an unknown writer" in lines["tasks.anon"]
    assert '"title": "Index"' in lines["tasks.ok"]
    assert "subhive board put db KEY VALUE" in ran.err


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


def test_status_tells_a_dead_root_from_a_lost_supervisor_and_what_still_runs(one_hive_tree: Path) -> None:
    workspace = one_hive_tree
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
    # Restarted once it answers (the record names the new process from its start, before it listens).
    wait_for(
        lambda: (
            any(e["event"] == "root.restarted" for e in events(workspace))
            and (p := recorded_pids(workspace)["root"]) != pids["root"]
            and pid_alive(p)
        ),
        "the root to be restarted",
        timeout=30,
    )

    # The supervisor dies: its children run on, and status lists them with their pids.
    pids = recorded_pids(workspace)
    os.kill(pids["supervisor"], signal.SIGKILL)
    wait_for(lambda: not pid_alive(pids["supervisor"]), "the supervisor to die", timeout=10)
    out, data = _status(workspace)
    children = {name: pid for name, pid in pids.items() if name != "supervisor"}
    assert sorted(children) == ["db", "nats", "root"]
    assert data["runtime"] == {
        "state": "supervisor_lost",
        "supervisor": pids["supervisor"],
        "running": children,
        "root": data["runtime"]["root"],
        "nats": data["runtime"]["nats"],
        "hint": "subhive down stops them, then subhive up starts the tree again",
    }
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
