"""The ``subhive`` command line: a thin shell over the library, and the only place that prints or exits.

``main(argv)`` is testable: it returns the exit code instead of exiting. 0 means success, 1 that a check
ran and failed, 2 bad usage or bad input. User mistakes never show a traceback.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Sequence
from typing import Annotated

import typer

from ..errors import SubhiveError
from ._agent import agent_app
from ._board import board_app
from ._codegen import codegen_command
from ._contract import contract_app
from ._deadletters import deadletters_app
from ._decompose import decompose_command
from ._memory import memory_app
from ._nats import nats_app
from ._output import Format, err_console, print_error
from ._root import approvals_app, root_command, status_command, watch_command
from ._schema import schema_app
from ._up import creds_command, down_command, join_command, logs_command, restart_command, up_command
from ._workspace import init_command, new_command

__all__ = ["app", "main"]

app = typer.Typer(
    name="subhive",
    help="Contract-first sub-hives for multi-agent work on large codebases.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(contract_app, name="contract")
app.add_typer(schema_app, name="schema")
app.command("init")(init_command)
app.command("new")(new_command)
app.command("codegen")(codegen_command)
app.command("decompose")(decompose_command)
app.add_typer(approvals_app, name="approvals")
app.add_typer(deadletters_app, name="deadletters")
app.add_typer(board_app, name="board")
app.add_typer(memory_app, name="memory")
app.add_typer(agent_app, name="agent")
app.add_typer(nats_app, name="nats")
app.command("root")(root_command)
app.command("status")(status_command)
app.command("watch")(watch_command)
app.command("up")(up_command)
app.command("down")(down_command)
app.command("logs")(logs_command)
app.command("restart")(restart_command)
app.command("creds")(creds_command)
app.command("join")(join_command)


def _installed_version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("subhive")
    except PackageNotFoundError:  # imported from a source tree that was never installed
        return "unknown (not installed)"


def _print_version(value: bool) -> None:
    # An option callback: runs while the options are parsed, before typer asks for a command.
    if value:
        typer.echo(f"subhive {_installed_version()}")
        raise typer.Exit(0)


@app.callback()
def _root_options(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            "-V",
            help="Print the installed subhive version and exit.",
            is_eager=True,
            callback=_print_version,
        ),
    ] = False,
) -> None:
    """Contract-first sub-hives for multi-agent work on large codebases."""


@app.command("version")
def version() -> None:
    """Print the installed subhive version (as `subhive --version` does).

    Example: subhive version
    """
    typer.echo(_installed_version())


def _requested_format(argv: Sequence[str]) -> Format:
    for i, arg in enumerate(argv):
        if arg in ("--format", "-f") and i + 1 < len(argv) and argv[i + 1] == "json":
            return Format.json
        if arg == "--format=json":
            return Format.json
    return Format.text


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI with ``argv`` (default: ``sys.argv[1:]``) and return its exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        # Standalone mode lets typer report usage errors (exit 2) and --help (exit 0) its own way; every
        # way out of it is a SystemExit, which becomes the return value here.
        app(args=args, prog_name="subhive", standalone_mode=True)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except SubhiveError as exc:
        print_error(exc, _requested_format(args))
        return exc.exit_code
    except KeyboardInterrupt:  # Ctrl-C: a command that started something stops it and says so first
        err_console.print("[yellow]interrupted[/]")
        return 130
    except Exception as exc:  # a bug in subhive, not a user mistake: say so, keep the details on demand
        err_console.print(f"[bold red]internal error[/]: {type(exc).__name__}: {exc}")
        if os.environ.get("SUBHIVE_DEBUG"):
            traceback.print_exc()
        else:
            err_console.print("this is a bug in subhive; rerun with SUBHIVE_DEBUG=1 for the traceback and report it")
        return 70
    return 0


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())
