"""A NATS cluster as its operator runs it, for the tests of trees that join one: three nats-server processes
whose configuration the test writes (not subhive's EmbeddedCluster), routes on loopback, JetStream on, an
account of the operator's own, and the tree's accounts included from ``subhive.conf`` beside the node files."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from subhive.bus import find_server_binary

#: The operator's own account, which the tree's accounts sit beside.
OPERATOR_ACCOUNT = 'OPS: { users: [{ user: "ops", password: "ops-password-1" }] }'


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


@dataclass
class Node:
    name: str
    client: int
    route: int
    http: int
    directory: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def config(self) -> Path:
        return self.directory.parent / f"{self.name}.conf"

    @property
    def log(self) -> Path:
        return self.directory / "nats-server.log"


@dataclass
class OperatorCluster:
    """``urls``, ``monitor_urls``; :attr:`accounts_file` is what each node includes inside ``accounts { }``."""

    base: Path
    nodes: list[Node] = field(default_factory=list)
    #: The nodes' certificate and key (PEM): clients then connect with tls:// and check it.
    tls: tuple[Path, Path] | None = None

    @property
    def urls(self) -> list[str]:
        scheme = "tls" if self.tls is not None else "nats"
        return [f"{scheme}://127.0.0.1:{n.client}" for n in self.nodes]

    @property
    def monitor_urls(self) -> list[str]:
        return [f"http://127.0.0.1:{n.http}" for n in self.nodes]

    @property
    def accounts_file(self) -> Path:
        return self.base / "subhive.conf"

    @property
    def pids(self) -> list[int]:
        return [n.process.pid for n in self.nodes if n.process is not None]

    def alive(self) -> bool:
        return all(n.process is not None and n.process.poll() is None for n in self.nodes)

    def start(self, count: int = 3) -> None:
        ports = _free_ports(3 * count)
        self.base.mkdir(parents=True, exist_ok=True)
        if not self.accounts_file.exists():
            self.accounts_file.write_text("# the tree's accounts go here\n")
        self.nodes = [
            Node(f"n{i + 1}", ports[3 * i], ports[3 * i + 1], ports[3 * i + 2], self.base / f"n{i + 1}")
            for i in range(count)
        ]
        binary = find_server_binary()
        for node in self.nodes:
            node.directory.mkdir(exist_ok=True)
            routes = ", ".join(f'"nats://127.0.0.1:{n.route}"' for n in self.nodes if n is not node)
            tls = f'tls {{ cert_file: "{self.tls[0]}", key_file: "{self.tls[1]}" }}\n' if self.tls else ""
            node.config.write_text(
                f'server_name: "{node.name}"\n'
                f'listen: "127.0.0.1:{node.client}"\n'
                f'http: "127.0.0.1:{node.http}"\n'
                f'jetstream {{ store_dir: "{node.directory / "js"}" }}\n'
                f'cluster {{ name: "ops", listen: "127.0.0.1:{node.route}", routes: [{routes}] }}\n'
                f"{tls}"
                f'accounts {{\n  {OPERATOR_ACCOUNT}\n  include "subhive.conf"\n}}\n'
            )
            with node.log.open("ab") as log:
                node.process = subprocess.Popen(
                    [str(binary), "-c", str(node.config)], stdout=log, stderr=subprocess.STDOUT
                )
        deadline = time.monotonic() + 30
        for node in self.nodes:
            while not _healthy(node.http):
                if time.monotonic() > deadline or (node.process is not None and node.process.poll() is not None):
                    raise AssertionError(f"{node.name} did not start:\n{node.log.read_text()[-2000:]}")
                time.sleep(0.05)

    def reload(self) -> None:
        """What the operator does after installing new accounts: SIGHUP every node, wait for each to say so."""
        offsets = {node.name: node.log.stat().st_size for node in self.nodes}
        for node in self.nodes:
            assert node.process is not None
            node.process.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 20
        for node in self.nodes:
            while True:
                with node.log.open("rb") as log:
                    log.seek(offsets[node.name])
                    said = log.read().decode("utf-8", "replace")
                if "Reloaded server configuration" in said:
                    break
                assert "Failed to reload" not in said, said
                assert time.monotonic() < deadline, f"{node.name} did not reload:\n{said}"
                time.sleep(0.05)

    def stop(self) -> None:
        for node in self.nodes:
            if node.process is not None and node.process.poll() is None:
                node.process.terminate()
        for node in self.nodes:
            if node.process is not None:
                try:
                    node.process.wait(10)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(node.process.pid, signal.SIGKILL)
                    node.process.wait(5)


def _healthy(port: int) -> bool:
    """JetStream is up on this node (``/healthz`` answers 200 once it is)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "notes"


def notes_workspace(where: Path) -> Path:
    """A fresh copy of the notes example: its sources, without what a run made (lock, stubs, state)."""
    import shutil

    workspace = where.resolve()
    shutil.copytree(EXAMPLE, workspace, ignore=shutil.ignore_patterns(".subhive", "contracts.lock", "changes"))
    for made in (workspace / "stubs").iterdir():
        if made.is_dir():
            shutil.rmtree(made)
    return workspace
