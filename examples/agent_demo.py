"""The agent demo: the `guide` agent of the notes workspace's `ui` hive answers a question from the hive's files.

    python examples/agent_demo.py                                  # against a scripted model (no key, offline)
    OPENAI_BASE_URL=http://127.0.0.1:11434/v1 SUBHIVE_AGENT_MODEL=qwen3 python examples/agent_demo.py

Without ``OPENAI_BASE_URL`` the demo starts ``subhive.agent.ScriptedServer``, an OpenAI-compatible server on
loopback that plays a model which lists the hive's files, reads its knowledge module, searches for "drafts"
and answers. With it, a real model does the same work and gets the same tools. Either way, the demo runs the
real command, ``subhive agent run ui "..." --format json``, on a copy of examples/notes. It prints each step
and exits 0 only if the turn ended with an answer. The tree is not started: the guide only needs file tools.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

EXAMPLE = Path(__file__).resolve().parent / "notes"
QUESTION = "What does the ui hive do with drafts, and which files say so?"


def scripted_model() -> Any:
    """The model the demo plays when no real one is configured: three steps of tool calls, then an answer."""
    from subhive.agent import ScriptedServer, Step

    return ScriptedServer(
        [
            Step.call(("list_files", {"path": "."})),
            Step.call(("read_file", {"path": "ui_hive/knowledge.py"}), ("search", {"query": "drafts"})),
            Step.say(
                "The ui hive turns each draft written under drafts.* into a note: its Submitter expert "
                "(ui_hive/knowledge.py) sends the draft to the backend through notes_api.create_note and keeps "
                "the answer under sent.*, and its Feed expert keeps each note the backend publishes "
                "(notes_api.note_published) under feed.*. Files read: ui_hive/knowledge.py, README.md."
            ),
        ]
    ).start()


def show(frame: dict[str, Any]) -> None:
    kind = frame["kind"]
    if kind == "tool.call":
        print(f"  tool   {frame['name']} {frame['arguments']}")
    elif kind == "tool.result":
        print(f"  result {'ok' if frame['ok'] else frame['error']}: {frame['content'][:100]}")
    elif kind == "model.reply":
        print(f"model    {frame['usage']['prompt_tokens']} tokens in, {frame['usage']['completion_tokens']} out")
    elif kind == "turn.stopped":
        print(
            f"stopped  {frame['stop']['code']}: {frame['model_calls']} model calls, {frame['tool_calls']} tool "
            f"calls, {frame['tokens']} tokens, {frame['seconds']:.2f} s"
        )
        if frame.get("answer"):
            print(f"\nanswer:\n{frame['answer']}")


def main() -> int:
    server = None
    env = dict(os.environ)
    if not env.get("OPENAI_BASE_URL"):
        server = scripted_model()
        env["OPENAI_BASE_URL"] = server.base_url
        print(f"no OPENAI_BASE_URL: a scripted model answers at {server.base_url}")
    try:
        with tempfile.TemporaryDirectory(prefix="subhive-agent-demo-") as tmp:
            workspace = Path(tmp) / "notes"
            shutil.copytree(EXAMPLE, workspace, ignore=shutil.ignore_patterns(".subhive", "__pycache__"))
            model = env.get("SUBHIVE_AGENT_MODEL")
            if model:  # the manifest names the scripted model; a real endpoint needs its own model's name
                manifest = workspace / "subhives" / "ui" / "subhive.toml"
                manifest.write_text(manifest.read_text().replace('name = "scripted"', f'name = "{model}"'))
            print(f"question: {QUESTION}\n")
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "subhive",
                    "agent",
                    "run",
                    "ui",
                    QUESTION,
                    "--format",
                    "json",
                    "-C",
                    str(workspace),
                ],
                capture_output=True,
                text=True,
                env=env,
                timeout=600,
                check=False,
            )
    finally:
        if server is not None:
            server.stop()
    frames = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    for frame in frames:
        show(frame)
    if done.returncode != 0 or not frames or frames[-1]["kind"] != "turn.stopped":
        print(f"\nagent demo FAILED (exit {done.returncode}):\n{done.stderr}", file=sys.stderr)
        return 1
    print("\nagent demo finished: the turn ended with an answer")
    return 0


if __name__ == "__main__":
    sys.exit(main())
