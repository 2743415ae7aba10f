"""``subhive decompose PATH``: plan a tree of sub-hives for a repository, and with ``--write`` make it.

Progress goes to stderr; the plan (a tree, or one JSON document with ``--format json``) to stdout.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from ..decompose import Budget, DecompositionPlan, HivePlan, decompose, write_workspace
from ..workspace import Plan
from ._output import Format, err_console

__all__ = ["decompose_command"]


def decompose_command(
    path: Annotated[
        Path,
        typer.Argument(
            help="The repository to split: a git checkout (tracked files) or any directory.", show_default=False
        ),
    ],
    *,
    max_files: Annotated[int, typer.Option("--max-files", help="At most this many files in one leaf sub-hive.")] = 200,
    max_bytes: Annotated[
        int, typer.Option("--max-bytes", help="At most this many bytes in one leaf sub-hive.")
    ] = 2_000_000,
    exclude: Annotated[
        list[str] | None,
        typer.Option(
            "--exclude",
            help="Leave out paths matching this gitignore-style pattern (repeatable), e.g. 'vendor/'.",
            show_default=False,
        ),
    ] = None,
    write: Annotated[
        bool,
        typer.Option(
            "--write",
            help="Turn the plan into a workspace: nested sub-hives and draft contracts for the crossing edges.",
        ),
    ] = False,
    workspace: Annotated[
        Path | None,
        typer.Option(
            "--workspace",
            "-C",
            help="Where --write puts the workspace (default: PATH itself); an existing workspace there is extended.",
            show_default=False,
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress on stderr.")] = False,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.text,
) -> None:
    """Split a repository into a tree of sub-hives that each fit a budget, cut where imports are thin.

    Files get a role (ui, backend, db, infra, docs, tests, config, assets, other); Python, JavaScript/
    TypeScript, Go and Java/Kotlin imports become a graph; directories are split recursively, by graph
    communities where a directory has too many loose files, and coupled pieces are packed together. The
    output names every hive with its role and parent, every file of every leaf, and every import edge that
    crosses between leaves, grouped by pair of hives as candidate contracts. Symbolic links, binary, badly
    encoded, unreadable and oversized files are skipped and counted.

    Example: subhive decompose . --max-files 150 --format json
    """
    budget = Budget(max_files, max_bytes)
    started = time.perf_counter()

    def progress(message: str) -> None:
        if not quiet:
            err_console.print(f"[dim]decompose: {message} ({time.perf_counter() - started:.1f}s)[/]")

    plan = decompose(path, budget, exclude=tuple(exclude or ()), progress=progress)
    written = write_workspace(plan, workspace or path) if write else None
    if fmt is Format.json:
        document = plan.to_dict()
        if written is not None:
            document["written"] = written.to_dict()
        import json

        sys.stdout.write(json.dumps(document, indent=1) + "\n")
    else:
        sys.stdout.write("".join(line + "\n" for line in render_text(plan)))
    sys.stdout.flush()
    if written is not None:
        _report_written(written)


def _report_written(written: Plan) -> None:
    err_console.print(f"created {written.summary}", markup=False)
    for step in written.next_steps:
        err_console.print(f"[cyan]next[/]: {step}")


def _size(count: int) -> str:
    return f"{count:,} bytes" if count < 10_000 else f"{count / 1e6:,.1f} MB"


def render_text(plan: DecompositionPlan) -> list[str]:
    """The plan as text: a summary, the hive tree with every leaf's files, then the crossings by pair."""
    stats = plan.stats
    skipped = ", ".join(f"{count:,} {reason}" for reason, count in sorted(stats.skipped.items()))
    lines = [
        f"{plan.root} ({plan.source}): {stats.files:,} files, {_size(stats.bytes)}"
        + (f"; skipped {sum(stats.skipped.values()):,}: {skipped}" if skipped else ""),
        f"budget per leaf: {plan.budget.max_files:,} files, {plan.budget.max_bytes:,} bytes; "
        f"{len(plan.hives)} sub-hives, {sum(1 for _ in plan.leaves())} leaves",
        "root",
    ]
    by_name = {hive.name: hive for hive in plan.hives}
    top = [hive for hive in plan.hives if hive.parent == "root"]
    for index, hive in enumerate(top):
        _tree(hive, by_name, "", index == len(top) - 1, lines)
    share = f" ({stats.edges_cut / stats.edges_total:.1%})" if stats.edges_total else ""
    lines.append(
        f"import edges: {stats.edges_total:,} total, {stats.edges_cut:,} cut{share}; "
        f"{stats.unresolved:,} imports name nothing in the repository"
    )
    if plan.crossings:
        lines.append("candidate contracts (import edges crossing between hives, by consumer -> provider):")
    for crossing in plan.crossings:
        lines.append(
            f"  {crossing.consumer} -> {crossing.provider} ({crossing.contract}): {len(crossing.edges):,} edges"
        )
        lines.extend(f"    {source} -> {target}" for source, target in crossing.edges)
    return lines


def _tree(hive: HivePlan, by_name: dict[str, HivePlan], indent: str, last: bool, lines: list[str]) -> None:
    branch = "└── " if last else "├── "
    kind = "leaf" if hive.leaf else f"{len(hive.children)} children"
    lines.append(
        f"{indent}{branch}{hive.name} [{hive.role.value}] {hive.path}/ - {hive.file_count:,} files, "
        f"{_size(hive.bytes)}, {kind}"
    )
    below = indent + ("    " if last else "│   ")
    if hive.leaf:
        lines.extend(f"{below}  {path}" for path in hive.files)
        return
    for index, child in enumerate(hive.children):
        _tree(by_name[child], by_name, below, index == len(hive.children) - 1, lines)
