"""Pre-encoded frames (``subhive.bus._fastpub``) and the request inbox against nats-py's own path: the same bytes
on the wire, the same subject, headers and payload for a raw subscriber, nats-py's public ``publish`` when its
internals are not what the fast path expects, and replies matched to their requests."""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from importlib.metadata import version
from types import SimpleNamespace
from typing import Any

import nats
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from nats import errors
from nats.aio.client import Client

from subhive._trace import continue_trace, parse_traceparent
from subhive.bus import BusError, EmbeddedServer, NatsTransport, RemoteError, ServerConfig, _fastpub
from subhive.bus._fastpub import VERIFIED_NATS_PY, Frames, parse_header_lines, supported
from subhive.bus._inbox import SWEEP
from subhive.runtime import NotServed
from tests.kit import StartServer, run

from ._contracts import orders

SUBJECT = "subhive.orders.v1.ev.order_placed"
TRACE = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


@pytest.fixture(scope="module")
def server(start_module_nats: StartServer) -> EmbeddedServer:
    """One nats-server for the whole module: each test provisions what it uses."""
    return start_module_nats()


def _parse(frame: bytes) -> tuple[list[bytes], dict[str, str], bytes]:
    """An HPUB frame's command words, headers (in order) and payload."""
    line, _, rest = frame.partition(b"\r\n")
    words = line.split(b" ")
    size, total = int(words[-2]), int(words[-1])
    block, data = rest[:size], rest[size:total]
    assert rest[total:] == b"\r\n"
    lines = block.split(b"\r\n")
    assert lines[0] == b"NATS/1.0"
    assert lines[-2:] == [b"", b""]
    headers = dict(entry.decode().split(": ", 1) for entry in lines[1:-2])
    return words, headers, data


def test_the_installed_nats_py_takes_the_fast_path(server: EmbeddedServer) -> None:
    async def scenario() -> tuple[bool, bool, bool]:
        nc = await nats.connect(server.url)
        try:
            fast = Frames(nc, "web").fast
            return supported(nc), fast, nc._parse_header_lines is parse_header_lines
        finally:
            await nc.close()

    installed = version("nats-py")
    assert run(scenario()) == (True, True, True), (
        f"nats-py {installed} is installed; subhive.bus._fastpub was verified against {VERIFIED_NATS_PY} only and "
        "falls back to nats-py's public API on this one (slower, same bytes). Read the nats-py code it mirrors "
        "(_MIRRORED), then update the digests, VERIFIED_NATS_PY and the pin in pyproject.toml"
    )


@example(b"\x00\x1c:")  # whitespace bytes.strip() leaves at a name's end
@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from([b"Subhive-Sender: web", b"traceparent:00-x", b"A :b", b"a b: c", b"", b":", b"\xff: x"]),
            st.binary(max_size=24),
            st.text(alphabet=" \t\x0b\x0c\x1c:ab\xe9\u3000", max_size=12).map(lambda t: t.encode()),
        ),
        max_size=6,
    ).map(b"\r\n".join)
)
def test_headers_are_read_as_nats_py_reads_them(raw: bytes) -> None:
    assert parse_header_lines(raw) == Client._parse_header_lines(raw)


def test_a_reply_frame_is_byte_for_byte_what_nats_py_would_send(server: EmbeddedServer) -> None:
    async def scenario() -> list[bytes]:
        nc = await nats.connect(server.url)
        written: list[bytes] = []
        transport = nc._transport
        assert transport is not None  # connected
        real = transport.writelines

        def spy(chunks: list[bytes]) -> None:
            written.extend(bytes(chunk) for chunk in chunks if chunk.startswith(b"PUB"))
            real(chunks)

        transport.writelines = spy  # type: ignore[method-assign,assignment]  # a spy on this one connection
        frames = Frames(nc, "backend")
        try:
            for data in (b'{"order_id":"o-1"}', b""):
                await frames.reply("_INBOX_web.abc.7", data)
                await nc.flush()
                await nc.publish("_INBOX_web.abc.7", data)
                await nc.flush()
        finally:
            await nc.close()
        return written

    written = run(scenario())
    assert (
        written
        == [b'PUB _INBOX_web.abc.7  18\r\n{"order_id":"o-1"}\r\n'] * 2 + [b"PUB _INBOX_web.abc.7  0\r\n\r\n"] * 2
    )


