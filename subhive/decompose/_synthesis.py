"""Upward synthesis: every parent hive keeps a summary of its children, never their content.
Computed bottom-up from the children's summaries; pure apart from reading the manifests, ``scope.json`` files
and the lock. See docs/decompose.md#upward-synthesis.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import Problem
from ..root_hive import Lock
from ..workspace import ROOT_HIVE, SubhiveManifest, Workspace

__all__ = ["HEALTH_ORDER", "HiveSummary", "TreeSummary", "normalise_health", "summarise_tree"]

#: Worst first: a parent's health is the first of these that any hive below it (or itself) has.
HEALTH_ORDER = ("failing", "degraded", "unknown", "ok")
_HEALTH_WORDS = {
    "ok": "ok",
    "healthy": "ok",
    "serving": "ok",
    "up": "ok",
    "running": "ok",
    "ready": "ok",
    "degraded": "degraded",
    "warning": "degraded",
    "slow": "degraded",
    "starting": "degraded",
    "failing": "failing",
    "failed": "failing",
    "down": "failing",
    "error": "failing",
    "not_serving": "failing",
    "dead": "failing",
    "stopped": "failing",
    "crashed": "failing",
    "restarting": "failing",
    "unresponsive": "failing",
}


def normalise_health(value: object) -> str:
    """One of :data:`HEALTH_ORDER` for what a runtime reported: ``normalise_health("SERVING")`` is 'ok'."""
    if not isinstance(value, str):
        return "unknown"
    return _HEALTH_WORDS.get(value.strip().lower(), "unknown")


def _worst(healths: Iterator[str] | list[str]) -> str:
    ranked = [HEALTH_ORDER.index(h) for h in healths]
    return HEALTH_ORDER[min(ranked)] if ranked else "unknown"


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


@dataclass(frozen=True, slots=True)
class HiveSummary:
    """A hive and the synthesis of everything below it (``hives``/``leaves``/``roles``/... exclude itself,
    ``files``, ``failures``, ``open_contracts`` and ``health`` include it)."""

    name: str
    parent: str | None
    kind: str
    role: str
    children: tuple[str, ...]
    own_health: str
    own_failures: int
    hives: int
    leaves: int
    files: int
    roles: Mapping[str, int]
    health: str
    health_counts: Mapping[str, int]
    open_contracts: tuple[str, ...]
    failures: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "parent": self.parent,
            "kind": self.kind,
            "role": self.role,
            "children": list(self.children),
            "own_health": self.own_health,
            "own_failures": self.own_failures,
            "summary": {
                "hives": self.hives,
                "leaves": self.leaves,
                "files": self.files,
                "roles": dict(sorted(self.roles.items())),
                "health": self.health,
                "health_counts": {h: self.health_counts[h] for h in HEALTH_ORDER if self.health_counts.get(h)},
                "open_contracts": list(self.open_contracts),
                "failures": self.failures,
            },
        }

    def line(self) -> str:
        """One line of text: ``api (backend, ok): 3 hives, 2 leaves, 120 files; open: api_api; 1 failure``."""
        parts = [f"{self.name} ({self.role}, {self.health})"]
        counts = (
            _count(self.files, "file")
            if not self.children
            else f"{_count(self.hives, 'hive')}, {_count(self.leaves, 'leaf', 'leaves')}, {_count(self.files, 'file')}"
        )
        parts.append(": " + counts)
        if self.open_contracts:
            parts.append(f"; open: {', '.join(self.open_contracts)}")
        if self.failures:
            parts.append(f"; {self.failures} failure" + ("s" if self.failures != 1 else ""))
        return "".join(parts)


@dataclass(frozen=True, slots=True)
class TreeSummary:
    """Every hive's summary by name, ``root`` included; ``problems`` are the manifests that could not be read."""

    hives: Mapping[str, HiveSummary]
    problems: tuple[Problem, ...] = ()

    @property
    def root(self) -> HiveSummary:
        return self.hives[ROOT_HIVE]

    def walk(self) -> Iterator[tuple[int, HiveSummary]]:
        """(depth, summary) in tree order, the root at depth 0."""
        stack = [(0, ROOT_HIVE)]
        while stack:
            depth, name = stack.pop()
            summary = self.hives[name]
            yield depth, summary
            stack.extend((depth + 1, child) for child in reversed(summary.children))

    def lines(self) -> list[str]:
        """The tree as indented text, one :meth:`HiveSummary.line` per hive."""
        return ["  " * depth + summary.line() for depth, summary in self.walk()]

    def to_dict(self) -> dict[str, Any]:
        return {
            "root": ROOT_HIVE,
            "hives": [summary.to_dict() for _, summary in self.walk()],
            "problems": [p.to_dict() for p in self.problems],
        }


