"""Which stubs each sub-hive gets, decided from the lock and the hives' manifests only: isolation starts at
codegen, so a hive's package never holds a contract it does not touch. Which versions: docs/codegen.md and
docs/decisions/0034-stubs-follow-the-lock.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from ..errors import Location, Problem
from ..root_hive import Lock, LockEntry
from ..semver import line_token
from ..workspace import MANIFEST_NAME, Workspace

__all__ = ["ContractStub", "HiveStubs", "StubPlan", "class_prefix", "plan_stubs"]

Role = Literal["consumes", "provides"]


@dataclass(frozen=True)
class ContractStub:
    """One contract version in one hive's package: ``package`` is ``orders_v1`` (below 1.0.0 ``orders_v0_2``)."""

    entry: LockEntry
    role: Role
    package: str

    @property
    def key(self) -> str:
        return f"{self.role}:{self.entry.name}@{self.entry.version}:{self.entry.hash}"


@dataclass
class HiveStubs:
    hive: str
    contracts: list[ContractStub] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class StubPlan:
    hives: dict[str, HiveStubs]
    problems: list[Problem]
    #: ``codegen.not_in_lock``: requirements no accepted version meets. The rest of the plan stands; codegen
    #: reports them as problems, the bus plan and ``up`` as warnings (the hive runs without those stubs).
    unmet: list[Problem] = field(default_factory=list)


def contract_package(name: str, line: str | int) -> str:
    """A contract line as a Python package: ``contract_package("db-storage", "1")`` is 'db_storage_v1',
    ``contract_package("db-storage", "0.2")`` 'db_storage_v0_2' (``line`` is ``Version.line``; decision 0140)."""
    return f"{name.replace('-', '_')}_v{line_token(line)}"


def class_prefix(name: str) -> str:
    """``class_prefix("db_storage")`` is 'DbStorage': the prefix of a contract's generated classes."""
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[_-]+", name) if part)


def plan_stubs(workspace: Workspace, lock: Lock, hives: list[str] | None = None) -> StubPlan:
    """The stubs of ``hives`` (all when None); unknown hive names and unsatisfiable requirements are problems."""
    tree = workspace.hives()
    problems: list[Problem] = []
    unmet: list[Problem] = []
    providers = tree.providers()
    names = hives if hives else sorted(tree.hives)
    plan: dict[str, HiveStubs] = {}
    for hive in names:
        manifest = tree.hives.get(hive)
        if manifest is None:
            problems.append(
                Problem(
                    "codegen.unknown_hive",
                    f"no sub-hive named {hive!r} in this workspace",
                    Location(file=str(workspace.hives_dir)),
                    f"known hives: {', '.join(sorted(tree.hives)) or 'none'}",
                )
            )
            continue
        where = Location(file=str(workspace.hive_dir(hive) / MANIFEST_NAME))
        stubs = HiveStubs(hive)
        for req in manifest.consumes:
            versions = [e.version for e in lock.versions(req.contract)]
            best = req.versions.best(versions)
            if best is None:
                have = ", ".join(str(v) for v in versions) or "none accepted"
                provider = providers.get(req.contract)
                unmet.append(
                    Problem(
                        "codegen.not_in_lock",
                        f"{hive} consumes {req.contract} {req.versions} but the lock has no such version ({have})",
                        Location(file=where.file, pointer=f"/consumes/{req.contract}"),
                        f"have {provider} propose a version in that range (subhive contract propose), or change the "
                        f"range in subhives/{hive}/subhive.toml"
                        if provider
                        else f"no hive provides {req.contract} yet: create the hive that does "
                        f"(subhive new NAME --kind ...), or remove the line from subhives/{hive}/subhive.toml",
                    )
                )
                continue
            entry = lock.get(req.contract, best)
            assert entry is not None
            stubs.contracts.append(ContractStub(entry, "consumes", contract_package(entry.name, best.line)))
        for name in manifest.provides:
            entries = lock.versions(name)
            if not entries:
                stubs.notes.append(
                    f"{name}: not accepted yet, so no stubs (propose it with `subhive contract propose`)"
                )
                continue
            newest: dict[str, LockEntry] = {}
            for entry in entries:  # oldest first: the last of each line wins
                newest[entry.version.line] = entry
            for line, entry in newest.items():  # in version order, oldest line first
                stubs.contracts.append(ContractStub(entry, "provides", contract_package(name, line)))
        _keep_locked(lock, hive, stubs)
        clash = _clashes(stubs.contracts)
        if clash:
            problems.append(
                Problem(
                    "codegen.name_collision",
                    f"{hive}: contracts {clash} map to the same Python package name",
                    where,
                    "rename one of the contracts",
                )
            )
            continue
        plan[hive] = stubs
    return StubPlan(plan, problems, unmet)


def _keep_locked(lock: Lock, hive: str, stubs: HiveStubs) -> None:
    """Add the versions the lock still records ``hive`` on, in packages its manifest no longer asks for."""
    have = {s.package for s in stubs.contracts}
    for entry in lock:
        wanted = entry.consumers.get(hive)
        package = contract_package(entry.name, entry.version.line)
        if wanted is None or package in have:
            continue
        have.add(package)
        stubs.contracts.append(ContractStub(entry, "consumes", package))
        stubs.notes.append(
            f"{package} kept: the lock still records {hive} on {entry.name} {entry.version} "
            f"({wanted}); it goes once the root registers the manifest as it is now "
            "(subhive up does, or subhive status)"
        )


def _clashes(contracts: list[ContractStub]) -> str:
    seen: dict[str, str] = {}
    for stub in contracts:
        other = seen.setdefault(stub.package, stub.entry.name)
        if other != stub.entry.name:
            return f"{other!r} and {stub.entry.name!r}"
    return ""
