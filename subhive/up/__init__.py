"""Running a whole workspace: ``subhive up`` / ``down`` / ``status`` / ``logs`` (docs/up.md).

:class:`Supervisor` is the background process that starts the root, negotiates, generates stubs, starts NATS
with per-hive permissions and every sub-hive, restarts what crashes and stops everything in order;
:func:`start`, :func:`down`, :func:`runtime_status` and :func:`follow` are what the CLI calls.
"""

from ._control import (
    DownReport,
    UpFailed,
    down,
    follow,
    framework_endpoint,
    lost_supervisor,
    recorded_processes,
    running_supervisor,
    runtime_status,
    start,
)
from ._layout import UpLayout, pid_alive
from ._restart import RestartFailed, request_restart
from ._supervisor import Supervisor, UpOptions, start_waves

__all__ = [
    "DownReport",
    "RestartFailed",
    "Supervisor",
    "UpFailed",
    "UpLayout",
    "UpOptions",
    "down",
    "follow",
    "framework_endpoint",
    "lost_supervisor",
    "pid_alive",
    "recorded_processes",
    "request_restart",
    "running_supervisor",
    "runtime_status",
    "start",
    "start_waves",
]
