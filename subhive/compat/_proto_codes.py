"""The stable change codes of the protobuf engine, each with a one-line description (a test guards that every
emitted code is listed). Each is explained in docs/compat-codes.md#protobuf.
"""

from __future__ import annotations

__all__ = ["CODES"]

CODES: dict[str, str] = {
    # files and packages
    "package.changed": "the package changed: every full name, gRPC method path and Any type URL changes",
    "file.syntax_changed": "syntax or edition changed; its effects are judged element by element (informational)",
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
    # extensions (proto2 / editions)
    "extension.added": "an extension was added (additive)",
    "extension.removed": "an extension was removed",
}


#: Changes that keep both directions but add to the interface (semver: minor, not patch).
ADDITIVE_CODES = frozenset(code for code in CODES if code.endswith(".added"))
