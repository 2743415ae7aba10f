"""Decompose a generated 100,000-file repository, and real trees against a directory-only split.

    .venv/bin/python benchmarks/bench_decompose.py                 # prints tables
    .venv/bin/python benchmarks/bench_decompose.py --json          # one JSON object per part
    .venv/bin/python benchmarks/bench_decompose.py --files 20000   # a smaller generated repository
    .venv/bin/python benchmarks/bench_decompose.py --skip-generated

**Scale.** The generated repository has services in Python (packages with ``__init__.py``), TypeScript
(a ``package.json`` each) and Go (a ``go.mod`` each), nested 1-5 directories deep with 4-25 files per
directory and 1-3 KB per file. Each file imports 2-6 others: mostly its own directory, then its parent and
child packages, other packages of its service, a shared library, and now and then another service; plus
standard-library imports that resolve to nothing. ``subhive decompose`` runs in a child process, so the
peak RSS printed is that of the decomposition alone (the child then also runs the directory-only split, for
the cut ratio; its time is not counted, its memory is part of the peak). Targets (issue 7): under 30 s and 2 GiB.

**Quality.** On trees already on the machine (the Python standard library without its site-packages, and
this project's virtualenv site-packages), the import edges cut by the graph split are compared with a
directory-only split with the same budget, measured in the same process (``strategy="directory"``: the
same recursion, loose files cut in path order, units packed in path order). Target: at most 0.7 x.
"""

from __future__ import annotations

import json
import random
import resource
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parser, render

from subhive.decompose import Budget, decompose

_WORDS = (
    "order",
    "user",
    "cart",
    "price",
    "stock",
    "report",
    "audit",
    "token",
    "event",
    "queue",
    "store",
    "index",
    "search",
    "render",
    "layout",
    "form",
    "auth",
    "mail",
    "cache",
    "batch",
    "job",
    "plan",
    "rule",
)
_LANGUAGES = ("python", "python", "python", "typescript", "typescript", "go")


class _Service:
    def __init__(self, name: str, language: str) -> None:
        self.name = name
        self.language = language
        self.dirs: list[str] = []  # directories relative to the service root ('' is the root)
        self.modules: dict[str, list[str]] = {}  # directory -> module names in it


def _layout(rng: random.Random, target: int) -> list[_Service]:
    services: list[_Service] = []
    count = 0
    while count < target:
        service = _Service(f"svc{len(services):03d}", "python" if not services else rng.choice(_LANGUAGES))
        if not services:
            service.name = "common"
        services.append(service)
        pending = [("", 0)]
        budget = rng.randint(300, 2500)
        made = 0
        while pending and made < budget and count < target:
            directory, depth = pending.pop(0)
            names = sorted({f"{rng.choice(_WORDS)}_{rng.choice(_WORDS)}" for _ in range(rng.randint(4, 25))})
            service.dirs.append(directory)
            service.modules[directory] = names
            made += len(names)
            count += len(names)
            if depth < 5:
                for _ in range(rng.randint(1, 4) if depth < 2 else rng.randint(0, 3)):
                    child = f"{directory}/{rng.choice(_WORDS)}{rng.randint(0, 99)}".lstrip("/")
                    if child not in service.modules and all(child != d for d, _ in pending):
                        pending.append((child, depth + 1))
    return services


def _pick(rng: random.Random, service: _Service, directory: str, services: list[_Service]) -> tuple[_Service, str]:
    roll = rng.random()
    if roll < 0.6:
        return service, directory
    if roll < 0.8:
        parent = directory.rpartition("/")[0]
        related = [d for d in service.dirs if d == parent or d.rpartition("/")[0] == directory] or [directory]
        return service, rng.choice(related)
    if roll < 0.9:
        return service, rng.choice(service.dirs)
    other = services[0] if roll < 0.95 else rng.choice(services)
    return other, rng.choice(other.dirs)


def _import(  # noqa: PLR0911 - a table
    source: _Service,
    directory: str,
    target: _Service,
    target_dir: str,
    module: str,
) -> str:
    if source.language == "python":
        if target is source and target_dir == directory:
            return f"from . import {module}\n"
        dotted = ".".join(p for p in (target.name, *target_dir.split("/")) if p)
        return f"from {dotted} import {module}\n" if target.language == "python" else "import json\n"
    if source.language == "typescript":
        if target is source:
            here = Path("/", directory)
            relative = Path("/", target_dir, module).relative_to("/")
            up = "../" * len(here.relative_to("/").parts)
            return f"import {{ x }} from './{up}{relative.as_posix()}'\n"
        if target.language == "typescript":
            return f"import {{ x }} from '@bench/{target.name}/{'/'.join(p for p in (target_dir, module) if p)}'\n"
        return "import fs from 'fs'\n"
    if target.language == "go" and not (target is source and target_dir == directory):
        return f'import "example.com/{target.name}/{target_dir}"\n'.replace('/"', '"')
    return 'import "fmt"\n'


_EXTENSION = {"python": ".py", "typescript": ".ts", "go": ".go"}


