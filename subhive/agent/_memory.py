"""A hive's memory of what its agents' actions came to, kept on its board and given to later turns as a note.

Relevance is word overlap, then recency: plain, predictable, and cheap enough for every turn's start.
See docs/agents.md#memory-of-outcomes.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from collections.abc import Sequence
from typing import Any

from ..hive import KvBlackboard
from ._loop import Frame
from ._scripted import estimate_tokens

__all__ = ["MEMORY_PREFIX", "AgentMemory", "memory_note", "select_memories"]

MEMORY_PREFIX = "agent-memory"
_WORD = re.compile(r"[a-z0-9_./-]{3,}")
_LEARNT_FROM = ("propose_diff", "propose_contract")


#: Words too common to make two texts related.
_COMMON = frozenset(
    (
        "the",
        "and",
        "for",
        "with",
        "this",
        "that",
        "from",
        "into",
        "are",
        "was",
        "were",
        "has",
        "have",
        "had",
        "not",
        "but",
        "you",
        "your",
        "its",
        "our",
        "all",
        "any",
        "can",
        "will",
        "would",
        "should",
        "then",
        "than",
        "them",
        "they",
        "there",
        "here",
        "what",
        "which",
        "when",
        "who",
        "how",
        "again",
        "also",
        "just",
        "only",
        "more",
        "most",
        "some",
        "such",
        "very",
    )
)


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower())) - _COMMON


def select_memories(entries: Sequence[dict[str, Any]], task: str, budget: int) -> list[dict[str, Any]]:
    """The entries to give a turn on ``task``: those sharing words with it, most shared first (then newest),
    while they fit in ``budget`` tokens."""
    wanted = _words(task)
    scored = []
    for entry in entries:
        shared = len(wanted & _words(str(entry.get("text", ""))))
        if shared:
            scored.append((shared / max(len(wanted), 1), float(entry.get("time", 0.0)), entry))
    chosen, used = [], 0
    for _share, _when, entry in sorted(scored, key=lambda s: (-s[0], -s[1])):
        cost = estimate_tokens(entry["text"]) + 4
        if used + cost > budget:
            continue
        chosen.append(entry)
        used += cost
    return chosen


def memory_note(entries: Sequence[dict[str, Any]]) -> str | None:
    """The message a turn gets before its task, or None when there is nothing to say."""
    if not entries:
        return None
    lines = "\n".join(f"- {e['text']}" for e in entries)
    return f"What earlier turns of this agent came to (most relevant first); take it into account:\n{lines}"


class AgentMemory:
    """One agent's memory on its hive's board (the bucket without the schema: these keys are the framework's).
    Call it with each frame of a turn to learn from it; :meth:`recall` before a turn."""

    def __init__(self, board: KvBlackboard, agent: str) -> None:
        self.board = board
        self.agent = agent
        self._calls: dict[str, dict[str, Any]] = {}
        self._prompt = ""

    async def remember(self, kind: str, text: str, *, turn: str = "") -> None:
        stamp = f"{int(time.time() * 1000):013d}-{secrets.token_hex(3)}"
        await self.board.put(
            f"{MEMORY_PREFIX}.{self.agent}.{stamp}",
            {"kind": kind, "text": text[:600], "turn": turn, "time": time.time()},
            writer=f"agent:{self.agent}",
        )

    async def entries(self) -> list[dict[str, Any]]:
        found = []
        for key in await self.board.keys(f"{MEMORY_PREFIX}.{self.agent}.*"):
            entry = await self.board.get(key)
            if entry is not None and isinstance(entry.value, dict) and "text" in entry.value:
                found.append(entry.value)
        return found

    async def recall(self, task: str, budget: int) -> str | None:
        """The note for a turn on ``task`` (None when nothing relevant fits ``budget`` tokens, or it is 0)."""
        if budget <= 0:
            return None
        return memory_note(select_memories(await self.entries(), task, budget))

    async def __call__(self, frame: Frame) -> None:
        data = frame.data
        if frame.kind == "turn.started":
            self._prompt = str(data.get("prompt") or "")
        elif frame.kind == "tool.call" and data.get("name") in _LEARNT_FROM:
            self._calls[str(data.get("id"))] = data
        elif frame.kind == "tool.result" and data.get("name") in _LEARNT_FROM:
            call = self._calls.pop(str(data.get("id")), {})
            text = _outcome(str(data["name"]), call.get("arguments", ""), data, self._prompt)
            if text:
                await self.remember(str(data["name"]), text, turn=frame.turn)
        elif frame.kind == "turn.stopped" and (data.get("stop") or {}).get("code") != "completed":
            stop = data.get("stop") or {}
            await self.remember(
                "stop",
                f"a turn on {self._prompt[:160]!r} stopped: {stop.get('code')}: {stop.get('message', '')}",
                turn=frame.turn,
            )


def _outcome(tool: str, arguments: str, result: dict[str, Any], prompt: str) -> str | None:
    """One line on what a change came to: the files it named, and applied, rejected (why) or conflicted."""
    files = (
        sorted(set(re.findall(r"\+\+\+ b/([^\s\\\\\"]+)", arguments)))
        if tool == "propose_diff"
        else sorted(set(re.findall(r"contract: ([a-z0-9_-]+)", arguments)))
    )
    what = f"{tool} on {', '.join(files) or 'files'} for {prompt[:120]!r}"
    if result.get("ok"):
        return f"{what}: done ({str(result.get('content', ''))[:160]})"
    error = str(result.get("error") or "")
    try:
        message = json.loads(str(result.get("content", "{}"))).get("message", "")
    except ValueError:
        message = ""
    return f"{what}: {error}: {message[:300]}" if error else None
