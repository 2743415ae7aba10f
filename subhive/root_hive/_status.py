"""subhive errors on gRPC, both ways: the status an error leaves as, and the error a status comes back as.

One table for the root's service and every provider ``subhive.rpc`` serves; the message is the error's
``to_dict()`` as JSON, never a traceback. See docs/root-hive.md#the-grpc-service.
"""

from __future__ import annotations

import json
import logging
from typing import Any, NoReturn

import grpc

from ..errors import ContractInvalid, InputError, Location, Problem, SubhiveError
from ._errors import Conflict, NotFound, PermissionDenied, Unauthenticated

__all__ = ["ERROR_OF", "STATUS_OF", "abort_with", "error_details", "error_from_details", "status_of"]

#: Error class -> gRPC status code. The first matching class wins, so subclasses come first.
STATUS_OF: tuple[tuple[type[SubhiveError], grpc.StatusCode], ...] = (
    (Unauthenticated, grpc.StatusCode.UNAUTHENTICATED),
    (PermissionDenied, grpc.StatusCode.PERMISSION_DENIED),
    (NotFound, grpc.StatusCode.NOT_FOUND),
    (Conflict, grpc.StatusCode.FAILED_PRECONDITION),
    (InputError, grpc.StatusCode.INVALID_ARGUMENT),
)

#: gRPC status -> the error class a caller gets back (the reverse of :data:`STATUS_OF`).
ERROR_OF: dict[grpc.StatusCode, type[SubhiveError]] = {code: cls for cls, code in STATUS_OF}


def status_of(error: SubhiveError) -> grpc.StatusCode:
    """The status ``error`` leaves as: by class (:data:`STATUS_OF`), else bad input (exit code 2) is
    INVALID_ARGUMENT and a check that said no is FAILED_PRECONDITION."""
    for cls, code in STATUS_OF:
        if isinstance(error, cls):
            return code
    return grpc.StatusCode.INVALID_ARGUMENT if error.exit_code == 2 else grpc.StatusCode.FAILED_PRECONDITION


def error_details(error: SubhiveError) -> str:
    """The status message for ``error``: its ``to_dict()`` as compact JSON (no repr, no traceback)."""
    return json.dumps(error.to_dict(), separators=(",", ":"), default=str)


async def abort_with(
    context: grpc.aio.ServicerContext[Any, Any], error: Exception, *, server: str, log: logging.Logger
) -> NoReturn:
    """End the call with the status for ``error``; an error that is no SubhiveError is a bug: it is logged
    here with its traceback and leaves as INTERNAL saying only where to look."""
    if isinstance(error, SubhiveError):
        await context.abort(status_of(error), error_details(error))
    log.error("%s: internal error", server, exc_info=error)
    await context.abort(
        grpc.StatusCode.INTERNAL,
        json.dumps({"error": "internal", "message": f"internal error in {server}; see its log"}),
    )


def error_from_details(code: grpc.StatusCode, details: str | None) -> SubhiveError | None:
    """The error a status stands for, rebuilt from the JSON message; None when it is not one of ours
    (a status of grpc itself, such as UNAVAILABLE, or a message that is not our JSON)."""
    cls = ERROR_OF.get(code)
    try:
        body = json.loads(details or "")
    except ValueError:
        return None
    if cls is None or not isinstance(body, dict):
        return None
    return _rebuild(cls, body)


class _RemoteInputError(InputError):
    """An InputError from a server that keeps the details it sent (the check, the offending changes)."""

    def __init__(
        self, message: str, *, code: str | None, location: Location | None, hint: str | None, details: dict[str, Any]
    ) -> None:
        super().__init__(message, code=code, location=location, hint=hint)
        self.details = details

    def to_dict(self) -> dict[str, object]:
        return {**super().to_dict(), **self.details}


def _rebuild(cls: type[SubhiveError], body: dict[str, Any]) -> SubhiveError:
    problems = tuple(_problem(p) for p in body.get("problems", ()) if isinstance(p, dict))
    message = str(body.get("message", ""))
    code = str(body.get("error", "")) or None
    location = problems[0].location if problems else None
    hint = problems[0].hint if problems else None
    extra = {k: v for k, v in body.items() if k not in ("error", "message", "problems")}
    if cls is InputError and len(problems) > 1:
        return ContractInvalid(problems, summary=message)
    if cls is InputError:
        return _RemoteInputError(message, code=code, location=location, hint=hint, details=extra)
    if cls is Conflict:
        return Conflict(message, code=code, location=location, hint=hint, problems=problems, details=extra)
    return cls(message, code=code, location=location, hint=hint)


def _problem(raw: dict[str, Any]) -> Problem:
    line = raw.get("line")
    return Problem(
        str(raw.get("code", "")),
        str(raw.get("message", "")),
        Location(
            file=raw.get("file"),
            line=line if isinstance(line, int) else None,
            pointer=raw.get("pointer"),
            subject=raw.get("subject"),
        ),
        raw.get("hint"),
    )
