"""The contract bus over a real nats-server: validation both ways, error replies, dead letters with the
exact bytes, queue groups, two majors side by side, durable events with one retry, repeated failures.

Raw nats-py connections play the misbehaving peers (malformed JSON, missing headers, a wrong major), so
what reaches the transport is exactly what a broken hive would send.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import nats
import pytest
from nats.js.errors import NotFoundError

from subhive.bus import (
    BusError,
    DeadLetters,
    EmbeddedServer,
    Failure,
    NatsTransport,
    RemoteError,
    ReplayRules,
    ensure_event_streams,
)
from subhive.runtime import NotServed, PayloadInvalid
from tests.kit import StartServer, run

from ._contracts import orders


@pytest.fixture(scope="module")
def server(start_module_nats: StartServer) -> EmbeddedServer:
    """One nats-server for the whole module: each test provisions what it uses."""
    return start_module_nats()


async def _fresh(server: EmbeddedServer) -> None:
    """Empty streams for each test: delete them, then provision again as the framework does."""
    nc = await nats.connect(server.url)
    js = nc.jetstream()
    for name in (
        "SUBHIVE_EV_orders_v1",
        "SUBHIVE_EV_orders_v2",
        "SUBHIVE_DLQ_backend",
        "SUBHIVE_DLQ_web",
        "SUBHIVE_DLQ_REPLAYS",
    ):
        with contextlib.suppress(NotFoundError):
            await js.delete_stream(name)
    await ensure_event_streams(js, [("orders", 1), ("orders", 2)], hives=["backend", "web"])
    await nc.close()


async def _hive(server: EmbeddedServer, name: str, **options: Any) -> NatsTransport:
    return await NatsTransport.connect(server.endpoint(), name, **options)


async def _echo_orders(payload: Any) -> Any:
    return {"order_id": f"o-{payload['sku']}-{payload['qty']}"}


async def _letters(server: EmbeddedServer, hive: str | None = None) -> list[Any]:
    nc = await nats.connect(server.url)
    try:
        return await DeadLetters(nc).list(hive)
    finally:
        await nc.close()


async def _kept(server: EmbeddedServer, hive: str) -> list[Any]:
    """The hive's dead letters once the first is stored (it is kept after the refusal is answered)."""
    for _ in range(100):
        letters = await _letters(server, hive)
        if letters:
            return letters
        await asyncio.sleep(0.05)
    return []


def test_a_request_is_validated_both_ways_and_answered(server: EmbeddedServer) -> None:
    async def scenario() -> Any:
        await _fresh(server)
        backend, web = await _hive(server, "backend"), await _hive(server, "web")
        try:
            await backend.serve(orders(), {"place_order": _echo_orders})
            return await web.request(orders(), "place_order", {"sku": "A-7", "qty": 2})
        finally:
            await web.close()
            await backend.close()

    assert run(scenario()) == {"order_id": "o-A-7-2"}


def test_an_invalid_outgoing_request_raises_before_anything_leaves(server: EmbeddedServer) -> None:
    async def scenario() -> tuple[PayloadInvalid, list[bytes]]:
        await _fresh(server)
        seen: list[bytes] = []
        spy = await nats.connect(server.url)

        async def record(msg: Any) -> None:
            seen.append(msg.data)

        await spy.subscribe("subhive.orders.v1.op.>", cb=record)
        await spy.flush()
        web = await _hive(server, "web")
        try:
            with pytest.raises(PayloadInvalid) as caught:
                await web.request(orders(), "place_order", {"sku": "B-1", "qty": 2})
            await asyncio.sleep(0.1)
            return caught.value, seen
        finally:
            await web.close()
            await spy.close()

    error, seen = run(scenario())
    assert (error.moving, error.pointer, error.keyword) == ("outgoing", "/sku", "pattern")
    assert seen == []


