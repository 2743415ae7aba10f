"""The JSON Schema of a protobuf message's proto3 JSON form accepts what protobuf's own ``json_format`` accepts,
and refuses what it refuses: for generated samples of every field kind (every integer type in and out of its
range, as numbers and strings, floats, enums, nested and recursive messages, repeated fields, maps with every
key kind, oneofs, well-known types, nulls), valid and broken alike.

Outside the comparison, by design (docs/decisions/0060-grpc-contract-tools.md): spellings only Python's
``int()``/``float()`` take (``"1e3"`` for an integer, ``"+5"``, ``true`` for a float or an enum), enum numbers no
value declares, and strings the schema's patterns admit that protobuf refuses later (a 13th month): the tool
refuses those too, when it builds the request.
"""

from __future__ import annotations

import base64
import functools
import re
import tempfile
from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pool, json_format, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from subhive._rs_validator import runtime_validator
from subhive.agent import message_schema
from subhive.agent._proto_schema import _decimal_pattern
from subhive.compat.protobuf import compile_proto

PROTO = """syntax = "proto3";
package props.v1;
import "google/protobuf/timestamp.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/wrappers.proto";
import "google/protobuf/struct.proto";

enum Color { COLOR_UNSPECIFIED = 0; RED = 1; GREEN = 2; }
message Leaf { string name = 1; sint64 weight = 2; }
message Everything {
  int32 i32 = 1; sint32 s32 = 2; sfixed32 sf32 = 3; uint32 u32 = 4; fixed32 f32 = 5;
  int64 i64 = 6; sint64 s64 = 7; sfixed64 sf64 = 8; uint64 u64 = 9; fixed64 f64 = 10;
  float fl = 11; double db = 12; bool flag = 13; string text = 14; bytes data = 15;
  Color color = 16; Leaf leaf = 17;
  repeated int64 many = 18; repeated Leaf leaves = 19; repeated Color colors = 20;
  map<string, Leaf> by_name = 21; map<int32, string> by_number = 22; map<bool, int64> by_flag = 23;
  map<uint64, Color> by_id = 24;
  oneof pick { string pick_text = 25; Leaf pick_leaf = 26; int64 pick_number = 27; }
  google.protobuf.Timestamp at = 28; google.protobuf.Duration took = 29;
  google.protobuf.Int64Value maybe_count = 30; google.protobuf.StringValue maybe_text = 31;
  google.protobuf.BoolValue maybe_flag = 32;
  google.protobuf.Struct extra = 33; google.protobuf.Value anything = 34; google.protobuf.ListValue list = 35;
  repeated Everything children = 36;
  optional int32 opt = 37;
}
"""
F = FieldDescriptor
RANGES = {
    **dict.fromkeys((F.TYPE_INT32, F.TYPE_SINT32, F.TYPE_SFIXED32), (-(2**31), 2**31 - 1)),
    **dict.fromkeys((F.TYPE_UINT32, F.TYPE_FIXED32), (0, 2**32 - 1)),
    **dict.fromkeys((F.TYPE_INT64, F.TYPE_SINT64, F.TYPE_SFIXED64), (-(2**63), 2**63 - 1)),
    **dict.fromkeys((F.TYPE_UINT64, F.TYPE_FIXED64), (0, 2**64 - 1)),
}
FLOAT_MAX = 3.4028234663852886e38
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)
WRAPPERS = {"google.protobuf.Int64Value", "google.protobuf.StringValue", "google.protobuf.BoolValue"}
WRONG = st.sampled_from([[], {}, [1], {"a": 1}])  # wrong for any scalar


@functools.cache
def everything() -> Descriptor:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "props.proto")
        path.write_text(PROTO, encoding="utf-8")
        files = compile_proto(path, include_dirs=[tmp]).file
    pool = descriptor_pool.DescriptorPool()
    for file in files:
        pool.Add(file)
    return pool.FindMessageTypeByName("props.v1.Everything")


@functools.cache
def validator() -> Any:
    return runtime_validator(message_schema(everything()))


def accepted(sample: Any) -> bool:
    try:
        json_format.ParseDict(sample, message_factory.GetMessageClass(everything())())
    except json_format.ParseError:
        return False
    return True


# -- samples ----------------------------------------------------------------------------------------------------


def integer(kind: int, *, valid: bool) -> st.SearchStrategy[Any]:
    low, high = RANGES[kind]
    inside = st.integers(low, high)
    if valid:
        return inside | inside.map(str) | st.integers(-(2**50), 2**50).filter(lambda n: low <= n <= high).map(float)
    outside = st.integers(high + 1, high + 2**70) | st.integers(low - 2**70, low - 1)
    return outside | outside.map(str) | st.sampled_from([1.5, "1.5", "12x", "", "abc", True, False]) | WRONG


