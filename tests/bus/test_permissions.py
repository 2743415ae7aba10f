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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nats
import pytest
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.errors import TimeoutError as NatsTimeout

from subhive.bus import (
    ADMIN_USER,
    AccountsConfig,
    EmbeddedServer,
    Permissions,
    ServerConfig,
    accounts_config,
    deliver_subject,
    dlq_subject,
    durable_name,
    ensure_consumers,
    ensure_dead_letter_streams,
    ensure_event_streams,
    event_consumer,
    event_subject,
    find_server_binary,
    hive_permissions,
    inbox_prefix,
    kv_bucket,
    op_subject,
    sender_of,
)
from subhive.errors import UsageError
from subhive.hive import KvBlackboard, RevisionConflict, ensure_blackboard
from tests.kit import StartServer, run

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


# -- subjects ---------------------------------------------------------------------------------------------


def test_subjects_follow_the_scheme() -> None:
    assert op_subject("orders", 1, "place_order", "web") == "subhive.orders.v1.op.place_order.web"
    assert op_subject("orders", 1, "place_order") == "subhive.orders.v1.op.place_order.*"  # what a provider serves
    assert sender_of("subhive.orders.v1.op.place_order.web") == "web"
    assert sender_of("subhive.orders.v1.op.place_order") is None
    assert sender_of("subhive.orders.v1.ev.order_placed") is None
    assert deliver_subject("web", "controller") == "_INBOX_web.deliver.controller"
    assert event_subject("orders", 12, "order_placed") == "subhive.orders.v12.ev.order_placed"
    assert kv_bucket("web") == "bb_web"
    assert dlq_subject("web") == "subhive.dlq.web.>"
    assert dlq_subject("web", "orders", "v1") == "subhive.dlq.web.orders.v1"
    assert inbox_prefix("web") == "_INBOX_web"


@pytest.mark.parametrize(
    "make",
    [
        lambda: kv_bucket("Web"),
        lambda: kv_bucket("a.b"),
        lambda: kv_bucket(">"),
        lambda: kv_bucket(""),
        lambda: kv_bucket("x" * 64),
        lambda: inbox_prefix("web.*"),
        lambda: op_subject("orders.v1", 1, "x"),
        lambda: op_subject("orders", 1, "place-order"),
        lambda: op_subject("orders", -1, "x"),
        lambda: op_subject("orders", True, "x"),
        lambda: event_subject("orders", 1, "a.>"),
        lambda: dlq_subject("web", "a.b"),
        lambda: dlq_subject("web", "*"),
        lambda: op_subject("orders", 1, "x", "web.x"),
        lambda: op_subject("orders", 1, "x", ">"),
        lambda: op_subject("orders", 1, "x", "Web"),
        lambda: deliver_subject("web", "a.b"),
    ],
)
def test_a_name_that_would_widen_a_subject_is_refused(make: Callable[[], str]) -> None:
    with pytest.raises(UsageError) as caught:
        make()
    assert caught.value.code == "bus.name_invalid"


# -- grants as data ---------------------------------------------------------------------------------------


def test_a_consumer_publishes_requests_and_subscribes_events_of_the_majors_it_uses() -> None:
    web = grants("web")
    # Requests only under its own name: the subject is the sender the provider can trust.
    assert [s for s in web.publish if ".op." in s] == ["subhive.orders.v1.op.place_order.web"]
    assert "subhive.orders.v1.ev.order_placed" in web.subscribe
    assert "_INBOX_web.>" in web.subscribe
    assert not web.allow_responses  # it answers no requests
    # Not the major it does not use, not the contracts it does not use, not the provider's side.
    everything = web.publish + web.subscribe
    assert not [s for s in everything if "orders.v2" in s or "payments" in s]
    assert not [s for s in web.subscribe if ".op." in s]
    assert "subhive.orders.v1.ev.order_placed" not in web.publish


def test_a_provider_serves_requests_publishes_events_and_may_reply() -> None:
    backend = grants("backend")
    for major in (1, 2):
        assert f"subhive.orders.v{major}.op.place_order.*" in backend.subscribe  # every sender's requests
        assert f"subhive.orders.v{major}.ev.order_placed" in backend.publish
        assert not [s for s in backend.publish if f"orders.v{major}.op." in s]
    assert backend.allow_responses
    # ... and as a consumer of payments:
    assert "subhive.payments.v1.op.charge.backend" in backend.publish
    assert "subhive.payments.v1.ev.charged" in backend.subscribe
    assert not [s for s in backend.subscribe if "payments.v1.op." in s]


