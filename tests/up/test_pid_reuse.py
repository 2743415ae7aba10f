"""``down`` and ``status`` act only on the processes a run of this workspace recorded: a recorded pid the system
has since given to another program (its start time differs), or a record copied from another workspace, is
neither reported as running nor signalled. No tree runs here: the record is written by hand around a real,
unrelated ``sleep`` whose command line says "subhive", which a check of the command line alone would accept."""

from __future__ import annotations

import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from subhive.up import UpLayout, down, lost_supervisor, recorded_processes, running_supervisor, runtime_status
from subhive.up._layout import process_start, workspace_id, write_json


@pytest.fixture
def imposter() -> Iterator[subprocess.Popen[bytes]]:
    """A process that is not part of any tree, though its command line contains "subhive"."""
    sleep = shutil.which("sleep")
    assert sleep is not None
    process = subprocess.Popen(["subhive-imposter", "60"], executable=sleep)
    try:
        yield process
    finally:
        process.kill()
        process.wait(5)


def _record(workspace: Path, pid: int, start: int | None, *, at: Path | None = None) -> None:
    """A record naming ``pid`` as the supervisor, the root, NATS and a hive, as an ``up`` of ``at`` writes it."""
    write_json(
        UpLayout(workspace).supervisor_file,
        {
            "pid": pid,
            "state": "ready",
            "workspace": str(at or workspace),
            "workspace_id": workspace_id(at or workspace),
            "root": "127.0.0.1:1",
            "nats": "nats://127.0.0.1:1",
            "root_pid": pid,
            "nats_pid": pid,
            "mocks_pid": None,
            "hives": {"db": {"pid": pid, "restarts": 0, "exits": []}},
            "starts": {str(pid): start} if start is not None else {},
        },
    )


def _listed_running(workspace: Path) -> dict[str, Any]:
    return {name: info["pid"] for name, info in recorded_processes(workspace).items() if info["alive"]}


def test_a_reused_pid_is_neither_listed_as_running_nor_killed(
    tmp_path: Path, imposter: subprocess.Popen[bytes]
) -> None:
    started = process_start(imposter.pid)
    assert started is not None
    _record(tmp_path, imposter.pid, started + 1)  # the pid once named a child of ours; that one started earlier

    assert running_supervisor(tmp_path) is None
    assert runtime_status(tmp_path) is None
    assert _listed_running(tmp_path) == {}
    lost = lost_supervisor(tmp_path)
    assert lost is not None
    assert lost["running"] == {}
    report = down(tmp_path, timeout=2)
    assert report.killed == []
    assert not report.was_running
    assert imposter.poll() is None  # still running: nothing signalled it


def test_a_record_without_start_times_is_trusted_with_nothing(
    tmp_path: Path, imposter: subprocess.Popen[bytes]
) -> None:
    _record(tmp_path, imposter.pid, None)
    assert _listed_running(tmp_path) == {}
    assert down(tmp_path, timeout=2).killed == []
    assert imposter.poll() is None


def test_a_record_copied_from_another_workspace_names_none_of_ours(
    tmp_path: Path, imposter: subprocess.Popen[bytes]
) -> None:
    original, copy = tmp_path / "original", tmp_path / "copy"
    original.mkdir()
    copy.mkdir()
    _record(copy, imposter.pid, process_start(imposter.pid), at=original)  # right start time, other workspace
    assert running_supervisor(copy) is None
    assert _listed_running(copy) == {}
    assert down(copy, timeout=2).killed == []
    assert imposter.poll() is None


def test_the_process_the_record_names_is_ours_and_down_stops_it(
    tmp_path: Path, imposter: subprocess.Popen[bytes]
) -> None:
    # The same record with the right start time: the checks above refuse the imposter for its start time only.
    _record(tmp_path, imposter.pid, process_start(imposter.pid))
    assert running_supervisor(tmp_path) is not None
    assert _listed_running(tmp_path) == dict.fromkeys(("supervisor", "root", "nats", "db"), imposter.pid)
    report = down(tmp_path, timeout=0.5)
    assert report.was_running
    assert imposter.wait(5) == -signal.SIGTERM  # the supervisor's pid gets SIGTERM first
