"""``subhive contract export --asyncapi``: the workspace's accepted contracts as one AsyncAPI 3.0 document, a channel
per NATS subject the bus uses, messages with the headers it sets and the payload schemas it validates
(docs/contracts.md#importing-and-exporting, docs/decisions/0093-asyncapi-export-shape.md).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from .._yaml import dump_yaml
from ..errors import ContractInvalid, InputError, Problem, SubhiveError

__all__ = ["PAYLOAD_FORMAT", "export_asyncapi", "render_asyncapi"]

#: The payload schemas are draft 2020-12 (what the bus validates), named as such in a Multi Format Schema Object.
PAYLOAD_FORMAT = "application/schema+json;version=2020-12"


def _headers(contract: str, line: str, sender: dict[str, Any]) -> dict[str, Any]:
    """The headers the bus sets on every request and event (docs/bus.md#subjects-and-headers); ``line`` is
    ``Version.line`` ("1", "0.2")."""
    first = ".".join([*line.split("."), "0", "0"][:3])
    return {
        "type": "object",
        "required": ["Subhive-Contract", "Subhive-Sender"],
        "properties": {
            "Subhive-Contract": {
                "type": "string",
                "description": "The contract and version the sender was built against.",
                "pattern": f"^{contract}@{re.escape(line)}" + ("\\." if line.count(".") < 2 else "([-+]|$)"),
                "examples": [f"{contract}@{first}"],
            },
            "Subhive-Sender": {"type": "string", **sender},
            "Nats-Msg-Id": {"type": "string", "description": "The message's id (JetStream deduplicates on it)."},
            "traceparent": {"type": "string", "description": "W3C trace context: the sender's trace."},
        },
    }


def export_asyncapi(start: Path) -> dict[str, Any]:
    """The AsyncAPI 3.0 document of the accepted contracts of the workspace holding ``start``: for each contract and
    line (a major, or below 1.0.0 "0.2", "0.0.3": decision 0140), the highest accepted version."""
    from ..codegen.bundle import bundle_contract
    from ..contract import load_contract
    from ..root_hive import LOCK_FILE, Lock
    from ..workspace import open_workspace
    from ._permissions import event_subject, line_name, op_subject  # the bus's own names: the document cannot drift

    ws = open_workspace(start)
    lock_path = ws.root / LOCK_FILE
    lock = Lock.load(lock_path)
    latest: dict[tuple[str, str], Any] = {}
    for entry in lock:
        key = (entry.name, entry.version.line)
        if key not in latest or latest[key].version < entry.version:
            latest[key] = entry
    if not latest:
        raise InputError(
            "the workspace has no accepted contracts to export", code="export.empty",
            hint="contracts are accepted with subhive contract propose",
        )  # fmt: skip
    channels: dict[str, Any] = {}
    operations: dict[str, Any] = {}
    messages: dict[str, Any] = {}
    problems: list[Problem] = []
    for (name, line), entry in sorted(latest.items()):
        try:
            contract = load_contract(entry.directory(ws.root))
        except SubhiveError as exc:
            problems.extend(exc.problems)
            continue
        schemas = bundle_contract(contract).schemas
        tag = f"{name}-{line_name(line)}"
        for op in contract.operations.values():
            request, reply = f"{tag}-op-{op.name}", f"{tag}-op-{op.name}-reply"
            messages[request] = _message(
                request,
                f"{op.name}_request", op.description, schemas[f"operations.{op.name}.input"],
                _headers(name, line, {"description": "The consumer hive sending the request (the subject's last "
                                                      "token, which only it may publish on)."}),
            )  # fmt: skip
            messages[reply] = _message(
                reply, f"{op.name}_reply", op.description, schemas[f"operations.{op.name}.output"], None
            )
            channels[request] = {
                "address": op_subject(name, line, op.name).removesuffix("*") + "{sender}",
                "title": f"{name} v{line} {op.name}",
                "messages": {"request": {"$ref": f"#/components/messages/{request}"}},
                "parameters": {"sender": {"description": "The hive sending the request."}},
                **({"description": op.description} if op.description else {}),
            }
            channels[reply] = {
                "address": None,  # the requester's inbox, chosen at run time
                "title": f"{name} v{line} {op.name} reply",
                "messages": {"reply": {"$ref": f"#/components/messages/{reply}"}},
            }
            operations[f"{tag}-serve-{op.name}"] = {
                "action": "receive",
                "title": f"{contract.provider} serves {op.name}",
                "x-subhive-operation": op.name,
                **({"description": op.description} if op.description else {}),
                "channel": {"$ref": f"#/channels/{request}"},
                "messages": [{"$ref": f"#/channels/{request}/messages/request"}],
                "reply": {
                    "channel": {"$ref": f"#/channels/{reply}"},
                    "messages": [{"$ref": f"#/channels/{reply}/messages/reply"}],
                },
            }
        for event in contract.events.values():
            channel = f"{tag}-ev-{event.name}"
            messages[channel] = _message(
                channel,
                event.name, event.description, schemas[f"events.{event.name}.payload"],
                _headers(name, line, {"const": contract.provider, "description": "The provider (the only hive that "
                                                                                  "may publish the event)."}),
            )  # fmt: skip
            channels[channel] = {
                "address": event_subject(name, line, event.name),
                "title": f"{name} v{line} {event.name}",
                "messages": {"event": {"$ref": f"#/components/messages/{channel}"}},
                **({"description": event.description} if event.description else {}),
            }
            operations[f"{tag}-emit-{event.name}"] = {
                "action": "send",
                "title": f"{contract.provider} emits {event.name}",
                "channel": {"$ref": f"#/channels/{channel}"},
                "messages": [{"$ref": f"#/channels/{channel}/messages/event"}],
            }
    if problems:
        raise ContractInvalid(problems)
    digest = hashlib.sha256(lock_path.read_bytes()).hexdigest()[:12] if lock_path.exists() else "none"
    return {
        "asyncapi": "3.0.0",
        "info": {
            "title": f"{ws.root.name} (subhive)",
            "version": f"lock-{digest}",
            "description": "The NATS subjects, headers and message schemas of the workspace's accepted contracts.",
        },
        "defaultContentType": "application/json",
        "channels": channels,
        "operations": operations,
        "components": {"messages": messages},
    }


def _message(
    key: str, name: str, description: str, schema: dict[str, Any], headers: dict[str, Any] | None
) -> dict[str, Any]:
    """A message of ``components/messages/<key>``; its payload's ``#/$defs/...`` references are rewritten to the
    document's own pointers (``#`` in an AsyncAPI document is the document, not the schema)."""
    out: dict[str, Any] = {"name": name, "contentType": "application/json"}
    if description:
        out["description"] = description
    if headers is not None:
        out["headers"] = headers
    base = f"#/components/messages/{key}/payload/schema"
    out["payload"] = {"schemaFormat": PAYLOAD_FORMAT, "schema": _rebased(schema, base)}
    return out


def _rebased(node: Any, base: str) -> Any:
    if isinstance(node, dict):
        return {
            k: base + v[1:] if k == "$ref" and isinstance(v, str) and v.startswith("#") else _rebased(v, base)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_rebased(v, base) for v in node]
    return node


def render_asyncapi(document: dict[str, Any], *, json_output: bool = False) -> str:
    """YAML (or JSON) text of an exported document."""
    if json_output:
        return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    return dump_yaml(document)  # quoted where YAML 1.1 or 1.2 readers (AsyncAPI's are 1.2) would misread
