"""Quorum writes to critical board keys (``[quorum]``, issue #20): N >= 3f+1 voters, enough agreeing; a single
toxic voter cannot put its value through, and every vote and the outcome are on the board."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nats
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from subhive.agent import (
    RecordedRequest,
    ScriptedServer,
    Step,
    ToolBox,
    ToolCall,
    agent_voter,
    board_tools,
)
from subhive.agent._vote import QuorumTool
from subhive.bus import EmbeddedServer
from subhive.hive import (
    QUORUM_ROUNDS,
    QUORUM_VOTES,
    KvBlackboard,
    QuorumWrites,
    agreement_needed,
    ensure_blackboard,
    tally,
)
from subhive.root_hive._client import RootClient, admin_token_of
from subhive.root_hive._service import RootServer
from subhive.workspace import Kind, QuorumSpec, init_workspace, new_subhive
from tests.kit import run

from .conftest import make_agent

VALUES = st.sampled_from(["a", "b", "c", {"x": 1}, {"x": 2}, 0, None])


@st.composite
def rounds(draw: st.DrawFn) -> tuple[int, dict[str, Any], str, Any]:
    """f, the honest voters' votes (any values: honest agents may disagree), one toxic voter and its value."""
    f = draw(st.integers(1, 3))
    n = draw(st.integers(3 * f + 1, 3 * f + 4))
    honest = {f"agent:h{i}": draw(VALUES) for i in range(n - 1)}
    return f, honest, "agent:toxic", draw(VALUES)


@given(rounds())
@settings(max_examples=400)
def test_a_single_toxic_voter_never_decides(case: tuple[int, dict[str, Any], str, Any]) -> None:
    f, honest, toxic, poison = case
    outcome = tally({**honest, toxic: poison}, f)
    if outcome.accepted:
        backing = [v for v, value in honest.items() if json.dumps(value) == json.dumps(outcome.value)]
        # The value was carried by honest voters: without the toxic vote it still has f+1 or more of them...
        assert len(backing) >= outcome.needed - 1 >= 2 * f
        # ...and a value no honest voter holds is never written.
        assert outcome.value in honest.values()
    # Honest voters who all agree are never blocked by the toxic one.
    unanimous = dict.fromkeys(honest, "a")
    agreed = tally({**unanimous, toxic: poison}, f)
    assert agreed.accepted
    assert agreed.value == "a"


@given(st.integers(1, 3), st.dictionaries(st.text(min_size=1, max_size=4), VALUES, max_size=14))
def test_an_accepted_value_has_a_majority_of_at_least_2f_plus_1(f: int, votes: dict[str, Any]) -> None:
    outcome = tally(votes, f)
    assert outcome.needed == agreement_needed(len(votes), f)
    if outcome.accepted:
        assert len(votes) >= 3 * f + 1
        assert outcome.agreeing >= 2 * f + 1
        assert outcome.agreeing * 2 > len(votes)  # no other value can have as many
    else:
        assert outcome.reason in ("quorum.too_few_voters", "quorum.no_agreement")


@given(st.integers(1, 3))
def test_too_few_voters_are_escalated_even_when_unanimous(f: int) -> None:
    outcome = tally({f"v{i}": "same" for i in range(3 * f)}, f)
    assert (outcome.accepted, outcome.reason) == (False, "quorum.too_few_voters")


def test_only_named_voters_count() -> None:
    votes = {"agent:a": 1, "agent:b": 1, "agent:c": 1, "agent:d": 1, "intruder": 2}
    outcome = tally(votes, 1, allowed=("agent:a", "agent:b", "agent:c", "agent:d"))
    assert outcome.accepted
    assert outcome.ignored == ("intruder",)
    text = tally({"a": " Yes ", "b": "yes", "c": "YES", "d": "no"}, 1, rule="text")
    assert text.accepted
    assert text.agreeing == 3


def scripted_voters(answers: dict[str, Any]) -> list[tuple[str, ScriptedServer]]:
    return [(name, ScriptedServer([Step.say(json.dumps(value))])) for name, value in answers.items()]


