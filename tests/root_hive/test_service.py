"""The root hive's gRPC service end to end: a real server on 127.0.0.1 (port 0), real clients, real files.

The engine's rules are tested in test_engine.py; here it is the wire: authentication and roles, status codes
with their JSON details, health and reflection, watchers with resume tokens, and state across a restart.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from subhive.errors import InputError
from subhive.root_hive._client import RootClient, admin_token_of, contract_files
from subhive.root_hive._errors import Conflict, NotFound, PermissionDenied, Unauthenticated
from subhive.root_hive._proto import _generate
from subhive.root_hive._proto import root_hive_pb2 as pb
from subhive.root_hive._proto import root_hive_pb2_grpc as pb_grpc
from subhive.root_hive._service import SERVICE_FILE, SERVICE_NAME, RootServer
from tests.kit import run

REPO = Path(__file__).resolve().parents[2]
ORDERS = REPO / "contracts" / "orders"


def orders(version: str) -> dict[str, bytes]:
    return contract_files(ORDERS / version)


def with_provider(files: dict[str, bytes], provider: str) -> dict[str, bytes]:
    manifest = files["contract.yaml"].decode().replace("provider: backend", f"provider: {provider}")
    return {**files, "contract.yaml": manifest.encode()}


async def register(server: RootServer, *names: str) -> dict[str, str]:
    async with RootClient(server.address, admin_token_of(server.workspace_root)) as admin:
        return {name: (await admin.register_hive(name, kind="backend")).token for name in names}


async def collect(address: str, token: str, after: int, until: Callable[[list[Any]], bool]) -> list[Any]:
    frames: list[Any] = []
    async with RootClient(address, token) as client:
        async for frame in client.watch(after):
            frames.append(frame)
            if until(frames):
                break
    return frames


def has_ready(version: str) -> Callable[[list[Any]], bool]:
    return lambda frames: any(f.kind == "contract_ready" and f.data.get("version") == version for f in frames)


# -- the generated modules ------------------------------------------------------------------------------------


def test_generated_modules_are_what_protoc_makes_of_the_contract_today() -> None:
    fresh = _generate.generate()
    here = Path(_generate.__file__).parent
    assert sorted(fresh) == sorted(_generate.GENERATED)
    for name, data in fresh.items():
        assert (here / name).read_bytes() == data, f"{name} is stale: run python -m subhive.root_hive._proto._generate"


def test_generated_modules_say_do_not_edit_and_import_their_sibling_relatively() -> None:
    here = Path(_generate.__file__).parent
    for name in _generate.GENERATED:
        assert (
            (here / name)
            .read_text()
            .startswith("# Generated from contracts/root-hive/1.5.0/root_hive.proto; do not edit.\n")
        )
    grpc_module = (here / "root_hive_pb2_grpc.py").read_text()
    assert "from . import root_hive_pb2 as root__hive__pb2" in grpc_module
    assert "\nimport root_hive_pb2" not in grpc_module


def test_the_root_hive_contract_passes_lint() -> None:
    from subhive.contract import lint_paths

    result = lint_paths([REPO / "contracts" / "root-hive"])
    assert [p.code for p in result.problems] == []
    assert sorted((c.name, str(c.version)) for c in result.contracts) == [
        ("root-hive", "1.0.0"),
        ("root-hive", "1.1.0"),
        ("root-hive", "1.2.0"),
        ("root-hive", "1.3.0"),
        ("root-hive", "1.4.0"),
        ("root-hive", "1.5.0"),
    ]


def test_root_hive_1_1_0_only_adds_the_batched_watch_so_it_is_an_honest_minor() -> None:
    from subhive.compat.contract_check import check_contract
    from subhive.contract import load_contract

    base = REPO / "contracts" / "root-hive"
    check = check_contract(load_contract(base / "1.1.0"), load_contract(base / "1.0.0"))
    assert check.semver_ok
    assert check.compatible
    assert str(check.required_bump) == "minor"


def test_root_hive_1_2_0_only_adds_endpoints_and_repairs_so_it_is_an_honest_minor() -> None:
    from subhive.compat.contract_check import check_contract
    from subhive.contract import load_contract

    base = REPO / "contracts" / "root-hive"
    check = check_contract(load_contract(base / "1.2.0"), load_contract(base / "1.1.0"))
    assert check.semver_ok
    assert check.compatible
    assert str(check.required_bump) == "minor"


def test_root_hive_1_3_0_only_adds_tool_call_approvals_so_it_is_an_honest_minor() -> None:
    from subhive.compat.contract_check import check_contract
    from subhive.contract import load_contract

    base = REPO / "contracts" / "root-hive"
    check = check_contract(load_contract(base / "1.3.0"), load_contract(base / "1.2.0"))
    assert check.semver_ok
    assert check.compatible
    assert str(check.required_bump) == "minor"


def test_root_hive_1_4_0_only_adds_reported_agent_steps_so_it_is_an_honest_minor() -> None:
    from subhive.compat.contract_check import check_contract
    from subhive.contract import load_contract

    base = REPO / "contracts" / "root-hive"
    check = check_contract(load_contract(base / "1.4.0"), load_contract(base / "1.3.0"))
    assert check.semver_ok
    assert check.compatible
    assert str(check.required_bump) == "minor"


def test_root_hive_1_5_0_only_adds_who_decided_so_it_is_an_honest_minor() -> None:
    from subhive.compat.contract_check import check_contract
    from subhive.contract import load_contract

    base = REPO / "contracts" / "root-hive"
    check = check_contract(load_contract(base / "1.5.0"), load_contract(base / "1.4.0"))
    assert check.semver_ok
    assert check.compatible
    assert str(check.required_bump) == "minor"


def test_accepted_root_hive_versions_are_never_edited() -> None:
    from subhive.root_hive import contract_hash

    base = REPO / "contracts" / "root-hive"
    assert contract_hash(base / "1.0.0") == "sha256:481e36ca13667786ffa42b1f6fafc21b2b1df01dcbb043650cd9e04112a04584"
    assert contract_hash(base / "1.1.0") == "sha256:daf0c726fe7de2acb3f7be23f95e35cebd4b8f7e441814f68190562743839067"


def test_both_watch_rpcs_send_the_same_frames_in_order(workspace: Path) -> None:
    async def scenario() -> tuple[list[tuple[int, str]], list[tuple[int, str]], int]:
        async with await RootServer.start(workspace) as server:
            await register(server, "a", "b", "c")
            admin = admin_token_of(workspace)
            metadata = (("authorization", f"Bearer {admin}"),)
            async with grpc.aio.insecure_channel(server.address) as channel:
                stub = pb_grpc.RootHiveStub(channel)
                single: list[tuple[int, str]] = []
                async for frame in stub.WatchEvents(pb.WatchEventsRequest(after=1), metadata=metadata):
                    single.append((frame.seq, json.loads(frame.data_json)["name"]))
                    if len(single) == 2:
                        break
                batched: list[tuple[int, str]] = []
                messages = 0
                async for batch in stub.WatchEventBatches(pb.WatchEventsRequest(after=1), metadata=metadata):
                    messages += 1
                    batched += [(f.seq, json.loads(f.data_json)["name"]) for f in batch.frames]
                    if len(batched) >= 2:
                        break
                return single, batched, messages

    single, batched, messages = run(scenario())
    assert single == [(2, "b"), (3, "c")]
    assert batched == single
    assert messages == 1  # the backlog after the resume token comes as one message


# -- plumbing: health, reflection, the address file, authentication -----------------------------------------


def test_health_and_reflection_are_on_and_the_address_is_recorded(workspace: Path) -> None:
    async def scenario() -> None:
        async with await RootServer.start(workspace) as server:
            assert server.port > 0
            recorded = json.loads((workspace / SERVICE_FILE).read_text())
            assert recorded["address"] == server.address
            async with grpc.aio.insecure_channel(server.address) as channel:
                health = health_pb2_grpc.HealthStub(channel)
                for service in ("", SERVICE_NAME):
                    reply = await health.Check(health_pb2.HealthCheckRequest(service=service))  # type: ignore[attr-defined]  # the grpc health stubs declare no methods on HealthStub
                    assert reply.status == health_pb2.HealthCheckResponse.SERVING
                # The reflection stubs take only a sync channel and leave the method untyped.
                stub = reflection_pb2_grpc.ServerReflectionStub(channel)  # type: ignore[arg-type]
                request = reflection_pb2.ServerReflectionRequest(list_services="")
                names = set()
                async for reply in stub.ServerReflectionInfo(iter([request])):  # type: ignore[operator]
                    names |= {s.name for s in reply.list_services_response.service}
                assert {SERVICE_NAME, "grpc.health.v1.Health"} <= names
        assert not (workspace / SERVICE_FILE).exists()

    run(scenario())


@pytest.mark.parametrize(
    ("metadata", "code"),
    [
        ((), "auth.missing"),
        ((("authorization", "Token abc"),), "auth.malformed"),
        ((("authorization", "Bearer not-a-token"),), None),
    ],
)
def test_a_call_without_a_valid_token_is_unauthenticated(
    workspace: Path, metadata: tuple[tuple[str, str], ...], code: str | None
) -> None:
    async def scenario() -> None:
        async with await RootServer.start(workspace) as server, grpc.aio.insecure_channel(server.address) as ch:
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await pb_grpc.RootHiveStub(ch).ListContracts(pb.ListContractsRequest(), metadata=metadata)
            assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
            text = caught.value.details() or ""
            details = json.loads(text)
            assert details["error"] == (code or details["error"])
            assert details["error"].startswith("auth.")
            assert "Traceback" not in text

    run(scenario())


def test_hives_cannot_register_hives_or_decide_approvals(workspace: Path) -> None:
    async def scenario() -> None:
        async with await RootServer.start(workspace) as server:
            tokens = await register(server, "backend")
            async with RootClient(server.address, tokens["backend"]) as hive:
                with pytest.raises(PermissionDenied) as caught:
                    await hive.register_hive("intruder")
                assert caught.value.code == "auth.not_admin"
                with pytest.raises(PermissionDenied):
                    await hive.approve("anything")
                with pytest.raises(PermissionDenied):
                    await hive.reject("anything", reason="no")

    run(scenario())


# -- the negotiation over the wire --------------------------------------------------------------------------


def test_negotiation_end_to_end_with_watchers_and_a_restart(workspace: Path) -> None:
    async def first_run() -> tuple[dict[str, str], str, int]:
        async with await RootServer.start(workspace) as server:
            admin_token = admin_token_of(workspace)
            tokens = await register(server, "backend", "ui", "db")
            async with RootClient(server.address, tokens["ui"]) as ui:
                need = await ui.declare_requirement("orders", "^1.0")
            assert need.satisfied_by is None
            assert need.announcement_id

            watchers = [
                asyncio.create_task(collect(server.address, admin_token, 0, has_ready("1.1.0"))) for _ in range(3)
            ]
            async with RootClient(server.address, tokens["backend"]) as backend:
                first = await backend.propose(orders("1.0.0"))
                assert (first.status, str(first.version)) == ("accepted", "1.0.0")
                minor = await backend.propose(orders("1.1.0"))
                assert (minor.status, str(minor.version)) == ("accepted", "1.1.0")
                streams = await asyncio.gather(*watchers)
                # Every watcher sees every frame, in order, with consecutive resume tokens from 1.
                for frames in streams:
                    assert [f.seq for f in frames] == list(range(1, len(frames) + 1))
                    assert [f.seq for f in frames] == [f.seq for f in streams[0]]
                kinds = [f.kind for f in streams[0]]
                for kind in ("proposal_received", "verdict", "contract_ready"):
                    assert kind in kinds
                assert kinds.index("proposal_received") < kinds.index("verdict") < kinds.index("contract_ready")

                major = await backend.propose(orders("2.0.0"))
                assert (major.status, str(major.version)) == ("pending", "2.0.0")
                assert major.check is not None
                assert major.check["compatible"] is False
            async with RootClient(server.address, admin_token) as admin:
                pending = await admin.approvals()
                assert [(a.id, str(a.version)) for a in pending] == [(major.id, "2.0.0")]
                last_seq = (
                    await collect(
                        server.address, admin_token, 0, lambda fs: any(f.kind == "pending_approval" for f in fs)
                    )
                )[-1].seq
            assert not (workspace / "contracts" / "orders" / "2.0.0").exists()
            return tokens, major.id, last_seq

    tokens, approval_id, last_seq = run(first_run())

    async def second_run() -> None:
        async with await RootServer.start(workspace) as server:
            admin_token = admin_token_of(workspace)
            async with RootClient(server.address, admin_token) as admin:
                # The pending approval survived the restart, and so did the hives' tokens.
                assert [a.id for a in await admin.approvals()] == [approval_id]
                async with RootClient(server.address, tokens["ui"]) as ui:
                    with pytest.raises(PermissionDenied):
                        await ui.approve(approval_id)
                # A watcher resuming from its last token gets exactly the frames after it.
                resumed = asyncio.create_task(collect(server.address, admin_token, last_seq, has_ready("2.0.0")))
                await asyncio.sleep(0.05)
                approved = await admin.approve(approval_id, note="ui migrates later")
                assert (approved.status, str(approved.version)) == ("accepted", "2.0.0")
                frames = await resumed
                assert frames[0].seq == last_seq + 1
                assert [f.seq for f in frames] == list(range(last_seq + 1, last_seq + 1 + len(frames)))

                listed = {str(v.version): v for c in await admin.contracts("orders") for v in c.versions}
                assert {"1.0.0", "1.1.0", "2.0.0"} <= set(listed)
                # The old major stays beside the new one while the ui hive's ^1.0 needs it.
                assert listed["1.1.0"].status == "active"
                assert listed["1.1.0"].consumers.get("ui") == "^1.0"
                assert listed["2.0.0"].status == "active"
            assert (workspace / "contracts" / "orders" / "2.0.0" / "contract.yaml").is_file()
            assert (workspace / "contracts" / "orders" / "1.1.0" / "contract.yaml").is_file()

            async with RootClient(server.address, admin_token) as admin:
                tree = {h.name: h for h in await admin.status()}
            assert {"backend", "ui", "db"} <= set(tree)
            assert "orders" in tree["backend"].provides
            assert [c["contract"] for c in tree["ui"].consumes] == ["orders"]

    run(second_run())


def test_a_hive_cannot_propose_another_providers_contract(workspace: Path) -> None:
    async def scenario() -> None:
        async with await RootServer.start(workspace) as server:
            tokens = await register(server, "backend", "db")
            async with RootClient(server.address, tokens["db"]) as db:
                with pytest.raises(PermissionDenied):
                    await db.propose(orders("1.0.0"))  # the manifest says provider: backend
                with pytest.raises(PermissionDenied) as caught:
                    await db.propose(orders("1.0.0"), on_behalf_of="backend")
                assert caught.value.code == "auth.not_provider"
            async with RootClient(server.address, tokens["backend"]) as backend:
                await backend.propose(orders("1.0.0"))
            async with RootClient(server.address, tokens["db"]) as db:
                # Taking over an existing contract by naming itself the provider is no minor change.
                with pytest.raises(InputError) as takeover:
                    await db.propose(with_provider(orders("1.1.0"), "db"))
                assert takeover.value.code == "proposal.semver"
                assert "provider" in takeover.value.message
            async with RootClient(server.address, admin_token_of(workspace)) as admin:
                versions = [str(v.version) for c in await admin.contracts("orders") for v in c.versions]
            assert versions == ["1.0.0"]

    run(scenario())


def test_statuses_carry_the_problems_and_changes_as_json(workspace: Path) -> None:
    async def scenario() -> None:
        async with await RootServer.start(workspace) as server:
            tokens = await register(server, "backend")
            async with RootClient(server.address, tokens["backend"]) as backend:
                broken = {
                    **orders("1.0.0"),
                    "contract.yaml": b"contract: orders\nversion: 1.0.0\nprovider: backend\n"
                    b"operations:\n  place_order:\n    input: missing.json\n    output: missing.json\n",
                }
                with pytest.raises(InputError) as invalid:
                    await backend.propose(broken)
                assert invalid.value.problems
                assert all(p.code for p in invalid.value.problems)

                await backend.propose(orders("1.0.0"))
                # 2.0.0's content relabelled 1.2.0: breaking changes under a minor bump -> dishonest semver.
                dishonest = {name: data.replace(b"2.0.0", b"1.2.0") for name, data in orders("2.0.0").items()}
                with pytest.raises(InputError) as semver:
                    await backend.propose(dishonest)
                details: dict[str, Any] = semver.value.to_dict()
                assert semver.value.code == "proposal.semver"
                assert details["check"]["compatible"] is False

                # An accepted version is immutable: other content under 1.0.0 is a state conflict.
                changed = {**orders("1.0.0"), "extra.json": b"{}"}
                with pytest.raises(Conflict) as immutable:
                    await backend.propose(changed)
                assert immutable.value.code == "proposal.immutable"
            async with RootClient(server.address, admin_token_of(workspace)) as admin:
                with pytest.raises(NotFound):
                    await admin.approval("no-such-proposal")

    run(scenario())


def test_a_rotated_token_stops_working(workspace: Path) -> None:
    async def scenario() -> None:
        async with await RootServer.start(workspace) as server:
            old = (await register(server, "backend"))["backend"]
            async with RootClient(server.address, admin_token_of(workspace)) as admin:
                with pytest.raises(Conflict):
                    await admin.register_hive("backend")
                new = (await admin.register_hive("backend", rotate=True)).token
            async with RootClient(server.address, old) as stale:
                with pytest.raises(Unauthenticated):
                    await stale.contracts()
            async with RootClient(server.address, new) as fresh:
                assert await fresh.contracts() == []

    run(scenario())
