"""The wire codec: every JSON value survives a round trip, the fast path or not."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from subhive.bus._codec import decode, encode

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
