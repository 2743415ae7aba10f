"""What a workspace's tree and its lock say together that neither says alone (``subhive contract check``):
tampered versions, unmet requirements, events no provider publishes. See docs/contracts.md#checking-a-workspaces-tree.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import Location, Problem
from ..root_hive import Lock, LockEntry
from ..semver import line_from_token
from ..workspace import Workspace
from ._plan import StubPlan, class_prefix, contract_package, plan_stubs

__all__ = ["check_tree", "silent_events", "unknown_stub_imports"]


def check_tree(workspace: Workspace, lock: Lock | None = None) -> list[Problem]:
    """Every problem of the running (or about to run) tree, in a stable order; an empty list: all is well.

    >>> [p.code for p in check_tree(open_workspace("shop"))]  # doctest: +SKIP
    ['event.no_publisher']
    """
    from ..root_hive import check_lock

    lock = Lock.load(workspace.root) if lock is None else lock
    plan = plan_stubs(workspace, lock)
    return [
        *check_lock(workspace.root),
        *plan.unmet,
        *silent_events(workspace, plan),
        *unknown_stub_imports(workspace, plan),
    ]


def unknown_stub_imports(workspace: Workspace, plan: StubPlan) -> list[Problem]:
    """``codegen.unknown_package`` for each stub package a hive's code (its ``*.py``, tests too) names that
    codegen does not write for it: the import fails when the code runs. The common case is a workspace made
    before 0.x lines had packages of their own (``inventory_storage_v0``, now ``inventory_storage_v0_1``:
    decision 0140); the hint names the package to import instead."""
    problems: list[Problem] = []
    for hive in sorted(plan.hives):
        packages = {s.package for s in plan.hives[hive].contracts}
        pattern = re.compile(rf"\bstubs\.{re.escape(hive)}\.([A-Za-z_]\w*)")
        named: set[str] = set()
        for path in sorted(workspace.hive_dir(hive).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            for number, line in enumerate(text.splitlines(), 1):
                for package in pattern.findall(line):
                    if package in packages or package in named:
                        continue
                    named.add(package)
                    problems.append(_unknown_package(hive, package, sorted(packages), Location(str(path), number)))
    return problems


def _unknown_package(hive: str, package: str, packages: list[str], where: Location) -> Problem:
    renamed = [p for p in packages if p.startswith(package + "_")]
    return Problem(
        "codegen.unknown_package",
        f"{hive} imports stubs.{hive}.{package}, a stub package codegen does not write for it: the import fails "
        "when that code runs",
        where,
        f"0.x stub packages are named by their line now (decision 0140): import "
        f"{' or '.join(f'stubs.{hive}.{p}' for p in renamed)} instead"
        if renamed
        else f"{hive}'s stub packages are {', '.join(packages) or 'none'} (subhive codegen writes them from "
        "contracts.lock and the hive's subhive.toml)",
    )


def silent_events(workspace: Workspace, plan: StubPlan) -> list[Problem]:
    """``event.no_publisher`` for each consumer on a major with events whose provider's code (its hive's
    ``*.py`` outside tests) uses the stubs of another major of that contract and never this one's."""
    from ..contract import load_contract
    from ..errors import SubhiveError

    problems: list[Problem] = []
    code_of: dict[str, str] = {}
    events_of: dict[tuple[str, str], list[str]] = {}
    # Each provider's code searched once per contract, not once per consumer (500 hives: 7,875 consumptions).
    lines_of: dict[tuple[str, str], set[str]] = {}
    for consumer in sorted(plan.hives):
        for stub in plan.hives[consumer].contracts:
            entry = stub.entry
            provider = entry.provider
            if stub.role != "consumes" or provider not in plan.hives or provider == consumer:
                continue
            key = (entry.name, str(entry.version))
            if key not in events_of:
                try:
                    events_of[key] = sorted(load_contract(entry.directory(workspace.root)).events)
                except SubhiveError:  # a tampered or missing version: reported by check_lock already
                    events_of[key] = []
            if not events_of[key]:
                continue
            if provider not in code_of:
                code_of[provider] = _source_text(workspace.hive_dir(provider))
            if (provider, entry.name) not in lines_of:
                lines_of[(provider, entry.name)] = _lines_used(code_of[provider], entry.name)
            used = lines_of[(provider, entry.name)]
            if used and entry.version.line not in used:
                problems.append(_silent(workspace, consumer, entry, events_of[key], sorted(used, key=_line_key)))
    return problems


def _silent(workspace: Workspace, consumer: str, entry: LockEntry, events: list[str], used: list[str]) -> Problem:
    name, provider, line = entry.name, entry.provider, entry.version.line
    package = contract_package(name, line)
    on = ", ".join(f"v{m}" for m in used)
    return Problem(
        "event.no_publisher",
        f"{consumer} consumes {name} v{line}, whose events ({', '.join(events)}) {provider} never publishes: "
        f"{provider}'s code uses the stubs of {name} {on} only, so {consumer} would never receive them",
        Location(file=str(workspace.hive_dir(provider))),
        f"in {provider}, publish on every line it serves: {class_prefix(name)}Events(ctx.transport) from "
        f"stubs.{provider}.{package} beside {on} (docs/bus.md, 'Serving two majors'); or keep {consumer} on "
        f"^{used[-1]} in subhives/{consumer}/subhive.toml",
    )


def _source_text(hive_dir: Path) -> str:
    parts = []
    for path in sorted(hive_dir.rglob("*.py")):
        relative = path.relative_to(hive_dir).parts
        if "tests" in relative or "__pycache__" in relative or path.name == "conftest.py":
            continue
        try:
            parts.append(path.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
    return "\n".join(parts)


def _lines_used(source: str, contract: str) -> set[str]:
    """The lines of ``contract`` whose stub package (``notes_api_v2``, ``notes_api_v0_2``) the source names, as
    ``Version.line`` spells them ("2", "0.2")."""
    base = re.escape(contract.replace("-", "_"))
    return {line_from_token(m) for m in re.findall(rf"\b{base}_v((?:0|[1-9]\d*)(?:_(?:0|[1-9]\d*)){{0,2}})\b", source)}


def _line_key(line: str) -> tuple[int, ...]:
    return tuple(int(part) for part in line.split("."))
