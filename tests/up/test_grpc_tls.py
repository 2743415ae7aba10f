"""``[grpc]`` in hive.toml: ``up`` serves the root and each hive's gRPC servers with TLS on another interface
(127.0.0.2 stands for one here, with a certificate a CA of the test signed). A plain-text client is refused,
a client with the CA gets in, and the notes example's backend reaches db over its gRPC contract through that
TLS; the CLI finds the CA in hive.toml. Bad ``[grpc]`` tables are refused naming the key (decision 0123)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from subhive.root_hive import RootClient, WorkspaceRoot, root_ca_of
from subhive.up import UpLayout

from ._certs import ca_and_cert
from ._nats_nodes import notes_workspace
from ._tree import assert_clean_error, subhive, tail, tear_down, up, wait_for


async def _plain_health(address: str) -> grpc.StatusCode | None:
    """The status a plain-text health check gets (None: it was answered)."""
    async with grpc.aio.insecure_channel(address) as channel:
        try:
            stub: Any = health_pb2_grpc.HealthStub(channel)
            await stub.Check(health_pb2.HealthCheckRequest(), timeout=3)
        except grpc.aio.AioRpcError as exc:
            return exc.code()
    return None


async def _tls_health(address: str, ca: Path) -> int:
    credentials = grpc.ssl_channel_credentials(root_certificates=ca.read_bytes())
    async with grpc.aio.secure_channel(address, credentials) as channel:
        stub: Any = health_pb2_grpc.HealthStub(channel)
        reply = await stub.Check(health_pb2.HealthCheckRequest(), timeout=5)
    return int(reply.status)


async def _root_healthy(address: str, ca: Path | None) -> bool:
    async with RootClient(address, None, ca_file=ca) as client:
        return await client.healthy(timeout=3)


async def _found_by_the_cli(workspace: Path) -> str | None:
    """Where the CLI's commands find the root: it answers only a client that verifies it with [grpc] ca."""
    async with WorkspaceRoot(workspace, running_only=True) as root:
        return root.address


def _board(workspace: Path, hive: str) -> dict[str, object]:
    ran = subhive(workspace, "board", "show", hive, "--format", "json")
    assert ran.code == 0, ran
    return {entry["key"]: entry for entry in json.loads(ran.out)["entries"]}


def test_up_serves_the_root_and_a_hive_contract_with_tls_beyond_loopback(tmp_path: Path) -> None:
    workspace = notes_workspace(tmp_path / "ws")
    certs = ca_and_cert(tmp_path / "tls", ips=("127.0.0.2",))
    with (workspace / "hive.toml").open("a", encoding="utf-8") as config:
        config.write(certs.grpc_table("127.0.0.2"))
    try:
        ran = up(workspace)
        assert ran.code == 0, ran.err + tail(UpLayout(workspace).log_file("supervisor"))
        record = json.loads(UpLayout(workspace).supervisor_file.read_text(encoding="utf-8"))
        root = record["root"]
        assert root.startswith("127.0.0.2:")
        assert asyncio.run(_plain_health(root)) == grpc.StatusCode.UNAVAILABLE  # no plain text spoken there
        assert asyncio.run(_root_healthy(root, certs.ca))
        assert not asyncio.run(_root_healthy(root, ca_and_cert(tmp_path / "other").ca))  # another CA: refused
        assert root_ca_of(workspace) == certs.ca
        assert asyncio.run(_found_by_the_cli(workspace)) == root

        # db provides notes_store over gRPC: registered at the TLS address, and the backend calls it there.
        status = subhive(workspace, "status", "--format", "json")  # the CLI verifies the root with [grpc] ca
        assert status.code == 0, status
        endpoints = json.loads(status.out)["runtime"]["hives"]["db"]["endpoints"]
        assert len(endpoints) == 1
        assert " at 127.0.0.2:" in endpoints[0], endpoints
        db = endpoints[0].rsplit(" at ", 1)[1]
        assert asyncio.run(_plain_health(db)) == grpc.StatusCode.UNAVAILABLE
        assert asyncio.run(_tls_health(db, certs.ca)) == health_pb2.HealthCheckResponse.SERVING
        put = subhive(workspace, "board", "put", "ui", "drafts.tls", json.dumps({"text": "Sealed", "author": "ada"}))
        assert put.code == 0, put
        wait_for(lambda: [k for k in _board(workspace, "ui") if k.startswith("feed.")], "the note back in the UI", 60)
        assert any(k.startswith("records.") for k in _board(workspace, "db"))  # written by db's gRPC handler
    finally:
        tear_down(workspace)


def test_up_refuses_a_grpc_table_that_would_show_tokens_to_the_network(tmp_path: Path) -> None:
    """The rules of [grpc] are tests/workspace/test_grpc_table.py's; here: `up` says it the CLI way, starts nothing."""
    workspace = notes_workspace(tmp_path / "ws")
    with (workspace / "hive.toml").open("a", encoding="utf-8") as config:
        config.write('\n[grpc]\nlisten = "10.1.2.3"\n')
    ran = subhive(workspace, "up", "--detach")
    assert_clean_error(ran, 2, "workspace.grpc_insecure")
    assert "/grpc/listen" in ran.err
    assert not UpLayout(workspace).supervisor_file.exists()
