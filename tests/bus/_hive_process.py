"""A hive as a real process, for the crash tests: ``python -m tests.bus._hive_process ROLE URL ARGS...``.

``publish URL FIRST LAST``: publish order_placed events e-FIRST..e-LAST (message id = the order id), printing
each number once JetStream acknowledged it. ``consume URL LOG``: handle order_placed events durably, appending
each order id to LOG (flushed) before the handler returns, so an id in LOG was handled before its ack.
Both run until done or killed.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from subhive.bus import BusEndpoint, NatsTransport
from tests.bus._contracts import orders


async def publish(url: str, first: int, last: int) -> None:
    hive = await NatsTransport.connect(BusEndpoint([url]), "backend")
    for n in range(first, last + 1):
        order = f"e-{n}"
        await hive.publish(orders(), "order_placed", {"order_id": order}, msg_id=order)
        print(n, flush=True)
    await hive.close()


async def consume(url: str, log: str) -> None:
    # A short ack wait: what the killed run had fetched but not acknowledged comes back within seconds.
    hive = await NatsTransport.connect(BusEndpoint([url]), "web", ack_wait=2.0)
    with open(log, "a", encoding="utf-8") as out:

        async def handle(payload: Any) -> None:
            out.write(payload["order_id"] + "\n")
            out.flush()
            os.fsync(out.fileno())

        await hive.subscribe(orders(), "order_placed", handle)
        print("ready", flush=True)
        await asyncio.Event().wait()  # until killed


if __name__ == "__main__":
    role, url, *rest = sys.argv[1:]
    if role == "publish":
        asyncio.run(publish(url, int(rest[0]), int(rest[1])))
    else:
        asyncio.run(consume(url, rest[0]))