def test_a_reply_over_the_servers_limit_is_an_error_reply_not_silence(server: EmbeddedServer) -> None:
    """A reply frame makes the checks nats-py's publish makes: too large for the server, the caller hears why."""

    async def huge(payload: Any) -> Any:
        return {"order_id": "x" * (2 * 1024 * 1024)}

    async def scenario() -> tuple[RemoteError, float]:
        backend = await NatsTransport.connect(server.endpoint(), "backend")
        web = await NatsTransport.connect(server.endpoint(), "web")
        try:
            assert backend._frames.fast
            await backend.serve(orders(), {"place_order": huge})
            started = time.monotonic()
            with pytest.raises(RemoteError) as caught:
                await web.request(orders(), "place_order", {"sku": "A-1", "qty": 1})
            return caught.value, time.monotonic() - started
        finally:
            await web.close()
            await backend.close()

    error, took = run(scenario())
    assert error.code == "handler.failed"
    assert "MaxPayloadError" in error.message
    assert took < 4  # answered, not the 5 s timeout


def test_internals_that_are_not_there_mean_the_public_api() -> None:
    assert not supported(SimpleNamespace())  # type: ignore[arg-type]
    assert not supported(SimpleNamespace(_send_command=print, _flush_pending=print, stats={}))  # type: ignore[arg-type]


def test_a_frame_is_byte_for_byte_what_nats_py_would_send(server: EmbeddedServer) -> None:
    async def scenario() -> list[tuple[bytes, bytes]]:
        nc = await nats.connect(server.url)
        written: list[bytes] = []
        transport = nc._transport
        assert transport is not None  # connected
        real = transport.writelines

        def spy(chunks: list[bytes]) -> None:  # what goes to the socket, one command per chunk
            written.extend(bytes(chunk) for chunk in chunks if chunk.startswith(b"HPUB"))
            real(chunks)

        transport.writelines = spy  # type: ignore[method-assign,assignment]  # a spy on this one connection
        frames = Frames(nc, "web")
        target = frames.target(SUBJECT, "orders@1.2.0")
        pairs = []
        try:
            for reply, trace in (("", None), ("_INBOX_web.abc.7", None), ("", TRACE), ("_INBOX_web.abc.8", TRACE)):
                with continue_trace(trace) if trace else contextlib.nullcontext():
                    await frames.send(target, b'{"order_id":"o-1"}', reply=reply.encode())
                await nc.flush()
                _, headers, data = _parse(written[-1])
                await nc.publish(SUBJECT, data, reply=reply, headers=headers)  # nats-py, the same values
                await nc.flush()
                pairs.append((written[-2], written[-1]))
        finally:
            await nc.close()
        return pairs

    pairs = run(scenario())
    for ours, theirs in pairs:
        assert ours == theirs
    headers = [_parse(ours)[1] for ours, _ in pairs]
    assert [list(h) for h in headers] == [["Subhive-Contract", "Subhive-Sender", "Nats-Msg-Id", "traceparent"]] * 4
    assert {h["Subhive-Contract"] for h in headers} == {"orders@1.2.0"}
    assert {h["Subhive-Sender"] for h in headers} == {"web"}
    ids = [h["Nats-Msg-Id"] for h in headers]
    assert len(set(ids)) == 4
    assert all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids)
    parents = [h["traceparent"] for h in headers]
    assert all(parse_traceparent(p) == p for p in parents)
    traces = [p.split("-")[1] for p in parents]
    assert traces[2] == traces[3] == "4bf92f3577b34da6a3ce929d0e0e4736"  # a handler sending on keeps the trace
    assert len({traces[0], traces[1], traces[2]}) == 3  # outside any trace: a new trace per message
    assert len({p.split("-")[2] for p in parents} | {"00f067aa0ba902b7"}) == 5  # a new span id each message


