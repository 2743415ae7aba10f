"""The test kit: plain functions every area uses (fixtures built on them live in ``tests/conftest.py``; contract
directories on disk are built by ``tests/helpers.py``).

``run`` drives a coroutine to the end with a bound, so a hang fails the test instead of stalling the suite;
``cli`` runs ``subhive`` in-process the way a user types it; ``make_shop`` builds the workspace most
end-to-end tests share.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import subprocess
import sys
from collections.abc import Awaitable, Iterator
from pathlib import Path
from typing import Any, Protocol, TypeVar

import pytest

from subhive.bus import EmbeddedServer
from subhive.cli import main
from subhive.root_hive import RootHive, ServerTls, contract_files
from subhive.workspace import (
    Kind,
    Requirement,
    SubhiveManifest,
    VersionRange,
    init_workspace,
    new_subhive,
    open_workspace,
)

__all__ = [
    "REPO",
    "TIMEOUT",
    "StartServer",
    "cli",
    "copy_example",
    "copy_shop",
    "importable_stubs",
    "make_shop",
    "make_workspace",
    "rewrite_manifest",
    "run",
]

T = TypeVar("T")
REPO = Path(__file__).resolve().parents[1]
#: Bounds a hang, nothing more: a scenario that needs longer says so with ``timeout=``.
TIMEOUT = 20.0


class StartServer(Protocol):
    """Starts a nats-server on 127.0.0.1 with the given :class:`~subhive.bus.ServerConfig` options (``accounts=``,
    ``max_payload=``, ...); ``store_dir`` defaults to a fresh temporary directory. See ``tests/conftest.py``."""

    def __call__(self, **options: Any) -> EmbeddedServer: ...


def run(coro: Awaitable[T], *, timeout: float = TIMEOUT) -> T:
    """Run ``coro`` on a fresh event loop; ``TimeoutError`` if it takes longer than ``timeout`` seconds."""

    async def bounded() -> T:
        return await asyncio.wait_for(coro, timeout)

    return asyncio.run(bounded())


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``subhive ARGV`` in this process: its exit code and what it printed to stdout and stderr."""
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def copy_example(name: str, into: Path, *, accepted: bool = True) -> Path:
    """A private copy of ``examples/NAME`` at ``into/NAME`` (resolved), without what a run left (``.subhive``,
    ``__pycache__``). ``accepted=False`` leaves out its lock and generated stubs too: nothing is accepted yet."""
    left_out = (".subhive", "__pycache__") if accepted else (".subhive", "__pycache__", "stubs", "contracts.lock")
    root = (into / name).resolve()
    shutil.copytree(REPO / "examples" / name, root, ignore=shutil.ignore_patterns(*left_out))
    return root


def make_workspace(tmp: Path) -> Path:
    """``subhive init tmp/shop``: a workspace with no hives and no contracts yet; return its root."""
    root = tmp / "shop"
    init_workspace(root)
    return root


def rewrite_manifest(
    root: Path, name: str, *, provides: tuple[str, ...] | None = None, consumes: dict[str, str] | None = None
) -> None:
    """Replace what hive ``name`` provides or consumes in its ``subhive.toml``, keeping everything else."""
    ws = open_workspace(root)
    manifest = ws.hives().hives[name]
    changed = SubhiveManifest(
        name=manifest.name,
        kind=manifest.kind,
        parent=manifest.parent,
        description=manifest.description,
        provides=manifest.provides if provides is None else provides,
        consumes=manifest.consumes
        if consumes is None
        else tuple(Requirement(c, VersionRange.parse(r)) for c, r in consumes.items()),
        budgets=manifest.budgets,
    )
    (ws.hive_dir(name) / "subhive.toml").write_text(changed.to_toml(), encoding="utf-8")


def make_shop(tmp: Path) -> Path:
    """Build ``tmp/shop``, a workspace whose contracts are all accepted in the lock; return its root.

    web (ui)       consumes api_api ^0.1, orders ^1.0, inventory ^1.0
    api (backend)  provides api_api (its scaffolded draft); consumes db_storage ^0.1
    db (db)        provides db_storage (its scaffolded draft) and inventory 1.0.0 (protobuf + gRPC)
    backend        provides orders 1.1.0 (the repository's example: shared $defs, two events)
    """
    root = make_workspace(tmp)
    new_subhive("db", Kind.db, start=root)
    new_subhive("api", Kind.backend, start=root)
    new_subhive("web", Kind.ui, start=root)
    new_subhive("backend", Kind.custom, start=root)
    for name, version in (("orders", "1.1.0"), ("inventory", "1.0.0")):
        shutil.copytree(REPO / "contracts" / name / version, root / "contracts" / name / version)
    rewrite_manifest(root, "db", provides=("db_storage", "inventory"))
    rewrite_manifest(root, "backend", provides=("orders",))
    rewrite_manifest(root, "web", consumes={"api_api": "^0.1", "orders": "^1.0", "inventory": "^1.0"})
    engine = RootHive.open(root)
    try:
        # The root registers the workspace's hives, and their requirements, when it opens.
        for hive, contract, version in (
            ("db", "db_storage", "0.1.0"),
            ("api", "api_api", "0.1.0"),
            ("db", "inventory", "1.0.0"),
            ("backend", "orders", "1.1.0"),
        ):
            outcome = engine.propose(hive, contract_files(root / "contracts" / contract / version))
            assert outcome.status == "accepted", (contract, outcome.message)
    finally:
        engine.close()
    return root


def copy_shop(template: Path, into: Path) -> Path:
    """A copy of a built shop at ``into/shop`` that a test may change (without the template's root lock file)."""
    root = into / "shop"
    shutil.copytree(template, root, ignore=shutil.ignore_patterns("engine.lock"))
    return root


@contextlib.contextmanager
def importable_stubs(root: Path) -> Iterator[Path]:
    """Put workspace ``root`` on ``sys.path`` so its generated ``stubs.*`` import; forget them afterwards, so the
    next workspace's stubs are imported afresh."""
    sys.path.insert(0, str(root))
    try:
        yield root
    finally:
        sys.path.remove(str(root))
        for name in [m for m in sys.modules if m == "stubs" or m.startswith("stubs.")]:
            del sys.modules[name]


def self_signed(directory: Path, name: str) -> ServerTls:
    """A self-signed certificate (its own CA) for localhost, 127.0.0.1 and 0.0.0.0 (the address a server on
    every interface registers), and its key, made by openssl in ``directory``."""
    cert, key = directory / f"{name}.crt", directory / f"{name}.key"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            f"/CN={name}",
            "-addext",
            "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:0.0.0.0",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return ServerTls(cert, key)
