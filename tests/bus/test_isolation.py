"""Isolation enforced by the server: hives connect through NatsTransport with the credentials the lock
gives them; what they may do works (requests, durable events through their own consumer), and what they may
not do is refused by nats-server and surfaces as a PermissionViolation naming the subject.

The lock: ``backend`` provides ``orders`` v1 and v2 (``place_order``, ``order_placed``) and consumes
``payments`` v1; ``billing`` provides ``payments`` v1 (``charge``, ``charged``); ``web`` consumes ``orders``
v1 only.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import nats
import pytest
from nats.aio.client import Client

from subhive.bus import (
    ADMIN_USER,
    AccountsConfig,
    EmbeddedServer,
    NatsTransport,
    PermissionViolation,
    ensure_consumers,
    ensure_dead_letter_streams,
    ensure_event_streams,
    event_consumer,
    hive_permissions,
)
from subhive.runtime import ContractBinding
from tests.kit import StartServer, run

from ._contracts import ORDER_IN, ORDER_REF, orders

OPERATIONS = {("orders", 1): ["place_order"], ("orders", 2): ["place_order"], ("payments", 1): ["charge"]}
EVENTS = {("orders", 1): ["order_placed"], ("orders", 2): ["order_placed"], ("payments", 1): ["charged"]}
LOCK = {  # hive: (provides, consumes)
    "backend": ({"orders": [1, 2]}, {"payments": [1]}),
    "billing": ({"payments": [1]}, {}),
    "web": ({}, {"orders": [1]}),
}


def payments() -> ContractBinding:
    return ContractBinding.from_dict(
        {
            "name": "payments",
            "version": "1.0.0",
            "provider": "billing",
            "operations": {"charge": {"input": "in", "output": "out"}},
            "events": {"charged": "out"},
            "schemas": {"in": ORDER_IN, "out": ORDER_REF},
        }
    )


@dataclass
class Bus:
    server: EmbeddedServer
    passwords: dict[str, str]

    async def hive(self, name: str) -> NatsTransport:
        return await NatsTransport.connect(self.server.endpoint(name, self.passwords[name]), name)


async def _stored(bus: Bus, stream: str) -> int:
    admin = await nats.connect(bus.server.url, user=ADMIN_USER, password=bus.passwords[ADMIN_USER])
    try:
        return (await admin.jetstream().stream_info(stream)).state.messages
    finally:
        await admin.close()


@pytest.fixture(scope="module")
def bus(start_module_nats: StartServer) -> Bus:
    passwords = {hive: secrets.token_urlsafe(24) for hive in [*LOCK, ADMIN_USER]}
    users = {hive: (passwords[hive], hive_permissions(hive, *LOCK[hive], OPERATIONS, EVENTS)) for hive in LOCK}
    server = start_module_nats(accounts=AccountsConfig(users, passwords[ADMIN_USER]))

    async def provision() -> None:  # the framework's admin connection creates streams and consumers from the lock
        nc = await nats.connect(server.url, user=ADMIN_USER, password=passwords[ADMIN_USER])
        await ensure_event_streams(nc.jetstream(), [("orders", 1), ("orders", 2), ("payments", 1)])
        await ensure_dead_letter_streams(nc.jetstream(), list(LOCK))
        await ensure_consumers(
            nc.jetstream(),
            [
                event_consumer(hive, contract, major, event)
                for hive, (_, consumes) in LOCK.items()
                for contract, majors in consumes.items()
                for major in majors
                for event in EVENTS[(contract, major)]
            ],
        )
        await nc.close()

    run(provision())
    return Bus(server, passwords)


def test_what_the_lock_allows_works_requests_and_durable_events(bus: Bus) -> None:
    received: list[Any] = []

    async def place(payload: Any) -> Any:
        return {"order_id": "o-1"}

    async def on_placed(payload: Any) -> None:
        received.append(payload)

    async def scenario() -> Any:
        backend, web = await bus.hive("backend"), await bus.hive("web")
        try:
            await backend.serve(orders(), {"place_order": place})
            await web.subscribe(orders(), "order_placed", on_placed)
            reply = await web.request(orders(), "place_order", {"sku": "A-1", "qty": 1})
            await backend.publish(orders(), "order_placed", {"order_id": "o-1"})
            for _ in range(200):
                if received:
                    break
                await asyncio.sleep(0.02)
            return reply
        finally:
            await web.close()
            await backend.close()

    assert run(scenario()) == {"order_id": "o-1"}
    assert received == [{"order_id": "o-1"}]


@pytest.mark.parametrize(
    ("attempt", "subject"),
    [
        ("request orders v2", "subhive.orders.v2.op.place_order.web"),  # a major web does not use
        ("request payments", "subhive.payments.v1.op.charge.web"),  # a contract web does not use
        ("publish order_placed", "subhive.orders.v1.ev.order_placed"),  # the provider's side
        ("serve orders", "subhive.orders.v1.op.place_order.*"),  # answering for the provider
        ("subscribe charged", "subhive.payments.v1.ev.charged"),  # another contract's events
    ],
)
def test_what_the_lock_does_not_allow_is_refused_by_the_server_naming_the_subject(
    bus: Bus, attempt: str, subject: str
) -> None:
    async def noop(payload: Any) -> Any:
        return {"order_id": "x"}

    async def quiet(payload: Any) -> None:
        pass

    async def scenario() -> PermissionViolation:
        web = await bus.hive("web")
        attempts: dict[str, Callable[[], Awaitable[Any]]] = {
            "request orders v2": lambda: web.request(orders(2), "place_order", {"sku": "A-1", "qty": 1}),
            "request payments": lambda: web.request(payments(), "charge", {"sku": "A-1", "qty": 1}),
            "publish order_placed": lambda: web.publish(orders(), "order_placed", {"order_id": "o-1"}),
            "serve orders": lambda: web.serve(orders(), {"place_order": noop}),
            "subscribe charged": lambda: web.subscribe(payments(), "charged", quiet),
        }
        try:
            with pytest.raises(PermissionViolation) as caught:
                await attempts[attempt]()
            return caught.value
        finally:
            await web.close()

    error = run(scenario())
    assert error.code == "bus.permission_denied"
    assert error.location.subject == subject
    assert subject in error.message


def _request_from(raw: Client, subject: str, sender: str, *, reply: str | None = None) -> Any:
    """A request as a hive's own code could craft it: its own subject, any headers."""
    headers = {"Subhive-Contract": "orders@1.0.0", "Subhive-Sender": sender}
    if reply is None:
        return raw.request(subject, b'{"sku": "A-1", "qty": 1}', timeout=5, headers=headers)
    return raw.publish(subject, b'{"sku": "A-1", "qty": 1}', reply=reply, headers=headers)


