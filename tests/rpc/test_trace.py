"""Trace context helpers and the public surface of subhive.rpc."""

from __future__ import annotations

import re

import subhive.rpc
from subhive.rpc import (
    continue_trace,
    current_traceparent,
    new_traceparent,
    outgoing_traceparent,
    start_trace,
    trace_id,
)

TRACEPARENT = re.compile(r"00-[0-9a-f]{32}-[0-9a-f]{16}-01\Z")


def test_a_new_traceparent_is_valid_w3c() -> None:
    first, second = new_traceparent(), new_traceparent()
    assert TRACEPARENT.match(first)
    assert trace_id(first) != trace_id(second)


def test_start_trace_starts_a_new_trace_even_inside_another() -> None:
    assert current_traceparent() is None
    with start_trace() as outer:
        assert current_traceparent() == outer
        with start_trace() as inner:
            assert trace_id(inner) != trace_id(outer)
        assert current_traceparent() == outer
    assert current_traceparent() is None


def test_continue_trace_keeps_the_trace_and_outgoing_calls_get_new_spans() -> None:
    incoming = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    with continue_trace(incoming):
        sent = outgoing_traceparent()
    assert TRACEPARENT.match(sent)
    assert trace_id(sent) == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert sent != incoming


def test_the_public_surface_is_what_all_says() -> None:
    public = {name for name in dir(subhive.rpc) if not name.startswith("_")}
    assert set(subhive.rpc.__all__) == public - {"annotations"}
    for name in subhive.rpc.__all__:
        assert getattr(subhive.rpc, name) is not None
