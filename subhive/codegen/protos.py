"""Protobuf and gRPC modules, with typed stubs, for a contract's ``.proto`` files (:func:`generate_protos`)."""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
import threading
from pathlib import Path

from ..errors import InputError, Location

__all__ = ["generate_protos"]

_PLUGINS = ("protoc-gen-mypy", "protoc-gen-mypy_grpc")
# protoc's and mypy-protobuf's output has their own style (long descriptor lines, their import order);
# reformatting it is not ours to do, so the generated files opt out of lint, not out of type checking.
_NOQA = "# ruff: noqa\n"
# "file.proto:12:5: message" (protoc's error format), or "file.proto: message" without a position.
_ERROR = re.compile(r"^(?P<file>[^:\n]+\.proto)(?::(?P<line>\d+)(?::\d+)?)?: (?P<message>.*)$", re.MULTILINE)
_IMPORT = re.compile(r"^import (?P<module>[\w.]+)(?: as (?P<alias>\w+))?[ \t]*$", re.MULTILINE)
_FROM = re.compile(r"^from (?P<package>[\w.]+) import (?P<names>[\w, ]+?)[ \t]*$", re.MULTILINE)
# protoc reports on file descriptor 2 (a C++ stream); redirecting it is process-wide, hence one at a time.
_FD_LOCK = threading.Lock()


def _plugin(name: str) -> str:
    """The plugin executable: next to this interpreter (a virtualenv's bin), else on PATH."""
    beside = Path(sys.executable).with_name(name)
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which(name)
    if found is None:
        raise InputError(
            f"the protoc plugin {name} is not installed",
            code="codegen.protoc_plugin_missing",
            hint="install mypy-protobuf (a dependency of subhive) into this environment",
        )
    return found


def _run_protoc(args: list[str]) -> tuple[int, str]:
    """``grpc_tools.protoc.main(args)`` with what it writes to stderr captured."""
    from grpc_tools import protoc

    with _FD_LOCK, tempfile.TemporaryFile(mode="w+b") as err:
        sys.stderr.flush()
        saved = os.dup(2)
        try:
            os.dup2(err.fileno(), 2)
            code = int(protoc.main(args))
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        err.seek(0)
        return code, err.read().decode("utf-8", "replace")


def _protoc_error(output: str, proto_root: Path) -> InputError:
    found = _ERROR.search(output)
    if found is None:
        text = " ".join(output.split()) or "protoc failed without a message"
        return InputError(
            f"protoc failed: {text}",
            code="codegen.protoc_failed",
            location=Location(file=str(proto_root)),
            hint="run `subhive contract lint` on the contract to see what is wrong with its .proto",
        )
    line = int(found["line"]) if found["line"] else None
    file = found["file"]
    path = proto_root / file if not Path(file).is_absolute() else Path(file)
    return InputError(
        f"protoc: {found['message'].strip()}",
        code="codegen.protoc_failed",
        location=Location(file=str(path), line=line),
        hint="fix the .proto file (the contract lint reports the same problem)",
    )


def _relative_imports(text: str, depth: int, generated: set[str]) -> str:
    """Turn ``import a.b_pb2 as x`` / ``from a import b_pb2`` of generated modules into relative imports."""
    dots = "." * (depth + 1)

    def absolute(match: re.Match[str]) -> str:
        module, alias = match["module"], match["alias"]
        if module not in generated:
            return match[0]
        package, _, name = module.rpartition(".")
        return f"from {dots}{package} import {name}" + (f" as {alias}" if alias else "")

    def from_import(match: re.Match[str]) -> str:
        package = match["package"]
        names = [n.strip().split(" as ")[0] for n in match["names"].split(",")]
        if not all(f"{package}.{n}" in generated for n in names):
            return match[0]
        return f"from {dots}{package} import {match['names']}"

    out = _FROM.sub(from_import, _IMPORT.sub(absolute, text))
    # `import a.b_pb2` without an alias is used as `a.b_pb2.X`; after the rewrite the module is `b_pb2`.
    for module in sorted(generated, key=len, reverse=True):
        if "." in module and re.search(rf"^import {re.escape(module)}[ \t]*$", text, re.MULTILINE):
            out = re.sub(rf"\b{re.escape(module)}\.", module.rpartition(".")[2] + ".", out)
    return out


