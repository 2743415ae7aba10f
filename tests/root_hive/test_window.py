"""The watchers' frame window: bytes that decode to the messages they stand for, runs without gaps, wake-ups."""

from __future__ import annotations

import asyncio

from hypothesis import given
from hypothesis import strategies as st

from subhive.root_hive._proto import root_hive_pb2 as pb
from subhive.root_hive._window import EncodedFrame, FrameWindow, batch_bytes, passthrough
from tests.kit import run


def _encoded(seq: int, data_json: str = "{}", kind: str = "hive_registered") -> EncodedFrame:
    return EncodedFrame(seq, pb.Frame(seq=seq, kind=kind, time=1795000000.0, data_json=data_json).SerializeToString())


def _seqs(frames: list[EncodedFrame] | None) -> list[int] | None:
    return None if frames is None else [f.seq for f in frames]


@given(st.lists(st.tuples(st.text(max_size=300), st.text(max_size=20)), min_size=1, max_size=20))
def test_joined_elements_are_the_frame_batch_message(items: list[tuple[str, str]]) -> None:
    # Sizes up to a few hundred bytes make the length prefix one and two bytes long.
    frames = [_encoded(i + 1, data, kind) for i, (data, kind) in enumerate(items)]
    expected = pb.FrameBatch(frames=[pb.Frame.FromString(f.body) for f in frames])
    assert pb.FrameBatch.FromString(batch_bytes(frames)) == expected
    assert batch_bytes(frames) == expected.SerializeToString()


def test_passthrough_sends_bytes_as_they_are_and_serialises_messages() -> None:
    frame = pb.Frame(seq=7, kind="k")
    assert passthrough(b"\x08\x07") == b"\x08\x07"
    assert passthrough(frame) == frame.SerializeToString()


def test_since_returns_consecutive_runs_and_none_once_frames_left_the_window() -> None:
    async def scenario() -> None:
        window = FrameWindow(0, size=3)
        window.publish([_encoded(s) for s in range(1, 4)])
        assert _seqs(window.since(0)) == [1, 2, 3]
        assert _seqs(window.since(2)) == [3]
        assert window.since(3) == []
        window.publish([_encoded(s) for s in range(4, 8)])  # 7 frames > 2 * size: trimmed back to 3
        assert window.since(3) is None  # frame 4 has left the window: the caller reads the log
        assert _seqs(window.since(4)) == [5, 6, 7]
        window.publish([_encoded(7), _encoded(8)])  # a frame already published is not repeated
        assert _seqs(window.since(6)) == [7, 8]

    run(scenario())


def test_batch_reuses_the_last_join_for_the_same_run() -> None:
    async def scenario() -> None:
        window = FrameWindow(0, size=10)
        window.publish([_encoded(1), _encoded(2)])
        run = window.since(0)
        assert run is not None
        first = window.batch(run)
        assert window.batch(window.since(0) or []) is first
        assert window.batch(run[1:]) == batch_bytes(run[1:])

    run(scenario())


def test_an_idle_window_wakes_watchers_at_once_and_a_busy_one_coalesces() -> None:
    async def scenario() -> None:
        window = FrameWindow(0, size=10, wake_interval=1.0)
        waiter = asyncio.create_task(window.wait_after(0))
        await asyncio.sleep(0)
        window.publish([_encoded(1)])  # nothing woke anyone for a second: wake now
        await asyncio.wait_for(waiter, 0.5)

        later = asyncio.create_task(window.wait_after(1))
        await asyncio.sleep(0)  # waiting now
        window.publish([_encoded(2)])  # right after a wake-up: held back, then delivered with what follows
        window.publish([_encoded(3)])
        await asyncio.sleep(0.1)
        assert not later.done(), "a second wake-up within the interval"
        await asyncio.wait_for(later, 3.0)
        assert _seqs(window.since(1)) == [2, 3]

    run(scenario())


def test_close_wakes_waiters_at_once() -> None:
    async def scenario() -> None:
        window = FrameWindow(0, size=10, wake_interval=10.0)
        window.publish([_encoded(1)])
        waiter = asyncio.create_task(window.wait_after(1))
        await asyncio.sleep(0)
        window.close()
        await asyncio.wait_for(waiter, 0.5)
        assert window.closed

    run(scenario())
