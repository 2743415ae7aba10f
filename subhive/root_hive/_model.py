"""What the root hive hands out: registrations, outcomes, approvals, contract and hive views.

All are frozen dataclasses with ``to_dict()`` giving plain JSON data (versions as strings), which is what
the gRPC service and ``--format json`` send.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import ContractInvalid, InputError, Problem, SubhiveError
from ..semver import Version
from ._errors import Conflict

__all__ = ["Approval", "ContractInfo", "HiveStatus", "ProposalOutcome", "Registration", "RequirementOutcome",
           "VersionInfo"]

ProposalStatus = Literal["accepted", "pending", "rejected"]
ApprovalStatus = Literal["pending", "approved", "rejected"]
VersionStatus = Literal["active", "superseded", "retired"]


@dataclass(frozen=True, slots=True)
class Registration:
    """A registered hive and its token. The token is shown once: the root keeps only its sha256."""

    name: str
    token: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class RequirementOutcome:
    """``satisfied_by`` the best accepted version, or an ``announcement_id`` for the open need (Contract Net)."""

    satisfied_by: Version | None
    announcement_id: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"satisfied_by": str(self.satisfied_by) if self.satisfied_by else None,
                "announcement_id": self.announcement_id}


@dataclass(frozen=True, slots=True)
class ProposalOutcome:
    """The root's verdict on one proposal.

    ``code`` is stable: ``proposal.accepted``, ``proposal.unchanged`` (the same accepted content again),
    ``proposal.pending_breaking``, ``proposal.pending_consumers``, ``proposal.pending_provider``,
    ``contract.invalid`` (lint), ``proposal.semver`` (dishonest bump), ``proposal.version_order``,
    ``proposal.immutable`` (an accepted version with other content), ``proposal.pending_exists``.
    """

    id: str
    contract: str
    version: Version
    status: ProposalStatus
    check: dict[str, Any] | None
    problems: tuple[Problem, ...]
    message: str
    code: str = "proposal.accepted"
    hash: str = ""
    #: Announcements (open needs) this acceptance awarded.
    awarded: tuple[str, ...] = ()

    def error(self) -> SubhiveError | None:
        """For a rejection, the error a wire should carry: :class:`InputError` (bad contract or dishonest
        semver, INVALID_ARGUMENT) or :class:`Conflict` (clashes with accepted state, FAILED_PRECONDITION)."""
        if self.status != "rejected":
            return None
        if self.code == "contract.invalid" and self.problems:
            return ContractInvalid(self.problems, summary=self.message)
        if self.code in _CONFLICT_CODES:
            return Conflict(self.message, code=self.code, problems=self.problems,
                            details={"proposal": self.id, "check": self.check})
        error = InputError(self.message, code=self.code)
        return _WithDetails(error, {"proposal": self.id, "check": self.check})

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "contract": self.contract, "version": str(self.version), "status": self.status,
                "code": self.code, "message": self.message, "hash": self.hash, "awarded": list(self.awarded),
                "problems": [p.to_dict() for p in self.problems], "check": self.check}


_CONFLICT_CODES = frozenset({"proposal.immutable", "proposal.pending_exists", "proposal.version_order",
                             "lock.tampered", "proposal.exists_unlocked"})


class _WithDetails(InputError):
    """An InputError whose ``to_dict`` carries the check (the offending changes) for the caller."""

    def __init__(self, error: InputError, details: dict[str, Any]) -> None:
        super().__init__(error.message, code=error.code, location=error.location, hint=error.hint)
        self.details = details

    def to_dict(self) -> dict[str, object]:
        return {**super().to_dict(), **self.details}


@dataclass(frozen=True, slots=True)
class Approval:
    """A proposal waiting for a human (or decided by one). ``id`` is the proposal's id."""

    id: str
    contract: str
    version: Version
    proposer: str
    check: dict[str, Any] | None
    created: float
    status: ApprovalStatus
    #: Why it waits: ``proposal.pending_breaking``, ``proposal.pending_consumers`` or ``proposal.pending_provider``.
    reason: str = ""
    message: str = ""
    hash: str = ""
    #: The approver's note or the rejection's reason, once decided.
    decision: str = ""
    decided: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "contract": self.contract, "version": str(self.version), "proposer": self.proposer,
                "status": self.status, "reason": self.reason, "message": self.message, "hash": self.hash,
                "created": self.created, "decided": self.decided, "decision": self.decision, "check": self.check}


@dataclass(frozen=True, slots=True)
class VersionInfo:
    """One accepted version: ``active`` (served and wanted), ``superseded`` (a newer one of its major line
    serves its consumers) or ``retired`` (an old major no consumer needs). ``intact`` is False when its files
    no longer match the lock's hash: the root does not serve it."""

    version: Version
    hash: str
    provider: str
    status: VersionStatus
    consumers: dict[str, str]
    intact: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {"version": str(self.version), "hash": self.hash, "provider": self.provider, "status": self.status,
                "consumers": dict(sorted(self.consumers.items())), "intact": self.intact}


@dataclass(frozen=True, slots=True)
class ContractInfo:
    name: str
    versions: list[VersionInfo]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "versions": [v.to_dict() for v in self.versions]}


@dataclass(frozen=True, slots=True)
class HiveStatus:
    """One node of the hive tree. ``provides`` are contract names; ``consumes`` are dicts
    ``{"contract", "versions", "satisfied_by", "announcement_id"}``."""

    name: str
    kind: str
    parent: str
    children: list[HiveStatus]
    provides: list[str]
    consumes: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "parent": self.parent,
                "children": [c.to_dict() for c in self.children], "provides": list(self.provides),
                "consumes": [dict(c) for c in self.consumes]}
