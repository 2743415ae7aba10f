"""A replayed event reaches only the hive whose dead letter it is (decision 0047).

A consumer hive writes its own dead letters, bytes included, so a replay must not spread them to every consumer
as the provider's event: the framework re-sends an event's letter on the keeping hive's replay subject (inside
its inboxes), and that hive's transport runs it through the checks of a delivery. Real nats-server, real
per-hive users: backend provides orders v1, web and shop consume its ``order_placed``.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import nats
import pytest
from nats.aio.client import Client

from subhive.bus import (
    ADMIN_USER,
    AccountsConfig,
    BusError,
    DeadLetters,
    EmbeddedServer,
    NatsTransport,
    ReplayRules,
    ensure_consumers,
    ensure_event_streams,
    event_consumer,
    event_stream,
    hive_permissions,
    inbox_prefix,
    replay_subject,
)
from tests.kit import StartServer, run

from ._contracts import orders

HIVES = ("backend", "web", "shop")
PASSWORDS = {hive: secrets.token_urlsafe(24) for hive in (*HIVES, ADMIN_USER)}
OPS, EVENTS = {("orders", 1): ["place_order"]}, {("orders", 1): ["order_placed"]}
RULES = ReplayRules(
    operations={("backend", "orders", 1, "place_order"): frozenset({"web", "shop"})},
    events={(hive, "orders", 1, "order_placed"): "backend" for hive in ("web", "shop")},
)
WEB_REPLAYS = "_INBOX_web.replay.orders.v1.order_placed"


@pytest.fixture
def server(start_nats: StartServer) -> EmbeddedServer:
    """Streams and consumers made by the framework; each hive has exactly the grants the lock gives it."""
    grants = {
        "backend": hive_permissions("backend", {"orders": [1]}, {}, OPS, EVENTS),
        **{hive: hive_permissions(hive, {}, {"orders": [1]}, OPS, EVENTS) for hive in ("web", "shop")},
    }
    server = start_nats(
        accounts=AccountsConfig(
            {hive: (PASSWORDS[hive], grants[hive]) for hive in HIVES}, admin_password=PASSWORDS[ADMIN_USER]
        )
    )

    async def provision() -> None:
        admin = await _admin(server)
        js = admin.jetstream()
        await ensure_event_streams(js, [("orders", 1)], hives=HIVES)
        await ensure_consumers(js, [event_consumer(hive, "orders", 1, "order_placed") for hive in ("web", "shop")])
        await admin.close()

    run(provision())
    return server


async def _admin(server: EmbeddedServer) -> Client:
    return await nats.connect(server.url, user=ADMIN_USER, password=PASSWORDS[ADMIN_USER])


async def _transport(server: EmbeddedServer, hive: str) -> NatsTransport:
    return await NatsTransport.connect(server.endpoint(hive, PASSWORDS[hive]), hive)


async def _until(check: Callable[[], bool], what: str, within: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"never happened: {what}")
        await asyncio.sleep(0.02)


async def _forge(server: EmbeddedServer, hive: str, data: bytes) -> None:
    """What a consumer hive can keep as a dead letter of the event: any bytes, said to be the provider's."""
    nc = await nats.connect(server.url, user=hive, password=PASSWORDS[hive], inbox_prefix=inbox_prefix(hive))
    try:
        await nc.jetstream().publish(
            f"subhive.dlq.{hive}.orders.v1.ev.order_placed",
            data,
            headers={
                "Subhive-Dlq-Code": "handler.failed",
                "Subhive-Dlq-Subject": "subhive.orders.v1.ev.order_placed",
                "Subhive-Dlq-Headers": json.dumps({"Subhive-Sender": "backend", "Subhive-Contract": "orders@1.0.0"}),
                "Nats-Msg-Id": secrets.token_hex(8),
            },
        )
    finally:
        await nc.close()


@dataclass
class Consumer:
    """A consumer hive's transport and what its ``order_placed`` handler saw (and whether it fails)."""

    transport: NatsTransport
    seen: list[Any] = field(default_factory=list)
    failing: bool = False

    async def handle(self, payload: Any) -> None:
        self.seen.append(payload)
        if self.failing:
            raise RuntimeError("down")


