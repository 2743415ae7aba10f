"""A provider serves plain gRPC on loopback only: anywhere else it needs TLS, and a consumer verifies it with
the CA (or refuses to send its token in clear). Real certificates made by openssl, a real root, real servers."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import grpc
import pytest

from subhive.errors import InputError
from subhive.root_hive import NotFound, ServerTls
from subhive.rpc import connect_grpc, serve_grpc
from tests.kit import run, self_signed

from ._inventory import generated_modules
from .test_rpc import Shop, serving, shop


@pytest.fixture(scope="module")
def modules(tmp_path_factory: pytest.TempPathFactory) -> tuple[ModuleType, ModuleType]:
    return generated_modules(tmp_path_factory.mktemp("inventory"))


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ServerTls]:
    directory = tmp_path_factory.mktemp("certs")
    return {"db": self_signed(directory, "db"), "stranger": self_signed(directory, "stranger")}


async def _stock(s: Shop, modules: tuple[ModuleType, ModuleType], ca_file: Path | None) -> int:
    """What web reads of db's stock of A-1 over gRPC, verifying db's certificate with ``ca_file``."""
    pb, pb_grpc = modules
    async with await connect_grpc(s.web, "inventory", 1, keys=s.keys["web"], ca_file=ca_file) as channel:
        reply = await pb_grpc.InventoryStub(channel).GetStock(pb.GetStockRequest(sku="A-1"), timeout=10)
    return int(reply.on_hand)


def test_a_provider_on_every_interface_without_tls_is_refused_before_it_opens_anything(
    workspace: Path, modules: tuple[ModuleType, ModuleType]
) -> None:
    async def scenario() -> None:
        async with shop(workspace) as s:
            _, servicers = serving(modules)
            with pytest.raises(InputError) as info:
                await serve_grpc(s.db, "inventory", 1, servicers, keys=s.keys["db"], host="0.0.0.0")
            assert info.value.code == "rpc.insecure_address"
            assert "inventory v1" in info.value.message
            assert info.value.hint is not None
            assert "tls=" in info.value.hint
            with pytest.raises(NotFound):  # nothing was registered
                await s.web.lookup_endpoint("inventory", 1)

    run(scenario())


def test_a_tls_provider_answers_only_consumers_that_verify_it_with_its_ca(
    workspace: Path, modules: tuple[ModuleType, ModuleType], certs: dict[str, ServerTls]
) -> None:
    async def scenario() -> None:
        async with shop(workspace) as s:
            _, servicers = serving(modules)
            async with await serve_grpc(s.db, "inventory", 1, servicers, keys=s.keys["db"], tls=certs["db"]):
                assert await _stock(s, modules, certs["db"].cert_file) == 7
                for ca_file in (None, certs["stranger"].cert_file):  # plain gRPC; a CA that did not sign it
                    with pytest.raises(grpc.aio.AioRpcError) as info:
                        await _stock(s, modules, ca_file)
                    assert info.value.code() == grpc.StatusCode.UNAVAILABLE

    run(scenario())


def test_beyond_loopback_a_consumer_needs_the_ca_and_never_sends_its_token_in_clear(
    workspace: Path, modules: tuple[ModuleType, ModuleType], certs: dict[str, ServerTls]
) -> None:
    async def scenario() -> None:
        async with shop(workspace) as s:
            _, servicers = serving(modules)
            async with await serve_grpc(
                s.db, "inventory", 1, servicers, keys=s.keys["db"], host="0.0.0.0", tls=certs["db"]
            ) as provider:
                assert provider.address.startswith("0.0.0.0:")
                with pytest.raises(InputError) as info:
                    await connect_grpc(s.web, "inventory", 1, keys=s.keys["web"])
                assert info.value.code == "rpc.insecure_endpoint"
                assert info.value.hint is not None
                assert "ca_file" in info.value.hint
                assert await _stock(s, modules, certs["db"].cert_file) == 7

    run(scenario())


def test_files_that_are_no_certificate_are_errors_naming_them(
    workspace: Path, modules: tuple[ModuleType, ModuleType], certs: dict[str, ServerTls], tmp_path: Path
) -> None:
    not_pem = tmp_path / "not.pem"
    not_pem.write_text("not a certificate\n")

    async def scenario() -> None:
        async with shop(workspace) as s:
            _, servicers = serving(modules)
            with pytest.raises(InputError) as served:  # the key of another certificate
                await serve_grpc(
                    s.db,
                    "inventory",
                    1,
                    servicers,
                    keys=s.keys["db"],
                    tls=ServerTls(certs["db"].cert_file, certs["stranger"].key_file),
                )
            assert served.value.code == "rpc.tls_invalid"
            assert served.value.location is not None
            assert served.value.location.file == str(certs["db"].cert_file)
            async with await serve_grpc(s.db, "inventory", 1, servicers, keys=s.keys["db"], tls=certs["db"]):
                with pytest.raises(InputError) as connected:
                    await connect_grpc(s.web, "inventory", 1, keys=s.keys["web"], ca_file=not_pem)
                assert connected.value.code == "rpc.tls_ca_invalid"
                assert connected.value.location is not None
                assert connected.value.location.file == str(not_pem)

    run(scenario())


def test_a_provider_registers_the_host_it_advertises_and_is_reached_there(
    workspace: Path, modules: tuple[ModuleType, ModuleType], certs: dict[str, ServerTls]
) -> None:
    """``advertise``: the host consumers dial (a name its certificate holds), not the interface it binds."""

    async def scenario() -> None:
        async with shop(workspace) as s:
            _, servicers = serving(modules)
            async with await serve_grpc(
                s.db, "inventory", 1, servicers, keys=s.keys["db"], tls=certs["db"], advertise="localhost"
            ) as server:
                port = server.address.rsplit(":", 1)[1]
                assert server.address == f"localhost:{port}"
                assert (await s.web.lookup_endpoint("inventory", 1)).address == f"localhost:{port}"
                assert await _stock(s, modules, certs["db"].cert_file) == 7

    run(scenario())
