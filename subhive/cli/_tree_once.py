"""A workspace whose hive tree is read once: ``subhive status`` asks for it three times (the summary, the broken
manifests, the tree's warnings), and a tree of 500 hives takes half a second to read (decision 0139)."""

from __future__ import annotations

from dataclasses import dataclass

from ..workspace import HiveTree, Workspace

__all__ = ["read_once"]


@dataclass(frozen=True, slots=True)
class _TreeReadOnce(Workspace):
    tree: HiveTree

    def hives(self) -> HiveTree:
        return self.tree


def read_once(workspace: Workspace) -> Workspace:
    """``workspace`` with :meth:`Workspace.hives` answering what it read now, for the rest of one command."""
    return _TreeReadOnce(workspace.root, workspace.config, workspace.hives())
