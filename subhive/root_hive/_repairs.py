"""Repair proposals: a hive reports an error class it saw repeatedly, and a human decides what to do.

Pure rules: the engine turns a report into a ``repair_proposed`` record and applies it here, at commit and
at replay alike. See docs/root-hive.md#the-engine-rules-of-negotiation ("Repair proposals").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, cast

from ..errors import InputError
from ._model import Approval, Repair

__all__ = ["MESSAGE_MAX", "SAMPLE_MAX", "RepairKey", "RepairReport", "check_report", "repair_approval", "repair_key"]

#: Bytes a sample may hold: enough for a payload excerpt and a traceback's last lines.
SAMPLE_MAX = 4096
#: Characters of the short message (a human reads it in a list).
MESSAGE_MAX = 1024
COUNT_MAX = 1_000_000
REASON = "repair.proposed"
#: An error code (``handler.failed``) or an exception class (``KeyError``, ``json.JSONDecodeError``).
_CODE = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]{0,127}\Z")
_CONTRACT = re.compile(r"[a-z][a-z0-9_-]{0,62}\Z")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}\Z")
#: A NATS subject or a gRPC method path: printable, no whitespace.
_SUBJECT = re.compile(r"[!-~]{1,256}\Z")

RepairKey = tuple[str, str, str, str, str]


@dataclass(frozen=True, slots=True)
class RepairReport:
    """One checked report: who, what error, where, how often, and what it looked like."""

    hive: str
    code: str
    contract: str
    operation: str
    subject: str
    count: int
    message: str
    sample: bytes

    @property
    def key(self) -> RepairKey:
        """The same key while an approval is pending means the same repair: its count grows."""
        return (self.hive, self.code, self.contract, self.operation, self.subject)


def check_report(
    hive: str,
    *,
    code: object,
    message: object,
    contract: object = "",
    operation: object = "",
    subject: object = "",
    count: object = 1,
    sample: object = b"",
) -> RepairReport:
    """Check a repair report; raises InputError with a ``repair.*`` code naming what is wrong. A text
    ``sample`` is kept as its UTF-8 bytes."""
    if not isinstance(code, str) or not _CODE.match(code):
        raise InputError(
            f"{code!r} is not an error code or class",
            code="repair.code",
            hint="send the error's stable code (e.g. handler.failed) or its exception class",
        )
    _check_where(contract, operation, subject)
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= COUNT_MAX:
        raise InputError(
            f"{count!r} is not a count of occurrences",
            code="repair.count",
            hint=f"how many times the hive saw the error: 1 to {COUNT_MAX}",
        )
    if not isinstance(message, str) or not message.strip() or len(message) > MESSAGE_MAX:
        raise InputError(
            f"a repair needs a short message (1 to {MESSAGE_MAX} characters)",
            code="repair.message",
            hint="say what failed in one line; put details in the sample",
        )
    data = sample.encode("utf-8") if isinstance(sample, str) else sample
    if not isinstance(data, bytes | bytearray):
        raise InputError("the sample must be bytes or text", code="repair.sample")
    if len(data) > SAMPLE_MAX:
        raise InputError(
            f"the sample holds {len(data)} bytes; at most {SAMPLE_MAX} are kept",
            code="repair.sample_too_large",
            hint="cut it to its first 4 KiB before sending",
        )
    # _check_where refused anything but text for where it happened; mypy cannot see that.
    return RepairReport(
        hive, code, cast(str, contract), cast(str, operation), cast(str, subject), count, message.strip(), bytes(data)
    )


def _check_where(contract: object, operation: object, subject: object) -> None:
    if not isinstance(contract, str) or (contract and not _CONTRACT.match(contract)):
        raise InputError(
            f"{contract!r} is not a contract name", code="repair.contract", hint="[a-z][a-z0-9_-]*, as in contract.yaml"
        )
    if not isinstance(operation, str) or (operation and (not contract or not _NAME.match(operation))):
        raise InputError(
            f"{operation!r} is not an operation of a named contract",
            code="repair.operation",
            hint="name the contract too, and the operation or event as in its contract.yaml",
        )
    if not isinstance(subject, str) or (subject and not _SUBJECT.match(subject)):
        raise InputError(
            f"{subject!r} is not a subject",
            code="repair.subject",
            hint="the NATS subject (or gRPC method) where the error happened, without spaces",
        )
    if not contract and not subject:
        raise InputError(
            "a repair needs to say where the error happened",
            code="repair.where",
            hint="name the contract (and operation), the subject, or both",
        )


def repair_approval(data: dict[str, Any], sample: bytes, time: float, pending: Approval | None) -> Approval:
    """The approval a ``repair_proposed`` record leaves: a new one, or ``pending`` with its count grown."""
    if pending is not None and pending.repair is not None:
        repair = Repair(
            pending.repair.code, pending.repair.operation, pending.repair.subject, int(data["count"]), sample, time
        )
        return Approval(
            pending.id,
            pending.contract,
            None,
            pending.proposer,
            None,
            pending.created,
            "pending",
            REASON,
            data["message"],
            kind="repair",
            repair=repair,
        )
    repair = Repair(data["code"], data["operation"], data["subject"], int(data["count"]), sample, time)
    return Approval(
        data["approval_id"],
        data["contract"],
        None,
        data["hive"],
        None,
        time,
        "pending",
        REASON,
        data["message"],
        kind="repair",
        repair=repair,
    )


def repair_key(approval: Approval) -> RepairKey:
    """The :attr:`RepairReport.key` of a repair approval."""
    repair = approval.repair
    if repair is None:
        raise ValueError(f"approval {approval.id} is not a repair")
    return (approval.proposer, repair.code, approval.contract, repair.operation, repair.subject)
