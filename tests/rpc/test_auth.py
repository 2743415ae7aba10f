"""Who may call a provider: real grpc.aio servers on 127.0.0.1:0 with the provider's check outermost, callers
with the keys `subhive up` would issue from a lock. No root here: the check is the provider's own."""

from __future__ import annotations

import json
import logging
import os
import secrets
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from hypothesis import given, settings
from hypothesis import strategies as st

from subhive.root_hive import LockEntry, PermissionDenied, Unauthenticated
from subhive.rpc import (
    HIVE_HEADER,
    TOKEN_HEADER,
    CallerCheck,
    KeyFile,
    Keys,
    ProviderInterceptor,
    caller_interceptors,
    error_from_rpc,
    issue_keys,
    pair_token,
    trace_interceptors,
    write_keys,
)
from subhive.semver import Version
from tests.kit import run

from . import _raw as raw

#: The test contracts and the gRPC service each one's server answers.
SERVICES = {"alpha": "test.Alpha", "beta": "test.Beta"}
HIVES = ("db", "cache", "web", "ops")


def lock(*lines: tuple[str, str, tuple[str, ...]]) -> list[LockEntry]:
    """Lock entries: (contract, provider, consumers), each at version 1.0.0."""
    return [
        LockEntry(name, Version.parse("1.0.0"), "sha256:" + "0" * 64, provider, dict.fromkeys(consumers, "^1"))
        for name, provider, consumers in lines
    ]


class Provider:
    """A server for one contract that echoes every call shape, with the provider's check and health."""

    def __init__(self, server: grpc.aio.Server, address: str, contract: str) -> None:
        self.server, self.address, self.contract = server, address, contract

    @classmethod
    async def start(cls, keys: Keys, contract: str) -> Provider:
        async def unary(request: bytes, context: Any) -> bytes:
            return request

        async def unary_stream(request: bytes, context: Any) -> AsyncIterator[bytes]:
            yield request

        async def stream_unary(requests: AsyncIterator[bytes], context: Any) -> bytes:
            return b"".join([r async for r in requests])

        async def stream_stream(requests: AsyncIterator[bytes], context: Any) -> AsyncIterator[bytes]:
            async for request in requests:
                yield request

        check = CallerCheck(keys, contract, 1)
        server = grpc.aio.server(interceptors=[ProviderInterceptor(f"{contract} provider", check=check)])
        server.add_generic_rpc_handlers(
            (
                grpc.method_handlers_generic_handler(
                    SERVICES[contract],
                    {
                        "Unary": grpc.unary_unary_rpc_method_handler(unary),
                        "UnaryStream": grpc.unary_stream_rpc_method_handler(unary_stream),
                        "StreamUnary": grpc.stream_unary_rpc_method_handler(stream_unary),
                        "StreamStream": grpc.stream_stream_rpc_method_handler(stream_stream),
                    },
                ),
            )
        )
        health_servicer = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        await health_servicer.set("", health_pb2.HealthCheckResponse.SERVING)
        return cls(server, f"127.0.0.1:{port}", contract)

    def channel(self, keys: Keys | None = None, provider: str = "db") -> grpc.aio.Channel:
        outgoing = trace_interceptors() if keys is None else caller_interceptors(keys, provider)
        return grpc.aio.insecure_channel(self.address, interceptors=outgoing)


async def every_shape(
    channel: grpc.aio.Channel, service: str, metadata: tuple[tuple[str, str], ...] = ()
) -> list[bytes | grpc.aio.AioRpcError]:
    """What each of the four call shapes got: the echo, or the error it failed with."""

    async def requests() -> AsyncIterator[bytes]:
        yield b"hi"

    async def unary() -> bytes:
        return bytes(await raw.unary_unary(channel, f"/{service}/Unary")(b"hi", metadata=metadata))

    async def unary_stream() -> bytes:
        call = raw.unary_stream(channel, f"/{service}/UnaryStream")(b"hi", metadata=metadata)
        return b"".join([m async for m in call])

    async def stream_unary() -> bytes:
        return bytes(await raw.stream_unary(channel, f"/{service}/StreamUnary")(requests(), metadata=metadata))

    async def stream_stream() -> bytes:
        call = raw.stream_stream(channel, f"/{service}/StreamStream")(requests(), metadata=metadata)
        return b"".join([m async for m in call])

    got: list[bytes | grpc.aio.AioRpcError] = []
    for shape in (unary, unary_stream, stream_unary, stream_stream):
        try:
            got.append(await shape())
        except grpc.aio.AioRpcError as exc:
            got.append(exc)
    return got


def refused(got: list[bytes | grpc.aio.AioRpcError], status: grpc.StatusCode, code: str) -> list[str]:
    """The messages of the refusals, after checking every shape was refused with ``status`` and ``code``."""
    messages = []
    for outcome in got:
        assert isinstance(outcome, grpc.aio.AioRpcError), outcome
        assert outcome.code() == status
        assert json.loads(outcome.details() or "")["error"] == code
        messages.append(error_from_rpc(outcome).message)
    return messages


