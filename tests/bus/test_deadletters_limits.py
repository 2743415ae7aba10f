"""Each hive's dead letters in its own stream, with limits, against a real nats-server with per-hive users.

A flood from one hive fills its own stream only: the stream refuses what does not fit and keeps what it has,
and every other hive's letters (and room) are untouched. Limits are enforced by the server (size and age,
small ones here), change when the configuration does, and an old shared ``SUBHIVE_DLQ`` stops capturing on
the next provisioning while its letters stay readable. Replay marks live where no hive may write.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from typing import Any

import nats
import pytest
from hypothesis import given
from hypothesis import strategies as st
from nats.aio.client import Client
from nats.errors import NoRespondersError
from nats.js.api import StorageType, StreamConfig

from subhive.bus import (
    ADMIN_USER,
    DLQ_STREAM,
    REPLAYS_STREAM,
    AccountsConfig,
    BusError,
    DeadLetters,
    DeadLetterUsage,
    EmbeddedServer,
    FullnessAlarm,
    NatsTransport,
    ReplayRules,
    WireError,
    dlq_stream,
    ensure_dead_letter_streams,
    ensure_event_streams,
    hive_permissions,
    inbox_prefix,
)
from subhive.bus._deadletter import publish_dead_letter
from subhive.workspace import DeadLetterLimits
from tests.kit import StartServer, run

from ._contracts import orders

HIVES = ("backend", "web")
ADMIN_PASSWORD = secrets.token_urlsafe(24)
PASSWORDS = {hive: secrets.token_urlsafe(24) for hive in HIVES}
REFUSED = WireError(
    "payload.invalid",
    "qty must be at least 1",
    pointer="/qty",
    keyword="minimum",
    subject="subhive.orders.v1.op.place_order",
)
#: What the lock of these tests says: backend provides orders v1, web consumes it.
RULES = ReplayRules(
    operations={("backend", "orders", 1, "place_order"): frozenset({"web"})},
    events={("web", "orders", 1, "order_placed"): "backend"},
    versions={("orders", 1): "1.1.0"},
)


@pytest.fixture
def server(start_nats: StartServer) -> EmbeddedServer:
    """A fresh nats-server where the hives and the admin must log in."""
    users = {hive: (PASSWORDS[hive], hive_permissions(hive, {}, {}, {}, {})) for hive in HIVES}
    return start_nats(accounts=AccountsConfig(users, admin_password=ADMIN_PASSWORD))


async def _admin(server: EmbeddedServer) -> Client:
    return await nats.connect(server.url, user=ADMIN_USER, password=ADMIN_PASSWORD)


async def _as_hive(server: EmbeddedServer, hive: str, errors: list[str] | None = None) -> Client:
    async def record(exc: Exception) -> None:
        if errors is not None:
            errors.append(str(exc))

    return await nats.connect(
        server.url, user=hive, password=PASSWORDS[hive], error_cb=record, inbox_prefix=inbox_prefix(hive)
    )


async def _refuse(nc: Client, hive: str, data: bytes, msg_id: str | None = None) -> str:
    """What the transport does with a refused request: keep it in ``hive``'s dead letters; returns its id."""
    return await publish_dead_letter(
        nc.jetstream(),
        hive,
        where=("orders", 1, "op", "place_order"),
        subject="subhive.orders.v1.op.place_order",
        data=data,
        headers={"Nats-Msg-Id": msg_id or secrets.token_hex(8), "Subhive-Sender": "web"},
        error=REFUSED,
    )