async def _raw(bus: Bus, name: str) -> Client:
    return await nats.connect(bus.server.url, user=name, password=bus.passwords[name], inbox_prefix=f"_INBOX_{name}")


@pytest.mark.parametrize(
    ("sender", "code"),
    [
        ("db", "bus.sender_forged"),  # another hive's name
        ("backend", "bus.sender_forged"),  # the provider's own name
        ("x" * 3000, "bus.header_invalid"),  # too long to be a name
        ("ui\r\nX: y", "bus.header_invalid"),  # a header injection (nats-py flattens the line breaks)
        ("web\x01", "bus.header_invalid"),  # a control character
    ],
)
def test_a_sender_header_the_server_does_not_vouch_for_is_refused_and_dead_lettered(
    bus: Bus, sender: str, code: str
) -> None:
    calls: list[Any] = []

    async def place(payload: Any) -> Any:
        calls.append(payload)
        return {"order_id": "o-1"}

    async def scenario() -> tuple[Any, Any, int, int]:
        backend, raw = await bus.hive("backend"), await _raw(bus, "web")
        try:
            await backend.serve(orders(), {"place_order": place})
            honest = await _request_from(raw, "subhive.orders.v1.op.place_order.web", "web")
            forged = await _request_from(raw, "subhive.orders.v1.op.place_order.web", sender)
            for _ in range(200):  # the dead letter is written after the reply
                if backend.stats.dead_lettered:
                    break
                await asyncio.sleep(0.01)
            return honest, forged, backend.stats.refused[code], backend.stats.dead_lettered
        finally:
            await raw.close()
            await backend.close()

    honest, forged, refused, kept = run(scenario())
    assert honest.data == b'{"order_id":"o-1"}'
    assert not (honest.headers or {}).get("Subhive-Error")
    assert (forged.headers or {})["Subhive-Error"] == code
    assert len(forged.data) < 1000  # the reply does not echo a 3,000-character name
    assert len(calls) == 1  # only the honest request reached the handler
    assert (refused, kept) == (1, 1)


def test_a_reply_a_hive_points_at_a_delivery_subject_or_an_event_is_not_taken_for_an_event(bus: Bus) -> None:
    """A request's reply subject can be any subject: web asks backend to answer onto backend's own event
    deliveries, and an error reply onto orders' event stream, which web reads. Each hive has its own account,
    so the answer goes back into web's account on that subject, where nothing carries it further: neither
    backend's deliveries nor the event stream ever see it (decision 0056)."""
    charged: list[Any] = []
    placed: list[Any] = []

    async def place(payload: Any) -> Any:
        return {"order_id": "o-1"}

    async def on_charged(payload: Any) -> None:
        charged.append(payload)

    async def on_placed(payload: Any) -> None:
        placed.append(payload)

    async def scenario() -> tuple[dict[str, int], dict[str, int], int]:
        backend, web, raw = await bus.hive("backend"), await bus.hive("web"), await _raw(bus, "web")
        try:
            await backend.serve(orders(), {"place_order": place})
            await backend.subscribe(payments(), "charged", on_charged)
            await web.subscribe(orders(), "order_placed", on_placed)
            op = "subhive.orders.v1.op.place_order.web"
            await _request_from(raw, op, "web", reply="_INBOX_backend.deliver.backend__payments__v1__charged")
            await raw.publish(
                op,
                b'{"sku": "A-1", "qty": 0}',
                reply="subhive.orders.v1.ev.order_placed",
                headers={"Subhive-Contract": "orders@1.0.0", "Subhive-Sender": "web"},
            )
            await backend.publish(orders(), "order_placed", {"order_id": "o-2"})  # a real event, after both
            for _ in range(300):
                if placed and backend.stats.refused:
                    break
                await asyncio.sleep(0.01)
            await backend.connection.flush()
            return dict(backend.stats.refused), dict(web.stats.refused), await _stored(bus, "SUBHIVE_EV_orders_v1")
        finally:
            await raw.close()
            await web.close()
            await backend.close()

    before = run(_stored(bus, "SUBHIVE_EV_orders_v1"))
    backend_refused, web_refused, stored = run(scenario())
    assert charged == []  # the answer on its delivery subject was no event
    assert backend_refused == {"payload.invalid": 1}  # only the invalid request itself
    assert web_refused == {}  # the error reply never reached the event stream, so nothing to refuse
    assert stored == before + 1  # the real event alone
    assert placed == [{"order_id": "o-2"}]  # the real event still arrives
