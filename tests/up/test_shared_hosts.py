"""Several hives in one process (``[up] hives_per_process``, decision 0117), against a real running tree.

The template's three hives (db, backend, web: siblings under the root) share one host process. Each still
connects to NATS as itself, with its own NKey, and answers on its own board; the host's environment holds no
secret. One hive that fails to start again does not stop its siblings; killing the host restarts all three
in a new one; ``down`` stops everything.

One tree serves these tests (each ``up`` costs seconds); they run in order, the last one stops it.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import signal
import tomllib
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import nats
import pytest
from hypothesis import given
from hypothesis import strategies as st

from subhive.bus import ADMIN_USER
from subhive.cli import main
from subhive.hive import BoardSchema, KvBlackboard
from subhive.up import UpLayout, pid_alive
from subhive.up._hosts import group_hives
from subhive.workspace import UpSettings

from ._tree import (
    HIVES,
    CopyTemplate,
    assert_clean_error,
    events,
    processes_of,
    recorded_pids,
    subhive,
    tail,
    up,
    wait_for,
)

HOST = "host.root.1"


@pytest.fixture(scope="module")
def shared_tree(module_template_copy: CopyTemplate) -> Path:
    """The template with every hive in one process, up; down at the end, even when a test failed."""
    workspace = module_template_copy()
    with open(workspace / "hive.toml", "a", encoding="utf-8") as config:
        config.write("\n[up]\nhives_per_process = 3\n")
    ran = up(workspace)
    assert ran.code == 0, ran
    return workspace


def _host_pid(workspace: Path) -> int:
    record = json.loads(UpLayout(workspace).supervisor_file.read_text(encoding="utf-8"))
    return int(record["hosts"][HOST])


@asynccontextmanager
async def _boards(workspace: Path) -> AsyncIterator[dict[str, KvBlackboard]]:
    """Every hive's board, through NATS as the framework's admin."""
    layout = UpLayout(workspace)
    url = json.loads(layout.supervisor_file.read_text(encoding="utf-8"))["nats"]
    nc = await nats.connect(url.split(","), nkeys_seed=str(layout.seed_file(ADMIN_USER)))
    try:
        boards = {}
        for hive in HIVES:
            schema = BoardSchema.load(workspace / "subhives" / hive / "blackboard.schema.json", hive=hive)
            boards[hive] = await KvBlackboard.open(nc.jetstream(), hive, schema)
        yield boards
    finally:
        await nc.close()


async def _planned(board: KvBlackboard, task: str, timeout: float = 30.0) -> dict[str, Any]:
    """Write an open ``tasks.<task>`` and wait for the hive's Intake source to plan it."""
    await board.put(f"tasks.{task}", {"title": task, "status": "open"}, writer="human")
    async with asyncio.timeout(timeout):
        while (plan := await board.get(f"plans.{task}")) is None:
            await asyncio.sleep(0.05)
    assert plan.writer == "intake"
    return dict(plan.value)


def _each_hive_plans(workspace: Path, task: str, hives: tuple[str, ...] = HIVES) -> None:
    async def scenario() -> None:
        async with _boards(workspace) as boards:
            plans = await asyncio.gather(*(_planned(boards[hive], f"{task}{hive}") for hive in hives))
            assert [p["task"] for p in plans] == [f"tasks.{task}{hive}" for hive in hives]

    asyncio.run(asyncio.wait_for(scenario(), 60))


