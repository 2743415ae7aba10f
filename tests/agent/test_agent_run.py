"""``subhive agent run``: a turn of a hive's agent from its manifest, streamed as frames, exit codes that say
how it ended; on a running bus, the board tools work and the transcript is kept on the hive's board."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

import nats
import pytest
from nats.js.errors import NotFoundError

from subhive.agent import ScriptedServer, Step, run_hive_turn, transcript_key
from subhive.bus import EmbeddedServer
from subhive.cli import main
from subhive.hive import KvBlackboard, board_stream, ensure_blackboard
from subhive.workspace import Kind, init_workspace, new_subhive

AGENT = """
[agents.finder]
instructions = "agents/finder.md"

[agents.finder.model]
name = "scripted-1"
max_retries = 0

[agents.finder.tools]
{tools}

[agents.finder.budgets]
repeat_limit = 2
"""


def workspace(tmp_path: Path, tools: str = 'search = "allow"\nread_file = "allow"') -> Path:
    root = tmp_path / "ws"
    init_workspace(root)
    new_subhive("notes", Kind.backend, start=root)
    hive = root / "subhives" / "notes"
    manifest = hive / "subhive.toml"
    manifest.write_text(manifest.read_text() + AGENT.format(tools=tools))
    (hive / "agents").mkdir()
    (hive / "agents" / "finder.md").write_text("You find things in the notes hive.")
    (hive / "docs.md").write_text("the needle is here\n")
    return root


def frames(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if line.strip()]


def test_a_turn_streams_one_json_frame_per_line_and_exits_0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = workspace(tmp_path)
    with ScriptedServer([Step.call(("search", {"query": "needle"})), Step.say("docs.md, line 1")]) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        code = main(["agent", "run", "notes", "where is the needle?", "--format", "json", "-C", str(root)])
        request = server.chat_requests()[0].body
    out = capsys.readouterr().out
    assert code == 0
    shown = frames(out)
    assert [f["kind"] for f in shown] == [
        "turn.started",
        "model.request",
        "model.reply",
        "tool.call",
        "tool.result",
        "model.request",
        "model.reply",
        "turn.stopped",
    ]
    assert shown[4]["content"] == '{"matches": ["docs.md:1: the needle is here"], "truncated": false}'
    assert shown[-1]["stop"]["code"] == "completed"
    assert shown[-1]["answer"] == "docs.md, line 1"
    assert request["messages"][0]["content"] == "You find things in the notes hive."
    assert request["model"] == "scripted-1"


def test_a_turn_that_stops_early_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = workspace(tmp_path)
    with ScriptedServer([Step.call(("search", {"query": "x"}))] * 3) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        code = main(["agent", "run", "notes", "loop", "-C", str(root)])
    captured = capsys.readouterr()
    assert code == 1
    assert "loop.repeated_call" in captured.err


def test_no_endpoint_is_exit_2_with_a_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = workspace(tmp_path)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    code = main(["agent", "run", "notes", "hello", "-C", str(root)])
    err = capsys.readouterr().err
    assert code == 2
    assert "agent.no_endpoint" in err
    assert "OPENAI_BASE_URL" in err


@pytest.mark.parametrize(("args", "code"), [(["--agent", "nobody"], "agent.unknown")])
def test_an_unknown_agent_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], code: str
) -> None:
    root = workspace(tmp_path)
    assert main(["agent", "run", "notes", "hi", "-C", str(root), *args]) == 2
    assert code in capsys.readouterr().err


def test_board_tools_need_the_running_tree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = workspace(tmp_path, 'board_read = "allow"')
    assert main(["agent", "run", "notes", "hi", "-C", str(root)]) == 2
    err = capsys.readouterr().err
    assert "agent.not_running" in err
    assert "subhive up" in err


def test_on_the_bus_the_board_tools_work_and_the_transcript_is_kept(
    tmp_path: Path, bus: EmbeddedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = workspace(tmp_path, 'board_read = "allow"\nsearch = "allow"')
    script = [Step.call(("board_read", {"key": "tasks.t1"}), ("search", {"query": "needle"})), Step.say("nothing")]

    async def scenario(server: ScriptedServer) -> tuple[Any, dict[str, Any]]:
        nc = await nats.connect(bus.url)
        js = nc.jetstream()
        with contextlib.suppress(NotFoundError):
            await js.delete_stream(board_stream("notes"))
        await ensure_blackboard(js, "notes")
        try:
            result = await run_hive_turn(root, "notes", "look", endpoint=bus.endpoint())
            board = await KvBlackboard.open(js, "notes")
            return result, {k: e.value for k, e in (await board.snapshot()).items()}
        finally:
            await nc.close()

    with ScriptedServer(script) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        result, board = asyncio.run(scenario(server))
    assert result.stop.code == "completed"
    summary = board[transcript_key("finder", result.turn)]
    assert summary["status"] == "completed"
    assert summary["prompt"] == "look"
    assert summary["answer"] == "nothing"
    assert summary["frames"] == len(result.frames)
    kept = [board[transcript_key("finder", result.turn, seq)] for seq in range(1, len(result.frames) + 1)]
    assert kept == [f.to_dict() for f in result.frames]
    read = next(f for f in kept if f["kind"] == "tool.result" and f["name"] == "board_read")
    assert json.loads(read["content"]) == {"key": "tasks.t1", "value": None, "revision": 0}


def test_the_help_has_an_example(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["agent", "run", "--help"]) == 0
    assert "Example: subhive agent run" in capsys.readouterr().out


@pytest.mark.parametrize(("answer", "outcome"), [("y", None), ("n", "tool.rejected")])
def test_a_person_at_the_terminal_answers_an_ask_call(tmp_path: Path, answer: str, outcome: str | None) -> None:
    import os
    import pty
    import subprocess
    import sys

    root = workspace(tmp_path, 'search = "ask"')
    master, slave = pty.openpty()
    try:
        with ScriptedServer([Step.call(("search", {"query": "needle"})), Step.say("done")]) as server:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "subhive",
                    "agent",
                    "run",
                    "notes",
                    "find it",
                    "--format",
                    "json",
                    "-C",
                    str(root),
                ],
                stdin=slave,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env={**os.environ, "OPENAI_BASE_URL": server.base_url},
                text=True,
            )
            os.write(master, f"{answer}\n".encode())  # the terminal holds the line until the prompt reads it
            out, err = process.communicate(timeout=60)
    finally:
        os.close(master)
        os.close(slave)
    assert process.returncode == 0, err
    assert 'approve search {"query":"needle"} ? [y/N]' in err
    shown = frames(out)
    assert [f["kind"] for f in shown][3:6] == ["tool.call", "approval.waiting", "tool.result"]
    result = shown[5]
    assert result["error"] == outcome
    assert ("the needle is here" in result["content"]) is (answer == "y")


class Crash(BaseException):
    """The CLI's process dying mid-turn."""