@pytest.mark.parametrize("hive", sorted(LOCK))
def test_everything_else_a_hive_may_touch_is_its_own(hive: str) -> None:
    permissions = grants(hive)
    contract_subjects = {
        f"subhive.{c}.v{m}.op.{n}.{token}"
        for (c, m), names in OPERATIONS.items()
        for n in names
        for token in (hive, "*")
    }
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
    checked = subprocess.run(
        [str(find_server_binary()), "-t", "-c", str(conf)], capture_output=True, text=True, timeout=10, check=False
    )
    assert checked.returncode == 0, checked.stderr


# -- the server enforces them -----------------------------------------------------------------------------


@dataclass
class Bus:
    server: EmbeddedServer
    passwords: dict[str, str]


@pytest.fixture(scope="module")
def bus(start_module_nats: StartServer) -> Bus:
    passwords = {hive: secrets.token_urlsafe(24) for hive in [*LOCK, ADMIN_USER]}
    accounts = AccountsConfig(
        {hive: (passwords[hive], grants(hive)) for hive in LOCK}, admin_password=passwords[ADMIN_USER]
    )
    return Bus(start_module_nats(accounts=accounts), passwords)


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

    nc = await nats.connect(
        bus.server.url,
        user=user,
        password=bus.passwords[user],
        error_cb=on_error,
        inbox_prefix=inbox_prefix(user) if user in LOCK else "_INBOX",
        allow_reconnect=False,
        connect_timeout=2,
    )
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


# Where anything web publishes could land, one subscription per account: the hub sees what is imported into it
# (events, dead letters, boards), the providers see requests. Each hive may subscribe only inside its grants.
_OBSERVERS = {
    ADMIN_USER: ["subhive.>"],
    "backend": ["subhive.orders.v1.op.place_order.*", "subhive.orders.v2.op.place_order.*"],
    "billing": ["subhive.payments.v1.op.charge.*"],
}


async def seen_anywhere_until(bus: Bus, marker: str, publish: Callable[[], Awaitable[None]]) -> list[str]:
    """Subjects any account saw up to ``marker`` (a request web may send, which backend serves).

    The server handles one connection's messages in order, and hands each to every subscriber as it handles
    it; so once backend has the marker, a round trip to each observer shows whatever the denied messages
    sent before it could have reached.
    """
    sessions = {user: await login(bus, user) for user in _OBSERVERS}
    try:
        seen: list[str] = []

        async def note(msg: Msg) -> None:
            seen.append(msg.subject)

        for user, patterns in _OBSERVERS.items():
            for pattern in patterns:
                await sessions[user].nc.subscribe(pattern, cb=note)
            await settle(sessions[user].nc)
        await publish()
        for _ in range(200):
            if marker in seen:
                break
            await asyncio.sleep(0.01)
        for session in sessions.values():
            await settle(session.nc)
        return seen
    finally:
        await closing(*sessions.values())


def test_without_the_right_password_nobody_gets_in(bus: Bus) -> None:
    async def attempt(**credentials: str) -> str:
        async def quiet(error: Exception) -> None:
            pass

        with pytest.raises(NatsError) as caught:
            await nats.connect(
                bus.server.url,
                allow_reconnect=False,
                connect_timeout=2,
                error_cb=quiet,
                max_reconnect_attempts=0,
                **credentials,
            )
        return str(caught.value).lower()

    assert "authorization violation" in run(attempt())
    assert "authorization violation" in run(attempt(user="web", password=bus.passwords["backend"]))


def test_a_consumer_requests_and_the_provider_answers_through_its_queue_group(bus: Bus) -> None:
    async def scenario() -> bytes:
        web, backend = await login(bus, "web"), await login(bus, "backend")
        try:

            async def serve(msg: Msg) -> None:
                await msg.respond(b"order-7:" + msg.data)

            await backend.nc.subscribe("subhive.orders.v1.op.place_order.*", queue="backend", cb=serve)
            await settle(backend.nc)
            reply = await web.nc.request("subhive.orders.v1.op.place_order.web", b"book", timeout=2)
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


