"""Routes: approvals of every kind (contract versions, repairs, agents' tool calls and diffs), approve, reject."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from fastapi import APIRouter, Body
from pydantic import BaseModel, ConfigDict, Field

from ._deps import PAGE_DEFAULT, PREFIX, Admin, KeyCursor, Limit, Root, page_after
from ._models import ApprovalOut, OutcomeOut, Page
from ._openapi import errors

if TYPE_CHECKING:
    from ..root_hive import Approval

__all__ = ["router"]

router = APIRouter(prefix=PREFIX, tags=["approvals"])


class DecisionIn(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a misspelt "nite" must not lose the note silently

    note: str = Field(default="", max_length=4096, description="Why it is approved (kept with the decision).")
    by: str = Field(default="", max_length=128, description="Who approves; recorded with the decision.")


class RejectIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str = Field(
        pattern=r"\S", max_length=4096, description="What the proposer should change (not only spaces)."
    )
    by: str = Field(default="", max_length=128, description="Who rejects; recorded with the decision.")


@router.get("/approvals", responses=errors(422))
async def list_approvals(
    backend: Root,
    status: Literal["pending", "approved", "rejected", "all"] = "pending",
    kind: Literal["contract", "repair", "tool", "all"] = "all",
    limit: Limit = PAGE_DEFAULT,
    cursor: KeyCursor = None,
) -> Page[ApprovalOut]:
    """Approvals, oldest first: contract versions, repairs, agents' tool calls (a file diff is one). The pages
    stay whole while approvals are decided or proposed between them."""
    found = await backend.server.call(lambda r: r.approvals(status, kind=kind))
    items, next_cursor = page_after(found, _oldest_first, limit, cursor)
    return Page[ApprovalOut](items=[ApprovalOut.model_validate(a.to_dict()) for a in items], next_cursor=next_cursor)


def _oldest_first(approval: Approval) -> str:
    """Sorts by creation (microseconds, zero-padded), then id: the page key of an approval."""
    return f"{round(approval.created * 1_000_000):020d}~{approval.id}"


@router.get("/approvals/{approval_id}", responses=errors(404))
async def get_approval(backend: Root, approval_id: str) -> ApprovalOut:
    """One approval, with the check that explains it (contract), the report (repair) or the call (tool)."""
    approval = await backend.server.call(lambda r: r.approval(approval_id))
    return ApprovalOut.model_validate(approval.to_dict())


@router.post("/approvals/{approval_id}/approve", responses=errors(401, 403, 404, 409, 422))
async def approve(
    backend: Root, approval_id: str, token: Admin, decision: Annotated[DecisionIn | None, Body()] = None
) -> OutcomeOut:
    """Approve: a contract version is published (beside the old major); a repair or a tool call may go on."""
    decision = decision or DecisionIn()
    note, by = decision.note, decision.by or "admin"
    outcome = await backend.server.call(lambda r: r.approve(approval_id, admin_token=token, note=note, by=by))
    error = outcome.error()
    if error is not None:
        raise error
    return OutcomeOut.model_validate(outcome.to_dict())


@router.post("/approvals/{approval_id}/reject", responses=errors(401, 403, 404, 409, 422))
async def reject(backend: Root, approval_id: str, token: Admin, decision: Annotated[RejectIn, Body()]) -> ApprovalOut:
    """Reject, with the reason the proposer is shown."""
    reason, by = decision.reason, decision.by or "admin"
    approval = await backend.server.call(lambda r: r.reject(approval_id, admin_token=token, reason=reason, by=by))
    return ApprovalOut.model_validate(approval.to_dict())