async def _with_consumers(
    server: EmbeddedServer, body: Callable[[Consumer, Consumer, Client], Awaitable[Any]], *, web_failing: bool = False
) -> Any:
    admin = await _admin(server)
    web, shop = (
        Consumer(await _transport(server, "web"), failing=web_failing),
        Consumer(await _transport(server, "shop")),
    )
    try:
        for consumer in (web, shop):
            await consumer.transport.subscribe(orders(), "order_placed", consumer.handle)
        return await body(web, shop, admin)
    finally:
        for consumer in (web, shop):
            await consumer.transport.close()
        await admin.close()


async def _events_stored(admin: Client) -> int:
    return (await admin.jetstream().stream_info(event_stream("orders", 1))).state.messages


def test_a_forged_letter_replayed_reaches_its_own_hive_only(server: EmbeddedServer) -> None:
    """web keeps an event backend never sent; replayed, web's handler gets it, shop's never, and the event
    stream stores nothing: the forgery goes back to its author alone, never out under backend's name."""

    async def body(web: Consumer, shop: Consumer, admin: Client) -> tuple[str, int, int]:
        await _forge(server, "web", b'{"order_id": "forged"}')
        said = await DeadLetters(admin).replay("web:1", rules=RULES, by="alice")
        await _until(lambda: bool(web.seen), "web's handler gets the replay")
        stored = await _events_stored(admin)
        # shop is alive and consuming: a real event reaches it, and the forged one never did.
        backend = await _transport(server, "backend")
        try:
            await backend.publish(orders(), "order_placed", {"order_id": "real"})
            await _until(lambda: bool(shop.seen) and len(web.seen) == 2, "both get the real event")
        finally:
            await backend.close()
        return said, stored, web.transport.stats.dead_lettered

    said, stored, kept = run(_with_consumers(server, body))
    assert said == f"event re-sent to web alone ({WEB_REPLAYS})"
    assert stored == 0
    assert kept == 0


def test_shop_never_receives_what_web_keeps_and_replays(server: EmbeddedServer) -> None:
    """A real event web failed (twice, then kept): replayed once fixed, web handles it; shop, which handled the
    original once, is not sent it again; the stream still holds the one original."""

    async def body(web: Consumer, shop: Consumer, admin: Client) -> tuple[list[Any], list[Any], int]:
        backend = await _transport(server, "backend")
        try:
            await backend.publish(orders(), "order_placed", {"order_id": "o-1"})
        finally:
            await backend.close()
        await _until(lambda: web.transport.stats.dead_lettered == 1 and bool(shop.seen), "web keeps it")
        web.failing = False
        await DeadLetters(admin).replay("web:1", rules=RULES)
        await _until(lambda: len(web.seen) == 3, "web handles the replay")
        return web.seen, shop.seen, await _events_stored(admin)

    web_seen, shop_seen, stored = run(_with_consumers(server, body, web_failing=True))
    assert web_seen == [{"order_id": "o-1"}] * 3  # two tries, then the replay
    assert shop_seen == [{"order_id": "o-1"}]
    assert stored == 1


def test_a_replay_the_hive_fails_again_is_kept_once_more(server: EmbeddedServer) -> None:
    """The handler runs once on a replay; failing, the event is kept again (once), as a letter of the event
    that can itself be replayed, and is handled when replayed after the fix."""

    async def body(web: Consumer, shop: Consumer, admin: Client) -> tuple[int, list[Any], list[Any], list[Any]]:
        await _forge(server, "web", b'{"order_id": "o-2"}')
        letters = DeadLetters(admin)
        await letters.replay("web:1", rules=RULES)
        await _until(lambda: web.transport.stats.dead_lettered == 1, "the failed replay is kept")
        calls = len(web.seen)
        kept = await letters.list("web")
        web.failing = False
        await letters.replay("web:2", rules=RULES)
        await _until(lambda: len(web.seen) == 2, "the second replay is handled")
        return calls, kept, await letters.list("web"), shop.seen

    calls, kept, after, shop_seen = run(_with_consumers(server, body, web_failing=True))
    assert calls == 1
    assert [(k.id, k.code, k.subject, k.data) for k in kept] == [
        ("web:1", "handler.failed", "subhive.orders.v1.ev.order_placed", b'{"order_id": "o-2"}'),
        ("web:2", "handler.failed", "subhive.orders.v1.ev.order_placed", b'{"order_id": "o-2"}'),
    ]
    assert kept[1].headers["Subhive-Sender"] == "backend"
    assert "Subhive-Replay-Of" in kept[1].headers
    assert len(after) == 2  # handled at last: nothing kept again
    assert shop_seen == []


