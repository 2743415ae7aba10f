"""An OpenAPI 3.0 or 3.1 document as one contract version: each operation's parameters and JSON request body become
its ``input``, its success response its ``output`` (the shape: docs/decisions/0092-openapi-operation-shape.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._source import escape_pointer_token
from ._import_common import Importer, camel, snake

__all__ = ["import_openapi", "is_json"]

_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_LOCATIONS = ("path", "query", "header", "cookie")


def is_json(media_type: str) -> bool:
    """``application/json``, ``application/problem+json``, ``application/json; charset=utf-8``, ``*/*``..."""
    kind = media_type.split(";", 1)[0].strip().lower()
    return kind in ("application/json", "*/*", "application/*") or kind.endswith("+json")


def import_openapi(imp: Importer, data: dict[str, Any], file: Path) -> tuple[dict[str, Any], str]:
    """Operations (manifest entries) and the dialect of the schemas gathered into ``imp``."""
    dialect = "openapi-3.0" if str(data["openapi"]).startswith("3.0") else "2020-12"
    imp.define_components(data, file)
    operations: dict[str, Any] = {}
    where: dict[str, str] = {}
    paths = data.get("paths") or {}
    if not isinstance(paths, dict):
        imp.problem("import.document_invalid", "paths must be an object", file, "/paths")
        return {}, dialect
    for path, raw_item in paths.items():
        item, item_file, item_at = imp.follow(raw_item, file, "/paths/" + escape_pointer_token(path))
        if not isinstance(item, dict):
            if item is not None:
                imp.problem("import.document_invalid", "a path item must be an object", item_file, item_at)
            continue
        shared = item.get("parameters") or []
        for method in _METHODS:
            op = item.get(method)
            at = f"{item_at}/{method}"
            if not isinstance(op, dict):
                if op is not None:
                    imp.problem("import.document_invalid", "an operation must be an object", item_file, at)
                continue
            name = snake(op["operationId"]) if isinstance(op.get("operationId"), str) else snake(f"{method} {path}")
            if not name:
                imp.problem(
                    "import.name_invalid", f"no operation name can be made of {op.get('operationId')!r}",
                    item_file, at + "/operationId", "give the operation an operationId of letters and digits",
                )  # fmt: skip
                continue
            if name in operations:
                imp.problem(
                    "import.name_clash", f"operation {name!r} is also made of {where[name]}", item_file, at,
                    "give one of them another operationId",
                )  # fmt: skip
                continue
            where[name] = f"{method.upper()} {path}"
            entry: dict[str, Any] = {}
            text = op.get("summary") or op.get("description")
            if isinstance(text, str) and text.strip():
                entry["description"] = text.strip()
            params = _parameters(
                imp, [(shared, item_at + "/parameters"), (op.get("parameters") or [], at + "/parameters")], item_file
            )
            entry["input"] = "schemas.json#/$defs/" + _input(imp, op, params, (item_file, at), name)
            entry["output"] = "schemas.json#/$defs/" + _output(imp, op, item_file, at, name)
            operations[name] = entry
    return operations, dialect


_Params = dict[tuple[str, str], tuple[dict[str, Any], Path, str]]


def _parameters(imp: Importer, sources: list[tuple[Any, str]], file: Path) -> _Params:
    """The parameters by (location, name): the path item's first, then the operation's own, which override them."""
    params: _Params = {}
    for source, base in sources:
        if not isinstance(source, list):
            imp.problem("import.document_invalid", "parameters must be an array", file, base)
            continue
        for i, raw in enumerate(source):
            param, pfile, pat = imp.follow(raw, file, f"{base}/{i}")
            if not isinstance(param, dict):
                continue
            where, pname = param.get("in"), param.get("name")
            if where not in _LOCATIONS or not isinstance(pname, str):
                imp.problem(
                    "import.document_invalid", "a parameter needs a name and an 'in' of path, query, header or cookie",
                    pfile, pat,
                )  # fmt: skip
                continue
            params[(where, pname)] = (param, pfile, pat)
    return params


def _input(imp: Importer, op: dict[str, Any], params: _Params, at: tuple[Path, str], name: str) -> str:
    """``{"path": {...}, "query": {...}, "header": {...}, "cookie": {...}, "body": ...}``: each present group an
    object of its parameters, ``body`` the JSON request body; nothing else allowed."""
    groups: dict[str, dict[str, Any]] = {}
    for (where, pname), (param, pfile, pat) in params.items():
        if "schema" in param:
            schema: Any = imp.schema(param["schema"], pfile, pat + "/schema")
        else:
            schema = _media_schema(imp, param.get("content"), pfile, pat + "/content", "parameter")
            if schema is None:
                continue
        group = groups.setdefault(where, {"type": "object", "properties": {}, "additionalProperties": False})
        group["properties"][pname] = schema
        if param.get("required") is True or where == "path":
            group.setdefault("required", []).append(pname)
    out: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}
    required = [where for where in _LOCATIONS if where in groups and groups[where].get("required")]
    out["properties"].update((where, groups[where]) for where in _LOCATIONS if where in groups)
    body, bfile, bat = imp.follow(op.get("requestBody"), at[0], at[1] + "/requestBody")
    if isinstance(body, dict):
        schema = _media_schema(imp, body.get("content"), bfile, bat + "/content", "request body")
        if schema is not None:
            out["properties"]["body"] = schema
            if body.get("required") is True:
                required.append("body")
    if required:
        out["required"] = required
    return imp.add(out, camel(name) + "Input", *at)


def _output(imp: Importer, op: dict[str, Any], file: Path, at: str, name: str) -> str:
    """The JSON schema of the success responses (2XX; several: any of them); no content: ``null``."""
    responses = op.get("responses")
    if not isinstance(responses, dict):
        imp.problem("import.document_invalid", "an operation needs responses", file, at + "/responses")
        return imp.add({}, camel(name) + "Output", file, at)
    codes = sorted(str(c) for c in responses if str(c).startswith("2") and len(str(c)) == 3)
    if not codes:
        imp.problem(
            "import.no_success_response", "the operation has no 2XX response to become its reply", file,
            at + "/responses", "add a 200 (or other 2XX) response with a JSON body",
        )  # fmt: skip
        return imp.add({}, camel(name) + "Output", file, at)
    schemas: list[Any] = []
    for code in codes:
        raw = responses[code] if code in responses else responses[int(code)]
        response, rfile, rat = imp.follow(raw, file, f"{at}/responses/{code}")
        if not isinstance(response, dict):
            continue
        content = response.get("content")
        if not content:
            schemas.append({"type": "null"})  # 204 No Content and the like: the reply carries nothing
            continue
        schema = _media_schema(imp, content, rfile, rat + "/content", "response")
        if schema is not None and schema not in schemas:
            schemas.append(schema)
    if len(schemas) == 1:
        only = schemas[0]
        if isinstance(only, dict) and set(only) == {"$ref"}:
            return str(only["$ref"]).rsplit("/", 1)[-1].replace("~1", "/").replace("~0", "~")
        return imp.add(only, camel(name) + "Output", file, at)
    return imp.add({"anyOf": schemas} if schemas else {}, camel(name) + "Output", file, at)


def _media_schema(imp: Importer, content: Any, file: Path, at: str, what: str) -> Any:
    """The schema of the JSON media type in a ``content`` map (a copy, refs rewritten), or None with a problem."""
    if not isinstance(content, dict) or not content:
        imp.problem("import.document_invalid", f"the {what} has no content", file, at)
        return None
    for media_type, media in content.items():
        if isinstance(media_type, str) and is_json(media_type):
            if not isinstance(media, dict) or "schema" not in media:
                return {}  # JSON without a schema: any JSON value
            return imp.schema(media["schema"], file, f"{at}/{escape_pointer_token(media_type)}/schema")
    imp.problem(
        "import.non_json_body", f"the {what} is {', '.join(map(str, content))}, not JSON: a NATS message of subhive "
        "carries JSON", file, at, "add an application/json media type, or leave the operation out of the document",
    )  # fmt: skip
    return None
