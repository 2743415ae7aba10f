"""Review debates with a judge (``[review]``, issue #20): a reviewer and a devil's advocate argue over a proposed
diff, the framework reads the debate for false consensus, the judge decides; a rejected change goes back to its
author with the reasons, an approved one goes on to the person with the verdict. Scripted models play every
role, over real HTTP, with real files and a real board."""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any

import nats
import pytest

from subhive.agent import (
    Approval,
    FileSlice,
    Review,
    ScriptedServer,
    Step,
    ToolBox,
    ToolCall,
    consensus_signals,
    diff_tool,
    file_tools,
    review_id,
    review_key,
)
from subhive.bus import EmbeddedServer
from subhive.hive import KvBlackboard, ensure_blackboard
from subhive.workspace import ReviewSpec
from tests.kit import run

from .conftest import make_agent

SPEC = ReviewSpec("critic", "devil", "judge", ("propose_diff",), rounds=1)


def said(role: str, position: str, argument: str = "", rnd: int = 1, **more: Any) -> dict[str, Any]:
    return {
        "role": role,
        "round": rnd,
        "position": position,
        "argument": argument,
        "objections": [],
        "answers": [],
        "evidence": [],
        **more,
    }


def test_agreement_without_evidence_is_false_consensus() -> None:
    signals = consensus_signals(
        [said("reviewer", "approve", "looks fine to me"), said("advocate", "approve", "I agree, ship it")], {}
    )
    assert signals["agreement"] is True
    assert signals["false_consensus"] is True
    assert signals["flags"] == ["agreement_without_evidence"]


def test_an_objection_answered_with_evidence_is_consensus() -> None:
    debate = [
        said("reviewer", "reject", "the second line is still used", objections=[{"id": "o1", "text": "line 2 used"}]),
        said(
            "advocate",
            "approve",
            "nothing reads it",
            answers=[{"objection": "o1", "text": "only line 1 is read", "evidence": ["app.py:4"]}],
        ),
        said("reviewer", "approve", "conceded: app.py reads the first line only", rnd=2, evidence=["app.py:4-5"]),
        said("advocate", "approve", "as shown", rnd=2),
    ]
    signals = consensus_signals(debate, {"app.py:4": True, "app.py:4-5": True})
    assert signals["objections"][0]["answered_with_evidence"] is True
    assert signals["objections"][0]["evidence"] == ["app.py:4"]
    # The reviewer moved: with a citation that was already in the debate, so not new evidence...
    assert signals["position_changes"] == [
        {"role": "reviewer", "round": 2, "from": "reject", "to": "approve", "new_evidence": True}
    ]
    assert signals["false_consensus"] is False
    # ...whereas moving with nothing new, after an objection no one answered, is conformity.
    moved = [debate[0], said("advocate", "approve", "fine"), said("reviewer", "approve", "ok then", rnd=2)]
    flagged = consensus_signals(moved, {})
    assert flagged["position_changes"][0]["new_evidence"] is False
    assert flagged["unanswered"] == ["o1"]
    assert set(flagged["flags"]) == {
        "agreement_without_evidence",
        "objection_unanswered",
        "position_change_without_evidence",
    }
    assert flagged["false_consensus"] is True


def test_repeated_arguments_and_made_up_citations_are_flagged() -> None:
    debate = [
        said("reviewer", "approve", "The change keeps every caller working and is safe", evidence=["app.py:99"]),
        said("advocate", "approve", "the change keeps every caller working and is safe!"),
    ]
    signals = consensus_signals(debate, {"app.py:99": False})
    assert signals["duplicated_arguments"] == [{"first": ["reviewer", 1], "second": ["advocate", 1]}]
    assert signals["invalid_citations"] == [{"citation": "app.py:99", "role": "reviewer", "round": 1}]
    assert signals["valid_citations"] == 0
    assert signals["false_consensus"] is True


def unified(path: str, old: str, new: str) -> str:
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), fromfile=f"a/{path}", tofile=f"b/{path}"
        )
    )


def position(position: str, argument: str, **more: Any) -> Step:
    return Step.say(json.dumps({"position": position, "argument": argument, **more}))


