"""A knowledge source may say how long its activations may take (``stall_after``): an agent's turn runs for
minutes, while the hive-wide limit that catches a stuck source stays short for every other source."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from subhive.bus import EmbeddedServer
from subhive.hive import Controller, ControllerConfig, Entry, Escalation, Reply
from tests.kit import run

from ._board import board


class Slow:
    priority = 0
    triggers = ()

    def __init__(self, name: str, stall_after: float | None) -> None:
        self.name = name
        self.operations = (f"api.{name}",)
        if stall_after is not None:
            self.stall_after = stall_after

    async def activate(self, entry: Entry, blackboard: Any) -> Sequence[Reply]:
        await asyncio.sleep(0.4)
        return [Reply({"done": self.name})]


def test_a_source_with_its_own_limit_outlasts_the_hive_wide_one(server: EmbeddedServer) -> None:
    async def scenario() -> tuple[Any, str, list[Escalation]]:
        escalations: list[Escalation] = []

        async def escalate(escalation: Escalation) -> None:
            escalations.append(escalation)

        async with board(server) as (nc, bb):
            controller = Controller(
                bb,
                [Slow("patient", 5.0), Slow("plain", None)],
                config=ControllerConfig(stall_after=0.1),
                on_escalation=escalate,
            )
            await controller.start(nc.jetstream())
            try:
                answered = await controller.answer("api", "patient", {})
                try:
                    await controller.answer("api", "plain", {})
                    stalled = "no"
                except Exception as exc:  # the plain source is cut at the hive-wide 0.1 s
                    stalled = getattr(exc, "code", type(exc).__name__)
            finally:
                await controller.stop()
            return answered, stalled, escalations

    answered, stalled, escalations = run(scenario())
    assert answered == {"done": "patient"}
    assert stalled == "ks.stalled"
    assert escalations == []  # a request's failure is the bus's to report (dead letter), not the controller's
