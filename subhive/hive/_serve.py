"""Run one hive until SIGINT or SIGTERM: what ``python -m subhive.hive`` (started by ``subhive up``) and
``subhive join`` (a hive started by hand, anywhere) both do once they know where to connect."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

from ..bus import BusEndpoint
from ..rpc import KeyFile
from ._runtime import HiveRuntime

__all__ = ["serve_hive"]


async def serve_hive(
    workspace: Path,
    hive: str,
    endpoint: BusEndpoint,
    *,
    root_address: str | None,
    token: str | None,
    status_file: Path | None = None,
    grpc_keys: Path | None = None,
    failover: float = 0.0,
    root_ca: Path | None = None,
    advertise: str | None = None,
) -> signal.Signals:
    """Start the hive, serve until SIGINT or SIGTERM, then stop it cleanly (handlers in flight finish, the
    connection drains); returns the signal that stopped it. Raises what :meth:`HiveRuntime.start` raises when it
    cannot start. ``root_ca``, ``advertise``: as :meth:`HiveRuntime.start` takes them."""
    runtime = await HiveRuntime.start(
        workspace,
        hive,
        endpoint,
        root_address=root_address,
        token=token,
        status_file=status_file,
        grpc_keys=KeyFile(grpc_keys) if grpc_keys is not None else None,
        failover=failover,
        root_ca=root_ca,
        advertise=advertise,
    )
    loop = asyncio.get_running_loop()
    stopped: asyncio.Future[signal.Signals] = loop.create_future()

    def on_signal(sig: signal.Signals) -> None:
        if not stopped.done():
            stopped.set_result(sig)

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal, sig)
    try:
        return await stopped
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        await runtime.stop()
