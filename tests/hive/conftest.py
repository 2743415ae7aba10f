"""The hive tests share one nats-server per module; each test opens a fresh blackboard on it."""

import pytest

from subhive.bus import EmbeddedServer
from tests.kit import StartServer


@pytest.fixture(scope="module")
def server(start_module_nats: StartServer) -> EmbeddedServer:
    """One nats-server for the whole module: each test provisions what it uses."""
    return start_module_nats()