@pytest.mark.parametrize(
    "subject",
    [
        "subhive.payments.v1.op.charge.web",  # a contract web does not use
        "subhive.orders.v2.op.place_order.web",  # a major web does not use
        "subhive.orders.v1.ev.order_placed",  # the provider's side of its own contract
        "subhive.orders.v1.op.place_order.backend",  # a request in another hive's name
        "subhive.orders.v1.op.place_order",  # a request in nobody's name
    ],
)
def test_publishing_outside_the_grants_is_refused_by_the_server(bus: Bus, subject: str) -> None:
    marker = "subhive.orders.v1.op.place_order.web"

    async def scenario() -> tuple[str, list[str]]:
        web = await login(bus, "web")
        try:

            async def publish() -> None:
                await web.nc.publish(subject, b"sneaky")
                await web.nc.publish(marker, b"allowed")

            seen = await seen_anywhere_until(bus, marker, publish)
            return await web.error_about(f'publish to "{subject}"'), seen
        finally:
            await closing(web)

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

            await billing.nc.subscribe("subhive.payments.v1.op.charge.*", cb=serve)
            await settle(billing.nc)
            with pytest.raises(NatsTimeout):
                await web.nc.request("subhive.payments.v1.op.charge.web", b"free money", timeout=DENIED_WAIT)
            error = await web.error_about('publish to "subhive.payments.v1.op.charge.web"')
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
    assert pending == 0  # ... and web did not get it


def test_a_provider_cannot_write_into_inboxes_it_got_no_request_from(bus: Bus) -> None:
    async def scenario() -> str:
        backend = await login(bus, "backend")
        try:
            await backend.nc.publish("_INBOX_web.forged.1", b"fake reply")
            return await backend.error_about('publish to "_inbox_web.forged.1"')
        finally:
            await closing(backend)

    assert "permissions violation" in run(scenario())


def test_a_hive_uses_its_own_blackboard_bucket_which_the_framework_made(bus: Bus) -> None:
    async def scenario() -> tuple[Any, list[Any], list[str], tuple[int, int, int], str, list[Exception]]:
        web, admin = await login(bus, "web"), await login(bus, ADMIN_USER)
        try:
            await ensure_blackboard(admin.nc.jetstream(), "web")  # the framework, before the hive starts
            board = await KvBlackboard.open(web.nc.jetstream(), "web")
            first = await board.put("plan", {"v": 1}, writer="planner")
            await board.put("plan", {"v": 2}, writer="planner", expected_revision=first)
            with pytest.raises(RevisionConflict):  # compare-and-set, enforced by the server
                await board.put("plan", {"v": 3}, writer="planner", expected_revision=first)
            await board.put("notes.n1", {"text": "hi"}, writer="human")
            entry = await board.get("plan")
            history = [(e.value, e.writer) for e in await board.history("plan")]
            keys, size, clean = await board.keys(), await board.size(), list(web.errors)
            # nats-py's own KV client creates its stream and, for history and keys, consumers: refused.
            with pytest.raises(NatsTimeout):
                await web.nc.jetstream(timeout=DENIED_WAIT).create_key_value(bucket=kv_bucket("web"))
            refused = await web.error_about('publish to "$js.api.stream.create.kv_bb_web"')
            assert entry is not None
            return entry.value, history, keys, size, refused, clean
        finally:
            await closing(web, admin)

    value, history, keys, size, refused, errors = run(scenario())
    assert value == {"v": 2}
    assert history == [({"v": 1}, "planner"), ({"v": 2}, "planner")]
    assert keys == ["notes.n1", "plan"]
    assert size[:2] == (2, 3)
    assert "permissions violation" in refused
    assert errors == []  # reading, writing, history and keys needed nothing the hive may not do


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
                await web.nc.request("$JS.API.DIRECT.GET.KV_bb_backend.$KV.bb_backend.secret", b"", timeout=DENIED_WAIT)
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


# -- the JetStream API a hive may use, and why none of it reaches another hive ----------------------------


