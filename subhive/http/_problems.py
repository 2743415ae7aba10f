"""One error shape for every HTTP answer that is not a success: RFC 9457 problem details (``application/problem+json``)
carrying the project's stable error code. See docs/http.md#errors and docs/decisions/0075-http-problem-details.md.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..errors import Location, SubhiveError
from ..root_hive import Conflict, NotFound, PermissionDenied, Unauthenticated

__all__ = [
    "PROBLEM_JSON",
    "ApiProblem",
    "ProblemDetails",
    "ProblemItem",
    "install_handlers",
    "problem_response",
    "status_of",
]

log = logging.getLogger("subhive.http")

PROBLEM_JSON = "application/problem+json"

#: HTTP status of each error class; the first match wins, so subclasses come first. Other errors: 400 for bad
#: input (exit code 2), 409 for a check that said no (exit code 1).
_STATUS_OF: tuple[tuple[type[SubhiveError], int], ...] = (
    (Unauthenticated, 401),
    (PermissionDenied, 403),
    (NotFound, 404),
    (Conflict, 409),
)
#: Codes that say something the API needs is not there right now (the bus is down, the tree is not up).
_UNAVAILABLE = frozenset({"bus.unavailable", "board.not_running", "deadletter.not_running"})
#: Codes that say the tree's state refuses a well-formed request (the provider does not listen, two hives have
#: that letter number, the lock does not let that letter go back): 409, not 400 (the request is valid) nor 5xx
#: (the API is not broken).
_NOT_NOW = frozenset({"bus.not_served", "bus.timeout", "deadletter.ambiguous", "deadletter.replay_refused"})
#: Codes of errors that name something missing, whatever their class.
_NOT_FOUND = frozenset(
    {"deadletter.unknown", "board.unknown_hive", "contract.unknown", "contract.unknown_version", "turn.unknown"}
)


class ProblemItem(BaseModel):
    """One finding behind the error: its code, what is wrong and where (file, line, JSON pointer, subject)."""

    code: str
    message: str
    file: str | None = None
    line: int | None = None
    pointer: str | None = None
    subject: str | None = None
    hint: str | None = None


class ProblemDetails(BaseModel):
    """RFC 9457 problem details; ``code`` is the stable subhive error code (``type`` is its URN)."""

    type: str = Field(description="urn:subhive:error:<code>")
    title: str = Field(description="The code's family, e.g. 'approval' for approval.unknown.")
    status: int = Field(ge=400, le=599)
    detail: str
    code: str = Field(description="The stable error code (the same the CLI and gRPC report).")
    hint: str | None = None
    problems: list[ProblemItem] = Field(default_factory=list)
    instance: str | None = Field(default=None, description="The request path.")


class ApiProblem(SubhiveError):
    """An error the HTTP layer itself raises, with the status it answers with."""

    def __init__(self, status: int, message: str, *, code: str, hint: str | None = None, pointer: str | None = None):
        super().__init__(message, code=code, hint=hint, location=Location(pointer=pointer) if pointer else None)
        self.status = status


def status_of(error: SubhiveError) -> int:
    if isinstance(error, ApiProblem):
        return error.status
    if error.code in _UNAVAILABLE:
        return 503
    if error.code in _NOT_FOUND:
        return 404
    if error.code in _NOT_NOW:
        return 409
    for cls, status in _STATUS_OF:
        if isinstance(error, cls):
            return status
    return 400 if error.exit_code == 2 else 409


def problem_response(error: SubhiveError, request: Request | None = None) -> JSONResponse:
    status = status_of(error)
    body = ProblemDetails(
        type=f"urn:subhive:error:{error.code}",
        title=error.code.split(".", 1)[0],
        status=status,
        detail=error.message,
        code=error.code,
        hint=error.hint,
        problems=[ProblemItem.model_validate(p.to_dict()) for p in error.problems],
        instance=request.url.path if request is not None else None,
    )
    headers = {"WWW-Authenticate": 'Bearer realm="subhive"'} if status == 401 else None
    return JSONResponse(
        body.model_dump(mode="json", exclude_none=True), status_code=status, media_type=PROBLEM_JSON, headers=headers
    )


def _validation_items(errors: Any) -> list[ProblemItem]:
    items = []
    for error in errors:
        where = [str(part) for part in error.get("loc", ())]
        pointer = "/" + "/".join(where[1:]) if len(where) > 1 else "/"
        items.append(
            ProblemItem(
                code=f"http.invalid_{where[0] if where else 'request'}",
                message=str(error.get("msg", "invalid")),
                pointer=pointer,
                hint=f"{where[0] if where else 'request'} {pointer}: {error.get('type', '')}",
            )
        )
    return items


def install_handlers(app: Any) -> None:
    """Every error leaves as problem details: subhive errors, request validation, unknown routes, and bugs."""

    async def subhive_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, SubhiveError)
        return problem_response(exc, request)

    async def invalid_request(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        items = _validation_items(exc.errors())
        first = items[0] if items else ProblemItem(code="http.invalid_request", message="invalid request")
        hint = "see the operation's parameters in /openapi.json"
        media = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if any(i.code == "http.invalid_body" for i in items) and media != "application/json":
            # curl -d sends a form: the JSON text never reaches the body's model
            hint = f"send the body as JSON, Content-Type: application/json (this one: {media or 'none'})"
        error = ApiProblem(
            422,
            f"the request is not valid: {first.message} at {first.pointer}"
            if len(items) == 1
            else f"{len(items)} problems in the request, first: {first.message} at {first.pointer}",
            code="http.invalid_request",
            hint=hint,
        )
        response = problem_response(error, request)
        body = ProblemDetails.model_validate_json(bytes(response.body))
        body.problems = items
        return JSONResponse(body.model_dump(mode="json", exclude_none=True), status_code=422, media_type=PROBLEM_JSON)

    async def http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        if exc.status_code == 400:  # FastAPI could not read the body at all: one more invalid request (422)
            error = ApiProblem(
                422, f"the request is not valid: {exc.detail}", code="http.invalid_request", hint="send a JSON body"
            )
            return problem_response(error, request)
        code = {404: "http.not_found", 405: "http.method_not_allowed"}.get(exc.status_code, "http.error")
        hint = "the operations are listed in /openapi.json" if exc.status_code in (404, 405) else None
        response = problem_response(ApiProblem(exc.status_code, str(exc.detail), code=code, hint=hint), request)
        if exc.headers:
            response.headers.update(exc.headers)
        return response

    async def internal(request: Request, exc: Exception) -> JSONResponse:
        log.error("internal error serving %s %s", request.method, request.url.path, exc_info=exc)
        return problem_response(
            ApiProblem(500, "internal error in the root's HTTP API; see the root's log", code="http.internal"), request
        )

    app.add_exception_handler(SubhiveError, subhive_error)
    app.add_exception_handler(RequestValidationError, invalid_request)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(Exception, internal)