def test_a_turn_that_died_resumes_from_the_board(
    tmp_path: Path, bus: EmbeddedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = workspace(tmp_path, 'search = "allow"\nboard_read = "allow"')
    script = [Step.call(("search", {"query": "needle"}), ("board_read", {"key": "tasks.t1"})), Step.say("found")]
    from subhive.errors import InputError

    async def scenario() -> tuple[str, Any, list[str]]:
        nc = await nats.connect(bus.url)
        js = nc.jetstream()
        with contextlib.suppress(NotFoundError):
            await js.delete_stream(board_stream("notes"))
        await ensure_blackboard(js, "notes")
        seen: dict[str, str] = {}

        def die_after_first_result(frame: Any) -> None:
            seen["turn"] = frame.turn
            if frame.kind == "tool.result":
                raise Crash

        try:
            with contextlib.suppress(Crash):
                await run_hive_turn(root, "notes", "look", endpoint=bus.endpoint(), on_frame=die_after_first_result)
            result = await run_hive_turn(root, "notes", "", endpoint=bus.endpoint(), resume=seen["turn"])
            codes = []
            for turn in (seen["turn"], "nope"):  # ended now; never started
                try:
                    await run_hive_turn(root, "notes", "", endpoint=bus.endpoint(), resume=turn)
                except InputError as error:
                    codes.append(error.code)
            return seen["turn"], result, codes
        finally:
            await nc.close()

    with ScriptedServer(script) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        turn, result, codes = asyncio.run(scenario())
        requests = server.chat_requests()
    assert result.turn == turn
    assert result.stop.code == "completed"
    assert len(requests) == 2  # the crashed turn's reply was not asked for again
    assert [m["role"] for m in requests[1].body["messages"]] == ["system", "user", "assistant", "tool", "tool"]
    assert codes == ["agent.turn_ended", "agent.turn_unknown"]


def test_a_turn_needs_a_prompt_unless_it_resumes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = workspace(tmp_path)
    assert main(["agent", "run", "notes", "-C", str(root)]) == 2
    assert "usage.missing_argument" in capsys.readouterr().err


def test_text_output_shows_every_kind_of_frame(capsys: pytest.CaptureFixture[str]) -> None:
    from subhive.agent import Frame
    from subhive.cli._agent import _print_text

    frames = [
        Frame("turn.started", "t1", 1, {"agent": "a", "model": "m"}, 0.0),
        Frame("turn.resumed", "t1", 2, {"after": 1, "pending": ["c1"]}, 0.0),
        Frame("model.request", "t1", 3, {"n": 1, "messages": 2, "tokens": 10, "compaction": False}, 0.0),
        Frame(
            "model.reply",
            "t1",
            4,
            {"tool_calls": [{"name": "search"}], "usage": {"prompt_tokens": 1, "completion_tokens": 2}},
            0.0,
        ),
        Frame("tool.call", "t1", 5, {"name": "search", "arguments": "{}", "policy": "ask"}, 0.0),
        Frame("approval.waiting", "t1", 6, {"timeout": 300}, 0.0),
        Frame("tool.result", "t1", 7, {"ok": False, "error": "tool.rejected", "content": "no"}, 0.0),
        Frame("answer.refused", "t1", 8, {"error": "answer.not_json", "message": "not JSON"}, 0.0),
        Frame("compaction", "t1", 9, {"tokens_before": 100, "tokens_after": 10}, 0.0),
        Frame("something.new", "t1", 10, {}, 0.0),
        Frame(
            "turn.stopped",
            "t1",
            11,
            {
                "stop": {"code": "completed", "message": "ok"},
                "answer": "done",
                "model_calls": 1,
                "tool_calls": 1,
                "tokens": 3,
                "seconds": 0.1,
            },
            0.0,
        ),
    ]
    for frame in frames:
        _print_text(frame)
    captured = capsys.readouterr()
    for shown in (
        "resumed after 1 frames",
        "waiting for approval",
        "tool.rejected",
        "answer refused",
        "compacted",
        "something.new",
        "completed",
    ):
        assert shown in captured.err
    assert captured.out.strip() == "done"


def test_waiting_for_approval_is_said_only_when_someone_is_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # No terminal, no root: nobody can be asked. Invalid arguments are refused before asking anyway.
    root = workspace(tmp_path, 'search = "ask"\npropose_diff = "ask"')
    diff = "--- a/docs.md\n+++ b/docs.md\n@@ -1 +1 @@\n-the needle is here\n+the needle was here\n"
    script = [Step.call(("search", {"bogus": 1})), Step.call(("propose_diff", {"diff": diff})), Step.say("gave up")]
    with ScriptedServer(script) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        code = main(["agent", "run", "notes", "change it", "-C", str(root)])
    err = capsys.readouterr().err
    assert code == 0
    assert "tool.arguments_invalid" in err
    assert "tool.approval_unavailable" in err
    assert "waiting for approval" not in err
    assert (root / "subhives" / "notes" / "docs.md").read_text() == "the needle is here\n"


def test_an_unreachable_model_names_its_url_where_it_was_set_and_a_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket

    root = workspace(tmp_path)
    with socket.socket() as probe:  # a port nothing listens on once it is closed
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    code = main(["agent", "run", "notes", "hi", "-C", str(root)])
    err = " ".join(capsys.readouterr().err.split())  # the console wraps long lines
    assert code == 1
    assert f"model.unreachable: the model endpoint {url} (from OPENAI_BASE_URL) cannot be reached" in err
    assert "hint: start the model server there, or point the agent at a running one" in err