def test_a_raw_subscriber_sees_the_same_message_from_the_fast_path_and_the_fallback(
    server: EmbeddedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def send(fast: bool) -> Any:
        with monkeypatch.context() as patch:
            if not fast:
                patch.setattr(_fastpub, "supported", lambda nc: False)
            web = await NatsTransport.connect(server.endpoint(), "web", durable_events=False)
        raw = await nats.connect(server.url)
        sub = await raw.subscribe(SUBJECT)
        await raw.flush()
        try:
            assert web._frames.fast is fast
            await web.publish(orders(), "order_placed", {"order_id": "o-1"})
            with continue_trace(TRACE):
                await web.publish(orders(), "order_placed", {"order_id": "o-2"})
            return [await sub.next_msg(timeout=5) for _ in range(2)]
        finally:
            await raw.close()
            await web.close()

    async def scenario() -> tuple[Any, Any]:
        return await send(True), await send(False)

    fast, slow = run(scenario())
    for a, b in zip(fast, slow, strict=True):
        assert (a.subject, a.data, a.reply) == (b.subject, b.data, b.reply)
        assert (
            list(a.headers) == list(b.headers) == ["Subhive-Contract", "Subhive-Sender", "Nats-Msg-Id", "traceparent"]
        )
        for key in ("Subhive-Contract", "Subhive-Sender"):
            assert a.headers[key] == b.headers[key]
        for msg in (a, b):
            assert re.fullmatch(r"[0-9a-f]{32}", msg.headers["Nats-Msg-Id"])
            assert parse_traceparent(msg.headers["traceparent"])
    assert fast[0].data == b'{"order_id":"o-1"}'
    assert (
        fast[1].headers["traceparent"].split("-")[1]
        == slow[1].headers["traceparent"].split("-")[1]
        == "4bf92f3577b34da6a3ce929d0e0e4736"
    )


def test_a_closed_connection_raises_what_nats_py_raises(server: EmbeddedServer) -> None:
    async def scenario() -> None:
        nc = await nats.connect(server.url)
        frames = Frames(nc, "web")
        target = frames.target(SUBJECT, "orders@1.0.0")
        await nc.close()
        with pytest.raises(errors.ConnectionClosedError):
            await frames.send(target, b"{}")
        with pytest.raises(errors.ConnectionClosedError):
            await nc.publish(SUBJECT, b"{}")

    run(scenario())


def test_concurrent_requests_each_get_their_own_reply(server: EmbeddedServer) -> None:
    async def handler(payload: Any) -> Any:
        await asyncio.sleep(0.001 * (payload["qty"] % 5))  # replies come back out of order
        return {"order_id": f"o-{payload['sku']}-{payload['qty']}"}

    async def scenario() -> tuple[list[Any], int]:
        backend = await NatsTransport.connect(server.endpoint(), "backend")
        web = await NatsTransport.connect(server.endpoint(), "web")
        try:
            await backend.serve(orders(), {"place_order": handler})
            replies = await asyncio.gather(
                *(web.request(orders(), "place_order", {"sku": "A-1", "qty": q}) for q in range(1, 51))
            )
            return replies, len(web._inbox._waiting)
        finally:
            await web.close()
            await backend.close()

    replies, waiting = run(scenario())
    assert replies == [{"order_id": f"o-A-1-{q}"} for q in range(1, 51)]
    assert waiting == 0


def test_a_request_nobody_answers_in_time_is_a_timeout_and_leaves_nothing_waiting(server: EmbeddedServer) -> None:
    async def stuck(payload: Any) -> Any:
        await asyncio.sleep(1)
        return {"order_id": "late"}

    async def scenario() -> tuple[BusError, int]:
        backend = await NatsTransport.connect(server.endpoint(), "backend")
        web = await NatsTransport.connect(server.endpoint(), "web", request_timeout=0.2)
        try:
            await backend.serve(orders(), {"place_order": stuck})
            with pytest.raises(BusError) as caught:
                await web.request(orders(), "place_order", {"sku": "A-1", "qty": 1})
            return caught.value, len(web._inbox._waiting)
        finally:
            await web.close()
            await backend.close()

    error, waiting = run(scenario())
    assert error.code == "bus.timeout"
    assert error.location.subject == "subhive.orders.v1.op.place_order.web"
    assert waiting == 0


def test_requests_past_their_deadline_time_out_among_answered_ones_and_the_sweeper_stops(
    server: EmbeddedServer,
) -> None:
    """One sweeper, not a timer per request (decision 0114): each stuck request fails on time, within one
    sweep of its deadline, the answered ones are not disturbed, and nothing is left waiting or sweeping."""
    release = asyncio.Event()

    async def handler(payload: Any) -> Any:
        if payload["qty"] % 2:
            await release.wait()  # odd quantities never get an answer in time
        return {"order_id": f"o-{payload['qty']}"}

    async def scenario() -> tuple[list[Any], list[float], int, bool]:
        backend = await NatsTransport.connect(server.endpoint(), "backend")
        web = await NatsTransport.connect(server.endpoint(), "web", request_timeout=0.3)
        try:
            await backend.serve(orders(), {"place_order": handler})
            started = time.monotonic()
            failed_at: list[float] = []

            async def ask(qty: int) -> Any:
                try:
                    return await web.request(orders(), "place_order", {"sku": "A-1", "qty": qty})
                except BusError as exc:
                    failed_at.append(time.monotonic() - started)
                    return exc.code

            outcomes = await asyncio.gather(*(ask(q) for q in range(1, 11)))
            release.set()
            await asyncio.sleep(0)
            sweeping = web._inbox._sweeper is not None
            return outcomes, failed_at, len(web._inbox._waiting) + len(web._inbox._due), sweeping
        finally:
            await web.close()
            await backend.close()

    outcomes, failed_at, left, sweeping = run(scenario())
    assert outcomes == ["bus.timeout" if q % 2 else {"order_id": f"o-{q}"} for q in range(1, 11)]
    assert len(failed_at) == 5
    assert all(0.3 <= t < 0.3 + SWEEP + 0.25 for t in failed_at), failed_at  # on time: one sweep, some slack
    assert left == 0
    assert not sweeping


def test_a_client_whose_mirrored_code_differs_takes_the_public_path(server: EmbeddedServer) -> None:
    class Patched(Client):
        async def publish(
            self, subject: str, payload: bytes = b"", reply: str = "", headers: dict[str, str] | None = None
        ) -> None:
            await super().publish(subject, payload, reply, headers)

    async def scenario() -> tuple[bool, bool]:
        nc = Patched()
        await nc.connect(server.url)
        try:
            return supported(nc), Frames(nc, "web").fast
        finally:
            await nc.close()

    assert run(scenario()) == (False, False)


def test_requests_and_publishes_go_on_after_the_server_restarts(tmp_path: Any) -> None:
    async def answer(payload: Any) -> Any:
        return {"order_id": f"o-{payload['qty']}"}

    async def until(ready: Any) -> None:
        for _ in range(200):
            if ready():
                return
            await asyncio.sleep(0.05)
        raise AssertionError("not reconnected")

    async def scenario() -> tuple[Any, Any, bytes]:
        server = await EmbeddedServer.start(ServerConfig(tmp_path / "nats"))
        try:
            backend = await NatsTransport.connect(server.endpoint(), "backend")
            web = await NatsTransport.connect(server.endpoint(), "web", durable_events=False)
            try:
                await backend.serve(orders(), {"place_order": answer})
                before = await web.request(orders(), "place_order", {"sku": "A-1", "qty": 1})
                await server.stop()
                await until(lambda: not web.connection.is_connected)
                # reconnecting: nats-py buffers publishes (up to its pending limit), so does the fast path
                await web.publish(orders(), "order_placed", {"order_id": "buffered"})
                await server.restart()
                await until(lambda: web.connection.is_connected and backend.connection.is_connected)
                raw = await nats.connect(server.url)
                sub = await raw.subscribe(SUBJECT)
                await raw.flush()
                after = None
                for _ in range(50):  # the provider's subscription comes back with its reconnect
                    try:
                        after = await web.request(orders(), "place_order", {"sku": "A-1", "qty": 2})
                        break
                    except (BusError, NotServed):
                        await asyncio.sleep(0.1)
                await web.publish(orders(), "order_placed", {"order_id": "o-after"})
                msg = await sub.next_msg(timeout=5)
                await raw.close()
                return before, after, msg.data
            finally:
                await web.close()
                await backend.close()
        finally:
            await server.stop()

    before, after, data = run(scenario())
    assert before == {"order_id": "o-1"}
    assert after == {"order_id": "o-2"}
    assert data == b'{"order_id":"o-after"}'
