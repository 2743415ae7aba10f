"""Memory that decays: each remembered pattern's confidence falls when the turns given it fail and rises when they
end well; below the threshold it is pruned for good (``[memory]``, issue #20)."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import nats
from hypothesis import given, settings
from hypothesis import strategies as st

from subhive.agent import AgentMemory, Approval, FileSlice, ScriptedServer, Step, ToolBox, ToolCall, diff_tool, settled
from subhive.agent._confidence import adjust
from subhive.bus import EmbeddedServer
from subhive.hive import KvBlackboard, ensure_blackboard
from subhive.workspace import MemorySpec
from tests.kit import run

from .conftest import make_agent

rules = st.builds(
    MemorySpec,
    decay=st.sampled_from(["additive", "multiplicative"]),
    rate=st.floats(0.01, 1.0),
    gain=st.floats(0.0, 1.0),
    threshold=st.floats(0.0, 0.5),
    initial=st.floats(0.51, 1.0),
)


@given(rules, st.floats(-0.5, 1.5, allow_nan=False), st.lists(st.booleans(), max_size=40))
def test_confidence_stays_in_the_unit_interval(rule: MemorySpec, start: float, outcomes: list[bool]) -> None:
    confidence = start
    for helped in outcomes:
        confidence = adjust(confidence, helped, rule)
        assert 0.0 <= confidence <= 1.0


@given(rules, st.floats(0.0, 1.0), st.integers(1, 30))
def test_repeated_failure_never_raises_confidence_and_ends_in_pruning(rule: MemorySpec, start: float, n: int) -> None:
    confidence, seen = start, [start]
    for _ in range(n):
        confidence = adjust(confidence, False, rule)
        assert confidence <= seen[-1]
        seen.append(confidence)
    for _ in range(2000):  # every rate is at least 0.01: failures alone drive any entry under a positive threshold
        confidence = adjust(confidence, False, rule)
    assert confidence < rule.threshold or rule.threshold < 1e-6


@given(rules, st.lists(st.booleans(), max_size=40))
@settings(max_examples=200)
def test_a_pruned_entry_never_comes_back(rule: MemorySpec, outcomes: list[bool]) -> None:
    entry: dict[str, Any] = {"text": "lesson", "confidence": rule.initial, "history": []}
    was_pruned = False
    for helped in outcomes:
        before = entry
        entry = settled(entry, helped, rule, now=1.0)
        if was_pruned:
            assert entry is before  # unchanged, whatever the outcome: only re-learning makes a new entry
        assert 0.0 <= entry["confidence"] <= 1.0
        assert entry.get("pruned", False) == (was_pruned or entry["confidence"] < rule.threshold)
        was_pruned = bool(entry.get("pruned"))
    if was_pruned:
        assert [h["event"] for h in entry["history"]][-1] == "pruned"


def unified(path: str, old: str, new: str) -> str:
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), fromfile=f"a/{path}", tofile=f"b/{path}"
        )
    )


LESSON = "trimming the notes: delete notes.md entirely, it is regenerated"


def test_a_lesson_that_keeps_causing_failures_is_pruned(tmp_path: Path, server: EmbeddedServer) -> None:
    """A remembered lesson is given to each turn on the notes; each of those turns proposes what the lesson says
    and is refused. Its confidence halves each time (0.6, 0.3, 0.15 < 0.2): pruned after two failures, the third
    turn does not hear it, and its history on the board says why."""
    (tmp_path / "notes.md").write_text("one\ntwo\n")
    diff = unified("notes.md", "one\ntwo\n", "")
    rule = MemorySpec(decay="multiplicative", rate=0.5, gain=0.1, threshold=0.2, initial=0.6)

    async def reject(call: ToolCall) -> Approval:
        return Approval(False, "the notes are not regenerated")

    async def scenario(scripted: ScriptedServer) -> tuple[list[str | None], list[dict[str, Any]]]:
        nc = await nats.connect(server.url)
        try:
            await ensure_blackboard(nc.jetstream(), "notes")
            board = await KvBlackboard.open(nc.jetstream(), "notes")
            seeded = AgentMemory(board, "helper", rule=rule)
            await seeded.remember("lesson", LESSON)
            notes = []
            for _ in range(3):
                memory = AgentMemory(board, "helper", rule=rule)
                tools = ToolBox([diff_tool(FileSlice(tmp_path))], {"propose_diff": "ask"}, approver=reject)
                agent = make_agent(scripted, tools)
                context = await memory.recall("trim the notes", budget=800)
                notes.append(context)
                await agent.run_turn("trim the notes", on_frame=memory, context=context)
                await agent.close()
            return notes, await seeded.entries(pruned=True)
        finally:
            await nc.close()

    script = [Step.call(("propose_diff", {"diff": diff})), Step.say("refused")] * 3
    with ScriptedServer(script) as scripted:
        notes, entries = run(scenario(scripted))
    lesson = next(e for e in entries if e["text"] == LESSON)
    assert LESSON in (notes[0] or "")
    assert LESSON in (notes[1] or "")
    assert LESSON not in (notes[2] or "")  # pruned: the third turn is not told
    assert lesson["pruned"] is True
    assert [h["event"] for h in lesson["history"]] == ["learnt", "failed", "failed", "pruned"]
    assert [round(h["confidence"], 3) for h in lesson["history"]] == [0.6, 0.3, 0.15, 0.15]
    # The refusals themselves were learnt, each at the initial confidence, and are what the third turn hears.
    assert "the notes are not regenerated" in (notes[2] or "")


def test_a_lesson_given_to_turns_that_end_well_gains_confidence(tmp_path: Path, server: EmbeddedServer) -> None:
    rule = MemorySpec(decay="additive", rate=0.3, gain=0.1, threshold=0.2, initial=0.5)

    async def scenario(scripted: ScriptedServer) -> dict[str, Any]:
        nc = await nats.connect(server.url)
        try:
            await ensure_blackboard(nc.jetstream(), "notes")
            memory = AgentMemory(await KvBlackboard.open(nc.jetstream(), "notes"), "helper", rule=rule)
            await memory.remember("lesson", "tidy the notes by date")
            for _ in range(2):
                agent = make_agent(scripted)
                await agent.run_turn("tidy the notes", on_frame=memory, context=await memory.recall("tidy notes", 800))
                await agent.close()
            return (await memory.entries())[0]
        finally:
            await nc.close()

    with ScriptedServer([Step.say("done"), Step.say("done")]) as scripted:
        entry = run(scenario(scripted))
    assert [h["event"] for h in entry["history"]] == ["learnt", "helped", "helped"]
    assert round(entry["confidence"], 6) == 0.7
    assert entry["pruned"] is False


def test_a_turn_resumed_by_another_process_settles_the_entries_it_was_given(server: EmbeddedServer) -> None:
    """A turn is given a lesson, parks (or its hive dies) and is resumed by a process that never recalled it:
    the entries it was given, and a change that failed before the pause, are on the board, so the resumed turn's
    end moves the same lesson's confidence; a second resume of that turn moves it no further."""
    import time

    from subhive.agent import Frame

    def frame(kind: str, seq: int, **data: Any) -> Frame:
        return Frame(kind, "t-1", seq, data, time.time())

    async def scenario() -> tuple[float, float, list[str]]:
        nc = await nats.connect(server.url)
        try:
            await ensure_blackboard(nc.jetstream(), "notes")
            board = await KvBlackboard.open(nc.jetstream(), "notes")
            first = AgentMemory(board, "helper")
            key = await first.remember("propose_diff", "the parser lives in parser.py; fix it there")
            assert await first.recall("fix the parser", 500)
            await first(frame("turn.started", 0, prompt="fix the parser"))
            await first(frame("tool.call", 1, name="propose_diff", id="c1", arguments="{}"))
            await first(frame("tool.result", 2, name="propose_diff", id="c1", ok=False, content="conflict"))
            await first(frame("turn.parked", 3))
            before = (await board.get(key)).value["confidence"]  # type: ignore[union-attr]
            resumed = AgentMemory(board, "helper")  # another process: no recall
            await resumed(frame("turn.resumed", 4))
            await resumed(frame("turn.stopped", 5, stop={"code": "completed", "message": ""}))
            after = await board.get(key)
            again = AgentMemory(board, "helper")
            await again(frame("turn.resumed", 6))
            await again(frame("turn.stopped", 7, stop={"code": "completed", "message": ""}))
            final = await board.get(key)
            assert after is not None
            assert final is not None
            assert final.value["confidence"] == after.value["confidence"]  # settled once
            return before, after.value["confidence"], [h["event"] for h in after.value["history"]]
        finally:
            await nc.close()

    before, after, events = run(scenario())
    assert after < before  # the change failed before the pause: the lesson did not help
    assert events[-1] in ("failed", "pruned")
