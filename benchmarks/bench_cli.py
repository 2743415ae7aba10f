"""Time a whole ``subhive schema diff`` process on two tiny schema files, against ``python -c pass``.

    .venv/bin/python benchmarks/bench_cli.py            # a table: median and best process time, the ratio
    .venv/bin/python benchmarks/bench_cli.py --json     # the same figures as one JSON object

What a user waits for when a script or a git hook calls the CLI once per file: interpreter start, imports,
argument parsing, reading and linting both files, the diff, the output. Issue #16 targets <= 0.15 s on an
unloaded machine. The baseline, ``python -c pass`` with the same interpreter, runs interleaved with it in the
same run, so "ratio_to_python" stays comparable on a busy machine where absolute times are not; the CPU time
each process used (user + system, from the OS) is reported too: on a shared machine it is the figure closest to
what an idle one would take.

Bytecode is cached in a private directory (as an installed package has its ``.pyc`` files) and warmed before
timing, whatever PYTHONDONTWRITEBYTECODE says; each process starts in a scratch directory with the
repository on PYTHONPATH.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from the repo root without installing

from benchmarks._common import parser, render

REPO = Path(__file__).resolve().parents[1]
TARGET_S = 0.15
_OLD = '{"type": "object", "properties": {"id": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}}}'
_NEW = '{"type": "object", "properties": {"id": {"type": "string"}, "qty": {"type": "integer"}}, "required": ["id"]}'


def _run(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=20, help="timed processes of each kind (default 20)")
    args = p.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="bench-cli-") as scratch:
        root = Path(scratch)
        (root / "old.json").write_text(_OLD)
        (root / "new.json").write_text(_NEW)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env |= {"PYTHONPATH": str(REPO), "PYTHONPYCACHEPREFIX": str(root / "pycache")}
        python = [sys.executable, "-c", "pass"]
        diff = [sys.executable, "-m", "subhive", "schema", "diff", "old.json", "new.json"]
        for _ in range(2):  # write the bytecode cache, warm the OS's file cache
            _run(diff, root, env)
        times: dict[str, list[float]] = {"python": [], "diff": []}
        cpu: dict[str, list[float]] = {"python": [], "diff": []}
        for _ in range(args.runs):  # interleaved: a burst of load hits both alike
            for kind, command in (("python", python), ("diff", diff)):
                wall, used = _run(command, root, env)
                times[kind].append(wall)
                cpu[kind].append(used)

    median = {k: statistics.median(v) for k, v in times.items()}
    figures: dict[str, Any] = {
        "runs": args.runs,
        "schema_diff_median_s": round(median["diff"], 4),
        "schema_diff_best_s": round(min(times["diff"]), 4),
        "python_pass_median_s": round(median["python"], 4),
        "python_pass_best_s": round(min(times["python"]), 4),
        "ratio_to_python": round(median["diff"] / median["python"], 2),
        "schema_diff_cpu_median_s": round(statistics.median(cpu["diff"]), 4),
        "schema_diff_cpu_best_s": round(min(cpu["diff"]), 4),
        "python_pass_cpu_median_s": round(statistics.median(cpu["python"]), 4),
        "target_s": TARGET_S,
        "meets_target": min(times["diff"]) <= TARGET_S,
    }
    print(render("subhive schema diff, one process", figures, as_json=args.json))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
