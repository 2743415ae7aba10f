"""Where a running workspace keeps its runtime files, all under the git-ignored ``.subhive/`` (docs/up.md#files)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .._files import read_json, write_json
from .._pids import pid_alive

__all__ = ["UpLayout", "pid_alive", "process_start", "read_json", "workspace_id", "write_json"]


@dataclass(frozen=True)
class UpLayout:
    workspace: Path

    @property
    def state_dir(self) -> Path:
        """Runtime state, git-ignored."""
        return self.workspace / ".subhive"

    @property
    def up_dir(self) -> Path:
        return self.state_dir / "up"

    @property
    def supervisor_file(self) -> Path:
        """The supervisor's pid and state, the NATS URL, the root address, every child's pid."""
        return self.up_dir / "supervisor.json"

    @property
    def progress_file(self) -> Path:
        """What the supervisor did, one JSON object per line (``subhive up`` shows it)."""
        return self.up_dir / "progress.jsonl"

    @property
    def creds_file(self) -> Path:
        """Where releases before NKeys kept every NATS password together; removed at the next ``up``."""
        return self.up_dir / "creds.json"

    @property
    def nkeys_dir(self) -> Path:
        """One NKey seed per identity, ``<hive>.nk`` and ``_admin.nk`` (mode 0600, directory 0700), kept across
        runs; each process is handed its own file's path, never another's (decision 0058)."""
        return self.up_dir / "nkeys"

    def seed_file(self, name: str) -> Path:
        """The NKey seed of a hive, or of the framework for ``subhive.bus.ADMIN_USER``."""
        return self.nkeys_dir / f"{name}.nk"

    @property
    def hives_dir(self) -> Path:
        """Each hive's heartbeat, ``<hive>.json``: state, message counters, blackboard size."""
        return self.up_dir / "hives"

    @property
    def logs_dir(self) -> Path:
        """``<name>.log``: the output of the supervisor, the root, the mocks and each hive."""
        return self.state_dir / "logs"

    @property
    def nats_dir(self) -> Path:
        """The JetStream store (streams, dead letters, blackboards) and NATS's own log."""
        return self.state_dir / "nats"

    @property
    def keys_dir(self) -> Path:
        """Each hive's gRPC tokens, ``<hive>.json``, to present and to verify (mode 0600, directory 0700)."""
        return self.up_dir / "keys"

    def status_file(self, hive: str) -> Path:
        return self.hives_dir / f"{hive}.json"

    def log_file(self, name: str) -> Path:
        return self.logs_dir / f"{name}.log"


def process_start(pid: int) -> int | None:
    """When process ``pid`` started, in clock ticks after boot (field 22 of ``/proc/<pid>/stat``): with the pid,
    it names one process for as long as the machine runs, where a pid alone may since belong to another
    program. None when there is no such process (or no ``/proc``)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            # The name (field 2) is in parentheses and may hold spaces or ")": fields 3 on follow the last ")".
            fields = stat.read().rsplit(")", 1)[-1].split()
        return int(fields[22 - 3])
    except (OSError, IndexError, ValueError):
        return None


def workspace_id(workspace: Path) -> list[int] | None:
    """The workspace directory's device and inode: they follow the directory when it is moved, and differ for a
    copy of it (whose ``.subhive/`` record still names the original's processes). None when it is gone."""
    try:
        info = os.stat(workspace)
    except OSError:
        return None
    return [info.st_dev, info.st_ino]
