"""What travels besides the payload: header names, error replies, and the errors a bus client raises.
The headers and the error reply body are in docs/bus.md#subjects-and-headers and #validation-refusals-dead-letters.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import Any

from ..errors import Location, SubhiveError

__all__ = [
    "H_CONTRACT",
    "H_ERROR",
    "H_MSG_ID",
    "H_SENDER",
    "H_TRACE",
    "BusError",
    "PermissionViolation",
    "RemoteError",
    "WireError",
    "message_id",
]

H_CONTRACT = "Subhive-Contract"
H_SENDER = "Subhive-Sender"
H_MSG_ID = "Nats-Msg-Id"
H_TRACE = "traceparent"
H_ERROR = "Subhive-Error"
_MAX_TEXT = 2000  # characters of an error's message (or pointer) kept in an error reply


def message_id() -> str:
    return secrets.token_hex(16)


class BusError(SubhiveError):
    """A message could not be sent, served or delivered; ``location.subject`` names the subject."""

    default_code = "bus.error"


class PermissionViolation(BusError):
    """The NATS server refused a publish or subscribe: the hive's credentials do not allow that subject."""

    default_code = "bus.permission_denied"


class RemoteError(BusError):
    """The other side refused the request: ``code`` is its stable code, ``pointer``/``keyword`` say where."""

    default_code = "bus.remote_error"

    def __init__(self, wire: WireError) -> None:
        super().__init__(
            wire.message,
            code=wire.code,
            location=Location(pointer=wire.pointer or None, subject=wire.subject or None),
            hint=f"the provider kept the request as dead letter {wire.dead_letter} (subhive deadletters list)"
            if wire.dead_letter
            else None,
        )
        self.pointer = wire.pointer
        self.keyword = wire.keyword
        self.dead_letter = wire.dead_letter


@dataclass(frozen=True)
class WireError:
    """A structured refusal, as sent in an error reply and kept with a dead letter."""

    code: str
    message: str
    pointer: str = ""
    keyword: str = ""
    subject: str = ""
    dead_letter: str = ""

    def __post_init__(self) -> None:
        # Texts quoting a bad payload may hold lone surrogates: kept readable, and encodable as UTF-8 headers;
        # and a validator's message may quote a huge payload: an error reply stays small.
        for name in ("message", "pointer", "keyword", "subject"):
            value = getattr(self, name)
            if len(value) > _MAX_TEXT:
                value = value[: _MAX_TEXT - 3] + "..."
                object.__setattr__(self, name, value)
            if not value.isascii():
                object.__setattr__(self, name, value.encode("utf-8", "backslashreplace").decode("utf-8"))

    def to_bytes(self) -> bytes:
        # ensure_ascii: a message quoting a bad payload (a lone surrogate, say) still encodes.
        return json.dumps(
            {
                "code": self.code,
                "message": self.message,
                "pointer": self.pointer,
                "keyword": self.keyword,
                "subject": self.subject,
                "dead_letter": self.dead_letter,
            }
        ).encode()

    @classmethod
    def from_bytes(cls, data: bytes, *, code: str, subject: str) -> WireError:
        """Read an error reply; a body that is not one still gives an error with the header's code."""
        try:
            body: Any = json.loads(data)
        except (ValueError, RecursionError):  # any bytes at all: this must not raise
            body = None
        if not isinstance(body, dict):
            return cls(code, data[:200].decode("utf-8", "replace") or "refused", subject=subject)
        return cls(
            code=str(body.get("code") or code),
            message=str(body.get("message") or "refused"),
            pointer=str(body.get("pointer") or ""),
            keyword=str(body.get("keyword") or ""),
            subject=str(body.get("subject") or subject),
            dead_letter=str(body.get("dead_letter") or ""),
        )
