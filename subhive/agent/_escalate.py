"""A turn's abnormal stop, escalated like the hive's other failures (decision 0055): a turn run from the CLI or
the app server that ended on a budget, a repeated call, an unreachable model... becomes a repair proposal at
the root, one per hive, agent and stop reason while it is pending. See docs/agents.md#why-a-turn-stops.
"""

from __future__ import annotations

import json
from typing import Any

from ..bus import kv_bucket
from ._hive_turn import TRANSCRIPT_PREFIX
from ._loop import TurnResult

__all__ = ["escalate_stop", "stop_subject"]

#: The root keeps at most this much of a repair's sample and message (root_hive's SAMPLE_MAX and MESSAGE_MAX).
_SAMPLE_MAX, _MESSAGE_MAX = 4096, 1024


def stop_subject(hive: str, agent: str) -> str:
    """Where a stop of ``agent``'s turns is said to happen: the board keys its transcripts are kept under. No
    turn id in it, so every stop of the same reason adds to one pending repair."""
    return f"$KV.{kv_bucket(hive)}.{TRANSCRIPT_PREFIX}.{agent}"


async def escalate_stop(root: Any, hive: str, result: TurnResult) -> Any:
    """Report ``result``'s stop to ``root`` (a ``RootClient`` with the admin's token) as a repair proposal of
    ``hive``, code ``agent.<stop>``, the turn id in its message; returns the repair approval (``r-N``), or
    None when the turn ended normally (nothing to escalate). The root's errors reach the caller."""
    stop = result.stop
    if stop.normal:
        return None
    agent = str(result.frames[0].data.get("agent", "")) if result.frames else ""
    message = f"agent {agent or '?'}'s turn {result.turn} stopped: {stop.message}"
    if len(message) > _MESSAGE_MAX:
        message = message[: _MESSAGE_MAX - 1] + "…"
    sample = json.dumps(
        {
            "turn": result.turn,
            "agent": agent,
            "stop": stop.to_dict(),
            "model_calls": len(result.usage),
            "tool_calls": result.tool_calls,
            "tokens": result.tokens,
            "seconds": round(result.seconds, 3),
        },
        ensure_ascii=False,
        sort_keys=True,
    ).encode("utf-8")[:_SAMPLE_MAX]
    return await root.propose_repair(
        hive=hive,
        code=f"agent.{stop.code}",
        message=message,
        subject=stop_subject(hive, agent or "agent"),
        sample=sample,
    )
