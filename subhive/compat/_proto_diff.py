"""The protobuf compatibility rules: binary wire format and ProtoJSON, judged per direction, then weighed by
a buf-style rule category (:class:`BreakingRules`: what a category does not judge is compatible, what it
judges strictly is breaking). The rules and why they hold (tolerant ProtoJSON readers, reuse hazards) are in
docs/compat-codes.md#protobuf; the categories in docs/decisions/0071-buf-rule-categories.md.
"""

from __future__ import annotations

import math
from dataclasses import replace

from google.protobuf.descriptor import FieldDescriptor as FD

from ._proto_codes import ADDITIVE_CODES, RULES
from ._proto_model import EnumModel, FieldModel, MessageModel, MethodModel, ProtoSchema, ServiceModel
from ._report import Change
from .proto_settings import DEFAULT_BREAKING, BreakingRules

__all__ = ["diff_schemas"]

_MESSAGES = frozenset({FD.TYPE_MESSAGE, FD.TYPE_GROUP})
_INTEGERS = frozenset({FD.TYPE_INT32, FD.TYPE_INT64, FD.TYPE_UINT32, FD.TYPE_UINT64, FD.TYPE_SINT32, FD.TYPE_SINT64})

# writer type -> reader type pairs that keep every value in both encodings (ProtoJSON parsers accept a
# number or a numeric string for every integer type, so widening is JSON-safe too).
_SAFE = frozenset(
    {
        (FD.TYPE_INT32, FD.TYPE_INT64),
        (FD.TYPE_UINT32, FD.TYPE_UINT64),
        (FD.TYPE_UINT32, FD.TYPE_INT64),
        (FD.TYPE_SINT32, FD.TYPE_SINT64),
    }
)
# ... pairs that keep every value on the wire, but whose ProtoJSON forms differ (true vs 1, "A" vs 1,
# text vs base64, object vs base64).
_BINARY_ONLY = frozenset(
    {
        (FD.TYPE_BOOL, FD.TYPE_INT32),
        (FD.TYPE_BOOL, FD.TYPE_INT64),
        (FD.TYPE_BOOL, FD.TYPE_UINT32),
        (FD.TYPE_BOOL, FD.TYPE_UINT64),
        (FD.TYPE_ENUM, FD.TYPE_INT32),
        (FD.TYPE_ENUM, FD.TYPE_INT64),
        (FD.TYPE_STRING, FD.TYPE_BYTES),
        (FD.TYPE_MESSAGE, FD.TYPE_BYTES),
    }
)

# Well-known types with their own ProtoJSON mapping: two of them may share a structure (Timestamp and
# Duration) and still be written differently, so they are never compared field by field.
_SPECIAL_JSON = frozenset(
    "google.protobuf." + n
    for n in (
        "Any",
        "Timestamp",
        "Duration",
        "FieldMask",
        "Struct",
        "Value",
        "ListValue",
        "NullValue",
        "Empty",
        "DoubleValue",
        "FloatValue",
        "Int64Value",
        "UInt64Value",
        "Int32Value",
        "UInt32Value",
        "BoolValue",
        "StringValue",
        "BytesValue",
    )
)

_TYPE_NAMES = {getattr(FD, n): n.removeprefix("TYPE_").lower() for n in dir(FD) if n.startswith("TYPE_")}


def diff_schemas(
    old: ProtoSchema,
    new: ProtoSchema,
    *,
    package: tuple[str, str] | None = None,
    rules: BreakingRules = DEFAULT_BREAKING,
) -> list[Change]:
    """Every change from ``old`` to ``new`` (built with canonical names), judged under ``rules``;
    ``package=(old, new)`` if the files moved to another package."""
    diff = _Diff(old, new, rules)
    if package is not None:
        diff.add(
            "package.changed",
            package[1] or package[0],
            False,
            False,
            f"package {package[0] or '(none)'} became {package[1] or '(none)'}: full names, gRPC method "
            "paths and Any type URLs change",
        )
    diff.files()
    diff.messages()
    diff.enums()
    diff.services()
    diff.extensions()
    diff.moves()
    return diff.changes


def _in(number: int, ranges: tuple[tuple[int, int], ...]) -> bool:
    return any(start <= number < end for start, end in ranges)


