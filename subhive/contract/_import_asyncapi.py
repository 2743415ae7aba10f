"""An AsyncAPI 2.x or 3.0 document as one contract version: every message of every channel is an event whose payload
is the message's payload schema (an AsyncAPI Schema Object: draft-07 and a few annotations).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._dialects import DIALECTS, DRAFT7
from .._source import escape_pointer_token
from ._import_common import Importer, camel, snake

__all__ = ["import_asyncapi"]

# Payload formats read as JSON Schema draft-07 (the AsyncAPI Schema Object is a superset of it).
_JSON_FORMATS = "application/vnd.aai.asyncapi"
# JSON Schema of a named draft (``application/schema+json;version=2020-12``, as subhive's export writes).
_SCHEMA_JSON = ("application/schema+json;", "application/schema+yaml;")
_DRAFTS = {name: name for name in DIALECTS}


def import_asyncapi(imp: Importer, data: dict[str, Any], file: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The operations and events (manifest entries); their schemas are gathered into ``imp``."""
    imp.define_components(data, file)
    channels = data.get("channels") or {}
    if not isinstance(channels, dict):
        imp.problem("import.document_invalid", "channels must be an object", file, "/channels")
        return {}, {}
    v3 = str(data["asyncapi"]).startswith("3.")
    seen: dict[tuple[Path, str], str] = {}
    operations = _reply_operations(imp, data, file, seen) if v3 else {}
    events: dict[str, Any] = {}
    for channel_name, raw in channels.items():
        channel, cfile, cat = imp.follow(raw, file, "/channels/" + escape_pointer_token(channel_name))
        if not isinstance(channel, dict):
            continue
        for message_key, message_raw, written_at, written_in in _messages(imp, channel, cfile, cat, v3):
            message, mfile, mat = imp.follow(message_raw, written_in, written_at)
            if not isinstance(message, dict):
                continue
            if (mfile.resolve(), mat) in seen:
                continue  # one message used by several channels or operations is one event
            label = message.get("name") or message.get("messageId") or message_key
            name = snake(str(label)) if label else snake(f"{channel_name}_{mat.rsplit('/', 1)[-1]}")
            if not name:
                imp.problem("import.name_invalid", f"no event name can be made of {label!r}", mfile, mat,
                            "give the message a name of letters and digits")  # fmt: skip
                continue
            if name in events:
                imp.problem("import.name_clash", f"event {name!r} is also made of another message", mfile, mat,
                            "give one of the messages another name")  # fmt: skip
                continue
            seen[(mfile.resolve(), mat)] = name
            payload = _payload(imp, message, mfile, mat)
            if payload is None:
                continue
            entry: dict[str, Any] = {}
            text = message.get("summary") or message.get("description") or message.get("title")
            if isinstance(text, str) and text.strip():
                entry["description"] = text.strip()
            entry["payload"] = "schemas.json#/$defs/" + payload(camel(name) + "Payload")
            events[name] = entry
    return operations, events


def _reply_operations(
    imp: Importer, data: dict[str, Any], file: Path, seen: dict[tuple[Path, str], str]
) -> dict[str, Any]:
    """AsyncAPI 3.0 operations with a ``reply``: request/reply operations, named by ``x-subhive-operation`` or
    their key; their messages are no events."""
    out: dict[str, Any] = {}
    raw_ops = data.get("operations")
    for key, raw in raw_ops.items() if isinstance(raw_ops, dict) else ():
        op, ofile, oat = imp.follow(raw, file, "/operations/" + escape_pointer_token(key))
        if not isinstance(op, dict) or not isinstance(op.get("reply"), dict):
            continue
        name = snake(str(op.get("x-subhive-operation") or key))
        if not name or name in out:
            imp.problem(
                "import.name_clash" if name else "import.name_invalid", f"operation {name or key!r} cannot be named",
                ofile, oat, "give it another key, or an x-subhive-operation name",
            )  # fmt: skip
            continue
        entry: dict[str, Any] = {}
        text = op.get("summary") or op.get("description") or op.get("title")
        if isinstance(text, str) and text.strip():
            entry["description"] = text.strip()
        for part, holder, hat in (("input", op, oat), ("output", op["reply"], oat + "/reply")):
            found = _one_message(imp, holder, ofile, hat)
            if found is None:
                break
            message, mfile, mat = found
            seen[(mfile.resolve(), mat)] = name
            payload = _payload(imp, message, mfile, mat)
            if payload is None:
                break
            entry[part] = "schemas.json#/$defs/" + payload(camel(name) + part.title())
        else:
            out[name] = entry
    return out


