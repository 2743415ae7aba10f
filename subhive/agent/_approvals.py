"""An ``ask`` tool call as a pending approval at the root: shown by ``subhive approvals`` with its exact
arguments, decided by a person there, read back by polling (root-hive 1.3.0, ``ProposeToolCall``)."""

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
        pending = await root.propose_tool_call(agent=agent, tool=call.name, arguments=call.arguments, turn=turn,
                                               call_id=call.id, hive=hive)
        while True:
            current = await root.approval(pending.id)
            if current.status == "approved":
                return Approval(True, current.decision)
            if current.status == "rejected":
                return Approval(False, current.decision or "rejected at the root")
            await asyncio.sleep(poll)

    return approve
