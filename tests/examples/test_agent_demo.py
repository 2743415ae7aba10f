"""The agent demo, as a person runs it without a model: the notes workspace's `guide` agent answers from its
hive's files through the real CLI, against the scripted server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

DEMO = Path(__file__).resolve().parents[2] / "examples" / "agent_demo.py"


def test_the_agent_demo_answers_from_the_hive_files() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "SUBHIVE_AGENT_MODEL")}
    done = subprocess.run(
        [sys.executable, str(DEMO)], capture_output=True, text=True, timeout=120, check=False, env=env
    )
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert "a scripted model answers at http://127.0.0.1:" in out
    assert '  tool   read_file {"path":"ui_hive/knowledge.py"}' in out
    assert "  result ok: " in out
    assert "stopped  completed: 3 model calls, 3 tool calls" in out
    assert "agent demo finished: the turn ended with an answer" in out
