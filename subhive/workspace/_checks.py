"""How a hive's agents check each other, from its ``subhive.toml``: ``[review]`` (a debate with a judge before a
change reaches a person), ``[quorum]`` (board keys written only by agreeing voters) and ``[memory]`` (how the
confidence of remembered patterns moves). Read key by key, each mistake one located problem among the
manifest's. See docs/agents.md#review-quorum-and-memory.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .._source import join_pointer
from ._toml import toml_string

__all__ = ["REVIEWED_CHANGES", "MemorySpec", "QuorumSpec", "ReviewSpec", "read_memory", "read_quorum", "read_review"]

#: The changes a review can hold back: an agent's diff, a contract version it proposes, a repair turn's diff.
REVIEWED_CHANGES = ("propose_diff", "propose_contract", "repair")
_REVIEW_KEYS = ("changes", "reviewer", "advocate", "judge", "rounds")
_QUORUM_KEYS = ("keys", "f", "voters", "equivalence")
_MEMORY_KEYS = ("decay", "rate", "gain", "threshold", "initial")
_KEY_PATTERN = re.compile(r"[A-Za-z0-9_\-/=*>]+(\.[A-Za-z0-9_\-/=*>]+)*\Z")
Report = Callable[[str, str, str, str], None]


@dataclass(frozen=True, slots=True)
class ReviewSpec:
    """``[review]``: the changes that go through a debate, and the agents (``[agents.NAME]``) in each role."""

    reviewer: str
    advocate: str
    judge: str
    changes: tuple[str, ...] = ("propose_diff",)
    rounds: int = 1

    def to_toml(self) -> str:
        changes = ", ".join(toml_string(c) for c in self.changes)
        return (
            f"[review]\nchanges = [{changes}]\nreviewer = {toml_string(self.reviewer)}\n"
            f"advocate = {toml_string(self.advocate)}\njudge = {toml_string(self.judge)}\nrounds = {self.rounds}\n"
        )


@dataclass(frozen=True, slots=True)
class QuorumSpec:
    """``[quorum]``: board key patterns whose writes need ``2f+1`` agreeing votes among ``N >= 3f+1`` voters;
    ``voters`` names who may vote (empty: any distinct writer); ``equivalence`` is how values are compared
    (``exact`` canonical JSON, or ``text``: strings compared trimmed and case-folded)."""

    keys: tuple[str, ...]
    f: int = 1
    voters: tuple[str, ...] = ()
    equivalence: str = "exact"

    def to_toml(self) -> str:
        lines = ["[quorum]", "keys = [" + ", ".join(toml_string(k) for k in self.keys) + "]", f"f = {self.f}"]
        if self.voters:
            lines.append("voters = [" + ", ".join(toml_string(v) for v in self.voters) + "]")
        if self.equivalence != "exact":
            lines.append(f"equivalence = {toml_string(self.equivalence)}")
        return "\n".join(lines) + "\n"


@dataclass(frozen=True, slots=True)
class MemorySpec:
    """``[memory]``: each remembered pattern's confidence starts at ``initial``, drops by ``rate`` (subtracted,
    or as a factor ``1 - rate`` when ``decay = "multiplicative"``) each time a turn that used it fails, rises by
    ``gain`` when it helps, and is pruned below ``threshold``."""

    decay: str = "multiplicative"
    rate: float = 0.5
    gain: float = 0.1
    threshold: float = 0.2
    initial: float = 0.6

    def to_toml(self) -> str:
        return (
            f"[memory]\ndecay = {toml_string(self.decay)}\nrate = {self.rate!r}\ngain = {self.gain!r}\n"
            f"threshold = {self.threshold!r}\ninitial = {self.initial!r}\n"
        )


def unknown_keys(table: Mapping[str, Any], pointer: str, known: tuple[str, ...], code: str, report: Report) -> bool:
    """Report each key of ``table`` that is not ``known`` (with the nearest known one); True if there was one.
    Every table of hive.toml and of the agents' settings says it the same way."""
    bad = False
    for key in table:
        if key not in known:
            near = difflib.get_close_matches(str(key), known, n=1)
            report(
                join_pointer(pointer, str(key)),
                code,
                f"unknown key {key!r} in [{pointer.strip('/')}]",
                f"did you mean {near[0]!r}?" if near else "the keys are: " + ", ".join(known),
            )
            bad = True
    return bad


def _number(
    table: dict[str, Any], pointer: str, key: str, default: float, report: Report, *, low: float, high: float
) -> float | None:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        report(join_pointer(pointer, key), "checks.value_invalid", f"{key} must be a number", f"e.g. {key} = {default}")
        return None
    if not low <= value <= high:
        report(
            join_pointer(pointer, key),
            "checks.value_invalid",
            f"{key} = {value} is out of range",
            f"{key} is between {low:g} and {high:g}",
        )
        return None
    return float(value)


def _strings(table: dict[str, Any], pointer: str, key: str, report: Report) -> tuple[str, ...] | None:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        report(
            join_pointer(pointer, key), "checks.value_invalid", f"{key} must be a list of strings", f'{key} = ["..."]'
        )
        return None
    return tuple(value)


