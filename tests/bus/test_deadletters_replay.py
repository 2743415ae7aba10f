"""Replaying a dead letter sends only what the lock lets its hive receive, with headers made anew.

A hive writes its own dead letters, stored subject and headers included, and the framework replays them with
its admin connection: a hive that forges a letter must not get the admin to purge another hive's board, nor
to publish an event as another hive (decision 0046). Real nats-server, real per-hive users.
"""

from __future__ import annotations

import json
import secrets
from typing import Any

import nats
import pytest
from hypothesis import given
from hypothesis import strategies as st
from nats.aio.client import Client

from subhive.bus import (
    ADMIN_USER,
    AccountsConfig,
    BusError,
    DeadLetters,
    EmbeddedServer,
    ReplayRules,
    ensure_dead_letter_streams,
    ensure_event_streams,
    event_stream,
    hive_permissions,
    inbox_prefix,
)
from tests.kit import StartServer, run

ADMIN_PASSWORD = secrets.token_urlsafe(24)
PASSWORDS = {hive: secrets.token_urlsafe(24) for hive in ("backend", "web")}
OPS, EVENTS = {("orders", 1): ["place_order"]}, {("orders", 1): ["order_placed"]}
#: What the lock says: backend provides orders v1 (1.1.0), web consumes it.
RULES = ReplayRules(
    operations={("backend", "orders", 1, "place_order"): frozenset({"web"})},
    events={("web", "orders", 1, "order_placed"): "backend"},
    versions={("orders", 1): "1.1.0"},
)


@pytest.fixture
def server(start_nats: StartServer) -> EmbeddedServer:
    """A fresh nats-server where each hive has exactly the grants the lock gives it."""
    users = {
        "backend": (PASSWORDS["backend"], hive_permissions("backend", {"orders": [1]}, {}, OPS, EVENTS)),
        "web": (PASSWORDS["web"], hive_permissions("web", {}, {"orders": [1]}, OPS, EVENTS)),
    }
    return start_nats(accounts=AccountsConfig(users, admin_password=ADMIN_PASSWORD))


async def _forge(web: Client, kept_on: str, subject: str, headers: dict[str, str], data: bytes = b"{}") -> None:
    """What a hostile hive can write: any bytes and any stored subject and headers, on its own DLQ subjects."""
    await web.jetstream().publish(
        kept_on,
        data,
        headers={
            "Subhive-Dlq-Code": "payload.invalid",
            "Subhive-Dlq-Subject": subject,
            "Subhive-Dlq-Headers": json.dumps(headers),
            "Nats-Msg-Id": secrets.token_hex(8),
        },
    )


FORGED = [  # (kept on, stored subject, stored headers, why the replay must refuse)
    (
        "subhive.dlq.web.orders.v1.ev.order_placed",
        "$JS.API.STREAM.PURGE.KV_bb_backend",
        {"Subhive-Sender": "backend"},
        "server API subject",
    ),
    (
        "subhive.dlq.web.payments.v1.ev.charged",
        "subhive.payments.v1.ev.charged",
        {"Subhive-Sender": "billing"},
        "web does not consume payments v1 event 'charged'",
    ),
    (
        "subhive.dlq.web.orders.v1.ev.order_placed",
        "subhive.orders.v1.ev.order_placed",
        {"Subhive-Sender": "web"},
        "Subhive-Sender says web, but backend provides orders v1",
    ),
    (
        "subhive.dlq.web.orders.v1.op.place_order",
        "subhive.orders.v1.op.place_order.web",
        {"Subhive-Sender": "web"},
        "web does not provide orders v1 operation 'place_order'",
    ),
    (
        "subhive.dlq.web.orders.v1.ev.order_placed",
        "subhive.orders.v1.ev.order_shipped",
        {"Subhive-Sender": "backend"},
        "it says it arrived on 'subhive.orders.v1.ev.order_shipped'",
    ),
    (
        "subhive.dlq.web.orders.v1.reply.place_order",
        "_INBOX_backend.x",
        {"Subhive-Sender": "backend"},
        "cannot be sent again",
    ),
]


