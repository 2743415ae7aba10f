"""A full dead-letter stream holds events back, visibly, and lets them go once there is room (decision 0023).

An event is never terminated before its dead letter is kept. While the hive's stream is full, the event is
nak'd with a delay that doubles each time (up to five minutes), the hive's stats, heartbeat and `subhive
status` say how many are held, and once the stream has room they are kept and terminated. Real nats-server.
"""

from __future__ import annotations

import asyncio
from typing import Any

import nats
import pytest
from hypothesis import given
from hypothesis import strategies as st

from subhive.bus import EmbeddedServer, _keep_backoff, dlq_stream, durable_name, ensure_dead_letter_stream, event_stream
from subhive.bus._keep_backoff import KEEP_AGAIN, KEEP_AGAIN_MAX, KeepBackoff
from subhive.cli._root import _dead_letter_parts
from subhive.hive import HiveRuntime
from subhive.workspace import DeadLetterLimits
from tests.kit import run

from ._kit import hive, letters, loose, provision, publish_raw, until


def test_events_wait_for_room_in_a_full_dead_letter_stream_and_say_so(
    server: EmbeddedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first delay is 10 s in production; a short one keeps this test fast (the doubling is the same).
    monkeypatch.setattr(_keep_backoff, "KEEP_AGAIN", 0.3)
    handled: list[Any] = []

    async def on_noted(payload: Any) -> None:
        handled.append(payload)

    async def scenario() -> tuple[int, dict[str, Any], int, list[Any], int, list[Any]]:
        await provision(server, ["backend", "web"], [("loose", 1)])
        admin = await nats.connect(server.url)
        js = admin.jetstream()
        await ensure_dead_letter_stream(js, "web", DeadLetterLimits(max_bytes=8192))
        for i in range(100):  # full, as after a flood
            try:
                await js.publish("subhive.dlq.web.loose.v1.ev.noted", b"flood %d " % i + b"x" * 500)
            except Exception:  # maximum bytes exceeded
                break
        backend, web = await hive(server, "backend"), await hive(server, "web")
        try:
            await web.subscribe(loose(), "noted", on_noted)
            for _ in range(3):
                await publish_raw(backend, loose(), "noted", b"not json")
            await backend.publish(loose(), "noted", {"n": 1})
            held = await until(lambda: web.stats.dead_letter_blocked == 3 and handled, timeout=10)
            runtime = HiveRuntime("web")
            runtime.transport = web
            beat = runtime.status()["bus"]
            # Acks travel after the handler returns: wait until the server has the handled event's.
            pending = await _settled(js, 3)
            await js.purge_stream(dlq_stream("web"))  # room again
            await until(lambda: web.stats.dead_letter_blocked == 0 and web.stats.dead_lettered == 3, timeout=10)
            kept = await letters(server, "web")
            return bool(held), beat, pending, list(handled), await _settled(js, 0), kept
        finally:
            await web.close()
            await backend.close()
            await admin.close()

    held, beat, pending, handled_events, pending_after, kept = run(scenario())
    assert held
    assert beat["dead_letter_blocked"] == 3
    assert beat["not_kept"] >= 3
    assert pending == 3  # held, unacknowledged: nothing was dropped
    assert handled_events == [{"n": 1}]  # the events behind them went on
    assert pending_after == 0
    assert [(d.code, d.data) for d in kept] == [("payload.malformed", b"not json")] * 3


async def _settled(js: Any, expected: int, timeout: float = 10.0) -> int:
    """The consumer's unacknowledged count once it is ``expected`` (or its last value after ``timeout``):
    acks and terminations reach the server after the transport's call returns."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        info = await js.consumer_info(event_stream("loose", 1), durable_name("web", "loose", 1, "noted"))
        pending = int(info.num_ack_pending or 0)
        if pending == expected or asyncio.get_running_loop().time() > deadline:
            return pending
        await asyncio.sleep(0.02)


def test_status_names_the_held_events() -> None:
    parts = _dead_letter_parts({"dead_letters": 0, "dead_letter_blocked": 4})
    assert any("dead_letter_blocked: 4 events held" in p for p in parts)
    assert not any("held" in p for p in _dead_letter_parts({"dead_letters": 2}))


@given(st.lists(st.sampled_from(["fail", "kept"]), max_size=40))
def test_each_failure_doubles_the_delay_up_to_the_limit_and_keeping_resets_it(steps: list[str]) -> None:
    backoff, failures, now = KeepBackoff(), 0, 0.0
    for step in steps:
        if step == "fail":
            failures += 1
            delay = backoff.failed(("S", 7), now=now)
            assert delay == min(KEEP_AGAIN_MAX, KEEP_AGAIN * 2 ** (failures - 1))
            assert backoff.held(now=now) == 1
        else:
            backoff.kept(("S", 7))
            failures = 0
            assert backoff.held(now=now) == 0
    # An event that never came back (settled by another replica) stops counting as held.
    assert backoff.held(now=now + KEEP_AGAIN_MAX + 61) == 0
