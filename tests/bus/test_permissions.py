"""Per-hive credentials: the grants derived from a lock, and the real server enforcing them.

The lock used throughout: ``backend`` provides ``orders`` v1 and v2 (operation ``place_order``, event
``order_placed``) and consumes ``payments`` v1; ``billing`` provides ``payments`` v1 (operation ``charge``,
event ``charged``); ``web`` consumes ``orders`` v1 only. Expected subjects are written out by hand from the
subject scheme, never taken from the code under test.
"""

from __future__ import annotations

import asyncio
import secrets
import subprocess
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import nats
import pytest
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.errors import TimeoutError as NatsTimeout
from nats.js.errors import KeyWrongLastSequenceError

from subhive.bus import (
    ADMIN_USER,
    AccountsConfig,
    EmbeddedServer,
    Permissions,
    ServerConfig,
    accounts_config,
    dlq_subject,
    event_subject,
    find_server_binary,
    hive_permissions,
    inbox_prefix,
    kv_bucket,
    op_subject,
)
from subhive.errors import UsageError

T = TypeVar("T")
TIMEOUT = 15.0
DENIED_WAIT = 0.5  # a denied request just times out; keep that short

OPERATIONS = {("orders", 1): ["place_order"], ("orders", 2): ["place_order"], ("payments", 1): ["charge"]}
EVENTS = {("orders", 1): ["order_placed"], ("orders", 2): ["order_placed"], ("payments", 1): ["charged"]}
LOCK = {  # hive: (provides, consumes)
    "backend": ({"orders": [1, 2]}, {"payments": [1]}),
    "billing": ({"payments": [1]}, {}),
    "web": ({}, {"orders": [1]}),
}


def grants(hive: str) -> Permissions:
    provides, consumes = LOCK[hive]
    return hive_permissions(hive, provides, consumes, OPERATIONS, EVENTS)


def run(coro: Awaitable[T]) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(coro, TIMEOUT)

    return asyncio.run(bounded())


# -- subjects ---------------------------------------------------------------------------------------------

def test_subjects_follow_the_scheme() -> None:
    assert op_subject("orders", 1, "place_order") == "subhive.orders.v1.op.place_order"
    assert event_subject("orders", 12, "order_placed") == "subhive.orders.v12.ev.order_placed"
    assert kv_bucket("web") == "bb_web"
    assert dlq_subject("web") == "subhive.dlq.web.>"
    assert dlq_subject("web", "orders", "v1") == "subhive.dlq.web.orders.v1"
    assert inbox_prefix("web") == "_INBOX_web"


@pytest.mark.parametrize("make", [
    lambda: kv_bucket("Web"), lambda: kv_bucket("a.b"), lambda: kv_bucket(">"), lambda: kv_bucket(""),
    lambda: kv_bucket("x" * 64), lambda: inbox_prefix("web.*"), lambda: op_subject("orders.v1", 1, "x"),
    lambda: op_subject("orders", 1, "place-order"), lambda: op_subject("orders", -1, "x"),
    lambda: op_subject("orders", True, "x"), lambda: event_subject("orders", 1, "a.>"),
    lambda: dlq_subject("web", "a.b"), lambda: dlq_subject("web", "*"),
])
def test_a_name_that_would_widen_a_subject_is_refused(make: Callable[[], str]) -> None:
    with pytest.raises(UsageError) as caught:
        make()
    assert caught.value.code == "bus.name_invalid"


# -- grants as data ---------------------------------------------------------------------------------------

def test_a_consumer_publishes_requests_and_subscribes_events_of_the_majors_it_uses() -> None:
    web = grants("web")
    assert "subhive.orders.v1.op.place_order" in web.publish
    assert "subhive.orders.v1.ev.order_placed" in web.subscribe
    assert "_INBOX_web.>" in web.subscribe
    assert not web.allow_responses  # it answers no requests
    # Not the major it does not use, not the contracts it does not use, not the provider's side.
    everything = web.publish + web.subscribe
    assert not [s for s in everything if "orders.v2" in s or "payments" in s]
    assert "subhive.orders.v1.op.place_order" not in web.subscribe
    assert "subhive.orders.v1.ev.order_placed" not in web.publish


