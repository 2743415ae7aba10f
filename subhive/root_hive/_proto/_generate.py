"""Regenerate the root hive's protobuf and gRPC modules from ``contracts/root-hive/1.5.0/root_hive.proto``.

    .venv/bin/python -m subhive.root_hive._proto._generate           # rewrite the generated files
    .venv/bin/python -m subhive.root_hive._proto._generate --check   # exit 1 if they are stale

protoc (grpcio-tools) writes ``root_hive_pb2.py`` and ``root_hive_pb2_grpc.py``; mypy-protobuf writes the
typed ``.pyi`` for both (the built-in ``--pyi_out`` leaves the gRPC module untyped). Three fixes follow:
protoc imports ``root_hive_pb2`` absolutely, which only works when this directory is on ``sys.path``, so the
import is made package-relative; flake8-pyi markers that ruff does not know are dropped; and every file gets
a "generated, do not edit" header naming this command.
The result is deterministic, so a test regenerates in memory and compares bytes.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

__all__ = ["GENERATED", "PROTO", "generate"]

_HERE = Path(__file__).resolve().parent
PROTO = _HERE.parents[2] / "contracts" / "root-hive" / "1.5.0" / "root_hive.proto"
GENERATED = ("root_hive_pb2.py", "root_hive_pb2.pyi", "root_hive_pb2_grpc.py", "root_hive_pb2_grpc.pyi")

_HEADER = (
    "# Generated from contracts/root-hive/1.5.0/root_hive.proto; do not edit.\n"
    "# Regenerate with: python -m subhive.root_hive._proto._generate\n"
    "# ruff: noqa\n"
    # mypy-protobuf targets every grpc stub version: some ignores and overloads are moot here.
    '# mypy: disable-error-code="unused-ignore,overload-cannot-match"\n'
)
_ABSOLUTE_IMPORT = re.compile(r"^import root_hive_pb2( as \w+)?$", re.MULTILINE)
# mypy-protobuf marks lines for flake8-pyi (Y015); ruff knows no such code and would flag the marker itself.
_PYI_NOQA = re.compile(r"  # noqa: Y\d+$", re.MULTILINE)


def generate(proto: Path = PROTO) -> dict[str, bytes]:
    """Run protoc and mypy-protobuf on ``proto``; return ``{file name: content}`` with the fixes applied.

    >>> sorted(generate())  # doctest: +SKIP
    ['root_hive_pb2.py', 'root_hive_pb2.pyi', 'root_hive_pb2_grpc.py', 'root_hive_pb2_grpc.pyi']
    """
    bin_dir = Path(sys.executable).parent
    with tempfile.TemporaryDirectory() as tmp:
        # A subprocess, not grpc_tools.protoc.main in-process: plugins and diagnostics stay out of this process.
        subprocess.run(
            [
                sys.executable,
                "-m",
                "grpc_tools.protoc",
                f"-I{proto.parent}",
                f"--plugin=protoc-gen-mypy={bin_dir / 'protoc-gen-mypy'}",
                f"--plugin=protoc-gen-mypy_grpc={bin_dir / 'protoc-gen-mypy_grpc'}",
                f"--python_out={tmp}",
                f"--grpc_python_out={tmp}",
                f"--mypy_out={tmp}",
                f"--mypy_grpc_out={tmp}",
                proto.name,
            ],
            check=True,
            capture_output=True,
        )
        out: dict[str, bytes] = {}
        for name in GENERATED:
            text = (Path(tmp) / name).read_text(encoding="utf-8")
            text = _ABSOLUTE_IMPORT.sub(lambda m: f"from . import root_hive_pb2{m.group(1) or ''}", text)
            text = _PYI_NOQA.sub("", text)
            out[name] = (_HEADER + text).encode("utf-8")
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    fresh = generate()
    stale = [
        name for name, data in fresh.items() if not (_HERE / name).is_file() or (_HERE / name).read_bytes() != data
    ]
    if "--check" in args:
        for name in stale:
            sys.stderr.write(f"stale: {_HERE / name}\n")
        return 1 if stale else 0
    for name in stale:
        (_HERE / name).write_bytes(fresh[name])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
