"""Quorum writes: a board key declared critical (``[quorum]`` in subhive.toml) is written only when ``N >= 3f+1``
independent voters vote and enough of them agree on the value, so that ``f`` faulty voters (a lying agent, a
toxic one) cannot put a value there by themselves.

Each voter is asked the same question on its own, at once, and none is shown another's answer: the votes are
collected by the framework and written to the board together, after every voter has answered. Every vote and
the outcome are kept on the board (``quorum-rounds.<round>``, ``quorum-votes.<round>.<voter>``); a round without
agreement is escalated with each voter's value. See docs/agents.md#review-quorum-and-memory and decision 0089.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import InputError, Location
from ..workspace import QuorumSpec
from ._blackboard import KvBlackboard, RevisionConflict
from ._knowledge import key_matches

__all__ = [
    "QUORUM_ROUNDS",
    "QUORUM_VOTES",
    "QuorumOutcome",
    "QuorumWrites",
    "Voter",
    "agreement_needed",
    "equivalent",
    "tally",
]

QUORUM_ROUNDS = "quorum-rounds"
QUORUM_VOTES = "quorum-votes"
#: A voter: asked the question (the key and what is proposed for it), answers the value it stands for.
Voter = Callable[[str, Any], Awaitable[Any]]


def agreement_needed(voters: int, f: int) -> int:
    """Votes that must agree: ``2f+1``, and more than half of the voters, so that two different values can never
    both pass (with exactly ``3f+1`` voters the two are the same number)."""
    return max(2 * f + 1, voters // 2 + 1)


def equivalent(value: Any, rule: str) -> str:
    """The class of ``value`` under the declared rule: canonical JSON (``exact``), or for strings the text
    trimmed and case-folded, whitespace runs made one (``text``)."""
    if rule == "text" and isinstance(value, str):
        return json.dumps(" ".join(value.split()).casefold())
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class QuorumOutcome:
    """What a round came to: ``accepted`` (with ``value``) or ``escalated`` (``reason``: ``quorum.too_few_voters``,
    ``quorum.no_agreement``, or ``quorum.overtaken`` when the key changed while the voters were asked), with every
    counted vote and the largest agreeing group's size."""

    accepted: bool
    value: Any
    reason: str
    votes: Mapping[str, Any]
    agreeing: int
    needed: int
    ignored: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {
            "outcome": "accepted" if self.accepted else "escalated",
            "value": self.value,
            "reason": self.reason,
            "votes": dict(self.votes),
            "agreeing": self.agreeing,
            "needed": self.needed,
            "ignored": list(self.ignored),
        }


def tally(votes: Mapping[str, Any], f: int, *, rule: str = "exact", allowed: tuple[str, ...] = ()) -> QuorumOutcome:
    """Count ``votes`` (voter -> value; one vote per voter, so a voter cannot stuff the box). With ``allowed``,
    only those voters count (the others are listed as ``ignored``). Accepted only when at least ``3f+1`` voters
    voted and :func:`agreement_needed` of them gave equivalent values."""
    counted = {v: value for v, value in votes.items() if not allowed or v in allowed}
    ignored = tuple(sorted(set(votes) - set(counted)))
    needed = agreement_needed(len(counted), f)
    groups: dict[str, list[str]] = {}
    for voter, value in counted.items():
        groups.setdefault(equivalent(value, rule), []).append(voter)
    best = max(groups.values(), key=len, default=[])
    if len(counted) < 3 * f + 1:
        reason = "quorum.too_few_voters"
    elif len(best) < needed:
        reason = "quorum.no_agreement"
    else:
        return QuorumOutcome(True, counted[sorted(best)[0]], "", counted, len(best), needed, ignored)
    return QuorumOutcome(False, None, reason, counted, len(best), needed, ignored)


def _token(voter: str) -> str:
    """A voter's name as one board-key token (writer names may hold ':' and '@', keys may not)."""
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in voter)[:40]
    return f"{safe}-{hashlib.sha256(voter.encode()).hexdigest()[:8]}"


class QuorumWrites:
    """The critical keys of one hive. ``board``: the hive's board (with its schema) where an accepted value is
    written; ``records``: the bucket without the schema, for the rounds and votes (the framework's keys)."""

    def __init__(self, spec: QuorumSpec, board: KvBlackboard, records: KvBlackboard | None = None) -> None:
        self.spec = spec
        self.board = board
        self.records = records or board

    def is_critical(self, key: str) -> bool:
        return any(key_matches(pattern, key) for pattern in self.spec.keys)

    def refuse(self, key: str, writer: str) -> InputError:
        """The error for a plain write to a critical key: it goes through :meth:`decide` instead."""
        return InputError(
            f"{key} is critical in this hive: {writer} cannot write it alone",
            code="quorum.required",
            location=Location(subject=key),
            hint=f"a value is written there only when {3 * self.spec.f + 1} voters vote and enough agree "
            "([quorum] in subhive.toml)",
        )

    async def decide(
        self, key: str, proposed: Any, voters: Mapping[str, Voter], *, proposer: str
    ) -> tuple[str, QuorumOutcome]:
        """Ask every voter about ``proposed`` for ``key`` at once, each on its own, then tally. The votes and the
        outcome go on the board together; an accepted value is written to ``key`` (writer ``quorum:<round>``).
        A voter that fails or times out casts no vote (and so cannot help a value through). Returns the round's
        id and its outcome."""
        if not self.is_critical(key):
            raise InputError(
                f"{key} is not a critical key of this hive",
                code="quorum.not_critical",
                location=Location(subject=key),
                hint="declare its pattern in [quorum] keys, or write it as usual",
            )
        round_id = f"{int(time.time() * 1000):013d}-{secrets.token_hex(3)}"
        # The value is written only over what the voters judged against: a round that another round (or any
        # writer) overtook meanwhile writes nothing, instead of the last one to finish winning.
        current = await self.board.get(key)
        names = sorted(voters)
        answers = await asyncio.gather(*(voters[n](key, proposed) for n in names), return_exceptions=True)
        votes = {n: a for n, a in zip(names, answers, strict=True) if not isinstance(a, BaseException)}
        failed = {n: type(a).__name__ for n, a in zip(names, answers, strict=True) if isinstance(a, BaseException)}
        outcome = tally(votes, self.spec.f, rule=self.spec.equivalence, allowed=self.spec.voters)
        for voter, value in votes.items():
            await self.records.put(
                f"{QUORUM_VOTES}.{round_id}.{_token(voter)}",
                {"round": round_id, "key": key, "voter": voter, "value": value},
                writer=f"quorum:{round_id}",
            )
        record = {
            "round": round_id,
            "key": key,
            "proposer": proposer,
            "proposed": proposed,
            "f": self.spec.f,
            "failed": failed,
            **outcome.to_dict(),
        }
        if outcome.accepted:
            try:
                record["revision"] = await self.board.put(
                    key,
                    outcome.value,
                    writer=f"quorum:{round_id}",
                    expected_revision=current.revision if current is not None else 0,
                )
            except RevisionConflict:
                outcome = replace(outcome, accepted=False, reason="quorum.overtaken")
                record.update(outcome.to_dict())
        await self.records.put(f"{QUORUM_ROUNDS}.{round_id}", record, writer=f"quorum:{round_id}")
        return round_id, outcome
