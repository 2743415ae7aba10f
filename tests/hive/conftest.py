from collections.abc import Iterator

import pytest

from subhive.bus import EmbeddedServer, ServerConfig


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedServer]:
    server = EmbeddedServer.start_sync(ServerConfig(tmp_path_factory.mktemp("hive") / "nats"))
    try:
        yield server
    finally:
        server.stop_sync()
