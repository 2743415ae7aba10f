"""Lint a generated registry of contracts and compare with a plain meta-schema check of the same files.

    .venv/bin/python benchmarks/bench_lint.py            # 500 contracts, prints seconds and the ratio
    .venv/bin/python benchmarks/bench_lint.py --json     # the same figures as one JSON object

The registry is realistic: every contract has 2-4 operations and an event, each schema 10-40 properties
with local and cross-file ``$ref``s into a shared ``schemas.json``, and every tenth contract a gRPC service
in a ``.proto`` that imports a second one. The baseline, measured in the same run over the same schema
files, is what a hand-rolled lint would do at the least: ``json.load`` plus
``jsonschema.Draft202012Validator.check_schema`` per file (no manifest, no ``$ref``, no protoc).
Target: lint under 5 s for 500 contracts.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jsonschema import Draft202012Validator

from subhive.contract import lint_paths

_TYPES = ("string", "integer", "number", "boolean")


def _property(rng: random.Random, i: int) -> dict[str, Any]:
    kind = rng.choice((*_TYPES, "ref", "array", "enum"))
    if kind == "string":
        return {
            "type": "string",
            "minLength": 1,
            "maxLength": rng.randint(8, 256),
            **({"pattern": f"^[a-z]{{1,{rng.randint(3, 30)}}}$"} if rng.random() < 0.3 else {}),
        }
    if kind in ("integer", "number"):
        return {"type": kind, "minimum": 0, "maximum": rng.randint(10, 10_000), "description": f"field {i}"}
    if kind == "boolean":
        return {"type": "boolean", "default": False}
    if kind == "ref":
        return {"$ref": rng.choice(("schemas.json#/$defs/Money", "schemas.json#/$defs/Address", "#/$defs/Local"))}
    if kind == "array":
        return {"type": "array", "maxItems": 100, "items": {"$ref": "schemas.json#/$defs/Line"}}
    return {"enum": [f"v{j}" for j in range(rng.randint(2, 6))]}


def _schema(rng: random.Random, title: str) -> dict[str, Any]:
    count = rng.randint(10, 40)
    props = {f"field_{i}": _property(rng, i) for i in range(count)}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": title,
        "type": "object",
        "required": sorted(rng.sample(sorted(props), k=min(3, count))),
        "properties": props,
        "additionalProperties": False,
        "$defs": {
            "Local": {"type": "object", "properties": {"id": {"type": "string"}, "next": {"$ref": "#/$defs/Local"}}}
        },
    }


_SHARED = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$defs": {
        "Money": {
            "type": "object",
            "required": ["units", "currency"],
            "properties": {"units": {"type": "integer"}, "currency": {"enum": ["EUR", "USD", "GBP"]}},
        },
        "Address": {
            "type": "object",
            "properties": {
                "street": {"type": "string", "maxLength": 200},
                "city": {"type": "string"},
                "zip": {"type": "string"},
            },
        },
        "Line": {
            "type": "object",
            "required": ["sku"],
            "properties": {
                "sku": {"type": "string", "pattern": "^[A-Z0-9-]{3,32}$"},
                "quantity": {"type": "integer", "minimum": 1},
                "price": {"$ref": "#/$defs/Money"},
            },
        },
        "Ref": {"type": "object", "required": ["id"], "properties": {"id": {"type": "string"}}},
    },
}

_PROTO = """syntax = "proto3";
package bench.c{n}.v1;

import "common.proto";

message Request {{ string id = 1; bench.common.Money total = 2; repeated string tags = 3; }}
message Reply {{ string id = 1; int64 created = 2; }}

service Service{n} {{
  rpc Create(Request) returns (Reply);
  rpc Get(Request) returns (Reply);
}}
"""
_COMMON_PROTO = """syntax = "proto3";
package bench.common;

message Money { int64 units = 1; string currency = 2; }
"""


def generate(root: Path, count: int, *, proto_every: int = 10, seed: int = 7) -> list[Path]:
    """Write ``count`` contracts under ``root``/contracts and return every JSON Schema file written."""
    rng = random.Random(seed)
    schema_files: list[Path] = []
    for n in range(count):
        directory = root / "contracts" / f"c{n:04d}" / "1.0.0"
        directory.mkdir(parents=True)
        lines = [
            f"contract: c{n:04d}",
            "version: 1.0.0",
            "provider: backend",
            f"description: Generated contract {n}.",
            "operations:",
        ]
        files = {"schemas.json": _SHARED}
        for op in range(rng.randint(2, 4)):
            files[f"op{op}.input.json"] = _schema(rng, f"Op{op}Input")
            files[f"op{op}.output.json"] = _schema(rng, f"Op{op}Output")
            lines += [
                f"  op{op}:",
                f"    description: Operation {op}.",
                f"    input: op{op}.input.json",
                f"    output: op{op}.output.json",
            ]
        files["event.json"] = _schema(rng, "Event")
        lines += [
            "events:",
            "  changed:",
            "    payload: event.json",
            "  referenced:",
            "    payload: schemas.json#/$defs/Ref",
        ]
        if proto_every and n % proto_every == 0:
            (directory / f"service{n}.proto").write_text(_PROTO.format(n=n))
            (directory / "common.proto").write_text(_COMMON_PROTO)
            lines += ["grpc:", f"  proto: service{n}.proto", f"  service: bench.c{n}.v1.Service{n}"]
        for name, schema in files.items():
            (directory / name).write_text(json.dumps(schema, indent=2))
            schema_files.append(directory / name)
        (directory / "contract.yaml").write_text("\n".join(lines) + "\n")
    return schema_files


def baseline(files: list[Path]) -> float:
    start = time.perf_counter()
    for path in files:
        Draft202012Validator.check_schema(json.loads(path.read_text()))
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contracts", type=int, default=500)
    parser.add_argument("--proto-every", type=int, default=10, help="one contract in N has a gRPC service (0: none)")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="subhive-bench-lint-") as tmp:
        root = Path(tmp)
        files = generate(root, args.contracts, proto_every=args.proto_every)
        start = time.perf_counter()
        result = lint_paths([root / "contracts"])
        lint_s = time.perf_counter() - start
        if not result.ok or len(result.contracts) != args.contracts:
            for problem in result.problems[:10]:
                print(problem, file=sys.stderr)
            print(f"lint found {len(result.problems)} problems in a registry that is valid", file=sys.stderr)
            return 1
        base_s = baseline(files)
    figures = {
        "contracts": args.contracts,
        "schema_files": len(files),
        "protos": len(range(0, args.contracts, args.proto_every)) if args.proto_every else 0,
        "lint_s": round(lint_s, 3),
        "baseline_check_schema_s": round(base_s, 3),
        "ratio_lint_to_baseline": round(lint_s / base_s, 3),
        "target_s": 5.0,
        "within_target": lint_s < 5.0,
    }
    if args.json:
        print(json.dumps(figures))
    else:
        print(
            f"lint: {figures['contracts']} contracts, {figures['schema_files']} schema files, "
            f"{figures['protos']} protos in {lint_s:.2f} s (target < 5 s)"
        )
        print(f"baseline: json.load + check_schema over the same schema files in {base_s:.2f} s")
        print(f"ratio lint / baseline: {lint_s / base_s:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
