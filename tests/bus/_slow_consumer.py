"""A consumer hive as a real process, for the crash-during-handling test:
``python -m tests.bus._slow_consumer URL LOG``.

Handles ``loose`` event ``noted`` durably as hive ``web`` with a slow handler (a short ack wait, so what a
killed run had fetched comes back within seconds): appends ``start N`` to LOG, sleeps, then appends ``done N``
(flushed) before returning, so a ``done`` line means the handler finished. An event with ``"fail": true``
always raises (it must end in the dead letters). Runs until killed.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from subhive.bus import BusEndpoint, NatsTransport
from tests.bus._kit import loose

HANDLING = 0.03


async def consume(url: str, log: str) -> None:
    hive = await NatsTransport.connect(BusEndpoint([url]), "web", ack_wait=2.0)
    with open(log, "a", encoding="utf-8") as out:

        async def handle(payload: Any) -> None:
            out.write(f"start {payload['n']}\n")
            out.flush()
            await asyncio.sleep(HANDLING)
            if payload.get("fail"):
                raise RuntimeError("this event always fails")
            out.write(f"done {payload['n']}\n")
            out.flush()

        await hive.subscribe(loose(), "noted", handle)
        print("ready", flush=True)
        await asyncio.Event().wait()  # until killed


if __name__ == "__main__":
    asyncio.run(consume(sys.argv[1], sys.argv[2]))
