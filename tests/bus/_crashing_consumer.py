"""A consumer hive whose handler kills its own process on some events, for the crash-backstop test:
``python -m tests.bus._crashing_consumer URL LOG CRASH_BOUND``.

Handles ``loose`` event ``noted`` durably as hive ``web`` (ack wait 1 s, so what a dead run had fetched comes
back within a second): an event with ``"crash": true`` appends ``crash N`` to LOG and SIGKILLs the process
in the middle of its handler; any other appends ``done N``. Prints ``ready`` once subscribed; runs until killed.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from typing import Any

from subhive.bus import BusEndpoint, NatsTransport
from tests.bus._kit import loose


async def consume(url: str, log: str, crash_bound: int) -> None:
    hive = await NatsTransport.connect(BusEndpoint([url]), "web", ack_wait=1.0, crash_bound=crash_bound)
    with open(log, "a", encoding="utf-8") as out:

        async def handle(payload: Any) -> None:
            word = "crash" if payload.get("crash") else "done"
            out.write(f"{word} {payload['n']}\n")
            out.flush()
            if word == "crash":
                os.kill(os.getpid(), signal.SIGKILL)  # what a segfault or the OOM killer does to a handler

        await hive.subscribe(loose(), "noted", handle)
        print("ready", flush=True)
        await asyncio.Event().wait()  # until killed


if __name__ == "__main__":
    asyncio.run(consume(sys.argv[1], sys.argv[2], int(sys.argv[3])))
