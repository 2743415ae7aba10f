"""A host process of several hives (``python -m subhive.hive --host``, decision 0117) stops a hive that is still
starting at once: waiting for its turn among its siblings, or for a NATS server that never answers. Before, the
stop waited for the start (up to the handshake's 60 s timeout), so the supervisor gave up and killed the whole
host, siblings and all."""

from __future__ import annotations

import json
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from subhive.bus import nkey_of

HIVES = ("backend", "db", "web")  # the template's: two start at once, the third waits for its turn


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A TCP port on loopback that accepts connections and never says a word: a NATS handshake there waits."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield f"nats://127.0.0.1:{listener.getsockname()[1]}"


@pytest.fixture
def host(scaffolded_workspace: Path) -> Iterator[subprocess.Popen[str]]:
    workspace = scaffolded_workspace
    process = subprocess.Popen(
        [sys.executable, "-m", "subhive.hive", "--workspace", str(workspace), "--host", "host-1"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=workspace,  # as up starts it: the workspace's stubs import from there
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def _send(process: subprocess.Popen[str], command: dict[str, Any]) -> None:
    assert process.stdin is not None
    process.stdin.write(json.dumps(command) + "\n")
    process.stdin.flush()


def _exits(process: subprocess.Popen[str], count: int, within: float) -> list[dict[str, Any]]:
    """The next ``count`` exit reports of the host, failing after ``within`` seconds."""
    assert process.stdout is not None
    said: list[dict[str, Any]] = []
    deadline = time.monotonic() + within
    while len(said) < count:
        left = deadline - time.monotonic()
        ready, _, _ = select.select([process.stdout], [], [], max(left, 0))
        assert ready, f"only {said} within {within} s"
        line = process.stdout.readline()
        assert line, f"the host ended; it said {said}"
        said.append(json.loads(line))
    return said


def test_a_hive_still_starting_stops_at_once_and_its_siblings_too(
    host: subprocess.Popen[str], silent_server: str, tmp_path: Path
) -> None:
    for run, hive in enumerate(HIVES, start=1):
        _send(host, {"op": "start", "hive": hive, "run": run, "nkey": str(tmp_path / f"{hive}.nk"),
                     "nats_url": silent_server, "log": str(tmp_path / f"{hive}.log")})  # fmt: skip
        nkey_of(tmp_path / f"{hive}.nk")  # its seed, made now: the handshake never gets that far anyway
    time.sleep(1.0)  # each started: two wait for the silent server, the third for its turn
    assert host.poll() is None
    started = time.monotonic()
    _send(host, {"op": "stop", "hive": "web", "run": 3})  # waiting for its turn
    _send(host, {"op": "stop", "hive": "backend", "run": 1})  # waiting for the server
    assert sorted((e["hive"], e["run"], e["exit"]) for e in _exits(host, 2, within=10)) == [
        ("backend", 1, 0),
        ("web", 3, 0),
    ]
    assert time.monotonic() - started < 10  # not the 60 s handshake timeout
    assert host.poll() is None  # the host, and db in it, run on
    # SIGTERM stops the host's last hive, still starting, just as fast, and the host exits 0.
    host.send_signal(signal.SIGTERM)
    assert [(e["hive"], e["exit"]) for e in _exits(host, 1, within=10)] == [("db", 0)]
    assert host.wait(timeout=10) == 0
    assert "error" not in (tmp_path / "backend.log").read_text(encoding="utf-8")


def test_a_start_that_finishes_despite_its_cancel_is_stopped_not_left_running() -> None:
    # asyncio.wait_for in Python 3.11 may return a result it already had instead of raising CancelledError: the
    # start then hands back a running hive after all, which must be stopped, not dropped.
    import asyncio

    from subhive.hive._host import _Run, _unless_stopped

    stopped: list[str] = []

    class Started:
        async def stop(self) -> None:
            stopped.append("db")

    async def start() -> Any:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            return Started()  # swallowed the cancel and finished anyway
        raise AssertionError("not cancelled")

    async def scenario() -> object:
        run = _Run("db", 1)
        asyncio.get_running_loop().call_later(0.05, run.stop.set)
        return await _unless_stopped(run, start())

    assert asyncio.run(scenario()) is None
    assert stopped == ["db"]
