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
    401: "No token, or not a known one (auth.missing, auth.unauthenticated).",
    403: "A hive's token where the admin token is needed (auth.not_admin).",
    404: "Nothing has that name or id.",
    409: "It clashes with the root's state (e.g. approval.decided, frames.token_ahead).",
    422: "The request does not match this document (http.invalid_request, each problem with its pointer).",
    503: "The tree is not up: boards and dead letters live in its NATS server.",
}


#: OpenAPI links: where a list's first item leads (for clients, and for schemathesis's stateful runs).
#: (source path, method) -> [(link name, target operationId's path and method, {parameter: expression})].
_FIRST = "$response.body#/items/0/"
_LINKS: dict[tuple[str, str], list[tuple[str, str, str, dict[str, str]]]] = {
    ("/api/v1/approvals", "get"): [
        ("GetApproval", "/api/v1/approvals/{approval_id}", "get", {"approval_id": _FIRST + "id"}),
        ("Approve", "/api/v1/approvals/{approval_id}/approve", "post", {"approval_id": _FIRST + "id"}),
        ("Reject", "/api/v1/approvals/{approval_id}/reject", "post", {"approval_id": _FIRST + "id"}),
    ],
    ("/api/v1/contracts", "get"): [
        ("Versions", "/api/v1/contracts/{name}/versions", "get", {"name": _FIRST + "name"}),
        ("Diff", "/api/v1/contracts/{name}/diff", "get", {"name": _FIRST + "name", "from": _FIRST + "newest"}),
    ],
    ("/api/v1/deadletters", "get"): [
        ("GetDeadLetter", "/api/v1/deadletters/{letter_id}", "get", {"letter_id": _FIRST + "id"}),
        ("Payload", "/api/v1/deadletters/{letter_id}/payload", "get", {"letter_id": _FIRST + "id"}),
        ("Replay", "/api/v1/deadletters/{letter_id}/replay", "post", {"letter_id": _FIRST + "id"}),
    ],
    ("/api/v1/turns", "get"): [
        ("Frames", "/api/v1/turns/frames", "get", {"hive": _FIRST + "hive", "turn": _FIRST + "turn"}),
    ],
    ("/api/v1/health", "get"): [
        ("Resume", "/api/v1/events", "get", {"after": "$response.body#/last_seq"}),
    ],
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
                for parameter in operation.get("parameters", []):
                    _no_null(parameter)
                responses = operation.get("responses", {})
                for status, response in list(responses.items()):
                    if not status.isdigit() or int(status) < 400:
                        continue
                    schema = response.get("content", {}).get(PROBLEM_JSON, {}).get("schema")
                    if schema != _REF:  # FastAPI's own 422 for a route that cannot fail validation
                        del responses[status]
                        continue
                    response["content"] = {PROBLEM_JSON: {"schema": _REF}}
        paths = doc.get("paths", {})
        for (path, method), links in _LINKS.items():
            ok = paths[path][method]["responses"]["200"]
            ok["links"] = {
                name: {"operationId": paths[target][verb]["operationId"], "parameters": parameters}
                for name, target, verb, parameters in links
            }
        app.openapi_schema = doc
        return doc

    app.openapi = openapi  # type: ignore[method-assign]


def _no_null(parameter: dict[str, Any]) -> None:
    """An optional query or header parameter is left out, never sent as null (which a URL cannot say): its
    schema is the non-null type alone."""
    schema = parameter.get("schema", {})
    options = schema.get("anyOf")
    if isinstance(options, list) and {"type": "null"} in options and len(options) == 2:
        (kept,) = [o for o in options if o != {"type": "null"}]
        rest = {k: v for k, v in schema.items() if k != "anyOf"}
        parameter["schema"] = {**kept, **rest}
