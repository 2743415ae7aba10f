"""How ``subhive up`` runs NATS: ``[nats]`` in hive.toml, one embedded server by default or a local cluster.
See docs/cluster.md and docs/decisions/0057-a-local-cluster-by-configuration.md.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .._source import join_pointer

__all__ = ["NATS_KEYS", "NatsSettings"]

NATS_KEYS = ("nodes", "sync", "failover")
_NODES = (1, 3, 5)
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
    hive retries through a leader election (default 30 in a cluster, 0 on one server)."""

    nodes: int = 1
    sync: str = "always"
    failover: float | None = None

    def __post_init__(self) -> None:
        if self.nodes not in _NODES or isinstance(self.nodes, bool):
            raise ValueError(f"nodes must be one of {_NODES}, not {self.nodes!r}")
        if self.sync not in _SYNC:
            raise ValueError(f"sync must be one of {_SYNC}, not {self.sync!r}")
        if self.failover is not None and not (math.isfinite(self.failover) and 0 <= self.failover <= MAX_FAILOVER):
            raise ValueError(f"failover must be 0 to {MAX_FAILOVER:g} seconds, not {self.failover!r}")

    @property
    def clustered(self) -> bool:
        return self.nodes > 1

    @property
    def replicas(self) -> int:
        """Copies of every stream: 3 in a cluster (JetStream's maximum that survives one node), else 1."""
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
        lines = ["[nats]", f"nodes = {self.nodes}", f'sync = "{self.sync}"']
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
        for key in table:
            if key not in NATS_KEYS:
                close = difflib.get_close_matches(str(key), NATS_KEYS, n=1)
                report(
                    join_pointer(pointer, str(key)),
                    "workspace.unknown_key",
                    f"unknown key {key!r}",
                    f"did you mean {close[0]!r}?" if close else f"allowed: {', '.join(NATS_KEYS)}",
                )
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
        return cls(int(nodes), str(sync), failover)


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