def test_a_flood_from_one_hive_fills_its_own_stream_only(server: EmbeddedServer) -> None:
    async def scenario() -> dict[str, Any]:
        admin = await _admin(server)
        backend, web = await _as_hive(server, "backend"), await _as_hive(server, "web")
        try:
            await ensure_dead_letter_streams(
                admin.jetstream(),
                {"backend": DeadLetterLimits(max_bytes=4096), "web": DeadLetterLimits(max_bytes=4096)},
            )
            for i in range(3):
                await _refuse(web, "web", b'{"qty": 0, "n": %d}' % i)
            kept, refused = 0, None
            for i in range(500):  # far more than 4 KiB
                try:
                    await _refuse(backend, "backend", b'{"flood": %d, "pad": "%s"}' % (i, b"x" * 40))
                    kept += 1
                except BusError as exc:
                    refused = exc
                    break
            await _refuse(web, "web", b'{"qty": 0, "n": 3}')  # web still has room of its own
            letters = DeadLetters(admin)
            return {
                "kept": kept,
                "refused": refused,
                "web": await letters.list("web"),
                "backend": await letters.list("backend"),
                "usage": {u.hive: u for u in await letters.usage()},
            }
        finally:
            for nc in (admin, backend, web):
                await nc.close()

    found = run(scenario())
    assert 3 < found["kept"] < 100  # 4 KiB hold a few letters (the reason travels in headers)
    assert found["refused"] is not None
    assert found["refused"].code == "deadletter.full"
    assert [d.data for d in found["web"]] == [b'{"qty": 0, "n": %d}' % i for i in range(4)]
    assert [d.id for d in found["web"]] == ["web:1", "web:2", "web:3", "web:4"]
    # The flood's first letters are the ones kept (a full stream refuses the new ones, it drops nothing).
    backend = found["backend"]
    assert len(backend) == found["kept"]
    assert backend[0].data.startswith(b'{"flood": 0,')
    assert backend[-1].data.startswith(b'{"flood": %d,' % (found["kept"] - 1))
    usage = found["usage"]
    assert usage["backend"].bytes <= 4096
    assert usage["backend"].level == "full"
    assert usage["web"].level == "ok"
    assert usage["web"].messages == 4


def test_letters_older_than_max_age_expire_and_other_hives_keep_theirs(server: EmbeddedServer) -> None:
    async def scenario() -> tuple[list[str], list[str], float]:
        admin = await _admin(server)
        backend, web = await _as_hive(server, "backend"), await _as_hive(server, "web")
        try:
            await ensure_dead_letter_streams(
                admin.jetstream(), {"backend": DeadLetterLimits(max_age=1), "web": DeadLetterLimits()}
            )
            await _refuse(backend, "backend", b"short-lived")
            await _refuse(web, "web", b"kept")
            letters = DeadLetters(admin)
            before = [d.id for d in await letters.list()]
            started = time.monotonic()
            while await letters.list("backend") and time.monotonic() - started < 10:
                await asyncio.sleep(0.1)
            return before, [d.id for d in await letters.list()], time.monotonic() - started
        finally:
            for nc in (admin, backend, web):
                await nc.close()

    before, after, waited = run(scenario())
    assert sorted(before) == ["backend:1", "web:1"]
    assert after == ["web:1"]
    assert waited < 10


def test_changed_limits_apply_to_an_existing_stream(server: EmbeddedServer) -> None:
    async def scenario() -> tuple[int, int, str, bool]:
        admin = await _admin(server)
        backend = await _as_hive(server, "backend")
        js = admin.jetstream()
        try:
            await ensure_dead_letter_streams(js, {"backend": DeadLetterLimits(max_bytes=2048)})
            code = ""
            for i in range(100):
                try:
                    await _refuse(backend, "backend", b"%d" % i + b"y" * 100)
                except BusError as exc:
                    code = exc.code
                    break
            created = await ensure_dead_letter_streams(js, {"backend": DeadLetterLimits(max_bytes=8192, max_age=3600)})
            await _refuse(backend, "backend", b"fits again")
            info = await js.stream_info(dlq_stream("backend"))
            return info.config.max_bytes or 0, int(info.config.max_age or 0), code, bool(created)

        finally:
            await backend.close()
            await admin.close()

    max_bytes, max_age, code, created = run(scenario())
    assert (max_bytes, max_age, code, created) == (8192, 3600, "deadletter.full", False)


def test_an_old_shared_stream_stops_capturing_and_stays_readable(server: EmbeddedServer) -> None:
    async def scenario() -> dict[str, Any]:
        admin = await _admin(server)
        web = await _as_hive(server, "web")
        js = admin.jetstream()
        try:
            # What an older subhive made: one stream for every hive's dead letters.
            await js.add_stream(StreamConfig(name=DLQ_STREAM, subjects=["subhive.dlq.>"], storage=StorageType.FILE))
            await _refuse(web, "web", b"from before the upgrade")
            await ensure_dead_letter_streams(js, list(HIVES))
            await _refuse(web, "web", b"after the upgrade")
            legacy = await js.stream_info(DLQ_STREAM)
            letters = DeadLetters(admin)
            listed = [(d.id, d.data) for d in await letters.list("web")]
            shown = await letters.get(f"{DLQ_STREAM}:1")
            counts = await letters.counts()
            return {
                "subjects": legacy.config.subjects,
                "messages": legacy.state.messages,
                "listed": listed,
                "shown": shown.data,
                "counts": counts,
            }
        finally:
            await web.close()
            await admin.close()

    found = run(scenario())
    assert found["subjects"] == [DLQ_STREAM]
    assert found["messages"] == 1
    assert found["listed"] == [(f"{DLQ_STREAM}:1", b"from before the upgrade"), ("web:1", b"after the upgrade")]
    assert found["shown"] == b"from before the upgrade"
    assert found["counts"] == {"web": 2}


