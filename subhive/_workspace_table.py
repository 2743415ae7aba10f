"""One table of hive.toml, read where the workspace layer is out of reach (schema loading, the proto compiler).

``[schemas]`` and ``[protobuf]`` steer how files are read even outside a running workspace; their readers live
below ``subhive.workspace`` and raise the table's first problem as an InputError pointing into hive.toml.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from .errors import InputError, Location

__all__ = ["read_workspace_table"]

T = TypeVar("T")
#: ``report(pointer, code, message, hint)``, as the table readers take it.
Report = Callable[[str, str, str, str], None]


def read_workspace_table(manifest: Path, table: str, read: Callable[[Any, Path, Report], T]) -> T | None:
    """``read(value, workspace_root, report)`` on hive.toml's ``[table]``; None when there is none. Raises
    InputError for a file that does not parse (``workspace.invalid``) and for the table's first problem."""
    try:
        data: dict[str, Any] = tomllib.loads(manifest.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InputError(
            f"cannot read the workspace's [{table}] settings: {exc}",
            code="workspace.invalid",
            location=Location(file=str(manifest)),
            hint="fix hive.toml (`subhive status` shows every problem with its line)",
        ) from exc
    if table not in data:
        return None
    found: list[tuple[str, str, str, str]] = []
    result = read(data[table], manifest.parent, lambda *p: found.append(p))
    if found:
        pointer, code, message, hint = found[0]
        raise InputError(message, code=code, location=Location(file=str(manifest), pointer=pointer), hint=hint)
    return result