def debate_turn(
    tmp_path: Path, server: EmbeddedServer, debaters: list[Step], verdict: dict[str, Any]
) -> tuple[Any, dict[str, Any], list[ToolCall], list[dict[str, Any]], ScriptedServer, Any]:
    """The author proposes a diff to notes.md; critic and devil debate it (one scripted server: they speak in
    turn), the judge (its own server: another model) decides; the person approves whatever reaches them."""
    (tmp_path / "notes.md").write_text("one\ntwo\n")
    (tmp_path / "app.py").write_text("def first(notes):\n    return notes.splitlines()[0]\n")
    diff = unified("notes.md", "one\ntwo\n", "one\n")
    asked: list[ToolCall] = []

    async def person(call: ToolCall) -> Approval:
        asked.append(call)
        return Approval(True)

    async def scenario(author: ScriptedServer, roles: ScriptedServer, judge: ScriptedServer) -> Any:
        nc = await nats.connect(server.url)
        try:
            await ensure_blackboard(nc.jetstream(), "notes")
            board = await KvBlackboard.open(nc.jetstream(), "notes")
            await board.put("tasks.t1", {"do": "trim notes"}, writer="human")
            files = FileSlice(tmp_path)
            agents = {
                "critic": make_agent(roles, ToolBox(file_tools(files))),
                "devil": make_agent(roles, ToolBox(file_tools(files))),
                "judge": make_agent(judge),
            }
            review = Review(SPEC, agents, author="helper", files=files, board=board, records=board)
            tools = ToolBox([review.wrap(diff_tool(files))], {"propose_diff": "ask"}, approver=person)
            helper = make_agent(author, tools)
            result = await helper.run_turn("trim the notes")
            await helper.close()
            await review.close()
            assert review.last is not None
            stored = await board.get(review_key("helper", review.last["review"]))
            frames = [
                (await board.get(k)) for k in await board.keys(review_key("helper", review.last["review"]) + ".*")
            ]
            assert stored is not None
            assert stored.value["verdict"] == review.last["verdict"]
            return result, review.last, [f.value for f in frames if f is not None]
        finally:
            await nc.close()

    author = ScriptedServer([Step.call(("propose_diff", {"diff": diff})), Step.say("done")])
    roles = ScriptedServer(debaters)
    judge = ScriptedServer([Step.say(json.dumps(verdict))])
    with author, roles, judge:
        result, record, frames = run(scenario(author, roles, judge))
    return result, record, asked, frames, judge, author


def test_a_lying_reviewer_and_a_conforming_advocate_are_flagged(tmp_path: Path, server: EmbeddedServer) -> None:
    """False consensus: the reviewer approves citing a line that does not exist, the advocate echoes it. The
    judge is shown the framework's signals, and they are recorded with its verdict; the person sees a warning."""
    result, record, asked, frames, judge, _author = debate_turn(
        tmp_path,
        server,
        [
            position("approve", "The second line is unused and removing it is safe", evidence=["app.py:40"]),
            position("approve", "The second line is unused, and removing it is safe."),
        ],
        {"verdict": "approve", "reasoning": "both agree", "strongest_objection": "", "evidence": []},
    )
    signals = record["signals"]
    assert signals["false_consensus"] is True
    assert {"agreement_without_evidence", "invalid_citations", "duplicated_arguments"} <= set(signals["flags"])
    assert signals["invalid_citations"] == [{"citation": "app.py:40", "role": "reviewer", "round": 1}]
    assert record["verdict"] == "approve"
    assert record["warning"] == "false consensus"
    # The judge decided with the signals in front of it.
    judge_prompt = judge.chat_requests()[0].body["messages"][-1]["content"]
    assert '"false_consensus": true' in judge_prompt
    assert "app.py:40" in judge_prompt
    # Approved by the judge, so it reached the person, who approved it: applied.
    assert [c.name for c in asked] == ["propose_diff"]
    assert record["review"] == review_id("propose_diff", json.dumps(json.loads(asked[0].arguments), sort_keys=True))
    assert (tmp_path / "notes.md").read_text() == "one\n"
    assert [f["kind"] for f in frames] == [
        "review.started",
        "review.argument",
        "review.argument",
        "review.signals",
        "review.verdict",
    ]
    assert result.stop.code == "completed"


