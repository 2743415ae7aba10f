"""``python -m subhive.hive --workspace DIR --hive NAME``: one sub-hive's process, as ``subhive up`` starts it;
``--host NAME``: a process of several hives, which ``subhive up`` tells which to run (``_host.py``).
Where to connect comes from the environment (:func:`_run`), never from argv, which ``ps`` shows. SIGTERM stops
it cleanly. Exit codes: 0 stopped, 2 the hive cannot start (bad manifest, schema, knowledge module), 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from pathlib import Path

from ..bus import BusEndpoint
from ..errors import SubhiveError
from ._serve import serve_hive


async def _run(workspace: Path, hive: str) -> None:
    """Run the hive until SIGINT/SIGTERM, connected as the environment says: ``SUBHIVE_NATS_URL``
    (comma-separated), ``SUBHIVE_NATS_NKEY`` (its own NKey seed file; or ``SUBHIVE_NATS_USER``/``_PASSWORD``),
    ``SUBHIVE_ROOT`` and ``SUBHIVE_TOKEN``
    (the hive's root token), ``SUBHIVE_STATUS_FILE`` (the heartbeat file), ``SUBHIVE_GRPC_KEYS`` (the hive's
    gRPC key file, followed while it changes), ``SUBHIVE_NATS_FAILOVER`` (seconds to retry writes through a
    cluster's leader election)."""
    env = os.environ
    endpoint = BusEndpoint.from_env(env)
    status = env.get("SUBHIVE_STATUS_FILE")
    keys = env.get("SUBHIVE_GRPC_KEYS")
    await serve_hive(
        workspace,
        hive,
        endpoint,
        root_address=env.get("SUBHIVE_ROOT"),
        token=env.get("SUBHIVE_TOKEN"),
        status_file=Path(status) if status else None,
        grpc_keys=Path(keys) if keys else None,
        failover=float(env.get("SUBHIVE_NATS_FAILOVER") or 0),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m subhive.hive", description=__doc__.split("\n")[0])
    parser.add_argument("--workspace", type=Path, required=True)
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--hive")
    which.add_argument("--host", help="run the hives the supervisor names on stdin (several in one process)")
    args = parser.parse_args(argv)
    if args.host is not None:
        return _host_main(args.workspace, args.host)
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format=f"%(asctime)s {args.hive} %(levelname)s %(name)s: %(message)s"
    )
    try:
        asyncio.run(_run(args.workspace, args.hive))
    except SubhiveError as exc:
        print(f"error: {exc.code}: {exc}" + (f"\nhint: {exc.hint}" if exc.hint else ""), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 0
    return 0


def _host_main(workspace: Path, name: str) -> int:
    from ._host import HiveLogs, serve_host

    logs = HiveLogs(sys.stderr)
    logs.setFormatter(logging.Formatter("%(asctime)s %(hive)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[logs])
    try:
        return asyncio.run(serve_host(workspace, name, sys.stdin.buffer, sys.stdout, logs))
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())