def test_an_empty_old_shared_stream_is_removed(server: EmbeddedServer) -> None:
    async def scenario() -> list[str]:
        admin = await _admin(server)
        js = admin.jetstream()
        try:
            await js.add_stream(StreamConfig(name=DLQ_STREAM, subjects=["subhive.dlq.>"]))
            await ensure_dead_letter_streams(js, ["web"])
            return [s.config.name or "" for s in await js.streams_info()]
        finally:
            await admin.close()

    assert sorted(run(scenario())) == [REPLAYS_STREAM, dlq_stream("web")]


def test_a_hive_cannot_write_replay_marks_nor_another_hives_letters(server: EmbeddedServer) -> None:
    async def scenario() -> tuple[list[str], int, int]:
        admin = await _admin(server)
        errors: list[str] = []
        web = await _as_hive(server, "web", errors)
        js = admin.jetstream()
        try:
            await ensure_dead_letter_streams(js, list(HIVES))
            await _refuse(web, "web", b"mine")
            # A forged mark would make a letter look handled; a letter in backend's stream would use its room.
            await web.publish(f"subhive.dlq._replays.{dlq_stream('web')}.1", b'{"by": "web"}')
            await web.publish("subhive.dlq.backend.orders.v1.op.place_order", b"framed")
            await web.flush()
            deadline = time.monotonic() + 5
            while len(errors) < 2 and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            marks = (await js.stream_info(REPLAYS_STREAM)).state.messages
            theirs = (await js.stream_info(dlq_stream("backend"))).state.messages
            return errors, marks, theirs
        finally:
            await web.close()
            await admin.close()

    errors, marks, theirs = run(scenario())
    assert (marks, theirs) == (0, 0)
    assert any("permissions violation" in e and "_replays" in e for e in errors), errors
    assert any("permissions violation" in e and "subhive.dlq.backend" in e for e in errors), errors


def test_replays_are_recorded_and_a_mark_never_sticks_to_another_letter(server: EmbeddedServer) -> None:
    async def scenario() -> tuple[Any, Any, Any]:
        admin = await _admin(server)
        web = await _as_hive(server, "web")
        js = admin.jetstream()
        try:
            await ensure_dead_letter_streams(js, ["web"])
            await js.add_stream(StreamConfig(name="SUBHIVE_EV_orders_v1", subjects=["subhive.orders.v1.ev.>"]))
            await publish_dead_letter(
                web.jetstream(),
                "web",
                where=("orders", 1, "ev", "order_placed"),
                subject="subhive.orders.v1.ev.order_placed",
                data=b'{"order_id": "o-1"}',
                headers={"Nats-Msg-Id": "e-1", "Subhive-Sender": "backend"},
                error=REFUSED,
            )
            await web.subscribe("_INBOX_web.replay.>")  # web listens: its replays reach it (decision 0047)
            await web.flush()
            letters = DeadLetters(admin)
            said = await letters.replay("web:1", rules=RULES, by="alice")
            await letters.replay(1, rules=RULES, by="bob")
            replayed = await letters.get("web:1")
            # The stream made again: web:1 is now another letter, and the old marks are not its own.
            await js.delete_stream(dlq_stream("web"))
            await ensure_dead_letter_streams(js, ["web"])
            await _refuse(web, "web", b"a new letter")
            return said, replayed, (await letters.list("web"))[0]
        finally:
            await web.close()
            await admin.close()

    said, replayed, fresh = run(scenario())
    said_to = "event re-sent to web alone (_INBOX_web.replay.orders.v1.order_placed)"
    assert said == said_to
    assert [(r.by, r.result) for r in replayed.replays] == [("alice", said_to), ("bob", said_to)]
    assert all(r.time is not None for r in replayed.replays)
    assert replayed.to_dict()["replayed"] is True
    assert (fresh.id, fresh.data, fresh.replays) == ("web:1", b"a new letter", ())


