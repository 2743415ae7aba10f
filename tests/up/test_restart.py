"""What crashes is restarted by the supervisor, and what it kept survives.

* a sub-hive killed with SIGKILL: a new process with its blackboard intact and its knowledge source working
  again, also on a task written while no process of the hive ran (its durable consumer kept it);
* NATS killed with SIGKILL: restarted on the same port with the same store; the boards keep every
  acknowledged write and the hives, reconnected, react to new ones;
* the root killed with SIGKILL: restarted at the same address with the same lock; the hives keep running;
* the supervisor killed with SIGKILL: nothing restarts its children, so ``subhive down`` kills every one it
  recorded, those restarted above included, and leaves no process; the next ``up`` finds every board entry.

One tree serves these tests (each ``up`` costs seconds); each crashes one part of it and leaves it healthy.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import nats
import pytest

from subhive.bus import ADMIN_USER
from subhive.hive import BoardSchema, Entry, KvBlackboard
from subhive.root_hive._client import RootClient, admin_token_of
from subhive.up import UpLayout, pid_alive

from ._tree import CopyTemplate, events, processes_of, recorded_pids, subhive, tail, up, wait_for

HIVE = "backend"


@pytest.fixture(scope="module")
def crashing_tree(module_template_copy: CopyTemplate) -> Path:
    """The template without its ui hive (the db and the backend that consumes it are what these tests need),
    up; down at the end, even when a test failed."""
    workspace = module_template_copy("web")
    ran = up(workspace)
    assert ran.code == 0, ran
    return workspace


@asynccontextmanager
async def backend_board(workspace: Path) -> AsyncIterator[KvBlackboard]:
    """The backend hive's board, through NATS as the framework's admin (its NKey seed)."""
    layout = UpLayout(workspace)
    url = json.loads(layout.supervisor_file.read_text())["nats"]
    schema = BoardSchema.load(workspace / "subhives" / HIVE / "blackboard.schema.json", hive=HIVE)
    nc = await nats.connect(url.split(","), nkeys_seed=str(layout.seed_file(ADMIN_USER)))
    try:
        yield await KvBlackboard.open(nc.jetstream(), HIVE, schema)
    finally:
        await nc.close()


async def _plan(board: KvBlackboard, log: Path, task: str, timeout: float = 30.0) -> Entry:
    """The plan the hive's ``Intake`` source writes for ``tasks.<task>``, once it is there."""
    deadline = time.monotonic() + timeout
    while (entry := await board.get(f"plans.{task}")) is None:
        if time.monotonic() > deadline:
            raise AssertionError(f"no plans.{task} after {timeout:g} s\n{tail(log)}")
        await asyncio.sleep(0.05)
    return entry


async def _assert_planned(board: KvBlackboard, workspace: Path, *tasks: str) -> None:
    """``Intake`` planned each task: one level below the write that woke it, attributed to it."""
    for task in tasks:
        plan = await _plan(board, UpLayout(workspace).log_file(HIVE), task)
        assert (plan.writer, plan.depth, plan.value["task"]) == ("intake", 1, f"tasks.{task}")


def _restarted(workspace: Path, old_pid: int) -> dict[str, Any] | None:
    """The heartbeat of the restarted hive, once a new process of it says it is ready."""
    beat: dict[str, Any] = json.loads(UpLayout(workspace).status_file(HIVE).read_text())
    if beat.get("state") == "ready" and beat.get("pid") not in (None, old_pid) and pid_alive(beat["pid"]):
        return beat
    return None


def _others(pids: dict[str, int], *but: str) -> dict[str, int]:
    return {name: pid for name, pid in pids.items() if name not in but}


def test_a_hive_killed_with_sigkill_is_restarted_with_its_board_and_its_knowledge(crashing_tree: Path) -> None:
    workspace = crashing_tree
    layout = UpLayout(workspace)
    pids = recorded_pids(workspace)

    async def scenario() -> None:
        async with backend_board(workspace) as board:
            await board.put("tasks.t1", {"title": "Add login", "status": "open"}, writer="human")
            await board.put("tasks.t2", {"title": "Fix logout", "status": "open"}, writer="human")
            await board.put("tasks.t2", {"title": "Fix logout", "status": "done"}, writer="reviewer")
            await _assert_planned(board, workspace, "t1", "t2")
            before = await board.snapshot()
            history = await board.history("tasks.t2")

            os.kill(pids[HIVE], signal.SIGKILL)
            await asyncio.to_thread(wait_for, lambda: not pid_alive(pids[HIVE]), "the hive to die", 10)
            # Written while no process of the hive runs: its durable consumer must hand it to the next one.
            await board.put("tasks.t3", {"title": "Written while down", "status": "open"}, writer="human")
            written_while_down = time.time()
            beat = await asyncio.to_thread(
                wait_for,
                lambda: _restarted(workspace, pids[HIVE]),
                "the hive to be restarted and ready",
                30,
                context=lambda: f"{events(workspace)[-3:]}\n{tail(layout.log_file(HIVE))}",
            )

            restarts = [e for e in events(workspace) if e.get("hive") == HIVE and e["event"].startswith("hive.")]
            kinds = [e["event"] for e in restarts]
            assert kinds == ["hive.starting", "hive.ready", "hive.crashed", "hive.restarted"], kinds
            crashed, restarted = restarts[2], restarts[3]
            assert crashed["code"] == -signal.SIGKILL
            assert restarted["pid"] == beat["pid"]
            assert restarted["t"] > written_while_down, "the task was not written while the hive was down"
            record = json.loads(layout.supervisor_file.read_text())["hives"][HIVE]
            assert (record["pid"], record["restarts"], record["exits"]) == (beat["pid"], 1, [-signal.SIGKILL])
            assert _others(recorded_pids(workspace), HIVE) == _others(pids, HIVE)  # nothing else restarted

            # The board is what it was: every entry, revision and writer, and the full history.
            after = await board.snapshot()
            assert {key: after[key] for key in before} == before
            assert await board.history("tasks.t2") == history
            assert [e.writer for e in history] == ["human", "reviewer"]

            # The knowledge source works again: on the task written while down (which may wait for the
            # consumer's ack wait, if the dead process had asked for it), and on a new one.
            await board.put("tasks.t4", {"title": "Written after restart", "status": "open"}, writer="human")
            await _assert_planned(board, workspace, "t4", "t3")

    asyncio.run(asyncio.wait_for(scenario(), 90))


