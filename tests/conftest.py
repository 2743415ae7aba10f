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
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from subhive.bus import EmbeddedServer, ServerConfig
from tests.kit import StartServer, copy_shop, make_shop, make_workspace

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
