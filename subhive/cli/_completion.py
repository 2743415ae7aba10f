"""``subhive completion SHELL``: the shell's completion script, printed for the user to keep (decision 0138).

The script runs ``subhive`` with ``_SUBHIVE_COMPLETE=complete_SHELL`` when the user presses Tab; typer answers
that (its completion classes registered by the root group, :mod:`subhive.cli`). Nothing here detects the shell
or edits a start-up file: the user names the shell and decides where the script goes (docs/cli.md).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

__all__ = ["COMPLETE_VAR", "Shell", "completion_command"]

#: The environment variable the scripts set (click's name for the program ``subhive``).
COMPLETE_VAR = "_SUBHIVE_COMPLETE"


class Shell(StrEnum):
    bash = "bash"
    zsh = "zsh"
    fish = "fish"
    powershell = "powershell"


def completion_command(
    shell: Annotated[
        Shell, typer.Argument(help="The shell to print the completion script for.", metavar="SHELL", show_default=False)
    ],
) -> None:
    """Print the shell completion script of subhive for SHELL (commands, sub-commands, options, choices).

    Keep it where the shell loads completions from, e.g. for bash:
    subhive completion bash > ~/.local/share/bash-completion/completions/subhive

    Example: subhive completion fish > ~/.config/fish/completions/subhive.fish
    """
    from typer._completion_shared import get_completion_script

    typer.echo(get_completion_script(prog_name="subhive", complete_var=COMPLETE_VAR, shell=shell.value))
