"""The stable change codes of the protobuf engine, each with a one-line description (a test guards that every
emitted code is listed), and how each counts under buf's rule categories (:data:`RULES`). Each is explained in
docs/compat-codes.md#protobuf; the categories in docs/decisions/0071-buf-rule-categories.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["CODES", "RULES", "Rule"]

CODES: dict[str, str] = {
    # files and packages
    "package.changed": "the package changed: every full name, gRPC method path and Any type URL changes",
    "file.syntax_changed": "syntax or edition changed; its effects are judged element by element (informational)",
    "file.option_changed": "a file option that steers generated code changed (go_package, java_package, ...)",
    "file.declaration_moved": "a message, enum, service or extension moved to another file of the same package",
    # messages
    "message.added": "a message type was added (additive)",
    "message.removed": "a message type was removed",
    "message.reserved_removed": "a reserved field number or name is no longer reserved: a later field may reuse it",
    "message.extension_range_removed": "an extension range was removed: numbers it covered may be reused",
    # fields
    "field.added": "a field was added (additive: old readers skip it)",
    "field.added_required": "a required field was added: new readers reject old data that lacks it",
    "field.removed": "a field was removed without reserving its number: a later field may reuse it",
    "field.removed_name_not_reserved": "a field was removed, its number reserved but not its name (JSON reuse)",
    "field.removed_reserved": "a field was removed with its number and name reserved",
    "field.number_changed": "a field kept its name but moved to another number",
    "field.number_reused": "a field number now carries a field that had another number or name before",
    "field.renamed": "a field was renamed: binary keeps working, ProtoJSON keys change",
    "field.json_name_changed": "a field's json_name changed: ProtoJSON keys change",
    "field.type_changed": "a field's type changed to one whose wire encoding or values differ",
    "field.type_changed_json": "a field's type changed compatibly on the wire but not in ProtoJSON",
    "field.type_widened": "a field's integer type was widened: new readers accept old values, not the reverse",
    "field.type_narrowed": "a field's integer type was narrowed: old values may not fit",
    "field.message_type_changed": "a field's message type changed; the two types are compared field by field",
    "field.enum_type_changed": "a field's enum type changed; the two enums are compared value by value",
    "field.cardinality_changed": "a field changed between singular and repeated",
    "field.map_changed": "a field changed between map and non-map (ProtoJSON object vs array)",
    "field.presence_changed": "a scalar changed between implicit and explicit presence (same encodings)",
    "field.required_added": "an optional field became required: new readers reject old data that lacks it",
    "field.required_removed": "a required field became optional: old readers reject new data that lacks it",
    "field.default_changed": "a field's default value changed: readers disagree about an unset field",
    "field.utf8_validation_changed": "UTF-8 validation of a string field changed",
    "field.moved_into_oneof": "an existing field joined a oneof: new readers keep only one of old data's fields",
    "field.moved_out_of_oneof": "a field left a oneof: old readers keep only one of new data's fields",
    "field.oneof_changed": "the set of existing fields sharing a field's oneof changed",
    "field.features_changed": "an editions feature of a field changed that the engine cannot judge",
    "field.option_changed": "a field option steering generated code only changed (ctype, jstype, Java UTF-8 checks)",
    # enums
    "enum.added": "an enum type was added (additive)",
    "enum.removed": "an enum type was removed",
    "enum.closedness_changed": "an enum changed between open and closed: unknown values are kept or dropped",
    "enum.reserved_removed": "a reserved enum number or name is no longer reserved: a later value may reuse it",
    "enum_value.added": "an enum value was added: old readers cannot read it in ProtoJSON (or closed enums)",
    "enum_value.removed": "an enum value was removed without reserving its number and name",
    "enum_value.removed_reserved": "an enum value was removed with its number and name reserved",
    "enum_value.renamed": "an enum number's name changed: ProtoJSON uses names",
    "enum_value.alias_added": "an alias was added to an enum number: old readers do not know the new name",
    "enum_value.number_changed": "an enum value kept its name but moved to another number",
    # services
    "service.added": "a service was added (additive)",
    "service.removed": "a service was removed: its calls fail",
    "rpc.added": "an RPC was added (additive)",
    "rpc.removed": "an RPC was removed: its calls fail",
    "rpc.request_type_changed": "an RPC's request type changed; the two types are compared field by field",
    "rpc.response_type_changed": "an RPC's response type changed; the two types are compared field by field",
    "rpc.client_streaming_changed": "an RPC changed between unary and streaming requests",
    "rpc.server_streaming_changed": "an RPC changed between unary and streaming responses",
    "rpc.idempotency_changed": "an RPC's idempotency_level changed (generated code and HTTP mappings only)",
    # extensions (proto2 / editions)
    "extension.added": "an extension was added (additive)",
    "extension.removed": "an extension was removed",
}


#: Changes that keep both directions but add to the interface (semver: minor, not patch).
ADDITIVE_CODES = frozenset(code for code in CODES if code.endswith(".added"))


@dataclass(frozen=True, slots=True)
class Rule:
    """How a change code counts under each rule category (:class:`~subhive.compat.protobuf.BreakingRules`).

    ``scope`` is the smallest category whose concerns the engine's own verdict covers: ``wire`` counts
    everywhere; ``json`` (ProtoJSON) gives way to the change's binary-only verdict under WIRE; ``runtime``
    (names a running peer looks up: services, RPCs, types) gives way to it under WIRE and WIRE_JSON.
    ``strict`` makes the change breaking both ways where generated code is judged too: ``package`` under
    PACKAGE and FILE, ``file`` under FILE. ``buf`` names the buf rules the code answers to.
    """

    scope: Literal["wire", "json", "runtime"]
    strict: Literal["package", "file"] | None
    buf: tuple[str, ...]


def _rule(scope: Literal["wire", "json", "runtime"], strict: Literal["package", "file"] | None, *buf: str) -> Rule:
    return Rule(scope, strict, buf)


RULES: dict[str, Rule] = {
    "package.changed": _rule("wire", None, "FILE_SAME_PACKAGE"),
    "file.syntax_changed": _rule("wire", "package", "FILE_SAME_SYNTAX"),
    "file.option_changed": _rule(
        "wire", "package", "FILE_SAME_GO_PACKAGE", "FILE_SAME_JAVA_PACKAGE", "FILE_SAME_CSHARP_NAMESPACE", "..."
    ),
    "file.declaration_moved": _rule("wire", "file", "FILE_NO_DELETE", "MESSAGE_NO_DELETE", "ENUM_NO_DELETE"),
    "message.added": _rule("wire", None),
    "message.removed": _rule("runtime", "package", "MESSAGE_NO_DELETE", "PACKAGE_MESSAGE_NO_DELETE"),
    "message.reserved_removed": _rule("wire", None, "RESERVED_MESSAGE_NO_DELETE"),
    "message.extension_range_removed": _rule("wire", None, "EXTENSION_MESSAGE_NO_DELETE"),
    "field.added": _rule("wire", None),
    "field.added_required": _rule("wire", None, "MESSAGE_SAME_REQUIRED_FIELDS"),
    "field.removed": _rule("wire", None, "FIELD_NO_DELETE_UNLESS_NUMBER_RESERVED", "FIELD_NO_DELETE"),
    "field.removed_name_not_reserved": _rule(
        "json", "package", "FIELD_NO_DELETE_UNLESS_NAME_RESERVED", "FIELD_NO_DELETE"
    ),
    "field.removed_reserved": _rule("wire", "package", "FIELD_NO_DELETE"),
    "field.number_changed": _rule("wire", None, "FIELD_NO_DELETE_UNLESS_NUMBER_RESERVED"),
    "field.number_reused": _rule("wire", None, "FIELD_WIRE_COMPATIBLE_TYPE", "FIELD_SAME_NAME"),
    "field.renamed": _rule("json", None, "FIELD_SAME_NAME", "FIELD_SAME_JSON_NAME"),
    "field.json_name_changed": _rule("json", None, "FIELD_SAME_JSON_NAME"),
    "field.type_changed": _rule("wire", None, "FIELD_WIRE_COMPATIBLE_TYPE", "FIELD_SAME_TYPE"),
    "field.type_changed_json": _rule("json", "package", "FIELD_WIRE_JSON_COMPATIBLE_TYPE", "FIELD_SAME_TYPE"),
    "field.type_widened": _rule("wire", "package", "FIELD_SAME_TYPE"),
    "field.type_narrowed": _rule("wire", "package", "FIELD_WIRE_COMPATIBLE_TYPE", "FIELD_SAME_TYPE"),
    "field.message_type_changed": _rule("wire", "package", "FIELD_SAME_TYPE"),
    "field.enum_type_changed": _rule("wire", "package", "FIELD_SAME_TYPE"),
    "field.cardinality_changed": _rule("wire", None, "FIELD_WIRE_COMPATIBLE_CARDINALITY", "FIELD_SAME_CARDINALITY"),
    "field.map_changed": _rule("wire", None, "FIELD_WIRE_JSON_COMPATIBLE_CARDINALITY", "FIELD_SAME_TYPE"),
    "field.presence_changed": _rule("wire", "package", "FIELD_SAME_CARDINALITY"),
    "field.required_added": _rule("wire", None, "MESSAGE_SAME_REQUIRED_FIELDS"),
    "field.required_removed": _rule("wire", None, "MESSAGE_SAME_REQUIRED_FIELDS"),
    "field.default_changed": _rule("wire", None, "FIELD_SAME_DEFAULT"),
    "field.utf8_validation_changed": _rule("wire", "package", "FIELD_SAME_UTF8_VALIDATION"),
    "field.moved_into_oneof": _rule("wire", None, "FIELD_SAME_ONEOF"),
    "field.moved_out_of_oneof": _rule("wire", None, "FIELD_SAME_ONEOF"),
    "field.oneof_changed": _rule("wire", None, "FIELD_SAME_ONEOF"),
    "field.features_changed": _rule("wire", None),
    "field.option_changed": _rule(
        "wire", "package", "FIELD_SAME_JSTYPE", "FIELD_SAME_CPP_STRING_TYPE", "FIELD_SAME_JAVA_UTF8_VALIDATION"
    ),
    "enum.added": _rule("wire", None),
    "enum.removed": _rule("runtime", "package", "ENUM_NO_DELETE", "PACKAGE_ENUM_NO_DELETE"),
    "enum.closedness_changed": _rule("wire", "package", "ENUM_SAME_TYPE"),
    "enum.reserved_removed": _rule("wire", None, "RESERVED_ENUM_NO_DELETE"),
    "enum_value.added": _rule("json", None),
    "enum_value.removed": _rule(
        "json", "package", "ENUM_VALUE_NO_DELETE_UNLESS_NUMBER_RESERVED", "ENUM_VALUE_NO_DELETE_UNLESS_NAME_RESERVED"
    ),
    "enum_value.removed_reserved": _rule("json", "package", "ENUM_VALUE_NO_DELETE"),
    "enum_value.renamed": _rule("json", None, "ENUM_VALUE_SAME_NAME"),
    "enum_value.alias_added": _rule("json", None, "ENUM_VALUE_SAME_NAME"),
    "enum_value.number_changed": _rule("wire", None, "ENUM_VALUE_NO_DELETE_UNLESS_NUMBER_RESERVED"),
    "service.added": _rule("wire", None),
    "service.removed": _rule("runtime", "package", "SERVICE_NO_DELETE", "PACKAGE_SERVICE_NO_DELETE"),
    "rpc.added": _rule("wire", None),
    "rpc.removed": _rule("runtime", "package", "RPC_NO_DELETE"),
    "rpc.request_type_changed": _rule("wire", "package", "RPC_SAME_REQUEST_TYPE"),
    "rpc.response_type_changed": _rule("wire", "package", "RPC_SAME_RESPONSE_TYPE"),
    "rpc.client_streaming_changed": _rule("wire", None, "RPC_SAME_CLIENT_STREAMING"),
    "rpc.server_streaming_changed": _rule("wire", None, "RPC_SAME_SERVER_STREAMING"),
    "rpc.idempotency_changed": _rule("wire", "package", "RPC_SAME_IDEMPOTENCY_LEVEL"),
    "extension.added": _rule("wire", None),
    "extension.removed": _rule("runtime", "package", "EXTENSION_NO_DELETE", "PACKAGE_EXTENSION_NO_DELETE"),
}
