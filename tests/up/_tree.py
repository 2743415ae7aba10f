"""Shared by the ``subhive up`` tests: the CLI as a subprocess, the processes a workspace's tree consists of,
what the supervisor recorded and reported, and bounded waits.

A process belongs to a workspace's tree when its command line names the workspace directory: the supervisor
(``--workspace``), the root (``-C``), each hive (``--workspace``) and nats-server (its config file lies under
``.subhive/nats/``). Every test workspace is its own temporary directory, so that is exact.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from subhive.up import UpLayout, down, pid_alive

T = TypeVar("T")

#: A started tree is ready within seconds; this only bounds a hang.
CLI_TIMEOUT = 120.0
#: What every scaffolded workspace of these tests runs: the three kinds `subhive new` knows best.
HIVES = ("backend", "db", "web")


class CopyTemplate(Protocol):
    """Makes a copy of the scaffolded template (``conftest.py``), leaving out the files and directories named in
    ``without`` (e.g. ``"web"`` for the ui hive); whatever runs in it is stopped when the fixture ends."""

    def __call__(self, *without: str) -> Path: ...


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("SUBHIVE_")}


def subhive(workspace: Path, *args: str, timeout: float = CLI_TIMEOUT) -> Ran:
    """``subhive ARGS -C WORKSPACE`` as its own process, the way a user runs it."""
    proc = subprocess.run(
        [sys.executable, "-m", "subhive", *args, "-C", str(workspace)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=_env(),
        cwd=workspace,
        check=False,
    )
    return Ran(proc.returncode, proc.stdout, proc.stderr)


def spawn(workspace: Path, *args: str) -> subprocess.Popen[str]:
    """``subhive ARGS -C WORKSPACE`` started, not waited for (stdout and stderr piped)."""
    return subprocess.Popen(
        [sys.executable, "-m", "subhive", *args, "-C", str(workspace)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
        cwd=workspace,
    )


def finish(proc: subprocess.Popen[str], timeout: float = CLI_TIMEOUT) -> Ran:
    """Wait for a spawned command (killed if it outlives ``timeout``)."""
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
    return Ran(proc.returncode, out, err)


def up(workspace: Path, *args: str) -> Ran:
    """``subhive up --detach``; the result says whether it came up."""
    return subhive(workspace, "up", "--detach", "--ready-timeout", "60", *args)


def recorded_pids(workspace: Path) -> dict[str, int]:
    """Every pid ``supervisor.json`` names: the supervisor, the root, NATS and each hive."""
    record = json.loads(UpLayout(workspace).supervisor_file.read_text(encoding="utf-8"))
    pids = {"supervisor": record["pid"], "root": record["root_pid"], "nats": record["nats_pid"]}
    pids |= {name: info["pid"] for name, info in record["hives"].items()}
    return pids


def processes_of(workspace: Path) -> dict[int, str]:
    """Every live process (zombies excluded) whose command line names ``workspace``, with that command line."""
    needle = str(workspace).encode()
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if needle in cmdline and pid_alive(int(entry.name)):
            found[int(entry.name)] = cmdline.replace(b"\0", b" ").decode(errors="replace").strip()
    return found


def events(workspace: Path) -> list[dict[str, Any]]:
    """What the supervisor reported so far (progress.jsonl), in order."""
    path = UpLayout(workspace).progress_file
    if not path.exists():
        return []
    found = []
    for line in path.read_text(encoding="utf-8").splitlines():
        with contextlib.suppress(ValueError):
            found.append(json.loads(line))
    return found


def wait_for(
    check: Callable[[], T | None], what: str, timeout: float = 30.0, *, context: Callable[[], str] | None = None
) -> T:
    """Poll ``check`` until it returns something truthy; fail saying ``what`` was awaited (and ``context()``:
    what helps to see why, e.g. a log's tail)."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(
                f"timed out after {timeout:g} s waiting for {what}" + (f"\n{context()}" if context is not None else "")
            )
        time.sleep(0.05)


def tail(path: Path, lines: int = 30) -> str:
    """The last lines of a log, for a failure message."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return f"({path} cannot be read)"
    return f"--- {path} ---\n" + "\n".join(text[-lines:])


def tear_down(workspace: Path) -> None:
    """Stop what still runs of this workspace's tree (``down``, then SIGKILL for what is left), so a failing
    test leaves nothing behind either."""
    if not processes_of(workspace):
        return
    with contextlib.suppress(Exception):
        down(workspace, timeout=10)
    for pid in processes_of(workspace):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def assert_clean_error(ran: Ran, code: int, error_code: str) -> None:
    """A refusal the CLI way: the exit code, an ``error:`` line carrying the stable code, a hint, no traceback."""
    assert ran.code == code, ran
    assert "error:" in ran.err, ran.err
    assert f"[{error_code}]" in ran.err, ran.err
    assert "hint:" in ran.err, ran.err
    assert "Traceback" not in ran.err + ran.out
    assert "internal error" not in ran.err
