"""The conversation an agent sends: append-only between compactions, so each request's messages are the
previous request's messages plus new items (what keeps a server's prompt cache warm and the cost linear)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._scripted import estimate_tokens

__all__ = ["COMPACTION_PROMPT", "Conversation", "TurnState", "handoff_message"]

COMPACTION_PROMPT = (
    "CONTEXT CHECKPOINT. The conversation is about to be compacted to fit the context window. Write a handoff "
    "summary for yourself: what the task is, what you have found and done so far, what you were about to do "
    "next, and any facts you will need again. Do not call tools; answer with the summary only."
)
SUMMARY_PREFIX = "This turn was compacted to fit the context window. What you need to carry on:"
#: How many recent tool calls the handoff repeats verbatim (name, arguments, start of the result).
RECENT_STEPS = 8


@dataclass
class TurnState:
    """What the framework itself knows about a turn, carried into every compacted history so the agent keeps
    its task, the files it changed and what is pending even if the model's summary forgets them."""

    task: str
    files_changed: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    recent: list[str] = field(default_factory=list)

    def note_call(self, name: str, arguments: str, outcome: str) -> None:
        self.recent.append(f"- {name}({arguments[:200]}) -> {outcome[:300]}")
        del self.recent[:-RECENT_STEPS]

    def note_files(self, files: Sequence[str]) -> None:
        self.files_changed.extend(f for f in files if f not in self.files_changed)

    def to_dict(self) -> dict[str, Any]:
        return {"task": self.task, "files_changed": list(self.files_changed), "pending": list(self.pending)}


class Conversation:
    """``instructions`` first (a system message), then the history. :meth:`messages` is what a request sends;
    :meth:`append` is the only way it grows, and :meth:`replace` (compaction) the only way it shrinks."""

    def __init__(self, instructions: str) -> None:
        self._system: dict[str, Any] = {"role": "system", "content": instructions}
        self._history: list[dict[str, Any]] = []
        self._tokens = estimate_tokens(self._system)
        #: Bumped by every compaction: requests of one epoch extend each other.
        self.epoch = 0

    def messages(self) -> list[dict[str, Any]]:
        return [self._system, *self._history]

    def append(self, message: dict[str, Any]) -> None:
        self._history.append(message)
        self._tokens += estimate_tokens(message)

    def extend(self, messages: Iterable[dict[str, Any]]) -> None:
        for message in messages:
            self.append(message)

    def replace(self, history: Sequence[dict[str, Any]]) -> None:
        self._history = list(history)
        self._tokens = estimate_tokens(self._system) + sum(estimate_tokens(m) for m in self._history)
        self.epoch += 1

    @property
    def tokens(self) -> int:
        """The estimated size of the messages (the model's own count may differ: see Agent's size check)."""
        return self._tokens

    def __len__(self) -> int:
        return len(self._history)


def handoff_message(state: TurnState, summary: str) -> dict[str, Any]:
    """The one user message a compacted history holds: the task, the model's summary, and what the framework
    knows for sure (files changed, pending, the last steps)."""
    parts = [SUMMARY_PREFIX, f"## Task\n{state.task}", f"## Your summary\n{summary.strip() or '(none was given)'}"]
    parts.append("## Files changed in this turn\n" + ("\n".join(f"- {f}" for f in state.files_changed) or "none"))
    parts.append("## Pending\n" + ("\n".join(f"- {p}" for p in state.pending) or "nothing"))
    if state.recent:
        parts.append("## Last steps\n" + "\n".join(state.recent))
    parts.append("Carry on with the task from here.")
    return {"role": "user", "content": "\n\n".join(parts)}