def _subtract(ranges: tuple[tuple[int, int], ...], minus: tuple[tuple[int, int], ...]) -> list[tuple[int, int]]:
    """The parts of the half-open ``ranges`` that ``minus`` does not cover."""
    left: list[tuple[int, int]] = []
    for start, end in ranges:
        pieces = [(start, end)]
        for cut_start, cut_end in minus:
            kept: list[tuple[int, int]] = []
            for a, b in pieces:
                if cut_end <= a or cut_start >= b:
                    kept.append((a, b))
                    continue
                if a < cut_start:
                    kept.append((a, cut_start))
                if cut_end < b:
                    kept.append((cut_end, b))
            pieces = kept
        left.extend(pieces)
    return left


def _span(start: int, end: int) -> str:
    return str(start) if end == start + 1 else f"{start} to {end - 1}"


def _type_label(field: FieldModel) -> str:
    return field.type_name or _TYPE_NAMES.get(field.type, str(field.type))


def _at(where: str) -> str:
    return f" [{where}]" if where else ""


_LENIENT = {
    "json": frozenset({BreakingRules.WIRE}),
    "runtime": frozenset({BreakingRules.WIRE, BreakingRules.WIRE_JSON}),
}
_STRICT = {"package": frozenset({BreakingRules.PACKAGE, BreakingRules.FILE}), "file": frozenset({BreakingRules.FILE})}
_NOT_JUDGED = {
    BreakingRules.WIRE: "WIRE judges the binary encoding only",
    BreakingRules.WIRE_JSON: "WIRE_JSON judges the binary and ProtoJSON encodings only",
}
_JUDGED = {
    BreakingRules.PACKAGE: "breaking under PACKAGE: the package's generated code changes",
    BreakingRules.FILE: "breaking under FILE: generated code changes",
}


