"""The loop rules, for all write sequences: flagged exactly when the last ``repeats`` writes of one source
are the same key and value (within the window), or the chain is deeper than allowed."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from subhive.hive import LoopDetector

writes = st.lists(st.tuples(st.sampled_from(["a", "b"]), st.sampled_from([b"1", b"2"])), max_size=30)


@given(writes, st.integers(min_value=2, max_value=6))
def test_flagged_exactly_when_the_last_writes_repeat(sequence: list[tuple[str, bytes]], repeats: int) -> None:
    detector = LoopDetector(repeats=repeats, max_depth=1000)
    run = 0
    for index, (key, value) in enumerate(sequence):
        run = run + 1 if index and sequence[index - 1] == (key, value) else 1
        verdict = detector.check("ks", key, value, depth=1, now=float(index))
        assert (verdict is not None) == (run >= repeats), (sequence[: index + 1], verdict)


def test_repeats_spread_wider_than_the_window_are_not_a_loop() -> None:
    detector = LoopDetector(repeats=3, window=10.0)
    assert [detector.check("ks", "k", b"v", depth=1, now=t) for t in (0.0, 6.0, 12.0, 18.0)] == [None] * 4


def test_each_source_is_judged_on_its_own_writes() -> None:
    detector = LoopDetector(repeats=2)
    assert detector.check("a", "k", b"v", depth=1, now=0) is None
    assert detector.check("b", "k", b"v", depth=1, now=0) is None
    assert detector.check("a", "k", b"v", depth=1, now=0) == "a wrote the same value to 'k' 2 times in a row"


@given(st.integers(min_value=0, max_value=100), st.integers(min_value=1, max_value=50))
def test_a_chain_deeper_than_the_limit_is_a_loop(depth: int, limit: int) -> None:
    verdict = LoopDetector(max_depth=limit).check("ks", "k", b"v", depth=depth, now=0)
    assert (verdict is not None) == (depth > limit)
