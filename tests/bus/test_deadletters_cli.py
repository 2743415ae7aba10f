"""``subhive deadletters list|show|replay`` against a real nats-server holding real dead letters."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import nats
import pytest

from subhive.bus import EmbeddedServer, NatsTransport, WireError, ensure_event_streams
from subhive.bus._deadletter import publish_dead_letter
from subhive.cli import main
from tests.kit import run

from ._contracts import orders


def _refuse_one(server: EmbeddedServer, data: bytes) -> None:
    """A raw sender puts ``data`` to the backend's served operation; the backend refuses and keeps it."""

    async def scenario() -> None:
        nc = await nats.connect(server.url)
        await ensure_event_streams(nc.jetstream(), [("orders", 1)], hives=["backend", "web"])
        backend = await NatsTransport.connect(server.endpoint(), "backend")

        async def place(payload: Any) -> Any:
            return {"order_id": "o-1"}

        try:
            await backend.serve(orders(), {"place_order": place})
            await nc.request(
                "subhive.orders.v1.op.place_order.web",
                data,
                timeout=5,
                headers={"Subhive-Contract": "orders@1.0.0", "Subhive-Sender": "web"},
            )
            await asyncio.sleep(0.1)
        finally:
            await backend.close()
            await nc.close()

    run(scenario())


@contextlib.contextmanager
def _listening(url: str, subject: str) -> Iterator[list[bytes]]:
    """A hive's replay listener, on an event loop of its own thread, while the CLI (another loop) replays."""
    got: list[bytes] = []
    ready, failed = threading.Event(), []
    loop = asyncio.new_event_loop()
    done = asyncio.Event()

    async def listen() -> None:
        try:
            nc = await nats.connect(url)

            async def keep(msg: Any) -> None:
                got.append(msg.data)

            await nc.subscribe(subject, cb=keep)
            await nc.flush()
        except Exception as exc:
            failed.append(exc)
            return
        finally:
            ready.set()
        await done.wait()
        await nc.close()

    thread = threading.Thread(target=loop.run_until_complete, args=(listen(),))
    thread.start()
    try:
        assert ready.wait(10)
        assert not failed, failed
        yield got
    finally:
        loop.call_soon_threadsafe(done.set)
        thread.join(10)
        loop.close()


def test_list_show_and_replay(server: EmbeddedServer, shop: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = b'{"sku": "A-1", "qty": 0}'
    _refuse_one(server, data)
    assert main(["deadletters", "list", "--server", server.url, "--format", "json"]) == 0
    [letter] = json.loads(capsys.readouterr().out)["dead_letters"]
    assert (letter["hive"], letter["code"], letter["pointer"]) == ("backend", "payload.invalid", "/qty")
    assert letter["subject"] == "subhive.orders.v1.op.place_order.web"

    assert main(["deadletters", "show", str(letter["seq"]), "--server", server.url, "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["data"].encode() == data
    assert shown["headers"]["Subhive-Sender"] == "web"

    assert main(["deadletters", "list", "--hive", "web", "--server", server.url]) == 0
    assert "no dead letters" in capsys.readouterr().err

    # Replaying needs the lock, to check where the letter may go: outside a workspace, a clear error.
    assert main(["deadletters", "replay", str(letter["seq"]), "--server", server.url, "-C", str(shop.parent)]) == 2
    err = capsys.readouterr().err
    assert "deadletter.no_lock" in err
    assert "--workspace" in err
    assert "Traceback" not in err
    # The shop's lock lets backend receive place_order from web; the provider is gone, so nobody answers.
    assert main(["deadletters", "replay", str(letter["seq"]), "--server", server.url, "-C", str(shop)]) == 2
    err = capsys.readouterr().err
    assert "bus.not_served" in err
    assert "Traceback" not in err


def test_without_a_server_or_with_an_unknown_letter_the_error_says_what_to_do(
    server: EmbeddedServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SUBHIVE_NATS_URL", raising=False)
    assert main(["deadletters", "list"]) == 2
    assert "--server" in capsys.readouterr().err
    _refuse_one(server, b"not json")
    assert main(["deadletters", "show", "999", "--server", server.url]) == 2
    assert "no dead letter 999" in capsys.readouterr().err
    assert main(["deadletters", "list", "--server", "nats://127.0.0.1:1"]) == 2
    assert "bus.unavailable" in capsys.readouterr().err


def test_replay_marks_show_in_list_and_show(
    server: EmbeddedServer, shop: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An event the web hive failed to handle, replayed from the CLI: list and show say when and by whom."""

    async def keep_event() -> None:
        nc = await nats.connect(server.url)
        try:
            await ensure_event_streams(nc.jetstream(), [("orders", 1)], hives=["backend", "web"])
            await publish_dead_letter(
                nc.jetstream(),
                "web",
                where=("orders", 1, "ev", "order_placed"),
                subject="subhive.orders.v1.ev.order_placed",
                data=b'{"order_id": "o-7"}',
                headers={"Nats-Msg-Id": "ev-7", "Subhive-Sender": "backend"},
                error=WireError("handler.failed", "KeyError: 'x'"),
            )
        finally:
            await nc.close()

    run(keep_event())
    monkeypatch.setenv("USER", "alice")
    monkeypatch.setenv("LOGNAME", "alice")
    assert main(["deadletters", "list", "--server", server.url, "--format", "json"]) == 0
    [before] = json.loads(capsys.readouterr().out)["dead_letters"]
    assert (before["id"], before["replayed"], before["replays"]) == ("web:1", False, [])

    with _listening(server.url, "_INBOX_web.replay.>") as replayed:  # web runs: its replays reach it alone
        assert main(["deadletters", "replay", "web:1", "--server", server.url, "-C", str(shop)]) == 0
    assert "event re-sent to web alone (_INBOX_web.replay.orders.v1.order_placed)" in capsys.readouterr().out
    assert replayed == [b'{"order_id": "o-7"}']

    assert main(["deadletters", "list", "--server", server.url, "--format", "json"]) == 0
    [after] = json.loads(capsys.readouterr().out)["dead_letters"]
    assert after["replayed"] is True
    [mark] = after["replays"]
    assert mark["by"] == "alice"
    assert mark["result"].startswith("event re-sent to web alone")
    assert datetime.fromisoformat(mark["time"]) >= datetime.fromisoformat(after["time"])  # after it was kept

    assert main(["deadletters", "list", "--server", server.url]) == 0
    listed = capsys.readouterr().out
    assert "web:1" in listed
    assert "replayed, last" in listed
    assert "by alice" in listed
    assert main(["deadletters", "show", "web:1", "--server", server.url]) == 0
    shown = capsys.readouterr().out
    assert "replayed " + mark["time"][:10] in shown
    assert "by alice: event re-sent to web alone" in shown
    assert main(["deadletters", "show", "web:1", "--server", server.url, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["replays"] == [mark]
    # The id a refused sender is told (the dead letter's message id) names the same letter.
    assert main(["deadletters", "show", "dlq-web-ev-7", "--server", server.url, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["id"] == "web:1"
