"""An ``ask`` tool call as a pending approval at the root: shown by ``subhive approvals`` with its exact
arguments, decided by a person there, read back by polling (root-hive 1.3.0, ``ProposeToolCall``). A turn
resumed after its hive died finds the approval its call already has instead of asking twice. A turn run by its
hive's controller does not wait holding a worker: it parks (:func:`parking_approver`) and is woken by the
decision or the deadline. See docs/agents.md#parked-turns."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ._tools import Approval, Approver, ToolCall, announcing, approval_asked

__all__ = ["TurnParked", "parking_approver", "root_approver"]

log = logging.getLogger("subhive.agent")


class TurnParked(Exception):
    """Raised by a :func:`parking_approver` when the call's approval is still pending: the loop ends the turn
    here with a ``turn.parked`` frame (its state is the frames kept so far) and whoever runs it awaits
    :meth:`wake`, then resumes the turn from those frames."""

    def __init__(self, call: ToolCall, approval: str, deadline: float, wake: Callable[[], Awaitable[None]]) -> None:
        super().__init__(f"{call.name} waits for approval {approval}")
        self.call = call
        self.approval = approval
        #: Epoch seconds: the approval's creation at the root plus the agent's ``approval_timeout``.
        self.deadline = deadline
        self.wake = wake


def root_approver(root: Any, *, agent: str, turn: str = "", hive: str | None = None, poll: float = 0.5) -> Approver:
    """An :class:`Approver` that proposes each call to ``root`` (a ``RootClient`` with the hive's token, or the
    admin's naming ``hive``) and waits for the person's decision, polling every ``poll`` seconds. The wait is
    bounded by the tool box's ``approval_timeout``; an approval decided after it has no effect (the call was
    already refused, and the model told so)."""

    async def approve(call: ToolCall) -> Approval:
        pending = await _asked_before(root, agent, turn, call) or await root.propose_tool_call(
            agent=agent, tool=call.name, arguments=call.arguments, turn=turn, call_id=call.id, hive=hive
        )
        await approval_asked(pending.id)
        while True:
            current = await root.approval(pending.id)
            if current.status == "approved":
                return Approval(True, current.decision)
            if current.status == "rejected":
                return Approval(False, current.decision or "rejected at the root")
            await asyncio.sleep(poll)

    return announcing(approve)


def parking_approver(
    root: Any, *, agent: str, turn: str, timeout: float, hive: str | None = None, poll: float = 0.5
) -> Approver:
    """An :class:`Approver` that never waits: it proposes the call to ``root`` (or finds the approval it already
    has) and reads its status once. Approved or rejected in time: the answer. Past the deadline (the approval's
    creation at the root plus ``timeout``; a decision made after it does not count): ``TimeoutError``, which
    the tool box turns into ``tool.approval_timeout`` as for a wait. Still pending: :class:`TurnParked`, whose
    ``wake`` polls the root every ``poll`` seconds until a decision or the deadline. The deadline lives at the
    root, so it holds across restarts of the hive."""

    async def approve(call: ToolCall) -> Approval:
        pending = await _asked_before(root, agent, turn, call) or await root.propose_tool_call(
            agent=agent, tool=call.name, arguments=call.arguments, turn=turn, call_id=call.id, hive=hive
        )
        current = await root.approval(pending.id)
        deadline = current.created + timeout
        decided = current.status in ("approved", "rejected")
        if decided and (current.decided is None or current.decided <= deadline):
            if current.status == "approved":
                return Approval(True, current.decision)
            return Approval(False, current.decision or "rejected at the root")
        if decided or time.time() >= deadline:
            raise TimeoutError  # ToolBox: tool.approval_timeout, the same outcome as a wait that ran out

        async def wake() -> None:
            await _decided_or_due(root, pending.id, deadline, poll)

        await approval_asked(pending.id)
        raise TurnParked(call, pending.id, deadline, wake)

    return announcing(approve)


async def _decided_or_due(root: Any, approval: str, deadline: float, poll: float) -> None:
    """Return once ``approval`` is decided or ``deadline`` (epoch seconds) has passed; a root that does not
    answer meanwhile is tried again (said once in the log): the deadline still ends the wait."""
    failing = False
    while time.time() < deadline:
        try:
            current = await root.approval(approval)
        except Exception as exc:
            if not failing:
                log.warning("reading approval %s at the root: %s; trying again", approval, exc)
            failing = True
        else:
            if current.status != "pending":
                return
            failing = False
        await asyncio.sleep(max(0.0, min(poll, deadline - time.time())))


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
