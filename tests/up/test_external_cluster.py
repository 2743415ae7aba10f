"""``[nats] urls`` in hive.toml: ``subhive up`` joins a 3-node NATS cluster someone else runs instead of starting
one (docs/cluster.md#joining-a-cluster-you-run, decision 0121). The cluster is three nats-server processes whose
configuration this test writes, with an account of the operator's own; the tree's accounts come from
``subhive nats accounts``. Until they are installed ``up`` refuses, naming the missing account and what to run;
then the notes example works on it (a request, gRPC, two events, three boards), ``status`` shows the cluster,
and ``down`` leaves it running."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nats
import pytest

from subhive.bus import ADMIN_USER
from subhive.up import UpLayout

from ..kit import self_signed
from ._nats_nodes import OperatorCluster, notes_workspace
from ._tree import Ran, assert_clean_error, processes_of, subhive, tail, tear_down, up, wait_for


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[OperatorCluster]:
    nodes = OperatorCluster(tmp_path / "operator")
    try:
        nodes.start()
        yield nodes
    finally:
        nodes.stop()


def _board(workspace: Path, hive: str) -> dict[str, Any]:
    ran = subhive(workspace, "board", "show", hive, "--format", "json")
    assert ran.code == 0, ran
    return {entry["key"]: entry for entry in json.loads(ran.out)["entries"]}


def _context(workspace: Path) -> str:
    layout = UpLayout(workspace)
    return "\n".join(tail(layout.log_file(name), 15) for name in ("supervisor", "ui", "backend", "db"))


def test_up_joins_a_cluster_it_did_not_start_once_its_accounts_are_installed(
    cluster: OperatorCluster, tmp_path: Path
) -> None:
    workspace = notes_workspace(tmp_path / "ws")
    urls, monitor = cluster.urls, cluster.monitor_urls
    with (workspace / "hive.toml").open("a", encoding="utf-8") as config:
        config.write(f"\n[nats]\nurls = {json.dumps(urls)}\nmonitor = {json.dumps(monitor)}\n")
    try:
        # 1. Nothing installed yet: refused, naming the account and what to run, and nothing left running.
        refused = up(workspace)
        assert_clean_error(refused, 2, "up.nats_accounts_missing")
        assert "has no account 'SUBHIVE'" in refused.err, refused.err
        assert "subhive nats accounts" in refused.err
        written = workspace / ".subhive" / "nats" / "accounts.conf"
        assert '"SUBHIVE"' in written.read_text()
        assert processes_of(workspace) == {}

        # 2. The operator installs what `subhive nats accounts` writes and reloads the nodes.
        made: Ran = subhive(workspace, "nats", "accounts", "--out", str(cluster.accounts_file))
        assert made.code == 0, made
        text = cluster.accounts_file.read_text()
        seeds = [p.read_text().strip() for p in UpLayout(workspace).nkeys_dir.glob("*.nk")]
        assert len(seeds) == 4
        assert not any(seed in text for seed in seeds)  # public keys only
        for name in ("SUBHIVE", "ui", "backend", "db"):
            assert f'"{name}": ' in text
        cluster.reload()

        ran = up(workspace)
        if ran.code != 0:  # nats-server 2.15 wires the imports of accounts a reload added at the next reload
            assert_clean_error(ran, 2, "up.nats_accounts_unwired")
            assert "reload the nodes once more" in ran.err
            cluster.reload()
            ran = up(workspace)
        assert ran.code == 0, ran.err + _context(workspace)
        record = json.loads(UpLayout(workspace).supervisor_file.read_text())
        assert record["nats"] == ",".join(urls)
        assert record["nats_pids"] == []  # no server of ours

        # 3. A draft on the UI's board: a request to the backend, gRPC to the db, its `stored` event to the
        # backend, `note_published` back to the UI's feed.
        put = subhive(workspace, "board", "put", "ui", "drafts.hi", json.dumps({"text": "Hi, hives", "author": "ada"}))
        assert put.code == 0, put
        feed = wait_for(
            lambda: [k for k in _board(workspace, "ui") if k.startswith("feed.")],
            "the note to come back to the UI as an event",
            60,
            context=lambda: _context(workspace),
        )
        assert len(feed) == 1
        assert any(k.startswith("records.") for k in _board(workspace, "db"))  # stored over gRPC

        # 4. status shows the cluster, each hive ready and connected through it; the boards keep 3 copies.
        status = subhive(workspace, "status", "--format", "json")
        assert status.code == 0, status
        runtime = json.loads(status.out)["runtime"]
        assert runtime["nats"] == ",".join(urls)
        assert {h: info["health"] for h, info in runtime["hives"].items()} == dict.fromkeys(
            ("backend", "db", "ui"), "ready"
        )
        assert all(len(info["connections"]) >= 1 for info in runtime["hives"].values()), runtime["hives"]
        assert asyncio.run(_replicas(urls, UpLayout(workspace).seed_file(ADMIN_USER), "KV_bb_ui")) == 3

        # 5. down stops the tree, not the cluster: the nodes run on and still hold the boards.
        stopped = subhive(workspace, "down")
        assert stopped.code == 0, stopped
        assert processes_of(workspace) == {}
        assert cluster.alive()
        assert asyncio.run(_replicas(urls, UpLayout(workspace).seed_file(ADMIN_USER), "KV_bb_ui")) == 3
    finally:
        tear_down(workspace)


def test_up_refuses_a_cluster_whose_accounts_are_another_locks(cluster: OperatorCluster, tmp_path: Path) -> None:
    """Every user logs in, but the grants are not the lock's (a contract accepted since): said, with the fix."""
    workspace = notes_workspace(tmp_path / "ws")
    with (workspace / "hive.toml").open("a", encoding="utf-8") as config:
        config.write(f"\n[nats]\nurls = {json.dumps(cluster.urls)}\n")
    try:
        made = subhive(workspace, "nats", "accounts", "--out", str(cluster.accounts_file))  # an empty lock's
        assert made.code == 0, made
        cluster.reload()
        refused = up(workspace)  # negotiation fills the lock: the hives now need more than was installed
        assert_clean_error(refused, 2, "up.nats_accounts_stale")
        assert "grants are not the ones its lock gives" in refused.err
        assert processes_of(workspace) == {}
    finally:
        tear_down(workspace)


