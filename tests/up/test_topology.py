"""The topology of ``docker/compose.yaml`` as separate processes that share nothing but URLs and credentials:
three nats-server nodes (configured by this test), the root (``subhive up`` with ``[nats] urls`` and every
hive ``[up] elsewhere``), and each hive of the notes example started by ``subhive join`` from its own working
directory with only its credentials file. A note goes UI -> backend (a request) -> db (gRPC) and comes back as
two events; ``status`` shows each hive joined from elsewhere; a hive stopped with SIGTERM leaves the tree."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from subhive.up import UpLayout

from ._nats_nodes import OperatorCluster, notes_workspace
from ._tree import finish, processes_of, subhive, tail, tear_down, up, wait_for

HIVES = ("db", "backend", "ui")  # providers first


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
    with (root / "hive.toml").open("a", encoding="utf-8") as config:
        config.write(f"\n[up]\nelsewhere = {json.dumps(list(HIVES))}\n")
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

        env = {k: v for k, v in os.environ.items() if not k.startswith("SUBHIVE_")}
        for hive in HIVES:
            host = tmp_path / "hosts" / hive
            host.mkdir(parents=True)
            own = shutil.copy(creds / hive / f"{hive}.creds", host)  # only its own
            # Its own checkout of the workspace, with the stubs up generated; none of the root's state.
            shutil.copytree(root, host / "ws", ignore=shutil.ignore_patterns(".subhive"))
            joined[hive] = subprocess.Popen(
                [sys.executable, "-m", "subhive", "join", "--creds", str(own), "-C", str(host / "ws")],
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