def _one_message(imp: Importer, holder: dict[str, Any], file: Path, at: str) -> tuple[dict[str, Any], Path, str] | None:
    """The one message of an operation or reply: its ``messages``, else its channel's."""
    messages, mat = holder.get("messages"), at + "/messages"
    if not messages:
        channel, cfile, cat = imp.follow(holder.get("channel"), file, at + "/channel")
        if isinstance(channel, dict) and isinstance(channel.get("messages"), dict):
            messages = list(channel["messages"].values())
            file, mat = cfile, cat + "/messages"
    if not isinstance(messages, list) or len(messages) != 1:
        imp.problem(
            "import.unsupported", "a request/reply operation needs exactly one request and one reply message", file,
            mat, "subhive's operations take one input and give one output: split the operation",
        )  # fmt: skip
        return None
    message, mfile, found_at = imp.follow(messages[0], file, mat + "/0")
    return (message, mfile, found_at) if isinstance(message, dict) else None


def _messages(
    imp: Importer, channel: dict[str, Any], file: Path, at: str, v3: bool
) -> list[tuple[str | None, Any, str, Path]]:
    """``(key, message or $ref, pointer, file)`` for the messages of one channel."""
    out: list[tuple[str | None, Any, str, Path]] = []
    if v3:
        messages = channel.get("messages") or {}
        if not isinstance(messages, dict):
            imp.problem("import.document_invalid", "messages must be an object", file, at + "/messages")
            return out
        return [(k, v, f"{at}/messages/{escape_pointer_token(k)}", file) for k, v in messages.items()]
    for action in ("subscribe", "publish"):
        op, ofile, oat = imp.follow(channel.get(action), file, f"{at}/{action}")
        if not isinstance(op, dict) or "message" not in op:
            continue
        message = op["message"]
        if isinstance(message, dict) and isinstance(message.get("oneOf"), list):
            out.extend(_key(m, ofile, f"{oat}/message/oneOf/{i}") for i, m in enumerate(message["oneOf"]))
        else:
            out.append(_key(message, ofile, f"{oat}/message"))
    return out


def _key(message: Any, file: Path, at: str) -> tuple[str | None, Any, str, Path]:
    """A message named by a ``$ref`` to ``#/components/messages/<key>`` is called ``key`` when it has no name."""
    ref = message.get("$ref") if isinstance(message, dict) else None
    key = ref.rsplit("/", 1)[-1] if isinstance(ref, str) and "/messages/" in ref else None
    return key, message, at, file


class _Payload:
    """A payload schema to gather under a name, in its own dialect (None: the AsyncAPI Schema Object's draft-07)."""

    def __init__(self, imp: Importer, schema: Any, file: Path, at: str, dialect: str | None) -> None:
        self.imp, self.schema_node, self.file, self.at, self.dialect = imp, schema, file, at, dialect

    def __call__(self, name: str) -> str:
        self.imp.schema_dialect = self.dialect
        try:
            return self.imp.put(self.schema_node, self.file, self.at, name)
        finally:
            self.imp.schema_dialect = None


def _payload(imp: Importer, message: dict[str, Any], file: Path, at: str) -> _Payload | None:
    payload, pat = message.get("payload", {}), at + "/payload"
    fmt = message.get("schemaFormat")
    # AsyncAPI 3.0's Multi Format Schema Object: {schemaFormat, schema}
    if isinstance(payload, dict) and "schemaFormat" in payload and "schema" in payload:
        fmt, payload, pat = payload["schemaFormat"], payload["schema"], pat + "/schema"
    text = fmt.replace(" ", "").lower() if isinstance(fmt, str) else ""
    dialect = _DRAFTS.get(text.rsplit("version=", 1)[-1]) if text.startswith(_SCHEMA_JSON) else None
    if fmt is not None and dialect is None and not text.startswith(_JSON_FORMATS):
        imp.problem(
            "import.schema_format", f"payload schema format {fmt!r} is not JSON Schema", file, at + "/schemaFormat",
            "subhive's payloads are JSON validated by JSON Schema: convert the schema, or leave the message out",
        )  # fmt: skip
        return None
    return _Payload(imp, payload, file, pat, None if dialect == DRAFT7 else dialect)
