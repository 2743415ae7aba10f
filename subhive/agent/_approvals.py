"""An ``ask`` tool call as a pending approval at the root: shown by ``subhive approvals`` with its exact
arguments, decided by a person there, read back by polling (root-hive 1.3.0, ``ProposeToolCall``). A turn
resumed after its hive died finds the approval its call already has instead of asking twice."""

from __future__ import annotations

import asyncio
from typing import Any

from ._tools import Approval, Approver, ToolCall

__all__ = ["root_approver"]


def root_approver(root: Any, *, agent: str, turn: str = "", hive: str | None = None, poll: float = 0.5) -> Approver:
    """An :class:`Approver` that proposes each call to ``root`` (a ``RootClient`` with the hive's token, or the
    admin's naming ``hive``) and waits for the person's decision, polling every ``poll`` seconds. The wait is
    bounded by the tool box's ``approval_timeout``; an approval decided after it has no effect (the call was
    already refused, and the model told so)."""

    async def approve(call: ToolCall) -> Approval:
        pending = await _asked_before(root, agent, turn, call) or await root.propose_tool_call(
            agent=agent, tool=call.name, arguments=call.arguments, turn=turn, call_id=call.id, hive=hive
        )
        while True:
            current = await root.approval(pending.id)
            if current.status == "approved":
                return Approval(True, current.decision)
            if current.status == "rejected":
                return Approval(False, current.decision or "rejected at the root")
            await asyncio.sleep(poll)

    return approve


async def _asked_before(root: Any, agent: str, turn: str, call: ToolCall) -> Any:
    """The approval this very call already has (a resumed turn asks again): one person, one decision."""
    if not turn or not call.id:
        return None
    for approval in reversed(await root.approvals("all", kind="tool")):
        asked = approval.tool_call
        if asked is not None and (asked.agent, asked.turn, asked.call_id, asked.tool, asked.arguments) == (
            agent,
            turn,
            call.id,
            call.name,
            call.arguments,
        ):
            return approval
    return None
