"""Repair proposals over the root's gRPC service: a hive reports for itself, humans see and decide."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from subhive.errors import InputError
from subhive.root_hive._client import RootClient, admin_token_of
from subhive.root_hive._errors import PermissionDenied
from subhive.root_hive._proto import root_hive_pb2 as pb
from subhive.root_hive._proto import root_hive_pb2_grpc as pb_grpc
from subhive.root_hive._service import RootServer
from tests.kit import run


def test_a_hive_reports_twice_and_a_human_sees_one_counted_repair(workspace: Path) -> None:
    async def scenario() -> None:
        async with (
            await RootServer.start(workspace) as server,
            RootClient(server.address, admin_token_of(workspace)) as admin,
        ):
            backend = admin.with_token((await admin.register_hive("backend")).token)
            first = await backend.propose_repair(
                code="handler.failed",
                message="KeyError: 'sku'",
                contract="orders",
                operation="place_order",
                sample="{}",
            )
            second = await backend.propose_repair(
                code="handler.failed", message="KeyError: 'sku'", contract="orders", operation="place_order"
            )
            assert first.id == second.id
            assert second.repair is not None
            assert second.repair.count == 2

            (listed,) = await admin.approvals()
            assert (listed.kind, listed.proposer, listed.version, listed.reason) == (
                "repair",
                "backend",
                None,
                "repair.proposed",
            )
            assert listed.repair == second.repair
            shown = await admin.approval(first.id)
            assert shown.repair is not None
            assert shown.repair.operation == "place_order"

            outcome = await admin.approve(first.id, note="on it")
            assert (outcome.kind, outcome.code, outcome.version) == ("repair", "repair.accepted", None)
            assert (await admin.approval(first.id)).status == "approved"

    run(scenario())


def test_a_1_1_0_client_listing_approvals_never_sees_a_repair(workspace: Path) -> None:
    async def scenario() -> None:
        async with (
            await RootServer.start(workspace) as server,
            RootClient(server.address, admin_token_of(workspace)) as admin,
        ):
            backend = admin.with_token((await admin.register_hive("backend")).token)
            await backend.propose_repair(code="handler.failed", message="boom", subject="orders.v1.place_order")
            metadata = (("authorization", f"Bearer {admin_token_of(workspace)}"),)
            async with grpc.aio.insecure_channel(server.address) as channel:
                stub = pb_grpc.RootHiveStub(channel)
                old = await stub.ListApprovals(pb.ListApprovalsRequest(status="all"), metadata=metadata)
                new = await stub.ListApprovals(pb.ListApprovalsRequest(status="all", kind="repair"), metadata=metadata)
            assert list(old.approvals) == []  # its Approval has no kind and a version it would parse
            assert [a.kind for a in new.approvals] == ["repair"]

    run(scenario())


def test_a_hive_reports_only_for_itself(workspace: Path) -> None:
    async def scenario() -> None:
        async with (
            await RootServer.start(workspace) as server,
            RootClient(server.address, admin_token_of(workspace)) as admin,
        ):
            backend = admin.with_token((await admin.register_hive("backend")).token)
            await admin.register_hive("web")
            with pytest.raises(PermissionDenied) as other:
                await backend.propose_repair(code="x", message="y", contract="orders", hive="web")
            assert other.value.code == "auth.not_self"
            with pytest.raises(InputError) as unnamed:
                await admin.propose_repair(code="x", message="y", contract="orders")
            assert unnamed.value.code == "repair.no_hive"
            on_behalf = await admin.propose_repair(code="x", message="y", contract="orders", hive="web")
            assert on_behalf.proposer == "web"
            with pytest.raises(InputError) as too_large:
                await backend.propose_repair(code="x", message="y", contract="orders", sample="x" * 4097)
            assert too_large.value.code == "repair.sample_too_large"
            with pytest.raises(PermissionDenied):
                await backend.approve(on_behalf.id)

    run(scenario())