# -- who gets in --------------------------------------------------------------------------------------------------


def test_an_anonymous_call_is_unauthenticated_on_every_shape_and_a_consumer_gets_through() -> None:
    keys = issue_keys(secrets.token_bytes(32), HIVES, lock(("alpha", "db", ("web",))))

    async def scenario() -> None:
        provider = await Provider.start(keys["db"], "alpha")
        try:
            async with provider.channel() as anonymous:
                got = await every_shape(anonymous, "test.Alpha")
                unknown = await every_shape(anonymous, "test.Nothing")  # nothing told about what exists
                health = health_pb2_grpc.HealthStub(anonymous)
                reply = await health.Check(health_pb2.HealthCheckRequest())  # type: ignore[attr-defined]  # the grpc health stubs declare no methods on HealthStub
            async with provider.channel(keys["web"]) as web:
                allowed = await every_shape(web, "test.Alpha")
        finally:
            await provider.server.stop(None)
        messages = refused(got, grpc.StatusCode.UNAUTHENTICATED, "auth.missing")
        assert "db's alpha v1 service answers its consumers only" in messages[0]
        assert "/test.Alpha/Unary says no hive" in messages[0]
        refused(unknown, grpc.StatusCode.UNAUTHENTICATED, "auth.missing")
        assert reply.status == health_pb2.HealthCheckResponse.SERVING  # health checking stays open
        assert allowed == [b"hi"] * 4
        assert isinstance(error_from_rpc(got[0]), Unauthenticated)  # type: ignore[arg-type]

    run(scenario())


def test_a_known_hive_that_does_not_consume_the_contract_is_permission_denied() -> None:
    keys = issue_keys(secrets.token_bytes(32), HIVES, lock(("alpha", "db", ("web",)), ("beta", "db", ())))

    async def scenario() -> None:
        beta = await Provider.start(keys["db"], "beta")
        try:
            async with beta.channel(keys["web"]) as web, beta.channel(keys["db"]) as itself:
                got = await every_shape(web, "test.Beta")
                own = await every_shape(itself, "test.Beta")
        finally:
            await beta.server.stop(None)
        [message, *_] = refused(got, grpc.StatusCode.PERMISSION_DENIED, "auth.not_consumer")
        assert message == "hive 'web' does not consume beta v1: db refuses its call to /test.Beta/Unary"
        assert isinstance(error_from_rpc(got[0]), PermissionDenied)  # type: ignore[arg-type]
        assert own == [b"hi"] * 4  # a provider may call its own service

    run(scenario())


def test_a_token_is_valid_at_one_provider_only_and_for_its_own_hive_only() -> None:
    master = secrets.token_bytes(32)
    keys = issue_keys(master, HIVES, lock(("alpha", "db", ("web", "ops")), ("beta", "cache", ("web",))))
    web_for_db, web_for_cache = keys["web"].present["db"], keys["web"].present["cache"]
    other_run = issue_keys(secrets.token_bytes(32), HIVES, lock(("beta", "cache", ("web",))))

    async def scenario() -> dict[str, list[bytes | grpc.aio.AioRpcError]]:
        cache = await Provider.start(keys["cache"], "beta")
        try:
            async with grpc.aio.insecure_channel(cache.address) as channel:

                def as_(hive: str, token: str) -> tuple[tuple[str, str], ...]:
                    return ((HIVE_HEADER, hive), (TOKEN_HEADER, token))

                return {
                    # db received web's token for db; replayed to cache as web, it is refused.
                    "replayed": await every_shape(channel, "test.Beta", as_("web", web_for_db)),
                    # ops holds a token for db; with it, it cannot pass for web (or for itself) at cache.
                    "posing": await every_shape(channel, "test.Beta", as_("web", keys["ops"].present["db"])),
                    "another run": await every_shape(
                        channel, "test.Beta", as_("web", other_run["web"].present["cache"])
                    ),
                    "no token": await every_shape(channel, "test.Beta", ((HIVE_HEADER, "web"),)),
                    "genuine": await every_shape(channel, "test.Beta", as_("web", web_for_cache)),
                }
        finally:
            await cache.server.stop(None)

    got = run(scenario())
    for case in ("replayed", "posing", "another run"):
        [message, *_] = refused(got[case], grpc.StatusCode.UNAUTHENTICATED, "auth.unauthenticated")
        assert (
            message == "cache's beta v1 service does not accept the credentials of this call to "
            "/test.Beta/Unary (hive 'web')"
        )
    [message, *_] = refused(got["no token"], grpc.StatusCode.UNAUTHENTICATED, "auth.missing")
    assert "says hive 'web' without a token" in message
    assert got["genuine"] == [b"hi"] * 4
    # What each hive was given: tokens for the providers, naming itself; a provider verifies the whole tree
    # and answers its consumers only. The master is nowhere in it.
    assert sorted(keys["ops"].present) == sorted(keys["web"].present) == ["cache", "db"]
    assert sorted(keys["cache"].verify) == sorted(HIVES)
    assert keys["cache"].consumers == {("beta", 1): frozenset({"web"})}
    assert keys["ops"].verify == {}  # it provides nothing
    assert master.hex() not in json.dumps([k.to_dict() for k in keys.values()])