def test_a_letter_named_by_number_alone_must_be_unambiguous(server: EmbeddedServer) -> None:
    async def scenario() -> tuple[BusError, BusError, BusError, bytes]:
        admin = await _admin(server)
        backend, web = await _as_hive(server, "backend"), await _as_hive(server, "web")
        try:
            await ensure_dead_letter_streams(admin.jetstream(), list(HIVES))
            await _refuse(backend, "backend", b"b1")
            await _refuse(web, "web", b"w1")
            letters = DeadLetters(admin)
            errors = []
            for ref in (1, "web:9", "web:x"):
                with pytest.raises(BusError) as caught:
                    await letters.get(ref)
                errors.append(caught.value)
            return errors[0], errors[1], errors[2], (await letters.get("backend:1")).data
        finally:
            for nc in (admin, backend, web):
                await nc.close()

    ambiguous, unknown, invalid, data = run(scenario())
    assert ambiguous.code == "deadletter.ambiguous"
    assert "backend:1, web:1" in (ambiguous.hint or "")
    assert unknown.code == "deadletter.unknown"
    assert "web:9" in str(unknown)
    assert invalid.code == "deadletter.ref_invalid"
    assert data == b"b1"


_LEVELS = {"ok": 0, "near_full": 1, "full": 2}


@given(
    st.integers(min_value=1024, max_value=2**40),
    st.integers(min_value=1, max_value=10**6),
    st.floats(min_value=0, max_value=1.2),
    st.floats(min_value=0, max_value=1.2),
)
def test_a_fuller_stream_is_never_reported_as_less_full(max_bytes: int, messages: int, a: float, b: float) -> None:
    low, high = sorted((int(max_bytes * a), int(max_bytes * b)))
    levels = [DeadLetterUsage("db", "SUBHIVE_DLQ_db", messages, n, max_bytes, 0).level for n in (low, high)]
    assert _LEVELS[levels[0]] <= _LEVELS[levels[1]]
    usage = DeadLetterUsage("db", "SUBHIVE_DLQ_db", messages, high, max_bytes, 0)
    assert (usage.warning() is None) == (usage.level == "ok")
    if high >= max_bytes * 0.8:
        assert usage.level != "ok"


@given(st.lists(st.sampled_from(sorted(_LEVELS)), max_size=30))
def test_the_supervisor_hears_of_each_rise_once(levels: list[str]) -> None:
    fill = {"ok": 0, "near_full": 850, "full": 990}  # bytes of 1000, in small letters
    alarm = FullnessAlarm()
    said = [bool(alarm.rises([DeadLetterUsage("db", "SUBHIVE_DLQ_db", 100, fill[level], 1000, 0)])) for level in levels]
    expected = [_LEVELS[now] > _LEVELS[before] for before, now in zip(["ok", *levels], levels, strict=False)]
    assert said == expected


def test_a_letter_is_found_by_the_message_id_its_sender_was_told(server: EmbeddedServer) -> None:
    async def scenario() -> tuple[list[str], BusError, BusError]:
        admin = await _admin(server)
        web = await _as_hive(server, "web")
        try:
            await ensure_dead_letter_streams(admin.jetstream(), list(HIVES))
            # Every request reuses one sender's message id: still five letters, each under an id of its own.
            ids = [await _refuse(web, "web", b"letter %d" % i, msg_id="m") for i in range(5)]
            letters = DeadLetters(admin)
            found = [(await letters.get(ids[i])).id for i in (3, 0)]
            with pytest.raises(BusError) as unknown:
                await letters.get("dlq-web-m")
            with pytest.raises(BusError) as invalid:
                await letters.get("dlq-Web-m1")
            return found, unknown.value, invalid.value
        finally:
            await web.close()
            await admin.close()

    found, unknown, invalid = run(scenario())
    assert found == ["web:4", "web:1"]
    assert unknown.code == "deadletter.unknown"
    assert invalid.code == "deadletter.ref_invalid"


