"""The wire codec: every JSON value survives a round trip, the fast path or not."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from subhive.bus._codec import MAX_DEPTH, PayloadError, decode, depth_over, encode

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=30,
)


@given(JSON)
def test_every_json_value_round_trips(value: Any) -> None:
    data = encode(value)
    assert decode(data) == value
    assert json.loads(data) == value  # what any other JSON reader sees


@pytest.mark.parametrize("value", [2**70, -(2**80), {"n": 10**30}])
def test_integers_past_64_bits_take_the_slow_path_and_still_round_trip(value: Any) -> None:
    assert decode(encode(value)) == value


@pytest.mark.parametrize("data", [b'{"a": 1', b"NaN", b"", b"\xff\xfe", b'{"a": 1} x'])
def test_what_is_not_json_raises_value_error(data: bytes) -> None:
    with pytest.raises(ValueError, match=r"."):  # any ValueError, as long as it says why
        decode(data)


CODES = {"payload.too_deep", "payload.too_large", "payload.bad_unicode", "payload.malformed"}
PIECES = st.sampled_from(
    [
        b"[",
        b"]",
        b"{",
        b"}",
        b'"',
        b"\\",
        b"\\u",
        b"d800",
        b"dc00",
        b":",
        b",",
        b"1",
        b"9" * 20,
        b"1e999",
        b"NaN",
        b"null",
        b"\xff",
        b"\xed\xa0\x80",
        b"\xc3\xa9",
        b" ",
        b'"a"',
    ]
)


@given(st.binary(max_size=300) | st.lists(PIECES, max_size=200).map(b"".join))
def test_any_bytes_decode_to_a_value_or_a_payload_error_with_a_stable_code(data: bytes) -> None:
    code, value = _read(data)
    if code:
        assert code in CODES
    else:  # what was read is JSON that travels on: it encodes again, as UTF-8, to the same value
        assert decode(encode(value)) == value


def _read(data: bytes) -> tuple[str, Any]:
    """(code, None) for a refusal, ("", value) otherwise: anything else decode raises fails the test."""
    try:
        return "", decode(data)
    except PayloadError as exc:
        return exc.code, None


@given(st.integers(1, 3000), st.sampled_from([(b"[", b"]"), (b'{"a":', b"}")]), st.booleans())
def test_nesting_is_read_up_to_the_limit_and_refused_past_it_on_both_paths(
    depth: int, brackets: tuple[bytes, bytes], exact: bool
) -> None:
    opener, closer = brackets
    inner = b"123456789012345678901234567890" if exact else b"1"  # a long number takes the exact parser
    data = opener * depth + inner + closer * depth
    if depth > MAX_DEPTH:
        with pytest.raises(PayloadError) as caught:
            decode(data)
        assert caught.value.code == "payload.too_deep"
        return
    code, _ = _read(data)
    # Read; or, on the exact parser's path only, refused short of the limit (near Python's recursion limit).
    assert code == "" or (exact and depth > 500 and code == "payload.too_deep")


@given(st.characters(categories=["Cs"]), st.booleans())
def test_a_lone_surrogate_cannot_be_encoded_or_decoded(surrogate: str, as_key: bool) -> None:
    value = {surrogate: 1} if as_key else {"s": f"x{surrogate}y"}
    with pytest.raises(PayloadError) as caught:
        encode(value)
    assert caught.value.code == "payload.bad_unicode"
    escaped = json.dumps(value).encode()  # \udXXX escapes: valid JSON syntax, not Unicode text
    with pytest.raises(PayloadError) as caught:
        decode(escaped)
    assert caught.value.code == "payload.bad_unicode"


def test_the_depth_scan_ignores_brackets_inside_strings() -> None:
    assert not depth_over(b'["' + b"[" * 5000 + b'"]')
    assert depth_over(b"[" * 1025 + b'"]]]"' + b"]" * 1025)
    big = 123456789012345678901234567890
    assert decode(b'{"a": "' + b"{" * 3000 + b'", "n": ' + str(big).encode() + b"}")["n"] == big


@given(st.integers(0, 2000), st.sampled_from([-(10**19 - 1), 10**20 - 1, -(10**40), 2**64]), st.integers(0, 3))
def test_a_long_integer_anywhere_in_a_payload_is_read_exactly(pad: int, big: int, items: int) -> None:
    # Past 512 bytes a payload is sampled every 4th byte before it is scanned whole: any offset must be found,
    # for the shortest integers orjson would turn into floats (19 digits and a sign; 20 digits) too.
    value = {"pad": "x" * pad, "n": big, "more": [{"sku": "s" * 20, "qty": 12345}] * items}
    data = encode(value)
    assert decode(data) == value
    assert type(decode(data)["n"]) is int
