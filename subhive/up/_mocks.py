"""Mock providers for what a workspace consumes but no hive of it provides: build before the provider exists.
``subhive up`` runs one such process (:func:`main`). See docs/up.md#what-up-does-in-order, step 4.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["main", "mocked_packages"]

log = logging.getLogger("subhive.up.mocks")


def mocked_packages(plan: Any, hives: Mapping[str, Any]) -> dict[str, str]:
    """``{"notes_api v1": "stubs/ui/notes_api_v1"}``: each contract line some hive consumes whose provider is not
    one of ``hives``, with one consumer's package to serve it from (the first consumer by name)."""
    found: dict[str, str] = {}
    for hive in sorted(plan.hives):
        for stub in plan.hives[hive].contracts:
            key = f"{stub.entry.name} v{stub.entry.version.line}"
            if stub.role == "consumes" and stub.entry.provider not in hives and key not in found:
                found[key] = f"stubs/{hive}/{stub.package}"
    return found


async def _serve(workspace: Path, packages: list[str]) -> None:
    from .._files import write_json
    from ..bus import BusEndpoint, NatsTransport
    from ..runtime import ContractBinding, MockProvider

    env = os.environ
    endpoint = BusEndpoint.from_env(env)
    transport = await NatsTransport.connect(endpoint, "mocks")
    try:
        for package in packages:
            binding = ContractBinding.load(workspace / package / "contract.json")
            mock = MockProvider(binding, seed=0)
            handlers = {op: _answerer(mock, op) for op in sorted(binding.operations)}
            if handlers:
                await transport.serve(binding, handlers)
            log.info("serving a mock of %s (from %s): %s", binding.id, package, ", ".join(handlers) or "no operations")
        status = env.get("SUBHIVE_STATUS_FILE")
        if status:  # the supervisor starts the hives once the mocks answer
            write_json(Path(status), {"state": "ready", "pid": os.getpid(), "packages": packages})
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
    finally:
        await transport.close()


def _answerer(mock: Any, operation: str) -> Callable[[Any], Awaitable[Any]]:
    async def answer(payload: Any) -> Any:
        return mock.answer(operation, payload)

    return answer


def main(argv: list[str] | None = None) -> int:
    """``python -m subhive.up._mocks --workspace DIR PACKAGE...``, run by ``subhive up`` when the lock holds a
    version a hive consumes whose provider is not a hive of this workspace (not written yet, or removed).

    Each PACKAGE is a consumer's stub package (``stubs/ui/notes_api_v1``) whose ``contract.json`` it serves with
    a :class:`~subhive.runtime.MockProvider`: schema-valid answers, deterministic by seed, validated like any
    reply. It connects with the framework's NATS credentials, from the environment as a hive's are
    (``SUBHIVE_NATS_URL``, ``SUBHIVE_NATS_NKEY``: :meth:`subhive.bus.BusEndpoint.from_env`), and says it is ready in
    ``SUBHIVE_STATUS_FILE``. SIGTERM stops it.
    """
    from ..errors import SubhiveError

    parser = argparse.ArgumentParser(prog="python -m subhive.up._mocks", description=__doc__.split("\n")[0])
    parser.add_argument("--workspace", type=Path, required=True)
    parser.add_argument("packages", nargs="+")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s mocks %(levelname)s %(name)s: %(message)s"
    )
    try:
        asyncio.run(_serve(args.workspace, args.packages))
    except SubhiveError as exc:
        print(f"error: {exc.code}: {exc}" + (f"\nhint: {exc.hint}" if exc.hint else ""), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
