"""``subhive decompose PATH``: plan a tree of sub-hives for a repository, and with ``--write`` make it.

Progress goes to stderr; the plan (a tree, or one JSON document with ``--format json``) to stdout.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..decompose import (
    CYCLE_MARGIN,
    Budget,
    Crossing,
    DecompositionPlan,
    HivePlan,
    decompose,
    render_picture,
    write_workspace,
)
from ..errors import InputError, Location
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
    files: Annotated[bool, typer.Option("--files", help="List every file of every leaf in the text output.")] = False,
    explain: Annotated[
        bool,
        typer.Option(
            "--explain", help="Per boundary: the edges that cross it and why the cut was put there (text output)."
        ),
    ] = False,
    picture: Annotated[
        Path | None,
        typer.Option(
            "--picture",
            help="Also write a picture of the plan: a self-contained HTML page with a treemap of the hives and "
            "the heaviest crossings.",
            show_default=False,
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress on stderr.")] = False,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.text,
) -> None:
    """Split a repository into a tree of sub-hives that each fit a budget, cut where imports are thin.

    Units that fit (a Python or JS/TS package, a Go or Java package, a Rust crate or module) are never
    split; files without imports stay with the code that owns them, tests with what they test. Python,
    JavaScript, TypeScript, Go and Java/Kotlin imports become a graph; directories are split recursively and
    coupled pieces packed together; leaves importing each other are merged when they fit, else named as a
    cycle. The text output is a summary: the tree of hives with sizes, the heaviest crossings, candidate
    contracts and cycles (--files lists every file, --explain every boundary); --format json has it all.

    Example: subhive decompose . --max-files 150 --explain
    """
    budget = Budget(max_files, max_bytes)
    reporter = _Reporter(quiet=quiet)
    try:
        plan = decompose(
            path, budget, exclude=tuple(exclude or ()), progress=reporter.message, reading=reporter.reading
        )
    finally:
        reporter.close()
    for warning in plan.warnings:
        err_console.print(f"[yellow]warning[/]: {warning}", highlight=False)
    if picture is not None:
        _write_picture(plan, picture)
    written = write_workspace(plan, workspace or path) if write else None
    if fmt is Format.json:
        document = plan.to_dict()
        if written is not None:
            document["written"] = written.to_dict()
        import json

        sys.stdout.write(json.dumps(document, indent=1) + "\n")
    else:
        sys.stdout.write("".join(line + "\n" for line in render_text(plan, files=files, explain=explain)))
    sys.stdout.flush()
    if written is not None:
        _report_written(written)


#: A progress bar for reading only on trees this large (on a terminal); smaller ones are read in a blink.
_BAR_FROM = 2_000


class _Reporter:
    """Progress on stderr: a line per stage, and on a terminal a bar while a large tree's files are read."""

    def __init__(self, *, quiet: bool) -> None:
        self.quiet = quiet
        self.started = time.perf_counter()
        self.bar: Progress | None = None
        if not quiet and err_console.is_terminal:
            self.bar = Progress(
                TextColumn("decompose: {task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=err_console,
                transient=True,
            )

    def message(self, text: str) -> None:
        if not self.quiet:
            console = self.bar.console if self.bar is not None else err_console
            console.print(f"[dim]decompose: {text} ({time.perf_counter() - self.started:.1f}s)[/]")

    def reading(self, done: int, total: int) -> None:
        if self.bar is None or total < _BAR_FROM:
            return
        if not self.bar.tasks:
            self.bar.add_task("reading files", total=total)
            self.bar.start()
        self.bar.update(self.bar.tasks[0].id, completed=done)
        if done == total:
            self.bar.stop()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _write_picture(plan: DecompositionPlan, target: Path) -> None:
    try:
        target.write_text(render_picture(plan), encoding="utf-8")
    except OSError as failed:
        raise InputError(
            f"cannot write the picture to {target}: {failed.strerror or failed}",
            code="decompose.picture_unwritable",
            location=Location(file=str(target)),
            hint="name a file in a directory that exists and that you may write to",
        ) from failed
    err_console.print(f"picture: {target}", markup=False, highlight=False)


def _report_written(written: Plan) -> None:
    err_console.print(f"created {written.summary}", markup=False)
    for step in written.next_steps:
        err_console.print(f"[cyan]next[/]: {step}")


def _size(count: int) -> str:
    return f"{count:,} bytes" if count < 10_000 else f"{count / 1e6:,.1f} MB"


#: How many crossings the summary shows (all of them are in --explain and --format json).
_HEAVIEST = 10
#: How many consumers of a candidate contract the summary names.
_CONSUMERS_SHOWN = 5
#: How many edges --explain shows per boundary.
_EDGES_SHOWN = 5


def render_text(plan: DecompositionPlan, *, files: bool = False, explain: bool = False) -> list[str]:
    """The plan as a summary a person reads: the tree of hives with sizes, the heaviest crossings, candidate
    contracts and cycles; every leaf's files with ``files``; every boundary explained with ``explain``."""
    stats = plan.stats
    skipped = ", ".join(f"{count:,} {reason}" for reason, count in sorted(stats.skipped.items()))
    leaves = sum(1 for _ in plan.leaves())
    lines = [
        f"{plan.root} ({plan.source}): {stats.files:,} files, {_size(stats.bytes)}"
        + (f"; skipped {sum(stats.skipped.values()):,}: {skipped}" if skipped else ""),
        f"budget per leaf: {plan.budget.max_files:,} files, {plan.budget.max_bytes:,} bytes; "
        f"{len(plan.hives)} sub-hives, {leaves} leaves",
        *(f"warning: {warning}" for warning in plan.warnings),
        "root",
    ]
    by_name = {hive.name: hive for hive in plan.hives}
    top = [hive for hive in plan.hives if hive.parent == "root"]
    for index, hive in enumerate(top):
        _tree(hive, by_name, "", index == len(top) - 1, lines, files=files)
    share = f" ({stats.edges_cut / stats.edges_total:.1%})" if stats.edges_total else ""
    lines.append(
        f"import edges: {stats.edges_total:,} total, {stats.edges_cut:,} cut{share}"
        + (f", and {stats.test_edges_cut:,} from tests (never contracts)" if stats.test_edges_cut else "")
        + f"; {stats.unresolved:,} imports name nothing in the repository"
        + (
            f"; {stats.units_too_big:,} unit(s) too big for a leaf cut apart (warning above)"
            if stats.units_too_big
            else ""
        )
    )
    crossings = sorted(plan.crossings, key=lambda c: (-len(c.edges), c.consumer, c.provider))
    if crossings:
        lines.append(f"heaviest crossings ({min(len(crossings), _HEAVIEST)} of {len(crossings)}):")
        lines.extend(f"  {c.consumer} -> {c.provider}: {len(c.edges):,} edges" for c in crossings[:_HEAVIEST])
        contracts = _contracts(plan)
        lines.append(f"candidate contracts ({min(len(contracts), _HEAVIEST)} of {len(contracts)}, by edges):")
        for contract, provider, consumers, count in contracts[:_HEAVIEST]:
            shown = ", ".join(consumers[:_CONSUMERS_SHOWN])
            more = f" and {len(consumers) - _CONSUMERS_SHOWN} more" if len(consumers) > _CONSUMERS_SHOWN else ""
            lines.append(f"  {contract} served by {provider} to {shown}{more} ({count:,} edges)")
    by_pair = {(c.consumer, c.provider): c for c in plan.crossings}
    for cycle in plan.cycles:
        consumer, provider, count = cycle.weakest
        lines.append(
            f"cycle: {' <-> '.join(cycle.hives)} import each other and do not fit one leaf; "
            f"weakest link {consumer} -> {provider} ({count:,} edges), the first to cut:"
        )
        edges = by_pair[(consumer, provider)].edges
        lines.extend(f"  {source} -> {target}" for source, target in edges[:_EDGES_SHOWN])
        if len(edges) > _EDGES_SHOWN:
            lines.append(f"  ... {len(edges) - _EDGES_SHOWN:,} more")
    if explain:
        lines.extend(explain_boundaries(plan))
    elif crossings:
        lines.append("(every boundary with its edges: --explain; every file: --files; all of it: --format json)")
    return lines


def _contracts(plan: DecompositionPlan) -> list[tuple[str, str, list[str], int]]:
    grouped: dict[tuple[str, str], list[Crossing]] = {}
    for crossing in plan.crossings:
        grouped.setdefault((crossing.contract, crossing.provider), []).append(crossing)
    rows = [
        (contract, provider, sorted(c.consumer for c in group), sum(len(c.edges) for c in group))
        for (contract, provider), group in grouped.items()
    ]
    return sorted(rows, key=lambda row: (-row[3], row[0]))


def explain_boundaries(plan: DecompositionPlan) -> list[str]:
    """Per boundary (a pair of leaves with edges between them): the edges both ways, and why the cut is there:
    the hive that had to be split, and whether the two would fit one leaf."""
    by_name = {hive.name: hive for hive in plan.hives}
    pairs: dict[tuple[str, str], list[Crossing]] = {}
    for crossing in plan.crossings:
        key = (min(crossing.consumer, crossing.provider), max(crossing.consumer, crossing.provider))
        pairs.setdefault(key, []).append(crossing)
    lines = ["boundaries:"]
    budget = plan.budget
    made = set(plan.made_mutual)
    for (a, b), group in sorted(pairs.items(), key=lambda item: (-sum(len(c.edges) for c in item[1]), item[0])):
        first, second = by_name[a], by_name[b]
        count = first.file_count + second.file_count
        size = first.bytes + second.bytes
        above = _common_ancestor(first, second, by_name)
        if count > budget.max_files or size > budget.max_bytes:
            why = f"together {count:,} files, {_size(size)}: more than one leaf holds"
        else:
            why = "together they would fit, but each is held by code it is more coupled to"
        where = f"{above.name} ({above.file_count:,} files) was too big for one leaf" if above else "top level"
        lines.append(f"  {a} | {b}: {sum(len(c.edges) for c in group):,} edges; {where}; {why}")
        if (a, b) in made:
            lines.append(
                f"    made mutual by refinement: moving code here cut at least {CYCLE_MARGIN} import edges more "
                "than keeping the imports one way; cut by hand if a cyclic contract is not worth it"
            )
        for crossing in group:
            lines.append(f"    {crossing.consumer} -> {crossing.provider}: {len(crossing.edges):,} edges")
            lines.extend(f"      {source} -> {target}" for source, target in crossing.edges[:_EDGES_SHOWN])
            if len(crossing.edges) > _EDGES_SHOWN:
                lines.append(f"      ... {len(crossing.edges) - _EDGES_SHOWN:,} more")
    return lines


def _common_ancestor(a: HivePlan, b: HivePlan, by_name: dict[str, HivePlan]) -> HivePlan | None:
    chain: list[str] = []
    hive: HivePlan | None = a
    while hive is not None:
        chain.append(hive.name)
        hive = by_name.get(hive.parent)
    hive = b
    while hive is not None:
        if hive.name in chain:
            return hive
        hive = by_name.get(hive.parent)
    return None


def _tree(
    hive: HivePlan, by_name: dict[str, HivePlan], indent: str, last: bool, lines: list[str], *, files: bool
) -> None:
    branch = "└── " if last else "├── "
    kind = "leaf" if hive.leaf else f"{len(hive.children)} children"
    lines.append(
        f"{indent}{branch}{hive.name} [{hive.role.value}] {hive.path}/ - {hive.file_count:,} files"
        + (f" ({hive.outside:,} elsewhere)" if hive.outside else "")
        + f", {_size(hive.bytes)}, {kind}"
    )
    below = indent + ("    " if last else "│   ")
    if hive.leaf:
        if files:
            lines.extend(f"{below}  {path}" for path in hive.files)
        return
    for index, child in enumerate(hive.children):
        _tree(by_name[child], by_name, below, index == len(hive.children) - 1, lines, files=files)