def _jetstream_grants(hive: str) -> set[str]:
    """Written out by hand: every JetStream subject ``hive`` may publish to. A new grant fails
    test_a_hive_may_use_exactly_these_jetstream_subjects until it is listed here, with an attack below."""
    expected = {
        f"$JS.API.STREAM.INFO.KV_bb_{hive}",  # its bucket exists; its keys; its size
        f"$JS.API.STREAM.MSG.GET.KV_bb_{hive}",  # read a key's last revision or walk its history
        f"$JS.API.CONSUMER.INFO.KV_bb_{hive}.controller",  # its controller's consumer is there
        f"$JS.ACK.KV_bb_{hive}.controller.>",  # ... and acknowledging its deliveries
    }
    for contract, majors in LOCK[hive][1].items():
        for major in majors:
            for event in EVENTS[(contract, major)]:
                stream, durable = f"SUBHIVE_EV_{contract}_v{major}", f"{hive}__{contract}__v{major}__{event}"
                expected |= {f"$JS.API.CONSUMER.INFO.{stream}.{durable}", f"$JS.ACK.{stream}.{durable}.>"}
    return expected


@pytest.mark.parametrize("hive", sorted(LOCK))
def test_a_hive_may_use_exactly_these_jetstream_subjects(hive: str) -> None:
    permissions = grants(hive)
    assert {s for s in permissions.publish if s.startswith("$JS")} == _jetstream_grants(hive)
    # Nothing that creates, changes or deletes a stream or a consumer, nor reads one by pull or direct get.
    for subject in permissions.publish:
        assert not any(
            verb in subject
            for verb in (".CREATE", ".UPDATE", ".DELETE", ".PURGE", "MSG.NEXT", "DIRECT.GET", "$JS.FC", "$JS.API.>")
        ), subject
    assert not [s for s in permissions.subscribe if s.startswith("$JS")]


@dataclass
class Provisioned:
    server: EmbeddedServer
    passwords: dict[str, str]


@pytest.fixture(scope="module")
def provisioned(start_module_nats: StartServer) -> Provisioned:
    """A server set up as ``subhive up`` does it: streams, buckets and every consumer made by the framework;
    backend's board holds a secret."""
    passwords = {hive: secrets.token_urlsafe(24) for hive in [*LOCK, ADMIN_USER]}
    accounts = AccountsConfig(
        {hive: (passwords[hive], grants(hive)) for hive in LOCK}, admin_password=passwords[ADMIN_USER]
    )
    server = start_module_nats(accounts=accounts)

    async def provision() -> None:
        nc = await nats.connect(server.url, user=ADMIN_USER, password=passwords[ADMIN_USER])
        js = nc.jetstream()
        await ensure_event_streams(js, list(EVENTS))
        await ensure_dead_letter_streams(js, list(LOCK))
        for hive in LOCK:
            await ensure_blackboard(js, hive)
        await ensure_consumers(
            js,
            [
                event_consumer(hive, contract, major, event)
                for hive, (_, consumes) in LOCK.items()
                for contract, majors in consumes.items()
                for major in majors
                for event in EVENTS[(contract, major)]
            ],
        )
        await js.publish("$KV.bb_backend.secret", b"backend only", headers={"Subhive-Writer": "backend"})
        await js.publish("$KV.bb_web.mine", b"web's own", headers={"Subhive-Writer": "web"})
        await nc.close()

    run(provision())
    return Provisioned(server, passwords)


FORGED = "subhive.dlq.backend.forged"  # where every attack tries to make the server deliver
_PUSH_TO_FORGED = {"deliver_subject": FORGED, "ack_policy": "none", "deliver_policy": "all"}


def _consumer(stream: str, name: str | None = None, **extra: Any) -> bytes:
    import json

    config = {**_PUSH_TO_FORGED, **({"durable_name": name, "name": name} if name else {}), **extra}
    return json.dumps({"stream_name": stream, "config": config}).encode()


