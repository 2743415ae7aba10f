"""The topology of ``docker/compose.yaml`` as separate processes that share nothing but URLs and credentials:
three nats-server nodes (configured by this test), the root (``subhive up`` with ``[nats] urls`` and every
hive ``[up] elsewhere``), and each hive of the notes example started by ``subhive join`` from its own working
directory with only its credentials file. The root and db's gRPC server serve TLS on 127.0.0.2 (standing for
another interface, ``[grpc]``); the credentials bring the CA, so ui and backend need no ``[grpc]`` of their
own. A note goes UI -> backend (a request) -> db (gRPC over TLS) and comes back as two events; ``status`` shows
each hive joined from elsewhere; a hive stopped with SIGTERM leaves the tree."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from subhive.root_hive import RootClient
from subhive.up import UpLayout

from ._certs import ca_and_cert
from ._nats_nodes import OperatorCluster, notes_workspace
from ._tree import finish, processes_of, subhive, tail, tear_down, up, wait_for

HIVES = ("db", "backend", "ui")  # providers first


async def _endpoint(root: str, token: str, ca: Path) -> str:
    async with RootClient(root, token, ca_file=ca) as client:
        return (await client.lookup_endpoint("notes_store", 1)).address


async def _plain_call(address: str) -> grpc.StatusCode | None:
    async with grpc.aio.insecure_channel(address) as channel:
        try:
            stub: Any = health_pb2_grpc.HealthStub(channel)
            await stub.Check(health_pb2.HealthCheckRequest(), timeout=3)
        except grpc.aio.AioRpcError as exc:
            return exc.code()
    return None


def _status(workspace: Path) -> dict[str, Any]:
    ran = subhive(workspace, "status", "--format", "json")
    assert ran.code == 0, ran
    runtime: dict[str, Any] = json.loads(ran.out)["runtime"]
    return runtime


def _connected(workspace: Path, hive: str) -> int:
    return len(_status(workspace)["hives"][hive]["connections"])


def _board(workspace: Path, hive: str) -> dict[str, Any]:
    ran = subhive(workspace, "board", "show", hive, "--format", "json")
    assert ran.code == 0, ran
    return {entry["key"]: entry for entry in json.loads(ran.out)["entries"]}


def test_each_hive_joins_from_its_own_directory_with_only_its_credentials(tmp_path: Path) -> None:
    root = notes_workspace(tmp_path / "root")
    cluster = OperatorCluster(tmp_path / "operator")
    certs = ca_and_cert(tmp_path / "tls", ips=("127.0.0.2",))
    grpc_table = certs.grpc_table("127.0.0.2")
    with (root / "hive.toml").open("a", encoding="utf-8") as config:
        config.write(f"\n[up]\nelsewhere = {json.dumps(list(HIVES))}\n{grpc_table}")
    joined: dict[str, subprocess.Popen[str]] = {}
    try:
        # As in docker/compose.yaml: the accounts (negotiated first) exist before the nodes start.
        cluster.base.mkdir()
        made = subhive(root, "nats", "accounts", "--negotiate", "--out", str(cluster.accounts_file))
        assert made.code == 0, made
        assert "negotiated: notes_api 1.0.0, notes_store 1.0.0" in made.err
        cluster.start()
        with (root / "hive.toml").open("a", encoding="utf-8") as config:
            config.write(f"\n[nats]\nurls = {json.dumps(cluster.urls)}\nmonitor = {json.dumps(cluster.monitor_urls)}\n")
        creds = tmp_path / "creds"
        ran = up(root, "--creds-dir", str(creds))
        assert ran.code == 0, ran.err + tail(UpLayout(root).log_file("supervisor"))
        # The root runs here and no hive: each is the job of a machine of its own.
        assert {info["health"] for info in _status(root)["hives"].values()} == {"elsewhere"}
        assert sorted(p.relative_to(creds).as_posix() for p in creds.rglob("*.creds")) == [
            f"{hive}/{hive}.creds" for hive in sorted(HIVES)
        ]
        for hive in HIVES:  # the root's TLS address, and the CA to verify it with
            written = json.loads((creds / hive / f"{hive}.creds").read_text(encoding="utf-8"))
            assert written["root"].startswith("127.0.0.2:")
            assert written["root_ca"] == certs.ca.read_text(encoding="utf-8")

        env = {k: v for k, v in os.environ.items() if not k.startswith("SUBHIVE_")}
        for hive in HIVES:
            host = tmp_path / "hosts" / hive
            host.mkdir(parents=True)
            own = shutil.copy(creds / hive / f"{hive}.creds", host)  # only its own
            # Its own checkout of the workspace, with the stubs up generated; none of the root's state.
            shutil.copytree(root, host / "ws", ignore=shutil.ignore_patterns(".subhive"))
            if hive != "db":  # only db serves gRPC (its own certificate); the others have the CA of their creds
                toml = host / "ws" / "hive.toml"
                toml.write_text(toml.read_text(encoding="utf-8").replace(grpc_table, ""), encoding="utf-8")
            joined[hive] = subprocess.Popen(
                [sys.executable, "-m", "subhive", "join", "--creds", str(own), "-C", str(host / "ws")]
                + (["--advertise", "127.0.0.2"] if hive == "db" else []),  # the name db's gRPC is dialled by
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
                cwd=host,
            )
        for hive in HIVES:
            wait_for(
                lambda hive=hive: _connected(root, hive) == 1 or joined[hive].poll() is not None,  # type: ignore[misc]
                f"{hive} to join",
                60,
            )
            assert joined[hive].poll() is None, finish(joined[hive], 5)

        put = subhive(root, "board", "put", "ui", "drafts.hi", json.dumps({"text": "From afar", "author": "ada"}))
        assert put.code == 0, put
        feed = wait_for(
            lambda: [k for k in _board(root, "ui") if k.startswith("feed.")],
            "the note to come back to the UI as an event",
            60,
        )
        assert len(feed) == 1
        assert any(k.startswith("records.") for k in _board(root, "db"))  # the backend reached db over gRPC
        status = _status(root)
        db = json.loads((creds / "db" / "db.creds").read_text(encoding="utf-8"))
        endpoint = asyncio.run(_endpoint(db["root"], db["token"], certs.ca))  # as db registered it, over TLS
        assert endpoint.startswith("127.0.0.2:")
        assert asyncio.run(_plain_call(endpoint)) == grpc.StatusCode.UNAVAILABLE  # it speaks TLS only
        assert status["nats"] == ",".join(cluster.urls)
        assert {h: len(info["connections"]) for h, info in status["hives"].items()} == dict.fromkeys(HIVES, 1)

        joined["ui"].send_signal(signal.SIGTERM)
        left = finish(joined["ui"], timeout=30)
        assert left.code == 0, left
        assert "left the tree" in left.err
        assert "Traceback" not in left.err
        wait_for(lambda: _connected(root, "ui") == 0, "ui to be gone from the cluster", 30)
        assert _connected(root, "backend") == 1

        stopped = subhive(root, "down")
        assert stopped.code == 0, stopped
        assert processes_of(root) == {}
        assert cluster.alive()
    finally:
        for process in joined.values():
            if process.poll() is None:
                process.kill()
            process.communicate(timeout=30)
        tear_down(root)
        cluster.stop()