def test_a_letter_of_a_hive_whose_name_holds_a_dash_is_found_by_its_message_id(open_server: EmbeddedServer) -> None:
    async def scenario() -> str:
        nc = await nats.connect(open_server.url)
        try:
            await ensure_dead_letter_streams(nc.jetstream(), ["order", "order-desk"])
            said = await publish_dead_letter(
                nc.jetstream(),
                "order-desk",
                where=("orders", 1, "ev", "order_placed"),
                subject="subhive.orders.v1.ev.order_placed",
                data=b"{}",
                headers={"Nats-Msg-Id": "e-1"},
                error=REFUSED,
            )
            assert said == "dlq-order-desk-e-1"
            return (await DeadLetters(nc).get(said)).id
        finally:
            await nc.close()

    assert run(scenario()) == "order-desk:1"


@pytest.fixture
def open_server(start_nats: StartServer) -> EmbeddedServer:
    """A server without users: raw connections play the misbehaving sender."""
    return start_nats()


def test_a_hive_whose_stream_is_full_still_refuses_and_counts_what_it_could_not_keep(
    open_server: EmbeddedServer,
) -> None:
    async def place(payload: Any) -> Any:
        return {"order_id": "o-1"}

    async def scenario() -> tuple[list[tuple[str, str]], int, int, int, int]:
        admin = await nats.connect(open_server.url)
        js = admin.jetstream()
        await ensure_event_streams(js, [("orders", 1)], hives={"backend": DeadLetterLimits(max_bytes=1024)})
        backend = await NatsTransport.connect(open_server.endpoint(), "backend")
        try:
            await backend.serve(orders(), {"place_order": place})
            for i in range(100):  # the stream full, as after a flood
                try:
                    await js.publish("subhive.dlq.backend.orders.v1.op.place_order", b"flood %d" % i)
                except Exception:  # maximum bytes exceeded
                    break
            before = (await js.stream_info(dlq_stream("backend"))).state.messages
            codes = []
            headers = {"Subhive-Contract": "orders@1.0.0", "Subhive-Sender": "web", "Nats-Msg-Id": "r-1"}
            # The operation's subject with and without the sender's token: whichever the transport serves.
            for subject in ("subhive.orders.v1.op.place_order", "subhive.orders.v1.op.place_order.web"):
                with contextlib.suppress(NoRespondersError):
                    reply = await admin.request(subject, b'{"sku": "A-1", "qty": 0}', headers=headers, timeout=5)
                    told = WireError.from_bytes(
                        reply.data, code=(reply.headers or {}).get("Subhive-Error", ""), subject=subject
                    )
                    codes.append((told.code, told.dead_letter))
            # The hive tried to keep the refusal before it answered.
            after = (await js.stream_info(dlq_stream("backend"))).state.messages
            return (codes, before, after, backend.stats.refused["deadletter.failed"], backend.stats.dead_lettered)
        finally:
            await backend.close()
            await admin.close()

    codes, before, after, not_kept, kept = run(scenario())
    assert codes == [("payload.invalid", "")]  # the sender still learns why, and is named no letter that is not
    assert after == before > 0  # nothing pushed out, nothing added
    assert (not_kept, kept) == (1, 0)  # and the hive counted the letter it could not keep


def test_pages_resume_in_every_stream_where_the_last_page_ended(server: EmbeddedServer) -> None:
    """Letters of two hives interleaved in time: walking the pages with ``positions`` gives the whole list,
    oldest first, each letter once, and each page reads only from where the previous one stopped."""

    async def scenario() -> tuple[list[str], list[str], list[dict[str, int]]]:
        admin = await _admin(server)
        try:
            await ensure_dead_letter_streams(admin.jetstream(), list(HIVES))
            for i in range(7):
                await _refuse(admin, HIVES[i % 2], b'{"qty": 0, "n": %d}' % i)
            letters = DeadLetters(admin)
            whole = [d.id for d in await letters.list()]
            walked: list[str] = []
            cursors: list[dict[str, int]] = []
            after: dict[str, int] = {}
            for _ in range(10):
                found = await letters.list(limit=3, after=after)
                walked += [d.id for d in found]
                after = DeadLetters.positions(found, after)
                cursors.append(after)
                if len(found) < 3:
                    break
            return whole, walked, cursors
        finally:
            await admin.close()

    whole, walked, cursors = run(scenario())
    assert len(whole) == 7
    assert walked == whole
    assert cursors[0] == {dlq_stream("backend"): 2, dlq_stream("web"): 1}  # backend:1, web:1, backend:2
