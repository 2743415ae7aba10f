"""A sub-hive killed with SIGKILL is restarted by the supervisor with its blackboard intact, and its knowledge
source works again: on a task written while the hive was dead (the durable consumer kept it) and on a new one.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import nats

from subhive.bus import ADMIN_USER
from subhive.hive import BoardSchema, Entry, KvBlackboard
from subhive.up import UpLayout, pid_alive

from ._tree import events, recorded_pids, tail, up, wait_for

HIVE = "backend"


async def _plan(board: KvBlackboard, log: Path, task: str, timeout: float = 30.0) -> Entry:
    """The plan the hive's ``Intake`` source writes for ``tasks.<task>``, once it is there."""
    deadline = time.monotonic() + timeout
    while (entry := await board.get(f"plans.{task}")) is None:
        if time.monotonic() > deadline:
            raise AssertionError(f"no plans.{task} after {timeout:g} s\n{tail(log)}")
        await asyncio.sleep(0.05)
    return entry


def _restarted(workspace: Path, old_pid: int) -> dict[str, Any] | None:
    """The heartbeat of the restarted hive, once a new process of it says it is ready."""
    beat: dict[str, Any] = json.loads(UpLayout(workspace).status_file(HIVE).read_text())
    if beat.get("state") == "ready" and beat.get("pid") not in (None, old_pid) and pid_alive(beat["pid"]):
        return beat
    return None


def test_a_hive_killed_with_sigkill_is_restarted_with_its_board_and_its_knowledge(
        scaffolded_workspace: Path) -> None:
    workspace = scaffolded_workspace
    assert up(workspace).code == 0
    pids = recorded_pids(workspace)
    layout = UpLayout(workspace)
    url = json.loads(layout.supervisor_file.read_text())["nats"]
    admin = json.loads(layout.creds_file.read_text())["admin"]
    schema = BoardSchema.load(workspace / "subhives" / HIVE / "blackboard.schema.json", hive=HIVE)

    async def scenario() -> None:
        nc = await nats.connect(url, user=ADMIN_USER, password=admin)
        try:
            board = await KvBlackboard.open(nc.jetstream(), HIVE, schema)
            await board.put("tasks.t1", {"title": "Add login", "status": "open"}, writer="human")
            await board.put("tasks.t2", {"title": "Fix logout", "status": "open"}, writer="human")
            await board.put("tasks.t2", {"title": "Fix logout", "status": "done"}, writer="reviewer")
            await _plan(board, layout.log_file(HIVE), "t1")
            await _plan(board, layout.log_file(HIVE), "t2")
            before = await board.snapshot()
            history = await board.history("tasks.t2")

            os.kill(pids[HIVE], signal.SIGKILL)
            await asyncio.to_thread(wait_for, lambda: not pid_alive(pids[HIVE]), "the hive to die", 10)
            # Written while no process of the hive runs: its durable consumer must hand it to the next one.
            await board.put("tasks.t3", {"title": "Written while down", "status": "open"}, writer="human")
            written_while_down = time.time()
            beat = await asyncio.to_thread(
                wait_for, lambda: _restarted(workspace, pids[HIVE]), "the hive to be restarted and ready", 30,
                context=lambda: f"{events(workspace)[-3:]}\n{tail(layout.log_file(HIVE))}")

            restarts = [e for e in events(workspace) if e.get("hive") == HIVE and e["event"].startswith("hive.")]
            kinds = [e["event"] for e in restarts]
            assert kinds == ["hive.starting", "hive.ready", "hive.crashed", "hive.restarted"], kinds
            crashed, restarted = restarts[2], restarts[3]
            assert crashed["code"] == -signal.SIGKILL
            assert restarted["pid"] == beat["pid"]
            assert restarted["t"] > written_while_down, "the task was not written while the hive was down"
            record = json.loads(layout.supervisor_file.read_text())["hives"][HIVE]
            assert (record["pid"], record["restarts"], record["exits"]) == (beat["pid"], 1, [-signal.SIGKILL])
            # The other hives were not disturbed.
            assert {n: p for n, p in recorded_pids(workspace).items() if n != HIVE} == \
                {n: p for n, p in pids.items() if n != HIVE}

            # The board is what it was: every entry, revision and writer, and the full history.
            after = await board.snapshot()
            assert {key: after[key] for key in before} == before
            assert await board.history("tasks.t2") == history
            assert [e.writer for e in history] == ["human", "reviewer"]

            # The knowledge source works again: on the task written while down, and on a new one.
            await board.put("tasks.t4", {"title": "Written after restart", "status": "open"}, writer="human")
            for task in ("t3", "t4"):
                plan = await _plan(board, layout.log_file(HIVE), task)
                assert plan.writer == "intake"
                assert plan.depth == 1
                assert plan.value["task"] == f"tasks.{task}"
        finally:
            await nc.close()

    asyncio.run(asyncio.wait_for(scenario(), 90))
