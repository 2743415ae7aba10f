"""The protobuf corpus: pairs of .proto files with verdicts derived from the rules, not from the engine.

Each ``proto_corpus/<case>/`` holds ``old.proto``, ``new.proto`` (plus any file they import) and
``expected.json``: ``{"backward", "forward", "codes": [codes that must appear], "why"}``. An empty ``codes``
list means the pair must produce no change at all.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from google.protobuf.descriptor import FieldDescriptor as FD
from google.protobuf.message import Message
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from subhive.compat.protobuf import CODES, compile_proto, diff_protos

if TYPE_CHECKING:  # messages built at run time carry upb's descriptors; the stubs name both kinds
    from google._upb._message import FieldDescriptor as UpbField

CORPUS = Path(__file__).parent / "proto_corpus"
CASES = sorted(p.name for p in CORPUS.iterdir() if p.is_dir())


def test_corpus_is_large_enough() -> None:
    assert len(CASES) >= 50


@pytest.mark.parametrize("case", CASES)
def test_corpus_case(case: str) -> None:
    directory = CORPUS / case
    expected = json.loads((directory / "expected.json").read_text())
    report = diff_protos(directory / "old.proto", directory / "new.proto")
    codes = {c.code for c in report.changes}
    summary = "\n".join(f"  {c.code} {c.path} b={c.backward} f={c.forward}: {c.message}" for c in report.changes)
    assert (report.backward, report.forward) == (expected["backward"], expected["forward"]), (
        f"{case}: {expected['why']}\n{summary}"
    )
    if expected["codes"]:
        assert set(expected["codes"]) <= codes, f"{case}: missing {set(expected['codes']) - codes}\n{summary}"
    else:
        assert report.changes == (), f"{case}: expected no change\n{summary}"
    assert codes <= CODES.keys()


# -- round trips through the real protobuf runtime ------------------------------------------------------------
#
# For every corpus pair judged compatible in a direction, messages written with the writer's version are read
# with the reader's version, in binary and in ProtoJSON (both key styles), and every field the two sides share
# must come through with its value. The ProtoJSON reader skips unknown field names (the engine's documented
# assumption); everything else is the runtime's default behaviour.

I32, I64, U32, U64 = (-(2**31), 2**31 - 1), (-(2**63), 2**63 - 1), (0, 2**32 - 1), (0, 2**64 - 1)
INT_RANGES = {
    FD.TYPE_INT32: I32,
    FD.TYPE_SINT32: I32,
    FD.TYPE_SFIXED32: I32,
    FD.TYPE_INT64: I64,
    FD.TYPE_SINT64: I64,
    FD.TYPE_SFIXED64: I64,
    FD.TYPE_UINT32: U32,
    FD.TYPE_FIXED32: U32,
    FD.TYPE_UINT64: U64,
    FD.TYPE_FIXED64: U64,
}
SIMPLE_VALUES: dict[int, st.SearchStrategy[Any]] = {
    FD.TYPE_BOOL: st.booleans(),
    FD.TYPE_FLOAT: st.floats(width=32, allow_nan=False, allow_infinity=False),
    FD.TYPE_DOUBLE: st.floats(allow_nan=False, allow_infinity=False),
    FD.TYPE_STRING: st.text(max_size=8),
    FD.TYPE_BYTES: st.binary(max_size=8),
}
MAX_DEPTH = 3


def scalar_values(field: FD | UpbField) -> st.SearchStrategy[Any]:
    if field.type in INT_RANGES:
        low, high = INT_RANGES[field.type]
        # Extremes matter most: they are where truncation and sign flips show.
        return st.one_of(st.sampled_from([low, high, 0, 1, -1 if low < 0 else 2]), st.integers(low, high))
    if field.type == FD.TYPE_ENUM:
        assert field.enum_type is not None
        declared = st.sampled_from([v.number for v in field.enum_type.values])
        if field.enum_type.is_closed:
            return declared
        return st.one_of(declared, st.integers(*I32))  # open enums hold any int32
    return SIMPLE_VALUES[field.type]


def fill(message: Message, draw: Any, depth: int = 0) -> None:
    """Set a random selection of ``message``'s fields (one member per oneof, every required one)."""
    descriptor = message.DESCRIPTOR
    if descriptor.full_name.startswith("google.protobuf."):
        fill_well_known(message, draw)
        return
    chosen = {o.name: draw(st.sampled_from([None, *o.fields])) for o in descriptor.oneofs}
    for field in descriptor.fields:
        oneof = field.containing_oneof
        if oneof is not None and chosen[oneof.name] is not field:
            continue
        if oneof is None and not field.is_required and not draw(st.booleans()):
            continue  # a valid instance always carries its required fields
        fill_field(message, field, draw, depth)


def fill_well_known(message: Message, draw: Any) -> None:
    """Well-known types have ranges their ProtoJSON form enforces; Struct and friends are left empty."""
    name = message.DESCRIPTOR.full_name
    known: Any = message  # a message class made at run time: its fields are not in the stubs
    if name == "google.protobuf.Timestamp":
        known.seconds = draw(st.integers(-62135596800, 253402300799))  # years 1 to 9999
        known.nanos = draw(st.integers(0, 999_999_999))
    elif name == "google.protobuf.Duration":
        seconds = draw(st.integers(-315576000000, 315576000000))
        nanos = draw(st.integers(0, 999_999_999))
        known.seconds, known.nanos = seconds, (-nanos if seconds < 0 else nanos)
    elif name.endswith("Value") and "value" in message.DESCRIPTOR.fields_by_name:
        known.value = draw(scalar_values(message.DESCRIPTOR.fields_by_name["value"]))