_EVENTS = "SUBHIVE_EV_orders_v1"
_WEB_DURABLE = "web__orders__v1__order_placed"
# Each: what web sends (subject, body, reply subject); the server must refuse it outright.
REFUSED: dict[str, tuple[str, bytes, str]] = {
    "push consumer on its own bucket, delivering to another hive's subject": (
        "$JS.API.CONSUMER.CREATE.KV_bb_web.evil",
        _consumer("KV_bb_web", "evil"),
        "",
    ),
    "ephemeral push consumer on its own bucket": ("$JS.API.CONSUMER.CREATE.KV_bb_web", _consumer("KV_bb_web"), ""),
    "durable push consumer, the legacy API": (
        "$JS.API.CONSUMER.DURABLE.CREATE.KV_bb_web.evil",
        _consumer("KV_bb_web", "evil"),
        "",
    ),
    "its own event durable, re-made as a push consumer to another hive": (
        f"$JS.API.CONSUMER.CREATE.{_EVENTS}.{_WEB_DURABLE}.subhive.orders.v1.ev.order_placed",
        _consumer(_EVENTS, _WEB_DURABLE, filter_subject="subhive.orders.v1.ev.order_placed"),
        "",
    ),
    "a consumer on another hive's bucket": (
        "$JS.API.CONSUMER.CREATE.KV_bb_backend.evil",
        _consumer("KV_bb_backend", "evil"),
        "",
    ),
    "its own bucket's stream, re-created": (
        "$JS.API.STREAM.CREATE.KV_bb_web",
        b'{"name": "KV_bb_web", "subjects": ["$KV.bb_web.>"]}',
        "",
    ),
    "a stream capturing another hive's subjects": (
        "$JS.API.STREAM.CREATE.EVIL",
        b'{"name": "EVIL", "subjects": ["subhive.dlq.backend.>"]}',
        "",
    ),
    "its own stream, updated to capture and republish elsewhere": (
        "$JS.API.STREAM.UPDATE.KV_bb_web",
        b'{"name": "KV_bb_web", "subjects": ["$KV.bb_web.>", "subhive.orders.v1.ev.>"], '
        b'"republish": {"src": ">", "dest": "subhive.dlq.backend.forged"}}',
        "",
    ),
    "a stream sourcing another hive's bucket": (
        "$JS.API.STREAM.CREATE.COPY",
        b'{"name": "COPY", "sources": [{"name": "KV_bb_backend"}]}',
        "",
    ),
    "purging another hive's bucket": ("$JS.API.STREAM.PURGE.KV_bb_backend", b"", ""),
    "purging its own bucket": ("$JS.API.STREAM.PURGE.KV_bb_web", b"", ""),
    "deleting another hive's bucket": ("$JS.API.STREAM.DELETE.KV_bb_backend", b"", ""),
    "deleting a message of its own bucket": ("$JS.API.STREAM.MSG.DELETE.KV_bb_web", b'{"seq": 1}', ""),
    "direct get of its own bucket, answered on another hive's subject": (
        "$JS.API.DIRECT.GET.KV_bb_web.$KV.bb_web.mine",
        b"",
        FORGED,
    ),
    "direct get of another hive's bucket": ("$JS.API.DIRECT.GET.KV_bb_backend.$KV.bb_backend.secret", b"", ""),
    "pulling its own controller's consumer, delivered to another hive's subject": (
        "$JS.API.CONSUMER.MSG.NEXT.KV_bb_web.controller",
        b'{"batch": 1, "expires": 100000000}',
        FORGED,
    ),
    "pulling its own event consumer, delivered to another hive's subject": (
        f"$JS.API.CONSUMER.MSG.NEXT.{_EVENTS}.{_WEB_DURABLE}",
        b'{"batch": 1}',
        FORGED,
    ),
    "deleting its own controller's consumer": ("$JS.API.CONSUMER.DELETE.KV_bb_web.controller", b"", ""),
    "another hive's stream info": ("$JS.API.STREAM.INFO.KV_bb_backend", b"", ""),
    "reading another hive's bucket": (
        "$JS.API.STREAM.MSG.GET.KV_bb_backend",
        b'{"last_by_subj": "$KV.bb_backend.secret"}',
        "",
    ),
    "another hive's consumer info": ("$JS.API.CONSUMER.INFO.KV_bb_backend.controller", b"", ""),
    "acknowledging another hive's board consumer": ("$JS.ACK.KV_bb_backend.controller.1.1.1.1.0", b"+TERM", ""),
    "acknowledging another hive's event consumer": (
        "$JS.ACK.SUBHIVE_EV_payments_v1.backend__payments__v1__charged.1.1.1.1.0",
        b"+TERM",
        "",
    ),
    "listing every stream": ("$JS.API.STREAM.NAMES", b"", ""),
}