def test_a_forged_letter_is_refused_and_nothing_is_published(server: EmbeddedServer) -> None:
    async def scenario() -> tuple[list[BusError], list[str], bytes, int, Any]:
        admin = await nats.connect(server.url, user=ADMIN_USER, password=ADMIN_PASSWORD)
        web = await nats.connect(server.url, user="web", password=PASSWORDS["web"], inbox_prefix=inbox_prefix("web"))
        js = admin.jetstream()
        seen: list[str] = []
        try:
            await ensure_dead_letter_streams(js, ["backend", "web"])
            await ensure_event_streams(js, [("orders", 1)], hives=["backend", "web"])
            board = await js.create_key_value(bucket="bb_backend")
            await board.put("order.o-1", b"kept")
            for kept_on, subject, headers, _ in FORGED:
                await _forge(web, kept_on, subject, headers)

            async def spy(msg: Any) -> None:
                if not msg.subject.startswith("subhive.dlq."):
                    seen.append(msg.subject)

            await admin.subscribe("subhive.>", cb=spy)
            await admin.subscribe("$JS.API.STREAM.PURGE.>", cb=spy)
            letters = DeadLetters(admin)
            refusals = []
            for n in range(1, len(FORGED) + 1):
                with pytest.raises(BusError) as caught:
                    await letters.replay(f"web:{n}", rules=RULES, by="alice")
                refusals.append(caught.value)
            await admin.flush()
            entry = await board.get("order.o-1")
            events = (await js.stream_info(event_stream("orders", 1))).state.messages
            return refusals, seen, entry.value or b"", events, await letters.get("web:1")
        finally:
            await web.close()
            await admin.close()

    refusals, seen, board_value, events, first = run(scenario())
    for refusal, (kept_on, _, _, why) in zip(refusals, FORGED, strict=True):
        assert refusal.code == "deadletter.replay_refused", refusal
        assert why in refusal.message, (why, refusal.message)
        assert refusal.location is not None
        assert refusal.location.subject == kept_on
        assert "deadletters show" in (refusal.hint or "")
    assert (seen, board_value, events) == ([], b"kept", 0)
    assert first.replays == ()  # a refused replay is not recorded as one


def test_a_replayed_event_carries_headers_made_anew(server: EmbeddedServer) -> None:
    """The stored headers are the hive's words: the replay sends the lock's version, the provider, a new id; and
    it goes to web alone (its replay subject), not to the event stream (decision 0047)."""

    async def scenario() -> tuple[str, dict[str, str], bytes, int]:
        admin = await nats.connect(server.url, user=ADMIN_USER, password=ADMIN_PASSWORD)
        web = await nats.connect(server.url, user="web", password=PASSWORDS["web"], inbox_prefix=inbox_prefix("web"))
        js = admin.jetstream()
        try:
            await ensure_dead_letter_streams(js, ["backend", "web"])
            await ensure_event_streams(js, [("orders", 1)], hives=["backend", "web"])
            await _forge(
                web,
                "subhive.dlq.web.orders.v1.ev.order_placed",
                "subhive.orders.v1.ev.order_placed",
                {
                    "Subhive-Sender": "backend",
                    "Subhive-Contract": "orders@1.9.9",
                    "Nats-Msg-Id": "old",
                    "Nats-Expected-Stream": "KV_bb_backend",
                    "traceparent": "00-x",
                },
                b'{"order_id": "o-1"}',
            )
            replays = await web.subscribe("_INBOX_web.replay.>")
            await web.flush()
            said = await DeadLetters(admin).replay("web:1", rules=RULES, by="alice")
            got = await replays.next_msg(timeout=5)
            stored = (await js.stream_info(event_stream("orders", 1))).state.messages
            return said, dict(got.headers or {}), got.data, stored
        finally:
            await web.close()
            await admin.close()

    said, headers, data, stored = run(scenario())
    assert said == "event re-sent to web alone (_INBOX_web.replay.orders.v1.order_placed)"
    assert (data, stored) == (b'{"order_id": "o-1"}', 0)
    msg_id = headers.pop("Nats-Msg-Id")
    assert msg_id not in {"old", ""}
    assert headers == {"Subhive-Contract": "orders@1.1.0", "Subhive-Sender": "backend", "Subhive-Replay-Of": "web:1"}


_TOKEN = st.sampled_from(
    [
        "web",
        "backend",
        "orders",
        "payments",
        "v1",
        "v2",
        "vx",
        "op",
        "ev",
        "reply",
        "place_order",
        "order_placed",
        "$JS",
        "API",
        "*",
        ">",
        "",
    ]
)


@given(
    kept_on=st.lists(_TOKEN, min_size=5, max_size=8),
    stored=st.lists(_TOKEN, min_size=1, max_size=8),
    sender=_TOKEN,
    extra=st.dictionaries(
        st.sampled_from(["Nats-Expected-Stream", "Subhive-Contract", "traceparent"]), st.text(max_size=5)
    ),
)
def test_a_replay_goes_only_where_the_lock_lets_its_hive_receive(
    kept_on: list[str], stored: list[str], sender: str, extra: dict[str, str]
) -> None:
    """For any letter a hive can write, the target is one of its receiving subjects, or there is none."""
    subject = ".".join(["subhive", "dlq", *kept_on])
    try:
        target = RULES.target(subject, ".".join(stored), {**extra, "Subhive-Sender": sender}, "x:1")
    except BusError as exc:
        refused = exc.code
    else:
        refused = ""
    if refused:
        assert refused == "deadletter.replay_refused"
        return
    allowed = {
        ("op", "subhive.orders.v1.op.place_order.web", "web"),
        ("ev", "_INBOX_web.replay.orders.v1.order_placed", "backend"),
    }
    assert (target.kind, target.subject, target.headers["Subhive-Sender"]) in allowed
    assert kept_on[0] == ("backend" if target.kind == "op" else "web")
    assert set(target.headers) == {"Subhive-Contract", "Subhive-Sender", "Nats-Msg-Id"}
    assert target.headers["Subhive-Contract"] == "orders@1.1.0"
