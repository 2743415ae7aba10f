"""An agent as a voter on a critical board key (``[quorum]``): one turn of its own, which sees the key and the
proposed value only (never another voter's answer), and answers the value it stands for as JSON."""

from __future__ import annotations

import json
import re
from typing import Any

from ..hive import Voter
from ._loop import Agent, FrameSink
from ._tools import ToolError

__all__ = ["agent_voter", "json_answer"]


def json_answer(content: str | None) -> Any:
    """The JSON value of a final message (a fenced ```json block is unwrapped); ``answer.not_json`` otherwise."""
    text = (content or "").strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", text, re.S)
    try:
        return json.loads(fenced.group(1) if fenced else text)
    except ValueError as exc:
        raise ToolError(
            f"the answer is not JSON: {exc}",
            code="answer.not_json",
            hint="answer with the JSON value only, no prose around it",
        ) from None


def agent_voter(agent: Agent, *, on_frame: FrameSink | None = None) -> Voter:
    """A :data:`~subhive.hive.Voter` that asks ``agent``. A turn that ends without a JSON answer casts no vote
    (it raises, and the round counts it as failed)."""

    async def vote(key: str, proposed: Any) -> Any:
        prompt = (
            f"A value is proposed for the critical board key {key}:\n{json.dumps(proposed, ensure_ascii=False)}\n"
            "Check it with your tools. Answer with the JSON value this key should hold: the proposed one if it is "
            "right, else the right one. Answer with JSON only."
        )
        result = await agent.run_turn(prompt, on_frame=on_frame, answer_check=json_answer)
        if result.stop.code != "completed":
            raise RuntimeError(f"voter {agent.settings.name} stopped: {result.stop.code}")
        return result.value

    return vote
