"""What a human decides: contract versions held for approval, and repairs hives report (kind ``repair``).

Approving a contract publishes it through ``Verdicts._accept``; approving a repair only records the decision.
"""

from __future__ import annotations

import base64
import functools
import shutil
from dataclasses import replace
from typing import Any

from ..contract import load_contract
from ..errors import InputError, SubhiveError
from ..semver import Version
from ._errors import Conflict, NotFound
from ._lock import directory_files
from ._log import Frame
from ._model import (
    Approval,
    ProposalOutcome,
)
from ._repairs import check_report, repair_approval, repair_key
from ._state import Proposal, Record, RootState, batched

__all__ = ["Approvals"]

#: A repair's count is a uint32 on the wire; repeats stop adding up there rather than wrap.
COUNT_CAP = 2**31 - 1


class Approvals(RootState):
    """Approvals and repair reports."""

    def approvals(self, status: str | None = "pending", *, kind: str | None = None) -> list[Approval]:
        """Approvals with ``status`` (``pending``, ``approved``, ``rejected``; ``all`` or None for all) and
        ``kind`` (``contract``, ``repair``; ``all`` or None for both), oldest first; raises :class:`InputError`
        for any other status or kind."""
        if status == "all":
            status = None
        if status is not None and status not in ("pending", "approved", "rejected"):
            raise InputError(
                f"no approval status {status!r}",
                code="approval.unknown_status",
                hint="use pending, approved, rejected or all",
            )
        if kind == "all":
            kind = None
        if kind is not None and kind not in ("contract", "repair", "tool"):
            raise InputError(
                f"no approval kind {kind!r}", code="approval.unknown_kind", hint="use contract, repair, tool or all"
            )
        return [
            a
            for a in self._approvals.values()
            if (status is None or a.status == status) and (kind is None or a.kind == kind)
        ]

    def approval(self, approval_id: str) -> Approval:
        """One approval by id; raises :class:`NotFound`."""
        try:
            return self._approvals[approval_id]
        except KeyError:
            raise NotFound(
                f"no approval {approval_id!r}", code="approval.unknown", hint="list them with `subhive approvals list`"
            ) from None

    def pending_files(self, approval_id: str) -> dict[str, bytes]:
        """The proposed files of a pending approval (for ``approvals show``)."""
        approval = self._pending(approval_id)
        if approval.kind != "contract":
            raise InputError(
                f"approval {approval_id} is a {approval.kind}: it has no files",
                code="approval.no_files",
                hint="its details are in the approval itself",
            )
        return directory_files(self.state_dir / "pending" / approval.id)

    def _pending(self, approval_id: str) -> Approval:
        approval = self.approval(approval_id)
        if approval.status != "pending":
            raise Conflict(f"approval {approval_id} was already {approval.status}", code="approval.decided")
        return approval

    @batched
    def approve(self, approval_id: str, *, admin_token: str, note: str = "", by: str = "") -> ProposalOutcome:
        """A human approves: the version is published (beside the old major) and its frames go out.

        ``by`` names the person (recorded with the decision; the HTTP API passes who called it).

        >>> root.approve("p-7", admin_token=root.admin_token()).status  # doctest: +SKIP
        'accepted'
        """
        self._require_admin(admin_token)
        approval = self._pending(approval_id)
        if approval.kind != "contract" or approval.version is None:  # a repair or a tool call: nothing to publish
            return self._acknowledge_repair(approval, note, by=by)
        name, version = approval.contract, approval.version
        accepted = self._lock.get(name, version)
        if accepted is not None and accepted.hash != approval.hash:
            raise Conflict(
                f"{name} {version} was accepted meanwhile with other content; reject this approval",
                code="proposal.immutable",
            )
        source = self.state_dir / "pending" / approval_id
        if not source.is_dir():  # a crash after publishing and before the log said so
            source = self.workspace_root / "contracts" / name / str(version)
        try:
            contract = load_contract(source)
        except SubhiveError as exc:
            raise Conflict(
                f"the files of approval {approval_id} are gone or damaged: {exc.message}", code="approval.files_lost"
            ) from None
        decided: list[Record] = [
            (
                "approval_decided",
                {
                    "approval_id": approval_id,
                    "kind": "contract",
                    "contract": name,
                    "version": str(version),
                    "status": "approved",
                    "decision": note,
                    **_who(by),
                },
                {},
            )
        ]
        announcement = next(
            (
                f.data.get("announcement_id")
                for f in self._log_.frames
                if f.kind == "pending_approval" and f.data["approval_id"] == approval_id
            ),
            None,
        )
        proposal = Proposal(approval.proposer, approval_id, approval.hash, announcement, name, version)
        outcome = self._accept(proposal, contract, None, records_before=decided)
        outcome = replace(outcome, check=approval.check)
        self._after_commit.append(
            functools.partial(shutil.rmtree, self.state_dir / "pending" / approval_id, ignore_errors=True)
        )
        return outcome

    @batched
    def reject(self, approval_id: str, *, admin_token: str, reason: str, by: str = "") -> Approval:
        """A human rejects: nothing is published and the proposer sees the reason in the frame."""
        self._require_admin(admin_token)
        approval = self._pending(approval_id)
        if not isinstance(reason, str) or not reason.strip():
            raise InputError(
                "a rejection needs a reason",
                code="approval.reason_required",
                hint="say what the provider should change",
            )
        self._commit(
            [
                (
                    "approval_decided",
                    {
                        "approval_id": approval_id,
                        "kind": approval.kind,
                        "contract": approval.contract,
                        "version": str(approval.version) if approval.version else None,
                        "status": "rejected",
                        "decision": reason,
                        **_who(by),
                    },
                    {},
                )
            ]
        )
        if approval.kind == "contract":
            # Only once the decision is durable: until then a crash must find the files of a pending approval.
            self._after_commit.append(
                functools.partial(shutil.rmtree, self.state_dir / "pending" / approval_id, ignore_errors=True)
            )
        return self._approvals[approval_id]

    @batched
    def propose_repair(
        self,
        hive: str,
        *,
        code: str,
        message: str,
        contract: str = "",
        operation: str = "",
        subject: str = "",
        count: int = 1,
        sample: bytes | str = b"",
    ) -> Approval:
        """``hive`` reports an error class it saw ``count`` times; a human decides what to do about it.

        >>> root.propose_repair("backend", code="handler.failed", message="KeyError: 'sku'",
        ...                     contract="orders", operation="place_order", count=2).id  # doctest: +SKIP
        'r-1'

        The report becomes a pending approval of kind ``repair`` (``r-N``), or, when one about the same
        (hive, code, contract, operation, subject) is pending, adds ``count`` to it (its message and sample
        become the latest). ``approve`` acknowledges it and ``reject`` dismisses it; neither publishes
        anything. Raises :class:`NotFound` for an unknown hive and :class:`InputError` (``repair.*``) for a
        malformed report (a sample over 4 KiB is refused, not cut: the hive cuts it; text is kept as UTF-8).
        """
        self._known_hive(hive)
        report = check_report(
            hive,
            code=code,
            message=message,
            contract=contract,
            operation=operation,
            subject=subject,
            count=count,
            sample=sample,
        )
        pending_id = self._open_repairs.get(report.key)
        pending = self._approvals.get(pending_id) if pending_id is not None else None
        if pending is not None and pending.repair is not None:
            approval_id, total = pending.id, min(pending.repair.count + report.count, COUNT_CAP)
        else:
            approval_id, total = f"r-{self._repairs + 1}", report.count
        self._commit(
            [
                (
                    "repair_proposed",
                    {
                        "approval_id": approval_id,
                        "hive": hive,
                        "code": report.code,
                        "contract": report.contract,
                        "operation": report.operation,
                        "subject": report.subject,
                        "count": total,
                        "added": report.count,
                        "repeat": pending is not None,
                        "message": report.message,
                        "sample_bytes": len(report.sample),
                    },
                    {"sample": base64.b64encode(report.sample).decode("ascii")},
                )
            ]
        )
        return self._approvals[approval_id]

    def _acknowledge_repair(self, approval: Approval, note: str, *, by: str = "") -> ProposalOutcome:
        """Approving a repair records that a human accepted it; the repair itself is the hive's work."""
        self._commit(
            [
                (
                    "approval_decided",
                    {
                        "approval_id": approval.id,
                        "kind": approval.kind,
                        "contract": approval.contract,
                        "version": None,
                        "status": "approved",
                        "decision": note,
                        **_who(by),
                    },
                    {},
                )
            ]
        )
        if approval.tool_call is not None:  # the agent that asked runs the call once it reads the decision
            call = approval.tool_call
            return ProposalOutcome(
                approval.id,
                approval.contract,
                None,
                "accepted",
                None,
                (),
                f"tool call {approval.id} of {approval.proposer} ({call.agent}: {call.tool}) approved",
                "tool_call.approved",
                kind="tool",
            )
        repair = approval.repair
        what = f"{repair.code} x{repair.count}" if repair is not None else "repair"
        return ProposalOutcome(
            approval.id,
            approval.contract,
            None,
            "accepted",
            None,
            (),
            f"repair {approval.id} from {approval.proposer} ({what}) accepted",
            "repair.accepted",
            kind="repair",
        )

    def _apply_pending(self, data: dict[str, Any], frame: Frame, replaying: bool) -> None:
        self._approvals[data["approval_id"]] = Approval(
            data["approval_id"],
            data["contract"],
            Version.parse(data["version"]),
            data["proposer"],
            data["check"],
            frame.time,
            "pending",
            data["reason"],
            data["message"],
            data["hash"],
        )

    def _apply_decided(self, data: dict[str, Any], frame: Frame, replaying: bool) -> None:
        approval = self._approvals[data["approval_id"]]
        self._approvals[approval.id] = replace(
            approval,
            status=data["status"],
            decision=data["decision"],
            decided=frame.time,
            decided_by=data.get("by", ""),
        )
        if approval.repair is not None:
            self._open_repairs.pop(repair_key(approval), None)

    def _apply_repair(self, data: dict[str, Any], frame: Frame, replaying: bool) -> None:
        pending = self._approvals.get(data["approval_id"])
        approval = repair_approval(data, base64.b64decode(frame.private.get("sample", "")), frame.time, pending)
        self._approvals[approval.id] = approval
        self._open_repairs[repair_key(approval)] = approval.id
        number = approval.id.rpartition("-")[2]
        if number.isdigit():
            self._repairs = max(self._repairs, int(number))


def _who(by: str) -> dict[str, str]:
    """The decider's name for the record, when one was given (records before 1.5 have none)."""
    if not isinstance(by, str) or len(by) > 128:
        raise InputError("the decider's name must be text of at most 128 characters", code="approval.by")
    return {"by": by} if by else {}
