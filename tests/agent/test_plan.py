"""The plan tool: a tree of hypotheses with scored actions, checked, ranked, kept on the board."""

from __future__ import annotations

import json
from typing import Any

import nats
import pytest

from subhive.agent import PLAN_PREFIX, ScriptedServer, Step, ToolBox, ToolError, plan_tool, rank_plan
from subhive.bus import EmbeddedServer
from subhive.hive import KvBlackboard, ensure_blackboard
from tests.kit import run

from .conftest import make_agent

TREE = [
    {
        "id": "h1",
        "text": "the test fails because of a typo",
        "likelihood": 0.6,
        "actions": [
            {"text": "read the test", "gain": 2, "cost": 1},
            {"text": "rewrite the module", "gain": 10, "cost": 20},
        ],
    },
    {
        "id": "h2",
        "text": "the fixture is stale",
        "parent": "h1",
        "likelihood": 0.3,
        "actions": [{"text": "regenerate stubs", "gain": 8, "cost": 2}],
    },
]


def test_actions_are_ranked_by_likelihood_gain_and_cost() -> None:
    ranked = rank_plan(TREE)
    assert [(r["action"], r["score"]) for r in ranked] == [
        ("read the test", 1.2),
        ("regenerate stubs", 1.2),
        ("rewrite the module", 0.3),
    ]
    assert ranked[0]["cost"] < ranked[1]["cost"]  # equal scores: the cheaper first


@pytest.mark.parametrize(
    ("tree", "why"),
    [
        ([{"id": "a", "text": "x", "likelihood": 0.5}, {"id": "a", "text": "y", "likelihood": 0.5}], "twice"),
        ([{"id": "a", "text": "x", "likelihood": 0.5, "parent": "zz"}], "not in the plan"),
        (
            [
                {"id": "a", "text": "x", "likelihood": 0.5, "parent": "b"},
                {"id": "b", "text": "y", "likelihood": 0.5, "parent": "a"},
            ],
            "own ancestor",
        ),
    ],
)
def test_a_plan_that_is_not_a_tree_is_refused(tree: list[dict[str, Any]], why: str) -> None:
    with pytest.raises(ToolError, match=why) as caught:
        rank_plan(tree)
    assert caught.value.code == "plan.invalid"


def test_in_a_turn_the_plan_is_kept_on_the_board_and_shown_in_frames(server: EmbeddedServer) -> None:
    async def scenario(scripted: ScriptedServer) -> tuple[Any, Any]:
        nc = await nats.connect(server.url)
        try:
            await ensure_blackboard(nc.jetstream(), "notes")
            board = await KvBlackboard.open(nc.jetstream(), "notes")
            agent = make_agent(scripted, ToolBox([plan_tool(board, "helper")]))
            try:
                result = await agent.run_turn("why does the test fail?")
            finally:
                await agent.close()
            return result, await board.get(f"{PLAN_PREFIX}.helper")
        finally:
            await nc.close()

    script = [
        Step.call(
            ("plan", {"hypotheses": TREE}), ("plan", {"hypotheses": [{"id": "x", "text": "y", "likelihood": 2}]})
        ),
        Step.say("reading the test first"),
    ]
    with ScriptedServer(script) as scripted:
        result, kept = run(scenario(scripted))
    assert result.stop.code == "completed"
    shown = [f for f in result.frames if f.kind == "tool.result"]
    assert json.loads(shown[0].data["content"])["best"]["action"] == "read the test"
    assert shown[1].data["error"] == "tool.arguments_invalid"  # likelihood 2 is refused by the schema
    assert kept.value["hypotheses"] == TREE
    assert kept.writer == "agent:helper"