def test_a_replay_that_breaks_the_contract_is_refused_and_kept(server: EmbeddedServer) -> None:
    """The replay passes the checks of a delivery: a payload against the schema is kept again, never handled."""

    async def body(web: Consumer, shop: Consumer, admin: Client) -> tuple[list[Any], Any]:
        await _forge(server, "web", b'{"order_id": ""}')
        await DeadLetters(admin).replay("web:1", rules=RULES)
        await _until(lambda: web.transport.stats.dead_lettered == 1, "the refused replay is kept")
        return web.seen, (await DeadLetters(admin).list("web"))[-1]

    seen, kept = run(_with_consumers(server, body))
    assert seen == []
    assert (kept.id, kept.code, kept.pointer, kept.data) == (
        "web:2",
        "payload.invalid",
        "/order_id",
        b'{"order_id": ""}',
    )


def test_an_event_replayed_while_its_hive_is_not_listening_is_not_sent(server: EmbeddedServer) -> None:
    async def scenario() -> tuple[BusError, Any]:
        admin = await _admin(server)
        try:
            await _forge(server, "web", b'{"order_id": "o-3"}')
            with pytest.raises(BusError) as caught:
                await DeadLetters(admin).replay("web:1", rules=RULES, by="alice")
            return caught.value, await DeadLetters(admin).get("web:1")
        finally:
            await admin.close()

    error, letter = run(scenario())
    assert error.code == "bus.not_served"
    assert "hive web does not listen" in error.message
    assert error.location is not None
    assert error.location.subject == WEB_REPLAYS
    assert "start hive web" in (error.hint or "")
    assert letter.replays == ()  # nothing was delivered, nothing recorded


def test_no_hive_may_publish_on_another_hives_replay_subject(server: EmbeddedServer) -> None:
    """shop and backend publishing straight to web's replay subject are refused by the server; a request shop
    sends to backend with web's replay subject as its reply (a provider may answer any reply subject once) is
    answered into shop's own account, where web's replay subject leads nowhere (decision 0056)."""

    async def body(web: Consumer, shop: Consumer, admin: Client) -> tuple[list[str], list[Any], int]:
        errors: list[str] = []

        async def on_error(exc: Exception) -> None:
            errors.append(str(exc))

        backend = await _transport(server, "backend")

        async def place(payload: Any) -> Any:
            return {"order_id": "from-a-reply"}  # valid as an order_placed event

        await backend.serve(orders(), {"place_order": place})
        raw = {
            hive: await nats.connect(
                server.url, user=hive, password=PASSWORDS[hive], error_cb=on_error, inbox_prefix=inbox_prefix(hive)
            )
            for hive in ("shop", "backend")
        }
        try:
            headers = {"Subhive-Sender": "backend", "Subhive-Contract": "orders@1.0.0"}
            for nc in raw.values():
                await nc.publish(
                    replay_subject("web", "orders", 1, "order_placed"), b'{"order_id": "x"}', headers=headers
                )
                await nc.flush()
            await raw["shop"].publish(
                "subhive.orders.v1.op.place_order.shop",
                b'{"sku": "A-1", "qty": 1}',
                reply=WEB_REPLAYS,
                headers={"Subhive-Sender": "shop", "Subhive-Contract": "orders@1.0.0"},
            )
            await _until(lambda: backend.stats.sent == 1, "backend answers")
            for nc in (backend.connection, web.transport.connection):  # the answer handled, then web's reads
                await nc.flush()
                await nc.flush()
            assert not web.transport.stats.refused  # nothing reached web to refuse
            await _until(lambda: len(errors) == 2, "both publishes refused")
        finally:
            for nc in raw.values():
                await nc.close()
            await backend.close()
        return errors, web.seen, await _events_stored(admin)

    errors, seen, stored = run(_with_consumers(server, body))
    assert all("permissions violation for publish" in e and WEB_REPLAYS.lower() in e.lower() for e in errors), errors
    assert seen == []
    assert stored == 0
