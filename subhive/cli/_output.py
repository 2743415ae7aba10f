"""Everything the CLI prints: data as text or JSON, errors as an ``error:`` line plus a hint.

Only the CLI prints. Data goes to stdout; errors and progress go to stderr, so ``--format json`` output
stays parseable. In JSON mode an error is also printed to stdout as ``{"error": ..., "problems": [...]}``.
"""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

from ..compat import Change
from ..errors import Problem, SubhiveError

__all__ = [
    "Format",
    "err_console",
    "fail_check",
    "out_console",
    "print_error",
    "print_json",
    "print_problems",
    "verdict_label",
]

out_console = Console(highlight=False, soft_wrap=True)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)


class Format(StrEnum):
    text = "text"
    json = "json"


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False) + "\n")
    sys.stdout.flush()


def verdict_label(ok: bool) -> str:
    return "[green]compatible[/]" if ok else "[bold red]NOT compatible[/]"


def change_effect(change: Change) -> str:
    """A short, fixed-width summary of a change's effect on both directions."""
    if change.backward and change.forward:
        return "[dim]neutral        [/]"
    if change.backward:
        return "[green]widens[/]         "
    if change.forward:
        return "[yellow]narrows[/]        "
    return "[bold red]breaks both[/]    "


def print_problems(
    problems: tuple[Problem, ...] | list[Problem], *, console: Console = err_console, label: str = "[bold red]error[/]"
) -> None:
    for problem in problems:
        where = str(problem.location)
        prefix = f"{escape(where)}: " if where else ""
        console.print(f"{label}: {prefix}{escape(problem.message)} [dim]\\[{problem.code}][/]")
        if problem.hint:
            console.print(f"  [cyan]hint[/]: {escape(problem.hint)}")


def print_error(error: SubhiveError, fmt: Format) -> None:
    if fmt is Format.json:
        print_json(error.to_dict())
    print_problems(list(error.problems))


def fail_check(error: SubhiveError, fmt: Format) -> None:
    """End a command whose data is already printed: in JSON mode stdout must stay one JSON document."""
    if fmt is Format.json:
        print_problems(list(error.problems))
        raise typer.Exit(error.exit_code)
    raise error
