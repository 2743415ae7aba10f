"""gRPC between hives end to end: the real root server, a provider serving the example inventory contract, a
consumer that finds it through the root; trace context, health, status codes, permissions, a root restart.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from subhive.cli import main
from subhive.errors import InputError, UsageError
from subhive.root_hive import Conflict, Lock, NotFound, PermissionDenied, Unauthenticated
from subhive.root_hive._client import RootClient, admin_token_of
from subhive.root_hive._proto import root_hive_pb2 as root_pb
from subhive.root_hive._proto import root_hive_pb2_grpc as root_pb_grpc
from subhive.root_hive._service import RootServer
from subhive.rpc import (
    GrpcKeys,
    KeyFile,
    NoEndpoint,
    caller_interceptors,
    connect_grpc,
    error_from_rpc,
    issue_keys,
    serve_grpc,
    start_trace,
    trace_id,
    write_keys,
)
from tests.kit import run

from ._inventory import CONTRACT, SERVICE, generated_modules, inventory_servicer


@pytest.fixture(scope="module")
def modules(tmp_path_factory: pytest.TempPathFactory) -> tuple[ModuleType, ModuleType]:
    return generated_modules(tmp_path_factory.mktemp("inventory"))


@dataclass
class Shop:
    """A running root with ``db`` providing inventory 1.0.0, ``web`` consuming it and ``ops`` doing neither."""

    server: RootServer
    admin: RootClient
    db: RootClient
    web: RootClient
    ops: RootClient
    tokens: dict[str, str]
    #: Each hive's gRPC keys, issued from the lock as `subhive up` does.
    keys: dict[str, GrpcKeys]


@asynccontextmanager
async def shop(workspace: Path) -> AsyncIterator[Shop]:
    async with (
        await RootServer.start(workspace, codegen=False) as server,
        RootClient(server.address, admin_token_of(workspace)) as admin,
    ):
        tokens = {name: (await admin.register_hive(name)).token for name in ("db", "web", "ops")}
        db, web, ops = (admin.with_token(tokens[name]) for name in ("db", "web", "ops"))
        files = {p.name: p.read_bytes() for p in CONTRACT.iterdir()}
        assert (await db.propose(files)).status == "accepted"
        await web.declare_requirement("inventory", "^1.0")
        lock = await settled_lock(workspace, lambda lock: any("web" in e.consumers for e in lock))
        yield Shop(server, admin, db, web, ops, tokens, issue_keys(secrets.token_bytes(32), tokens, lock))


async def settled_lock(workspace: Path, ready: Callable[[Lock], bool]) -> Lock:
    """The lock on disk once ``ready`` holds for it: the root writes the file just after it answers."""
    for _ in range(500):
        lock = Lock.load(workspace)
        if ready(lock):
            return lock
        await asyncio.sleep(0.01)
    raise AssertionError("the root did not write the lock expected")


def serving(modules: tuple[ModuleType, ModuleType]) -> tuple[Any, list[tuple[Callable[..., None], object]]]:
    pb, pb_grpc = modules
    servicer = inventory_servicer(pb, pb_grpc)
    return servicer, [(pb_grpc.add_InventoryServicer_to_server, servicer)]


async def get_stock(modules: tuple[ModuleType, ModuleType], root: RootClient, keys: GrpcKeys, sku: str) -> Any:
    pb, pb_grpc = modules
    async with await connect_grpc(root, "inventory", 1, keys=keys) as channel:
        return await pb_grpc.InventoryStub(channel).GetStock(pb.GetStockRequest(sku=sku))


# -- finding and calling, with one trace ---------------------------------------------------------------------


def test_a_consumer_finds_the_provider_through_the_root_and_the_provider_sees_its_trace(
    workspace: Path, modules: tuple[ModuleType, ModuleType]
) -> None:
    async def scenario() -> None:
        async with shop(workspace) as s:
            servicer, servicers = serving(modules)
            async with await serve_grpc(s.db, "inventory", 1, servicers, keys=s.keys["db"]) as provider:
                assert provider.services == (SERVICE,)
                assert (provider.endpoint.provider, provider.endpoint.service) == ("db", SERVICE)
                with start_trace() as traceparent:
                    reply = await get_stock(modules, s.web, s.keys["web"], "A-1")
                assert (reply.sku, reply.on_hand, reply.reserved) == ("A-1", 7, 1)
                ((received, current),) = servicer.seen
                assert received is not None
                assert current is not None
                assert trace_id(received) == trace_id(current) == trace_id(traceparent)
                assert received.split("-")[2] != traceparent.split("-")[2]  # a new span id for the hop

    run(scenario())


def test_a_streaming_call_carries_the_trace_too(workspace: Path, modules: tuple[ModuleType, ModuleType]) -> None:
    async def scenario() -> None:
        pb, pb_grpc = modules
        async with shop(workspace) as s:
            servicer, servicers = serving(modules)
            async with (
                await serve_grpc(s.db, "inventory", 1, servicers, keys=s.keys["db"]),
                await connect_grpc(s.web, "inventory", 1, keys=s.keys["web"]) as channel,
            ):
                with start_trace() as traceparent:
                    stocks = [
                        m.on_hand
                        async for m in pb_grpc.InventoryStub(channel).WatchStock(pb.GetStockRequest(sku="A-1"))
                    ]
            assert stocks == [3, 2]
            ((received, _),) = servicer.seen
            assert trace_id(received) == trace_id(traceparent)

    run(scenario())


def test_a_call_outside_any_trace_starts_one_and_a_provider_calling_onward_keeps_it(
    workspace: Path, modules: tuple[ModuleType, ModuleType]
) -> None:
    async def scenario() -> None:
        async with shop(workspace) as s:
            servicer, servicers = serving(modules)
            servicer.onward = (s.db, s.keys["db"])  # the provider may look up and call its own contract
            async with await serve_grpc(s.db, "inventory", 1, servicers, keys=s.keys["db"]):
                reply = await get_stock(modules, s.web, s.keys["web"], "relay:B-2")
            assert reply.sku == "B-2"
            (outer_received, outer_current), (inner_received, _) = servicer.seen
            assert outer_received is not None
            assert inner_received is not None
            assert trace_id(inner_received) == trace_id(outer_received) == trace_id(outer_current or "")
            assert inner_received != outer_received

    run(scenario())


# -- health, errors, permissions ------------------------------------------------------------------------------


def test_health_checking_reports_serving_and_stopping_unregisters(
    workspace: Path, modules: tuple[ModuleType, ModuleType], capsys: pytest.CaptureFixture[str]
) -> None:
    async def scenario() -> None:
        async with shop(workspace) as s:
            _, servicers = serving(modules)
            provider = await serve_grpc(s.db, "inventory", 1, servicers, keys=s.keys["db"])
            async with grpc.aio.insecure_channel(provider.address) as channel:
                health = health_pb2_grpc.HealthStub(channel)
                for service in ("", SERVICE):
                    reply = await health.Check(health_pb2.HealthCheckRequest(service=service))  # type: ignore[attr-defined]  # the grpc health stubs declare no methods on HealthStub
                    assert reply.status == health_pb2.HealthCheckResponse.SERVING
            assert [e.address for e in (await s.admin.status())[0].endpoints] == [provider.address]
            # `subhive status` (its own event loop, so a thread) shows where the hive serves.
            code = await asyncio.get_running_loop().run_in_executor(
                None, lambda: main(["status", "-C", str(workspace)])
            )
            assert code == 0
            assert f"serves inventory v1 at {provider.address}" in capsys.readouterr().out
            await provider.stop()
            await provider.stop()  # idempotent
            with pytest.raises(NoEndpoint):
                await connect_grpc(s.web, "inventory", 1)

    run(scenario())


@pytest.mark.parametrize(
    ("sku", "status", "error", "code"),
    [
        ("", grpc.StatusCode.INVALID_ARGUMENT, InputError, "stock.sku"),
        ("gone", grpc.StatusCode.NOT_FOUND, NotFound, "stock.unknown"),
        ("locked", grpc.StatusCode.FAILED_PRECONDITION, Conflict, "stock.counting"),
    ],
)
def test_a_providers_errors_leave_as_their_status_and_come_back_as_themselves(
    workspace: Path,
    modules: tuple[ModuleType, ModuleType],
    *,
    sku: str,
    status: grpc.StatusCode,
    error: type[Exception],
    code: str,
) -> None:
    async def scenario() -> None:
        async with shop(workspace) as s:
            _, servicers = serving(modules)
            async with await serve_grpc(s.db, "inventory", 1, servicers, keys=s.keys["db"]):
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    await get_stock(modules, s.web, s.keys["web"], sku)
            assert caught.value.code() == status
            assert json.loads(caught.value.details() or "")["error"] == code
            rebuilt = error_from_rpc(caught.value)
            assert isinstance(rebuilt, error)
            assert rebuilt.code == code

    run(scenario())


def test_anything_else_is_internal_and_leaks_nothing(workspace: Path, modules: tuple[ModuleType, ModuleType]) -> None:
    async def scenario() -> None:
        pb, pb_grpc = modules
        async with shop(workspace) as s:
            _, servicers = serving(modules)
            async with (
                await serve_grpc(s.db, "inventory", 1, servicers, keys=s.keys["db"]),
                await connect_grpc(s.web, "inventory", 1, keys=s.keys["web"]) as channel,
            ):
                stub = pb_grpc.InventoryStub(channel)
                with pytest.raises(grpc.aio.AioRpcError) as unary:
                    await stub.GetStock(pb.GetStockRequest(sku="bug"))
                with pytest.raises(grpc.aio.AioRpcError) as stream:
                    _ = [m async for m in stub.WatchStock(pb.GetStockRequest(sku="bug"))]
            for caught in (unary.value, stream.value):
                assert caught.code() == grpc.StatusCode.INTERNAL
                details = caught.details() or ""
                assert json.loads(details)["error"] == "internal"
                for leak in ("secret", "KeyError", "Traceback"):
                    assert leak not in details
            assert error_from_rpc(unary.value).code == "rpc.internal"

    run(scenario())


def test_an_unregistered_contract_is_rpc_no_endpoint(workspace: Path) -> None:
    async def scenario() -> None:
        async with shop(workspace) as s:
            with pytest.raises(NoEndpoint) as caught:
                await connect_grpc(s.web, "inventory", 1)
            assert caught.value.code == "rpc.no_endpoint"
            assert "inventory v1" in caught.value.message
            assert "'db'" in (caught.value.hint or "")
            assert isinstance(caught.value, NotFound)

    run(scenario())


def test_a_hive_cannot_register_an_endpoint_for_a_contract_it_does_not_provide(
    workspace: Path, modules: tuple[ModuleType, ModuleType]
) -> None:
    async def scenario() -> None:
        async with shop(workspace) as s:
            _, servicers = serving(modules)
            with pytest.raises(PermissionDenied) as caught:
                await serve_grpc(s.web, "inventory", 1, servicers, keys=s.keys["web"])
            assert caught.value.code == "auth.not_provider"
            metadata = (("authorization", f"Bearer {s.tokens['web']}"),)
            async with grpc.aio.insecure_channel(s.server.address) as channel:
                with pytest.raises(grpc.aio.AioRpcError) as raw:
                    await root_pb_grpc.RootHiveStub(channel).RegisterEndpoint(
                        root_pb.RegisterEndpointRequest(contract="inventory", major=1, address="127.0.0.1:1"),
                        metadata=metadata,
                    )
            assert raw.value.code() == grpc.StatusCode.PERMISSION_DENIED
            assert not any(h.endpoints for h in await s.admin.status())

    run(scenario())


def test_a_server_without_the_contracts_service_is_refused_and_servicers_are_required(workspace: Path) -> None:
    async def scenario() -> None:
        async with shop(workspace) as s:
            # Any servicer of another service will do: it is refused before a method of it could be called.
            wrong = [(root_pb_grpc.add_RootHiveServicer_to_server, root_pb_grpc.RootHiveServicer())]  # type: ignore[abstract]
            with pytest.raises(InputError) as caught:
                await serve_grpc(s.db, "inventory", 1, wrong, keys=s.keys["db"])
            assert caught.value.code == "endpoint.service_missing"
            with pytest.raises(UsageError) as empty:
                await serve_grpc(s.db, "inventory", 1, [], keys=s.keys["db"])
            assert empty.value.code == "rpc.servicers"
            assert await s.admin.status()
            assert not any(h.endpoints for h in await s.admin.status())

    run(scenario())


def test_a_hive_that_neither_consumes_nor_provides_cannot_look_up(
    workspace: Path, modules: tuple[ModuleType, ModuleType]
) -> None:
    async def scenario() -> None:
        async with shop(workspace) as s:
            _, servicers = serving(modules)
            async with await serve_grpc(s.db, "inventory", 1, servicers, keys=s.keys["db"]):
                with pytest.raises(PermissionDenied) as caught:
                    await connect_grpc(s.ops, "inventory", 1)
            assert caught.value.code == "auth.not_consumer"

    run(scenario())


# -- who may call ---------------------------------------------------------------------------------------------


def test_a_provider_without_keys_does_not_start_unless_told_to_serve_anyone(
    workspace: Path, modules: tuple[ModuleType, ModuleType]
) -> None:
    async def scenario() -> None:
        async with shop(workspace) as s:
            _, servicers = serving(modules)
            with pytest.raises(UsageError) as caught:
                await serve_grpc(s.db, "inventory", 1, servicers)
            assert caught.value.code == "rpc.no_keys"
            assert "anonymous=True" in (caught.value.hint or "")
            assert not any(h.endpoints for h in await s.admin.status())  # nothing was registered
            async with (
                await serve_grpc(s.db, "inventory", 1, servicers, anonymous=True),
                await connect_grpc(s.web, "inventory", 1) as anonymous,
            ):  # no keys: no credentials sent
                reply = await modules[1].InventoryStub(anonymous).GetStock(modules[0].GetStockRequest(sku="A-1"))
            assert reply.on_hand == 7

    run(scenario())


def test_the_forged_call_is_refused_and_a_consumer_accepted_while_serving_gets_in(
    workspace: Path, modules: tuple[ModuleType, ModuleType], tmp_path: Path
) -> None:
    """The finding: any local process could call db's service. Now an anonymous caller and a hive that does
    not consume the contract are refused; once ``ops`` declares the requirement and the lock says so, the
    keys issued from it let ops in, and the provider was never restarted."""

    async def scenario() -> None:
        pb, pb_grpc = modules
        async with shop(workspace) as s:
            master = secrets.token_bytes(32)
            directory = tmp_path / "keys"
            paths = write_keys(directory, issue_keys(master, s.tokens, Lock.load(workspace)))
            _, servicers = serving(modules)
            async with await serve_grpc(s.db, "inventory", 1, servicers, keys=KeyFile(paths["db"])) as provider:
                request = pb.GetStockRequest(sku="A-1")
                ops_keys = KeyFile(paths["ops"])
                async with (
                    grpc.aio.insecure_channel(provider.address) as anonymous,
                    grpc.aio.insecure_channel(
                        provider.address, interceptors=caller_interceptors(ops_keys, "db")
                    ) as ops,
                ):
                    with pytest.raises(grpc.aio.AioRpcError) as forged:
                        await pb_grpc.InventoryStub(anonymous).GetStock(request)
                    with pytest.raises(grpc.aio.AioRpcError) as outsider:
                        await pb_grpc.InventoryStub(ops).GetStock(request)
                    await s.ops.declare_requirement("inventory", "^1.0")
                    lock = await settled_lock(workspace, lambda lock: any("ops" in e.consumers for e in lock))
                    write_keys(directory, issue_keys(master, s.tokens, lock))  # what up does when the lock changes
                    reply = await pb_grpc.InventoryStub(ops).GetStock(request)
                    async with await connect_grpc(s.ops, "inventory", 1, keys=ops_keys) as found:
                        again = await pb_grpc.InventoryStub(found).GetStock(request)
        assert forged.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert isinstance(error_from_rpc(forged.value), Unauthenticated)
        assert outsider.value.code() == grpc.StatusCode.PERMISSION_DENIED  # a known hive, not a consumer
        denied = error_from_rpc(outsider.value)
        assert isinstance(denied, PermissionDenied)
        assert denied.code == "auth.not_consumer"
        assert denied.message.startswith("hive 'ops' does not consume inventory v1: db refuses its call to /")
        assert (reply.sku, again.sku) == ("A-1", "A-1")

    run(scenario())


# -- durability --------------------------------------------------------------------------------------------------


def test_registrations_survive_a_root_restart(workspace: Path, modules: tuple[ModuleType, ModuleType]) -> None:
    async def scenario() -> None:
        _, servicers = serving(modules)
        async with AsyncExitStack() as provider_process:
            async with shop(workspace) as s:
                tokens, keys = s.tokens, s.keys
                # The provider is a process of its own: its root client and server outlive this root.
                db = await provider_process.enter_async_context(RootClient(s.server.address, tokens["db"]))
                provider = await serve_grpc(db, "inventory", 1, servicers, keys=keys["db"])
                provider_process.push_async_callback(provider.stop, None)  # then: its root is gone, a warning
            # The root starts again, on another port; the provider kept serving.
            async with (
                await RootServer.start(workspace, codegen=False) as server,
                RootClient(server.address, tokens["web"]) as web,
            ):
                endpoint = await web.lookup_endpoint("inventory", 1)
                assert endpoint.address == provider.address
                assert (await get_stock(modules, web, keys["web"], "C-3")).sku == "C-3"
                frames = [f async for f in _frames(web, lambda f: f.kind == "endpoint_registered")]
                assert frames[-1].data["address"] == provider.address

    run(scenario())


async def _frames(client: RootClient, last: Callable[[Any], bool]) -> AsyncIterator[Any]:
    async for frame in client.watch(0):
        yield frame
        if last(frame):
            return
