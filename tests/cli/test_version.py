"""``subhive --version`` (and ``-V``, and the ``version`` command): the installed version, exit 0."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from subhive.cli import main


def test_version_flag_prints_the_installed_version_as_a_real_process() -> None:
    ran = subprocess.run(
        [sys.executable, "-m", "subhive", "--version"], capture_output=True, text=True, timeout=60, check=False
    )
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, f"subhive {version('subhive')}\n", "")


@pytest.mark.parametrize("argv", [["-V"], ["--version", "status"], ["version"]])
def test_every_spelling_agrees_and_needs_no_workspace(
    argv: list[str], capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no hive.toml anywhere: the version must not need one
    assert main(argv) == 0
    assert capsys.readouterr().out.strip().removeprefix("subhive ") == version("subhive")
