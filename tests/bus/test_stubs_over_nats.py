"""Generated stubs run unchanged on the NATS transport: the UI's generated client calls the DB hive's
generated mock served over a real nats-server, and events flow from a provider's generated emitter to a
consumer's generated subscription."""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nats
import pytest

from subhive.bus import EmbeddedServer, NatsTransport, ensure_event_streams
from tests.kit import StartServer, copy_shop, importable_stubs, run


@pytest.fixture(scope="module")
def shop(shop_template: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The shop with its generated stubs importable as ``stubs.*``."""
    with importable_stubs(copy_shop(shop_template, tmp_path_factory.mktemp("stubs"))) as root:
        yield root


@pytest.fixture(scope="module")
def server(start_module_nats: StartServer) -> EmbeddedServer:
    """One nats-server for the module, with the event streams of orders v1 and db_storage v0.1."""
    server = start_module_nats()

    async def provision() -> None:
        nc = await nats.connect(server.url)
        await ensure_event_streams(nc.jetstream(), [("orders", 1), ("db_storage", 0)])
        await nc.close()

    run(provision())
    return server


def test_the_generated_client_calls_a_generated_mock_over_nats(shop: Path, server: EmbeddedServer) -> None:
    consumer = importlib.import_module("stubs.api.db_storage_v0_1")
    models = importlib.import_module("stubs.api.db_storage_v0_1.models")

    async def scenario() -> list[Any]:
        db = await NatsTransport.connect(server.endpoint(), "db")
        api = await NatsTransport.connect(server.endpoint(), "api")
        try:
            await consumer.serve_db_storage(consumer.DbStorageMock(seed=4), db)
            client = consumer.DbStorageClient(api)
            address = models.RecordAddress.model_validate({"collection": "orders", "id": "o-1"})
            return [await client.get_record(address) for _ in range(5)]
        finally:
            await api.close()
            await db.close()

    answers = run(scenario())
    assert len(answers) == 5
    assert all(type(a).__name__ == "GetRecordOutput" for a in answers)


def test_events_flow_from_the_providers_emitter_to_the_consumers_subscription(
    shop: Path, server: EmbeddedServer
) -> None:
    provider = importlib.import_module("stubs.backend.orders_v1")
    consumer = importlib.import_module("stubs.web.orders_v1")

    async def scenario() -> list[Any]:
        backend = await NatsTransport.connect(server.endpoint(), "backend")
        web = await NatsTransport.connect(server.endpoint(), "web")
        got: list[Any] = []

        async def shipped(event: Any) -> None:
            got.append(event)

        try:
            await consumer.OrdersClient(web).on_order_shipped(shipped)
            sample = consumer.OrdersMock(seed=2).sample_order_shipped()
            payload_models = importlib.import_module("stubs.backend.orders_v1.models")
            event = getattr(payload_models, type(sample).__name__).model_validate(sample.model_dump(mode="json"))
            await provider.OrdersEvents(backend).order_shipped(event)
            for _ in range(200):
                if got:
                    break
                await asyncio.sleep(0.02)
            return got
        finally:
            await web.close()
            await backend.close()

    got = run(scenario())
    assert len(got) == 1
    assert type(got[0]).__name__ == "OrderRef"
    assert got[0].order_id.startswith("ord_")
