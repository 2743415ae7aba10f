"""The durable consumers the framework makes (subhive.bus._consumers), on a real nats-server: made once, left
alone when right, updated in place when a setting changed, and a pull consumer from before hives lost the
right to make their own replaced by a push one that starts after what was acknowledged."""

from __future__ import annotations

import dataclasses

import nats
import pytest
from nats.js.api import AckPolicy, ConsumerConfig

from subhive.bus import EmbeddedServer, bind_consumer, ensure_consumers, ensure_event_streams
from subhive.bus import event_consumer as make_spec
from tests.kit import run

SPEC = make_spec("web", "orders", 1, "order_placed")


def test_a_consumer_is_made_once_and_updated_in_place_when_a_setting_changes(server: EmbeddedServer) -> None:
    async def scenario() -> tuple[list[str], list[str], list[str], float, int]:
        nc = await nats.connect(server.url)
        js = nc.jetstream()
        try:
            await ensure_event_streams(js, [("orders", 1)])
            made = await ensure_consumers(js, [SPEC])
            again = await ensure_consumers(js, [SPEC])
            await js.publish("subhive.orders.v1.ev.order_placed", b"1")
            slower = dataclasses.replace(SPEC, ack_wait=45.0)
            updated = await ensure_consumers(js, [slower])
            info = await js.consumer_info(SPEC.stream, SPEC.name)
            return made, again, updated, info.config.ack_wait or 0.0, info.num_pending or 0
        finally:
            await nc.close()

    made, again, updated, ack_wait, pending = run(scenario())
    assert made == ["SUBHIVE_EV_orders_v1/web__orders__v1__order_placed"]
    assert again == []  # nothing to do when it is right
    assert updated == made
    assert ack_wait == 45.0
    assert pending == 1  # the update kept its place: the event is still to be delivered


def test_a_pull_consumer_a_hive_made_is_replaced_by_a_push_one_starting_after_what_it_acknowledged(
    server: EmbeddedServer,
) -> None:
    async def scenario() -> tuple[list[bytes], str | None, int]:
        nc = await nats.connect(server.url)
        js = nc.jetstream()
        try:
            await ensure_event_streams(js, [("orders", 1)])
            # What a hive did before: its own pull consumer, two of three events handled and acknowledged.
            await js.add_consumer(
                SPEC.stream,
                ConsumerConfig(
                    durable_name=SPEC.name, ack_policy=AckPolicy.EXPLICIT, filter_subject=SPEC.filter_subject
                ),
            )
            for n in (b"1", b"2", b"3"):
                await js.publish(SPEC.filter_subject, n)
            pull = await js.pull_subscribe_bind(SPEC.name, stream=SPEC.stream)
            for msg in await pull.fetch(2, timeout=2):
                await msg.ack_sync()
            await pull.unsubscribe()

            await ensure_consumers(js, [SPEC])
            info = await js.consumer_info(SPEC.stream, SPEC.name)
            deliveries = await bind_consumer(js, nc, SPEC)
            got = [m.data for m in await deliveries.fetch(batch=10, timeout=2)]
            with pytest.raises(nats.errors.TimeoutError):  # and nothing else comes: 1 and 2 were handled
                got += [m.data for m in await deliveries.fetch(batch=10, timeout=0.5)]
            await deliveries.unsubscribe()
            return got, info.config.deliver_subject, deliveries.dropped
        finally:
            await nc.close()

    got, deliver_subject, dropped = run(scenario())
    assert deliver_subject == "_INBOX_web.deliver.web__orders__v1__order_placed"
    assert got == [b"3"]  # neither redelivered from the start nor skipped
    assert dropped == 0


def test_many_consumers_are_made_together_and_reported_in_the_order_given(server: EmbeddedServer) -> None:
    hives = [f"h{n:02d}" for n in range(40)]
    specs = [make_spec(hive, "orders", 1, "order_placed") for hive in hives]

    async def scenario() -> tuple[list[str], list[str], list[str], set[str]]:
        nc = await nats.connect(server.url)
        js = nc.jetstream()
        try:
            await ensure_event_streams(js, [("orders", 1)])
            made = await ensure_consumers(js, specs, at_once=4)
            again = await ensure_consumers(js, reversed(specs), at_once=8)
            slower = [dataclasses.replace(s, ack_wait=45.0) if s.hive in ("h03", "h31") else s for s in specs]
            updated = await ensure_consumers(js, [specs[0], *slower])  # h00 twice: the last spec counts
            names = {c.name for c in await js.consumers_info(SPEC.stream) if c.name}
            return made, again, updated, names
        finally:
            await nc.close()

    made, again, updated, names = run(scenario())
    assert made == [f"{s.stream}/{s.name}" for s in specs]
    assert again == []
    assert updated == [f"{s.stream}/{s.name}" for s in specs if s.hive in ("h03", "h31")]
    assert names == {s.name for s in specs}