# -- the key file, followed while it changes ------------------------------------------------------------------


def test_a_consumer_added_to_the_lock_is_let_in_without_a_restart_and_a_broken_file_opens_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    master = secrets.token_bytes(32)
    directory = tmp_path / "keys"
    paths = write_keys(directory, issue_keys(master, HIVES, lock(("alpha", "db", ("web",)))))
    db_keys, ops_keys = KeyFile(paths["db"]), KeyFile(paths["ops"])
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert {stat.S_IMODE(p.stat().st_mode) for p in paths.values()} == {0o600}

    async def calls(provider: Provider) -> list[bytes | grpc.aio.AioRpcError]:
        async with provider.channel(ops_keys) as ops:
            return await every_shape(ops, "test.Alpha")

    async def scenario() -> dict[str, list[bytes | grpc.aio.AioRpcError]]:
        provider = await Provider.start(db_keys, "alpha")
        got = {}
        try:
            got["before"] = await calls(provider)
            write_keys(directory, issue_keys(master, HIVES, lock(("alpha", "db", ("web", "ops")))))
            got["accepted"] = await calls(provider)  # the same server: it re-read its file
            write_keys(directory, issue_keys(master, HIVES, lock(("alpha", "db", ("web",)))))
            got["dropped"] = await calls(provider)
            write_keys(directory, issue_keys(master, HIVES, lock(("alpha", "db", ("web", "ops")))))
            broken = paths["db"].with_name("broken")
            broken.write_text(
                json.dumps({"format": 1, "hive": "db", "verify": {"ops": 7}, "consumers": {"alpha": {"1": ["ops"]}}})
            )
            os.replace(broken, paths["db"])
            with caplog.at_level(logging.WARNING, logger="subhive.rpc"):
                got["broken"] = await calls(provider)
        finally:
            await provider.server.stop(None)
        return got

    got = run(scenario())
    refused(got["before"], grpc.StatusCode.PERMISSION_DENIED, "auth.not_consumer")  # known, not a consumer
    assert got["accepted"] == [b"hi"] * 4
    refused(got["dropped"], grpc.StatusCode.PERMISSION_DENIED, "auth.not_consumer")
    # db's broken version (which would let ops in) is not used: its last good keys stay in force, and it says so.
    refused(got["broken"], grpc.StatusCode.PERMISSION_DENIED, "auth.not_consumer")
    assert "keeping the previous gRPC keys" in caplog.text
    assert "not a gRPC key file" in caplog.text


def test_a_missing_or_broken_key_file_is_a_clear_error(tmp_path: Path) -> None:
    from subhive.errors import InputError

    with pytest.raises(InputError) as missing:
        KeyFile(tmp_path / "none.json")
    assert missing.value.code == "rpc.keys_missing"
    assert missing.value.location is not None
    assert missing.value.location.file == str(tmp_path / "none.json")
    (tmp_path / "bad.json").write_text('{"format": 1, "hive": "db", "present": ["x"]}')
    with pytest.raises(InputError) as broken:
        KeyFile(tmp_path / "bad.json")
    assert broken.value.code == "rpc.keys_invalid"
    assert "subhive up" in (broken.value.hint or "")


# -- the rule, for every small tree ------------------------------------------------------------------------------

_NAMES = st.sampled_from(HIVES)
_LINES = st.lists(
    st.tuples(st.sampled_from(("alpha", "beta", "gamma")), _NAMES, st.frozensets(_NAMES, max_size=3)),
    max_size=4,
    unique_by=lambda line: line[0],
)


@settings(max_examples=60, deadline=None)
@given(lines=_LINES)
def test_a_call_gets_in_exactly_when_its_hive_consumes_the_contract_with_its_own_token(
    lines: list[tuple[str, str, frozenset[str]]],
) -> None:
    master = b"k" * 32
    keys = issue_keys(master, HIVES, lock(*((c, p, tuple(sorted(cs))) for c, p, cs in lines)))
    every_token = {pair_token(master, a, b) for a in HIVES for b in HIVES}
    for contract, provider, consumers in lines:
        check = CallerCheck(keys[provider], contract, 1)
        for caller in HIVES:
            for token in every_token:
                outcome = check.refusal(f"/{contract}/M", ((HIVE_HEADER, caller), (TOKEN_HEADER, token)))
                genuine = token == pair_token(master, caller, provider)
                if genuine:
                    assert keys[caller].present[provider] == token  # every hive holds its token for a provider
                if genuine and (caller == provider or caller in consumers):
                    assert outcome is None
                elif genuine:
                    assert isinstance(outcome, PermissionDenied)
                else:
                    assert isinstance(outcome, Unauthenticated), (contract, provider, caller, outcome)
            assert isinstance(check.refusal(f"/{contract}/M", ()), Unauthenticated)
            assert check.refusal("/grpc.health.v1.Health/Check", ()) is None
