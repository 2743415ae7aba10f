"""No message can stop a consumer, and every request gets an answer (issue #13).

Poison is put on the wire exactly as a broken hive would send it (the sender's own headers and subject, no
encoding or validation: ``tests/bus/_kit.py``), against a real nats-server: a 100,000-deep array, bytes that
are not UTF-8, lone surrogates, a huge string, not JSON at all. Each is refused with a stable code and kept in
the dead letters, bytes intact; every valid message after it is handled.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic import BaseModel

from subhive.bus import BusError, EmbeddedServer, Failure, RemoteError
from subhive.errors import InputError
from subhive.hive import Controller, Entry, Escalation, Reply, Write
from subhive.runtime import LocalTransport, PayloadInvalid, Refusal, to_payload
from tests.hive._board import board
from tests.kit import StartServer, run

from ._kit import hive, letters, loose, provision, publish_raw, send_raw, until

DEEP = b"[" * 100_000 + b"]" * 100_000
#: (bytes, the code they are refused with), for a contract whose payload is any object.
POISON: list[tuple[bytes, str]] = [
    (DEEP, "payload.too_deep"),
    (b'{"a": "\xff\xfe broken"}', "payload.bad_unicode"),
    (b'{"a": "\\ud800"}', "payload.bad_unicode"),
    (b'{"\\udfff": 1}', "payload.bad_unicode"),
    (b'{"a": "' + b"x" * 600_000, "payload.malformed"),  # a huge string that never ends
    (b"not json at all", "payload.malformed"),
    (b'{"a": NaN}', "payload.malformed"),
    (b'{"a": 1e400}', "payload.malformed"),
    (b'{"a": 1}{"b": 2}', "payload.malformed"),
    (b"[" * 1000 + b"123456789012345678901234567890" + b"]" * 1000, "payload.too_deep"),  # the exact parser's path
    (b'["an array, not an object"]', "payload.invalid"),
]


@pytest.fixture(scope="module")
def server(start_module_nats: StartServer) -> EmbeddedServer:
    """One nats-server for the whole module: each test provisions what it uses."""
    return start_module_nats()


def test_poison_events_are_dead_lettered_and_every_valid_event_after_them_is_handled(server: EmbeddedServer) -> None:
    handled: list[Any] = []

    async def on_noted(payload: Any) -> None:
        handled.append(payload["n"])

    async def scenario() -> list[Any]:
        await provision(server, ["backend", "web"], [("loose", 1)])
        backend, web = await hive(server, "backend"), await hive(server, "web")
        try:
            for data, _ in POISON:
                await publish_raw(backend, loose(), "noted", data)
            for n in range(20):
                await backend.publish(loose(), "noted", {"n": n})
            await web.subscribe(loose(), "noted", on_noted)
            await until(lambda: len(handled) == 20 and web.stats.dead_lettered == len(POISON))
            return await letters(server, "web")
        finally:
            await web.close()
            await backend.close()

    kept = run(scenario())
    assert handled == list(range(20))
    assert [(d.data, d.code) for d in kept] == POISON
    assert all(d.message and d.subject.endswith(".ev.noted") for d in kept)


def test_poison_requests_get_a_structured_refusal_and_are_kept_and_the_provider_answers_on(
    server: EmbeddedServer,
) -> None:
    async def echo(payload: Any) -> Any:
        return payload

    async def scenario() -> tuple[list[tuple[str, str]], Any, list[Any]]:
        await provision(server, ["backend", "web"], [("loose", 1)])
        backend, web = await hive(server, "backend"), await hive(server, "web")
        try:
            await backend.serve(loose(), {"echo": echo})
            answers = []
            for data, _ in POISON:
                msg = await send_raw(web, loose(), "echo", data)
                body = json.loads(msg.data)
                answers.append(((msg.headers or {}).get("Subhive-Error", ""), body["code"]))
            still = await web.request(loose(), "echo", {"still": "answering"})
            kept = await until(lambda: backend.stats.dead_lettered == len(POISON) and letters(server, "backend"))
            return answers, still, kept
        finally:
            await web.close()
            await backend.close()

    answers, still, kept = run(scenario())
    assert answers == [(code, code) for _, code in POISON]
    assert still == {"still": "answering"}
    assert [(d.data, d.code) for d in kept] == POISON


def test_a_poison_reply_is_refused_by_the_caller_with_its_code_and_kept(server: EmbeddedServer) -> None:
    async def scenario() -> tuple[BusError, list[Any]]:
        await provision(server, ["web"], [("loose", 1)])
        web = await hive(server, "web")
        route = web._route(loose(), "op", "echo")
        liar = await hive(server, "liar")  # a provider that answers with 100,000 nested arrays

        async def answer(msg: Any) -> None:
            await msg.respond(DEEP)

        await liar.connection.subscribe(route.target.subject, cb=answer)
        await liar.connection.flush()
        try:
            with pytest.raises(BusError) as caught:
                await web.request(loose(), "echo", {"a": 1})
            return caught.value, await until(lambda: letters(server, "web"))
        finally:
            await web.close()
            await liar.close()

    error, kept = run(scenario())
    assert error.code == "payload.too_deep"
    assert [(d.data, d.code, d.subject) for d in kept] == [(DEEP, "payload.too_deep", error.location.subject)]


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        ({"a": "\ud800"}, "payload.bad_unicode"),
        ({"\udfff": "key"}, "payload.bad_unicode"),
        ({"a": {1, 2}}, "payload.malformed"),
        ({"a": b"bytes"}, "payload.malformed"),
        ({1: "not a text key", "a": object()}, "payload.malformed"),
    ],
)
def test_a_payload_that_cannot_travel_raises_payload_invalid_before_anything_leaves(
    server: EmbeddedServer, payload: Any, code: str
) -> None:
    async def scenario() -> tuple[list[str], int]:
        await provision(server, ["backend", "web"], [("loose", 1)])
        backend, web = await hive(server, "backend"), await hive(server, "web")
        local = LocalTransport()
        calls = 0

        async def echo(received: Any) -> Any:
            nonlocal calls
            calls += 1
            return received

        await backend.serve(loose(), {"echo": echo})
        await local.serve(loose(), {"echo": echo})
        codes = []
        try:
            for send in (
                lambda: web.request(loose(), "echo", payload),
                lambda: web.publish(loose(), "noted", payload),
                lambda: local.request(loose(), "echo", payload),
            ):
                with pytest.raises(PayloadInvalid) as caught:
                    await send()
                codes.append(caught.value.code)
            stored = (await web._js.stream_info("SUBHIVE_EV_loose_v1")).state.messages
            return codes, calls + stored
        finally:
            await web.close()
            await backend.close()

    codes, reached = run(scenario())
    assert codes == [code, code, code]
    assert reached == 0  # no handler ran, no event was stored


def test_too_deep_an_outgoing_payload_is_refused_as_too_deep(server: EmbeddedServer) -> None:
    deep: Any = "bottom"
    for _ in range(5000):
        deep = [deep]

    async def scenario() -> str:
        await provision(server, ["web"], [("loose", 1)])
        web = await hive(server, "web")
        try:
            with pytest.raises(PayloadInvalid) as caught:
                await web.publish(loose(), "noted", {"deep": deep})
            return caught.value.code
        finally:
            await web.close()

    assert run(scenario()) == "payload.too_deep"


def test_a_handler_failure_answers_handler_failed_naming_its_dead_letter_and_a_refusal_keeps_its_code(
    server: EmbeddedServer,
) -> None:
    runs: list[Any] = []
    reported: list[Failure] = []

    async def handler(payload: Any) -> Any:
        runs.append(payload)
        if "refuse" in payload:
            raise Refusal("no such note", code="notes.not_found", hint="list the notes first")
        if "bad" in payload:
            # An internal error of the provider (as a blackboard write of a surrogate raises): never the reply code.
            raise InputError("the value is not JSON", code="blackboard.not_json")
        return {"ok": True}

    async def report(failure: Failure) -> None:
        reported.append(failure)

    async def scenario() -> tuple[RemoteError, RemoteError, list[Any]]:
        await provision(server, ["backend", "web"], [("loose", 1)])
        backend = await hive(server, "backend", on_repeated_failure=report)
        web = await hive(server, "web")
        try:
            await backend.serve(loose(), {"echo": handler})
            with pytest.raises(RemoteError) as refused:
                await web.request(loose(), "echo", {"refuse": 1})
            failures = []
            for n in range(3):
                with pytest.raises(RemoteError) as failed:
                    await web.request(loose(), "echo", {"bad": n})
                failures.append(failed.value)
            assert await web.request(loose(), "echo", {}) == {"ok": True}
            kept = await until(lambda: backend.stats.dead_lettered == 3 and letters(server, "backend"))
            return refused.value, failures[0], kept
        finally:
            await web.close()
            await backend.close()

    refused, failed, kept = run(scenario())
    assert (refused.code, refused.message, refused.dead_letter) == ("notes.not_found", "no such note", "")
    assert failed.code == "handler.failed"
    assert "InputError blackboard.not_json" in failed.message
    assert failed.dead_letter.startswith("dlq-backend-")
    assert [(json.loads(d.data), d.code) for d in kept] == [({"bad": n}, "handler.failed") for n in range(3)]
    # The reference names the first failure's dead letter: the id it was stored under, never the sender's own.
    assert failed.dead_letter == kept[0].msg_id
    assert failed.dead_letter != f"dlq-backend-{kept[0].headers['Nats-Msg-Id']}"
    assert len(runs) == 5  # each request ran the handler once: nothing retried behind the caller's back
    # Three failures of one class: one repair report.
    assert [(f.code, f.member, f.count, f.subject) for f in reported] == [
        ("handler.failed", "echo", 2, "subhive.loose.v1.op.echo")
    ]


def test_a_publish_while_the_server_restarts_says_unavailable_not_no_stream(start_nats: StartServer) -> None:
    server = start_nats()

    async def scenario() -> tuple[str, set[str], bool]:
        await provision(server, ["backend"], [("loose", 1)])
        backend = await hive(server, "backend", request_timeout=1.0)
        try:
            await backend.publish(loose(), "noted", {"n": 0}, msg_id="n-0")
            server.kill()
            with pytest.raises(BusError) as caught:
                await backend.publish(loose(), "noted", {"n": 1}, msg_id="n-1")
            await server.restart()
            meanwhile: set[str] = set()
            for _ in range(40):  # retried with the same id until the server is back: as the hint says
                try:
                    await backend.publish(loose(), "noted", {"n": 1}, msg_id="n-1")
                    return caught.value.code, meanwhile, True
                except BusError as exc:
                    meanwhile.add(exc.code)
                    await asyncio.sleep(0.25)
            return caught.value.code, meanwhile, False
        finally:
            await backend.close()

    code, meanwhile, stored = run(scenario())
    assert (code, stored) == ("bus.unavailable", True)
    assert meanwhile <= {"bus.unavailable"}  # while JetStream starts again too: never bus.no_stream


def test_a_request_or_publish_on_a_closed_connection_is_a_bus_error_not_a_nats_one(server: EmbeddedServer) -> None:
    async def scenario() -> list[str]:
        await provision(server, ["web"], [("loose", 1)])
        web = await hive(server, "web")
        await web.close()
        codes = []
        for send in (lambda: web.request(loose(), "echo", {"a": 1}), lambda: web.publish(loose(), "noted", {"a": 1})):
            with pytest.raises(BusError) as caught:
                await send()
            codes.append(caught.value.code)
        return codes

    assert run(scenario()) == ["bus.unavailable", "bus.unavailable"]


def test_a_typed_client_raises_only_the_documented_errors_whatever_the_text(server: EmbeddedServer) -> None:
    class Note(BaseModel):
        text: str
        tags: list[str] = []

    rng = random.Random(13)

    def text() -> str:  # any code point, lone surrogates included (pydantic keeps them in a str)
        return "".join(
            chr(rng.choice([rng.randrange(0x20, 0x7F), rng.randrange(0xD800, 0xE000), rng.randrange(0x80, 0x110000)]))
            for _ in range(rng.randrange(0, 6))
        )

    async def echo(payload: Any) -> Any:
        return payload

    async def scenario() -> Counter[str]:
        await provision(server, ["backend", "web"], [("loose", 1)])
        backend, web = await hive(server, "backend"), await hive(server, "web")
        outcomes: Counter[str] = Counter()
        try:
            await backend.serve(loose(), {"echo": echo})
            for _ in range(200):
                note = Note(text=text(), tags=[text() for _ in range(rng.randrange(3))])
                for transport in (web, LocalTransport()):
                    if isinstance(transport, LocalTransport):
                        await transport.serve(loose(), {"echo": echo})
                    try:
                        reply = await transport.request(loose(), "echo", to_payload(note))
                        outcomes["ok" if Note.model_validate(reply) == note else "changed"] += 1
                    except (PayloadInvalid, BusError) as exc:  # the documented errors; anything else fails the test
                        outcomes[exc.code] += 1
            return outcomes
        finally:
            await web.close()
            await backend.close()

    outcomes = run(scenario())
    assert set(outcomes) == {"ok", "payload.bad_unicode"}
    assert min(outcomes.values()) > 50


@dataclass
class _Transcriber:
    """A knowledge source that answers ``loose.echo`` and reacts to ``loose.noted`` by writing the code point it
    was given to the board: a lone surrogate is valid by schema but fails inside the hive (blackboard.not_json)."""

    name: str = "transcriber"
    priority: int = 0
    triggers: tuple[str, ...] = ()  # woken by its operation and event only
    operations: tuple[str, ...] = ("loose.echo",)
    events: tuple[str, ...] = ("loose.noted",)
    runs: Counter[str] = field(default_factory=Counter)

    async def activate(self, entry: Entry, blackboard: Any) -> Sequence[Write | Reply]:
        self.runs[entry.key] += 1
        return [Write("notes.last", {"text": chr(entry.value["cp"])}), Reply({"ok": True})]


def test_through_a_hive_a_bad_request_runs_its_source_once_and_one_failure_class_is_reported_once(
    server: EmbeddedServer,
) -> None:
    source = _Transcriber()
    escalations: list[Escalation] = []
    reported: list[Failure] = []

    async def escalate(escalation: Escalation) -> None:
        escalations.append(escalation)

    async def report(failure: Failure) -> None:
        reported.append(failure)

    async def scenario() -> tuple[list[str], Any, int]:
        await provision(server, ["backend", "web"], [("loose", 1)])
        async with board(server) as (nc, bb):
            controller = Controller(bb, [source], on_escalation=escalate)
            await controller.start(nc.jetstream())
            backend = await hive(server, "backend", on_repeated_failure=report)
            web = await hive(server, "web")
            try:
                await backend.serve(loose(), {"echo": lambda p: controller.answer("loose", "echo", p)})
                await web.subscribe(loose(), "noted", lambda p: controller.on_event("loose", "noted", p))
                codes = []
                for cp in (0xD800, 0xDBFF, 0xDFFF):
                    with pytest.raises(RemoteError) as caught:
                        await web.request(loose(), "echo", {"cp": cp})
                    codes.append(caught.value.code)
                ok = await web.request(loose(), "echo", {"cp": 0x41})
                await backend.publish(loose(), "noted", {"cp": 0xD800})
                await until(lambda: web.stats.dead_lettered == 1)
                return codes, ok, backend.stats.dead_lettered
            finally:
                await web.close()
                await backend.close()
                await controller.stop()

    codes, ok, kept = run(scenario())
    assert (codes, ok, kept) == (["handler.failed"] * 3, {"ok": True}, 3)
    # Each request ran the source once, the bad event twice (one retry, by the bus): nothing stacked.
    assert source.runs == Counter({"op.loose.echo": 4, "ev.loose.noted": 2})
    assert escalations == []  # the controller leaves bus work to the bus: no second report
    assert [(f.code, f.member, f.count) for f in reported] == [("handler.failed", "echo", 2)]
    assert "InputError blackboard.not_json" in reported[0].message