@pytest.mark.parametrize(
    ("data", "headers", "code", "pointer"),
    [
        (b'{"sku": "A-1", "qty": 0}', "good", "payload.invalid", "/qty"),
        (b'{"sku": "A-1", "qty": "two"}', "good", "payload.invalid", "/qty"),
        (b'{"sku": "A-1", "qty": 2', "good", "payload.malformed", ""),
        (b'{"sku": "A-1", "qty": 2}', "none", "bus.missing_header", ""),
        (b'{"sku": "A-1", "qty": 2}', "v2", "bus.wrong_contract", ""),
    ],
)
def test_a_bad_incoming_request_gets_a_structured_refusal_and_is_dead_lettered_bytes_intact(
    server: EmbeddedServer, data: bytes, headers: str, code: str, pointer: str
) -> None:
    sent_headers = {
        "none": {},
        "good": {"Subhive-Contract": "orders@1.0.0", "Subhive-Sender": "rogue"},
        "v2": {"Subhive-Contract": "orders@2.0.0", "Subhive-Sender": "rogue"},
    }[headers]
    calls: list[Any] = []

    async def handler(payload: Any) -> Any:
        calls.append(payload)
        return {"order_id": "x"}

    async def scenario() -> tuple[Any, dict[str, str], list[Any], int]:
        await _fresh(server)
        backend = await _hive(server, "backend")
        raw = await nats.connect(server.url)
        try:
            await backend.serve(orders(), {"place_order": handler})
            reply = await raw.request("subhive.orders.v1.op.place_order.rogue", data, timeout=5, headers=sent_headers)
            letters = await _kept(server, "backend")
            return json.loads(reply.data), reply.headers or {}, letters, backend.stats.refused[code]
        finally:
            await raw.close()
            await backend.close()

    body, reply_headers, letters, counted = run(scenario())
    assert reply_headers["Subhive-Error"] == code
    assert body["code"] == code
    assert body["pointer"] == pointer
    assert body["subject"] == "subhive.orders.v1.op.place_order.rogue"
    if code == "payload.invalid":
        assert body["keyword"] in {"minimum", "type"}
    assert calls == []  # the handler never saw it
    assert counted == 1
    assert len(letters) == 1
    assert letters[0].data == data  # bytes intact
    assert (letters[0].code, letters[0].subject) == (code, "subhive.orders.v1.op.place_order.rogue")
    assert letters[0].headers == sent_headers


def test_an_invalid_reply_is_refused_by_the_caller_and_dead_lettered(server: EmbeddedServer) -> None:
    bad_reply = b'{"order_id": ""}'

    async def scenario() -> tuple[PayloadInvalid, list[Any]]:
        await _fresh(server)
        raw = await nats.connect(server.url)

        async def wrong(msg: Any) -> None:
            await raw.publish(msg.reply, bad_reply)

        await raw.subscribe("subhive.orders.v1.op.place_order.*", cb=wrong)
        await raw.flush()
        web = await _hive(server, "web")
        try:
            with pytest.raises(PayloadInvalid) as caught:
                await web.request(orders(), "place_order", {"sku": "A-1", "qty": 1})
            return caught.value, await _letters(server, "web")
        finally:
            await web.close()
            await raw.close()

    error, letters = run(scenario())
    assert (error.moving, error.pointer, error.keyword) == ("incoming", "/order_id", "minLength")
    assert [(d.data, d.code) for d in letters] == [(bad_reply, "payload.invalid")]


def test_a_provider_that_answers_outside_its_contract_is_caught_on_its_own_side(server: EmbeddedServer) -> None:
    async def broken(payload: Any) -> Any:
        return {"order_id": 42}

    async def scenario() -> RemoteError:
        await _fresh(server)
        backend, web = await _hive(server, "backend"), await _hive(server, "web")
        try:
            await backend.serve(orders(), {"place_order": broken})
            with pytest.raises(RemoteError) as caught:
                await web.request(orders(), "place_order", {"sku": "A-1", "qty": 1})
            return caught.value
        finally:
            await web.close()
            await backend.close()

    error = run(scenario())
    assert error.code == "provider.invalid_reply"
    assert error.pointer == "/order_id"


