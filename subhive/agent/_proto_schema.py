"""The JSON Schema of a protobuf message's proto3 JSON form, as ``json_format`` reads it: the parameters of an
agent's gRPC contract tools (docs/agents.md#contract-tools-over-grpc, docs/decisions/0060-grpc-contract-tools.md).

Fields go by their proto names; integers are JSON numbers or decimal strings (64-bit ones print as strings),
in their type's range; enums are their names (or numbers); ``null`` is any field's default; at most one member
of a oneof is set. Each integer type (its range as a pattern is long) and each recursive message is written
once, in ``$defs``; anything else is written out in place.
"""

from __future__ import annotations

import re
from typing import Any

from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor

__all__ = ["message_schema"]

_FLOAT_MAX = 3.4028234663852886e38
_FLOAT_STRING = r"^(-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?|NaN|-?Infinity)$"
#: Each integer type's range, under the name of its entry in ``$defs`` (written once: its pattern is long).
_INTEGERS: dict[str, tuple[int, int]] = {
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint64": (0, 2**64 - 1),
}
_INT_KINDS: dict[int, str] = {
    FieldDescriptor.TYPE_INT32: "int32",
    FieldDescriptor.TYPE_SINT32: "int32",
    FieldDescriptor.TYPE_SFIXED32: "int32",
    FieldDescriptor.TYPE_UINT32: "uint32",
    FieldDescriptor.TYPE_FIXED32: "uint32",
    FieldDescriptor.TYPE_INT64: "int64",
    FieldDescriptor.TYPE_SINT64: "int64",
    FieldDescriptor.TYPE_SFIXED64: "int64",
    FieldDescriptor.TYPE_UINT64: "uint64",
    FieldDescriptor.TYPE_FIXED64: "uint64",
}
_WRAPPERS = frozenset(
    f"google.protobuf.{n}Value"
    for n in ("Double", "Float", "Int64", "UInt64", "Int32", "UInt32", "Bool", "String", "Bytes")
)
_SCALARS: dict[int, dict[str, Any]] = {
    FieldDescriptor.TYPE_BOOL: {"type": "boolean"},
    FieldDescriptor.TYPE_STRING: {"type": "string"},
    FieldDescriptor.TYPE_BYTES: {"type": "string", "contentEncoding": "base64", "pattern": r"^[A-Za-z0-9+/_-]*={0,2}$"},
}
#: The well-known types whose JSON form is not an object of their fields.
_WELL_KNOWN: dict[str, dict[str, Any]] = {
    "google.protobuf.Timestamp": {
        "type": "string",
        "pattern": r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?(Z|[+-][0-9]{2}:[0-9]{2})$",
        "description": "RFC 3339 time, e.g. 2024-05-01T12:00:00Z",
    },
    "google.protobuf.Duration": {
        "type": "string",
        "pattern": r"^-?[0-9]+(\.[0-9]{1,9})?s$",
        "description": "seconds with an s, e.g. 1.5s",
    },
    "google.protobuf.FieldMask": {"type": "string", "description": "comma-separated field paths, in lowerCamelCase"},
    "google.protobuf.Struct": {"type": "object"},
    "google.protobuf.Value": {},
    "google.protobuf.ListValue": {"type": "array"},
    "google.protobuf.Any": {
        "type": "object",
        "properties": {"@type": {"type": "string", "description": "type.googleapis.com/<message full name>"}},
        "description": "an {} or the message's fields and its @type",
    },
}


def message_schema(message: Descriptor) -> dict[str, Any]:
    """The JSON Schema (2020-12) of ``message``'s proto3 JSON form (an object for a regular message)."""
    builder = _Builder()
    schema = builder.message(message)
    while pending := [name for name in builder.recursive if name not in builder.defs]:
        for name in pending:
            builder.defs[name] = {}  # claimed first: a message that refers to itself builds once
            builder.stack = [name]
            builder.defs[name] = builder.regular(builder.descriptors[name])
    if builder.defs:
        schema = {**schema, "$defs": dict(sorted(builder.defs.items()))}
    return schema