def test_agents_vote_on_a_critical_key_and_the_byzantine_one_is_outvoted(server: EmbeddedServer) -> None:
    """Four scripted agents vote on decisions.release; one lies. The honest value is written, each vote and
    the outcome are on the board, and no voter was shown another's answer. With a second liar (more than f),
    the round is escalated with every voter's value and the key is not written."""
    spec = QuorumSpec(("decisions.*",), f=1)

    async def scenario(servers: list[tuple[str, ScriptedServer]], key: str) -> tuple[Any, Any, Any, list[Any]]:
        nc = await nats.connect(server.url)
        agents = [make_agent(s) for _name, s in servers]
        try:
            await ensure_blackboard(nc.jetstream(), "notes")
            board = await KvBlackboard.open(nc.jetstream(), "notes")
            quorum = QuorumWrites(spec, board)
            voters = {name: agent_voter(agent) for (name, _s), agent in zip(servers, agents, strict=True)}
            round_id, outcome = await quorum.decide(key, {"version": "1.2.0"}, voters, proposer="agent:h1")
            record = await board.get(f"{QUORUM_ROUNDS}.{round_id}")
            votes = [(await board.get(k)) for k in await board.keys(f"{QUORUM_VOTES}.{round_id}.*")]
            return outcome, record, await board.get(key), votes
        finally:
            for agent in agents:
                await agent.close()
            await nc.close()

    honest = {"version": "1.2.0"}
    lie = {"version": "9.9.9"}
    servers = scripted_voters({"agent:h1": honest, "agent:h2": honest, "agent:h3": honest, "agent:liar": lie})
    for _name, s in servers:
        s.start()
    try:
        outcome, record, written, votes = run(scenario(servers, "decisions.release"))
        for name, s in servers:  # each voter saw the proposal only, never the lie (or any other answer)
            sent = json.dumps(s.chat_requests()[0].body["messages"])
            assert "9.9.9" not in sent or name == "agent:liar"
    finally:
        for _name, s in servers:
            s.stop()
    assert outcome.accepted
    assert outcome.value == honest
    assert written is not None
    assert written.value == honest
    assert written.writer.startswith("quorum:")
    assert record is not None
    assert record.value["outcome"] == "accepted"
    assert record.value["votes"]["agent:liar"] == lie
    assert sorted(v.value["voter"] for v in votes) == ["agent:h1", "agent:h2", "agent:h3", "agent:liar"]

    servers = scripted_voters({"agent:h1": honest, "agent:h2": honest, "agent:l1": lie, "agent:l2": {"v": 0}})
    for _name, s in servers:
        s.start()
    try:
        outcome, record, written, _votes = run(scenario(servers, "decisions.rollback"))
    finally:
        for _name, s in servers:
            s.stop()
    assert not outcome.accepted
    assert outcome.reason == "quorum.no_agreement"
    assert written is None
    assert record is not None
    assert record.value["outcome"] == "escalated"
    assert record.value["votes"] == {"agent:h1": honest, "agent:h2": honest, "agent:l1": lie, "agent:l2": {"v": 0}}


def test_an_agent_cannot_write_a_critical_key_alone(server: EmbeddedServer) -> None:
    async def scenario() -> tuple[Any, Any, Any]:
        nc = await nats.connect(server.url)
        try:
            await ensure_blackboard(nc.jetstream(), "notes")
            board = await KvBlackboard.open(nc.jetstream(), "notes")
            tools = ToolBox(board_tools(board, "agent:liar", critical=("decisions.*",)))
            refused = None
            try:
                await tools.dispatch(
                    ToolCall("c1", "board_write", '{"key": "decisions.release", "value": 1, "expected_revision": 0}')
                )
            except Exception as exc:  # the ToolError the model would read
                refused = exc
            other = await tools.dispatch(
                ToolCall("c2", "board_write", '{"key": "notes.n1", "value": 1, "expected_revision": 0}')
            )
            return refused, await board.get("decisions.release"), other
        finally:
            await nc.close()

    refused, stored, other = run(scenario())
    assert getattr(refused, "code", None) == "quorum.required"
    assert stored is None
    assert other.value == {"key": "notes.n1", "revision": 1}