def test_a_provider_serves_requests_publishes_events_and_may_reply() -> None:
    backend = grants("backend")
    for major in (1, 2):
        assert f"subhive.orders.v{major}.op.place_order" in backend.subscribe
        assert f"subhive.orders.v{major}.ev.order_placed" in backend.publish
        assert f"subhive.orders.v{major}.op.place_order" not in backend.publish
    assert backend.allow_responses
    # ... and as a consumer of payments:
    assert "subhive.payments.v1.op.charge" in backend.publish
    assert "subhive.payments.v1.ev.charged" in backend.subscribe
    assert "subhive.payments.v1.op.charge" not in backend.subscribe


@pytest.mark.parametrize("hive", sorted(LOCK))
def test_everything_else_a_hive_may_touch_is_its_own(hive: str) -> None:
    permissions = grants(hive)
    contract_subjects = {f"subhive.{c}.v{m}.{kind}.{name}" for (c, m), names in OPERATIONS.items()
                         for kind, name in (("op", n) for n in names)}
    contract_subjects |= {f"subhive.{c}.v{m}.ev.{n}" for (c, m), names in EVENTS.items() for n in names}
    # Its blackboard, dead letters, inboxes, and the durable consumers named after it (".web__orders__v1__...").
    own_markers = (f"bb_{hive}.", f"bb_{hive}", f"subhive.dlq.{hive}.", f"_INBOX_{hive}.", f".{hive}__")
    for subject in permissions.publish + permissions.subscribe:
        if subject in contract_subjects:
            continue
        assert subject.endswith(f"KV_bb_{hive}") or any(m in subject for m in own_markers), subject
    # No blanket grants: nothing matching the whole namespace, any hive's inbox or the whole JetStream API.
    for subject in permissions.publish + permissions.subscribe:
        assert subject not in {">", "subhive.>", "_INBOX.>", "$JS.API.>", "$KV.>", "subhive.dlq.>"}
        assert not subject.startswith(("subhive.*", "$JS.API.*", "_INBOX_*"))
    assert f"_INBOX_{hive}.>" in permissions.subscribe
    assert f"subhive.dlq.{hive}.>" in permissions.publish
    assert f"$KV.bb_{hive}.>" in permissions.publish


def test_permissions_are_sorted_sets_and_an_empty_list_denies_everything() -> None:
    p = Permissions(publish=("b.c", "a", "b.c"))
    assert p.publish == ("a", "b.c")
    assert p == Permissions(publish=("a", "b.c"))
    # nats-server reads a missing allow list as "allow all": it must come out as a deny of everything.
    assert p.to_config() == {"publish": {"allow": ["a", "b.c"]}, "subscribe": {"deny": [">"]}}
    both = p.union(Permissions(subscribe=("x.>",), allow_responses=True))
    assert both == Permissions(publish=("a", "b.c"), subscribe=("x.>",), allow_responses=True)
    assert both.to_config()["allow_responses"] is True


@pytest.mark.parametrize("subject", ["", "a..b", "a.>.b", "a*", "a b", "a.b>", "."])
def test_a_malformed_subject_is_refused(subject: str) -> None:
    with pytest.raises(UsageError) as caught:
        Permissions(publish=(subject,))
    assert caught.value.code == "bus.permissions_invalid"


def test_a_single_string_is_not_taken_for_a_list_of_subjects() -> None:
    with pytest.raises(UsageError):
        Permissions(subscribe="a.b")  # type: ignore[arg-type]


@pytest.mark.parametrize("password", ['quo"te-password', "back\\slash-pass", "short", "with space pass"])
def test_a_password_that_cannot_sit_in_the_config_file_is_refused(password: str) -> None:
    attempts: list[Callable[[], str]] = [
        lambda: accounts_config({"web": (password, grants("web"))}, admin_password="admin-password"),
        lambda: accounts_config({}, admin_password=password),
    ]
    for attempt in attempts:
        with pytest.raises(UsageError) as caught:
            attempt()
        assert caught.value.code == "bus.password_invalid"
        assert password not in str(caught.value)  # a secret never lands in an error message


