"""A host process of several hives (``python -m subhive.hive --host``, decision 0117) stops a hive that is still
starting at once: waiting for its turn among its siblings, or for a NATS server that never answers. Before, the
stop waited for the start (up to the handshake's 60 s timeout), so the supervisor gave up and killed the whole
host, siblings and all."""

from __future__ import annotations

import json
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from subhive.bus import nkey_of
from subhive.hive import _host

HIVES = ("backend", "db", "web")  # the template's: two start at once, the third waits for its turn


class Host:
    """The host process, and its reports on stdout as lines, read by a thread: a ``select()`` on the pipe would
    miss lines already pulled into the file's buffer (two exits written at once arrive as one chunk) and wait
    for nothing."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put("")  # the host ended

    def send(self, command: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()

    def exits(self, count: int, within: float) -> list[dict[str, Any]]:
        """The next ``count`` exit reports, failing after ``within`` seconds."""
        said: list[dict[str, Any]] = []
        deadline = time.monotonic() + within
        while len(said) < count:
            try:
                line = self.lines.get(timeout=max(deadline - time.monotonic(), 0))
            except queue.Empty:
                raise AssertionError(f"only {said} within {within} s") from None
            assert line, f"the host ended; it said {said}"
            if not json.loads(line).get("listening"):  # that it has imported (decision 0139): no exit
                said.append(json.loads(line))
        return said


@pytest.fixture
def silent_server() -> Iterator[socket.socket]:
    """A TCP listener on loopback that never says a word: a NATS handshake there waits. The connections wait in
    its backlog until the test accepts them: how many hives reached the server."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield listener


def _handshakes(listener: socket.socket, count: int, within: float) -> list[socket.socket]:
    """The next ``count`` connections to ``listener``, failing after ``within`` seconds."""
    accepted: list[socket.socket] = []
    deadline = time.monotonic() + within
    while len(accepted) < count:
        listener.settimeout(max(deadline - time.monotonic(), 0.001))
        try:
            accepted.append(listener.accept()[0])
        except TimeoutError:
            raise AssertionError(f"only {len(accepted)} handshakes reached the server within {within} s") from None
    return accepted


def _waiting(listener: socket.socket) -> int:
    """How many connections wait in ``listener``'s backlog now (they stay there after the client closed)."""
    listener.setblocking(False)
    count = 0
    while True:
        try:
            listener.accept()[0].close()
        except BlockingIOError:
            return count
        count += 1


@pytest.fixture
def host(scaffolded_workspace: Path) -> Iterator[Host]:
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
        yield Host(process)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def _start(host: Host, hive: str, run: int, server: socket.socket, tmp_path: Path) -> None:
    nkey_of(tmp_path / f"{hive}.nk")  # its seed; the handshake never gets that far anyway
    url = f"nats://127.0.0.1:{server.getsockname()[1]}"
    host.send({"op": "start", "hive": hive, "run": run, "nkey": str(tmp_path / f"{hive}.nk"), "nats_url": url,
               "log": str(tmp_path / f"{hive}.log")})  # fmt: skip


def test_the_host_says_it_listens_once_imported_before_any_command(host: Host) -> None:
    """What the supervisor waits for before it starts the next host (decision 0139)."""
    assert json.loads(host.lines.get(timeout=60)) == {"host": "host-1", "listening": True}
    host.process.send_signal(signal.SIGTERM)
    assert host.process.wait(30) == 0


def test_a_hive_still_starting_stops_at_once_and_its_siblings_too(
    host: Host, silent_server: socket.socket, tmp_path: Path
) -> None:
    assert _host.STARTING_AT_ONCE == 2  # backend and db start at once, web waits for its turn
    _start(host, "backend", 1, silent_server, tmp_path)
    _start(host, "db", 2, silent_server, tmp_path)
    # Both in their handshake with the silent server: they hold the host's turns, so web, started now, waits.
    handshakes = _handshakes(silent_server, 2, within=30)
    _start(host, "web", 3, silent_server, tmp_path)
    started = time.monotonic()
    host.send({"op": "stop", "hive": "web", "run": 3})  # waiting for its turn
    host.send({"op": "stop", "hive": "backend", "run": 1})  # waiting for the server
    assert sorted((e["hive"], e["run"], e["exit"]) for e in host.exits(2, within=10)) == [
        ("backend", 1, 0),
        ("web", 3, 0),
    ]
    assert time.monotonic() - started < 10  # not the 60 s handshake timeout
    assert host.process.poll() is None  # the host, and db in it, run on
    # SIGTERM stops the host's last hive, still starting, just as fast, and the host exits 0.
    host.process.send_signal(signal.SIGTERM)
    assert [(e["hive"], e["exit"]) for e in host.exits(1, within=10)] == [("db", 0)]
    assert host.process.wait(timeout=10) == 0
    assert _waiting(silent_server) == 0  # web never got a turn: it never reached the server
    for connection in handshakes:
        connection.close()
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
