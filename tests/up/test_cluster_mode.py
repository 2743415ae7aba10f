"""``[nats] nodes = 3`` in hive.toml: ``subhive up`` runs the tree on a local 3-node cluster, and a node killed
with SIGKILL is restarted while the hives ride it out (docs/cluster.md, decision 0057)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from pathlib import Path

import nats
import pytest

from subhive.bus import ADMIN_USER
from subhive.hive import BoardSchema, Entry, KvBlackboard
from subhive.up import UpLayout, pid_alive

from ._tree import CopyTemplate, events, recorded_pids, subhive, tail, up, wait_for

HIVE = "backend"


@pytest.fixture(scope="module")
def clustered_tree(module_template_copy: CopyTemplate) -> Path:
    workspace = module_template_copy("web")
    with (workspace / "hive.toml").open("a", encoding="utf-8") as config:
        config.write("\n[nats]\nnodes = 3\n")
    ran = up(workspace)
    assert ran.code == 0, ran
    return workspace


def _record(workspace: Path) -> dict[str, object]:
    record: dict[str, object] = json.loads(UpLayout(workspace).supervisor_file.read_text(encoding="utf-8"))
    return record


async def _planned(board: KvBlackboard, workspace: Path, task: str, timeout: float = 60.0) -> Entry:
    """The plan the backend's ``Intake`` source writes for ``tasks.<task>``, once it is there."""
    deadline = time.monotonic() + timeout
    while (entry := await board.get(f"plans.{task}")) is None:
        if time.monotonic() > deadline:
            raise AssertionError(f"no plans.{task} after {timeout:g} s\n{tail(UpLayout(workspace).log_file(HIVE))}")
        await asyncio.sleep(0.05)
    return entry


def test_up_runs_the_tree_on_three_nodes_that_each_hold_every_board(clustered_tree: Path) -> None:
    record = _record(clustered_tree)
    urls = str(record["nats"]).split(",")
    pids = record["nats_pids"]
    assert len(urls) == 3
    assert isinstance(pids, list)
    assert len(pids) == 3
    assert all(pid_alive(pid) for pid in pids)
    status = subhive(clustered_tree, "status", "--format", "json")
    assert status.code == 0, status
    health = {name: info["health"] for name, info in json.loads(status.out)["runtime"]["hives"].items()}
    assert health == {"backend": "ready", "db": "ready"}

    async def replicas() -> int:
        nc = await nats.connect(urls, nkeys_seed=str(UpLayout(clustered_tree).seed_file(ADMIN_USER)))
        try:
            info = (await nc.jetstream().stream_info(f"KV_bb_{HIVE}")).cluster
            return 1 + len(info.replicas or []) if info is not None else 1
        finally:
            await nc.close()

    assert asyncio.run(replicas()) == 3


def test_a_node_killed_with_sigkill_is_restarted_and_the_hives_ride_it_out(clustered_tree: Path) -> None:
    """The node leading the backend's board dies: a write made meanwhile is planned by the backend (its
    controller's consumer moves to a surviving node), no hive restarts, and the supervisor brings the node back."""
    workspace = clustered_tree
    record = _record(workspace)
    urls = str(record["nats"]).split(",")
    hives_before = {name: pid for name, pid in recorded_pids(workspace).items() if name in ("backend", "db")}
    schema = BoardSchema.load(workspace / "subhives" / HIVE / "blackboard.schema.json", hive=HIVE)

    async def scenario() -> int:
        nc = await nats.connect(urls, nkeys_seed=str(UpLayout(workspace).seed_file(ADMIN_USER)))
        try:
            js = nc.jetstream()
            board = await KvBlackboard.open(js, HIVE, schema, failover=30.0)
            await board.put("tasks.c1", {"title": "Before the node died", "status": "open"}, writer="human")
            await _planned(board, workspace, "c1")
            leader = (await js.stream_info(f"KV_bb_{HIVE}")).cluster
            assert leader is not None
            assert leader.leader
            victim = int(str(record["nats_pids"][int(leader.leader.removeprefix("n")) - 1]))  # type: ignore[index]
            os.kill(victim, signal.SIGKILL)
            await board.put("tasks.c2", {"title": "While a node is down", "status": "open"}, writer="human")
            plan = await _planned(board, workspace, "c2")
            assert plan.value["task"] == "tasks.c2"
            return victim
        finally:
            await nc.close()

    victim = asyncio.run(asyncio.wait_for(scenario(), 120))
    wait_for(
        lambda: "nats.restarted" in [e["event"] for e in events(workspace)],
        "the supervisor to restart the node",
        60,
        context=lambda: str(events(workspace)[-3:]),
    )
    pids = _record(workspace)["nats_pids"]
    assert isinstance(pids, list)
    assert victim not in pids
    assert len(pids) == 3
    assert all(pid_alive(pid) for pid in pids)
    hives_after = {name: pid for name, pid in recorded_pids(workspace).items() if name in ("backend", "db")}
    assert hives_after == hives_before  # the hives rode it out