def test_the_accounts_block_is_a_configuration_the_real_server_accepts(tmp_path: Path) -> None:
    users = {hive: (f"{hive}-password", grants(hive)) for hive in LOCK}
    accounts = AccountsConfig(users, admin_password="admin-password")
    assert "password" not in repr(accounts)
    assert accounts.hives == ("backend", "billing", "web")
    block = accounts_config(users, admin_password="admin-password")
    assert block.count('"user":') == 4
    assert f'"user": "{ADMIN_USER}", "password": "admin-password"}}' in block  # no permissions: full rights
    conf = tmp_path / "nats.conf"
    conf.write_text(ServerConfig(tmp_path / "nats", accounts=accounts).render(0))
    checked = subprocess.run([str(find_server_binary()), "-t", "-c", str(conf)], capture_output=True,
                             text=True, timeout=10, check=False)
    assert checked.returncode == 0, checked.stderr


# -- the server enforces them -----------------------------------------------------------------------------

@dataclass
class Bus:
    server: EmbeddedServer
    passwords: dict[str, str]


@pytest.fixture(scope="module")
def bus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bus]:
    passwords = {hive: secrets.token_urlsafe(24) for hive in [*LOCK, ADMIN_USER]}
    accounts = AccountsConfig({hive: (passwords[hive], grants(hive)) for hive in LOCK},
                              admin_password=passwords[ADMIN_USER])
    server = EmbeddedServer.start_sync(ServerConfig(tmp_path_factory.mktemp("bus") / "nats", accounts=accounts))
    try:
        yield Bus(server, passwords)
    finally:
        server.stop_sync()


@dataclass
class Session:
    nc: Client
    errors: list[Exception]

    async def error_about(self, text: str) -> str:
        """The first asynchronous error mentioning ``text`` (nats-py lower-cases them); bounded wait."""
        for _ in range(200):
            found = [str(e) for e in self.errors if text.lower() in str(e).lower()]
            if found:
                return found[0]
            await asyncio.sleep(0.01)
        raise AssertionError(f"no error about {text!r}; got {self.errors}")


async def login(bus: Bus, user: str) -> Session:
    errors: list[Exception] = []

    async def on_error(error: Exception) -> None:
        errors.append(error)

    nc = await nats.connect(bus.server.url, user=user, password=bus.passwords[user], error_cb=on_error,
                            inbox_prefix=inbox_prefix(user) if user in LOCK else "_INBOX",
                            allow_reconnect=False, connect_timeout=2)
    return Session(nc, errors)


async def settle(nc: Client) -> None:
    """Return once the server has processed everything ``nc`` sent so far (e.g. a SUB).

    nats-py 2.16's ``flush()`` writes its PING straight to the socket, ahead of commands still waiting in
    its buffer, so one PONG proves nothing about a SUB sent just before. By the first PONG the buffer has
    been written, so the second PING queues behind it and its PONG is a real barrier.
    """
    await nc.flush()
    await nc.flush()


async def closing(*sessions: Session) -> None:
    for session in sessions:
        await session.nc.close()


async def seen_by_admin_until(admin: Session, pattern: str, marker: str, publish: Callable[[], Awaitable[None]]
                              ) -> list[str]:
    """Subjects the admin saw on ``pattern`` up to ``marker``.

    One publisher's messages reach a subscriber in order, so when ``publish`` sends its denied messages
    before the allowed ``marker``, anything the server let through shows up before the marker.
    """
    sub = await admin.nc.subscribe(pattern)
    await settle(admin.nc)
    await publish()
    seen: list[str] = []
    while marker not in seen:
        seen.append((await sub.next_msg(timeout=2)).subject)
    await sub.unsubscribe()
    return seen


def test_without_the_right_password_nobody_gets_in(bus: Bus) -> None:
    async def attempt(**credentials: str) -> str:
        async def quiet(error: Exception) -> None:
            pass

        with pytest.raises(NatsError) as caught:
            await nats.connect(bus.server.url, allow_reconnect=False, connect_timeout=2, error_cb=quiet,
                               max_reconnect_attempts=0, **credentials)
        return str(caught.value).lower()

    assert "authorization violation" in run(attempt())
    assert "authorization violation" in run(attempt(user="web", password=bus.passwords["backend"]))


