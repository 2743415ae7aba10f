"""Every request gets an answer: 10,000 generated payloads through a real nats-server, each answered within its
deadline, either accepted (a valid reply) or refused with the structured error its kind calls for and kept in
the dead letters.

The generator is seeded (the same 10,000 payloads every run) and mixes: valid requests, requests valid by
schema on which the handler fails or refuses, requests invalid by schema, malformed bytes, nesting from 1 to
100,000 levels, text that is not UTF-8 or holds lone surrogates, huge strings. Requests go out with bounded
concurrency exactly as the sender's transport frames them, but unencoded and unvalidated (``_kit.send_raw``).
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import Counter
from typing import Any

import nats
import pytest

from subhive.bus import DeadLetters, EmbeddedServer
from subhive.runtime import Refusal
from tests.kit import StartServer, run

from ._kit import hive, loose, provision, send_raw, until

PAYLOADS = 10_000
SEED = 20_261_125
IN_FLIGHT = 64
DEADLINE = 5.0
FAILS, REFUSES = 13, 42  # valid by schema: the handler raises on n=13 (a bug) and refuses n=42 (on purpose)

INVALID = [
    b'{"n": -1}',
    b'{"n": 101}',
    b'{"n": "7"}',
    b'{"m": 1}',
    b'{"n": 1.5}',
    b"[1]",
    b'"n"',
    b"null",
    b'{"n": 100000000000000000000000000000}',
    b'{"n": 1, "extra": true}',
    b"{}",
]
MALFORMED = [
    b"",
    b"{",
    b'{"n": 1',
    b'{"n": 1}}',
    b'{"n": NaN}',
    b'{"n": Infinity}',
    b"{'n': 1}",
    b'{"n": 01}',
    b'{"n": 1e999}',
    b"\x00\x01\x02",
    b'{"n": 1} trailing',
]


def _nest(rng: random.Random, depth: int) -> bytes:
    opener, closer = (b'{"a":', b"}") if rng.random() < 0.5 else (b"[", b"]")
    return opener * depth + b'{"n":1}' + closer * depth


def _bad_unicode(rng: random.Random) -> bytes:
    kind = rng.randrange(4)
    if kind == 0:
        return b'{"n": 1, "s": "' + bytes([rng.choice([0x80, 0xBF, 0xC0, 0xFE, 0xFF])]) + b'"}'
    if kind == 1:
        return b'{"n": 1, "s": "\\u' + f"{rng.randrange(0xD800, 0xE000):04x}".encode() + b'"}'
    if kind == 2:
        return b'{"\\u' + f"{rng.randrange(0xDC00, 0xE000):04x}".encode() + b'": 1}'
    return b'{"n": 1, "s": "\xed\xa0\x80"}'  # a surrogate encoded as if it were UTF-8 (CESU): not UTF-8


def _malformed(rng: random.Random) -> tuple[bytes, str, set[str]]:
    if rng.random() < 0.5:
        return rng.choice(MALFORMED), "malformed", {"payload.malformed", "payload.bad_unicode"}
    noise = rng.randbytes(rng.randrange(1, 200))
    return noise, "noise", {"payload.malformed", "payload.bad_unicode", "payload.invalid", "ok"}


def generate(rng: random.Random) -> tuple[bytes, str, set[str]]:
    """One payload, its kind, and the answers it may get: ``ok`` (a valid reply) or the refusal codes."""
    roll = rng.random()
    if roll < 0.30:
        n = rng.choice([FAILS, REFUSES]) if rng.random() < 0.1 else rng.randrange(0, 101)
        answer = {FAILS: "handler.failed", REFUSES: "notes.refused"}.get(n, "ok")
        return json.dumps({"n": n}).encode(), "valid", {answer}
    if roll < 0.45:
        return rng.choice(INVALID), "invalid", {"payload.invalid"}
    if roll < 0.60:
        return _malformed(rng)
    if roll < 0.80:
        depth = rng.choice(
            [rng.randrange(1, 1024), rng.randrange(1025, 5000), *([100_000] if rng.random() < 0.01 else [])]
        )
        # Up to 1024 levels is JSON the readers take (and the schema refuses, unless the validator cannot even
        # describe an error that deep: ~255 levels); deeper is refused unread.
        allowed = (
            {"payload.invalid"}
            if depth < 250
            else {"payload.invalid", "payload.too_deep"}
            if depth < 1024
            else {"payload.too_deep"}
        )
        return _nest(rng, depth), "deep", allowed
    if roll < 0.97:
        return _bad_unicode(rng), "unicode", {"payload.bad_unicode"}
    pad = rng.choice([b"x" * rng.randrange(10_000, 100_000), b"\\u00e9" * rng.randrange(1000, 15_000)])
    return b'{"n": 1, "pad": "' + pad + b'"}', "huge", {"payload.invalid"}


@pytest.fixture(scope="module")
def server(start_module_nats: StartServer) -> EmbeddedServer:
    """One nats-server for the whole module: each test provisions what it uses."""
    return start_module_nats()


def test_ten_thousand_fuzzed_requests_are_each_answered_in_time_accepted_or_refused_and_kept(
    server: EmbeddedServer,
) -> None:
    rng = random.Random(SEED)
    cases = [generate(rng) for _ in range(PAYLOADS)]
    runs: Counter[int] = Counter()

    async def strict(payload: Any) -> Any:
        runs[payload["n"]] += 1
        if payload["n"] == FAILS:
            raise ZeroDivisionError("a bug in the handler")
        if payload["n"] == REFUSES:
            raise Refusal("42 is not served", code="notes.refused")
        return {"n": payload["n"]}

    async def scenario() -> tuple[list[tuple[str, str, float]], int, float, int]:
        await provision(server, ["backend", "web"], [("loose", 1)])
        backend, web = await hive(server, "backend"), await hive(server, "web")
        slots = asyncio.Semaphore(IN_FLIGHT)
        answers: list[tuple[str, str, float]] = [("", "", 0.0)] * len(cases)

        async def ask(i: int, data: bytes) -> None:
            async with slots:
                started = time.monotonic()
                try:
                    msg = await send_raw(web, loose(), "strict", data, timeout=DEADLINE)
                except Exception as exc:  # a timeout: no answer at all, which is what must never happen
                    answers[i] = ("silence", type(exc).__name__, time.monotonic() - started)
                    return
                code = (msg.headers or {}).get("Subhive-Error")
                if code is None:
                    reply = json.loads(msg.data)
                    answers[i] = ("ok" if reply == json.loads(data) else f"wrong reply {reply}", "", 0.0)
                else:
                    body = json.loads(msg.data)
                    kept = "kept" if body["dead_letter"] else "not kept"
                    answers[i] = (
                        body["code"] if body["code"] == code else f"{code}!={body['code']}",
                        kept,
                        time.monotonic() - started,
                    )

        try:
            await backend.serve(loose(), {"strict": strict})
            started = time.monotonic()
            await asyncio.gather(*(ask(i, data) for i, (data, _, _) in enumerate(cases)))
            took = time.monotonic() - started
            refused = sum(1 for code, _, _ in answers if code not in ("ok", "notes.refused"))
            await until(lambda: backend.stats.dead_lettered >= refused, timeout=30)
            nc = await nats.connect(server.url)
            try:
                stored = (await DeadLetters(nc).counts()).get("backend", 0)
            finally:
                await nc.close()
            return answers, stored, took, refused
        finally:
            await web.close()
            await backend.close()

    answers, stored, took, refused = run(scenario(), timeout=120)
    wrong = [
        (kind, data[:60], answer)
        for (data, kind, allowed), answer in zip(cases, answers, strict=True)
        if answer[0] not in allowed or answer[0] == "silence" or answer[2] > DEADLINE
    ]
    assert wrong == [], f"{len(wrong)} answers were not what their payload calls for, e.g. {wrong[:5]}"
    kinds = Counter(kind for _, kind, _ in cases)
    assert min(kinds.values()) >= 200, kinds  # every kind of input was exercised
    # Every refusal but the handler's deliberate one names its dead letter, and each is stored once.
    assert {kept for code, kept, _ in answers if code not in ("ok", "notes.refused")} == {"kept"}
    assert {kept for code, kept, _ in answers if code == "notes.refused"} <= {"not kept"}
    assert stored == refused
    # A valid request runs the handler once, a bad one never: nothing is retried behind the caller's back.
    valid = Counter(json.loads(data)["n"] for data, kind, _ in cases if kind == "valid")
    assert runs == valid
    print(f"{PAYLOADS} requests answered in {took:.1f} s; {refused} refused and dead-lettered")
