"""Tool calls agents ask a person about (approvals of kind ``tool``, ``t-N``): proposed with exact arguments,
decided like any approval. See docs/agents.md#approvals-at-the-root.
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import InputError
from ._log import Frame
from ._model import Approval, ToolCall
from ._state import RootState, batched

__all__ = ["ARGUMENTS_MAX", "ToolCalls"]

#: Bytes of arguments an approval keeps: a person must be able to read what they approve.
ARGUMENTS_MAX = 16 * 1024
REASON = "tool.ask"
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")
_ID = re.compile(r"[!-~]{1,128}\Z")


class ToolCalls(RootState):
    """Tool-call approvals."""

    @batched
    def propose_tool_call(
        self, hive: str, *, agent: str, tool: str, arguments: str, turn: str = "", call_id: str = ""
    ) -> Approval:
        """``hive``'s agent asks to run ``tool`` with ``arguments`` (the model's JSON text, as sent).

        >>> root.propose_tool_call("notes", agent="helper", tool="board_write", arguments='{"key": "a"}').id
        ... # doctest: +SKIP
        't-1'

        Each call is its own approval: a person approves exactly what will run. Raises :class:`NotFound`
        for an unknown hive and :class:`InputError` (``tool_call.*``) for a malformed request.
        """
        self._known_hive(hive)
        for what, value, rule in (("agent", agent, _NAME), ("tool", tool, _NAME)):
            if not isinstance(value, str) or not rule.match(value):
                raise InputError(
                    f"{value!r} is not an {what} name",
                    code=f"tool_call.{what}",
                    hint="letters, digits, '_' and '-', at most 64 characters",
                )
        for what, value in (("turn", turn), ("call_id", call_id)):
            if not isinstance(value, str) or (value and not _ID.match(value)):
                raise InputError(
                    f"{value!r} is not a {what}",
                    code=f"tool_call.{what}",
                    hint="printable characters without spaces, at most 128",
                )
        if not isinstance(arguments, str) or len(arguments.encode("utf-8")) > ARGUMENTS_MAX:
            raise InputError(
                f"the arguments must be text of at most {ARGUMENTS_MAX} bytes",
                code="tool_call.arguments_too_large",
                hint="a person must be able to read them",
            )
        number = 1 + max(
            (int(a.id[2:]) for a in self._approvals.values() if a.kind == "tool" and a.id[2:].isdigit()), default=0
        )
        approval_id = f"t-{number}"
        # The arguments stay in the record's private part, as a repair's sample does: they may hold another hive's
        # data, and watchers see every frame; GetApproval shows them to whoever decides.
        self._commit(
            [
                (
                    "tool_call_proposed",
                    {
                        "approval_id": approval_id,
                        "hive": hive,
                        "agent": agent,
                        "tool": tool,
                        "turn": turn,
                        "call_id": call_id,
                        "arguments_bytes": len(arguments.encode("utf-8")),
                        "message": f"agent {agent} of {hive} asks to run {tool}",
                    },
                    {"arguments": arguments},
                )
            ]
        )
        return self._approvals[approval_id]

    def _apply_tool_call(self, data: dict[str, Any], frame: Frame, replaying: bool) -> None:
        call = ToolCall(data["agent"], data["tool"], frame.private.get("arguments", ""), data["turn"], data["call_id"])
        self._approvals[data["approval_id"]] = Approval(
            data["approval_id"],
            "",
            None,
            data["hive"],
            None,
            frame.time,
            "pending",
            REASON,
            data["message"],
            kind="tool",
            tool_call=call,
        )
