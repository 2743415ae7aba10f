"""Shell completion (decision 0138): ``subhive completion SHELL`` prints a script, and the script's protocol (the
shell runs ``subhive`` with ``_SUBHIVE_COMPLETE`` set) answers with subhive's commands, sub-commands and options,
run for real in subprocesses: bash itself sourcing the script, and each shell's request as its script makes it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from subhive.cli._completion import Shell

REPO = Path(__file__).resolve().parents[2]


def _subhive(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "subhive", *argv],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
        timeout=60,
        check=False,
    )


@pytest.fixture
def on_path(tmp_path: Path) -> dict[str, str]:
    """An environment whose PATH finds a ``subhive`` command running this checkout (the script calls it by name)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    command = bin_dir / "subhive"
    command.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m subhive "$@"\n')
    command.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(REPO)}


def test_bash_sourcing_the_script_completes_commands_sub_commands_and_choices(on_path: dict[str, str]) -> None:
    bash = shutil.which("bash")
    assert bash is not None, "bash runs the completion script"
    # Each line: the words typed so far (the last one being completed); the function fills COMPREPLY.
    typed = ["subhive sch", "subhive schema d", "subhive completion ", "subhive contract li"]
    script = "source <(subhive completion bash) || exit 9\nwhile IFS= read -r line; do\n"
    script += '  read -r -a COMP_WORDS <<< "$line"; [[ "$line" == *" " ]] && COMP_WORDS+=("")\n'
    script += "  COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); COMPREPLY=()\n"
    script += '  _subhive_completion subhive; echo "${COMPREPLY[*]}"\ndone\n'
    done = subprocess.run(
        [bash, "--norc", "--noprofile", "-c", script],
        input="\n".join(typed) + "\n",
        capture_output=True,
        text=True,
        env=on_path,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["schema", "diff", "bash zsh fish powershell", "lint list"], done.stderr


@pytest.mark.parametrize(
    ("shell", "env", "expected"),
    [
        ("bash", {"COMP_WORDS": "subhive sch", "COMP_CWORD": "1"}, ["schema"]),
        ("bash", {"COMP_WORDS": "subhive de", "COMP_CWORD": "1"}, ["decompose", "deadletters"]),
        ("bash", {"COMP_WORDS": "subhive approvals a", "COMP_CWORD": "2"}, ["approve"]),
        # A command's options, after its arguments (files that need not exist: completing runs nothing).
        ("bash", {"COMP_WORDS": "subhive schema diff a.json b.json --for", "COMP_CWORD": "5"}, ["--format"]),
        (
            "zsh",
            {"_TYPER_COMPLETE_ARGS": "subhive schema di"},
            ['"diff":"Compare two versions of a schema'],
        ),
        ("fish", {"_TYPER_COMPLETE_FISH_ACTION": "get-args", "_TYPER_COMPLETE_ARGS": "subhive comp"}, ["completion"]),
    ],
)
def test_the_completion_protocol_answers_each_shell(shell: str, env: dict[str, str], expected: list[str]) -> None:
    done = _subhive(env={"_SUBHIVE_COMPLETE": f"complete_{shell}", **env})
    assert done.returncode == 0, done.stderr
    for item in expected:
        assert item in done.stdout, (item, done.stdout)
    if shell == "bash":  # one candidate a line, nothing else
        assert sorted(done.stdout.split()) == sorted(expected)


@pytest.mark.parametrize("shell", list(Shell))
def test_each_shell_gets_a_script_that_asks_subhive(shell: Shell) -> None:
    done = _subhive("completion", shell.value)
    assert done.returncode == 0, done.stderr
    assert f"_SUBHIVE_COMPLETE=complete_{shell.value}" in done.stdout.replace('"', "").replace(" = ", "=")
    assert "subhive" in done.stdout.replace("_SUBHIVE_COMPLETE", "")


def test_an_unknown_shell_is_refused_with_the_ones_there_are() -> None:
    done = _subhive("completion", "tcsh", env={"COLUMNS": "200"})
    assert done.returncode == 2
    assert "'bash', 'zsh', 'fish', 'powershell'" in done.stderr
    assert "Traceback" not in done.stderr