def floating(kind: int, *, valid: bool) -> st.SearchStrategy[Any]:
    bound = FLOAT_MAX if kind == F.TYPE_FLOAT else None
    finite = st.floats(allow_nan=False, allow_infinity=False, min_value=-bound if bound else None, max_value=bound)
    if valid:
        return (
            finite | finite.map(repr) | st.integers(-(2**50), 2**50) | st.sampled_from(["NaN", "Infinity", "-Infinity"])
        )
    wrong = st.sampled_from(["nan", "abc", "1.5x", ""]) | WRONG
    if bound is None:
        return wrong
    too_large = st.floats(min_value=bound * 1.01, max_value=1e300)
    return too_large | too_large.map(lambda f: -f) | wrong


BASE64 = st.binary(max_size=8).flatmap(
    lambda b: st.sampled_from([base64.b64encode(b).decode(), base64.urlsafe_b64encode(b).decode()])
)
#: Right and wrong values of the other scalars.
SIMPLE = {
    F.TYPE_BOOL: (st.booleans(), st.sampled_from([0, 1, "true", "false"]) | WRONG),
    F.TYPE_STRING: (st.text(max_size=8), st.integers() | st.booleans() | WRONG),
    F.TYPE_BYTES: (BASE64, st.integers() | st.booleans() | WRONG),
}
#: Right and wrong JSON of the well-known types that are not objects of their fields.
WELL_KNOWN = {
    "google.protobuf.Timestamp": (
        st.datetimes().map(lambda d: d.isoformat() + "Z"),  # 0042-..., and a fraction now and then
        st.sampled_from(["yesterday", "2024-01-01", 1700000000, "2024-01-01 10:00:00Z"]) | WRONG,
    ),
    "google.protobuf.Duration": (
        st.integers(-(10**9), 10**9).map(lambda n: f"{n}s") | st.sampled_from(["1.5s", "-0.000000001s"]),
        st.sampled_from(["1.5", "abc", "s", 3]) | WRONG,
    ),
    "google.protobuf.Struct": (
        st.dictionaries(st.text(max_size=4), JSON, max_size=3),
        st.sampled_from(["x", 3, True]) | st.lists(JSON, max_size=2),
    ),
    "google.protobuf.ListValue": (
        st.lists(JSON, max_size=3),
        st.sampled_from(["x", 3, True]) | st.dictionaries(st.text(max_size=2), JSON, max_size=2),
    ),
    "google.protobuf.Value": (JSON, st.nothing()),  # any JSON is a Value
}


def scalar(field: FieldDescriptor, *, valid: bool) -> st.SearchStrategy[Any]:
    kind = field.type
    if kind in RANGES:
        return integer(kind, valid=valid)
    if kind in (F.TYPE_FLOAT, F.TYPE_DOUBLE):
        return floating(kind, valid=valid)
    if kind in SIMPLE:
        return SIMPLE[kind][0 if valid else 1]
    assert field.enum_type is not None
    if valid:
        return st.sampled_from([v.name for v in field.enum_type.values] + [v.number for v in field.enum_type.values])
    return st.sampled_from(["PURPLE", "red", "", "COLOR"]) | WRONG


def value(field: FieldDescriptor, depth: int, *, valid: bool) -> st.SearchStrategy[Any]:
    """One element of ``field``'s value; a broken message element has one defect inside."""
    message = field.message_type
    if message is None:
        return scalar(field, valid=valid)
    if message.full_name in WRAPPERS:
        return scalar(message.fields_by_name["value"], valid=valid)
    if message.full_name in WELL_KNOWN:
        return WELL_KNOWN[message.full_name][0 if valid else 1]
    if valid:
        return messages(message, depth + 1)
    return st.sampled_from(["x", 3, True, [{}]]) | broken(message, depth + 1)


def map_keys(key: FieldDescriptor, *, valid: bool) -> st.SearchStrategy[str]:
    if key.type in RANGES:
        low, high = RANGES[key.type]
        if valid:
            return st.integers(low, high).map(str)
        return (st.integers(high + 1, high + 2**40) | st.integers(low - 2**40, low - 1)).map(str) | st.just("x")
    if key.type == F.TYPE_BOOL:
        return st.sampled_from(["true", "false"] if valid else ["yes", "True", "1"])
    return st.text(max_size=4) if valid else st.nothing()


def good_field(field: FieldDescriptor, depth: int) -> st.SearchStrategy[Any]:
    """A whole field, right (null included: a field's default)."""
    entry = field.message_type
    if entry is not None and entry.GetOptions().map_entry:
        key, item = entry.fields_by_name["key"], entry.fields_by_name["value"]
        return st.dictionaries(map_keys(key, valid=True), value(item, depth, valid=True), max_size=3) | st.none()
    if field.is_repeated:
        return st.lists(value(field, depth, valid=True), max_size=3) | st.none()
    return value(field, depth, valid=True) | st.none()