def test_a_handler_that_raises_gives_the_class_never_a_traceback(server: EmbeddedServer) -> None:
    async def crashing(payload: Any) -> Any:
        raise KeyError("secret internal detail")

    async def scenario() -> RemoteError:
        await _fresh(server)
        backend, web = await _hive(server, "backend"), await _hive(server, "web")
        try:
            await backend.serve(orders(), {"place_order": crashing})
            with pytest.raises(RemoteError) as caught:
                await web.request(orders(), "place_order", {"sku": "A-1", "qty": 1})
            return caught.value
        finally:
            await web.close()
            await backend.close()

    error = run(scenario())
    assert error.code == "handler.failed"
    assert "KeyError" in error.message
    assert "secret internal detail" not in error.message
    assert "Traceback" not in error.message


def test_nobody_serving_is_a_clear_error_naming_the_subject(server: EmbeddedServer) -> None:
    async def scenario() -> NotServed:
        await _fresh(server)
        web = await _hive(server, "web")
        try:
            with pytest.raises(NotServed) as caught:
                await web.request(orders(), "place_order", {"sku": "A-1", "qty": 1})
            return caught.value
        finally:
            await web.close()

    assert run(scenario()).location.subject == "subhive.orders.v1.op.place_order.web"


def test_replicas_in_a_queue_group_share_the_requests(server: EmbeddedServer) -> None:
    served: dict[str, int] = {"a": 0, "b": 0}

    def replica(name: str) -> Any:
        async def handle(payload: Any) -> Any:
            served[name] += 1
            await asyncio.sleep(0.005)
            return {"order_id": name}

        return handle

    async def scenario() -> list[Any]:
        await _fresh(server)
        a, b, web = await _hive(server, "backend"), await _hive(server, "backend"), await _hive(server, "web")
        try:
            await a.serve(orders(), {"place_order": replica("a")})
            await b.serve(orders(), {"place_order": replica("b")})
            return await asyncio.gather(
                *(web.request(orders(), "place_order", {"sku": "A-1", "qty": 1}) for _ in range(60))
            )
        finally:
            for t in (web, a, b):
                await t.close()

    answers = run(scenario())
    assert len(answers) == 60
    assert served["a"] + served["b"] == 60  # each request answered exactly once
    assert served["a"] > 0
    assert served["b"] > 0


def test_two_majors_are_served_side_by_side(server: EmbeddedServer) -> None:
    async def v2(payload: Any) -> Any:
        return {"id": "two"}

    async def scenario() -> tuple[Any, Any]:
        await _fresh(server)
        backend, web = await _hive(server, "backend"), await _hive(server, "web")
        try:
            await backend.serve(orders(1), {"place_order": _echo_orders})
            await backend.serve(orders(2), {"place_order": v2})
            request = {"sku": "A-3", "qty": 3}
            return (
                await web.request(orders(1), "place_order", request),
                await web.request(orders(2), "place_order", request),
            )
        finally:
            await web.close()
            await backend.close()

    assert run(scenario()) == ({"order_id": "o-A-3-3"}, {"id": "two"})


def test_durable_events_reach_subscribers_and_a_failing_handler_is_retried_once_then_dead_lettered(
    server: EmbeddedServer,
) -> None:
    attempts: dict[str, int] = {}
    delivered: list[str] = []
    reported: list[Failure] = []

    async def handler(payload: Any) -> None:
        order = payload["order_id"]
        attempts[order] = attempts.get(order, 0) + 1
        if order == "flaky" and attempts[order] == 1:
            raise RuntimeError("transient")
        if order.startswith("broken"):
            raise ValueError("always")
        delivered.append(order)

    async def report(failure: Failure) -> None:
        reported.append(failure)

    async def scenario() -> list[Any]:
        await _fresh(server)
        backend = await _hive(server, "backend")
        web = await _hive(server, "web", on_repeated_failure=report)
        try:
            await web.subscribe(orders(), "order_placed", handler)
            for order in ("o-1", "flaky", "broken-1", "o-2"):
                await backend.publish(orders(), "order_placed", {"order_id": order})
            for _ in range(300):
                if len(delivered) == 3 and attempts.get("broken-1") == 2 and web.stats.dead_lettered:
                    break
                await asyncio.sleep(0.02)
            return await _letters(server, "web")
        finally:
            await web.close()
            await backend.close()

    letters = run(scenario())
    assert sorted(delivered) == ["flaky", "o-1", "o-2"]
    assert attempts == {"o-1": 1, "flaky": 2, "broken-1": 2, "o-2": 1}
    assert [(json.loads(d.data), d.code) for d in letters] == [({"order_id": "broken-1"}, "handler.failed")]
    # Two failures of one class in this hive: reported once, for a repair proposal.
    assert [(f.hive, f.code, f.contract, f.member, f.count) for f in reported] == [
        ("web", "handler.failed", "orders", "order_placed", 2)
    ]