class _Diff:
    def __init__(self, old: ProtoSchema, new: ProtoSchema, rules: BreakingRules = DEFAULT_BREAKING) -> None:
        self.old = old
        self.new = new
        self.rules = rules
        self.changes: list[Change] = []
        self.active: set[tuple[str, str]] = set()  # structural comparisons in progress (recursive types)
        self.compared: dict[tuple[str, str], tuple[bool, bool, str]] = {}  # pair -> verdicts, first path

    def add(
        self,
        code: str,
        path: str,
        backward: bool,
        forward: bool,
        message: str,
        *,
        wire: tuple[bool, bool] = (True, True),
    ) -> None:
        """Record a change judged (``backward``, ``forward``) by the engine, ``wire`` its binary-only verdict;
        the rule category then relaxes or tightens it as :data:`~._proto_codes.RULES` says."""
        rule = RULES[code]
        if self.rules in _LENIENT.get(rule.scope, ()) and (backward, forward) != wire:
            backward, forward = wire
            message += f" ({_NOT_JUDGED[self.rules]})"
        if rule.strict is not None and self.rules in _STRICT[rule.strict] and (backward or forward):
            backward = forward = False
            message += f" ({_JUDGED[self.rules]})"
        # Additions that every reader tolerates still grow the interface: semver wants a minor for them.
        additive = backward and forward and code in ADDITIVE_CODES
        self.changes.append(Change(code, path, backward, forward, message, additive=additive))

    # -- what is reported at all --------------------------------------------------------------------------

    def _reported(self, file: str, mine: ProtoSchema, other: ProtoSchema) -> bool:
        """Whether a type present on one side only is a change: yes for the files that were asked for and
        for files on both sides; no for a dependency that simply is not imported any more (or newly is):
        the fields that used it report their own change."""
        return mine.files[file].is_root or file in other.files

    # -- files ----------------------------------------------------------------------------------------------

    def files(self) -> None:
        pairs = [(self.old.files[n], self.new.files[n]) for n in self.old.files.keys() & self.new.files.keys()]
        old_roots = [f for f in self.old.files.values() if f.is_root]
        new_roots = [f for f in self.new.files.values() if f.is_root]
        if len(old_roots) == 1 and len(new_roots) == 1 and old_roots[0].name != new_roots[0].name:
            pairs.append((old_roots[0], new_roots[0]))
        for before, after in sorted(pairs, key=lambda p: p[1].name):
            if before.package != after.package:  # one file of several moved (a move of all is reported once)
                self.add(
                    "package.changed",
                    after.package or after.name,
                    False,
                    False,
                    f"{after.name}: package {before.package or '(none)'} became {after.package or '(none)'}: "
                    "full names, gRPC method paths and Any type URLs change",
                )
            was, now = dict(before.options), dict(after.options)
            for option in sorted(was.keys() | now.keys()):
                if was.get(option) != now.get(option):
                    self.add(
                        "file.option_changed",
                        after.package or after.name,
                        True,
                        True,
                        f"{after.name}: option {option} {_option(was.get(option))} became "
                        f"{_option(now.get(option))}: generated code changes, the encodings do not",
                    )
            if before.syntax != after.syntax:
                self.add(
                    "file.syntax_changed",
                    after.package or after.name,
                    True,
                    True,
                    f"{after.name}: {before.syntax} became {after.syntax}; presence, enum openness, "
                    "UTF-8 checks and defaults are judged per element below",
                )

    def moves(self) -> None:
        """Declarations that now live in another file (the one analysed root file may change its name)."""
        renamed: dict[str, str] = {}
        old_roots = [f.name for f in self.old.files.values() if f.is_root]
        new_roots = [f.name for f in self.new.files.values() if f.is_root]
        if len(old_roots) == 1 and len(new_roots) == 1:
            renamed[old_roots[0]] = new_roots[0]
        old, new = self.old, self.new
        declared: list[tuple[str, str, str, str]] = []  # kind, name, old file, new file
        for name, message in new.messages.items():
            if name in old.messages and not message.map_entry and name.rpartition(".")[0] not in new.messages:
                declared.append(("message", name, old.messages[name].file, message.file))
        for name, enum in new.enums.items():
            if name in old.enums and name.rpartition(".")[0] not in new.messages:
                declared.append(("enum", name, old.enums[name].file, enum.file))
        for name, service in new.services.items():
            if name in old.services:
                declared.append(("service", name, old.services[name].file, service.file))
        for key, file in new.extension_files.items():
            if key in old.extension_files:
                declared.append(("extension", new.extensions[key].full_name, old.extension_files[key], file))
        for kind, name, was, now in sorted(declared, key=lambda d: d[1]):
            if renamed.get(was, was) != now:
                self.add(
                    "file.declaration_moved",
                    name,
                    True,
                    True,
                    f"{kind} {name} moved from {was} to {now}: generated code is per file in some languages",
                )

    # -- messages -------------------------------------------------------------------------------------------

    def messages(self) -> None:
        old, new = self.old, self.new
        for name, before in old.messages.items():
            if before.map_entry:
                continue  # judged through the map field that owns it
            after = new.messages.get(name)
            if after is not None:
                self.message_pair(before, after, name)
            elif self._reported(before.file, old, new) and not self._parent_gone(name):
                self.add(
                    "message.removed",
                    name,
                    False,
                    False,
                    f"message {name} was removed: data and calls that use it cannot be read{_at(before.where)}",
                )
        for name, after in new.messages.items():
            if name not in old.messages and not after.map_entry and self._reported(after.file, new, old):
                self.add("message.added", name, True, True, f"message {name} was added{_at(after.where)}")

    def _parent_gone(self, name: str) -> bool:
        parent = name.rpartition(".")[0]
        return parent in self.old.messages and parent not in self.new.messages

    def message_pair(self, before: MessageModel, after: MessageModel, prefix: str) -> None:
        for number, old_field in before.fields.items():
            new_field = after.fields.get(number)
            if new_field is None:
                self.field_gone(before, after, old_field, prefix)
            elif new_field.name == old_field.name:
                self.field_pair(old_field, new_field, f"{prefix}.{new_field.name}")
            elif old_field.name in after.numbers or new_field.name in before.numbers:
                self.add(
                    "field.number_reused",
                    f"{prefix}.{new_field.name}",
                    False,
                    False,
                    f"number {number} carried {old_field.name!r} and now carries {new_field.name!r}, which "
                    f"had another number before: each side misreads the other{_at(new_field.where)}",
                )
            else:
                self.add(
                    "field.renamed",
                    f"{prefix}.{new_field.name}",
                    False,
                    False,
                    f"field {old_field.name!r} (= {number}) was renamed to {new_field.name!r}: binary "
                    f"is unchanged, but ProtoJSON keys change{_at(new_field.where)}",
                )
                self.field_pair(old_field, new_field, f"{prefix}.{new_field.name}", renamed=True)
        for number, new_field in after.fields.items():
            if number in before.fields or new_field.name in before.numbers:
                continue  # judged above (the name's move is reported from the old side)
            if new_field.cardinality == "required":
                self.add(
                    "field.added_required",
                    f"{prefix}.{new_field.name}",
                    False,
                    True,
                    f"required field {new_field.name!r} (= {number}) was added: old data lacks it, so new "
                    f"readers reject it{_at(new_field.where)}",
                )
            else:
                self.add(
                    "field.added",
                    f"{prefix}.{new_field.name}",
                    True,
                    True,
                    f"field {new_field.name!r} (= {number}) was added{_at(new_field.where)}",
                )
        self.oneofs(before, after, prefix)
        self.reservations(before, after, prefix)

    def field_gone(self, before: MessageModel, after: MessageModel, field: FieldModel, prefix: str) -> None:
        path = f"{prefix}.{field.name}"
        if field.name in after.numbers:
            moved = after.numbers[field.name]
            self.add(
                "field.number_changed",
                path,
                False,
                False,
                f"field {field.name!r} moved from number {field.number} to {moved}: on the wire it is "
                f"another field{_at(after.fields[moved].where)}",
            )
        elif not _in(field.number, after.reserved):
            self.add(
                "field.removed",
                path,
                False,
                False,
                f"field {field.name!r} (= {field.number}) was removed without reserving its number: a later "
                f"field may reuse it and misread stored data; add `reserved {field.number};` and "
                f'`reserved "{field.name}";`{_at(field.where)}',
            )
        elif field.name not in after.reserved_names:
            self.add(
                "field.removed_name_not_reserved",
                path,
                False,
                False,
                f"field {field.name!r} (= {field.number}) was removed; its number is reserved but its name "
                f"is not, so a later field may reuse the ProtoJSON key{_at(field.where)}",
                wire=(True, field.cardinality != "required"),
            )
        else:
            required = field.cardinality == "required"
            self.add(
                "field.removed_reserved",
                path,
                True,
                not required,
                f"field {field.name!r} (= {field.number}) was removed with its number and name reserved"
                + (": old readers require it" if required else "")
                + _at(field.where),
            )

    def reservations(self, before: MessageModel, after: MessageModel, prefix: str) -> None:
        for start, end in _subtract(before.reserved, after.reserved):
            self.add(
                "message.reserved_removed",
                prefix,
                False,
                False,
                f"reserved number {_span(start, end)} of {prefix} is no longer reserved: data from older "
                f"versions may carry it{_at(after.where)}",
            )
        for name in sorted(before.reserved_names - after.reserved_names):
            self.add(
                "message.reserved_removed",
                prefix,
                False,
                False,
                f"reserved name {name!r} of {prefix} is no longer reserved: older ProtoJSON data may use "
                f"it{_at(after.where)}",
            )
        for start, end in _subtract(before.extension_ranges, after.extension_ranges):
            self.add(
                "message.extension_range_removed",
                prefix,
                False,
                False,
                f"extension numbers {_span(start, end)} of {prefix} are no longer an extension range: "
                f"extension data may be misread{_at(after.where)}",
            )

    def oneofs(self, before: MessageModel, after: MessageModel, prefix: str) -> None:
        common = {n for n in before.fields.keys() & after.fields.keys() if _same_field(before, after, n)}
        for number in sorted(common):
            old_field, new_field = before.fields[number], after.fields[number]
            path = f"{prefix}.{new_field.name}"
            was = _companions(before, old_field, common)
            now = _companions(after, new_field, common)
            if old_field.oneof is None and new_field.oneof is not None:
                # Conservative (as Buf): old writers may set it together with fields now in the same oneof.
                self.add(
                    "field.moved_into_oneof",
                    path,
                    False,
                    True,
                    f"field {new_field.name!r} joined oneof {new_field.oneof!r}: new readers keep only the "
                    f"last member set, so old data that set several loses values{_at(new_field.where)}",
                )
            elif old_field.oneof is not None and new_field.oneof is None:
                self.add(
                    "field.moved_out_of_oneof",
                    path,
                    True,
                    not was,
                    f"field {new_field.name!r} left oneof {old_field.oneof!r}"
                    + (": new writers may set it with former members, old readers keep only one" if was else "")
                    + _at(new_field.where),
                )
            elif old_field.oneof is not None and new_field.oneof is not None and was != now:
                self.add(
                    "field.oneof_changed",
                    path,
                    now <= was,
                    was <= now,
                    f"the existing fields sharing a oneof with {new_field.name!r} changed: fields that "
                    f"could be set together no longer can, or the reverse{_at(new_field.where)}",
                )

    # -- fields ---------------------------------------------------------------------------------------------

    def field_pair(self, before: FieldModel, after: FieldModel, path: str, *, renamed: bool = False) -> None:
        if not renamed and before.json_name != after.json_name:
            self.add(
                "field.json_name_changed",
                path,
                False,
                False,
                f"json_name {before.json_name!r} became {after.json_name!r}: ProtoJSON keys change{_at(after.where)}",
            )
        if before.is_map or after.is_map:
            if before.is_map and after.is_map:
                self.map_pair(before, after, path)
            else:
                self.add(
                    "field.map_changed",
                    path,
                    False,
                    False,
                    f"{'map' if before.is_map else _type_label(before)} became "
                    f"{'a map' if after.is_map else _type_label(after)}: ProtoJSON writes a map as an "
                    f"object and a repeated field as an array{_at(after.where)}",
                )
        elif (before.cardinality == "repeated") != (after.cardinality == "repeated"):
            self.add(
                "field.cardinality_changed",
                path,
                False,
                False,
                f"field became {'repeated' if after.cardinality == 'repeated' else 'singular'}: ProtoJSON "
                f"writes a list as an array, and singular readers keep only the last element"
                f"{_at(after.where)}",
            )
        else:
            self.presence(before, after, path)
            self.value_type(before, after, path)
            self.default(before, after, path)
            self.utf8(before, after, path)
        was_options, now_options = dict(before.code_options), dict(after.code_options)
        for option in sorted(was_options.keys() & now_options.keys()):
            was, now = was_options[option], now_options[option]
            if was != now:
                self.add(
                    "field.option_changed",
                    path,
                    True,
                    True,
                    f"option {option} of {after.name!r} became {now} (was {was}): generated code changes, the "
                    f"encodings do not{_at(after.where)}",
                )
        if before.features != after.features:
            self.add(
                "field.features_changed",
                path,
                False,
                False,
                f"an editions feature of {after.name!r} changed in a way the engine cannot judge{_at(after.where)}",
            )

    def presence(self, before: FieldModel, after: FieldModel, path: str) -> None:
        was, now = before.cardinality, after.cardinality
        if was == now or (before.type in _MESSAGES) != (after.type in _MESSAGES):
            return  # a message always has presence: message <-> scalar is judged as a type change
        if now == "required":
            self.add(
                "field.required_added",
                path,
                False,
                True,
                f"field {after.name!r} became required: old data that lacks it is rejected by new readers"
                f"{_at(after.where)}",
            )
        elif was == "required":
            self.add(
                "field.required_removed",
                path,
                True,
                False,
                f"field {after.name!r} is no longer required: new data that lacks it is rejected by old "
                f"readers{_at(after.where)}",
            )
        else:
            self.add(
                "field.presence_changed",
                path,
                True,
                True,
                f"field {after.name!r} changed from {was} to {now} presence: encodings are the same; "
                f"unset and zero may now be told apart{_at(after.where)}",
            )

    def value_type(self, before: FieldModel, after: FieldModel, path: str, role: str = "type") -> None:
        was, now = before.type, after.type
        if was == now and before.type_name == after.type_name:
            return
        if was in _MESSAGES and now in _MESSAGES:
            if was != now:
                self.add(
                    "field.type_changed",
                    path,
                    False,
                    False,
                    f"{role} changed between length-prefixed and delimited (group) encoding{_at(after.where)}",
                )
            else:
                self.message_type(before.type_name, after.type_name, path, "field.message_type_changed", path)
            return
        if was == FD.TYPE_ENUM and now == FD.TYPE_ENUM:
            self.enum_type(before.type_name, after.type_name, path)
            return
        backward_binary, backward_json = self.flow(before, after, self.new)
        forward_binary, forward_json = self.flow(after, before, self.old)
        backward, forward = backward_binary and backward_json, forward_binary and forward_json
        label = f"{role} {_type_label(before)} became {_type_label(after)}"
        if (backward_binary and not backward_json) or (forward_binary and not forward_json):
            self.add(
                "field.type_changed_json",
                path,
                backward,
                forward,
                f"{label}: the binary encoding carries the values, ProtoJSON writes them differently{_at(after.where)}",
                wire=(backward_binary, forward_binary),
            )
        elif was in _INTEGERS and now in _INTEGERS and backward != forward:
            code = "field.type_widened" if backward else "field.type_narrowed"
            self.add(
                code,
                path,
                backward,
                forward,
                f"{label}: values of the wider type are truncated or misread by the narrower{_at(after.where)}",
            )
        else:
            self.add(
                "field.type_changed",
                path,
                backward,
                forward,
                f"{label}: wire types differ or values are reinterpreted{_at(after.where)}",
            )

    def flow(self, writer: FieldModel, reader: FieldModel, readers: ProtoSchema) -> tuple[bool, bool]:
        """(binary, ProtoJSON): does a value ``writer`` writes reach ``reader`` intact?"""
        pair = (writer.type, reader.type)
        if pair in _SAFE:
            return True, True
        if pair == (FD.TYPE_INT32, FD.TYPE_ENUM):
            # An open enum keeps unknown numbers and ProtoJSON parsers accept numbers for enums; a closed
            # enum moves unknown numbers to the unknown fields (binary) or rejects them (ProtoJSON).
            open_enum = not readers.enums[reader.type_name].closed
            return open_enum, open_enum
        if pair in _BINARY_ONLY:
            return True, False
        return False, False

    def default(self, before: FieldModel, after: FieldModel, path: str) -> None:
        if before.default is None or after.default is None:
            return
        comparable = before.type == after.type or {before.type, after.type} <= _INTEGERS
        if not comparable or _same_value(before.default, after.default):
            return
        self.add(
            "field.default_changed",
            path,
            False,
            False,
            f"default {before.default!r} became {after.default!r}: a reader fills an unset field with its own "
            f"default, so the two sides disagree about the value{_at(after.where)}",
        )

    def utf8(self, before: FieldModel, after: FieldModel, path: str, role: str = "field") -> None:
        if before.type != FD.TYPE_STRING or after.type != FD.TYPE_STRING or before.utf8_verify == after.utf8_verify:
            return
        if after.utf8_verify:
            self.add(
                "field.utf8_validation_changed",
                path,
                False,
                True,
                f"{role} {after.name!r} now rejects invalid UTF-8, which old writers could send{_at(after.where)}",
            )
        else:
            self.add(
                "field.utf8_validation_changed",
                path,
                True,
                False,
                f"{role} {after.name!r} no longer checks UTF-8: new writers may send bytes old readers reject"
                f"{_at(after.where)}",
            )

    def map_pair(self, before: FieldModel, after: FieldModel, path: str) -> None:
        old_entry = self.old.messages[before.type_name]
        new_entry = self.new.messages[after.type_name]
        for number, role in ((1, "map key"), (2, "map value")):
            # Entry fields have no source line of their own: point at the map field.
            old_part = old_entry.fields[number]
            new_part = replace(new_entry.fields[number], where=after.where)
            self.value_type(old_part, new_part, path, role)
            self.utf8(old_part, new_part, path, role)

    # -- structural comparison of renamed types -------------------------------------------------------------

    def message_type(self, old_name: str, new_name: str, path: str, code: str, prefix: str) -> None:
        """The data of ``old_name`` is now read as ``new_name``: compare them, changes under ``prefix``."""
        if old_name == new_name:
            return
        label = f"message type {old_name} became {new_name}"
        if old_name in _SPECIAL_JSON or new_name in _SPECIAL_JSON:
            self.add(code, path, False, False, f"{label}: well-known types have their own ProtoJSON form")
            return
        verdict = self._structural(old_name, new_name, prefix)
        if verdict is not None:
            backward, forward, note = verdict
            self.add(code, path, backward, forward, f"{label}; compared field by field{note}")

    def _structural(self, old_name: str, new_name: str, prefix: str) -> tuple[bool, bool, str] | None:
        """Compare reading ``old_name`` data as ``new_name``: (backward, forward, note), None inside a cycle.

        Each pair of types is compared once, its changes placed under the first path that needed it; later
        uses refer to that path, so a type reached along many paths does not multiply the report.
        """
        key = (old_name, new_name)
        if key in self.active:
            return None  # a recursive type: the comparison in progress reports its changes
        if key in self.compared:
            backward, forward, first = self.compared[key]
            return backward, forward, f": see {first}"
        self.active.add(key)
        start = len(self.changes)
        try:
            if old_name in self.old.enums:
                self.enum_pair(self.old.enums[old_name], self.new.enums[new_name], prefix)
            else:
                self.message_pair(self.old.messages[old_name], self.new.messages[new_name], prefix)
        finally:
            self.active.discard(key)
        found = self.changes[start:]
        backward, forward = all(c.backward for c in found), all(c.forward for c in found)
        self.compared[key] = (backward, forward, prefix)
        return backward, forward, "" if found else ": same structure"

    def enum_type(self, old_name: str, new_name: str, path: str) -> None:
        if old_name == new_name:
            return
        label = f"enum type {old_name} became {new_name}"
        if old_name in _SPECIAL_JSON or new_name in _SPECIAL_JSON:
            self.add(
                "field.enum_type_changed",
                path,
                False,
                False,
                f"{label}: well-known types have their own ProtoJSON form",
            )
            return
        verdict = self._structural(old_name, new_name, path)
        if verdict is not None:  # enums cannot recurse, but keep the contract of _structural
            backward, forward, note = verdict
            self.add("field.enum_type_changed", path, backward, forward, f"{label}; compared value by value{note}")

    # -- enums ----------------------------------------------------------------------------------------------

    def enums(self) -> None:
        old, new = self.old, self.new
        for name, before in old.enums.items():
            after = new.enums.get(name)
            if after is not None:
                self.enum_pair(before, after, name)
            elif self._reported(before.file, old, new) and not self._parent_gone(name):
                self.add("enum.removed", name, False, False, f"enum {name} was removed{_at(before.where)}")
        for name, after in new.enums.items():
            if name not in old.enums and self._reported(after.file, new, old):
                self.add("enum.added", name, True, True, f"enum {name} was added{_at(after.where)}")

    def enum_pair(self, before: EnumModel, after: EnumModel, prefix: str) -> None:
        if before.closed != after.closed:
            self.add(
                "enum.closedness_changed",
                prefix,
                before.closed,
                after.closed,
                f"enum became {'closed' if after.closed else 'open'}: a closed enum drops numbers it does "
                f"not know, an open one keeps them{_at(after.where)}",
            )
        for number, names in before.values.items():
            now = after.values.get(number)
            if now is None:
                self.enum_value_gone(before, after, number, prefix)
            elif set(names) != set(now):
                fresh = [n for n in now if n not in names]  # the path names what changed: a new name if any
                path = f"{prefix}.{fresh[0] if fresh else now[0]}"
                if set(names) <= set(now):
                    self.add(
                        "enum_value.alias_added",
                        path,
                        True,
                        False,
                        f"number {number} gained the name(s) {sorted(set(now) - set(names))}: old ProtoJSON "
                        f"readers do not know them{_at(after.where)}",
                    )
                else:
                    self.add(
                        "enum_value.renamed",
                        path,
                        set(names) <= set(now),
                        set(now) <= set(names),
                        f"number {number} was named {'/'.join(names)} and is now {'/'.join(now)}: "
                        f"ProtoJSON writes names{_at(after.where)}",
                    )
        for number, names in after.values.items():
            if number in before.values or any(n in before.numbers for n in names):
                continue
            self.add(
                "enum_value.added",
                f"{prefix}.{names[0]}",
                True,
                False,
                f"value {names[0]} (= {number}) was added: old readers drop it in ProtoJSON (and in binary "
                f"if the enum is closed){_at(after.where)}",
                wire=(True, not before.closed),
            )
        for start, end in _subtract(before.reserved, after.reserved):
            self.add(
                "enum.reserved_removed",
                prefix,
                False,
                False,
                f"reserved number {_span(start, end)} of {prefix} is no longer reserved{_at(after.where)}",
            )
        for name in sorted(before.reserved_names - after.reserved_names):
            self.add(
                "enum.reserved_removed",
                prefix,
                False,
                False,
                f"reserved name {name!r} of {prefix} is no longer reserved{_at(after.where)}",
            )

    def enum_value_gone(self, before: EnumModel, after: EnumModel, number: int, prefix: str) -> None:
        names = before.values[number]
        path = f"{prefix}.{names[0]}"
        moved = [n for n in names if n in after.numbers]
        if moved:
            self.add(
                "enum_value.number_changed",
                path,
                False,
                False,
                f"{moved[0]} moved from number {number} to {after.numbers[moved[0]]}{_at(after.where)}",
            )
        elif _in(number, after.reserved) and all(n in after.reserved_names for n in names):
            self.add(
                "enum_value.removed_reserved",
                path,
                False,
                True,
                f"value {names[0]} (= {number}) was removed and reserved: new readers cannot read old data "
                f"that holds it (ProtoJSON drops the unknown name){_at(after.where)}",
                wire=(not after.closed, True),  # an open enum keeps an unknown number
            )
        else:
            number_kept = _in(number, after.reserved)
            self.add(
                "enum_value.removed",
                path,
                False,
                False,
                f"value {names[0]} (= {number}) was removed without reserving its number and name: old data "
                f"that holds it is misread, and a later value may reuse them{_at(after.where)}",
                wire=(not after.closed, True) if number_kept else (False, False),
            )

    # -- services -------------------------------------------------------------------------------------------

    def services(self) -> None:
        old, new = self.old, self.new
        for name, before in old.services.items():
            after = new.services.get(name)
            if after is not None:
                self.service_pair(before, after)
            elif self._reported(before.file, old, new):
                self.add(
                    "service.removed",
                    name,
                    False,
                    False,
                    f"service {name} was removed: every call to it fails{_at(before.where)}",
                )
        for name, after in new.services.items():
            if name not in old.services and self._reported(after.file, new, old):
                self.add("service.added", name, True, True, f"service {name} was added{_at(after.where)}")

    def service_pair(self, before: ServiceModel, after: ServiceModel) -> None:
        for name, old_method in before.methods.items():
            path = f"{after.name}.{name}"
            new_method = after.methods.get(name)
            if new_method is None:
                self.add(
                    "rpc.removed",
                    path,
                    False,
                    False,
                    f"RPC {name} was removed: calls to it fail with UNIMPLEMENTED{_at(old_method.where)}",
                )
            else:
                self.method_pair(old_method, new_method, path)
        for name, new_method in after.methods.items():
            if name not in before.methods:
                self.add(
                    "rpc.added", f"{after.name}.{name}", True, True, f"RPC {name} was added{_at(new_method.where)}"
                )

    def method_pair(self, before: MethodModel, after: MethodModel, path: str) -> None:
        for side, was, now in (
            ("client", before.client_streaming, after.client_streaming),
            ("server", before.server_streaming, after.server_streaming),
        ):
            if was != now:
                kind = "request" if side == "client" else "response"
                self.add(
                    f"rpc.{side}_streaming_changed",
                    path,
                    False,
                    False,
                    f"{kind}s became {'a stream' if now else 'unary'}: the call shape differs{_at(after.where)}",
                )
        if before.idempotency != after.idempotency:
            self.add(
                "rpc.idempotency_changed",
                path,
                True,
                True,
                f"idempotency_level {before.idempotency} became {after.idempotency}: gRPC ignores it; generated "
                f"code and HTTP mappings (GET for NO_SIDE_EFFECTS) change{_at(after.where)}",
            )
        self.message_type(before.input, after.input, path, "rpc.request_type_changed", f"{path}.request")
        self.message_type(before.output, after.output, path, "rpc.response_type_changed", f"{path}.response")

    # -- extensions -----------------------------------------------------------------------------------------

    def extensions(self) -> None:
        old, new = self.old, self.new
        # Custom options (extensions of google.protobuf.*Options) are judged like any extension: their values
        # are encoded in the descriptors that reflection, gRPC server reflection and option readers decode at
        # run time (decision 0112). Setting or clearing an option's value on an element is not compared.
        for key, before in old.extensions.items():
            after = new.extensions.get(key)
            if after is None:
                if self._reported(old.extension_files[key], old, new):
                    self.add(
                        "extension.removed",
                        before.full_name,
                        False,
                        False,
                        f"extension {before.full_name} (= {key[1]} of {key[0]}) was removed{_at(before.where)}",
                    )
                continue
            if after.full_name != before.full_name:
                self.add(
                    "field.renamed",
                    after.full_name,
                    False,
                    False,
                    f"extension {before.full_name} became {after.full_name}: ProtoJSON writes extensions as "
                    f"[full.name]{_at(after.where)}",
                )
            self.field_pair(before, after, after.full_name, renamed=True)
        for key, after in new.extensions.items():
            added = key not in old.extensions
            if added and self._reported(new.extension_files[key], new, old):
                self.add(
                    "extension.added",
                    after.full_name,
                    True,
                    True,
                    f"extension {after.full_name} (= {key[1]} of {key[0]}) was added{_at(after.where)}",
                )


def _option(value: str | None) -> str:
    return "(unset)" if value is None else repr(value)


def _companions(message: MessageModel, field: FieldModel, common: set[int]) -> frozenset[int]:
    """The other fields (existing on both sides) that share ``field``'s oneof."""
    if field.oneof is None:
        return frozenset()
    return frozenset(
        f.number
        for f in message.fields.values()
        if f.oneof == field.oneof and f.number != field.number and f.number in common
    )


def _same_field(before: MessageModel, after: MessageModel, number: int) -> bool:
    """Whether ``number`` names the same field on both sides (kept or renamed, not reused by another)."""
    old_name, new_name = before.fields[number].name, after.fields[number].name
    return old_name == new_name or (old_name not in after.numbers and new_name not in before.numbers)


def _same_value(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b
