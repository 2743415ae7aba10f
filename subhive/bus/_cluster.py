"""A local NATS cluster: three (or more) embedded servers routed to each other on loopback, each with its own
JetStream store, so streams, buckets and boards can be replicated and survive one node. The same interface as
:class:`~subhive.bus.EmbeddedServer`. Why and how: docs/cluster.md, decision 0057.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import socket
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from subhive.errors import InputError, SubhiveError

from ._accounts import AccountsConfig
from ._server import BusEndpoint, ClusterRoutes, EmbeddedServer, ServerConfig, find_server_binary

if TYPE_CHECKING:
    from nats.aio.client import Client

__all__ = ["CLUSTER_NAME", "EmbeddedCluster", "jetstream_ready"]

CLUSTER_NAME = "subhive"
_PORTS_FILE = "cluster.json"


def _free_ports(host: str, count: int) -> list[int]:
    """Ports nothing listens on now. Route ports must be known before any node starts, since each node lists
    the others'; kept in the store so a restarted node comes back where its peers look for it."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((host, 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


class EmbeddedCluster:
    """``nodes`` nats-server processes, ``n1`` to ``nN``, each storing under ``<store_dir>/nN``::

        cluster = await EmbeddedCluster.start(ServerConfig(workspace / ".subhive" / "nats"), nodes=3)
        nc = await nats.connect(cluster.urls)
        ...
        await cluster.stop()

    A node that dies can be started again with :meth:`restart` (it rejoins and catches up); the others keep
    serving meanwhile, and JetStream elects new leaders for what the dead node led.
    """

    def __init__(self, nodes: list[EmbeddedServer]) -> None:
        self.nodes = nodes

    @classmethod
    async def start(
        cls, config: ServerConfig, *, nodes: int = 3, launched: Callable[[int], None] | None = None
    ) -> EmbeddedCluster:
        """Start every node and return once each accepts connections (JetStream may still be electing its
        leaders: :func:`jetstream_ready`). ``launched``: as for :meth:`EmbeddedServer.start`, for each node."""
        if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 2:
            raise InputError(
                f"a cluster needs at least 2 nodes, not {nodes!r}",
                code="bus.config_invalid",
                hint="use 3: JetStream then keeps every replicated stream through the loss of one node",
            )
        binary = find_server_binary(config.binary)
        ports = _route_ports(config.store_dir, config.host, nodes)
        servers = []
        for index, port in enumerate(ports, start=1):
            routes = ClusterRoutes(CLUSTER_NAME, port, tuple(p for p in ports if p != port))
            node = dataclasses.replace(
                config, store_dir=config.store_dir / f"n{index}", server_name=f"n{index}", cluster=routes, port=0
            )
            servers.append(EmbeddedServer(node, binary))
            servers[-1].launched = launched
        cluster = cls(servers)
        try:
            await asyncio.gather(*(node._boot(0) for node in servers))
        except BaseException:
            cluster.kill()
            raise
        return cluster

    @classmethod
    def start_sync(cls, config: ServerConfig, *, nodes: int = 3) -> EmbeddedCluster:
        return asyncio.run(cls.start(config, nodes=nodes))

    # -- the same surface as EmbeddedServer ---------------------------------------------------------------

    @property
    def urls(self) -> list[str]:
        """The client URL of every node that has run; a client given them all fails over between them."""
        return [node.url for node in self.nodes if node.url]

    @property
    def url(self) -> str:
        """The first node's URL (one URL, for what takes one; prefer :attr:`urls`)."""
        return self.urls[0]

    @property
    def monitor_urls(self) -> list[str]:
        return [node.monitor_url for node in self.nodes if node.monitor_url]

    @property
    def pids(self) -> list[int]:
        return [node.pid for node in self.nodes if node.pid is not None and node.running]

    @property
    def pid(self) -> int | None:
        pids = self.pids
        return pids[0] if pids else None

    @property
    def running(self) -> bool:
        """Whether every node runs (the cluster serves with one down; :meth:`restart` brings it back)."""
        return all(node.running for node in self.nodes)

    @property
    def config(self) -> ServerConfig:
        return self.nodes[0].config

    def endpoint(
        self, user: str | None = None, password: str | None = None, *, nkey_seed: Path | None = None
    ) -> BusEndpoint:
        return BusEndpoint(self.urls, user=user, password=password, nkey_seed=nkey_seed)

    async def restart(self) -> None:
        """Start again every node that is not running, on its ports, with its store."""
        await asyncio.gather(*(node.restart() for node in self.nodes if not node.running))

    async def reload(self, accounts: AccountsConfig | None) -> None:
        """New users and permissions on every running node (a node started later reads them from its file)."""
        for node in self.nodes:
            if node.running:
                await node.reload(accounts)
            else:
                node.config = dataclasses.replace(node.config, accounts=accounts)

    async def stop(self) -> None:
        await asyncio.gather(*(node.stop() for node in self.nodes))

    def stop_sync(self) -> None:
        asyncio.run(self.stop())

    def kill(self) -> None:
        for node in self.nodes:
            node.kill()

    async def __aenter__(self) -> EmbeddedCluster:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()


def _route_ports(store: Path, host: str, nodes: int) -> list[int]:
    """The route ports of the last start when there are as many, else new free ones (remembered in the store)."""
    path = store / _PORTS_FILE
    with contextlib.suppress(OSError, ValueError, TypeError):
        known = json.loads(path.read_text(encoding="utf-8"))["routes"]
        if len(known) == nodes and all(isinstance(p, int) and _free(host, p) for p in known):
            return [int(p) for p in known]
    ports = _free_ports(host, nodes)
    store.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"routes": ports}), encoding="utf-8")
    return ports


def _free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


async def jetstream_ready(nc: Client, *, timeout: float = 30.0) -> None:
    """Return once JetStream answers on ``nc``'s account: a cluster elects its meta leader first (about half
    a second on a fresh start, several seconds when the nodes restart with state). ``bus.unavailable`` if it
    does not answer within ``timeout``."""
    import nats.errors

    deadline = time.monotonic() + timeout
    said = ""
    while time.monotonic() < deadline:
        try:
            answer = json.loads((await nc.request("$JS.API.INFO", b"", timeout=1.0)).data)
        except (nats.errors.TimeoutError, nats.errors.NoRespondersError, ValueError) as exc:
            said = type(exc).__name__
        else:
            if "error" not in answer:
                return
            said = str(answer["error"].get("description", answer["error"]))
        await asyncio.sleep(0.1)
    raise SubhiveError(
        f"JetStream did not answer within {timeout:g} s ({said})",
        code="bus.unavailable",
        hint="read the nodes' logs (nats-server.log in each node's store)",
    )
