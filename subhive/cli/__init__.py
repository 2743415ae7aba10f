"""The ``subhive`` command line: a thin shell over the library, and the only place that prints or exits.

``main(argv)`` is testable: it returns the exit code instead of exiting. 0 means success, 1 that a check
ran and failed, 2 bad usage or bad input. User mistakes never show a traceback.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import MutableMapping, Sequence
from typing import Annotated, Any

import typer

from ..errors import SubhiveError
from ._fast import schema_diff_arguments
from ._lazy import LazyGroup, Where
from ._output import Format, err_console, print_error

__all__ = ["app", "main"]

#: Every command, in the order ``subhive --help`` lists them: its module is imported only when it runs (or when
#: help or completion lists them all), so ``subhive schema diff`` pays for no gRPC, NATS or agents (decision 0110).
COMMANDS: dict[str, Where] = {
    "init": ("subhive.cli._workspace", "init_command"),
    "new": ("subhive.cli._workspace", "new_command"),
    "codegen": ("subhive.cli._codegen", "codegen_command"),
    "decompose": ("subhive.cli._decompose", "decompose_command"),
    "root": ("subhive.cli._root", "root_command"),
    "status": ("subhive.cli._root", "status_command"),
    "watch": ("subhive.cli._root", "watch_command"),
    "up": ("subhive.cli._up", "up_command"),
    "down": ("subhive.cli._up", "down_command"),
    "logs": ("subhive.cli._up", "logs_command"),
    "restart": ("subhive.cli._up", "restart_command"),
    "creds": ("subhive.cli._up", "creds_command"),
    "join": ("subhive.cli._up", "join_command"),
    "version": ("subhive.cli", "version"),
    "completion": ("subhive.cli._completion", "completion_command"),
    "contract": ("subhive.cli._contract", "contract_app"),
    "schema": ("subhive.cli._schema", "schema_app"),
    "approvals": ("subhive.cli._root", "approvals_app"),
    "deadletters": ("subhive.cli._deadletters", "deadletters_app"),
    "board": ("subhive.cli._board", "board_app"),
    "memory": ("subhive.cli._memory", "memory_app"),
    "agent": ("subhive.cli._agent", "agent_app"),
    "nats": ("subhive.cli._nats", "nats_app"),
}


class _Subhive(LazyGroup):
    lazy_commands = COMMANDS

    def _main_shell_completion(
        self, ctx_args: MutableMapping[str, Any], prog_name: str, complete_var: str | None = None
    ) -> None:
        # A shell asking for completions (the script `subhive completion SHELL` prints): typer registers its
        # shells' completion classes only for an app with add_completion=True, which this one is not (decision
        # 0138), so it is done here, on that path alone.
        if os.environ.get(complete_var or "_SUBHIVE_COMPLETE"):
            from typer._completion_classes import completion_init

            completion_init()
        super()._main_shell_completion(ctx_args, prog_name, complete_var)


app = typer.Typer(
    name="subhive",
    cls=_Subhive,
    help="Contract-first sub-hives for multi-agent work on large codebases.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


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
    # `schema diff` with arguments read exactly as typer reads them skips typer's parsing (decision 0110).
    fast = None if "_SUBHIVE_COMPLETE" in os.environ else schema_diff_arguments(args)
    try:
        if fast is not None:
            from ._schema import diff

            diff(**fast)
        else:
            # Standalone mode lets typer report usage errors (exit 2) and --help (exit 0) its own way; every
            # way out of it is a SystemExit, which becomes the return value here.
            app(args=args, prog_name="subhive", standalone_mode=True)
    except typer.Exit as exc:  # a command ending itself; typer's standalone mode turns it into SystemExit
        return exc.exit_code
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
