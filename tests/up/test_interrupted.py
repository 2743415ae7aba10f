"""``subhive up`` interrupted: Ctrl-C in the foreground, before or after every hive is ready; ``subhive down``
while ``up`` is still starting; the supervisor killed with SIGKILL while ``up`` follows it. None leaves a
process of the tree behind, and ``up`` never claims a tree is ready that is being stopped."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from subhive.up import pid_alive

from ._tree import (
    CLI_TIMEOUT,
    assert_clean_error,
    events,
    finish,
    processes_of,
    recorded_pids,
    spawn,
    subhive,
    wait_for,
)


@pytest.fixture
def foreground_up(one_hive_workspace: Path) -> Iterator[subprocess.Popen[str]]:
    """``subhive up`` without ``--detach``, as a user runs it in a terminal (killed if a test leaves it)."""
    proc = spawn(one_hive_workspace, "up")
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)


def _read_until(proc: subprocess.Popen[str], text: str) -> str:
    """What ``proc`` wrote to stderr up to the line containing ``text`` (the test's timeout bounds it)."""
    assert proc.stderr is not None
    seen = ""
    while text not in seen:
        line = proc.stderr.readline()
        if not line:
            raise AssertionError(f"exited with {proc.wait()} before saying {text!r}:\n{seen}")
        seen += line
    return seen


def _reported(workspace: Path, event: str) -> bool:
    return any(e["event"] == event for e in events(workspace))


@pytest.fixture
def slow_to_start_workspace(one_hive_workspace: Path) -> Path:
    """The one-hive workspace whose hive takes a minute to import its knowledge: "while starting" is then a
    window no test can miss (a signal ends the sleep; nothing waits for it)."""
    module = one_hive_workspace / "subhives" / "db" / "db_hive" / "knowledge.py"
    module.write_text(module.read_text() + "\nimport time\n\ntime.sleep(60)\n")
    return one_hive_workspace


def test_ctrl_c_while_up_is_starting_stops_what_it_started(slow_to_start_workspace: Path) -> None:
    workspace = slow_to_start_workspace
    up = spawn(workspace, "up")
    try:
        wait_for(lambda: _reported(workspace, "hive.starting"), "the first hive to start", timeout=60)
        up.send_signal(signal.SIGINT)
    finally:
        result = finish(up)
    assert result.code == 130, result
    assert "Traceback" not in result.err
    # Not a bare ^C: up says what it stopped.
    assert "interrupted while starting: stopped supervisor, root, nats, db; nothing is left running" in result.err
    # The supervisor runs in a session of its own, so the terminal's Ctrl-C reached only `up`: it must stop
    # the supervisor before it exits, which stops the hives, the root and NATS.
    assert processes_of(workspace) == {}
    assert not _reported(workspace, "ready")


def test_ctrl_c_after_ready_stops_every_process(one_hive_workspace: Path, foreground_up: subprocess.Popen[str]) -> None:
    workspace = one_hive_workspace
    _read_until(foreground_up, "Ctrl-C stops every hive")  # up is past start-up, following the tree
    tree = set(processes_of(workspace)) - {foreground_up.pid}
    assert len(tree) == 4  # supervisor, root, NATS, the hive
    foreground_up.send_signal(signal.SIGINT)
    _, err = foreground_up.communicate(timeout=CLI_TIMEOUT)
    assert foreground_up.returncode == 0, err
    assert "stopped: supervisor, root, nats, db" in err
    assert processes_of(workspace) == {}


def test_a_second_ctrl_c_while_the_tree_stops_leaves_nothing_running(
    one_hive_workspace: Path, foreground_up: subprocess.Popen[str]
) -> None:
    workspace = one_hive_workspace
    _read_until(foreground_up, "Ctrl-C stops every hive")
    hive = recorded_pids(workspace)["db"]
    foreground_up.send_signal(signal.SIGINT)
    # The hives go first: once this one is gone, up is waiting in `down` for the rest of the tree.
    wait_for(lambda: not pid_alive(hive), "the hive to be stopped")
    foreground_up.send_signal(signal.SIGINT)  # an impatient user
    _, err = foreground_up.communicate(timeout=CLI_TIMEOUT)
    assert foreground_up.returncode == 0, err
    assert "Traceback" not in err
    assert "stopped: supervisor, root, nats, db" in err
    assert processes_of(workspace) == {}


def test_down_while_up_is_starting_makes_up_fail_instead_of_reporting_ready(slow_to_start_workspace: Path) -> None:
    workspace = slow_to_start_workspace
    up = spawn(workspace, "up", "--detach")
    try:
        wait_for(lambda: _reported(workspace, "hive.starting"), "the first hive to start", timeout=60)
        ran = subhive(workspace, "down")
        assert ran.code == 0, ran
    finally:
        result = finish(up)
    assert_clean_error(result, 2, "up.stopped")
    assert not _reported(workspace, "ready")
    assert processes_of(workspace) == {}


def test_a_supervisor_killed_while_up_is_starting_leaves_no_process(slow_to_start_workspace: Path) -> None:
    workspace = slow_to_start_workspace
    up = spawn(workspace, "up", "--detach")
    try:
        wait_for(lambda: _reported(workspace, "hive.starting"), "the first hive to start", timeout=60)
        os.kill(recorded_pids(workspace)["supervisor"], signal.SIGKILL)  # what an OOM killer would do
    finally:
        result = finish(up)
    # Exit 2 as every failed up, not the supervisor's -9 (which the shell would see as 247).
    assert_clean_error(result, 2, "up.failed")
    assert "the supervisor exited with code -9" in result.err
    # Nobody stops what the supervisor had started, but `up`, which saw it go: NATS, the root, a hive.
    assert processes_of(workspace) == {}


def test_a_supervisor_killed_under_a_foreground_up_ends_it_and_leaves_no_process(
    one_hive_workspace: Path, foreground_up: subprocess.Popen[str]
) -> None:
    workspace = one_hive_workspace
    _read_until(foreground_up, "Ctrl-C stops every hive")
    supervisor = recorded_pids(workspace)["supervisor"]
    os.kill(supervisor, signal.SIGKILL)
    result = finish(foreground_up, timeout=30)  # up notices; it must not wait for a "stopped" never written
    assert_clean_error(result, 2, "up.supervisor_lost")
    assert f"the supervisor (pid {supervisor}) exited without stopping the tree" in result.err
    assert processes_of(workspace) == {}