def fill_field(message: Message, field: FD | UpbField, draw: Any, depth: int) -> None:
    value_type = field.message_type
    if value_type is not None and value_type.GetOptions().map_entry:
        key_field, value_field = value_type.fields_by_name["key"], value_type.fields_by_name["value"]
        target = getattr(message, field.name)
        for key in draw(st.lists(scalar_values(key_field), max_size=3, unique=True)):
            if value_field.message_type is not None:
                if depth < MAX_DEPTH:
                    fill(target[key], draw, depth + 1)
            else:
                target[key] = draw(scalar_values(value_field))
    elif field.is_repeated:
        target = getattr(message, field.name)
        if value_type is None:
            target.extend(draw(st.lists(scalar_values(field), max_size=3)))
        elif depth < MAX_DEPTH:
            for _ in range(draw(st.integers(0, 2))):
                fill(target.add(), draw, depth + 1)
    elif value_type is not None:
        if depth < MAX_DEPTH:
            sub = getattr(message, field.name)
            sub.SetInParent()
            fill(sub, draw, depth + 1)
    else:
        setattr(message, field.name, draw(scalar_values(field)))


def assert_preserved(written: Message, read: Message, where: str) -> None:
    """Every field the reader shares (by number) with the writer holds the written value."""
    for reader_field in read.DESCRIPTOR.fields:
        writer_field = written.DESCRIPTOR.fields_by_number.get(reader_field.number)
        if writer_field is None:
            continue
        here = f"{where}.{reader_field.name}"
        before, after = getattr(written, writer_field.name), getattr(read, reader_field.name)
        value_type = reader_field.message_type
        if value_type is not None and value_type.GetOptions().map_entry:
            assert set(before) == set(after), here
            for key in before:
                assert_same(before[key], after[key], f"{here}[{key!r}]")
        elif reader_field.is_repeated:
            assert len(before) == len(after), here
            for index, (b, a) in enumerate(zip(before, after, strict=True)):
                assert_same(b, a, f"{here}[{index}]")
        elif value_type is not None:
            assert written.HasField(writer_field.name) == read.HasField(reader_field.name), here
            if written.HasField(writer_field.name):  # unset ones are endless for recursive types
                assert_same(before, after, here)
        else:
            assert_same(before, after, here)


def assert_same(before: Any, after: Any, where: str) -> None:
    if isinstance(before, Message):
        assert_preserved(before, after, where)
    else:
        assert before == after, f"{where}: wrote {before!r}, read {after!r}"


def classes(fds: descriptor_pb2.FileDescriptorSet) -> dict[str, type[Message]]:
    return message_factory.GetMessages(list(fds.file), pool=descriptor_pool.DescriptorPool())


def round_trip_pairs() -> list[Any]:
    """(case, direction, writer type, reader type) for every direction a corpus case is judged to keep."""
    params = []
    for case in CASES:
        expected = json.loads((CORPUS / case / "expected.json").read_text())
        old = compile_proto(CORPUS / case / "old.proto")
        new = compile_proto(CORPUS / case / "new.proto")
        old_types, new_types = classes(old), classes(new)
        pairs = {(n, n) for n in old_types.keys() & new_types.keys() if not n.startswith("google.protobuf.")}
        pairs |= rpc_type_pairs(old, new)
        for direction in ("backward", "forward"):
            if not expected[direction]:
                continue
            for old_name, new_name in sorted(pairs):
                if old_types[old_name].DESCRIPTOR.GetOptions().map_entry:
                    continue
                writer, reader = (old_name, new_name) if direction == "backward" else (new_name, old_name)
                params.append(pytest.param(case, direction, writer, reader, id=f"{case}-{direction}-{writer}"))
    return params


def rpc_type_pairs(
    old: descriptor_pb2.FileDescriptorSet, new: descriptor_pb2.FileDescriptorSet
) -> set[tuple[str, str]]:
    """(old type, new type) for the request and response of every RPC present on both sides."""

    def methods(fds: descriptor_pb2.FileDescriptorSet) -> dict[str, tuple[str, str]]:
        return {
            f"{f.package}.{s.name}.{m.name}": (m.input_type.lstrip("."), m.output_type.lstrip("."))
            for f in fds.file
            for s in f.service
            for m in s.method
        }

    before, after = methods(old), methods(new)
    return {(before[m][i], after[m][i]) for m in before.keys() & after.keys() for i in (0, 1)}


ROUND_TRIPS = round_trip_pairs()


def test_round_trips_cover_many_cases() -> None:
    assert len({p.values[0] for p in ROUND_TRIPS}) >= 30


@pytest.mark.parametrize(("case", "direction", "writer_type", "reader_type"), ROUND_TRIPS)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_compatible_verdicts_survive_real_round_trips(
    case: str, direction: str, writer_type: str, reader_type: str, data: st.DataObject
) -> None:
    old = classes(compile_proto(CORPUS / case / "old.proto"))
    new = classes(compile_proto(CORPUS / case / "new.proto"))
    writers, readers = (old, new) if direction == "backward" else (new, old)
    written = writers[writer_type]()
    fill(written, data.draw)
    reader = readers[reader_type]

    read = reader.FromString(written.SerializeToString())
    assert_preserved(written, read, f"binary {writer_type}")
    for proto_names in (False, True):
        text = json_format.MessageToJson(written, preserving_proto_field_name=proto_names)
        read = json_format.Parse(text, reader(), ignore_unknown_fields=True)
        assert_preserved(written, read, f"json {writer_type}")
