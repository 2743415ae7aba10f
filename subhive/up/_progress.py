"""Reading the supervisor's progress file as it grows: one JSON event a line (docs/up.md#files)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["tail_progress"]


def tail_progress(
    path: Path,
    on_event: Callable[[dict[str, Any]], None],
    stop: Callable[[dict[str, Any]], bool],
    *,
    position: int = 0,
    alive: Callable[[], bool] | None = None,
    timeout: float | None = None,
    quiet: float | None = None,
) -> dict[str, Any] | None:
    """Hand each event appended after byte ``position`` to ``on_event`` and return the first for which ``stop``
    is true; None when ``alive`` says the writer went away first, ``timeout`` passed, or ``quiet`` seconds
    passed without an event (a writer still making progress is waited for). A line that is not JSON (one being
    written) is skipped."""
    deadline = None if timeout is None else time.monotonic() + timeout
    silence = None if quiet is None else time.monotonic() + quiet
    buffer = ""
    while (deadline is None or time.monotonic() < deadline) and (silence is None or time.monotonic() < silence):
        try:
            with open(path, encoding="utf-8") as handle:
                handle.seek(position)
                chunk = handle.read()
                position = handle.tell()
        except FileNotFoundError:
            chunk = ""
        buffer += chunk
        while "\n" in buffer:
            line, buffer = buffer.split("\n", 1)
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if not isinstance(event, dict):
                continue
            on_event(event)
            if stop(event):
                return dict(event)
            if quiet is not None:
                silence = time.monotonic() + quiet
        if not chunk:
            if alive is not None and not alive():
                return None
            time.sleep(0.05)
    return None
