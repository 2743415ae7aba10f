"""``subhive init`` and ``subhive new``: plan a workspace or a sub-hive, checking everything and writing nothing,
so ``--dry-run`` and the real run share one code path. See docs/workspace.md#dry-runs-and-all-or-nothing-writes.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from importlib.resources import files as package_files
from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import InputError, Location, Problem
from ._agents import AgentBudgets, AgentModel, AgentSpec
from ._kinds import DEFAULT_RANGE, DRAFT_VERSION, KIND_DEFAULTS, contract_draft, default_consumes, provided_contract
from ._manifest import (
    CONTRACT_NAME_RE,
    MANIFEST_NAME,
    ROOT_HIVE,
    Kind,
    ManifestInvalid,
    Requirement,
    SubhiveManifest,
    check_hive_name,
)
from ._plan import FileAction, Plan, PlannedFile, apply_plan
from ._ranges import VersionRange
from ._workspace import (
    WORKSPACE_FILE,
    HiveTree,
    Workspace,
    WorkspaceConfig,
    open_workspace,
    workspace_name_for,
)

__all__ = ["init_workspace", "new_subhive", "plan_init", "plan_new"]

_GITIGNORE_LINE = ".subhive/"
_IGNORES_STATE = frozenset({".subhive", ".subhive/", "/.subhive", "/.subhive/", ".subhive/*", "/.subhive/*"})
_WORKSPACE_DIRS = ("contracts", "subhives", "stubs")
_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
BLACKBOARD_SCHEMA = "blackboard.schema.json"


def render(template: str, **values: str) -> str:
    """Fill ``{{name}}`` placeholders of a file in ``subhive/workspace/templates/``."""
    text = package_files("subhive.workspace").joinpath("templates", template).read_text(encoding="utf-8")

    def fill(match: re.Match[str]) -> str:
        return values[match.group(1)]  # a KeyError here is a bug in the scaffold, not a user mistake

    return _PLACEHOLDER.sub(fill, text)


# --- init ---------------------------------------------------------------------------------------------------


def plan_init(directory: str | Path = ".", *, name: str | None = None, description: str = "") -> Plan:
    """Plan a workspace in ``directory`` (created if missing; an existing project is fine): ``plan_init("shop")``.

    Refuses a directory that already holds ``hive.toml`` (``workspace.exists``): ``init`` never rewrites
    a workspace. Existing ``contracts/``, ``subhives/`` and ``stubs/`` directories are kept as they are,
    and ``.subhive/`` is added to an existing ``.gitignore`` unless it is already ignored.
    """
    root = Path(os.path.abspath(directory))
    if os.path.lexists(root) and not root.is_dir():
        raise InputError(
            f"{root} is a file, not a directory",
            code="workspace.not_a_directory",
            location=Location(file=str(root)),
            hint="name a directory (it is created if missing)",
        )
    if os.path.lexists(root / WORKSPACE_FILE):
        raise InputError(
            f"{root} is already a subhive workspace",
            code="workspace.exists",
            location=Location(file=str(root / WORKSPACE_FILE)),
            hint="nothing was changed; add sub-hives with `subhive new NAME --kind ...`",
        )
    config = WorkspaceConfig(_workspace_name(root, name), description=description)
    planned: list[PlannedFile] = []
    for sub in _WORKSPACE_DIRS:
        path = root / sub
        if not os.path.lexists(path):
            planned.append(
                PlannedFile(PurePosixPath(sub, "README.md"), render(f"{sub}_readme.md.tmpl", workspace=config.name))
            )
        elif not path.is_dir():
            raise InputError(
                f"{path} is a file, but a workspace needs a {sub}/ directory there",
                code="workspace.not_a_directory",
                location=Location(file=str(path)),
                hint="move the file out of the way, then run `subhive init` again",
            )
    gitignore = _gitignore(root)
    if gitignore is not None:
        planned.append(gitignore)
    planned.append(PlannedFile(PurePosixPath(WORKSPACE_FILE), config.to_toml()))  # last: it marks a workspace
    return Plan(
        root,
        f"workspace {config.name!r} in {root}",
        tuple(planned),
        ("add a sub-hive: subhive new NAME --kind ui|backend|db|custom",),
    )


def init_workspace(directory: str | Path = ".", *, name: str | None = None, description: str = "") -> Plan:
    """Create a workspace (see :func:`plan_init`) and return the plan that was written.

    >>> init_workspace("shop").summary  # doctest: +SKIP
    "workspace 'shop' in /home/me/shop"
    """
    plan = plan_init(directory, name=name, description=description)
    apply_plan(plan)
    return plan


def _workspace_name(root: Path, name: str | None) -> str:
    if name is None:
        derived = workspace_name_for(root)
        if derived is None:
            raise InputError(
                f"cannot derive a workspace name from the directory name {root.name!r}",
                code="workspace.name_invalid",
                hint="pass one with --name, e.g. --name shop",
            )
        return derived
    try:
        WorkspaceConfig(name)
    except ValueError as exc:
        raise InputError(
            str(exc), code="workspace.name_invalid", hint="workspace names become NATS names, e.g. shop or my-shop"
        ) from exc
    return name


def _gitignore(root: Path) -> PlannedFile | None:
    path = root / ".gitignore"
    entry = f"# subhive runtime state: NATS store, logs, pids\n{_GITIGNORE_LINE}\n"
    if not os.path.lexists(path):
        return PlannedFile(PurePosixPath(".gitignore"), entry)
    try:
        current = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(
            f"cannot read {path} to add {_GITIGNORE_LINE} to it",
            code="workspace.gitignore",
            location=Location(file=str(path)),
            hint="fix or remove the file, then run init again",
        ) from exc
    if any(line.strip() in _IGNORES_STATE for line in current.splitlines()):
        return None
    separator = "" if not current or current.endswith("\n") else "\n"
    return PlannedFile(PurePosixPath(".gitignore"), current + separator + entry, FileAction.update, current)


# --- new ----------------------------------------------------------------------------------------------------


def plan_new(
    workspace: Workspace,
    name: str,
    kind: Kind | str,
    *,
    parent: str = ROOT_HIVE,
    description: str | None = None,
    contract: bool = True,
    bare: bool = False,
    agent: bool = False,
) -> Plan:
    """Plan sub-hive ``name`` of ``kind`` under ``parent``: manifest, blackboard schema, knowledge source,
    a passing test and, when the kind provides a contract and ``contract`` is true, its 0.1.0 draft.
    ``bare``: the hive provides and consumes nothing yet, whatever its kind (no draft, empty ``[consumes]``).
    ``agent``: the hive also declares an agent, ``helper`` (instructions, read tools, an approved board write,
    and a test that runs it against a scripted model).

    Raises :class:`InputError` for a bad name (``hive.name_*``), a name already taken (``hive.exists``),
    an unknown parent (``hive.parent_unknown``) or an existing contract directory (``scaffold.conflict``).
    """
    check_hive_name(name)
    kind = _kind(kind)
    tree = workspace.hives()
    _check_free(workspace, tree, name)
    _check_parent(tree, parent)
    provided = None if bare else provided_contract(name, kind)
    contract_files = _contract_files(workspace, tree, name, kind, provided) if contract and provided else []
    consumed = [] if bare else default_consumes(kind, parent, dict(tree.hives))
    manifest = SubhiveManifest(
        name=name,
        kind=kind,
        parent=parent,
        description=KIND_DEFAULTS[kind].description if description is None else description,
        provides=(provided,) if provided else (),
        consumes=tuple(Requirement(c, VersionRange.parse(DEFAULT_RANGE)) for c in consumed if c != provided),
        agents=(starter_agent(),) if agent else (),
    )
    hive = PurePosixPath("subhives", name)
    hive_files = [PlannedFile(hive / relative, content) for relative, content in new_hive_files(manifest).items()]
    where = "the root hive" if parent == ROOT_HIVE else f"hive {parent!r}"
    return Plan(
        workspace.root,
        f"sub-hive {name!r} ({kind.value}) under {where}",
        (*contract_files, *hive_files),
        (
            f"run its tests: cd subhives/{name} && python -m pytest",
            *([f"lint its contract draft: subhive contract lint contracts/{provided}"] if contract_files else []),
        ),
        directories=(*([PurePosixPath("contracts", provided)] if contract_files and provided else []), hive),
    )


def new_subhive(
    name: str,
    kind: Kind | str,
    *,
    start: str | Path = ".",
    parent: str = ROOT_HIVE,
    description: str | None = None,
    contract: bool = True,
    bare: bool = False,
    agent: bool = False,
) -> Plan:
    """Scaffold a sub-hive in the workspace at or above ``start`` and return the plan that was written.

    >>> new_subhive("db", Kind.db, start="shop").files[-1].path  # doctest: +SKIP
    PurePosixPath('subhives/db/subhive.toml')
    """
    plan = plan_new(
        open_workspace(start),
        name,
        kind,
        parent=parent,
        description=description,
        contract=contract,
        bare=bare,
        agent=agent,
    )
    apply_plan(plan)
    return plan


def _kind(kind: Kind | str) -> Kind:
    try:
        return Kind(kind)
    except ValueError:
        raise InputError(
            f"unknown kind {kind!r}", code="hive.kind_unknown", hint=f"use one of {', '.join(k.value for k in Kind)}"
        ) from None


def _check_free(workspace: Workspace, tree: HiveTree, name: str) -> None:
    path = workspace.hive_dir(name)
    if os.path.lexists(path) or name in tree.directories:
        raise InputError(
            f"sub-hive {name!r} already exists",
            code="hive.exists",
            location=Location(file=str(path)),
            hint="nothing was changed; pick another name, or remove the directory first",
        )


def _check_parent(tree: HiveTree, parent: str) -> None:
    if parent == ROOT_HIVE or parent in tree.hives:
        return
    if parent in tree.problems_by_hive:
        context = Problem(
            "hive.parent_invalid",
            f"parent hive {parent!r} has an invalid manifest",
            hint="fix the problems below first; nothing was changed",
        )
        raise ManifestInvalid(
            (context, *tree.problems_by_hive[parent]), summary=f"parent hive {parent!r} has an invalid manifest"
        )
    check_hive_name(parent, what="parent hive name")
    known = sorted(tree.hives)
    close = difflib.get_close_matches(parent, known, n=1)
    listing = ", ".join(known) if known else "there are none yet"
    raise InputError(
        f"unknown parent hive {parent!r}",
        code="hive.parent_unknown",
        hint=(f"did you mean {close[0]!r}? " if close else "")
        + f"name an existing sub-hive ({listing}) or {ROOT_HIVE!r} for a top-level hive",
    )


def _contract_files(workspace: Workspace, tree: HiveTree, name: str, kind: Kind, contract: str) -> list[PlannedFile]:
    if not CONTRACT_NAME_RE.match(contract):  # unreachable with hive names of at most 32 characters
        raise InputError(f"{contract!r} is not a valid contract name", code="hive.contract_name_invalid")
    owner = tree.providers().get(contract)
    if owner is not None:
        raise InputError(
            f"contract {contract!r} is already provided by hive {owner!r}",
            code="hive.provides_conflict",
            hint="a contract has one provider; pick another hive name",
        )
    directory = workspace.contracts_dir / contract
    if os.path.lexists(directory):
        raise InputError(
            f"contract {contract!r} already exists in {directory}",
            code="scaffold.conflict",
            location=Location(file=str(directory)),
            hint="nothing was changed; pass --no-contract to provide the existing contract instead of a new draft",
        )
    base = PurePosixPath("contracts", contract, DRAFT_VERSION)
    return [PlannedFile(base / file, text) for file, text in contract_draft(contract, name, kind).items()]


def new_hive_files(manifest: SubhiveManifest) -> dict[str, str]:
    """The files of a new sub-hive, relative to its directory; the manifest last."""
    values = {
        "hive": manifest.name,
        "package": manifest.package,
        "kind": manifest.kind.value,
        "description": manifest.description or KIND_DEFAULTS[manifest.kind].description,
    }
    package = manifest.package
    return {
        "README.md": render("hive_readme.md.tmpl", **values),
        BLACKBOARD_SCHEMA: json.dumps(blackboard_schema(manifest.name), indent=2) + "\n",
        "conftest.py": render("conftest.py.tmpl", **values),
        f"{package}/__init__.py": render("package_init.py.tmpl", **values),
        f"{package}/knowledge.py": render("knowledge.py.tmpl", **values),
        f"tests/test_{manifest.name}_knowledge.py": render(
            "test_knowledge.py.tmpl", **values, imports=_test_imports(package)
        ),
        **{path: text for spec in manifest.agents for path, text in _agent_files(spec.name, values).items()},
        MANIFEST_NAME: manifest.to_toml(),
    }


def starter_agent() -> AgentSpec:
    """The agent ``subhive new --agent`` declares: it reads the hive and may write to its board once a person
    approves (docs/agents.md)."""
    return AgentSpec(
        "helper",
        "agents/helper.md",
        AgentModel("scripted"),
        {"list_files": "allow", "read_file": "allow", "search": "allow", "board_read": "allow", "board_write": "ask"},
        AgentBudgets(model_calls=20, tool_calls=40, wall_time=300),
    )


def _agent_files(agent: str, values: dict[str, str]) -> dict[str, str]:
    return {
        f"agents/{agent}.md": render("agent_instructions.md.tmpl", agent=agent, **values),
        f"tests/test_{values['hive']}_agent_{agent}.py": render("test_agent.py.tmpl", agent=agent, **values),
    }


def _test_imports(package: str) -> str:
    # One block of third-party imports sorted by module, as isort and ruff order them whatever the hive's name.
    lines = {
        "jsonschema": "from jsonschema import Draft202012Validator",
        f"{package}.knowledge": f"from {package}.knowledge import SOURCES",
        "subhive.hive": "from subhive.hive import Entry, Reply, Write, check_key_pattern",
        "subhive.runtime": "from subhive.runtime import ContractBinding, MockProvider, verify_provider",
    }
    return "\n".join(lines[module] for module in sorted(lines))


def blackboard_schema(hive: str) -> dict[str, Any]:
    """The starter blackboard schema: the board is an object from keys to values; undeclared keys are refused."""
    token = "[A-Za-z0-9_=/-]+"  # one token of a NATS key-value key
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"Blackboard of sub-hive {hive}",
        "description": "Every key of this hive's local blackboard and the value it holds. Keys are key-value "
        "keys: tokens separated by '.'. Declare a pattern here before a knowledge source writes it.",
        "type": "object",
        "patternProperties": {
            f"^tasks\\.{token}$": {"$ref": "#/$defs/Task"},
            f"^plans\\.{token}$": {"$ref": "#/$defs/Plan"},
        },
        "additionalProperties": False,
        "$defs": {
            "Task": {
                "description": "Work this hive was asked to do.",
                "type": "object",
                "properties": {
                    "title": {"type": "string", "minLength": 1},
                    "status": {"enum": ["open", "done"]},
                    "detail": {"type": "string"},
                },
                "required": ["title", "status"],
                "additionalProperties": False,
            },
            "Plan": {
                "description": "How the hive means to do one task: the key of the task and ordered steps.",
                "type": "object",
                "properties": {
                    "task": {"type": "string", "pattern": f"^tasks\\.{token}$"},
                    "steps": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1},
                },
                "required": ["task", "steps"],
                "additionalProperties": False,
            },
        },
    }
