"""Dead-letter pages (``DeadLetters.list`` with ``after=``): every letter is shown exactly once however the
letters' times run, including a stream whose times go back (a new leader's clock behind the old one's)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from subhive.bus import DeadLetter, DeadLetters
from subhive.bus._deadletter import oldest_first

_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


def _letter(stream: str, seq: int, second: int | None) -> DeadLetter:
    when = None if second is None else _EPOCH + timedelta(seconds=second)
    return DeadLetter(seq, stream.lower(), "", "", "", "", "", {}, b"", when, stream=stream)


# Per stream: the seconds of its letters in sequence order (any order of times, missing times too).
_STREAMS = st.dictionaries(
    st.sampled_from(["SUBHIVE_DLQ_a", "SUBHIVE_DLQ_b", "SUBHIVE_DLQ_c"]),
    st.lists(st.one_of(st.none(), st.integers(0, 20)), max_size=12),
    max_size=3,
)


def _read(streams: dict[str, list[DeadLetter]], after: dict[str, int], limit: int) -> list[DeadLetter]:
    """What ``DeadLetters.list`` does with the streams' letters: each read after its position, then merged."""
    return oldest_first(
        [[d for d in letters if d.seq > after.get(name, 0)] for name, letters in streams.items()], limit
    )


@given(_STREAMS, st.integers(1, 5))
def test_paging_shows_every_letter_exactly_once(times: dict[str, list[int | None]], limit: int) -> None:
    streams = {name: [_letter(name, seq, t) for seq, t in enumerate(ts, start=1)] for name, ts in times.items()}
    shown: list[DeadLetter] = []
    after: dict[str, int] = {}
    for _ in range(100):
        page = _read(streams, after, limit + 1)  # one more than shown: is there a next page?
        shown += page[:limit]
        if len(page) <= limit:
            break
        after = DeadLetters.positions(page[:limit], after)
    assert sorted((d.stream, d.seq) for d in shown) == sorted((d.stream, d.seq) for ls in streams.values() for d in ls)


@given(_STREAMS)
def test_a_page_is_oldest_first_where_times_rise(times: dict[str, list[int | None]]) -> None:
    rising = {name: sorted(t for t in ts if t is not None) for name, ts in times.items()}
    streams = {name: [_letter(name, seq, t) for seq, t in enumerate(ts, start=1)] for name, ts in rising.items()}
    page = oldest_first(list(streams.values()), 1000)
    assert [d.time for d in page] == sorted(d.time for ls in streams.values() for d in ls if d.time is not None)


def test_a_letter_older_than_the_one_before_it_is_not_skipped() -> None:
    # Stream a: seq 1 at t=5, seq 2 at t=1 (its clock went back); stream b: seq 1 at t=3. Pages of 2.
    streams = {"SUBHIVE_DLQ_a": [_letter("SUBHIVE_DLQ_a", 1, 5), _letter("SUBHIVE_DLQ_a", 2, 1)],
               "SUBHIVE_DLQ_b": [_letter("SUBHIVE_DLQ_b", 1, 3)]}  # fmt: skip
    first = _read(streams, {}, 2)
    assert [(d.stream, d.seq) for d in first] == [("SUBHIVE_DLQ_b", 1), ("SUBHIVE_DLQ_a", 1)]
    second = _read(streams, DeadLetters.positions(first), 2)
    assert [(d.stream, d.seq) for d in second] == [("SUBHIVE_DLQ_a", 2)]
