"""The result of comparing two versions of a schema: a list of changes, each judged per direction.
A direction is True only when proven (an unprovable one says why, ``*.unprovable``): a "compatible" verdict
that a real instance contradicts is the worst bug this project can have. See docs/compat-codes.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from ..errors import Problem

__all__ = ["Change", "DiffReport", "Direction"]


class Direction(StrEnum):
    """Which direction a schema must stay compatible in."""

    BACKWARD = "backward"  # may only grow: request inputs (new readers accept old writers)
    FORWARD = "forward"  # may only shrink: responses and events (old readers accept new writers)
    FULL = "full"  # both

    def allows(self, change: Change) -> bool:
        if self is Direction.BACKWARD:
            return change.backward
        if self is Direction.FORWARD:
            return change.forward
        return change.backward and change.forward


@dataclass(frozen=True, slots=True)
class Change:
    """One difference between OLD and NEW.

    ``code`` is stable (documented in docs/compat-codes.md), ``path`` is a JSON pointer into the schema
    (or a dotted proto path), ``backward``/``forward`` say whether this change keeps that direction.
    ``additive`` marks a change that keeps both directions yet adds to the interface (a protobuf field that
    old readers skip, a new operation): it needs a minor bump where a docs-only change needs a patch.
    """

    code: str
    path: str
    backward: bool
    forward: bool
    message: str
    additive: bool = False

    @property
    def is_neutral(self) -> bool:
        """True when the change alters nothing a reader or writer can observe (docs-only, reordering)."""
        return self.backward and self.forward and not self.additive

    def to_dict(self) -> dict[str, object]:
        # Exactly the documented shape; ``additive`` is implied by the code and only drives the semver bump.
        return {
            "code": self.code,
            "path": self.path,
            "backward": self.backward,
            "forward": self.forward,
            "message": self.message,
        }


@dataclass(frozen=True, slots=True)
class DiffReport:
    """All changes between two versions; the verdicts are the conjunction of the changes' verdicts.

    ``warnings``: what the reading of the files noted without refusing them (a ``$ref`` to a URL, never fetched;
    ``diff_files`` only). They never change a verdict."""

    changes: tuple[Change, ...] = ()
    warnings: tuple[Problem, ...] = ()

    @classmethod
    def of(cls, changes: Iterable[Change]) -> DiffReport:
        """Build a report with changes in a stable order (by path, then code) and exact duplicates removed."""
        unique = dict.fromkeys(changes)
        return cls(tuple(sorted(unique, key=lambda c: (c.path, c.code, c.message))))

    @property
    def backward(self) -> bool:
        return all(c.backward for c in self.changes)

    @property
    def forward(self) -> bool:
        return all(c.forward for c in self.changes)

    def compatible(self, direction: Direction) -> bool:
        return all(direction.allows(c) for c in self.changes)

    def breaking(self, direction: Direction) -> tuple[Change, ...]:
        """The changes that break ``direction``."""
        return tuple(c for c in self.changes if not direction.allows(c))

    def to_dict(self) -> dict[str, object]:
        """The stable JSON shape printed by ``subhive schema diff --format json``."""
        out: dict[str, object] = {
            "backward": self.backward,
            "forward": self.forward,
            "changes": [c.to_dict() for c in self.changes],
        }
        if self.warnings:
            out["warnings"] = [w.to_dict() for w in self.warnings]
        return out