def summarise_tree(workspace: Workspace, runtime: Mapping[str, Mapping[str, Any]] | None = None) -> TreeSummary:
    """Summaries of every hive of ``workspace`` and of the root, from manifests, ``scope.json`` files, the
    lock and ``runtime`` (``{hive: {"health": str, "failures": int}}``, optional; a hive missing from it has
    health ``unknown``).

    >>> summary = summarise_tree(open_workspace("shop"), {"api": {"health": "ok", "failures": 0}})  # doctest: +SKIP
    >>> summary.hives["root"].to_dict()["open_contracts"]  # doctest: +SKIP
    ['api_api']
    """
    tree = workspace.hives()
    lock = Lock.load(workspace.root)
    runtime = runtime or {}
    manifests = dict(tree.hives)
    children: dict[str, list[str]] = {ROOT_HIVE: []}
    for name in sorted(manifests):
        parent = manifests[name].parent
        # a hive below an unknown parent is reported by the tree's problems; show it under the root
        children.setdefault(parent if parent in manifests else ROOT_HIVE, []).append(name)
    out: dict[str, HiveSummary] = {}
    for name in _bottom_up(children):
        manifest = manifests.get(name)
        scope = _scope(workspace, name) if manifest is not None else {}
        out[name] = _summarise(
            name,
            manifest,
            scope,
            children=tuple(children.get(name, ())),
            done=out,
            lock=lock,
            runtime=runtime.get(name, {}),
        )
    return TreeSummary(out, tree.problems)


def _bottom_up(children: Mapping[str, list[str]]) -> list[str]:
    order: list[str] = []
    stack: list[tuple[str, bool]] = [(ROOT_HIVE, False)]
    seen: set[str] = set()
    while stack:
        name, expanded = stack.pop()
        if expanded:
            order.append(name)
            continue
        if name in seen:  # a parent loop; the tree's problems name it
            continue
        seen.add(name)
        stack.append((name, True))
        stack.extend((child, False) for child in children.get(name, ()))
    return order


def _scope(workspace: Workspace, name: str) -> dict[str, Any]:
    try:
        data = json.loads((workspace.hive_dir(name) / "scope.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _open_contracts(manifest: SubhiveManifest | None, lock: Lock) -> set[str]:
    if manifest is None:
        return set()
    found = {contract for contract in manifest.provides if not lock.versions(contract)}
    for requirement in manifest.consumes:
        if not any(requirement.versions.contains(entry.version) for entry in lock.versions(requirement.contract)):
            found.add(requirement.contract)
    return found


def _summarise(
    name: str,
    manifest: SubhiveManifest | None,
    scope: Mapping[str, Any],
    *,
    children: tuple[str, ...],
    done: Mapping[str, HiveSummary],
    lock: Lock,
    runtime: Mapping[str, Any],
) -> HiveSummary:
    below = [done[child] for child in children if child in done]
    own_health = normalise_health(runtime.get("health"))
    failures = runtime.get("failures", 0)
    own_failures = failures if isinstance(failures, int) and not isinstance(failures, bool) and failures > 0 else 0
    kind = manifest.kind.value if manifest is not None else "root"
    role = scope.get("role") if isinstance(scope.get("role"), str) else kind
    own_files = scope.get("file_count") if not children and isinstance(scope.get("file_count"), int) else 0
    roles: Counter[str] = Counter()
    health_counts: Counter[str] = Counter()
    open_contracts = _open_contracts(manifest, lock)
    for child in below:
        roles.update(child.roles)
        if not child.children:
            roles[child.role] += 1
        health_counts.update(child.health_counts)
        health_counts[child.own_health] += 1
        open_contracts.update(child.open_contracts)
    if name == ROOT_HIVE and not runtime:
        own_health = _worst([c.health for c in below]) if below else "unknown"
    return HiveSummary(
        name=name,
        parent=None if manifest is None else manifest.parent,
        kind=kind,
        role=str(role),
        children=children,
        own_health=own_health,
        own_failures=own_failures,
        hives=sum(1 + c.hives for c in below),
        leaves=sum(c.leaves if c.children else 1 for c in below),
        files=int(own_files or 0) + sum(c.files for c in below),
        roles=dict(roles),
        health=_worst([own_health, *(c.health for c in below)]),
        health_counts=dict(health_counts),
        open_contracts=tuple(sorted(open_contracts)),
        failures=own_failures + sum(c.failures for c in below),
    )
