"""``subhive init`` and ``subhive new``: make a workspace, scaffold a sub-hive.

Both plan first and write second, so ``--dry-run`` shows exactly what the real run writes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from ..errors import UsageError
from ..workspace import ROOT_HIVE, Kind, Plan, apply_plan, open_workspace, plan_init, plan_new
from ._output import Format, err_console, out_console, print_json

__all__ = ["init_command", "new_command"]

FormatOption = Annotated[Format, typer.Option("--format", "-f", help="Output format.")]
DryRunOption = Annotated[bool, typer.Option("--dry-run", help="Show the files that would be written; write nothing.")]


def init_command(
    directory: Annotated[Path, typer.Argument(help="Where to make the workspace; created if missing.")] = Path("."),
    name: Annotated[
        str | None,
        typer.Option("--name", help="Workspace name (default: from the directory name).", show_default=False),
    ] = None,
    dry_run: DryRunOption = False,
    fmt: FormatOption = Format.text,
) -> None:
    """Make a workspace: hive.toml, contracts/, subhives/, stubs/, and .subhive/ in .gitignore.

    An existing project is fine: its contracts/, subhives/ and stubs/ directories are kept, and .subhive/ is
    added to its .gitignore. A directory that already holds hive.toml is refused and left as it is.

    Example: subhive init shop
    """
    plan = plan_init(directory, name=name)
    _run(plan, dry_run=dry_run, fmt=fmt)


def new_command(
    name: Annotated[
        str, typer.Argument(help="The sub-hive's name: lower-case letters, digits and '_'.", show_default=False)
    ],
    *,
    # A plain string checked by the library, so a wrong or missing kind gets the same located error, hint
    # and exit code 2 as every other bad input (and a JSON error with --format json).
    kind: Annotated[
        str | None,
        typer.Option(
            "--kind",
            "-k",
            help="What the hive does, which sets its defaults: ui, backend, db or custom.",
            show_default=False,
        ),
    ] = None,
    parent: Annotated[
        str, typer.Option("--parent", help="The hive above it: an existing sub-hive, or 'root'.")
    ] = ROOT_HIVE,
    description: Annotated[
        str | None, typer.Option("--description", help="One line on what the hive does.", show_default=False)
    ] = None,
    no_contract: Annotated[
        bool,
        typer.Option(
            "--no-contract",
            help="Do not scaffold a draft of the contract the hive provides (e.g. when it already exists).",
        ),
    ] = False,
    bare: Annotated[
        bool,
        typer.Option(
            "--bare",
            help="Provide and consume nothing yet, whatever the kind: no "
            "contract draft, empty provides and [consumes] (add them to subhive.toml "
            "later).",
        ),
    ] = False,
    agent: Annotated[
        bool,
        typer.Option(
            "--agent",
            help="Also declare a language-model agent, `helper`: its "
            "instructions, tools and policies, and a test that runs it against a "
            "scripted model (docs/agents.md).",
        ),
    ] = False,
    workspace: Annotated[Path, typer.Option("--workspace", "-C", help="Look for hive.toml from here upwards.")] = Path(
        "."
    ),
    dry_run: DryRunOption = False,
    fmt: FormatOption = Format.text,
) -> None:
    """Scaffold a sub-hive in subhives/NAME: manifest, blackboard schema, a knowledge source and a passing test.

    A db hive provides a storage contract (put/get/delete records) and a backend hive an API contract, each
    with a 0.1.0 draft under contracts/; a ui hive consumes its sibling backends' contracts, a backend its
    sibling db hives'. With --bare the hive provides and consumes nothing yet: it runs under `subhive up` as
    it is. A bad name, an existing hive, an unknown parent or a missing workspace changes nothing.

    Example: subhive new db --kind db
    """
    if kind is None:
        raise UsageError(
            "missing option --kind",
            code="usage.missing_option",
            hint=f"say what the hive does: --kind {'|'.join(k.value for k in Kind)}",
        )
    plan = plan_new(
        open_workspace(workspace),
        name,
        kind,
        parent=parent,
        description=description,
        contract=not no_contract,
        bare=bare,
        agent=agent,
    )
    _run(plan, dry_run=dry_run, fmt=fmt)


def _run(plan: Plan, *, dry_run: bool, fmt: Format) -> None:
    if not dry_run:
        apply_plan(plan)
    if fmt is Format.json:
        print_json({"dry_run": dry_run, **plan.to_dict(content=dry_run)})
        return
    out_console.print(("would create " if dry_run else "created ") + escape(plan.summary))
    for planned in plan.files:
        size = len(planned.content.encode("utf-8"))
        out_console.print(f"  {planned.action.value:<6} {escape(str(planned.path))} [dim]({size} bytes)[/]")
    if dry_run:
        err_console.print("[yellow]dry run[/]: nothing was written")
    else:
        for step in plan.next_steps:
            err_console.print(f"[cyan]next[/]: {escape(step)}")
