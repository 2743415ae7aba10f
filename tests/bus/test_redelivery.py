"""Delivery accounting that loses nothing: a consumer killed with SIGKILL while a slow handler runs, again and
again, and every acknowledged event is still handled or dead-lettered (docs/decisions/0022).

JetStream's ``num_delivered`` counts a delivery the kill interrupted as a delivery: with the server's
``max_deliver`` deciding, events fetched by two killed runs were dropped without a trace. The transport counts
real handler failures itself; the server redelivers without limit.
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

from subhive.bus import EmbeddedServer, event_consumer
from tests.kit import run

from ._kit import hive, letters, loose, provision, until

REPO = Path(__file__).resolve().parents[2]
EVENTS = 240
FAILING = set(range(17, EVENTS, 40))  # these always raise: they must end in the dead letters, once each
KILLS = 4


def _consumer(url: str, log: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.bus._slow_consumer", url, str(log)],
        cwd=REPO,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )


def _kill(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    if proc.stdout is not None:
        proc.stdout.close()


def _lines(log: Path, word: str) -> list[int]:
    if not log.exists():
        return []
    return [
        int(line.split()[1])
        for line in log.read_text(encoding="utf-8").splitlines()
        if line.startswith(word + " ") and line.split()[1].isdigit()
    ]


def _started_handling(proc: subprocess.Popen[str], log: Path, after: int) -> None:
    """Wait (bounded) until the consumer is ready and has started more handlers than ``after``."""
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    deadline = time.monotonic() + 15
    while len(_lines(log, "start")) <= after and time.monotonic() < deadline:
        time.sleep(0.02)


def test_a_consumer_killed_while_handling_again_and_again_loses_no_acknowledged_event(
    server: EmbeddedServer, tmp_path: Path
) -> None:
    async def publish() -> None:
        await provision(server, ["backend", "web"], [("loose", 1)])
        backend = await hive(server, "backend")
        try:
            for n in range(EVENTS):  # each returns once JetStream stored it: acknowledged
                await backend.publish(loose(), "noted", {"n": n, **({"fail": True} if n in FAILING else {})})
        finally:
            await backend.close()

    run(publish())
    log = tmp_path / "handled.log"
    for _ in range(KILLS):
        proc = _consumer(server.url, log)
        try:
            # Killed early in its batch, while a handler sleeps: most of what it fetched was never started.
            _started_handling(proc, log, after=len(_lines(log, "start")) + 10)
        finally:
            _kill(proc)
        # Past the ack wait (2 s), the killed run's events are due again: the next run fetches them first, so
        # its kill interrupts the same events a second time (where JetStream's max_deliver=2 dropped them).
        time.sleep(2.5)
    killed_at = len(_lines(log, "start"))

    final = _consumer(server.url, log)
    try:
        deadline = time.monotonic() + 30
        kept: list[Any] = []
        while time.monotonic() < deadline:
            done = set(_lines(log, "done"))
            kept = run(letters(server, "web"))
            if done | FAILING == set(range(EVENTS)) and len(kept) >= len(FAILING):
                break
            time.sleep(0.2)
    finally:
        _kill(final)

    assert killed_at < EVENTS  # the kills did come while events were still being handled
    done = set(_lines(log, "done"))
    assert done == set(range(EVENTS)) - FAILING
    assert sorted(json.loads(d.data)["n"] for d in kept) == sorted(FAILING)
    assert {d.code for d in kept} == {"handler.failed"}


def test_events_waiting_behind_a_slow_handler_are_kept_alive_and_handled_once(server: EmbeddedServer) -> None:
    handled: list[int] = []

    async def slow(payload: Any) -> None:
        await asyncio.sleep(4.5 if payload["n"] == 0 else 0.05)  # the first takes 1.5 ack waits
        handled.append(payload["n"])

    async def scenario() -> tuple[list[int], int | None]:
        await provision(server, ["backend", "web"], [("loose", 1)])
        backend = await hive(server, "backend")
        # A 3 s ack wait, kept alive every 1 s: only an event loop stalled for 2 s (not a busy 2-core machine's
        # usual hiccup) could make the server redeliver; the events behind still wait 1.5 ack waits.
        web = await hive(server, "web", ack_wait=3.0)
        try:
            await web.subscribe(loose(), "noted", slow)
            await backend.publish(loose(), "noted", {"n": 0})
            await until(lambda: web.stats.received >= 1)
            # These arrive while the first is being handled: they wait ~4.5 s, past the ack wait (3 s).
            for n in range(1, 7):
                await backend.publish(loose(), "noted", {"n": n})
            await until(lambda: len(handled) >= 7)
            await asyncio.sleep(1.0)  # a redelivery queued behind the slow handler would be handled by now
            spec = event_consumer("web", "loose", 1, "noted")
            info = await web.connection.jetstream().consumer_info(spec.stream, spec.name)
            return handled, info.num_redelivered
        finally:
            await web.close()
            await backend.close()

    handled, redelivered = run(scenario())
    assert handled == list(range(7))
    assert not redelivered  # the server itself never redelivered one (None: nothing was)
