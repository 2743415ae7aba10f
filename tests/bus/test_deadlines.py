"""Handlers that never finish, and handlers that take their process down, cannot stop a consumer
(docs/decisions/0048-handler-deadlines-and-crash-backstop.md).

A hung handler is cancelled at its deadline and counts as a failure, ``handler.timeout``: the events behind it
are handled, and a caller hears ``handler.timeout`` before its own deadline. An event whose handler kills the
process comes back after every crash; past the crash bound it is dead-lettered as ``delivery.crashed`` instead
of coming back forever, and the events behind it are still handled.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from subhive.bus import EmbeddedServer, Failure, RemoteError
from subhive.bus._deadlines import Deadlines, Late
from tests.kit import run

from ._kit import hive, letters, loose, provision, until

REPO = Path(__file__).resolve().parents[2]


def test_a_hung_event_handler_is_failed_at_its_deadline_and_the_events_behind_it_are_handled(
    server: EmbeddedServer,
) -> None:
    handled: list[int] = []
    cancelled: list[int] = []

    async def handler(payload: Any) -> None:
        if payload["n"] == 0:
            try:
                await asyncio.Event().wait()  # never returns: a lost lock, a call without a timeout
            finally:
                cancelled.append(0)
        handled.append(payload["n"])

    async def scenario() -> tuple[list[Any], int]:
        await provision(server, ["backend", "web"], [("loose", 1)])
        backend = await hive(server, "backend")
        web = await hive(server, "web", event_deadline=0.5)
        try:
            await web.subscribe(loose(), "noted", handler)
            for n in range(5):
                await backend.publish(loose(), "noted", {"n": n})
            await until(lambda: len(handled) >= 4, timeout=10)
            kept = await until(lambda: letters(server, "web"), timeout=10)
            return kept, web.stats.retried
        finally:
            await web.close()
            await backend.close()

    kept, retried = run(scenario())
    assert handled == [1, 2, 3, 4]  # not stuck behind the hung one
    assert cancelled == [0, 0]  # each attempt was stopped at its deadline, not left running
    assert retried == 1  # a timeout is a handler failure: retried once, then kept
    assert [(json.loads(d.data), d.code) for d in kept] == [({"n": 0}, "handler.timeout")]


def test_a_hung_request_handler_answers_handler_timeout_within_the_callers_deadline(server: EmbeddedServer) -> None:
    async def echo(payload: Any) -> Any:
        if payload.get("hang"):
            await asyncio.Event().wait()
        return payload

    async def scenario() -> tuple[RemoteError, float, Any, list[Any]]:
        await provision(server, ["backend", "web"], [("loose", 1)])
        # One handler at a time: a hung one that kept its slot would leave every later request unanswered.
        backend = await hive(server, "backend", request_timeout=2.0, max_concurrency=1)
        web = await hive(server, "web", request_timeout=2.0)
        try:
            await backend.serve(loose(), {"echo": echo})
            started = time.monotonic()
            with pytest.raises(RemoteError) as caught:
                await web.request(loose(), "echo", {"hang": True})
            took = time.monotonic() - started
            answer = await web.request(loose(), "echo", {"after": 1})
            kept = await until(lambda: letters(server, "backend"), timeout=10)
            return caught.value, took, answer, kept
        finally:
            await web.close()
            await backend.close()

    error, took, answer, kept = run(scenario())
    assert error.code == "handler.timeout"  # a structured answer, not the caller's own bus.timeout
    assert took < 2.0  # within the caller's deadline (2 s): the provider's is 0.9 of its request timeout
    assert answer == {"after": 1}  # the slot was given back
    assert [(json.loads(d.data), d.code) for d in kept] == [({"hang": True}, "handler.timeout")]


def test_two_error_classes_on_one_member_are_two_repair_codes(server: EmbeddedServer) -> None:
    reports: list[Failure] = []

    async def report(failure: Failure) -> None:
        reports.append(failure)

    async def handler(payload: Any) -> None:
        raise (KeyError if payload["n"] % 2 else ValueError)(payload["n"])

    async def scenario() -> None:
        await provision(server, ["backend", "web"], [("loose", 1)])
        backend = await hive(server, "backend")
        web = await hive(server, "web", on_repeated_failure=report)
        try:
            await web.subscribe(loose(), "noted", handler)
            for n in range(2):
                await backend.publish(loose(), "noted", {"n": n})
            await until(lambda: len(reports) >= 2, timeout=10)
        finally:
            await web.close()
            await backend.close()

    run(scenario())
    # Each event fails twice (first try, one retry): each class reaches its second failure once.
    assert sorted(f.repair_code for f in reports) == ["handler.failed:KeyError", "handler.failed:ValueError"]
    assert {f.code for f in reports} == {"handler.failed"}


def test_failure_counts_are_dropped_once_the_event_is_handled_or_kept(server: EmbeddedServer) -> None:
    tries: dict[int, int] = {}

    async def handler(payload: Any) -> None:
        n = payload["n"]
        tries[n] = tries.get(n, 0) + 1
        if n == 1 or tries[n] == 1:  # 0 fails once then succeeds; 1 always fails
            raise RuntimeError("flaky")

    async def scenario() -> dict[Any, Any]:
        await provision(server, ["backend", "web"], [("loose", 1)])
        backend = await hive(server, "backend")
        web = await hive(server, "web")
        try:
            await web.subscribe(loose(), "noted", handler)
            for n in range(2):
                await backend.publish(loose(), "noted", {"n": n})
            await until(lambda: web.stats.dead_lettered >= 1 and tries.get(0) == 2, timeout=10)
            await until(lambda: not web._attempts, timeout=5)
            return dict(web._attempts)
        finally:
            await web.close()
            await backend.close()

    assert run(scenario()) == {}  # no count outlives its event: a long-running consumer does not grow
    assert tries == {0: 2, 1: 2}


def test_an_event_whose_handler_kills_the_process_is_dead_lettered_after_the_crash_bound(
    server: EmbeddedServer, tmp_path: Path
) -> None:
    bound = 3
    crasher, events = 1, 4

    async def publish() -> None:
        await provision(server, ["backend", "web"], [("loose", 1)])
        backend = await hive(server, "backend")
        try:
            for n in range(events):  # the crasher has events behind it: they must be handled, not kept
                await backend.publish(loose(), "noted", {"n": n, **({"crash": True} if n == crasher else {})})
        finally:
            await backend.close()

    run(publish())
    log = tmp_path / "handled.log"
    deadline = time.monotonic() + 60
    kept: list[Any] = []
    runs = 0
    while time.monotonic() < deadline and runs < bound + 3:
        runs += 1
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.bus._crashing_consumer", server.url, str(log), str(bound)],
            cwd=REPO,
            text=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            # Either the crasher kills it (the event comes back to the next run after the 1 s ack wait), or it
            # survives: then the crasher must have been kept and everything else handled.
            while proc.poll() is None and time.monotonic() < deadline:
                kept = run(letters(server, "web"))
                if kept and set(_lines(log, "done")) >= set(range(events)) - {crasher}:
                    break
                time.sleep(0.1)
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
            proc.wait(10)
        if kept:
            break

    assert [(json.loads(d.data), d.code) for d in kept] == [({"n": crasher, "crash": True}, "delivery.crashed")]
    assert _lines(log, "crash") == [crasher] * bound  # it crashed as often as the bound allows, then no more
    assert sorted(set(_lines(log, "done"))) == [n for n in range(events) if n != crasher]
    assert runs == bound + 1


def _lines(log: Path, word: str) -> list[int]:
    if not log.exists():
        return []
    return [int(line.split()[1]) for line in log.read_text(encoding="utf-8").splitlines() if line.startswith(word)]


def test_the_watchdog_cancels_only_late_calls_and_leaves_the_task_usable() -> None:
    deadlines = Deadlines()

    async def hang() -> None:
        await asyncio.Event().wait()

    async def swallow() -> str:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            return "finished anyway"  # a handler that ignores cancellation: its result stands
        return "unreachable"

    async def scenario() -> tuple[float, str, str, bool]:
        started = time.monotonic()
        with pytest.raises(Late):
            await deadlines.call(hang(), 0.1)
        late = time.monotonic() - started
        swallowed = await deadlines.call(swallow(), 0.1)
        await asyncio.sleep(0.01)  # the task's cancellations were all taken back: this sleep is not cancelled
        quick = await deadlines.call(asyncio.sleep(0, result="quick"), 0.1)
        outer = asyncio.ensure_future(deadlines.call(hang(), 10))
        await asyncio.sleep(0.01)
        outer.cancel()  # someone else's cancellation (a subscription stopped) is not a deadline
        await asyncio.gather(outer, return_exceptions=True)
        return late, swallowed, quick, outer.cancelled()

    late, swallowed, quick, cancelled = run(scenario())
    assert 0.1 <= late < 1.0  # at its deadline (the watchdog wakes at least every 50 ms), not never
    assert (swallowed, quick, cancelled) == ("finished anyway", "quick", True)