def test_a_change_the_judge_rejects_goes_back_to_its_author(tmp_path: Path, server: EmbeddedServer) -> None:
    """The reviewer objects with evidence, the advocate does not answer it; the judge rejects. The person is
    never asked, nothing is written, and the author reads the verdict as the result of its propose_diff."""
    result, record, asked, _frames, _judge, author = debate_turn(
        tmp_path,
        server,
        [
            position(
                "reject",
                "app.py still reads the notes",
                objections=["dropping line two breaks callers"],
                evidence=["app.py:2", "board:tasks.t1"],
            ),
            position("approve", "Shorter notes are better"),
        ],
        {
            "verdict": "reject",
            "reasoning": "objection o1 stands unanswered",
            "strongest_objection": "dropping line two breaks callers",
            "evidence": ["app.py:2"],
        },
    )
    assert record["verdict"] == "reject"
    assert record["signals"]["valid_citations"] == 2
    assert record["signals"]["unanswered"] == ["o1"]
    assert record["evidence"] == [{"citation": "app.py:2", "valid": True}]
    assert asked == []
    assert (tmp_path / "notes.md").read_text() == "one\ntwo\n"
    told = author.chat_requests()[1].body["messages"][-1]
    assert told["role"] == "tool"
    body = json.loads(told["content"])
    assert body["error"] == "review.rejected"
    assert "objection o1 stands unanswered" in body["message"]
    assert "dropping line two breaks callers" in body["message"]
    assert result.stop.code == "completed"