def _with_header(text: str, header: str) -> str:
    """``header`` (and the lint opt-out) first, after a shebang or encoding line, which must stay on top."""
    lines = text.splitlines(keepends=True)
    keep = 0
    while keep < min(2, len(lines)) and (lines[keep].startswith("#!") or re.match(r"^#.*coding[:=]", lines[keep])):
        keep += 1
    return "".join(lines[:keep]) + header + _NOQA + "".join(lines[keep:])


def generate_protos(protos: list[Path], *, proto_root: Path, out_dir: Path, header: str) -> list[Path]:
    """Compile ``protos`` (imports resolved from ``proto_root``) into ``out_dir``; return the files written.

    Imports the contract does not hold resolve as the compatibility checks resolve them
    (:func:`subhive.compat.protobuf.proto_roots`): ``-I`` paths, the workspace's ``proto_paths``, the
    well-known types and googleapis' common protos. Only ``protos`` are generated: modules they import from
    elsewhere come from their own packages (``google.api.annotations_pb2`` from googleapis-common-protos).

    Every written file starts with ``header``; imports between generated modules are relative. A ``.proto``
    that does not compile raises :class:`~subhive.errors.InputError` with its file and line.

    protoc runs in process with mypy-protobuf's plugins (``--mypy_out``, ``--mypy_grpc_out``): protoc's own
    ``--pyi_out`` leaves the ``_pb2_grpc`` modules untyped. protoc writes ``import inventory_pb2`` as if
    ``out_dir`` were on ``sys.path``, so the imports are rewritten to relative ones: the output works inside any
    package.

    >>> generate_protos([Path("contracts/inventory/1.0.0/inventory.proto")],  # doctest: +SKIP
    ...                 proto_root=Path("contracts/inventory/1.0.0"), out_dir=Path("pkg/pb"), header="# gen\n")
    [PosixPath('pkg/pb/inventory_pb2.py'), PosixPath('pkg/pb/inventory_pb2.pyi'), ...]
    """
    root = Path(os.path.abspath(proto_root))
    out = Path(os.path.abspath(out_dir))
    out.mkdir(parents=True, exist_ok=True)
    names: list[str] = []
    for proto in protos:
        path = Path(os.path.abspath(proto))
        if root not in path.parents:
            raise InputError(
                f"{proto} is not inside {proto_root}",
                code="codegen.proto_outside",
                location=Location(file=str(proto)),
                hint="pass the contract directory as proto_root",
            )
        names.append(path.relative_to(root).as_posix())
    if not names:
        return []
    from ..compat.protobuf import proto_roots

    before = {p for p in out.rglob("*") if p.is_file()}
    args = [
        "grpc_tools.protoc",
        *(f"-I{r}" for r in proto_roots(protos[0], [root])),
        f"--python_out={out}",
        f"--grpc_python_out={out}",
        f"--mypy_out={out}",
        f"--mypy_grpc_out={out}",
        f"--plugin=protoc-gen-mypy={_plugin(_PLUGINS[0])}",
        f"--plugin=protoc-gen-mypy_grpc={_plugin(_PLUGINS[1])}",
        *names,
    ]
    code, output = _run_protoc(args)
    if code != 0:
        raise _protoc_error(output, root)
    written = sorted(p for p in out.rglob("*") if p.is_file() and p.suffix in (".py", ".pyi") and p not in before)
    generated = {".".join(p.relative_to(out).with_suffix("").parts) for p in written}
    for path in written:
        depth = len(path.relative_to(out).parts) - 1
        path.write_text(
            _with_header(_relative_imports(path.read_text(encoding="utf-8"), depth, generated), header),
            encoding="utf-8",
        )
    # Subdirectories (protos in packages) must be packages too for the relative imports to work.
    for directory in sorted({p.parent for p in written if p.parent != out}):
        for package in [directory, *directory.parents]:
            if package == out:
                break
            init = package / "__init__.py"
            if not init.exists():
                init.write_text(header, encoding="utf-8")
                written.append(init)
    return sorted(written)