async def _replicas(urls: list[str], seed: Path, stream: str) -> int:
    nc = await nats.connect(urls, nkeys_seed=str(seed))
    try:
        info = (await nc.jetstream().stream_info(stream)).cluster
        return 1 + len(info.replicas or []) if info is not None else 1
    finally:
        await nc.close()


def test_up_joins_a_cluster_that_speaks_tls_with_its_own_ca(tmp_path: Path) -> None:
    """``[nats] ca``: the framework, the hives up starts and the CLI all check the nodes' certificate with it."""
    workspace = notes_workspace(tmp_path / "ws")
    (workspace / "certs").mkdir()
    tls = self_signed(workspace / "certs", "nats")
    cluster = OperatorCluster(tmp_path / "operator", tls=(tls.cert_file, tls.key_file))
    try:
        cluster.base.mkdir()
        made = subhive(workspace, "nats", "accounts", "--negotiate", "--out", str(cluster.accounts_file))
        assert made.code == 0, made
        cluster.start()
        assert all(url.startswith("tls://") for url in cluster.urls)
        toml = (workspace / "hive.toml").read_text(encoding="utf-8")
        (workspace / "hive.toml").write_text(f"{toml}\n[nats]\nurls = {json.dumps(cluster.urls)}\n", encoding="utf-8")
        untrusted = up(workspace)  # without its CA the nodes' certificate is not believed
        assert_clean_error(untrusted, 2, "bus.unavailable")
        assert "CERTIFICATE_VERIFY_FAILED" in untrusted.err
        assert "[nats] ca" in untrusted.err  # the hint names the fix
        assert processes_of(workspace) == {}
        with (workspace / "hive.toml").open("a", encoding="utf-8") as config:
            config.write('ca = "certs/nats.crt"\n')
        ran = up(workspace)
        assert ran.code == 0, ran.err + _context(workspace)
        put = subhive(workspace, "board", "put", "ui", "drafts.tls", json.dumps({"text": "Sealed", "author": "lin"}))
        assert put.code == 0, put
        wait_for(
            lambda: [k for k in _board(workspace, "ui") if k.startswith("feed.")],
            "the note to come back over TLS",
            60,
            context=lambda: _context(workspace),
        )
        status = subhive(workspace, "status", "--format", "json")
        assert {h: i["health"] for h, i in json.loads(status.out)["runtime"]["hives"].items()} == dict.fromkeys(
            ("backend", "db", "ui"), "ready"
        )
    finally:
        tear_down(workspace)
        cluster.stop()