def test_an_event_outside_the_schema_is_dead_lettered_and_never_redelivered(server: EmbeddedServer) -> None:
    delivered: list[Any] = []

    async def handler(payload: Any) -> None:
        delivered.append(payload)

    async def scenario() -> list[Any]:
        await _fresh(server)
        raw = await nats.connect(server.url)
        web = await _hive(server, "web")
        try:
            await raw.jetstream().publish(
                "subhive.orders.v1.ev.order_placed",
                b'{"order_id": 7}',
                headers={"Subhive-Contract": "orders@1.0.0", "Subhive-Sender": "backend"},
            )
            await web.subscribe(orders(), "order_placed", handler)
            for _ in range(200):
                if web.stats.dead_lettered:
                    break
                await asyncio.sleep(0.02)
            await asyncio.sleep(0.3)
            return await _letters(server, "web")
        finally:
            await web.close()
            await raw.close()

    letters = run(scenario())
    assert delivered == []
    assert [(d.data, d.code, d.pointer) for d in letters] == [(b'{"order_id": 7}', "payload.invalid", "/order_id")]


def test_a_dead_letter_is_replayed_to_its_subject(server: EmbeddedServer) -> None:
    received: list[Any] = []
    fail = {"on": True}

    async def handler(payload: Any) -> None:
        if fail["on"]:
            raise RuntimeError("down")
        received.append(payload)

    async def scenario() -> tuple[str, list[Any]]:
        await _fresh(server)
        backend, web = await _hive(server, "backend"), await _hive(server, "web")
        admin = await nats.connect(server.url)
        try:
            await web.subscribe(orders(), "order_placed", handler)
            await backend.publish(orders(), "order_placed", {"order_id": "o-9"})
            for _ in range(300):
                if web.stats.dead_lettered:
                    break
                await asyncio.sleep(0.02)
            fail["on"] = False
            letters = DeadLetters(admin)
            [letter] = await letters.list("web")
            rules = ReplayRules(events={("web", "orders", 1, "order_placed"): "backend"})
            said = await letters.replay(letter.seq, rules=rules)
            for _ in range(300):
                if received:
                    break
                await asyncio.sleep(0.02)
            return said, received
        finally:
            await admin.close()
            await web.close()
            await backend.close()

    said, received = run(scenario())
    assert said == "event re-sent to web alone (_INBOX_web.replay.orders.v1.order_placed)"
    assert received == [{"order_id": "o-9"}]


def test_an_oversized_payload_is_refused_before_sending(server: EmbeddedServer) -> None:
    async def scenario() -> BusError:
        web = await _hive(server, "web")
        try:
            with pytest.raises(BusError) as caught:
                await web.request(orders(), "place_order", {"sku": "A-" + "1" * 2_000_000, "qty": 1})
            return caught.value
        finally:
            await web.close()

    error = run(scenario())
    assert error.code == "payload.too_large"
    assert error.location.subject == "subhive.orders.v1.op.place_order.web"


