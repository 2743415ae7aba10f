"""Every problem of every ``subhive.toml``, for the commands that read the hive tree.

``status``, ``codegen``, ``up`` and ``contract lint`` all check the manifests first and report every problem
of every file at once (file:line, pointer, hint; exit 2): a hive whose manifest is broken never silently
drops out of the tree.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import Problem, SubhiveError
from ..workspace import find_root, open_workspace

__all__ = ["check_manifests", "manifest_problems"]


def check_manifests(start: Path) -> None:
    """Raise :class:`ManifestInvalid` listing every manifest problem of the workspace at or above ``start``."""
    error = open_workspace(start).hives().error()
    if error is not None:
        raise error


def manifest_problems(start: Path) -> tuple[Problem, ...]:
    """The manifest problems of the workspace at or above ``start``; none when ``start`` is in no workspace."""
    try:
        root = find_root(start)
    except SubhiveError:
        return ()  # `contract lint` also lints contracts outside any workspace
    try:
        workspace = open_workspace(root)
    except SubhiveError as exc:  # hive.toml itself is broken: its problems (ManifestInvalid lists them all)
        return exc.problems
    return workspace.hives().problems
