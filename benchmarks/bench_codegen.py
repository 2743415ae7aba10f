"""Codegen over a workspace of many accepted contracts: a full run, a no-op run, one changed contract.

    .venv/bin/python benchmarks/bench_codegen.py            # 200 contracts, prints a table
    .venv/bin/python benchmarks/bench_codegen.py --json     # the same figures as one JSON object

The contracts are bench_lint's realistic registry (2-4 operations and two events each, 10-40 properties per
schema, local and cross-file ``$ref``s, one in ten with a gRPC service), provided by 10 hives and consumed
by 20, each consumer taking 10 contracts, all accepted in the lock by the root's engine. Targets (issue 4):
full generation < 60 s, a no-op run < 1 s, one new contract version regenerating only the hives that use
it < 5 s.

Baseline, measured in the same run: the ``datamodel-codegen`` CLI once per schema file with its default
formatters (black, isort), which is what a hand-made pipeline would do. At about a second a call it is timed
on a sample of schema files (``--baseline-sample``) and the per-schema figure is compared with ours.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parser, render
from bench_lint import generate

from subhive.codegen import generate_stubs
from subhive.root_hive import RootHive
from subhive.root_hive._client import contract_files
from subhive.workspace import Kind, Requirement, SubhiveManifest, VersionRange, init_workspace, open_workspace

PROVIDERS = 10
CONSUMERS = 20
PER_CONSUMER = 10


def build(root: Path, count: int) -> list[Path]:
    """A workspace with ``count`` accepted contracts, its providers and consumers; returns the schema files."""
    init_workspace(root)
    schema_files = generate(root, count)
    names = [f"c{n:04d}" for n in range(count)]
    for n, name in enumerate(names):
        manifest = root / "contracts" / name / "1.0.0" / "contract.yaml"
        manifest.write_text(manifest.read_text().replace("provider: backend", f"provider: p{n % PROVIDERS}"))
    hives: dict[str, SubhiveManifest] = {}
    for p in range(PROVIDERS):
        hives[f"p{p}"] = SubhiveManifest(name=f"p{p}", kind=Kind.backend, provides=tuple(names[p::PROVIDERS]))
    for c in range(CONSUMERS):
        taken = [names[(c * PER_CONSUMER + i * 7) % count] for i in range(PER_CONSUMER)]
        hives[f"u{c}"] = SubhiveManifest(
            name=f"u{c}",
            kind=Kind.ui,
            consumes=tuple(Requirement(t, VersionRange.parse("^1.0")) for t in sorted(set(taken))),
        )
    for name, manifest in hives.items():
        directory = root / "subhives" / name
        directory.mkdir(parents=True)
        (directory / "subhive.toml").write_text(manifest.to_toml(), encoding="utf-8")
    engine = RootHive.open(root)
    try:
        for n, name in enumerate(names):
            outcome = engine.propose(f"p{n % PROVIDERS}", contract_files(root / "contracts" / name / "1.0.0"))
            if outcome.status != "accepted":
                raise SystemExit(f"{name} was not accepted: {outcome.message}")
    finally:
        engine.close()
    return schema_files


def accept_new_patch(root: Path, name: str, provider: str) -> None:
    """Propose ``name`` 1.0.1: 1.0.0 with a reworded description, so only the hives that use it change."""
    old, new = root / "contracts" / name / "1.0.0", root / "contracts" / name / "1.0.1"
    shutil.copytree(old, new)
    manifest = new / "contract.yaml"
    text = manifest.read_text().replace("version: 1.0.0", "version: 1.0.1")
    manifest.write_text(text.replace("description: ", "description: Reworded. ", 1))
    engine = RootHive.open(root)
    try:
        outcome = engine.propose(provider, contract_files(new))
        if outcome.status != "accepted":
            raise SystemExit(f"{name} 1.0.1 was not accepted: {outcome.message}")
    finally:
        engine.close()


def baseline(schema_files: list[Path], sample: int, out: Path) -> float:
    """Seconds per schema file for the datamodel-codegen CLI with its defaults, over a spread sample."""
    cli = Path(sys.executable).with_name("datamodel-codegen")
    step = max(1, len(schema_files) // sample)
    chosen = schema_files[::step][:sample]
    start = time.perf_counter()
    for i, path in enumerate(chosen):
        subprocess.run(
            [
                str(cli),
                "--input",
                str(path),
                "--input-file-type",
                "jsonschema",
                "--output-model-type",
                "pydantic_v2.BaseModel",
                "--output",
                str(out / f"m{i}.py"),
            ],
            check=True,
            capture_output=True,
        )
    return (time.perf_counter() - start) / len(chosen)


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--contracts", type=int, default=200)
    p.add_argument("--baseline-sample", type=int, default=20, help="schema files timed with the CLI")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="subhive-bench-codegen-") as tmp:
        root = Path(tmp) / "ws"
        schema_files = build(root, args.contracts)
        ws = open_workspace(root)

        start = time.perf_counter()
        full = generate_stubs(ws)
        full_s = time.perf_counter() - start
        if full.problems:
            for problem in full.problems[:10]:
                print(problem, file=sys.stderr)
            return 1
        packages = len(full.unchanged) + len({Path(f).parent for f in full.written if f.endswith("/models.py")})

        start = time.perf_counter()
        noop = generate_stubs(open_workspace(root))
        noop_s = time.perf_counter() - start
        if noop.written or noop.removed:
            print(f"a no-op run wrote {len(noop.written)} files", file=sys.stderr)
            return 1

        accept_new_patch(root, "c0000", "p0")
        start = time.perf_counter()
        one = generate_stubs(open_workspace(root))
        one_s = time.perf_counter() - start
        touched = sorted({Path(f).parts[1] for f in one.written})

        out = Path(tmp) / "baseline"
        out.mkdir()
        per_schema_cli = baseline(schema_files, args.baseline_sample, out)
    per_schema_ours = full_s / len(schema_files)
    figures = {
        "contracts": args.contracts,
        "hives": PROVIDERS + CONSUMERS,
        "stub_packages": packages,
        "schema_files": len(schema_files),
        "full_s": round(full_s, 2),
        "full_target_s": 60.0,
        "noop_s": round(noop_s, 3),
        "noop_target_s": 1.0,
        "one_change_s": round(one_s, 2),
        "one_change_target_s": 5.0,
        "one_change_hives": ",".join(touched),
        "ours_ms_per_schema": round(per_schema_ours * 1e3, 1),
        "datamodel_codegen_cli_ms_per_schema": round(per_schema_cli * 1e3, 1),
        "ratio_ours_to_cli": round(per_schema_ours / per_schema_cli, 3),
        "within_targets": full_s < 60 and noop_s < 1 and one_s < 5,
    }
    print(render("codegen", figures, as_json=args.json))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
