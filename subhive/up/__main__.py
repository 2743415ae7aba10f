"""``python -m subhive.up --workspace DIR``: the supervisor process that ``subhive up`` starts in the background."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path

from ._supervisor import Supervisor, UpOptions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m subhive.up", description=__doc__.split("\n")[0])
    parser.add_argument("--workspace", type=Path, required=True)
    parser.add_argument("--root-port", type=int, default=0)
    parser.add_argument("--nats-port", type=int, default=0)
    parser.add_argument("--ready-timeout", type=float, default=120.0)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s supervisor %(levelname)s %(name)s: %(message)s"
    )
    options = UpOptions(root_port=args.root_port, nats_port=args.nats_port, ready_timeout=args.ready_timeout)
    return asyncio.run(Supervisor(args.workspace, options).run())


if __name__ == "__main__":
    sys.exit(main())