def test_a_consumer_requests_and_the_provider_answers_through_its_queue_group(bus: Bus) -> None:
    async def scenario() -> bytes:
        web, backend = await login(bus, "web"), await login(bus, "backend")
        try:
            async def serve(msg: Msg) -> None:
                await msg.respond(b"order-7:" + msg.data)

            await backend.nc.subscribe("subhive.orders.v1.op.place_order", queue="backend", cb=serve)
            await settle(backend.nc)
            reply = await web.nc.request("subhive.orders.v1.op.place_order", b"book", timeout=2)
            assert not web.errors
            assert not backend.errors
            return reply.data
        finally:
            await closing(web, backend)

    assert run(scenario()) == b"order-7:book"


def test_a_consumer_receives_the_events_of_its_contract(bus: Bus) -> None:
    async def scenario() -> bytes:
        web, backend = await login(bus, "web"), await login(bus, "backend")
        try:
            sub = await web.nc.subscribe("subhive.orders.v1.ev.order_placed")
            await settle(web.nc)
            await backend.nc.publish("subhive.orders.v1.ev.order_placed", b"placed")
            return (await sub.next_msg(timeout=2)).data
        finally:
            await closing(web, backend)

    assert run(scenario()) == b"placed"


@pytest.mark.parametrize("subject", [
    "subhive.payments.v1.op.charge",      # a contract web does not use
    "subhive.orders.v2.op.place_order",   # a major web does not use
    "subhive.orders.v1.ev.order_placed",  # the provider's side of its own contract
])
def test_publishing_outside_the_grants_is_refused_by_the_server(bus: Bus, subject: str) -> None:
    marker = "subhive.orders.v1.op.place_order"

    async def scenario() -> tuple[str, list[str]]:
        web, admin = await login(bus, "web"), await login(bus, ADMIN_USER)
        try:
            async def publish() -> None:
                await web.nc.publish(subject, b"sneaky")
                await web.nc.publish(marker, b"allowed")

            seen = await seen_by_admin_until(admin, "subhive.>", marker, publish)
            return await web.error_about(f'publish to "{subject}"'), seen
        finally:
            await closing(web, admin)

    error, seen = run(scenario())
    assert "permissions violation" in error
    assert seen == [marker]  # the refused message reached nobody


def test_a_request_outside_the_grants_fails_and_never_reaches_the_provider(bus: Bus) -> None:
    async def scenario() -> tuple[str, list[bytes]]:
        web, billing = await login(bus, "web"), await login(bus, "billing")
        try:
            received: list[bytes] = []

            async def serve(msg: Msg) -> None:
                received.append(msg.data)
                await msg.respond(b"charged")

            await billing.nc.subscribe("subhive.payments.v1.op.charge", cb=serve)
            await settle(billing.nc)
            with pytest.raises(NatsTimeout):
                await web.nc.request("subhive.payments.v1.op.charge", b"free money", timeout=DENIED_WAIT)
            error = await web.error_about('publish to "subhive.payments.v1.op.charge"')
            await settle(billing.nc)
            return error, received
        finally:
            await closing(web, billing)

    error, received = run(scenario())
    assert "permissions violation" in error
    assert received == []


def test_subscribing_to_events_of_an_unused_contract_is_refused_and_delivers_nothing(bus: Bus) -> None:
    async def scenario() -> tuple[str, int, bytes]:
        web, billing, admin = await login(bus, "web"), await login(bus, "billing"), await login(bus, ADMIN_USER)
        try:
            spy = await web.nc.subscribe("subhive.payments.v1.ev.charged")
            error = await web.error_about('subscription to "subhive.payments.v1.ev.charged"')
            witness = await admin.nc.subscribe("subhive.payments.v1.ev.charged")
            await settle(admin.nc)
            await billing.nc.publish("subhive.payments.v1.ev.charged", b"paid")
            delivered = (await witness.next_msg(timeout=2)).data
            await web.nc.flush()  # the server's PONG comes after anything already routed to web
            return error, spy.pending_msgs, delivered
        finally:
            await closing(web, billing, admin)

    error, pending, delivered = run(scenario())
    assert "permissions violation" in error
    assert delivered == b"paid"  # the event was really published ...
    assert pending == 0          # ... and web did not get it


