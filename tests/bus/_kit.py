"""Shared by the poison, fuzz and redelivery tests: a permissive contract, provisioning, dead letters, polling.

``loose`` v1: operation ``echo`` takes any object and answers it; operation ``strict`` takes
``{"n": 0..100}``; event ``noted`` carries any object. Permissive schemas let payloads that are valid by schema
but cannot travel (a lone surrogate, a set, too deep) reach the transport's own checks.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable
from typing import Any

import nats
from nats.js.errors import NotFoundError

from subhive.bus import DeadLetters, EmbeddedServer, NatsTransport, ensure_event_streams
from subhive.runtime import ContractBinding

ANY_OBJECT: dict[str, Any] = {"type": "object"}
STRICT: dict[str, Any] = {
    "type": "object",
    "required": ["n"],
    "additionalProperties": False,
    "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 100}},
}


def loose() -> ContractBinding:
    return ContractBinding.from_dict(
        {
            "name": "loose",
            "version": "1.0.0",
            "provider": "backend",
            "operations": {"echo": {"input": "any", "output": "any"}, "strict": {"input": "strict", "output": "any"}},
            "events": {"noted": "any"},
            "schemas": {"any": ANY_OBJECT, "strict": STRICT},
        }
    )


async def provision(server: EmbeddedServer, hives: Iterable[str], contracts: Iterable[tuple[str, int]]) -> None:
    """Fresh event streams for ``contracts`` and fresh dead letters for ``hives``, as the framework makes them."""
    hives, contracts = list(hives), list(contracts)
    nc = await nats.connect(server.url)
    js = nc.jetstream()
    try:
        names = [f"SUBHIVE_EV_{c}_v{m}" for c, m in contracts] + ["SUBHIVE_DLQ"] + [f"SUBHIVE_DLQ_{h}" for h in hives]
        for name in names:
            with contextlib.suppress(NotFoundError):
                await js.delete_stream(name)
        await ensure_event_streams(js, contracts, hives=hives)
    finally:
        await nc.close()


async def letters(server: EmbeddedServer, hive: str) -> list[Any]:
    nc = await nats.connect(server.url)
    try:
        return await DeadLetters(nc).list(hive, limit=100_000)
    finally:
        await nc.close()


async def until(check: Callable[[], Any], *, timeout: float = 20.0, every: float = 0.02) -> Any:
    """Poll ``check`` until it returns something true (then return it) or ``timeout`` passes (then its last)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = check()
        if asyncio.iscoroutine(value):
            value = await value
        if value or loop.time() > deadline:
            return value
        await asyncio.sleep(every)


async def hive(server: EmbeddedServer, name: str, **options: Any) -> NatsTransport:
    return await NatsTransport.connect(server.endpoint(), name, **options)


async def send_raw(
    sender: NatsTransport, contract: ContractBinding, operation: str, data: bytes, timeout: float = 5.0
) -> Any:
    """Send ``data`` as a request of ``sender`` exactly as its transport frames requests (its headers, its
    subject), but without encoding or validating it: what a broken or hostile hive would put on the wire."""
    route = sender._route(contract, "op", operation)
    return await sender._inbox.request(sender._frames, route.target, data, timeout)


async def publish_raw(sender: NatsTransport, contract: ContractBinding, event: str, data: bytes) -> None:
    """Store ``data`` as event ``event`` of ``sender`` with its headers, unvalidated (see :func:`send_raw`)."""
    route = sender._route(contract, "ev", event)
    await sender._js.publish(route.target.subject, data, headers=sender._headers(contract))
