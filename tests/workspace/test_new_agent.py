"""`subhive new NAME --agent`: a hive that declares an agent, whose own test runs it against the scripted
server out of the box. Run as its owner runs it: a real pytest process in the hive's directory."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from pathlib import Path

from subhive.cli import main
from subhive.workspace import AgentSpec, load_manifest


def test_a_new_hive_with_an_agent_passes_its_own_tests(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["init", str(root)]) == 0
        assert main(["new", "notes", "--kind", "backend", "--agent", "-C", str(root)]) == 0
    hive = root / "subhives" / "notes"
    (agent,) = load_manifest(hive).agents
    assert isinstance(agent, AgentSpec)
    assert (agent.name, agent.instructions, agent.model.name) == ("helper", "agents/helper.md", "scripted")
    assert agent.tools == {
        "list_files": "allow",
        "read_file": "allow",
        "search": "allow",
        "board_read": "allow",
        "board_write": "ask",
    }
    assert "You are helper, an agent of the `notes` sub-hive" in (hive / "agents" / "helper.md").read_text()
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=hive,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr  # the hive's whole suite, its agent's test included
    alone = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_notes_agent_helper.py"],
        cwd=hive,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert "1 passed" in alone.stdout, alone.stdout + alone.stderr


def test_without_the_flag_no_agent_is_declared(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["init", str(root)]) == 0
        assert main(["new", "notes", "--kind", "backend", "-C", str(root)]) == 0
    assert load_manifest(root / "subhives" / "notes").agents == ()
    assert not (root / "subhives" / "notes" / "agents").exists()
