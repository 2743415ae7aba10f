"""What the HTTP API answers, as pydantic models: they are the OpenAPI document's schemas."""

from __future__ import annotations

from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, Field

__all__ = [
    "ApprovalOut",
    "BoardEntry",
    "BoardHistory",
    "BoardOut",
    "BrokenEntry",
    "ContractOut",
    "DeadLetterDetail",
    "DeadLetterOut",
    "DiffOut",
    "EndpointOut",
    "FrameOut",
    "HealthOut",
    "HiveNode",
    "NeedOut",
    "OutcomeOut",
    "Page",
    "ReplayOut",
    "ReplayRecord",
    "TreeOut",
    "TurnOut",
    "VersionOut",
]

T = TypeVar("T")


class Page(BaseModel, Generic[T]):
    """One page of a list: pass ``next_cursor`` as ``cursor`` for the next one (null: this was the last)."""

    items: list[T]
    next_cursor: str | None = None


class HealthOut(BaseModel):
    status: Literal["ok"]
    last_seq: int = Field(description="The newest frame's seq: resume the event stream after it.")
    up: bool = Field(description="Whether `subhive up` runs the tree (health, boards and dead letters need it).")


class EndpointOut(BaseModel):
    contract: str
    major: int
    address: str
    provider: str
    service: str
    registered: float


class NeedOut(BaseModel):
    contract: str
    versions: str
    satisfied_by: str | None = None
    announcement_id: str | None = None


class HiveNode(BaseModel):
    name: str
    kind: str
    parent: str
    provides: list[str]
    consumes: list[NeedOut]
    endpoints: list[EndpointOut]
    health: str | None = Field(
        description="ready, starting, unresponsive, restarting, down, stopped... null when the tree is not up."
    )
    runtime: dict[str, Any] | None = Field(description="What `subhive status` shows of the running hive, or null.")
    children: list[HiveNode]


class TreeOut(BaseModel):
    up: bool
    hives: list[HiveNode]


class VersionOut(BaseModel):
    version: str
    hash: str
    provider: str
    status: Literal["active", "superseded", "retired"]
    consumers: dict[str, str]
    intact: bool


class ContractOut(BaseModel):
    name: str
    provider: str
    newest: str
    versions: int = Field(description="How many accepted versions (list them with /versions).")


class DiffOut(BaseModel):
    """``subhive contract diff``'s answer: each part's changes, in the direction the part needs."""

    contract: str
    old_version: str
    new_version: str
    compatible: bool
    required_bump: str
    actual_bump: str
    semver_ok: bool
    suggested_version: str
    offending: list[dict[str, Any]]
    parts: list[dict[str, Any]]


class ApprovalOut(BaseModel):
    id: str
    kind: Literal["contract", "repair", "tool"]
    contract: str
    version: str | None
    proposer: str
    status: Literal["pending", "approved", "rejected"]
    reason: str
    message: str
    hash: str
    created: float
    decided: float | None
    decision: str = Field(description="The approver's note or the rejection's reason.")
    decided_by: str = Field(description="Who decided, as they named themselves (`by`).")
    check: dict[str, Any] | None
    repair: dict[str, Any] | None
    tool_call: dict[str, Any] | None


class OutcomeOut(BaseModel):
    id: str
    kind: Literal["contract", "repair", "tool"]
    contract: str
    version: str | None
    status: Literal["accepted", "pending", "rejected"]
    code: str
    message: str
    hash: str
    awarded: list[str]
    problems: list[dict[str, Any]]
    check: dict[str, Any] | None


class BoardEntry(BaseModel):
    key: str
    value: Any
    revision: int
    writer: str
    depth: int
    time: float | None


class BrokenEntry(BaseModel):
    key: str
    revision: int
    writer: str | None
    code: str
    reason: str


class BoardOut(BaseModel):
    hive: str
    entries: Page[BoardEntry]
    broken: list[BrokenEntry]


class BoardHistory(BaseModel):
    hive: str
    key: str
    revisions: Page[BoardEntry]
    broken: list[BrokenEntry]


class ReplayRecord(BaseModel):
    time: str | None
    by: str
    result: str


class DeadLetterOut(BaseModel):
    id: str
    seq: int
    stream: str
    hive: str
    subject: str
    code: str
    message: str
    pointer: str
    keyword: str
    headers: dict[str, str]
    size: int
    time: str | None
    msg_id: str
    replayed: bool
    replays: list[ReplayRecord]


class DeadLetterDetail(DeadLetterOut):
    data_base64: str = Field(description="The refused message's exact bytes (also raw at /payload).")
    data_text: str = Field(description="The bytes as UTF-8, undecodable bytes replaced: for reading only.")


class ReplayOut(BaseModel):
    id: str
    result: str
    by: str


class TurnOut(BaseModel):
    hive: str
    agent: str
    turn: str
    steps: int
    first_seq: int
    last_seq: int
    started: float
    last_kind: str


class FrameOut(BaseModel):
    seq: int
    kind: str
    time: float
    data: dict[str, Any]
