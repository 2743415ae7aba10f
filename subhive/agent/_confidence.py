"""Confidence of a remembered pattern: down by a configured rate each time a turn that used it fails, up when it
helps, pruned below a threshold (``[memory]`` in subhive.toml). Pure functions, so the rules are property-tested
apart from the board. See docs/agents.md#review-quorum-and-memory."""

from __future__ import annotations

from ..workspace import MemorySpec

__all__ = ["adjust", "is_pruned"]


def adjust(confidence: float, helped: bool, rule: MemorySpec) -> float:
    """The confidence after one turn that used the entry: ``helped`` or failed. Always in [0, 1].

    Additive: minus ``rate`` / plus ``gain``. Multiplicative: times ``1 - rate`` / plus ``gain`` of what is left
    to 1, so neither rule can leave the interval, and repeated failures never raise it."""
    c = min(max(confidence, 0.0), 1.0)
    if helped:
        c = c + rule.gain if rule.decay == "additive" else c + rule.gain * (1.0 - c)
    else:
        c = c - rule.rate if rule.decay == "additive" else c * (1.0 - rule.rate)
    return min(max(c, 0.0), 1.0)


def is_pruned(confidence: float, rule: MemorySpec) -> bool:
    """Whether an entry at ``confidence`` is dropped for good (it is learnt anew only by a new outcome)."""
    return confidence < rule.threshold
