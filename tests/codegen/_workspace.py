"""A workspace with a UI, a backend and a DB hive whose contracts are accepted in the lock.

    web (ui)       consumes api_api ^0.1, orders ^1.0, inventory ^1.0
    api (backend)  provides api_api (its scaffolded draft); consumes db_storage ^0.1
    db (db)        provides db_storage (its scaffolded draft) and inventory 1.0.0 (protobuf + gRPC)
    backend        provides orders 1.1.0 (the repository's example: shared $defs, two events)
"""

from __future__ import annotations

import shutil
from pathlib import Path

from subhive.root_hive import RootHive
from subhive.root_hive._client import contract_files
from subhive.workspace import Kind, Requirement, SubhiveManifest, VersionRange, new_subhive, open_workspace

REPO = Path(__file__).resolve().parents[2]


def _rewrite(root: Path, name: str, *, provides: tuple[str, ...] | None = None,
             consumes: dict[str, str] | None = None) -> None:
    ws = open_workspace(root)
    manifest = ws.hives().hives[name]
    changed = SubhiveManifest(
        name=manifest.name, kind=manifest.kind, parent=manifest.parent, description=manifest.description,
        provides=manifest.provides if provides is None else provides,
        consumes=manifest.consumes if consumes is None else tuple(
            Requirement(c, VersionRange.parse(r)) for c, r in consumes.items()),
        budgets=manifest.budgets)
    (ws.hive_dir(name) / "subhive.toml").write_text(changed.to_toml(), encoding="utf-8")


def make_shop(tmp: Path) -> Path:
    """Build the workspace and accept every contract through the root hive's engine; return its root."""
    from subhive.workspace import init_workspace

    root = tmp / "shop"
    init_workspace(root)
    new_subhive("db", Kind.db, start=root)
    new_subhive("api", Kind.backend, start=root)
    new_subhive("web", Kind.ui, start=root)
    new_subhive("backend", Kind.custom, start=root)
    for name, version in (("orders", "1.1.0"), ("inventory", "1.0.0")):
        shutil.copytree(REPO / "contracts" / name / version, root / "contracts" / name / version)
    _rewrite(root, "db", provides=("db_storage", "inventory"))
    _rewrite(root, "backend", provides=("orders",))
    _rewrite(root, "web", consumes={"api_api": "^0.1", "orders": "^1.0", "inventory": "^1.0"})
    engine = RootHive.open(root)
    try:
        # The root registers the workspace's hives, and their requirements, when it opens.
        for hive, contract, version in (("db", "db_storage", "0.1.0"), ("api", "api_api", "0.1.0"),
                                        ("db", "inventory", "1.0.0"), ("backend", "orders", "1.1.0")):
            outcome = engine.propose(hive, contract_files(root / "contracts" / contract / version))
            assert outcome.status == "accepted", (contract, outcome.message)
    finally:
        engine.close()
    return root
