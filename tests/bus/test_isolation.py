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
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import nats
import pytest

from subhive.bus import (
    ADMIN_USER,
    AccountsConfig,
    EmbeddedServer,
    NatsTransport,
    PermissionViolation,
    ServerConfig,
    ensure_event_streams,
    hive_permissions,
)
from subhive.runtime import ContractBinding

from ._contracts import ORDER_IN, ORDER_REF, orders, run

OPERATIONS = {("orders", 1): ["place_order"], ("orders", 2): ["place_order"], ("payments", 1): ["charge"]}
EVENTS = {("orders", 1): ["order_placed"], ("orders", 2): ["order_placed"], ("payments", 1): ["charged"]}
LOCK = {  # hive: (provides, consumes)
    "backend": ({"orders": [1, 2]}, {"payments": [1]}),
    "billing": ({"payments": [1]}, {}),
    "web": ({}, {"orders": [1]}),
}


def payments() -> ContractBinding:
    return ContractBinding.from_dict({
        "name": "payments", "version": "1.0.0", "provider": "billing",
        "operations": {"charge": {"input": "in", "output": "out"}}, "events": {"charged": "out"},
        "schemas": {"in": ORDER_IN, "out": ORDER_REF},
    })


@dataclass
class Bus:
    server: EmbeddedServer
    passwords: dict[str, str]

    async def hive(self, name: str) -> NatsTransport:
        return await NatsTransport.connect(self.server.endpoint(name, self.passwords[name]), name)


@pytest.fixture(scope="module")
def bus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bus]:
    passwords = {hive: secrets.token_urlsafe(24) for hive in [*LOCK, ADMIN_USER]}
    users = {hive: (passwords[hive], hive_permissions(hive, *LOCK[hive], OPERATIONS, EVENTS)) for hive in LOCK}
    server = EmbeddedServer.start_sync(ServerConfig(tmp_path_factory.mktemp("iso") / "nats",
                                                    accounts=AccountsConfig(users, passwords[ADMIN_USER])))

    async def provision() -> None:  # the framework's admin connection creates the streams from the lock
        nc = await nats.connect(server.url, user=ADMIN_USER, password=passwords[ADMIN_USER])
        await ensure_event_streams(nc.jetstream(), [("orders", 1), ("orders", 2), ("payments", 1)])
        await nc.close()

    try:
        run(provision())
        yield Bus(server, passwords)
    finally:
        server.stop_sync()


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


@pytest.mark.parametrize(("attempt", "subject"), [
    ("request orders v2", "subhive.orders.v2.op.place_order"),          # a major web does not use
    ("request payments", "subhive.payments.v1.op.charge"),             # a contract web does not use
    ("publish order_placed", "subhive.orders.v1.ev.order_placed"),     # the provider's side
    ("serve orders", "subhive.orders.v1.op.place_order"),              # answering for the provider
    ("subscribe charged", "subhive.payments.v1.ev.charged"),           # another contract's events
])
def test_what_the_lock_does_not_allow_is_refused_by_the_server_naming_the_subject(
        bus: Bus, attempt: str, subject: str) -> None:
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