def bad_field(field: FieldDescriptor, depth: int) -> st.SearchStrategy[Any]:
    """A whole field with exactly one defect."""
    entry = field.message_type
    if entry is not None and entry.GetOptions().map_entry:
        key, item = entry.fields_by_name["key"], entry.fields_by_name["value"]
        good = st.dictionaries(map_keys(key, valid=True), value(item, depth, valid=True), max_size=2)
        bad_key = st.builds(
            lambda g, k, v: {**g, k: v}, good, map_keys(key, valid=False), value(item, depth, valid=True)
        )
        bad_value = st.builds(
            lambda g, k, v: {**g, k: v}, good, map_keys(key, valid=True), value(item, depth, valid=False) | st.none()
        )
        return bad_key | bad_value | st.sampled_from(["x", [], 3])
    if field.is_repeated:
        items = st.lists(value(field, depth, valid=True), max_size=2)
        null_item = field.message_type is None or field.message_type.full_name != "google.protobuf.Value"
        bad_item = value(field, depth, valid=False) | (st.none() if null_item else st.nothing())
        spliced = st.builds(lambda g, b, i: [*g[:i], b, *g[i:]], items, bad_item, st.integers(0, 2))
        return spliced | st.sampled_from(["x", {}, 3])
    return value(field, depth, valid=False)


def usable(message: Descriptor, depth: int) -> list[FieldDescriptor]:
    """The fields sampled at ``depth``: recursion stops after two levels."""
    if depth < 2:
        return list(message.fields)
    return [f for f in message.fields if f.message_type is None or f.message_type.full_name.startswith("google.")]


def messages(message: Descriptor, depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    """Right samples of ``message``: any subset of its fields, at most one member of each oneof set."""
    fields = usable(message, depth)
    members = {
        f.name: f.containing_oneof.name for f in fields if f.containing_oneof and len(f.containing_oneof.fields) > 1
    }
    samples = st.fixed_dictionaries({}, optional={f.name: good_field(f, depth) for f in fields})

    def one_per_oneof(sample: dict[str, Any]) -> dict[str, Any]:
        seen: set[str] = set()
        out = {}
        for name, item in sample.items():
            group = members.get(name)
            if group is not None and item is not None:
                if group in seen:
                    continue
                seen.add(group)
            out[name] = item
        return out

    return samples.map(one_per_oneof)


def broken(message: Descriptor, depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    """Samples of ``message`` with exactly one defect: a field's value, two members of one oneof, an unknown field."""
    fields = usable(message, depth)
    picked = st.sampled_from(fields).flatmap(lambda f: st.tuples(st.just(f.name), bad_field(f, depth)))
    bad_value = st.builds(lambda good, pair: {**good, pair[0]: pair[1]}, messages(message, depth), picked)
    oneofs = [o for o in message.oneofs if len(o.fields) > 1]
    variants = [bad_value, bad_value, bad_value, st.builds(lambda good: {**good, "nope": 1}, messages(message, depth))]
    for oneof in oneofs:
        a, b = oneof.fields[0], oneof.fields[1]
        variants.append(
            st.builds(
                lambda good, x, y, a=a, b=b: {**good, a.name: x, b.name: y},
                messages(message, depth),
                value(a, depth, valid=True),
                value(b, depth, valid=True),
            )
        )
    return st.one_of(variants)


# -- properties -------------------------------------------------------------------------------------------------


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages(everything()) | broken(everything()))
def test_the_schema_accepts_exactly_what_json_format_accepts(sample: dict[str, Any]) -> None:
    assert validator().is_valid(sample) == accepted(sample), (validator().is_valid(sample), sample)


def one_field() -> st.SearchStrategy[dict[str, Any]]:
    """One field, right or with one defect: every field kind gets many tries."""
    fields = list(everything().fields)
    return st.sampled_from(fields).flatmap(lambda f: (good_field(f, 0) | bad_field(f, 0)).map(lambda v: {f.name: v}))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(one_field())
def test_field_by_field_the_schema_accepts_exactly_what_json_format_accepts(sample: dict[str, Any]) -> None:
    assert validator().is_valid(sample) == accepted(sample), (validator().is_valid(sample), sample)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages(everything()))
def test_what_json_format_prints_is_judged_alike(sample: dict[str, Any]) -> None:
    """Replies are printed this way: every field, defaults included, 64-bit integers as strings. (Not every
    printed message parses again: protobuf prints the largest float32 as 3.4028235e+38 and refuses it as too
    large, and so does the schema.)"""
    message = message_factory.GetMessageClass(everything())()
    try:
        json_format.ParseDict(sample, message)
    except json_format.ParseError:
        return
    for printed in (
        json_format.MessageToDict(message, preserving_proto_field_name=True),
        json_format.MessageToDict(message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True),
    ):
        assert validator().is_valid(printed) == accepted(printed), printed


@given(st.integers(-(2**65), 2**65), st.sampled_from(sorted(set(RANGES.values()))))
def test_an_integer_pattern_admits_exactly_the_decimals_in_range(number: int, bounds: tuple[int, int]) -> None:
    low, high = bounds
    assert bool(re.fullmatch(_decimal_pattern(low, high), str(number))) == (low <= number <= high)
    assert bool(re.fullmatch(_decimal_pattern(low, high), "00" + str(abs(number)))) == (abs(number) <= high)