def test_a_provider_cannot_write_into_inboxes_it_got_no_request_from(bus: Bus) -> None:
    async def scenario() -> str:
        backend = await login(bus, "backend")
        try:
            await backend.nc.publish("_INBOX_web.forged.1", b"fake reply")
            return await backend.error_about('publish to "_inbox_web.forged.1"')
        finally:
            await closing(backend)

    assert "permissions violation" in run(scenario())


def test_a_hive_uses_its_own_blackboard_bucket(bus: Bus) -> None:
    async def scenario() -> tuple[bytes, bytes, list[str], list[Exception]]:
        web = await login(bus, "web")
        try:
            kv = await web.nc.jetstream().create_key_value(bucket=kv_bucket("web"), history=5)
            first = await kv.put("plan", b"v1")
            await kv.update("plan", b"v2", last=first)
            with pytest.raises(KeyWrongLastSequenceError):  # compare-and-set, enforced by the server
                await kv.update("plan", b"lost update", last=first)
            entry = await kv.get("plan")
            history = [e.value or b"" for e in await kv.history("plan")]
            return entry.value or b"", b",".join(history), await kv.keys(), web.errors
        finally:
            await closing(web)

    value, history, keys, errors = run(scenario())
    assert (value, history, keys) == (b"v2", b"v1,v2", ["plan"])
    assert errors == []


def test_another_hives_blackboard_is_refused_by_the_server(bus: Bus) -> None:
    async def scenario() -> tuple[list[str], int, bytes]:
        web, admin = await login(bus, "web"), await login(bus, ADMIN_USER)
        try:
            theirs = await admin.nc.jetstream().create_key_value(bucket=kv_bucket("backend"))
            await theirs.put("secret", b"backend only")
            errors: list[str] = []
            with pytest.raises(NatsTimeout):
                await web.nc.jetstream(timeout=DENIED_WAIT).key_value(kv_bucket("backend"))
            errors.append(await web.error_about('publish to "$js.api.stream.info.kv_bb_backend"'))
            with pytest.raises(NatsTimeout):
                await web.nc.request("$JS.API.DIRECT.GET.KV_bb_backend.$KV.bb_backend.secret", b"",
                                     timeout=DENIED_WAIT)
            errors.append(await web.error_about('publish to "$js.api.direct.get.kv_bb_backend'))
            spy = await web.nc.subscribe("$KV.bb_backend.>")
            errors.append(await web.error_about('subscription to "$kv.bb_backend.>"'))
            witness = await admin.nc.subscribe("$KV.bb_backend.>")
            await settle(admin.nc)
            await theirs.put("secret", b"still backend only")
            delivered = (await witness.next_msg(timeout=2)).data
            await settle(web.nc)
            with pytest.raises(NatsTimeout):  # and writing into it is refused as well
                await web.nc.jetstream(timeout=DENIED_WAIT).publish("$KV.bb_backend.secret", b"overwritten")
            errors.append(await web.error_about('publish to "$kv.bb_backend.secret"'))
            return errors, spy.pending_msgs, delivered
        finally:
            await closing(web, admin)

    errors, pending, delivered = run(scenario())
    assert all("permissions violation" in e for e in errors)
    assert delivered == b"still backend only"
    assert pending == 0


def test_a_hive_dead_letters_under_its_own_prefix_only(bus: Bus) -> None:
    async def scenario() -> tuple[str, int, str]:
        web, admin = await login(bus, "web"), await login(bus, ADMIN_USER)
        try:
            await admin.nc.jetstream().add_stream(name="SUBHIVE_DLQ", subjects=["subhive.dlq.>"])
            ack = await web.nc.jetstream().publish(dlq_subject("web", "orders", "v1"), b"bad bytes", timeout=2)
            with pytest.raises(NatsTimeout):
                await web.nc.jetstream().publish(dlq_subject("backend", "orders"), b"framed", timeout=DENIED_WAIT)
            error = await web.error_about('publish to "subhive.dlq.backend.orders"')
            stored = await admin.nc.jetstream().stream_info("SUBHIVE_DLQ")
            return ack.stream, stored.state.messages, error
        finally:
            await closing(web, admin)

    stream, messages, error = run(scenario())
    assert stream == "SUBHIVE_DLQ"
    assert messages == 1  # only its own dead letter got in
    assert "permissions violation" in error
