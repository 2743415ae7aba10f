"""Whether a process still exists, as the supervisor, `down` and `status` need to know it: a zombie (killed, not
yet reaped by its parent) is gone."""

from __future__ import annotations

import os

__all__ = ["pid_alive"]


def pid_alive(pid: object) -> bool:
    """Whether a process with this pid exists (a zombie counts as gone)."""
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except FileNotFoundError:  # reaped between the two looks (its parent waited for the zombie), unless no /proc
        return not os.path.isdir("/proc/self")
    except OSError:
        return True