def test_an_agent_proposes_a_critical_write_and_the_hives_voters_decide(
    tmp_path: Path, bus: EmbeddedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``propose_critical`` from the manifest: the author proposes tasks.release, the four voter agents of
    ``[quorum]`` (each on its own model) are asked apart, the one that lies is outvoted, the value is written by
    the round, and the author reads the outcome as its tool result. Its own board_write to the key is refused."""
    from subhive.agent import run_hive_turn, transcript_key
    from subhive.workspace import Kind, init_workspace, new_subhive

    honest = {"title": "release 1.2.0", "status": "open"}

    def voters(request: RecordedRequest) -> Step:  # every voter on one server: its model names who it is
        model = request.body["model"]
        return Step.say(json.dumps({"title": "release 9.9.9", "status": "done"} if model == "v4-model" else honest))

    root = tmp_path / "ws"
    init_workspace(root)
    new_subhive("notes", Kind.backend, start=root)
    hive = root / "subhives" / "notes"
    (hive / "agents").mkdir()
    voting = ScriptedServer(voters)
    voting.start()
    tables = [
        '\n[agents.finder]\ninstructions = "agents/finder.md"\nmodel = "scripted-1"\n'
        '[agents.finder.tools]\npropose_critical = "allow"\nboard_write = "allow"\n'
    ]
    for name in ("v1", "v2", "v3", "v4"):
        (hive / "agents" / f"{name}.md").write_text("You check release decisions.")
        tables.append(
            f'\n[agents.{name}]\ninstructions = "agents/{name}.md"\n[agents.{name}.model]\nname = "{name}-model"\n'
            f'base_url = "{voting.base_url}"\nmax_retries = 0\n'
        )
    (hive / "agents" / "finder.md").write_text("You run releases.")
    tables.append(
        '\n[quorum]\nkeys = ["tasks.release"]\nf = 1\nvoters = ["agent:v1", "agent:v2", "agent:v3", "agent:v4"]\n'
    )
    manifest = hive / "subhive.toml"
    manifest.write_text(manifest.read_text() + "".join(tables))
    script = [
        Step.call(("board_write", {"key": "tasks.release", "value": honest, "expected_revision": 0})),
        Step.call(("propose_critical", {"key": "tasks.release", "value": honest})),
        Step.say("released"),
    ]

    async def scenario() -> tuple[Any, dict[str, Any]]:
        nc = await nats.connect(bus.url)
        try:
            await ensure_blackboard(nc.jetstream(), "notes")
            result = await run_hive_turn(root, "notes", "release", agent="finder", endpoint=bus.endpoint())
            board = await KvBlackboard.open(nc.jetstream(), "notes")
            return result, dict((await board.snapshot()).items())
        finally:
            await nc.close()

    try:
        with ScriptedServer(script) as author:
            monkeypatch.setenv("OPENAI_BASE_URL", author.base_url)
            result, board = run(scenario())
        seen = [json.dumps(r.body["messages"]) for r in voting.chat_requests()]
    finally:
        voting.stop()
    assert result.stop.code == "completed"
    assert len(seen) == 4
    assert not any("9.9.9" in s for s in seen)  # no voter was shown the liar's answer
    results = [f for f in result.frames if f.kind == "tool.result"]
    assert results[0].data["error"] == "quorum.required"
    outcome = json.loads(results[1].data["content"])
    assert (outcome["outcome"], outcome["agreeing"], outcome["needed"]) == ("accepted", 3, 3)
    assert outcome["votes"]["agent:v4"] == {"title": "release 9.9.9", "status": "done"}
    written = board["tasks.release"]
    assert written.value == honest
    assert written.writer == f"quorum:{outcome['round']}"
    assert board[f"{QUORUM_ROUNDS}.{outcome['round']}"].value["proposer"] == "agent:finder"
    assert board[transcript_key("finder", result.turn)].value["status"] == "completed"


def test_a_round_without_quorum_becomes_a_repair_at_the_root_with_every_voters_value(
    server: EmbeddedServer, tmp_path: Path
) -> None:
    """propose_critical under a root: a round the liars split is proposed there as a repair (quorum.escalated)
    that names the key, with each voter's value in its sample, so a person decides; nothing is written."""
    root_dir = tmp_path / "ws"
    init_workspace(root_dir)
    new_subhive("notes", Kind.backend, start=root_dir)
    honest, lie = {"version": "1.2.0"}, {"version": "9.9.9"}
    servers = scripted_voters({"agent:h1": honest, "agent:h2": honest, "agent:l1": lie, "agent:l2": {"v": 0}})
    for _name, s in servers:
        s.start()

    async def scenario() -> tuple[dict[str, Any], list[Any], Any]:
        nc = await nats.connect(server.url)
        agents = {name.removeprefix("agent:"): make_agent(s) for name, s in servers}
        try:
            await ensure_blackboard(nc.jetstream(), "notes")
            board = await KvBlackboard.open(nc.jetstream(), "notes")
            async with (
                await RootServer.start(root_dir) as root,
                RootClient(root.address, admin_token_of(root_dir)) as admin,
            ):
                tool = QuorumTool(
                    QuorumWrites(QuorumSpec(("decisions.*",), f=1), board),
                    agents,
                    proposer="agent:finder",
                    root=admin,
                    hive="notes",
                )
                answer = await tool._run({"key": "decisions.rollback", "value": honest})
                repairs = await admin.approvals(kind="repair")
            return answer, repairs, await board.get("decisions.rollback")
        finally:
            for agent in agents.values():
                await agent.close()
            await nc.close()

    try:
        answer, repairs, written = run(scenario())
    finally:
        for _name, s in servers:
            s.stop()
    assert answer["outcome"] == "escalated"
    assert written is None
    [repair] = repairs
    assert answer["repair"] == repair.id
    assert repair.repair.code == "quorum.escalated"
    assert repair.repair.subject == "$KV.bb_notes.decisions.rollback"
    sample = json.loads(repair.repair.sample)
    assert sample["votes"] == {"agent:h1": honest, "agent:h2": honest, "agent:l1": lie, "agent:l2": {"v": 0}}


def test_of_two_rounds_on_one_key_the_one_overtaken_writes_nothing(server: EmbeddedServer) -> None:
    """Two rounds run at once on one critical key, both agreed: the one finishing first writes, the other was
    judged against a value that is gone and writes nothing (``quorum.overtaken``), rather than the last one to
    finish silently winning."""
    import asyncio

    def voters(value: Any, delay: float) -> dict[str, Any]:
        async def vote(key: str, proposed: Any) -> Any:
            await asyncio.sleep(delay)
            return value

        return {f"agent:v{i}": vote for i in range(4)}

    async def scenario() -> tuple[Any, Any, Any]:
        nc = await nats.connect(server.url)
        try:
            await ensure_blackboard(nc.jetstream(), "notes")
            board = await KvBlackboard.open(nc.jetstream(), "notes")
            quorum = QuorumWrites(QuorumSpec(("decisions.*",), f=1), board)
            slow = quorum.decide("decisions.release", {"v": "slow"}, voters({"v": "slow"}, 0.3), proposer="a")
            fast = quorum.decide("decisions.release", {"v": "fast"}, voters({"v": "fast"}, 0.05), proposer="b")
            (_, slow_outcome), (_, fast_outcome) = await asyncio.gather(slow, fast)
            return slow_outcome, fast_outcome, await board.get("decisions.release")
        finally:
            await nc.close()

    slow, fast, written = run(scenario())
    assert fast.accepted
    assert not slow.accepted
    assert slow.reason == "quorum.overtaken"
    assert written is not None
    assert written.value == {"v": "fast"}
