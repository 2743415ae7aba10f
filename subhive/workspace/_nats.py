"""How ``subhive up`` runs NATS: ``[nats]`` in hive.toml, one embedded server by default, a local cluster, or a
cluster someone else runs (``urls``). See docs/cluster.md and decisions 0057 and 0121.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .._source import join_pointer
from ._checks import unknown_keys

__all__ = ["NATS_KEYS", "NatsSettings"]

NATS_KEYS = ("nodes", "sync", "failover", "urls", "replicas", "monitor", "ca")
_NODES = (1, 3, 5)
# JetStream keeps 1 to 5 copies; an even count survives no more node losses than the odd one below it.
_REPLICAS = (1, 3, 5)
_URL_SCHEMES = ("nats", "tls")
_SYNC = ("always", "interval")
#: Seconds a hive retries a durable publish or a board write while a cluster elects a leader (5-9 s measured
#: after losing a node, more after a full restart with state).
DEFAULT_FAILOVER = 30.0
#: A retry must come while the streams still remember its message id (their duplicate window, 120 s, less a
#: request's timeout), or a write that did land would be stored again.
MAX_FAILOVER = 110.0

Report = Callable[[str, str, str, str], None]


@dataclass(frozen=True, slots=True)
class NatsSettings:
    """``nodes``: 1 runs one embedded server, 3 or 5 a cluster on loopback whose streams, dead letters and boards
    keep 3 copies; ``sync``: ``"always"`` fsyncs every write before acknowledging it, ``"interval"`` every two
    minutes (about twice the sequential write rate; a cluster then relies on its copies); ``failover``: seconds a
    hive retries through a leader election (default 30 in a cluster, 0 on one server).

    ``urls``: the client URLs of a NATS cluster someone else runs; ``up`` then starts no server and checks that
    the cluster holds the accounts ``subhive nats accounts`` writes (decision 0121). ``replica_count``
    (``replicas``) is the copies of every stream there, by default one per URL up to 3; ``monitor``: the
    nodes' monitoring URLs, where ``status`` counts each hive's connections; ``ca``: the CA (a PEM file, relative to
    the workspace) that signed the nodes' certificates, for ``tls://`` URLs the system does not trust."""

    nodes: int = 1
    sync: str = "always"
    failover: float | None = None
    urls: tuple[str, ...] = ()
    replica_count: int | None = None
    monitor: tuple[str, ...] = ()
    ca: str | None = None

    def __post_init__(self) -> None:
        if self.nodes not in _NODES or isinstance(self.nodes, bool):
            raise ValueError(f"nodes must be one of {_NODES}, not {self.nodes!r}")
        if self.sync not in _SYNC:
            raise ValueError(f"sync must be one of {_SYNC}, not {self.sync!r}")
        if self.failover is not None and not (math.isfinite(self.failover) and 0 <= self.failover <= MAX_FAILOVER):
            raise ValueError(f"failover must be 0 to {MAX_FAILOVER:g} seconds, not {self.failover!r}")
        for url in self.urls:
            if not _is_url(url):
                raise ValueError(f"{url!r} is not a nats:// or tls:// URL")
        if self.urls and (self.nodes != 1 or self.sync != "always"):
            raise ValueError("nodes and sync describe servers up starts; with urls the cluster's operator sets them")
        if self.ca is not None and not (self.urls and isinstance(self.ca, str) and self.ca):
            raise ValueError(f"ca is a file name, and only with urls, not {self.ca!r}")
        if self.replica_count is not None and (not self.urls or self.replica_count not in _REPLICAS):
            raise ValueError(f"replicas is 1, 3 or 5, and only with urls, not {self.replica_count!r}")

    @property
    def external(self) -> bool:
        """Whether the tree uses a cluster someone else runs (``urls``) rather than servers ``up`` starts."""
        return bool(self.urls)

    @property
    def clustered(self) -> bool:
        return self.nodes > 1 or self.replicas > 1

    @property
    def replicas(self) -> int:
        """Copies of every stream: 3 in a cluster (JetStream's maximum that survives one node), else 1; on an
        external cluster ``replicas``, or one per URL up to 3."""
        if self.urls:
            return self.replica_count or min(3, len(self.urls))
        return min(3, self.nodes)

    @property
    def failover_seconds(self) -> float:
        if self.failover is not None:
            return self.failover
        return DEFAULT_FAILOVER if self.clustered else 0.0

    @property
    def is_set(self) -> bool:
        return self != NatsSettings()

    def to_toml(self) -> str:
        lines = ["[nats]"]
        if self.urls:
            lines.append(f"urls = [{', '.join(json.dumps(u) for u in self.urls)}]")
            if self.replica_count is not None:
                lines.append(f"replicas = {self.replica_count}")
            if self.monitor:
                lines.append(f"monitor = [{', '.join(json.dumps(u) for u in self.monitor)}]")
            if self.ca is not None:
                lines.append(f"ca = {json.dumps(self.ca)}")
        else:
            lines += [f"nodes = {self.nodes}", f'sync = "{self.sync}"']
        if self.failover is not None:
            lines.append(f"failover = {self.failover:g}")
        return "\n".join(lines) + "\n"

    @classmethod
    def read(cls, table: object, pointer: str, report: Report) -> NatsSettings:
        """Settings from a ``[nats]`` table at ``pointer``, each problem passed to ``report`` (codes
        ``workspace.*``); what is wrong keeps its default."""
        if not isinstance(table, Mapping):
            report(pointer, "workspace.type", "nats must be a table", "write it as a [nats] section: nodes = 3")
            return cls()
        unknown_keys(table, pointer, NATS_KEYS, "workspace.unknown_key", report)
        nodes, sync, failover = table.get("nodes", 1), table.get("sync", "always"), table.get("failover")
        if isinstance(nodes, bool) or nodes not in _NODES:
            report(
                join_pointer(pointer, "nodes"),
                "workspace.nats_nodes",
                f"nodes = {nodes!r} is not 1, 3 or 5",
                "1 runs one server; 3 a cluster that survives losing one node (docs/cluster.md)",
            )
            nodes = 1
        if sync not in _SYNC:
            report(
                join_pointer(pointer, "sync"),
                "workspace.nats_sync",
                f'sync = {sync!r} is not "always" or "interval"',
                '"always" fsyncs every write before acknowledging it (the default); "interval" is faster',
            )
            sync = "always"
        failover = _seconds(failover, join_pointer(pointer, "failover"), report)
        urls, replicas, monitor, ca = _external(table, pointer, report)
        if urls:
            nodes, sync = 1, "always"
        return cls(int(nodes), str(sync), failover, urls, replicas, monitor, ca)


