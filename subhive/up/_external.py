"""The NATS accounts of a tree, for the servers ``up`` starts and for a cluster someone else runs: ``subhive nats
accounts`` writes them for that cluster's operator, and ``up`` with ``[nats] urls`` checks they are installed
there (docs/cluster.md#joining-a-cluster-you-run, decision 0121).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import ContractInvalid
from ._layout import UpLayout

__all__ = ["external_cluster", "negotiate", "tree_accounts", "workspace_accounts"]


def tree_accounts(plan: Any, hives: Mapping[str, Any], keys: Mapping[str, Any], admin: Any) -> Any:
    """One NATS user per hive (its public NKey in ``keys``), with the permissions the lock gives it (none yet:
    its own board only), and the framework's user (``admin``): an :class:`~subhive.bus.AccountsConfig`."""
    from ..bus import AccountsConfig, hive_permissions

    users = {name: (keys[name], plan.permissions.get(name) or hive_permissions(name, {}, {}, {}, {})) for name in hives}
    return AccountsConfig(users, admin_password=admin)


def workspace_accounts(workspace: Path) -> Any:
    """The accounts of the tree in ``workspace`` as its lock stands, each identity's seed made (owner-only) where
    ``up`` keeps it if there is none yet: the same accounts ``up`` asks a cluster for."""
    from ..bus import ADMIN_USER, bus_plan, nkey_of
    from ..root_hive import Lock
    from ..workspace import open_workspace

    opened = open_workspace(workspace)
    tree = opened.hives()
    if tree.problems:
        raise ContractInvalid(
            tree.problems, summary=f"the hive tree has {len(tree.problems)} problem(s): {tree.problems[0].message}"
        )
    layout = UpLayout(opened.root)
    keys = {name: nkey_of(layout.seed_file(name)) for name in sorted(tree.hives)}
    plan = bus_plan(opened, Lock.load(opened.root))
    return tree_accounts(plan, tree.hives, keys, nkey_of(layout.seed_file(ADMIN_USER)))


def external_cluster(layout: UpLayout, settings: Any) -> Any:
    """The cluster ``[nats] urls`` names (``settings``: the workspace's NatsSettings), as the framework."""
    from ..bus import ADMIN_USER, ExternalCluster

    return ExternalCluster(
        list(settings.urls),
        admin_seed=layout.seed_file(ADMIN_USER),
        seed_of=layout.seed_file,
        accounts_file=layout.nats_dir / "accounts.conf",
        monitor_urls=list(settings.monitor),
        tls_ca=layout.workspace / settings.ca if settings.ca else None,
    )


async def negotiate(workspace: Path) -> list[str]:
    """What ``up`` does first, alone: start the root on loopback, propose the providers' contract versions the
    lock does not hold, wait for the lock, stop the root. So a new workspace's accounts can be installed on a
    cluster before its first ``up`` (``subhive nats accounts --negotiate``). Returns the lock's versions."""
    from ..root_hive import Lock
    from ..workspace import open_workspace
    from ._control import running_supervisor
    from ._supervisor import Supervisor, _checked_hives, _terminate

    if running_supervisor(workspace) is None:  # else its root negotiated already (and owns the root's state)
        supervisor = Supervisor(workspace)
        supervisor.workspace = open_workspace(workspace)
        hives = _checked_hives(supervisor.workspace)
        try:
            await supervisor._start_root(loopback=True)  # a moment's root, for this machine only
            await supervisor._negotiate(hives)
        finally:
            if supervisor.root is not None and supervisor.root.process is not None:
                await _terminate([supervisor.root.process], 5.0)
    return sorted(f"{entry.name} {entry.version}" for entry in Lock.load(workspace))
