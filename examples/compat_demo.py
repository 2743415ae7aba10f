"""The compatibility demo: lint the example contracts, then judge three version changes.

Run it with ``.venv/bin/python examples/compat_demo.py`` once ``scripts/demo`` has installed subhive. Every
step is a real ``subhive`` command; it fails (exit 1) if any command's exit code is not the one expected.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

STEPS: list[tuple[str, list[str], int]] = [
    (
        "Lint every example contract: manifests, schemas against the 2020-12 meta-schema, $refs, .proto files.",
        ["contract", "lint", "contracts"],
        0,
    ),
    (
        "orders 1.0.0 -> 1.1.0 adds an optional request field and an event: additive, a minor bump is right.",
        ["contract", "check", "contracts/orders/1.1.0", "--against", "contracts/orders/1.0.0"],
        0,
    ),
    (
        "orders 1.1.0 -> 2.0.0 requires a new field and widens a reply enum: breaking, so a major bump.",
        ["contract", "check", "contracts/orders/2.0.0", "--against", "contracts/orders/1.1.0"],
        0,
    ),
    (
        "orders 1.2.0 removes an operation but claims a minor bump: refused (exit 1), with the reason.",
        ["contract", "check", "examples/semver-refused/orders/1.2.0", "--against", "contracts/orders/1.1.0"],
        1,
    ),
    (
        "One schema diffed on its own, as JSON for machines.",
        [
            "schema",
            "diff",
            "contracts/orders/1.0.0/place_order.input.json",
            "contracts/orders/2.0.0/place_order.input.json",
            "--format",
            "json",
        ],
        0,
    ),
]


def main() -> int:
    exe = shutil.which("subhive", path=str(Path(sys.executable).parent)) or "subhive"
    failures = 0
    for number, (what, args, expected) in enumerate(STEPS, start=1):
        print(f"\n== {number}. {what}\n$ subhive {' '.join(args)}", flush=True)
        code = subprocess.run([exe, *args], cwd=ROOT, check=False).returncode
        if code != expected:
            failures += 1
            print(f"!! expected exit code {expected}, got {code}", flush=True)
    print(f"\ndemo {'finished: every step behaved as expected' if not failures else f'FAILED: {failures} step(s)'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
