"""JetStream's storage budget (decision 0119): streams reserve their ``max_bytes`` when they are made, and with
nats-server's default budget (75% of the disk's free space) a few hundred hives' boards and dead letters are
refused. ``up`` gives the server the whole disk's size; a real server shows the difference."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import nats
import nats.js.errors
import pytest
from nats.js.api import StreamConfig

from subhive.bus import EmbeddedServer, ServerConfig
from subhive.up._supervisor import _store_budget


async def _make_stream(store: Path, budget: int | None, max_bytes: int) -> None:
    server = await EmbeddedServer.start(ServerConfig(store, max_file_store=budget))
    try:
        nc = await nats.connect(server.url)
        try:
            await nc.jetstream().add_stream(StreamConfig(name="big", subjects=["big.>"], max_bytes=max_bytes))
        finally:
            await nc.close()
    finally:
        await server.stop()


def test_limits_beyond_the_default_budget_fit_in_ups(tmp_path: Path) -> None:
    disk = os.statvfs(tmp_path)
    free, total = disk.f_bavail * disk.f_frsize, disk.f_blocks * disk.f_frsize
    # More than nats-server's default budget: what 500 hives' boards and dead letters reserve on this disk.
    ceiling = int(free * 0.9)
    assert _store_budget(tmp_path / "up") == total >= ceiling

    with pytest.raises(nats.js.errors.APIError, match="insufficient storage"):
        asyncio.run(_make_stream(tmp_path / "default", None, ceiling))
    asyncio.run(_make_stream(tmp_path / "up", _store_budget(tmp_path / "up"), ceiling))  # made, nothing written


def test_the_budget_is_written_into_the_server_configuration(tmp_path: Path) -> None:
    assert "max_file_store: 12345678" in ServerConfig(tmp_path, max_file_store=12345678).render(0)
    assert "max_file_store" not in ServerConfig(tmp_path).render(0)
