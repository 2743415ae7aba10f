"""Running a whole workspace: ``subhive up`` / ``down`` / ``status`` / ``logs``. :class:`Supervisor` is the
process that runs the tree; :func:`start`, :func:`down`, :func:`runtime_status` and :func:`follow` are what the
CLI calls. See docs/up.md.
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
from ._external import external_cluster, negotiate, tree_accounts, workspace_accounts
from ._join import HiveCredentials, export_credentials, join, write_elsewhere_credentials
from ._layout import UpLayout, pid_alive
from ._restart import RestartFailed, request_restart
from ._supervisor import Supervisor, UpOptions, start_waves

__all__ = [
    "DownReport",
    "HiveCredentials",
    "RestartFailed",
    "Supervisor",
    "UpFailed",
    "UpLayout",
    "UpOptions",
    "down",
    "export_credentials",
    "external_cluster",
    "follow",
    "framework_endpoint",
    "join",
    "lost_supervisor",
    "negotiate",
    "pid_alive",
    "recorded_processes",
    "request_restart",
    "running_supervisor",
    "runtime_status",
    "start",
    "start_waves",
    "tree_accounts",
    "workspace_accounts",
    "write_elsewhere_credentials",
]