def test_nats_killed_with_sigkill_is_restarted_with_every_acknowledged_write(crashing_tree: Path) -> None:
    workspace = crashing_tree
    pids = recorded_pids(workspace)
    url = json.loads(UpLayout(workspace).supervisor_file.read_text())["nats"]

    async def write_before() -> dict[str, Entry]:
        async with backend_board(workspace) as board:
            await board.put("tasks.n1", {"title": "Before NATS died", "status": "open"}, writer="human")
            await _assert_planned(board, workspace, "n1")
            return await board.snapshot()

    before = asyncio.run(asyncio.wait_for(write_before(), 60))
    os.kill(pids["nats"], signal.SIGKILL)
    restarted = wait_for(
        lambda: (p := recorded_pids(workspace)["nats"]) != pids["nats"] and pid_alive(p) and p,
        "NATS to be restarted",
        30,
        context=lambda: str(events(workspace)[-3:]),
    )
    assert "nats.crashed" in [e["event"] for e in events(workspace)]
    record = json.loads(UpLayout(workspace).supervisor_file.read_text())
    assert record["nats"] == url  # the same port: hives reconnect to what they know
    assert _others(recorded_pids(workspace), "nats") == _others(pids, "nats")  # the hives rode it out
    assert pid_alive(restarted)

    async def after_restart() -> None:
        async with backend_board(workspace) as board:
            after = await board.snapshot()
            assert {key: after[key] for key in before} == before
            # The hive reconnected: its controller reacts to a write made after the restart.
            await board.put("tasks.n2", {"title": "After NATS came back", "status": "open"}, writer="human")
            await _assert_planned(board, workspace, "n2")

    asyncio.run(asyncio.wait_for(after_restart(), 60))


def test_the_root_killed_with_sigkill_is_restarted_at_the_same_address_with_its_lock(crashing_tree: Path) -> None:
    workspace = crashing_tree
    pids = recorded_pids(workspace)
    address = json.loads(UpLayout(workspace).supervisor_file.read_text())["root"]

    os.kill(pids["root"], signal.SIGKILL)
    wait_for(  # once it answers: the record names the new process from its start, before it listens
        lambda: (
            "root.restarted" in [e["event"] for e in events(workspace)]
            and (p := recorded_pids(workspace)["root"]) != pids["root"]
            and pid_alive(p)
        ),
        "the root to be restarted",
        30,
        context=lambda: str(events(workspace)[-3:]),
    )
    assert [e["code"] for e in events(workspace) if e["event"] == "root.crashed"] == [-signal.SIGKILL]
    assert json.loads(UpLayout(workspace).supervisor_file.read_text())["root"] == address
    assert _others(recorded_pids(workspace), "root") == _others(pids, "root")

    async def ask() -> list[str]:
        async with RootClient(address, admin_token_of(workspace)) as root:
            return sorted(f"{c.name} {v.version}" for c in await root.contracts() for v in c.versions)

    assert asyncio.run(asyncio.wait_for(ask(), 30)) == ["backend_api 0.1.0", "db_storage 0.1.0"]


def test_a_supervisor_killed_with_sigkill_leaves_nothing_after_down_and_up_finds_the_boards_again(
    crashing_tree: Path,
) -> None:
    workspace = crashing_tree

    async def snapshot(*, plan: str) -> dict[str, Entry]:
        async with backend_board(workspace) as board:
            await board.put(f"tasks.{plan}", {"title": f"Task {plan}", "status": "open"}, writer="human")
            await _assert_planned(board, workspace, plan)
            return await board.snapshot()

    before = asyncio.run(asyncio.wait_for(snapshot(plan="s1"), 60))
    seeds = {p.name: p.read_bytes() for p in UpLayout(workspace).nkeys_dir.iterdir()}
    pids = recorded_pids(workspace)
    os.kill(pids["supervisor"], signal.SIGKILL)
    wait_for(lambda: not pid_alive(pids["supervisor"]), "the supervisor to die", timeout=10)
    children = _others(pids, "supervisor")
    # Each child has its own session: the supervisor's death leaves them running, which is what down is for.
    assert all(pid_alive(pid) for pid in children.values()), children

    ran = subhive(workspace, "down", "--format", "json")
    assert ran.code == 0, ran
    report = json.loads(ran.out)
    assert report["was_running"] is False
    assert sorted(report["killed"]) == sorted(children)
    assert report["stopped"] == ["supervisor"]
    wait_for(lambda: not any(pid_alive(pid) for pid in children.values()), "the killed children to be gone", timeout=10)
    assert processes_of(workspace) == {}  # nothing the record missed either (e.g. a hive restarted above)

    # Everything was killed, NATS included: the next up starts from the same store, and nothing is lost.
    assert up(workspace).code == 0
    after = asyncio.run(asyncio.wait_for(snapshot(plan="s2"), 60))
    assert {key: after[key] for key in before} == before
    assert {p.name: p.read_bytes() for p in UpLayout(workspace).nkeys_dir.iterdir()} == seeds  # the same NKeys
