"""``plan``: an agent records its hypotheses as a tree of scored candidate actions, kept on the hive's board,
so a person can audit why it does what it does before an expensive action runs.
See docs/agents.md#tools-confined-to-the-hive.
"""

from __future__ import annotations

from typing import Any

from ..hive import KvBlackboard
from ._tools import Tool, ToolError, schema_object

__all__ = ["PLAN_PREFIX", "plan_tool", "rank_plan"]

PLAN_PREFIX = "agent-plans"
_ACTION = schema_object(
    {
        "text": {"type": "string", "minLength": 1},
        "gain": {"type": "number", "minimum": 0},
        "cost": {"type": "number", "exclusiveMinimum": 0},
    },
    ["text", "gain", "cost"],
)
_HYPOTHESIS = schema_object(
    {
        "id": {"type": "string", "minLength": 1, "maxLength": 64},
        "text": {"type": "string", "minLength": 1},
        "parent": {"type": "string"},
        "likelihood": {"type": "number", "minimum": 0, "maximum": 1},
        "actions": {"type": "array", "items": _ACTION, "maxItems": 20},
    },
    ["id", "text", "likelihood"],
)


def rank_plan(hypotheses: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every action of the tree with its hypothesis and score, best first; ``plan.invalid`` for a tree that
    is not one (a duplicate id, a parent that does not exist, a cycle)."""
    by_id: dict[str, dict[str, Any]] = {}
    for hypothesis in hypotheses:
        if hypothesis["id"] in by_id:
            raise ToolError(
                f"hypothesis {hypothesis['id']!r} appears twice",
                code="plan.invalid",
                hint="give each hypothesis its own id",
            )
        by_id[hypothesis["id"]] = hypothesis
    for hypothesis in hypotheses:
        seen, parent = {hypothesis["id"]}, hypothesis.get("parent")
        while parent:
            if parent not in by_id:
                raise ToolError(
                    f"hypothesis {hypothesis['id']!r} has parent {parent!r}, which is not in the plan",
                    code="plan.invalid",
                    hint="name the parent's id, or leave parent out for a root",
                )
            if parent in seen:
                raise ToolError(
                    f"hypothesis {hypothesis['id']!r} is its own ancestor",
                    code="plan.invalid",
                    hint="a plan is a tree: parents point towards the roots",
                )
            seen.add(parent)
            parent = by_id[parent].get("parent")
    ranked = [
        {
            "hypothesis": h["id"],
            "action": a["text"],
            "likelihood": h["likelihood"],
            "gain": a["gain"],
            "cost": a["cost"],
            "score": round(h["likelihood"] * a["gain"] / a["cost"], 6),
        }
        for h in hypotheses
        for a in h.get("actions", [])
    ]
    return sorted(ranked, key=lambda r: (-r["score"], r["cost"]))


def plan_tool(board: KvBlackboard | None, agent: str) -> Tool:
    """``plan {hypotheses}``; kept under ``agent-plans.<agent>`` on ``board`` when there is one."""

    async def run(arguments: dict[str, Any]) -> dict[str, Any]:
        hypotheses = arguments["hypotheses"]
        ranked = rank_plan(hypotheses)
        kept = None
        if board is not None:
            kept = await board.put(
                f"{PLAN_PREFIX}.{agent}", {"hypotheses": hypotheses, "ranked": ranked}, writer=f"agent:{agent}"
            )
        return {
            "best": ranked[0] if ranked else None,
            "ranked": ranked[:5],
            "actions": len(ranked),
            "kept": f"{PLAN_PREFIX}.{agent} revision {kept}" if kept else None,
        }

    return Tool(
        "plan",
        "Record your plan: a tree of hypotheses (id, text, optional parent, likelihood 0-1), each "
        "with candidate actions (text, gain, cost > 0). Answers the actions ranked by likelihood * gain / "
        "cost. Call it again whenever the plan changes; a person may read it.",
        schema_object(
            {"hypotheses": {"type": "array", "items": _HYPOTHESIS, "minItems": 1, "maxItems": 50}}, ["hypotheses"]
        ),
        run,
    )
