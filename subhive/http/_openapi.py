"""The OpenAPI document, as FastAPI generates it from the routes, with every error answer documented as the one
problem-details shape (``application/problem+json``) and no other."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from ._problems import PROBLEM_JSON, ProblemDetails, ProblemItem

__all__ = ["errors", "problem_openapi"]

_REF = {"$ref": "#/components/schemas/ProblemDetails"}
_WHY = {
    400: "Bad input: the stable code says what (e.g. a malformed dead-letter id).",
    401: "No token, or not a known one (auth.missing, auth.unauthenticated).",
    403: "A hive's token where the admin token is needed (auth.not_admin).",
    404: "Nothing has that name or id.",
    409: "It clashes with the root's state (e.g. approval.decided, frames.token_ahead).",
    422: "The request does not match this document (http.invalid_request, each problem with its pointer).",
    503: "The tree is not up: boards and dead letters live in its NATS server.",
}


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The error answers an operation documents (each one problem details); 500 is never documented."""
    return {s: {"description": _WHY[s], "content": {PROBLEM_JSON: {"schema": _REF}}} for s in statuses}


def problem_openapi(app: FastAPI) -> None:
    """Generate the document once: FastAPI's, with error answers rewritten to problem details only."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        doc = get_openapi(
            title=app.title, version=app.version, summary=app.summary, routes=app.routes, openapi_version="3.1.0"
        )
        schemas = doc.setdefault("components", {}).setdefault("schemas", {})
        schemas["ProblemDetails"] = ProblemDetails.model_json_schema(ref_template="#/components/schemas/{model}")
        defs = schemas["ProblemDetails"].pop("$defs", {})
        schemas.update(defs)
        schemas.setdefault("ProblemItem", ProblemItem.model_json_schema())
        for name in ("HTTPValidationError", "ValidationError"):
            schemas.pop(name, None)
        for path in doc.get("paths", {}).values():
            for operation in path.values():
                responses = operation.get("responses", {})
                for status, response in list(responses.items()):
                    if not status.isdigit() or int(status) < 400:
                        continue
                    schema = response.get("content", {}).get(PROBLEM_JSON, {}).get("schema")
                    if schema != _REF:  # FastAPI's own 422 for a route that cannot fail validation
                        del responses[status]
                        continue
                    response["content"] = {PROBLEM_JSON: {"schema": _REF}}
        app.openapi_schema = doc
        return doc

    app.openapi = openapi  # type: ignore[method-assign]
