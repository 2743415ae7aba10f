"""propose_diff: a unified diff checked before a person is asked, applied all-or-nothing once approved,
refused with a conflict when the files moved on, never outside the hive or on its manifest."""

from __future__ import annotations

import asyncio
import difflib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from subhive.agent import (
    Approval,
    FileSlice,
    ScriptedServer,
    Step,
    ToolBox,
    ToolCall,
    ToolError,
    apply_patch,
    diff_tool,
    parse_diff,
)

from .conftest import make_agent


def unified(path: str, old: str, new: str) -> str:
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), fromfile=f"a/{path}", tofile=f"b/{path}"
        )
    )


LINES = st.lists(st.sampled_from(["alpha", "beta", "gamma", "", "  indented", "delta = 1", "}"]), max_size=30)


@settings(max_examples=300, deadline=None)
@given(old=LINES, new=LINES)
def test_any_difflib_diff_parses_and_applies_back_to_the_new_text(old: list[str], new: list[str]) -> None:
    before, after = "".join(f"{line}\n" for line in old), "".join(f"{line}\n" for line in new)
    if before == after:
        return
    (patch,) = parse_diff(unified("f.txt", before, after))
    assert apply_patch(before.splitlines(), patch) == after.splitlines()


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("hello\n", "1"),
        ("--- a/x\n@@ -1 +1 @@\n", "2"),
        ("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-a\n+b\n", "5"),
        ("--- a/x\n+++ b/x\n@@ bad @@\n", "3"),
    ],
)
def test_a_malformed_diff_names_its_line(text: str, where: str) -> None:
    with pytest.raises(ToolError) as caught:
        parse_diff(text)
    assert caught.value.code == "diff.malformed"
    assert f"line {where}" in caught.value.message


def run(box: ToolBox, diff: str) -> Any:
    return asyncio.run(box.dispatch(ToolCall("c1", "propose_diff", json.dumps({"diff": diff}))))


def approving(answers: list[bool], asked: list[str], before: Any = None) -> Any:
    async def approver(call: ToolCall) -> Approval:
        asked.append(json.loads(call.arguments)["diff"])
        if before is not None:
            before()
        return Approval(answers.pop(0), "not like this")

    return approver


@pytest.fixture
def hive(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("def main():\n    return 1\n")
    (tmp_path / "notes.md").write_text("one\ntwo\n")
    (tmp_path / "subhive.toml").write_text('name = "x"\n')
    return tmp_path


def box(hive: Path, approver: Any) -> ToolBox:
    return ToolBox([diff_tool(FileSlice(hive))], {"propose_diff": "ask"}, approver=approver)


def test_an_approved_diff_is_applied_across_files(hive: Path) -> None:
    diff = (
        unified("src/app.py", "def main():\n    return 1\n", "def main():\n    return 2\n")
        + unified("notes.md", "one\ntwo\n", "one\n")
        + unified("docs/new.md", "", "fresh\n").replace("--- a/docs/new.md", "--- /dev/null")
    )
    asked: list[str] = []
    result = run(box(hive, approving([True], asked)), diff)
    assert asked == [diff]  # the person saw exactly the diff
    assert result.value == {"status": "applied", "files": ["src/app.py", "notes.md", "docs/new.md"]}
    assert result.files_changed == ("src/app.py", "notes.md", "docs/new.md")
    assert (hive / "src" / "app.py").read_text() == "def main():\n    return 2\n"
    assert (hive / "notes.md").read_text() == "one\n"
    assert (hive / "docs" / "new.md").read_text() == "fresh\n"


def test_a_rejected_diff_changes_nothing(hive: Path) -> None:
    diff = unified("notes.md", "one\ntwo\n", "one\n")
    with pytest.raises(ToolError) as caught:
        run(box(hive, approving([False], [])), diff)
    assert caught.value.code == "tool.rejected"
    assert (hive / "notes.md").read_text() == "one\ntwo\n"


def test_a_diff_that_does_not_apply_never_reaches_a_person(hive: Path) -> None:
    asked: list[str] = []
    with pytest.raises(ToolError) as caught:
        run(box(hive, approving([True], asked)), unified("notes.md", "one\nTWO\n", "one\n"))
    assert caught.value.code == "diff.conflict"
    assert "notes.md:2" in caught.value.message
    assert asked == []


def test_a_file_changed_while_the_person_decided_is_a_conflict_and_nothing_is_written(hive: Path) -> None:
    diff = unified("src/app.py", "def main():\n    return 1\n", "def main():\n    return 2\n") + unified(
        "notes.md", "one\ntwo\n", "one\n"
    )

    def someone_edits() -> None:
        (hive / "notes.md").write_text("one\nthree\n")

    with pytest.raises(ToolError) as caught:
        run(box(hive, approving([True], [], someone_edits)), diff)
    assert caught.value.code == "diff.conflict"
    assert (hive / "src" / "app.py").read_text() == "def main():\n    return 1\n"  # all or nothing
    assert (hive / "notes.md").read_text() == "one\nthree\n"


@pytest.mark.parametrize(
    ("path", "code"), [("../outside.txt", "file.outside_slice"), ("subhive.toml", "diff.protected")]
)
def test_no_diff_outside_the_hive_or_on_its_manifest(hive: Path, path: str, code: str) -> None:
    with pytest.raises(ToolError) as caught:
        run(box(hive, approving([True], [])), unified(path, "a\n", "b\n"))
    assert caught.value.code == code


def test_in_a_turn_the_outcome_and_the_files_reach_the_model(hive: Path) -> None:
    diff = unified("notes.md", "one\ntwo\n", "one\n")
    script = [Step.call(("propose_diff", {"diff": diff})), Step.say("trimmed")]
    with ScriptedServer(script) as server:
        agent = make_agent(server, box(hive, approving([True], [])))
        result = asyncio.run(agent.run_turn("trim the notes"))
        tool = next(m for m in server.chat_requests()[1].body["messages"] if m["role"] == "tool")
    assert json.loads(tool["content"]) == {"files": ["notes.md"], "status": "applied"}
    assert result.state.files_changed == ["notes.md"]
