"""Agents' steps on the event stream (root-hive 1.4.0, ``ReportFrames``): each step a frame of kind
``agent.<step kind>``, a batch of steps one group commit. See docs/decisions/0054-agent-steps-on-the-root-stream.md.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any

from ..errors import InputError
from ._log import Frame
from ._model import AgentStep
from ._state import Record, RootState, batched

__all__ = ["STEPS_MAX", "STEP_BYTES_MAX", "AgentFrames"]

#: Steps one call may report: a batch is one fsync, and its frames go to watchers together.
STEPS_MAX = 256
#: Bytes of one step's data (JSON text): the agent side shortens long strings before sending.
STEP_BYTES_MAX = 64 * 1024
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")
_TURN = re.compile(r"[!-~]{1,128}\Z")
_KIND = re.compile(r"[a-z][a-z_]{0,31}(\.[a-z][a-z_]{0,31}){0,3}\Z")


class AgentFrames(RootState):
    """Agents' steps as frames."""

    @batched
    def report_frames(self, hive: str, steps: Sequence[AgentStep]) -> list[Frame]:
        """Append ``hive``'s agent ``steps`` as frames ``agent.<kind>`` in the order given; return them.

        >>> [f.kind for f in root.report_frames("notes", [AgentStep("helper", "t1", 1, "turn.started", "{}", 0.0)])]
        ... # doctest: +SKIP
        ['agent.turn.started']

        All or nothing: one malformed step (``agent_frames.*``) rejects the batch, so a watcher never sees a
        turn with a hole the hive believes it filled. Raises :class:`NotFound` for an unknown hive.
        """
        self._known_hive(hive)
        if not steps or len(steps) > STEPS_MAX:
            raise InputError(
                f"a report holds 1 to {STEPS_MAX} steps, not {len(steps)}",
                code="agent_frames.count",
                hint=f"send steps in batches of at most {STEPS_MAX}",
            )
        records: list[Record] = []
        for index, step in enumerate(steps):
            records.append(("agent." + step.kind, _data(hive, step, index), {}))
        return self._commit(records)


def _data(hive: str, step: AgentStep, index: int) -> dict[str, Any]:
    """What watchers see of one step, checked: who, which turn, which step, when, and the step's own data."""
    where = f"steps[{index}]"
    for what, value, rule in (("agent", step.agent, _NAME), ("turn", step.turn, _TURN), ("kind", step.kind, _KIND)):
        if not isinstance(value, str) or not rule.match(value):
            raise InputError(
                f"{where}: {value!r} is not a valid {what}",
                code=f"agent_frames.{what}",
                hint="agent: letters, digits, '_' and '-'; turn: printable without spaces; kind: e.g. model.reply",
            )
    if not isinstance(step.step, int) or step.step < 1:
        raise InputError(f"{where}: step must count from 1, not {step.step!r}", code="agent_frames.step")
    if not isinstance(step.time, float | int) or not math.isfinite(step.time):
        raise InputError(f"{where}: time must be a finite number of seconds", code="agent_frames.time")
    if len(step.data_json.encode("utf-8", "surrogatepass")) > STEP_BYTES_MAX:
        raise InputError(
            f"{where}: the step's data is larger than {STEP_BYTES_MAX} bytes",
            code="agent_frames.too_large",
            hint="shorten long strings before reporting (subhive.agent does)",
        )
    try:
        data = json.loads(step.data_json or "{}")
    except ValueError as exc:
        raise InputError(f"{where}: data_json is not JSON: {exc}", code="agent_frames.data") from None
    if not isinstance(data, dict):
        raise InputError(f"{where}: data_json must be a JSON object", code="agent_frames.data")
    try:  # a lone surrogate ("\ud800", escaped or not) is valid JSON text but no Unicode text to keep
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(
            f"{where}: data_json holds a lone surrogate, which is not text",
            code="agent_frames.data",
            hint="send text as UTF-8 (subhive.agent does)",
        ) from None
    return {"hive": hive, "agent": step.agent, "turn": step.turn, "step": step.step, "time": step.time, "data": data}
