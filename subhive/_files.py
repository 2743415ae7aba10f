"""Small JSON state files that one process writes and others read while it runs (heartbeats, records), and
trees of files written in one go.

Writes are atomic (a temporary file renamed into place), so a reader never sees half a file; a reader that
finds a file missing or unreadable gets ``None`` and tries again later.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["read_json", "write_json", "write_tree"]


def read_json(path: Path) -> dict[str, Any] | None:
    """The JSON object in ``path``, or None when it is missing or half-written."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_json(path: Path, data: dict[str, Any], *, private: bool = False) -> None:
    """Write atomically (readers never see half a file); ``private`` makes it 0600 before anything is in it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    mode = 0o600 if private else 0o644
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode)
    # os.open's mode only applies to a file it creates: a temporary file left by a crashed writer keeps its
    # own (perhaps wider) mode unless set here, before anything secret is in it.
    os.fchmod(fd, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(data, handle, sort_keys=True)
    os.replace(temporary, path)


def write_tree(directory: Path, files: Mapping[str, bytes]) -> None:
    """Write ``files`` under ``directory``, unsynced (the root's Barrier makes them durable where that matters)."""
    directory.mkdir(parents=True, exist_ok=True)
    made = {directory}
    for name, content in files.items():
        path = directory / name
        if path.parent not in made:
            path.parent.mkdir(parents=True, exist_ok=True)
            made.add(path.parent)
        with open(path, "wb") as handle:
            handle.write(content)