def _nats_ports_of(pid: int) -> set[int]:
    """The local TCP ports of ``pid``'s sockets (its client connections to NATS among them)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        target = os.readlink(fd) if fd.is_symlink() else ""
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[9] in inodes:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def test_the_hives_share_one_process_each_connected_as_itself(shared_tree: Path) -> None:
    workspace = shared_tree
    host = _host_pid(workspace)
    pids = recorded_pids(workspace)
    assert {pids[hive] for hive in HIVES} == {host}
    commands = processes_of(workspace).values()
    assert [c for c in commands if "subhive.hive" in c] == [c for c in commands if f"--host {HOST}" in c]
    assert [e["event"] for e in events(workspace) if e["event"] == "hives.grouped"] == ["hives.grouped"]

    # On the server, the host holds one connection per hive, each in that hive's own account.
    record = json.loads(UpLayout(workspace).supervisor_file.read_text(encoding="utf-8"))
    with urllib.request.urlopen(f"{record['nats_monitor'][0]}/connz?auth=true", timeout=5) as answer:
        connections = json.loads(answer.read())["connections"]
    ports = _nats_ports_of(host)
    mine = sorted((c["account"], c["name"]) for c in connections if c["port"] in ports)
    assert mine == [(hive, f"subhive-{hive}") for hive in sorted(HIVES)]

    # Secrets reach it on its stdin, per hive: its environment names none, and no other process's.
    environ = Path(f"/proc/{host}/environ").read_bytes().split(b"\0")
    names = {entry.split(b"=", 1)[0].decode() for entry in environ if entry}
    assert not names & {"SUBHIVE_NATS_NKEY", "SUBHIVE_TOKEN", "SUBHIVE_GRPC_KEYS", "SUBHIVE_STATUS_FILE"}
    assert b"_admin" not in b"".join(environ)


def test_each_hive_answers_on_its_own_board(shared_tree: Path) -> None:
    _each_hive_plans(shared_tree, "a")
    logs = {hive: UpLayout(shared_tree).log_file(hive).read_text(encoding="utf-8") for hive in HIVES}
    for hive, text in logs.items():  # one log per hive still, each with its own records only
        assert f"hive {hive} ready" in text
        assert not [other for other in HIVES if other != hive and f"hive {other} ready" in text]


def test_a_hive_is_refused_another_hives_board_with_its_own_credentials(shared_tree: Path) -> None:
    layout = UpLayout(shared_tree)
    url = json.loads(layout.supervisor_file.read_text(encoding="utf-8"))["nats"]

    async def scenario() -> None:
        refused: list[str] = []

        async def on_error(exc: Exception) -> None:
            refused.append(str(exc))

        nc = await nats.connect(url.split(","), nkeys_seed=str(layout.seed_file("db")), error_cb=on_error)
        try:
            schema = BoardSchema.load(shared_tree / "subhives" / "backend" / "blackboard.schema.json", hive="backend")
            board = KvBlackboard(nc.jetstream(), "backend", schema)
            failure: Exception | None = None
            try:
                await board.get("tasks.x")
            except Exception as exc:  # nats-py's timeout or the server's refusal: refused either way
                failure = exc
            assert failure is not None
            async with asyncio.timeout(10):
                while not refused:
                    await asyncio.sleep(0.05)
        finally:
            await nc.close()
        assert "permissions violation" in refused[0].lower(), refused

    asyncio.run(scenario())


def test_a_hive_that_fails_to_start_does_not_stop_its_siblings(shared_tree: Path) -> None:
    workspace = shared_tree
    host = _host_pid(workspace)
    module = workspace / "subhives" / "db" / "db_hive" / "knowledge.py"
    good = module.read_text(encoding="utf-8")
    module.write_text(good + "\nraise RuntimeError('the new code is broken')\n", encoding="utf-8")
    try:
        ran = subhive(workspace, "restart", "db")
        assert_clean_error(ran, 1, "restart.failed")
        assert "db exited with code 2 after its restart" in ran.err
        assert "the new code is broken" in ran.err  # from db's own log
        # The process and the other hives run on, and answer.
        assert _host_pid(workspace) == host
        assert pid_alive(host)
        assert "the new code is broken" not in UpLayout(workspace).log_file("backend").read_text(encoding="utf-8")
        _each_hive_plans(workspace, "b", ("backend", "web"))
        status = json.loads(subhive(workspace, "status", "--format", "json").out)["runtime"]["hives"]
        assert (status["backend"]["health"], status["web"]["health"]) == ("ready", "ready")
    finally:
        module.write_text(good, encoding="utf-8")
    fixed = subhive(workspace, "restart", "db", "--format", "json")
    assert fixed.code == 0, fixed
    assert json.loads(fixed.out) == {"hive": "db", "ready": True, "pid": host}  # the same process, new code
    _each_hive_plans(workspace, "c", ("db",))


def test_killing_the_host_restarts_every_hive_it_ran(shared_tree: Path) -> None:
    workspace = shared_tree
    host = _host_pid(workspace)
    before = len(events(workspace))
    os.kill(host, signal.SIGKILL)

    def back() -> int | None:
        record = json.loads(UpLayout(workspace).supervisor_file.read_text(encoding="utf-8"))
        beats = [json.loads(UpLayout(workspace).status_file(h).read_text(encoding="utf-8")) for h in HIVES]
        new = record["hosts"].get(HOST)
        ready = all(b.get("state") == "ready" and b.get("pid") == new for b in beats)
        return new if new not in (None, host) and ready else None

    new = wait_for(back, "every hive ready in a new host", 60, context=lambda: tail(UpLayout(workspace).log_file(HOST)))
    crashed = {e["hive"]: e["code"] for e in events(workspace)[before:] if e["event"] == "hive.crashed"}
    assert crashed == dict.fromkeys(HIVES, -signal.SIGKILL)
    assert {recorded_pids(workspace)[hive] for hive in HIVES} == {new}
    _each_hive_plans(workspace, "d")


def test_down_stops_the_host_and_everything_else(shared_tree: Path) -> None:
    workspace = shared_tree
    assert processes_of(workspace)
    ran = subhive(workspace, "down")
    assert ran.code == 0, ran
    assert processes_of(workspace) == {}


@given(st.dictionaries(st.from_regex(r"[a-z]{1,6}", fullmatch=True), st.sampled_from(["root", "api", "ui"])))
def test_grouping_keeps_every_hive_once_with_siblings_only(parents: dict[str, str]) -> None:
    for per_process in (2, 3, 16):
        hosts = group_hives(parents, per_process)
        placed = [hive for hives in hosts.values() for hive in hives]
        assert sorted(placed) == sorted(parents)
        for name, hives in hosts.items():
            assert 1 <= len(hives) <= per_process
            assert {parents[h] for h in hives} == {name.split(".")[1]}
    assert group_hives(parents, 1) == {}


def test_hives_per_process_is_checked_where_it_is_written(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["init", str(workspace)]) == 0
    with open(workspace / "hive.toml", "a", encoding="utf-8") as config:
        config.write("\n[up]\nhives_per_process = 0\n")
    ran = subhive(workspace, "status")
    assert_clean_error(ran, 2, "workspace.up_hives_per_process")
    assert "/up/hives_per_process" in ran.err
    assert UpSettings().per_process(3) == 1
    assert UpSettings().per_process(500) > 1
    assert UpSettings(8).per_process(3) == 8


@given(st.one_of(st.none(), st.integers(1, 64)), st.lists(st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)))
def test_up_settings_read_back_what_they_write(per_process: int | None, elsewhere: list[str]) -> None:
    settings = UpSettings(per_process, tuple(dict.fromkeys(elsewhere)))
    problems: list[tuple[str, ...]] = []
    table = tomllib.loads(settings.to_toml())["up"]
    assert UpSettings.read(table, "/up", lambda *said: problems.append(said)) == settings
    assert problems == []
