"""A supervisor killed with SIGKILL early in its start (an OOM killer, or ``down`` after ``up --detach`` gave up on
a long provisioning), with ``up`` gone too: ``subhive down`` still stops every process it had started, because
each child is in the record from the moment it exists, not from the end of a stage that may take minutes."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path

import pytest

from subhive.bus import EmbeddedServer, ServerConfig
from subhive.up import UpLayout, pid_alive

from ._tree import events, finish, processes_of, spawn, subhive, tail, wait_for


def _reported(workspace: Path, event: str) -> bool:
    return any(e["event"] == event for e in events(workspace))


@pytest.mark.parametrize(
    ("stage", "nodes", "started"),
    [
        # The root runs while contracts are negotiated and stubs generated, before NATS exists.
        ("root.started", 1, {"subhive root": 1}),
        # NATS runs while the streams, boards and consumers are made (minutes, for thousands on a cluster).
        ("nats.started", 1, {"subhive root": 1, "nats-server": 1}),
        ("nats.started", 3, {"subhive root": 1, "nats-server": 3}),
    ],
)
def test_down_stops_what_a_supervisor_killed_early_had_started(
    one_hive_workspace: Path, stage: str, nodes: int, started: dict[str, int]
) -> None:
    workspace = one_hive_workspace
    if nodes > 1:
        with (workspace / "hive.toml").open("a", encoding="utf-8") as config:
            config.write(f"\n[nats]\nnodes = {nodes}\n")
    up = spawn(workspace, "up", "--detach")
    try:
        wait_for(lambda: _reported(workspace, stage), f"the supervisor to say {stage}", timeout=60)
        supervisor = json.loads(UpLayout(workspace).supervisor_file.read_text(encoding="utf-8"))["pid"]
        os.kill(supervisor, signal.SIGSTOP)  # held at this stage: it starts nothing more, records nothing more
        # `up` would run `down` itself when it sees the supervisor go; here it is gone first, as when it gave up.
        up.kill()
        up.wait(30)
        tree = processes_of(workspace)
        os.kill(supervisor, signal.SIGKILL)
    finally:
        finish(up)
    assert {name: sum(name in line for line in tree.values()) for name in started} == started, tree

    ran = subhive(workspace, "down")
    assert ran.code == 0, ran

    def left() -> str:
        running = "\n".join(f"{pid}: {line}" for pid, line in sorted(processes_of(workspace).items()))
        record = UpLayout(workspace).supervisor_file.read_text(encoding="utf-8")
        return f"left running:\n{running}\nrecord: {record}\n{tail(UpLayout(workspace).log_file('supervisor'))}"

    # `down` waits for what it killed; the bound only absorbs a slow /proc.
    wait_for(lambda: not processes_of(workspace), "no process of the tree left after down", timeout=10, context=left)


def test_nats_server_names_its_pid_the_moment_it_exists(tmp_path: Path) -> None:
    """What the supervisor records NATS with: each process's pid, handed over inside ``start`` (before the
    server is ready) and at each restart."""
    seen: list[tuple[int, bool]] = []

    async def run() -> None:
        server = await EmbeddedServer.start(
            ServerConfig(tmp_path / "nats"), launched=lambda pid: seen.append((pid, pid_alive(pid)))
        )
        try:
            first = server.pid
            assert seen == [(first, True)]
            await server.restart()
            assert seen == [(first, True), (server.pid, True)]
            assert server.pid != first
        finally:
            await server.stop()

    asyncio.run(asyncio.wait_for(run(), 60))
