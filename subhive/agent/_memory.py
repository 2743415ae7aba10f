"""A hive's memory of what its agents' actions came to, kept on its board and given to later turns as a note.

Relevance is word overlap, then confidence, then recency: plain, predictable, and cheap enough for every turn's
start. Each entry's confidence moves with the turns it was given to (``[memory]``; _confidence.py): an entry that
keeps coming before failures is pruned. See docs/agents.md#memory-of-outcomes.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from collections.abc import Sequence
from typing import Any

from ..hive import KvBlackboard
from ..workspace import MemorySpec
from ._confidence import adjust, is_pruned
from ._loop import Frame
from ._scripted import estimate_tokens

__all__ = ["MEMORY_PREFIX", "AgentMemory", "memory_note", "select_memories", "settled"]

MEMORY_PREFIX = "agent-memory"
#: Per turn, the entries it was given and whether a change of it failed: a turn that parks, or whose hive dies,
#: is resumed by another process, which must settle the same entries (``agent-memory-turns.<agent>.<turn>``).
GIVEN_PREFIX = "agent-memory-turns"
_WORD = re.compile(r"[a-z0-9_./-]{3,}")
_LEARNT_FROM = ("propose_diff", "propose_contract")
#: Stops that are no end of a turn: its outcome is not known yet.
_NO_END = frozenset({"parked"})
#: How many confidence changes an entry keeps as its history.
_HISTORY = 20


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
    """The entries to give a turn on ``task``: those sharing words with it, most shared first (then the most
    confident, then the newest), while they fit in ``budget`` tokens. Pruned entries are never given."""
    wanted = _words(task)
    scored = []
    for entry in entries:
        if entry.get("pruned"):
            continue
        shared = len(wanted & _words(str(entry.get("text", ""))))
        if shared:
            confidence = float(entry.get("confidence", 1.0))
            scored.append((shared / max(len(wanted), 1), confidence, float(entry.get("time", 0.0)), entry))
    chosen, used = [], 0
    for _share, _confidence, _when, entry in sorted(scored, key=lambda s: (-s[0], -s[1], -s[2])):
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
    lines = "\n".join(
        f"- {e['text']}" + (f" (confidence {float(e['confidence']):.2f})" if "confidence" in e else "") for e in entries
    )
    return f"What earlier turns of this agent came to (most relevant first); take it into account:\n{lines}"


class AgentMemory:
    """One agent's memory on its hive's board (the bucket without the schema: these keys are the framework's).
    Call it with each frame of a turn to learn from it; :meth:`recall` before a turn. The entries a turn was
    given gain confidence when it ends well and lose it (``rule``) when it fails: it stopped without an answer,
    or a change it proposed was refused or did not apply."""

    def __init__(self, board: KvBlackboard, agent: str, *, rule: MemorySpec | None = None) -> None:
        self.board = board
        self.agent = agent
        self.rule = rule or MemorySpec()
        self._calls: dict[str, dict[str, Any]] = {}
        self._prompt = ""
        #: Keys of the entries the current turn was given (by :meth:`recall`), settled when it stops.
        self._given: list[str] = []
        self._failed = False

    async def remember(self, kind: str, text: str, *, turn: str = "") -> str:
        """Learn an entry at the rule's initial confidence; returns its key. Re-learning what was pruned makes a
        new entry: a pruned one never comes back by itself."""
        now = time.time()
        key = f"{MEMORY_PREFIX}.{self.agent}.{int(now * 1000):013d}-{secrets.token_hex(3)}"
        await self.board.put(
            key,
            {
                "kind": kind,
                "text": text[:600],
                "turn": turn,
                "time": now,
                "confidence": self.rule.initial,
                "history": [{"time": now, "event": "learnt", "turn": turn, "confidence": self.rule.initial}],
            },
            writer=f"agent:{self.agent}",
        )
        return key

    async def entries(self, *, pruned: bool = False) -> list[dict[str, Any]]:
        """The entries (each with its ``key``), oldest first; pruned ones only with ``pruned=True``."""
        found = []
        for key in sorted(await self.board.keys(f"{MEMORY_PREFIX}.{self.agent}.*")):
            entry = await self.board.get(key)
            value = entry.value if entry is not None else None
            if isinstance(value, dict) and "text" in value and (pruned or not value.get("pruned")):
                found.append({**value, "key": key})
        return found

    async def recall(self, task: str, budget: int) -> str | None:
        """The note for a turn on ``task`` (None when nothing relevant fits ``budget`` tokens, or it is 0)."""
        if budget <= 0:
            return None
        chosen = select_memories(await self.entries(), task, budget)
        self._given = [str(e["key"]) for e in chosen]
        return memory_note(chosen)

    async def settle(self, keys: Sequence[str], helped: bool, *, turn: str = "") -> None:
        """Move the confidence of the entries ``keys`` after a turn that used them; prune those that fall below
        the threshold (kept on the board with their history, never given again)."""
        for key in keys:
            if await self.board.get(key) is None:
                continue
            await self.board.update(
                key, lambda old: settled(old, helped, self.rule, turn=turn), writer=f"agent:{self.agent}"
            )

    async def __call__(self, frame: Frame) -> None:
        data = frame.data
        if frame.kind == "turn.started":
            self._prompt = str(data.get("prompt") or "")
            self._failed = False
            await self._keep_given(frame.turn)
        elif frame.kind == "turn.resumed":
            await self._restore_given(frame.turn)
        elif frame.kind == "tool.call" and data.get("name") in _LEARNT_FROM:
            self._calls[str(data.get("id"))] = data
        elif frame.kind == "tool.result" and data.get("name") in _LEARNT_FROM:
            call = self._calls.pop(str(data.get("id")), {})
            if not data.get("ok") and not self._failed:
                self._failed = True
                await self._keep_given(frame.turn)
            text = _outcome(str(data["name"]), call.get("arguments", ""), data, self._prompt)
            if text:
                await self.remember(str(data["name"]), text, turn=frame.turn)
        elif frame.kind == "turn.stopped":
            await self._stopped(frame)

    def _given_key(self, turn: str) -> str:
        return f"{GIVEN_PREFIX}.{self.agent}.{re.sub(r'[^A-Za-z0-9_-]', '_', turn) or 'turn'}"

    async def _keep_given(self, turn: str) -> None:
        """What this turn must settle when it stops, on the board: whoever resumes it settles the same."""
        if self._given or self._failed:
            await self.board.put(
                self._given_key(turn),
                {"given": self._given, "failed": self._failed, "prompt": self._prompt[:600]},
                writer=f"agent:{self.agent}",
            )

    async def _restore_given(self, turn: str) -> None:
        kept = await self.board.get(self._given_key(turn))
        if kept is not None and isinstance(kept.value, dict) and not kept.value.get("settled"):
            self._given = [str(k) for k in kept.value.get("given") or []]
            self._failed = self._failed or bool(kept.value.get("failed"))
            self._prompt = self._prompt or str(kept.value.get("prompt") or "")

    async def _stopped(self, frame: Frame) -> None:
        stop = frame.data.get("stop") or {}
        if stop.get("code") in _NO_END:
            return
        given, self._given = self._given, []
        await self.settle(given, stop.get("code") == "completed" and not self._failed, turn=frame.turn)
        if given:  # settled once: a second resume of the same turn must not move them again
            await self.board.put(
                self._given_key(frame.turn), {"given": given, "settled": True}, writer=f"agent:{self.agent}"
            )
        if stop.get("code") != "completed":
            await self.remember(
                "stop",
                f"a turn on {self._prompt[:160]!r} stopped: {stop.get('code')}: {stop.get('message', '')}",
                turn=frame.turn,
            )


def settled(entry: Any, helped: bool, rule: MemorySpec, *, turn: str = "", now: float | None = None) -> Any:
    """``entry`` after a turn that was given it ``helped`` (or failed): its confidence moved by ``rule``, the step
    added to its history, and ``pruned`` once below the threshold. A pruned entry (or anything that is not an
    entry) comes back unchanged: nothing revives it."""
    if not isinstance(entry, dict) or entry.get("pruned"):
        return entry
    confidence = adjust(float(entry.get("confidence", rule.initial)), helped, rule)
    pruned = is_pruned(confidence, rule)
    step = {
        "time": time.time() if now is None else now,
        "event": "helped" if helped else "failed",
        "turn": turn,
        "confidence": confidence,
    }
    history = [*entry.get("history", []), step] + ([{**step, "event": "pruned"}] if pruned else [])
    return {**entry, "confidence": confidence, "pruned": pruned, "history": history[-_HISTORY:]}


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
