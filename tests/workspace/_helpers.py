"""Helpers for workspace tests: a byte-exact picture of a directory tree."""

from __future__ import annotations

import os
from pathlib import Path


def snapshot(root: Path) -> dict[str, bytes | str]:
    """Every path under ``root`` with its bytes (files), ``"dir"`` or ``"link"``: equal before and after
    means a command touched nothing, not even a leftover staging directory."""
    found: dict[str, bytes | str] = {}
    for current, dirs, files in os.walk(root):
        base = Path(current)
        for name in dirs:
            found[str((base / name).relative_to(root))] = "link" if (base / name).is_symlink() else "dir"
        for name in files:
            path = base / name
            found[str(path.relative_to(root))] = "link" if path.is_symlink() else path.read_bytes()
    return found