async def _server_state(admin: Session) -> tuple[list[str], dict[str, list[str]], int, int]:
    """Streams, consumers per stream, and how many messages backend's and web's boards hold."""
    js = admin.nc.jetstream()
    streams = sorted(s.config.name or "" for s in await js.streams_info())
    consumers = {name: sorted(c.name for c in await js.consumers_info(name)) for name in streams}
    boards = [(await js.stream_info(f"KV_bb_{hive}")).state.messages for hive in ("backend", "web")]
    return streams, consumers, boards[0], boards[1]


@pytest.mark.parametrize("attack", sorted(REFUSED))
def test_what_would_reach_another_hive_through_jetstream_is_refused_by_the_server(
    provisioned: Provisioned, attack: str
) -> None:
    subject, body, reply = REFUSED[attack]
    bus = Bus(provisioned.server, provisioned.passwords)

    async def scenario() -> tuple[str, int, Any, Any]:
        web, admin = await login(bus, "web"), await login(bus, ADMIN_USER)
        try:
            witness = await admin.nc.subscribe(FORGED)
            await settle(admin.nc)
            before = await _server_state(admin)
            await web.nc.publish(subject, body, reply=reply or "_INBOX_web.attack")
            error = await web.error_about(f'publish to "{subject}"')
            await settle(web.nc)
            await settle(admin.nc)
            return error, witness.pending_msgs, before, await _server_state(admin)
        finally:
            await closing(web, admin)

    error, landed, before, after = run(scenario())
    assert "permissions violation" in error
    assert landed == 0  # nothing was delivered where web may not publish
    assert after == before  # no stream, consumer, message or purge came of it


def test_what_a_hive_may_ask_of_jetstream_answers_only_about_its_own(provisioned: Provisioned) -> None:
    """The granted API subjects name the hive's own stream or consumer; crafted bodies cannot point them
    elsewhere: another hive's key, a sequence number of another stream, a subjects filter over another bucket."""
    import json

    bus = Bus(provisioned.server, provisioned.passwords)

    async def scenario() -> dict[str, Any]:
        web, admin = await login(bus, "web"), await login(bus, ADMIN_USER)
        try:

            async def ask(subject: str, body: dict[str, Any] | str = "") -> Any:
                data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                return json.loads((await web.nc.request(subject, data, timeout=2)).data)

            secret_seq = (await admin.nc.jetstream().stream_info("KV_bb_backend")).state.last_seq
            before = await _server_state(admin)
            answers = {
                "info": await ask("$JS.API.STREAM.INFO.KV_bb_web", {"subjects_filter": "$KV.bb_backend.>"}),
                "by_subject": await ask("$JS.API.STREAM.MSG.GET.KV_bb_web", {"last_by_subj": "$KV.bb_backend.secret"}),
                "next_by_subject": await ask(
                    "$JS.API.STREAM.MSG.GET.KV_bb_web", {"seq": 1, "next_by_subj": "$KV.bb_backend.>"}
                ),
                "by_seq": await ask("$JS.API.STREAM.MSG.GET.KV_bb_web", {"seq": secret_seq}),
                "consumer_crafted": await ask(
                    "$JS.API.CONSUMER.INFO.KV_bb_web.controller", {"config": {"deliver_subject": FORGED}}
                ),
                "consumer": await ask("$JS.API.CONSUMER.INFO.KV_bb_web.controller"),
                "event_consumer": await ask(f"$JS.API.CONSUMER.INFO.{_EVENTS}.{_WEB_DURABLE}"),
            }
            # An ack asking for more (+NXT) on a push consumer delivers nothing anywhere.
            witness = await admin.nc.subscribe(FORGED)
            await settle(admin.nc)
            await web.nc.publish("$JS.ACK.KV_bb_web.controller.1.1.1.1.0", b'+NXT {"batch": 5}', reply=FORGED)
            await settle(web.nc)
            await settle(admin.nc)
            answers["nxt_delivered"] = (
                [m.data for m in [await witness.next_msg(timeout=1)]] if witness.pending_msgs else []
            )
            answers["state_unchanged"] = await _server_state(admin) == before
            answers["errors"] = list(web.errors)
            return answers
        finally:
            await closing(web, admin)

    answers = run(scenario())
    assert answers["info"]["config"]["name"] == "KV_bb_web"
    assert not answers["info"]["state"].get("subjects")  # nothing of backend's bucket
    for read in ("by_subject", "next_by_subject"):
        assert answers[read]["error"]["code"] == 404, answers[read]  # not in web's stream: no message
    assert "message" not in answers["by_seq"] or answers["by_seq"]["message"]["subject"].startswith("$KV.bb_web.")
    assert "error" in answers["consumer_crafted"]  # info takes no body: it changes nothing
    assert answers["consumer"]["config"]["deliver_subject"] == deliver_subject("web", "controller")
    assert answers["event_consumer"]["config"]["deliver_subject"] == deliver_subject("web", _WEB_DURABLE)
    assert durable_name("web", "orders", 1, "order_placed") == _WEB_DURABLE
    assert answers["nxt_delivered"] in ([], [b""])  # at most the server's empty answer, never a stored message
    assert answers["state_unchanged"]
    assert answers["errors"] == []