class _Builder:
    def __init__(self) -> None:
        self.stack: list[str] = []
        self.recursive: set[str] = set()
        self.descriptors: dict[str, Descriptor] = {}
        self.defs: dict[str, dict[str, Any]] = {}

    def message(self, message: Descriptor) -> dict[str, Any]:
        name = message.full_name
        if name in _WRAPPERS:
            return self.value(message.fields_by_name["value"])
        if name in _WELL_KNOWN:
            return dict(_WELL_KNOWN[name])
        if name in self.stack:
            self.recursive.add(name)
            self.descriptors[name] = message
            return {"$ref": f"#/$defs/{name}"}
        self.stack.append(name)
        try:
            return self.regular(message)
        finally:
            self.stack.pop()

    def regular(self, message: Descriptor) -> dict[str, Any]:
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {f.name: _nullable(self.field(f)) for f in message.fields},
            "additionalProperties": False,
        }
        rules = []
        for oneof in message.oneofs:
            members = [f.name for f in oneof.fields]
            if len(members) > 1:  # a proto3 optional field is a oneof of one
                rules += _one_of(members)
                for name in members:
                    schema["properties"][name]["description"] = (
                        f"oneof {oneof.name}: set at most one of {', '.join(members)}"
                    )
        if rules:
            schema["allOf"] = rules
        return schema

    def field(self, field: FieldDescriptor) -> dict[str, Any]:
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            key, value = field.message_type.fields_by_name["key"], field.message_type.fields_by_name["value"]
            return {"type": "object", "propertyNames": self.map_key(key), "additionalProperties": self.value(value)}
        if field.is_repeated:
            return {"type": "array", "items": self.value(field)}
        return self.value(field)

    def value(self, field: FieldDescriptor) -> dict[str, Any]:
        """One value of ``field`` (an element, for a repeated field)."""
        kind = field.type
        if field.message_type is not None:  # a message or a group
            return self.message(field.message_type)
        if field.enum_type is not None:
            return _enum(field.enum_type)
        if kind in _INT_KINDS:
            return self.integer(_INT_KINDS[kind])
        if kind in (FieldDescriptor.TYPE_FLOAT, FieldDescriptor.TYPE_DOUBLE):
            number: dict[str, Any] = {"type": "number"}
            if kind == FieldDescriptor.TYPE_FLOAT:
                number.update(minimum=-_FLOAT_MAX, maximum=_FLOAT_MAX)
            return {"anyOf": [number, {"type": "string", "pattern": _FLOAT_STRING}]}
        return dict(_SCALARS[kind])

    def integer(self, kind: str) -> dict[str, Any]:
        if kind not in self.defs:
            self.defs[kind] = _integer(*_INTEGERS[kind])
        return {"$ref": f"#/$defs/{kind}"}

    def map_key(self, key: FieldDescriptor) -> dict[str, Any]:
        """A map's keys are strings: an integer's decimals (its ``$defs`` entry checks them), true or false."""
        if key.type in _INT_KINDS:
            return self.integer(_INT_KINDS[key.type])
        if key.type == FieldDescriptor.TYPE_BOOL:
            return {"enum": ["true", "false"]}
        return {"type": "string"}


def _integer(low: int, high: int) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": ["integer", "string"],
        "minimum": low,
        "maximum": high,
        "pattern": _decimal_pattern(low, high),
    }
    if high > 2**32:
        schema["description"] = '64-bit: a decimal string, e.g. "42" (a JSON number loses precision)'
    return schema


def _enum(enum: EnumDescriptor) -> dict[str, Any]:
    """The names, and the declared numbers: a number no value declares is refused, though json_format takes one
    for an open enum (a model that sends one has made a mistake; decision 0060)."""
    numbers = sorted({v.number for v in enum.values})
    if enum.full_name == "google.protobuf.NullValue":
        return {"enum": [None, *(v.name for v in enum.values), *numbers]}
    return {"enum": [*(v.name for v in enum.values), *numbers], "description": f"{enum.name}: one of the names"}


def _one_of(members: list[str]) -> list[dict[str, Any]]:
    """At most one member set (``null`` counts as unset, as json_format has it): once one is, the others must
    be null or absent, so a second one is refused at its own pointer."""
    return [
        {
            "if": {"required": [member], "properties": {member: {"not": {"type": "null"}}}},
            "then": {"properties": {other: {"type": "null"} for other in members if other != member}},
        }
        for member in members
    ]


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` or null (a field's default, in proto3 JSON)."""
    if not schema or "$ref" in schema:
        return schema if not schema else {"anyOf": [schema, {"type": "null"}]}
    kind = schema.get("type")
    if isinstance(kind, str):
        return {**schema, "type": [kind, "null"]}
    if isinstance(kind, list):
        return {**schema, "type": [*kind, "null"]}
    if "enum" in schema:
        return schema if None in schema["enum"] else {**schema, "enum": [*schema["enum"], None]}
    return {"anyOf": [*schema["anyOf"], {"type": "null"}], **{k: v for k, v in schema.items() if k != "anyOf"}}


def _decimal_pattern(low: int, high: int) -> str:
    """A regex of the decimal strings of the integers in [low, high], leading zeros allowed (as int() has it)."""
    positive = f"0*({_up_to(high)})"
    if low >= 0:
        return f"^{positive}$"
    return f"^({positive}|-0*({_up_to(-low)}))$"


def _up_to(bound: int) -> str:
    """An alternation of the canonical decimals 0..bound."""
    digits = str(bound)
    width = len(digits)
    parts = ["0"]
    if width > 1:
        parts.append(f"[1-9][0-9]{{0,{width - 2}}}")
    for i, digit in enumerate(digits):
        lowest = 1 if i == 0 else 0
        if int(digit) - 1 >= lowest:
            rest = f"[0-9]{{{width - i - 1}}}" if width - i - 1 else ""
            parts.append(f"{digits[:i]}[{lowest}-{int(digit) - 1}]{rest}")
    parts.append(digits)
    return "|".join(re.escape(p) if p.isdigit() else p for p in parts)
