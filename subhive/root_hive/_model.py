"""What the root hive hands out: registrations, outcomes, approvals (of contracts and of repairs), contract and
hive views, gRPC endpoints.

All are frozen dataclasses with ``to_dict()`` giving plain JSON data (versions as strings), which is what
the gRPC service and ``--format json`` send.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import ContractInvalid, InputError, Problem, SubhiveError
from ..semver import Version
from ._errors import Conflict

__all__ = [
    "AgentStep",
    "Approval",
    "ContractInfo",
    "Endpoint",
    "HiveStatus",
    "ProposalOutcome",
    "Registration",
    "Repair",
    "RequirementOutcome",
    "ToolCall",
    "VersionInfo",
]

ProposalStatus = Literal["accepted", "pending", "rejected"]
ApprovalStatus = Literal["pending", "approved", "rejected"]
VersionStatus = Literal["active", "superseded", "retired"]
#: What an approval is about: a contract version waiting to be published, or a repair a hive reported.
ApprovalKind = Literal["contract", "repair", "tool"]


@dataclass(frozen=True, slots=True)
class AgentStep:
    """One step of an agent's turn as its hive reports it (root-hive 1.4.0, ``ReportFrames``):
    ``AgentStep("helper", "t1", 1, "turn.started", '{"prompt": "hi"}', 1.7e9)``; ``step`` counts from 1."""

    agent: str
    turn: str
    step: int
    kind: str
    data_json: str
    time: float


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
        return {
            "satisfied_by": str(self.satisfied_by) if self.satisfied_by else None,
            "announcement_id": self.announcement_id,
        }


@dataclass(frozen=True, slots=True)
class ProposalOutcome:
    """The root's verdict on one proposal.

    ``code`` is stable: ``proposal.accepted``, ``proposal.unchanged`` (the same accepted content again),
    ``proposal.pending_breaking``, ``proposal.pending_consumers``, ``proposal.pending_provider``,
    ``contract.invalid`` (lint), ``proposal.semver`` (dishonest bump), ``proposal.version_order``,
    ``proposal.immutable`` (an accepted version with other content), ``proposal.pending_exists``; and
    ``repair.accepted`` for a repair approval a human approved (``kind`` ``"repair"``, no ``version``).
    """

    id: str
    contract: str
    version: Version | None
    status: ProposalStatus
    check: dict[str, Any] | None
    problems: tuple[Problem, ...]
    message: str
    code: str = "proposal.accepted"
    hash: str = ""
    #: Announcements (open needs) this acceptance awarded.
    awarded: tuple[str, ...] = ()
    kind: ApprovalKind = "contract"

    def error(self) -> SubhiveError | None:
        """For a rejection, the error a wire should carry: :class:`InputError` (bad contract or dishonest
        semver, INVALID_ARGUMENT) or :class:`Conflict` (clashes with accepted state, FAILED_PRECONDITION)."""
        if self.status != "rejected":
            return None
        if self.code == "contract.invalid" and self.problems:
            return ContractInvalid(self.problems, summary=self.message)
        if self.code in _CONFLICT_CODES:
            return Conflict(
                self.message, code=self.code, problems=self.problems, details={"proposal": self.id, "check": self.check}
            )
        error = InputError(self.message, code=self.code)
        return _WithDetails(error, {"proposal": self.id, "check": self.check})

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "contract": self.contract,
            "version": _text(self.version),
            "status": self.status,
            "code": self.code,
            "message": self.message,
            "hash": self.hash,
            "awarded": list(self.awarded),
            "problems": [p.to_dict() for p in self.problems],
            "check": self.check,
        }


_CONFLICT_CODES = frozenset(
    {
        "proposal.immutable",
        "proposal.pending_exists",
        "proposal.version_order",
        "lock.tampered",
        "proposal.exists_unlocked",
    }
)


class _WithDetails(InputError):
    """An InputError whose ``to_dict`` carries the check (the offending changes) for the caller."""

    def __init__(self, error: InputError, details: dict[str, Any]) -> None:
        super().__init__(error.message, code=error.code, location=error.location, hint=error.hint)
        self.details = details

    def to_dict(self) -> dict[str, object]:
        return {**super().to_dict(), **self.details}


@dataclass(frozen=True, slots=True)
class Repair:
    """What a hive reported about an error class it saw repeatedly (the approval's ``repair``).

    Where it happened is the approval's ``contract`` plus ``operation`` and/or ``subject``; the hive is the
    approval's ``proposer``. ``count`` adds up every report while the approval is pending.
    """

    code: str
    operation: str
    subject: str
    count: int
    #: The latest report's sample (at most 4 KiB, bytes as the hive sent them), b"" if none.
    sample: bytes
    last_seen: float

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data; the sample as text (UTF-8, undecodable bytes replaced), since people read it."""
        return {
            "code": self.code,
            "operation": self.operation,
            "subject": self.subject,
            "count": self.count,
            "sample": self.sample.decode("utf-8", "replace"),
            "last_seen": self.last_seen,
        }


@dataclass(frozen=True, slots=True)
class ToolCall:
    """What an agent asks to run (the approval's ``tool_call``, kind ``tool``): the exact arguments the model
    sent. The hive is the approval's ``proposer``; approving lets this one call run (subhive.agent)."""

    agent: str
    tool: str
    arguments: str
    turn: str
    call_id: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "tool": self.tool,
            "arguments": self.arguments,
            "turn": self.turn,
            "call_id": self.call_id,
        }