def test_the_senders_trace_reaches_the_handler_and_every_message_has_its_own_id(server: EmbeddedServer) -> None:
    from subhive._trace import continue_trace, current_traceparent

    seen: list[tuple[str | None, str]] = []
    trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    async def handler(payload: Any) -> Any:
        seen.append((current_traceparent(), payload["sku"]))
        return {"order_id": "o"}

    async def scenario() -> list[str]:
        await _fresh(server)
        backend, web = await _hive(server, "backend"), await _hive(server, "web")
        spy = await nats.connect(server.url)
        ids: list[str] = []

        async def record(msg: Any) -> None:
            ids.append((msg.headers or {})["Nats-Msg-Id"])

        await spy.subscribe("subhive.orders.v1.op.place_order.*", cb=record)
        await spy.flush()
        try:
            await backend.serve(orders(), {"place_order": handler})
            with continue_trace(trace):
                await web.request(orders(), "place_order", {"sku": "A-1", "qty": 1})
                await web.request(orders(), "place_order", {"sku": "A-2", "qty": 1})
            await web.request(orders(), "place_order", {"sku": "A-3", "qty": 1})  # outside: a trace of its own
            await asyncio.sleep(0.1)
            return ids
        finally:
            await spy.close()
            await web.close()
            await backend.close()

    ids = run(scenario())
    traces = {sku: tp.split("-")[1] for tp, sku in seen if tp}
    assert traces["A-1"] == traces["A-2"] == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert traces["A-3"] != "4bf92f3577b34da6a3ce929d0e0e4736"
    assert len(ids) == 3
    assert len(set(ids)) == 3


def test_an_unreachable_server_is_an_error_not_a_hang() -> None:
    from subhive.bus import BusEndpoint

    async def scenario() -> BusError:
        with pytest.raises(BusError) as caught:
            await NatsTransport.connect(BusEndpoint(["nats://127.0.0.1:1"]), "web", connect_timeout=1.0)
        return caught.value

    error = run(scenario())
    assert error.code == "bus.unavailable"
    assert "127.0.0.1:1" in error.message


def test_a_request_from_a_hive_that_is_not_a_registered_consumer_is_refused_and_kept(server: EmbeddedServer) -> None:
    data = b'{"sku": "A-1", "qty": 1}'

    async def scenario() -> tuple[dict[str, Any], list[Any], int]:
        await _fresh(server)
        backend = await _hive(server, "backend", allowed_senders={("orders", 1): {"web"}})
        web, rogue = await _hive(server, "web"), await nats.connect(server.url)
        try:
            await backend.serve(orders(), {"place_order": _echo_orders})
            assert await web.request(orders(), "place_order", {"sku": "A-1", "qty": 1}) == {"order_id": "o-A-1-1"}
            reply = await rogue.request(
                "subhive.orders.v1.op.place_order.billing",
                data,
                timeout=5,
                headers={"Subhive-Contract": "orders@1.0.0", "Subhive-Sender": "billing"},
            )
            letters = await _kept(server, "backend")
            return json.loads(reply.data), letters, backend.stats.refused["bus.sender_unknown"]
        finally:
            await rogue.close()
            await web.close()
            await backend.close()

    body, letters, counted = run(scenario())
    assert body["code"] == "bus.sender_unknown"
    assert "billing" in body["message"]
    assert counted == 1
    assert [(d.data, d.code) for d in letters] == [(data, "bus.sender_unknown")]


def test_a_handler_whose_own_timeout_expires_is_refused_and_the_provider_serves_on(server: EmbeddedServer) -> None:
    # asyncio.timeout cancels the task it was entered in: that must be the handler's, never the subscription's
    # (an eager start on Python 3.11 would get this wrong and stop the provider for good).
    async def impatient(payload: Any) -> Any:
        if payload["qty"] == 1:
            async with asyncio.timeout(0.05):
                await asyncio.sleep(1)
        return {"order_id": "o"}

    async def scenario() -> tuple[str, Any]:
        backend, web = await _hive(server, "backend"), await _hive(server, "web")
        try:
            await backend.serve(orders(), {"place_order": impatient})
            with pytest.raises(RemoteError) as caught:
                await web.request(orders(), "place_order", {"sku": "A-1", "qty": 1})
            await asyncio.sleep(0.1)
            return caught.value.code, await web.request(orders(), "place_order", {"sku": "A-1", "qty": 2})
        finally:
            await web.close()
            await backend.close()

    assert run(scenario()) == ("handler.failed", {"order_id": "o"})
