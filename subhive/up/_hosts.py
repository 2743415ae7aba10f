"""Host processes: several sibling hives in one ``python -m subhive.hive --host`` process (``[up]
hives_per_process``; docs/decisions/0117-hives-share-a-host-process.md).

The supervisor keeps treating each hive as a child of its own: a hive's run in a host is a :class:`HostedRun`,
which answers ``poll``, ``terminate``, ``kill`` and ``wait`` the way a ``subprocess.Popen`` does, so restarts
with backoff, ``subhive restart``, following the lock and ``down`` work per hive. The host process itself is a
:class:`Host`: started with the first of its hives, started again by the first of them to restart after it
died (a crash of the process ends every run in it, and each of its hives then restarts as after any crash).
"""

from __future__ import annotations

import contextlib
import json
import logging
import subprocess
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["Host", "HostedRun", "group_hives"]

log = logging.getLogger("subhive.up")


def group_hives(parents: Mapping[str, str], per_process: int) -> dict[str, list[str]]:
    """Hosts for hives (name -> parent): siblings together, up to ``per_process`` a host, in name order; no
    hosts at all for ``per_process`` 1 (each hive its own process, as always).

    >>> group_hives({"a": "root", "b": "root", "c": "root", "d": "api"}, 2)
    {'host.api.1': ['d'], 'host.root.1': ['a', 'b'], 'host.root.2': ['c']}
    """
    if per_process <= 1:
        return {}
    by_parent: dict[str, list[str]] = {}
    for name, parent in sorted(parents.items()):
        by_parent.setdefault(parent, []).append(name)
    hosts: dict[str, list[str]] = {}
    for parent, names in sorted(by_parent.items()):
        for n, start in enumerate(range(0, len(names), per_process), start=1):
            hosts[f"host.{parent}.{n}"] = names[start : start + per_process]
    return hosts


class Host:
    """One host process: its command line, environment (addresses only: each hive's secrets go on its stdin)
    and log; :meth:`start_hive` starts it when it is not running."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], log_path: Path, cwd: Path) -> None:
        self.name = name
        self.argv = argv
        self.env = env
        self.log_path = log_path
        self.cwd = cwd
        self.process: subprocess.Popen[bytes] | None = None
        #: Exit codes the host reported, by (hive, run); read by each HostedRun.
        self.exits: dict[tuple[str, int], int] = {}
        self._lock = threading.Lock()
        self._runs = 0
        #: Started and not yet ended runs here (what :meth:`idle` counts).
        self.active: set[tuple[str, int]] = set()
        self._looked = 0.0
        #: Set once the running process has imported what it needs and waits for its hives (it says so).
        self.listening = threading.Event()

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None and self.process.poll() is None else None

    def _launch(self) -> subprocess.Popen[bytes]:
        from ._supervisor import _mark_start

        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as out:
            _mark_start(out, self.name)
            process = subprocess.Popen(
                self.argv,
                cwd=self.cwd,
                env=self.env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=out,
                start_new_session=True,
            )
        self.exits.clear()
        self.active.clear()
        self.listening.clear()
        threading.Thread(target=self._read, args=(process,), name=f"{self.name}-exits", daemon=True).start()
        return process

    def _read(self, process: subprocess.Popen[bytes]) -> None:
        """The host's reports (a run ended, its code), until the host's stdout closes."""
        assert process.stdout is not None
        for line in process.stdout:
            with contextlib.suppress(ValueError, KeyError, TypeError):
                said = json.loads(line)
                if said.get("listening"):
                    if process is self.process:
                        self.listening.set()
                    continue
                with self._lock:
                    if process is self.process:
                        self.exits[(str(said["hive"]), int(said["run"]))] = int(said["exit"])

    def ensure_running(self) -> subprocess.Popen[bytes]:
        """The host process, started (again) when it is not running."""
        with self._lock:
            return self._running()

    def _running(self) -> subprocess.Popen[bytes]:
        if self.process is None or self.process.poll() is not None:
            if self.process is not None:
                self._reap()
            self.process = self._launch()
        return self.process

    def start_hive(self, hive: str, spec: dict[str, Any]) -> HostedRun:
        """Start ``hive`` here (the process first, when it is not running) with its own secrets in ``spec``."""
        with self._lock:
            self._running()
            assert self.process is not None
            self._runs += 1
            run = HostedRun(self, hive, self._runs, self.process)
            self.active.add((hive, run.run))
        self._send({"op": "start", "hive": hive, "run": run.run, **spec}, run.process)
        return run

    def stop_hive(self, run: HostedRun) -> None:
        self._send({"op": "stop", "hive": run.hive, "run": run.run}, run.process)

    def _send(self, command: dict[str, Any], process: subprocess.Popen[bytes]) -> None:
        if process.stdin is None or process.poll() is not None:
            return
        try:
            process.stdin.write(json.dumps(command).encode() + b"\n")
            process.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):  # it died meanwhile: its runs end with its exit code
            pass

    def ended(self, process: subprocess.Popen[bytes]) -> bool:
        """Whether ``process`` exited; asked of the system at most every 0.1 s for all the runs it holds (the
        supervisor polls each hive five times a second)."""
        if process.returncode is not None:
            return True
        now = time.monotonic()
        if now - self._looked < 0.1:
            return False
        self._looked = now
        return process.poll() is not None

    def kill(self, process: subprocess.Popen[bytes]) -> None:
        """SIGKILL the host process (a hive that would not stop in time): every run in it ends."""
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()

    @property
    def idle(self) -> bool:
        """No run of any hive left in the running process (their ends reported)."""
        with self._lock:
            return not (self.active - set(self.exits))

    def _reap(self) -> None:
        process = self.process
        if process is None:
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(5)
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError, ValueError):
                    stream.close()

    def stop(self, timeout: float) -> None:
        """SIGTERM (its hives stop cleanly), SIGKILL after ``timeout``."""
        process = self.process
        if process is None:
            return
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.terminate()
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
        self._reap()


class HostedRun:
    """One run of a hive in a host, as the supervisor sees a child process: ``pid`` is the host's, ``poll``
    gives the run's exit code once it ended (the host's own when the whole process died)."""

    def __init__(self, host: Host, hive: str, run: int, process: subprocess.Popen[bytes]) -> None:
        self.host = host
        self.hive = hive
        self.run = run
        self.process = process
        self.pid = process.pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            code = self.host.exits.get((self.hive, self.run))
            if code is None and self.host.ended(self.process):
                # The host is gone: its last reports may still be on their way through the pipe.
                time.sleep(0.01)
                code = self.host.exits.get((self.hive, self.run), self.process.returncode)
            self.returncode = code
        return self.returncode

    def terminate(self) -> None:
        self.host.stop_hive(self)

    def kill(self) -> None:
        if self.poll() is None:
            self.host.kill(self.process)

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(self.host.argv, timeout or 0)
            time.sleep(0.02)
        return code
