"""Codegen runs by itself when the root accepts a contract: served over gRPC, or run in-process by the CLI."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

from subhive.cli import main
from subhive.codegen._trigger import affected_hives
from subhive.root_hive._client import RootClient, admin_token_of
from subhive.root_hive._service import RootServer
from tests.kit import run


def _orders_1_2(shop: Path) -> Path:
    directory = shop / "contracts" / "orders" / "1.2.0"
    shutil.copytree(shop / "contracts" / "orders" / "1.1.0", directory)
    manifest = directory / "contract.yaml"
    manifest.write_text(manifest.read_text().replace("version: 1.1.0", "version: 1.2.0"))
    return directory


def _versions(shop: Path) -> dict[str, str]:
    return {
        hive: json.loads((shop / "stubs" / hive / "orders_v1" / "contract.json").read_text())["version"]
        for hive in ("web", "backend")
    }


def test_affected_hives_are_the_providers_and_consumers_of_a_contract(shop: Path) -> None:
    assert affected_hives(shop, {"orders"}) == ["backend", "web"]
    assert affected_hives(shop, {"db_storage"}) == ["api", "db"]
    assert affected_hives(shop, {"nobody_uses_this"}) == []


def test_a_contract_accepted_by_the_served_root_regenerates_the_stubs_that_use_it(shop: Path) -> None:
    directory = _orders_1_2(shop)
    untouched = {p: p.stat().st_mtime_ns for p in (shop / "stubs" / "db").rglob("*") if p.is_file()}

    async def scenario() -> None:
        async with await RootServer.start(shop) as server:
            async with RootClient(server.address, admin_token_of(shop)) as admin:
                outcome = await admin.propose(directory, on_behalf_of="backend")
                assert outcome.status == "accepted"
            assert server.codegen is not None
            await asyncio.get_running_loop().run_in_executor(None, server.codegen.flush)

    run(scenario())
    assert _versions(shop) == {"web": "1.2.0", "backend": "1.2.0"}
    assert {p: p.stat().st_mtime_ns for p in (shop / "stubs" / "db").rglob("*") if p.is_file()} == untouched


def test_a_root_started_without_codegen_leaves_the_stubs_alone(shop: Path) -> None:
    directory = _orders_1_2(shop)

    async def scenario() -> None:
        async with await RootServer.start(shop, codegen=False) as server:
            assert server.codegen is None
            async with RootClient(server.address, admin_token_of(shop)) as admin:
                assert (await admin.propose(directory, on_behalf_of="backend")).status == "accepted"

    run(scenario())
    assert _versions(shop) == {"web": "1.1.0", "backend": "1.1.0"}


def test_a_proposal_run_in_process_by_the_cli_regenerates_before_it_returns(shop: Path) -> None:
    directory = _orders_1_2(shop)
    assert main(["contract", "propose", str(directory)]) == 0  # the workspace is found from the directory
    assert _versions(shop) == {"web": "1.2.0", "backend": "1.2.0"}
