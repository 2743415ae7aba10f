"""``subhive decompose --write``: a plan becomes a workspace of nested sub-hives and draft contracts, with
``subhive new``'s scaffolding, planned first and written all or nothing. See docs/decompose.md#--write.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from ..errors import InputError, Location, Problem
from ..workspace import (
    DEFAULT_RANGE,
    DRAFT_VERSION,
    WORKSPACE_FILE,
    Budgets,
    Kind,
    ManifestInvalid,
    Plan,
    PlannedFile,
    Requirement,
    SubhiveManifest,
    VersionRange,
    apply_plan,
    new_hive_files,
    open_workspace,
    plan_init,
)
from ._model import Crossing, DecompositionPlan, HivePlan
from ._naming import sanitise
from ._roles import Role

__all__ = ["SCOPE_FILE", "plan_workspace", "write_workspace"]

SCOPE_FILE = "scope.json"
_KINDS = {Role.ui: Kind.ui, Role.backend: Kind.backend, Role.db: Kind.db}
#: Beyond this many imported files, a contract's operations stop and its description says how many more.
_MAX_OPERATIONS = 64
_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def write_workspace(plan: DecompositionPlan, directory: str | Path) -> Plan:
    """Write the workspace of ``plan`` in ``directory`` (see :func:`plan_workspace`); return what was written.

    >>> written = write_workspace(decompose("shop"), "shop")  # doctest: +SKIP
    >>> [str(f.path) for f in written.files][:2]  # doctest: +SKIP
    ['contracts/README.md', 'contracts/api_api/0.1.0/contract.yaml']
    """
    planned = plan_workspace(plan, directory)
    apply_plan(planned)
    return planned


def plan_workspace(plan: DecompositionPlan, directory: str | Path) -> Plan:
    """The files that turn ``plan`` into a workspace at ``directory``: a new one (``subhive init``'s files),
    or an existing one there (its ``hive.toml`` in ``directory`` itself) to which the hives are added."""
    root = Path(os.path.abspath(directory))
    base: list[PlannedFile] = []
    last: list[PlannedFile] = []
    if os.path.lexists(root / WORKSPACE_FILE):
        workspace = open_workspace(root)
        _check_free(plan, root, workspace.hives().directories)
    else:
        for planned in plan_init(root).files:
            (last if str(planned.path) == WORKSPACE_FILE else base).append(planned)
        _check_free(plan, root, frozenset())
    provided = {c.provider: c.contract for c in plan.crossings}
    consumed: dict[str, set[str]] = {}
    for crossing in plan.crossings:
        consumed.setdefault(crossing.consumer, set()).add(crossing.contract)
    repository = os.path.relpath(plan.root, root).replace(os.sep, "/")
    hive_files: list[PlannedFile] = []
    directories: list[PurePosixPath] = []
    for hive in plan.hives:
        manifest = _manifest(hive, plan, provided.get(hive.name), sorted(consumed.get(hive.name, ())))
        folder = PurePosixPath("subhives", hive.name)
        directories.append(folder)
        files = {**new_hive_files(manifest), SCOPE_FILE: _scope(hive, repository)}
        hive_files.extend(PlannedFile(folder / name, text) for name, text in sorted(files.items()))
    contract_files: list[PlannedFile] = []
    for provider, crossings in _by_provider(plan.crossings).items():
        folder = PurePosixPath("contracts", provided[provider], DRAFT_VERSION)
        directories.append(folder.parent)
        for name, text in _contract(provided[provider], provider, crossings).items():
            contract_files.append(PlannedFile(folder / name, text))
    leaves = sum(1 for _ in plan.leaves())
    summary = f"{len(plan.hives)} sub-hives ({leaves} leaves) and {len(provided)} draft contracts in {root}"
    return Plan(
        root,
        summary,
        (*base, *contract_files, *hive_files, *last),
        ("see the tree: subhive status", "lint the drafts: subhive contract lint contracts/"),
        directories=tuple(directories),
    )


def _check_free(plan: DecompositionPlan, root: Path, taken: frozenset[str]) -> None:
    problems: list[Problem] = []
    for hive in plan.hives:
        path = root / "subhives" / hive.name
        if hive.name in taken or os.path.lexists(path):
            problems.append(
                Problem(
                    "hive.exists",
                    f"sub-hive {hive.name!r} already exists",
                    Location(file=str(path)),
                    "nothing was changed; write into a new workspace "
                    "(--workspace DIR), or remove the hives of an earlier run first",
                )
            )
    for contract in sorted({c.contract for c in plan.crossings}):
        path = root / "contracts" / contract
        if os.path.lexists(path):
            problems.append(
                Problem(
                    "scaffold.conflict",
                    f"contract {contract!r} already exists",
                    Location(file=str(path)),
                    "nothing was changed; write into a new workspace "
                    "(--workspace DIR), or remove the drafts of an earlier run first",
                )
            )
    if len(problems) == 1:
        only = problems[0]
        raise InputError(only.message, code=only.code, location=only.location, hint=only.hint)
    if problems:
        raise ManifestInvalid(
            problems, summary=f"{len(problems)} hives or contracts of the plan already exist in {root}"
        )


def _manifest(hive: HivePlan, plan: DecompositionPlan, provides: str | None, consumes: list[str]) -> SubhiveManifest:
    kind = _KINDS.get(hive.role, Kind.custom)
    shape = f"{hive.file_count} files" if hive.leaf else f"{len(hive.children)} child hives, {hive.file_count} files"
    elsewhere = f" ({hive.outside} of them elsewhere)" if hive.outside else ""
    ranked = sorted(hive.roles.items(), key=lambda item: (-item[1], item[0].value))
    roles = ", ".join(f"{count} {role.value}" for role, count in ranked[:3])
    description = f"Decomposed from {hive.path}/: {shape}{elsewhere}; {roles}."
    return SubhiveManifest(
        name=hive.name,
        kind=kind,
        parent=hive.parent,
        description=description,
        provides=(provides,) if provides else (),
        consumes=tuple(Requirement(c, VersionRange.parse(DEFAULT_RANGE)) for c in consumes),
        budgets=Budgets(plan.budget.max_files, plan.budget.max_bytes),
    )


def _scope(hive: HivePlan, repository: str) -> str:
    document: dict[str, object] = {
        "$comment": "Written by `subhive decompose --write`: what this hive covers in the repository.",
        "repository": repository,
        "path": hive.path,
        "role": hive.role.value,
        "file_count": hive.file_count,
        "bytes": hive.bytes,
        "roles": {role.value: count for role, count in sorted(hive.roles.items())},
    }
    if hive.leaf:
        document["files"] = list(hive.files)
    else:
        document["children"] = list(hive.children)
    return json.dumps(document, indent=2) + "\n"


def _by_provider(crossings: Iterable[Crossing]) -> dict[str, list[Crossing]]:
    grouped: dict[str, list[Crossing]] = {}
    for crossing in crossings:
        grouped.setdefault(crossing.provider, []).append(crossing)
    return dict(sorted(grouped.items()))


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _operation_names(keys: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """An operation name per (symbol, file) -- the symbol in snake case (``getUser`` -> ``get_user``), or for a
    file imported without names (``symbol`` empty) ``use_`` and its path -- as ``[a-z][a-z0-9_]*``, unique."""
    names: dict[tuple[str, str], str] = {}
    used: set[str] = set()
    for symbol, target in keys:
        stem = target.rpartition(".")[0] if "." in target.rpartition("/")[2] else target
        if symbol and symbol != "default":
            base = sanitise(_CAMEL.sub("_", symbol))[:50].strip("_") or "operation"
        elif symbol == "default":
            base = sanitise(stem.rpartition("/")[2])[:50].strip("_") or "operation"
        else:
            base = "use_" + (sanitise(stem)[-50:].strip("_") or "module")
        base = base if base[0].isalpha() else f"op_{base}"
        name, number = base, 2
        while name in used:
            name, number = f"{base}_{number}", number + 1
        used.add(name)
        names[(symbol, target)] = name
    return names


def _contract(contract: str, provider: str, crossings: list[Crossing]) -> dict[str, str]:
    """A draft contract: one operation per name the consumers use across the boundary (the 64 most used),
    and one per imported file where the imports name nothing (``import a.b``)."""
    users: dict[tuple[str, str], dict[str, int]] = {}
    for crossing in crossings:
        named_files: set[str] = set()
        for symbol, target, count in crossing.symbols:
            per_hive = users.setdefault((symbol, target), {})
            per_hive[crossing.consumer] = per_hive.get(crossing.consumer, 0) + count
            named_files.add(target)
        for _, target in crossing.edges:
            if target not in named_files:
                per_hive = users.setdefault(("", target), {})
                per_hive[crossing.consumer] = per_hive.get(crossing.consumer, 0) + 1
    keys = sorted(users, key=lambda k: (-sum(users[k].values()), k))
    shown = sorted(keys[:_MAX_OPERATIONS], key=lambda k: (k[1], k[0]))
    names = _operation_names(shown)
    consumers = sorted({c.consumer for c in crossings})
    edges = sum(len(c.edges) for c in crossings)
    more = len(keys) - len(shown)
    description = (
        f"Draft from subhive decompose: {edges} import edges from hives {', '.join(consumers)} into hive "
        f"{provider}. Each operation stands for a name the consumers use across the boundary (or a file "
        "they import whole); replace them with the messages the consumers really need."
        + (f" {more} less-used ones are left out." if more else "")
    )
    lines = [
        f"# Draft {DRAFT_VERSION} of contract {contract!r}, served by sub-hive {provider!r}, written by",
        "# `subhive decompose --write` from the imports that cross into it (docs/decompose.md). Shape it freely",
        "# until a version is accepted; accepted versions are immutable (docs/contracts.md).",
        f"contract: {contract}",
        f"version: {DRAFT_VERSION}",
        f"provider: {provider}",
        f"description: {json.dumps(description)}",
        "",
        "operations:",
    ]
    for key in shown:
        symbol, target = key
        by = ", ".join(f"{hive} ({count})" for hive, count in sorted(users[key].items()))
        what = f"{symbol} of {target}" if symbol else target
        lines += [
            f"  {names[key]}:",
            f"    description: {json.dumps(f'Stands for {what}, used by {by}.')}",
            "    input: schemas.json#/$defs/Request",
            "    output: schemas.json#/$defs/Reply",
        ]
    schemas = {
        "$schema": _DIALECT,
        "$comment": "Placeholders: the request is closed so later versions may accept more, the reply open so "
        "later versions may send more fields without breaking old consumers.",
        "$defs": {
            "Request": {"type": "object", "properties": {}, "additionalProperties": False},
            "Reply": {"type": "object"},
        },
    }
    return {"contract.yaml": "\n".join(lines) + "\n", "schemas.json": json.dumps(schemas, indent=2) + "\n"}