# -- answers pointed elsewhere ----------------------------------------------------------------------------

# Another hive's storage and inboxes: where web would like the server to write for it.
FOREIGN_REPLIES = [
    FORGED,  # backend's dead letters
    "$KV.bb_backend.secret",  # a key of backend's board
    "subhive.orders.v1.ev.order_placed",  # an event stream web reads but may not publish to
    "subhive.payments.v1.ev.charged",  # an event stream of a contract web does not use
    "_INBOX_backend.deliver.backend__payments__v1__charged",  # backend's event deliveries
    "_INBOX_backend.replay.payments.v1.charged",  # backend's replays
]


def _granted_requests(grants: Permissions) -> list[tuple[str, bytes]]:
    """One request per subject web may publish that something answers: each JetStream API subject, a board
    write, a dead letter, an ack; the answer is the server's own JSON, a publish ack, or nothing."""
    bodies = {"$JS.API.STREAM.MSG.GET.KV_bb_web": b'{"last_by_subj": "$KV.bb_web.mine"}'}
    requests: list[tuple[str, bytes]] = []
    for subject in grants.publish:
        if subject.startswith("$JS.API."):
            requests.append((subject, bodies.get(subject, b"")))
        elif subject.endswith(".>"):  # a write under a prefix: its board, its dead letters, an ack
            requests.append((subject[:-1] + ("+ACK" if subject.startswith("$JS.ACK.") else "attack"), b"{}"))
    return requests


async def _message_counts(admin: Session) -> dict[str, int]:
    js = admin.nc.jetstream()
    return {s.config.name or "": s.state.messages for s in await js.streams_info()}


@pytest.mark.parametrize("reply", FOREIGN_REPLIES)
def test_an_answer_web_points_at_another_hives_subject_lands_nowhere(provisioned: Provisioned, reply: str) -> None:
    """No permission restricts reply subjects, and web chooses them for every request it may make. Each hive
    has its own account (decision 0056): the server's answer goes back into web's account, where the reply
    subject names nothing of backend's. Nothing is stored in any stream web does not own, and nothing is
    delivered to backend."""
    bus = Bus(provisioned.server, provisioned.passwords)
    requests = _granted_requests(grants("web"))
    assert len(requests) >= 7  # every kind of grant is tried

    async def scenario() -> tuple[dict[str, int], dict[str, int], int, list[str]]:
        web, admin, backend = await login(bus, "web"), await login(bus, ADMIN_USER), await login(bus, "backend")
        try:
            witness = await backend.nc.subscribe("_INBOX_backend.>")
            await settle(backend.nc)
            before = await _message_counts(admin)
            for subject, body in requests:
                await web.nc.publish(subject, body, reply=reply)
            # Honest requests of each kind after the attacks: once they are answered, so were the attacks.
            for subject, body in requests:
                if not subject.startswith("$JS.ACK."):
                    await web.nc.request(subject, body, timeout=2)
            await settle(backend.nc)
            after = await _message_counts(admin)
            return before, after, witness.pending_msgs, [str(e) for e in web.errors]
        finally:
            await closing(web, admin, backend)

    before, after, delivered, errors = run(scenario())
    assert errors == []  # every request was within web's grants
    own = {"KV_bb_web", "SUBHIVE_DLQ_web"}  # its own writes land there, as they should
    assert {k: v for k, v in after.items() if k not in own} == {k: v for k, v in before.items() if k not in own}
    assert delivered == 0
