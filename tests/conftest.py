"""Test-wide settings and the fixtures every area shares (plain helpers are in ``tests/kit.py``).

Hypothesis explores new inputs on every local run (that is how it finds bugs); under CI (``CI`` set, as
``.ci/run`` does) it derandomises, so a landing is judged on the same examples every time and a newly
found counterexample shows up locally first instead of blocking an unrelated change.

Fixtures, by the scenario they create:

- ``server``: a fresh nats-server (JetStream, no users) for one test. A module whose tests share one server
  overrides it with a module-scoped ``server`` built on ``start_module_nats``.
- ``start_nats`` / ``start_module_nats``: start nats-servers with any :class:`ServerConfig` option
  (``accounts=``, ``max_payload=``, ...); each is stopped when the test (or module) ends, whatever it did.
- ``workspace``: ``subhive init`` of an empty workspace, for one test.
- ``shop``: a private copy of the shop of :func:`tests.kit.make_shop` (contracts accepted, stubs generated),
  built once per session.
- ``running_root``: ``subhive root`` serving the test's ``workspace`` as its own process, as a user starts it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from subhive.bus import EmbeddedServer, ServerConfig
from tests.kit import REPO, StartServer, copy_shop, make_shop, make_workspace

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@contextlib.contextmanager
def _servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StartServer]:
    started: list[EmbeddedServer] = []

    def start(**options: Any) -> EmbeddedServer:
        options.setdefault("store_dir", tmp_path_factory.mktemp("nats") / "store")
        server = EmbeddedServer.start_sync(ServerConfig(**options))
        started.append(server)
        return server

    try:
        yield start
    finally:
        for server in reversed(started):
            server.stop_sync()


@pytest.fixture
def start_nats(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StartServer]:
    """Start nats-servers for one test; every one is stopped when the test ends."""
    with _servers(tmp_path_factory) as start:
        yield start


@pytest.fixture(scope="module")
def start_module_nats(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StartServer]:
    """Start nats-servers a whole module shares; every one is stopped when the module is done."""
    with _servers(tmp_path_factory) as start:
        yield start


@pytest.fixture
def server(start_nats: StartServer) -> EmbeddedServer:
    """A fresh nats-server with JetStream and no users, for one test."""
    return start_nats()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """``subhive init`` at ``tmp_path/shop``: no hives, no contracts."""
    return make_workspace(tmp_path)


@pytest.fixture(scope="session")
def shop_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shop with every contract accepted and its stubs generated, built once; tests work on copies."""
    from subhive.codegen import generate_stubs
    from subhive.workspace import open_workspace

    root = make_shop(tmp_path_factory.mktemp("shop-template"))
    result = generate_stubs(open_workspace(root))
    assert not result.problems, result.problems
    return root


@pytest.fixture
def shop(shop_template: Path, tmp_path: Path) -> Path:
    """The shop for one test: web, api, db and backend hives, contracts accepted, stubs generated."""
    return copy_shop(shop_template, tmp_path)


@pytest.fixture
def running_root(workspace: Path) -> Iterator[str]:
    """``subhive root`` serving ``workspace`` (whichever the test's module defines) in its own process; yields
    its address. Afterwards it must stop cleanly on SIGTERM: exit code 0 and its service file removed."""
    from subhive.root_hive._service import SERVICE_FILE

    env = {k: v for k, v in os.environ.items() if not k.startswith("SUBHIVE_")} | {"PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "subhive", "root", "--format", "json", "-C", str(workspace)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else "no output"
        yield json.loads(line)["address"]
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    assert not (workspace / SERVICE_FILE).exists()
