"""Rules that hold for every input: a span is the child of whatever traceparent it is given, and names itself as
the current trace only inside its block; a subject's metric labels name the contract member it belongs to."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from subhive._trace import current_traceparent
from subhive.bus import event_subject, op_subject
from subhive.telemetry import span
from subhive.telemetry._metrics import _member

from .conftest import finished, one

HEX = "0123456789abcdef"
ids = st.text(HEX, min_size=32, max_size=32).filter(lambda s: set(s) != {"0"})
span_ids = st.text(HEX, min_size=16, max_size=16).filter(lambda s: set(s) != {"0"})
names = st.from_regex(r"[a-z][a-z0-9_-]{0,20}", fullmatch=True)
members = st.from_regex(r"[a-z][a-z0-9_]{0,20}", fullmatch=True)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])  # cleared for each input, below
@given(trace=ids, parent=span_ids, kind=st.sampled_from(["internal", "server", "client", "producer", "consumer"]))
def test_a_span_is_the_child_of_the_traceparent_it_is_given(
    traced: InMemorySpanExporter, trace: str, parent: str, kind: str
) -> None:
    traced.clear()
    before = current_traceparent()
    with span("work", kind, parent=f"00-{trace}-{parent}-01") as work:
        assert current_traceparent() == work.traceparent
    assert current_traceparent() == before
    [done] = finished(traced)
    assert (done["trace_id"], done["parent_id"], done["kind"]) == (trace, parent, kind)
    assert work.traceparent == f"00-{trace}-{done['span_id']}-01"


@given(contract=names, major=st.integers(0, 10_000), member=members, sender=names)
def test_a_subjects_labels_name_its_contract_member(contract: str, major: int, member: str, sender: str) -> None:
    assert _member(op_subject(contract, major, member, sender)) == (contract, str(major), "request", member)
    assert _member(event_subject(contract, major, member)) == (contract, str(major), "event", member)


@pytest.mark.parametrize("incoming", ["", "garbage", "00-00000000000000000000000000000000-00f067aa0ba902b7-01"])
def test_a_missing_or_invalid_incoming_traceparent_starts_a_new_trace(
    traced: InMemorySpanExporter, incoming: str
) -> None:
    with span("the subscriber's own work", "internal") as outer, span("x", "consumer", parent=incoming) as handled:
        assert current_traceparent() == handled.traceparent
    assert handled.traceparent.split("-")[1] != outer.traceparent.split("-")[1]
    assert one(finished(traced), "consumer", "x")["parent_id"] is None