def _external(
    table: Mapping[str, Any], pointer: str, report: Report
) -> tuple[tuple[str, ...], int | None, tuple[str, ...], str | None]:
    """``urls``, ``replicas``, ``monitor`` and ``ca``: a cluster up joins; each problem reported, what is wrong
    left out."""
    urls = _urls(table.get("urls"), join_pointer(pointer, "urls"), report, ("nats", "tls"))
    monitor = _urls(table.get("monitor"), join_pointer(pointer, "monitor"), report, ("http", "https"))
    replicas = table.get("replicas")
    if replicas is not None and (isinstance(replicas, bool) or replicas not in _REPLICAS):
        report(
            join_pointer(pointer, "replicas"),
            "workspace.nats_replicas",
            f"replicas = {replicas!r} is not 1, 3 or 5",
            "3 keeps every stream through the loss of one node (the default with 3 or more urls)",
        )
        replicas = None
    ca = table.get("ca")
    if ca is not None and (not isinstance(ca, str) or not ca):
        report(
            join_pointer(pointer, "ca"),
            "workspace.nats_ca",
            f"ca = {ca!r} is not a file name",
            'e.g. ca = "certs/nats-ca.pem": the CA that signed the nodes\' certificates (PEM)',
        )
        ca = None
    if urls:
        for key in ("nodes", "sync"):
            if key in table:
                report(
                    join_pointer(pointer, key),
                    "workspace.nats_external",
                    f"{key} names servers up starts, but urls names a cluster it joins",
                    "leave it out: the cluster's operator sets it (docs/cluster.md#joining-a-cluster-you-run)",
                )
    elif "urls" not in table:  # (urls that are wrong were said above)
        for key in ("replicas", "monitor", "ca"):
            if key in table:
                report(
                    join_pointer(pointer, key),
                    "workspace.nats_external",
                    f"{key} is for a cluster up joins, and there is no urls",
                    "add urls = [...] naming that cluster's nodes, or leave it out",
                )
    if not urls:
        return (), None, (), None
    return urls, replicas, monitor, ca


def _is_url(url: object, schemes: tuple[str, ...] = _URL_SCHEMES) -> bool:
    if not isinstance(url, str):
        return False
    scheme, sep, rest = url.partition("://")
    return bool(sep) and scheme in schemes and bool(rest) and not any(c.isspace() for c in url)


def _urls(value: Any, pointer: str, report: Report, schemes: tuple[str, ...]) -> tuple[str, ...]:
    """A list of URLs with one of ``schemes``; ``()`` (reported) when it is not one."""
    if value is None:
        return ()
    if not isinstance(value, list) or not value or not all(_is_url(u, schemes) for u in value):
        example = "nats://nats-1.internal:4222" if "nats" in schemes else "http://nats-1.internal:8222"
        report(
            pointer,
            "workspace.nats_urls",
            f"{pointer.rsplit('/', 1)[-1]} = {value!r} is not a non-empty list of {' or '.join(schemes)} URLs",
            f'e.g. ["{example}"], one per node',
        )
        return ()
    return tuple(value)


def _seconds(value: Any, pointer: str, report: Report) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= MAX_FAILOVER:
        report(
            pointer,
            "workspace.nats_failover",
            f"failover = {value!r} is not 0 to {MAX_FAILOVER:g} seconds",
            "e.g. 30; a retry must come while the streams remember the message id (2 minutes)",
        )
        return None
    return float(value)