def test_the_manifest_declares_the_review_of_an_agents_diffs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``[review]`` in subhive.toml: `subhive agent run`'s turn (run_hive_turn) gets its diffs debated by the
    declared agents, each on its own model and endpoint; the debate's frames go to the turn's sinks."""
    from subhive.agent import run_hive_turn
    from subhive.workspace import Kind, init_workspace, new_subhive

    roles = ScriptedServer(
        [
            position("reject", "it deletes a line the guide needs", objections=["docs.md:1 is still read"]),
            position("reject", "agreed", evidence=["docs.md:1"]),
        ]
    )
    judge = ScriptedServer(
        [Step.say(json.dumps({"verdict": "reject", "reasoning": "the line is needed", "evidence": ["docs.md:1"]}))]
    )
    for started in (roles, judge):
        started.start()
    root = tmp_path / "ws"
    init_workspace(root)
    new_subhive("notes", Kind.backend, start=root)
    hive = root / "subhives" / "notes"
    (hive / "agents").mkdir()
    (hive / "docs.md").write_text("the needle is here\n")
    tables = [
        '\n[agents.finder]\ninstructions = "agents/finder.md"\nmodel = "scripted-1"\n'
        '[agents.finder.tools]\nread_file = "allow"\npropose_diff = "ask"\n'
    ]
    for name, server in (("critic", roles), ("devil", roles), ("judge", judge)):
        (hive / "agents" / f"{name}.md").write_text(f"You are the {name}.")
        tables.append(
            f'\n[agents.{name}]\ninstructions = "agents/{name}.md"\n[agents.{name}.model]\nname = "{name}-model"\n'
            f'base_url = "{server.base_url}"\nmax_retries = 0\n[agents.{name}.tools]\nread_file = "allow"\n'
            'board_write = "ask"\n'
        )
    (hive / "agents" / "finder.md").write_text("You tidy the notes hive.")
    tables.append('\n[review]\nreviewer = "critic"\nadvocate = "devil"\njudge = "judge"\n')
    manifest = hive / "subhive.toml"
    manifest.write_text(manifest.read_text() + "".join(tables))
    diff = unified("docs.md", "the needle is here\n", "")
    author = ScriptedServer([Step.call(("propose_diff", {"diff": diff})), Step.say("left as is")])
    author.start()
    monkeypatch.setenv("OPENAI_BASE_URL", author.base_url)
    seen: list[Any] = []

    async def never(call: ToolCall) -> Approval:
        raise AssertionError("a rejected change must not reach the person")

    try:
        result = run(run_hive_turn(root, "notes", "tidy", agent="finder", approver=never, on_frame=seen.append))
        assert [r.body["model"] for r in judge.chat_requests()] == ["judge-model"]
        # A debater keeps its read-only tools only: board_write is not offered to it.
        offered = {t["function"]["name"] for t in roles.chat_requests()[0].body.get("tools", [])}
    finally:
        for server in (author, roles, judge):
            server.stop()
    assert offered == {"read_file"}
    kinds = [f.kind for f in seen]
    assert kinds.count("review.argument") == 2
    assert "review.verdict" in kinds
    verdict = next(f for f in seen if f.kind == "review.verdict").data
    assert (verdict["verdict"], verdict["evidence"]) == ("reject", [{"citation": "docs.md:1", "valid": True}])
    rejected = next(f for f in seen if f.kind == "tool.result").data
    assert rejected["error"] == "review.rejected"
    assert (hive / "docs.md").read_text() == "the needle is here\n"
    assert result.stop.code == "completed"


def test_which_changes_a_review_covers(tmp_path: Path) -> None:
    from subhive.agent._review import is_repair_prompt

    repairs_only = ReviewSpec("critic", "devil", "judge", ("repair",))
    in_repair = Review(repairs_only, {}, author="fixer", files=FileSlice(tmp_path), repair=True)
    elsewhere = Review(repairs_only, {}, author="fixer", files=FileSlice(tmp_path), repair=False)
    assert in_repair.covers("propose_diff")
    assert not elsewhere.covers("propose_diff")
    assert not in_repair.covers("propose_contract")
    tool = diff_tool(FileSlice(tmp_path))
    assert elsewhere.wrap(tool) is tool  # what a review does not cover is left as it is
    assert in_repair.wrap(tool) is not tool
    assert is_repair_prompt("Repair r-12: handler.failed at notes_api/put, seen 2 times.")
    assert not is_repair_prompt("Please repair r-12")


def test_a_call_reviewed_before_gets_its_verdict_without_a_second_debate(
    tmp_path: Path, server: EmbeddedServer
) -> None:
    """A parked turn that is woken checks its call again, and a change proposed again is the same change: the
    kept record answers, and no model is asked twice."""
    (tmp_path / "app.py").write_text("x = 1\n")
    verdict = {"verdict": "reject", "reasoning": "no", "strongest_objection": "x", "evidence": []}

    async def scenario(roles: ScriptedServer, judge: ScriptedServer) -> tuple[Any, Any]:
        nc = await nats.connect(server.url)
        try:
            await ensure_blackboard(nc.jetstream(), "notes")
            board = await KvBlackboard.open(nc.jetstream(), "notes")
            files = FileSlice(tmp_path)
            agents = {"critic": make_agent(roles), "devil": make_agent(roles), "judge": make_agent(judge)}
            review = Review(SPEC, agents, author="helper", files=files, board=board, records=board)
            first = await review.run("propose_diff", '{"diff": "d"}', "d")
            again = await review.run("propose_diff", '{"diff": "d"}', "d")
            await review.close()
            return first, again
        finally:
            await nc.close()

    with (
        ScriptedServer([position("reject", "no"), position("reject", "no")]) as roles,
        ScriptedServer([Step.say(json.dumps(verdict))]) as judge,
    ):
        first, again = run(scenario(roles, judge))
        assert len(roles.chat_requests()) == 2
        assert len(judge.chat_requests()) == 1
    assert again == first
    assert again["verdict"] == "reject"


def test_an_undecided_review_is_debated_again_rather_than_kept(tmp_path: Path, server: EmbeddedServer) -> None:
    """The judge's model refused once (no verdict: the person would decide alone); proposing the same change
    again debates it again instead of reusing "undecided" for good."""
    (tmp_path / "app.py").write_text("x = 1\n")
    verdict = {"verdict": "reject", "reasoning": "no", "strongest_objection": "x", "evidence": []}

    async def scenario(roles: ScriptedServer, judge: ScriptedServer) -> tuple[Any, Any]:
        nc = await nats.connect(server.url)
        try:
            await ensure_blackboard(nc.jetstream(), "notes")
            board = await KvBlackboard.open(nc.jetstream(), "notes")
            agents = {"critic": make_agent(roles), "devil": make_agent(roles), "judge": make_agent(judge)}
            review = Review(SPEC, agents, author="helper", files=FileSlice(tmp_path), board=board, records=board)
            first = await review.run("propose_diff", '{"diff": "d"}', "d")
            again = await review.run("propose_diff", '{"diff": "d"}', "d")
            await review.close()
            return first, again
        finally:
            await nc.close()

    debate = [position("reject", "no"), position("reject", "no")]
    with (
        ScriptedServer(debate * 2) as roles,
        ScriptedServer([Step.fail(400, "bad request"), Step.say(json.dumps(verdict))]) as judge,
    ):
        first, again = run(scenario(roles, judge))
        assert len(judge.chat_requests()) == 2  # asked again
    assert first["verdict"] == "undecided"
    assert again["verdict"] == "reject"