def generate(root: Path, target: int, seed: int = 7) -> int:
    """Write about ``target`` files under ``root``; return how many were written."""
    rng = random.Random(seed)
    services = _layout(rng, target)
    written = 0
    for service in services:
        base = root / ("libs" if service.name == "common" else "services") / service.name
        base.mkdir(parents=True, exist_ok=True)
        if service.language == "typescript":
            (base / "package.json").write_text(json.dumps({"name": f"@bench/{service.name}"}))
        elif service.language == "go":
            (base / "go.mod").write_text(f"module example.com/{service.name}\n\ngo 1.22\n")
        for directory in service.dirs:
            folder = base / directory
            folder.mkdir(parents=True, exist_ok=True)
            if service.language == "python":
                (folder / "__init__.py").write_text("")
            for module in service.modules[directory]:
                lines: list[str] = []
                if service.language == "go":
                    lines.append(f"package {Path(directory).name or service.name}\n\n")
                for _ in range(rng.randint(2, 6)):
                    target_service, target_dir = _pick(rng, service, directory, services)
                    choice = rng.choice(target_service.modules[target_dir])
                    if (target_service, target_dir, choice) != (service, directory, module):
                        lines.append(_import(service, directory, target_service, target_dir, choice))
                lines.append("import os\n" if service.language == "python" else "")
                body = "".join(
                    f"# {rng.choice(_WORDS)} {rng.choice(_WORDS)} {i} handles the usual case\n"
                    for i in range(rng.randint(15, 60))
                )
                (folder / (module + _EXTENSION[service.language])).write_text("".join(lines) + body)
                written += 1
    return written


_CHILD = """
import json, sys, time
sys.path.insert(0, {repo!r})
from subhive.decompose import decompose
start = time.perf_counter()
plan = decompose({root!r})
elapsed = time.perf_counter() - start
directory = decompose({root!r}, strategy="directory")
print(json.dumps({{"seconds": elapsed, "files": plan.stats.files, "edges_total": plan.stats.edges_total,
                  "edges_cut": plan.stats.edges_cut, "directory_only_cut": directory.stats.edges_cut,
                  "hives": len(plan.hives), "leaves": sum(1 for _ in plan.leaves()),
                  "skipped": sum(plan.stats.skipped.values())}}))
"""


def generated(files: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="subhive-bench-decompose-") as tmp:
        start = time.perf_counter()
        count = generate(Path(tmp), files)
        generate_s = time.perf_counter() - start
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        done = subprocess.run(
            [sys.executable, "-c", _CHILD.format(repo=str(Path(__file__).resolve().parents[1]), root=tmp)],
            capture_output=True,
            text=True,
            check=True,
        )
        peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    result = json.loads(done.stdout)
    return {
        "files_written": count,
        "generate_s": round(generate_s, 1),
        "decompose_s": round(result["seconds"], 2),
        "peak_rss_mib": round(max(peak_kib, before) / 1024, 1),
        "files": result["files"],
        "edges_total": result["edges_total"],
        "edges_cut": result["edges_cut"],
        "directory_only_cut": result["directory_only_cut"],
        "ratio": round(result["edges_cut"] / max(1, result["directory_only_cut"]), 3),
        "hives": result["hives"],
        "leaves": result["leaves"],
        "skipped": result["skipped"],
        "target_s": 30,
        "target_rss_mib": 2048,
        "within_target": result["seconds"] < 30 and peak_kib / 1024 < 2048,
    }


def real_tree(path: Path, exclude: tuple[str, ...]) -> dict[str, Any]:
    budget = Budget()
    start = time.perf_counter()
    graph = decompose(path, budget, exclude=exclude)
    graph_s = time.perf_counter() - start
    directory = decompose(path, budget, exclude=exclude, strategy="directory")
    cut, base = graph.stats.edges_cut, directory.stats.edges_cut
    return {
        "path": str(path),
        "files": graph.stats.files,
        "edges_total": graph.stats.edges_total,
        "edges_cut": cut,
        "directory_only_cut": base,
        "ratio": round(cut / base, 3) if base else None,
        "leaves": sum(1 for _ in graph.leaves()),
        "directory_only_leaves": sum(1 for _ in directory.leaves()),
        "decompose_s": round(graph_s, 2),
        "target_ratio": 0.7,
        "within_target": base == 0 or cut / base <= 0.7,
    }


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--files", type=int, default=100_000, help="files in the generated repository")
    p.add_argument("--skip-generated", action="store_true", help="only the real trees")
    args = p.parse_args(argv)
    parts: list[tuple[str, dict[str, Any]]] = []
    if not args.skip_generated:
        parts.append((f"decompose: generated repository of {args.files:,} files", generated(args.files)))
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    site = Path(__file__).resolve().parents[1] / ".venv" / "lib" / version / "site-packages"
    for title, path, exclude in (
        ("standard library", stdlib, ("site-packages/", "dist-packages/")),
        ("virtualenv site-packages", site, ()),
    ):
        if path.is_dir():
            parts.append((f"decompose: {title} vs a directory-only split", real_tree(path, exclude)))
    for title, figures in parts:
        print(render(title, figures, as_json=args.json))
        if not args.json:
            print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
