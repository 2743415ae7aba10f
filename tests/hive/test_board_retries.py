"""A board write whose first attempt landed but whose answer was lost (a node dying, a timeout) is retried with
the same message id under ``failover``; a compare-and-set retry then meets its own write, not a rival's, and
must say so instead of reporting a conflict, so ``update`` never applies a change twice (decision 0057)."""

from __future__ import annotations

from typing import Any

import nats
import nats.errors

from subhive.bus import EmbeddedServer
from subhive.hive import KvBlackboard, RevisionConflict, ensure_blackboard
from tests.kit import run


def _losing_first_answer(js: Any) -> list[int]:
    """Make ``js.publish`` store the first message for real and then lose its answer, as a dropped connection
    does; later calls go through. Returns the list of attempts."""
    real, attempts = js.publish, []

    async def lossy(*args: Any, **kwargs: Any) -> Any:
        attempts.append(1)
        answer = await real(*args, **kwargs)
        if len(attempts) == 1:
            raise nats.errors.TimeoutError
        return answer

    js.publish = lossy
    return attempts


def test_a_retried_compare_and_set_write_that_landed_is_its_own_revision_not_a_conflict(
    server: EmbeddedServer,
) -> None:
    async def scenario() -> tuple[int, int, int, int, Any]:
        nc, other = await nats.connect(server.url), await nats.connect(server.url)
        try:
            await ensure_blackboard(nc.jetstream(), "web")
            steady = await KvBlackboard.open(nc.jetstream(), "web")
            first = await steady.put("tasks.k", {"n": 1}, writer="human")
            await steady.put("counters.c", 0, writer="human")
            js = other.jetstream()
            attempts = _losing_first_answer(js)
            second = await KvBlackboard(js, "web", failover=5.0).put(
                "tasks.k", {"n": 2}, writer="human", expected_revision=first
            )
            js = nc.jetstream()  # a fresh context for the update: its first answer is lost too
            _losing_first_answer(js)
            await KvBlackboard(js, "web", failover=5.0).update(
                "counters.c", lambda value: (value or 0) + 1, writer="human"
            )
            return first, second, len(attempts), len(await steady.revisions("tasks.k")), await steady.get("counters.c")
        finally:
            await nc.close()
            await other.close()

    first, second, attempts, stored, counter = run(scenario())
    assert attempts == 2  # the retry happened
    assert second > first  # the write's own revision, reported as success
    assert stored == 2  # stored once
    assert counter is not None
    assert counter.value == 1  # one increment, applied once


def test_a_rival_write_between_the_attempts_is_still_a_conflict(server: EmbeddedServer) -> None:
    async def scenario() -> str:
        nc = await nats.connect(server.url)
        try:
            js = nc.jetstream()
            await ensure_blackboard(js, "web")
            steady = await KvBlackboard.open(nc.jetstream(), "web")
            first = await steady.put("tasks.k", {"n": 1}, writer="human")
            await steady.put("tasks.k", {"n": 9}, writer="rival")  # the key moved on
            flaky = KvBlackboard(js, "web", failover=5.0)
            try:
                await flaky.put("tasks.k", {"n": 2}, writer="human", expected_revision=first)
            except RevisionConflict as exc:
                return exc.code
            return "no conflict"
        finally:
            await nc.close()

    assert run(scenario()) == "blackboard.conflict"