def read_review(value: Any, report: Report, agents: tuple[str, ...]) -> ReviewSpec | None:
    """``[review]``: each role must name an agent the hive declares (``review.role_unknown``)."""
    pointer = "/review"
    if not isinstance(value, dict):
        report(pointer, "review.type", "'review' must be a table", "write it as [review]")
        return None
    failed = unknown_keys(value, pointer, _REVIEW_KEYS, "review.unknown_key", report)
    roles: dict[str, str] = {}
    for role in ("reviewer", "advocate", "judge"):
        name = value.get(role)
        if not isinstance(name, str) or name not in agents:
            report(
                join_pointer(pointer, role),
                "review.role_unknown" if isinstance(name, str) else "review.missing_role",
                f"the {role} must be one of this hive's agents, not {name!r}" if name is not None else f"no {role}",
                f'declare it as [agents.NAME] and write {role} = "NAME" (agents: {", ".join(agents) or "none"})',
            )
            failed = True
        else:
            roles[role] = name
    if len(set(roles.values())) < len(roles):
        report(
            pointer,
            "review.roles_shared",
            "reviewer, advocate and judge must be three different agents",
            "a judge that argued one side is not independent: declare one agent per role",
        )
        failed = True
    changes = _strings(value, pointer, "changes", report) if "changes" in value else ("propose_diff",)
    for change in changes or ():
        if change not in REVIEWED_CHANGES:
            report(
                join_pointer(pointer, "changes"),
                "review.change_unknown",
                f"{change!r} is not a change a review can hold",
                "the changes are: " + ", ".join(REVIEWED_CHANGES),
            )
            failed = True
    rounds = _number(value, pointer, "rounds", 1, report, low=1, high=5)
    if rounds is not None and rounds != int(rounds):
        report(join_pointer(pointer, "rounds"), "checks.value_invalid", "rounds must be a whole number", "rounds = 2")
        rounds = None
    if failed or changes is None or rounds is None:
        return None
    return ReviewSpec(roles["reviewer"], roles["advocate"], roles["judge"], changes, int(rounds))


def read_quorum(value: Any, report: Report) -> QuorumSpec | None:
    """``[quorum]``: at least one key pattern, ``f >= 1``, and, when voters are named, at least ``3f+1``."""
    pointer = "/quorum"
    if not isinstance(value, dict):
        report(pointer, "quorum.type", "'quorum' must be a table", "write it as [quorum]")
        return None
    failed = unknown_keys(value, pointer, _QUORUM_KEYS, "quorum.unknown_key", report)
    keys = _strings(value, pointer, "keys", report)
    if keys is not None and not keys:
        report(join_pointer(pointer, "keys"), "quorum.no_keys", "no key pattern is critical", 'keys = ["decisions.*"]')
        failed = True
    for key in keys or ():
        if not _KEY_PATTERN.match(key):
            report(
                join_pointer(pointer, "keys"),
                "quorum.key_invalid",
                f"{key!r} is not a board key pattern",
                "dot-separated tokens; '*' matches one token, '>' the rest",
            )
            failed = True
    f = _number(value, pointer, "f", 1, report, low=1, high=10)
    voters = _strings(value, pointer, "voters", report)
    if f is not None and voters and len(set(voters)) < 3 * int(f) + 1:
        report(
            join_pointer(pointer, "voters"),
            "quorum.too_few_voters",
            f"{len(set(voters))} distinct voters cannot tolerate f = {int(f)} faulty ones",
            f"name at least 3f+1 = {3 * int(f) + 1} voters, or lower f",
        )
        failed = True
    equivalence = value.get("equivalence", "exact")
    if equivalence not in ("exact", "text"):
        report(
            join_pointer(pointer, "equivalence"),
            "checks.value_invalid",
            f"equivalence {equivalence!r} is not a rule",
            'equivalence = "exact" (canonical JSON) or "text"',
        )
        failed = True
    if failed or keys is None or f is None or voters is None:
        return None
    return QuorumSpec(keys, int(f), voters, str(equivalence))


def read_memory(value: Any, report: Report) -> MemorySpec | None:
    """``[memory]``: rates in (0, 1], a threshold below the initial confidence."""
    pointer = "/memory"
    if not isinstance(value, dict):
        report(pointer, "memory.type", "'memory' must be a table", "write it as [memory]")
        return None
    failed = unknown_keys(value, pointer, _MEMORY_KEYS, "memory.unknown_key", report)
    decay = value.get("decay", "multiplicative")
    if decay not in ("additive", "multiplicative"):
        report(
            join_pointer(pointer, "decay"),
            "checks.value_invalid",
            f"decay {decay!r} is not a rule",
            'decay = "multiplicative" or "additive"',
        )
        failed = True
    defaults = MemorySpec()
    rate = _number(value, pointer, "rate", defaults.rate, report, low=0.01, high=1.0)
    gain = _number(value, pointer, "gain", defaults.gain, report, low=0.0, high=1.0)
    threshold = _number(value, pointer, "threshold", defaults.threshold, report, low=0.0, high=0.99)
    initial = _number(value, pointer, "initial", defaults.initial, report, low=0.01, high=1.0)
    if threshold is not None and initial is not None and threshold >= initial:
        report(
            join_pointer(pointer, "threshold"),
            "memory.threshold_too_high",
            f"threshold {threshold:g} is not below initial {initial:g}: every entry would be pruned at once",
            "set threshold below initial",
        )
        failed = True
    if failed or rate is None or gain is None or threshold is None or initial is None:
        return None
    return MemorySpec(str(decay), rate, gain, threshold, initial)