@dataclass(frozen=True, slots=True)
class Approval:
    """Something waiting for a human (or decided by one).

    ``kind`` ``"contract"``: a proposal (``id`` is the proposal's, ``p-N``); approving publishes its version.
    ``kind`` ``"repair"``: a hive's repair proposal (``id`` ``r-N``, ``version`` None, details in ``repair``);
    approving acknowledges it, rejecting dismisses it, and neither publishes anything.
    """

    id: str
    contract: str
    version: Version | None
    proposer: str
    check: dict[str, Any] | None
    created: float
    status: ApprovalStatus
    #: Why it waits: ``proposal.pending_breaking``, ``proposal.pending_consumers``, ``proposal.pending_provider``,
    #: or ``repair.proposed``.
    reason: str = ""
    message: str = ""
    hash: str = ""
    #: The approver's note or the rejection's reason, once decided.
    decision: str = ""
    decided: float | None = None
    kind: ApprovalKind = "contract"
    repair: Repair | None = None
    #: Kind ``tool`` (``t-N``): the call an agent waits to run; approving lets it run, rejecting refuses it.
    tool_call: ToolCall | None = None
    #: Who decided, as the caller named them (the HTTP API: its ``by``); empty when not said.
    decided_by: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "contract": self.contract,
            "version": _text(self.version),
            "proposer": self.proposer,
            "status": self.status,
            "reason": self.reason,
            "message": self.message,
            "hash": self.hash,
            "created": self.created,
            "decided": self.decided,
            "decision": self.decision,
            "decided_by": self.decided_by,
            "check": self.check,
            "repair": self.repair.to_dict() if self.repair is not None else None,
            "tool_call": self.tool_call.to_dict() if self.tool_call is not None else None,
        }


def _text(version: Version | None) -> str | None:
    return str(version) if version is not None else None


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where a provider serves the gRPC service of one major line of a contract.

    >>> Endpoint("inventory", 1, "127.0.0.1:40123", "db", "shop.inventory.v1.Inventory", 1.7e9).address
    '127.0.0.1:40123'
    """

    contract: str
    major: int
    address: str
    provider: str
    #: The contract's gRPC service (``grpc.service`` in its contract.yaml), for health checks and reflection.
    service: str
    registered: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "contract": self.contract,
            "major": self.major,
            "address": self.address,
            "provider": self.provider,
            "service": self.service,
            "registered": self.registered,
        }


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
        return {
            "version": str(self.version),
            "hash": self.hash,
            "provider": self.provider,
            "status": self.status,
            "consumers": dict(sorted(self.consumers.items())),
            "intact": self.intact,
        }


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
    #: The gRPC endpoints the hive registered, by contract and major.
    endpoints: list[Endpoint] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "parent": self.parent,
            "children": [c.to_dict() for c in self.children],
            "provides": list(self.provides),
            "consumes": [dict(c) for c in self.consumes],
            "endpoints": [e.to_dict() for e in self.endpoints],
        }
