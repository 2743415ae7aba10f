"""What changed in a running workspace, and whether ``up`` can follow it. The rules do no I/O but reading the
workspace, so they are tested without a running tree. See docs/up.md#changing-a-running-tree.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import Location, Problem

__all__ = ["Settle", "Snapshot", "Stamp", "TreeChange", "refused_requirements", "tree_stamp"]

MANIFEST = "subhive.toml"
#: A hive that exits this soon after its start, this many times in a row with the same code, fails the same
#: way each time: it is stopped and reported instead of restarted forever.
QUICK_EXIT = 15.0
SAME_FAILURES = 3
#: Each manifest's and contract file's path, modification time (ns) and size.
Stamp = tuple[tuple[str, int, int], ...]


def tree_stamp(root: Path) -> Stamp:
    """The stats of every manifest and every file under ``contracts/``: equal stamps, nothing to look at.

    Cheap enough for the supervisor's look once a second; only a changed stamp makes it read a :class:`Snapshot`
    (the manifests' bytes and the contract directories), which says what changed.
    """
    paths = [str(p) for p in (root / "subhives").glob(f"*/{MANIFEST}")]
    for current, dirs, names in os.walk(root / "contracts"):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        paths += [os.path.join(current, n) for n in names if not n.startswith(".")]
    found: list[tuple[str, int, int]] = []
    for path in sorted(paths):
        try:
            info = os.stat(path)
        except OSError:
            continue
        found.append((path, info.st_mtime_ns, info.st_size))
    return tuple(found)


@dataclass
class Settle:
    """When a changed workspace is followed: once looks have found its stamp the same for ``seconds``
    (decision 0135), so that files written in steps are acted on as they end, not half-way.

    :meth:`see` is told each look that found the workspace unlike what up follows; :meth:`reset` a look that
    found it as up follows it (a change undone). ``since`` is the first look of the current run of equal stamps.
    """

    seconds: float
    stamp: Stamp | None = None
    since: float = 0.0

    def due(self, now: float) -> bool:
        """Whether a change waits and its time is up: look now rather than at the next regular look."""
        return self.stamp is not None and now - self.since >= self.seconds

    def see(self, stamp: Stamp, now: float) -> str:
        """``new`` (a change found after none: say so), ``waiting`` (it is new or changed again, or its time is
        not up), or ``settled`` (follow it now; the wait is over)."""
        if self.stamp == stamp:
            if now - self.since < self.seconds:
                return "waiting"
            self.stamp = None
            return "settled"
        new = self.stamp is None
        self.stamp, self.since = stamp, now
        return "new" if new else "waiting"

    def reset(self) -> None:
        self.stamp = None

    def wait_again(self, stamp: Stamp, now: float) -> None:
        """Follow ``stamp`` once ``seconds`` more have passed (the root could not be asked yet), not saying so."""
        self.stamp, self.since = stamp, now


@dataclass(frozen=True)
class Snapshot:
    """The workspace's shape: each hive's manifest bytes, and each contract directory (``name/version``)."""

    manifests: Mapping[str, bytes] = field(default_factory=dict)
    contracts: frozenset[str] = frozenset()

    @classmethod
    def read(cls, root: Path) -> Snapshot:
        manifests: dict[str, bytes] = {}
        for path in sorted((root / "subhives").glob(f"*/{MANIFEST}")):
            try:
                manifests[path.parent.name] = path.read_bytes()
            except OSError:
                continue
        contracts = frozenset(
            f"{p.parent.parent.name}/{p.parent.name}" for p in (root / "contracts").glob("*/*/contract.yaml")
        )
        return cls(manifests, contracts)

    def change_from(self, old: Snapshot) -> TreeChange:
        return TreeChange(
            added=sorted(set(self.manifests) - set(old.manifests)),
            removed=sorted(set(old.manifests) - set(self.manifests)),
            edited=sorted(n for n in set(self.manifests) & set(old.manifests) if self.manifests[n] != old.manifests[n]),
            contracts=sorted(self.contracts - old.contracts),
        )


@dataclass(frozen=True)
class TreeChange:
    """Hives added, removed or whose manifest was edited, and contract directories that appeared."""

    added: list[str]
    removed: list[str]
    edited: list[str]
    contracts: list[str]

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.edited or self.contracts)

    def describe(self) -> str:
        parts = [
            f"{what} {', '.join(names)}"
            for what, names in (
                ("new hive", self.added),
                ("removed hive", self.removed),
                ("manifest of", self.edited),
                ("contract", self.contracts),
            )
            if names
        ]
        return "; ".join(parts) or "nothing"


def refused_requirements(
    manifests: Mapping[str, Any], running: Mapping[str, Mapping[str, str]], lock: Any, pending: Mapping[str, list[str]]
) -> list[Problem]:
    """A running hive whose manifest now asks for a range no accepted version meets cannot be followed: its
    stubs for that contract would be removed under it. ``running`` is what each running hive consumed when
    it started (contract -> range); ``pending`` the open approvals by contract. One problem per such line,
    with the command that makes it work."""
    problems: list[Problem] = []
    for hive, manifest in sorted(manifests.items()):
        before = running.get(hive)
        if before is None:
            continue  # a new hive starts without what no version meets; the unmet line is reported
        for need in manifest.consumes:
            wanted = str(need.versions)
            if before.get(need.contract) == wanted:
                continue
            versions = [e.version for e in lock.versions(need.contract)]
            if need.versions.best(versions) is not None:
                continue
            have = ", ".join(str(v) for v in versions) or "none"
            ids = pending.get(need.contract, [])
            fix = (
                f"approve {need.contract}'s pending version: subhive approvals approve {ids[0]}"
                if ids
                else f"have the provider propose a version in that range (subhive contract propose "
                f"contracts/{need.contract}/VERSION)"
            )
            old = before.get(need.contract)
            problems.append(
                Problem(
                    "up.requirement_unmet",
                    f"{hive} now consumes {need.contract} {wanted}, which no accepted version meets (the lock has "
                    f"{have}); up does not follow this change, and {hive} keeps running"
                    + (f" on {need.contract} {old}" if old else ""),
                    Location(file=f"subhives/{hive}/{MANIFEST}", pointer=f"/consumes/{need.contract}"),
                    f"{fix}; up follows as soon as one is accepted (or put the range back)",
                )
            )
    return problems
