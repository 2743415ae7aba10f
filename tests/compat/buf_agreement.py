"""Judge one of buf's breaking-change cases the way buf's own test expects it.

A case is a directory with ``previous/`` and ``current/`` ``.proto`` trees; each annotation buf expects names a
file, a line (``None``: the whole file) and a rule. subhive diffs the two sides under the rule's category (the
most lenient buf category holding it) and must report a breaking change at the element declared on that line
(the element itself or something inside it; for a whole-file annotation, any breaking change).

Used by ``test_protobuf_buf_agreement.py`` on the vendored sample and by ``benchmarks/bench_buf_agreement.py``
on every case of a buf checkout.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import yaml
from google.protobuf import descriptor_pb2

from subhive.compat.protobuf import compile_proto, diff_protos

__all__ = ["Annotation", "misses", "side"]


@dataclass(frozen=True)
class Annotation:
    """One breaking change buf's test expects: where, which rule, under which category subhive judges it."""

    file: str
    line: int | None
    rule: str
    category: str


def side(directory: Path) -> descriptor_pb2.FileDescriptorSet:
    """Every file of one side in one set, each compiled from its module root: the ``build.roots`` of the
    side's buf.yaml (v1beta1), else the side's directory, so file names match buf's annotations."""
    fds = descriptor_pb2.FileDescriptorSet()
    seen: set[str] = set()
    for root in _roots(directory):
        for path in sorted(root.rglob("*.proto")):
            for file in compile_proto(path, include_dirs=[root]).file:
                if file.name not in seen:
                    seen.add(file.name)
                    fds.file.append(file)
    return fds


def misses(previous: Path, current: Path, annotations: Iterable[Annotation]) -> list[Annotation]:
    """The annotations subhive does not flag, in the order given."""
    old, new = side(previous), side(current)
    at = _elements(new)
    missed: list[Annotation] = []
    reports: dict[str, list[str]] = {}
    for annotation in annotations:
        if annotation.category not in reports:
            report = diff_protos(old, new, rules=annotation.category)
            reports[annotation.category] = [c.path for c in report.changes if not (c.backward and c.forward)]
        broken = reports[annotation.category]
        names = at.get((annotation.file, annotation.line), set()) if annotation.line is not None else {""}
        flagged = any(
            (name == "" and broken) or any(p == name or p.startswith(f"{name}.") for p in broken) for name in names
        )
        if not flagged:
            missed.append(annotation)
    return missed


def _roots(directory: Path) -> list[Path]:
    config = directory / "buf.yaml"
    if not config.is_file():
        return [directory]
    build = (yaml.safe_load(config.read_text()) or {}).get("build") or {}
    return [directory / root for root in build.get("roots", [])] or [directory]


def _elements(fds: descriptor_pb2.FileDescriptorSet) -> dict[tuple[str, int], set[str]]:
    """(file, line) -> the full names of the elements part of whose declaration starts on that line."""
    found: dict[tuple[str, int], set[str]] = {}
    for file in fds.file:
        paths = _declarations(file)
        for location in file.source_code_info.location:
            if not location.span:
                continue
            path = tuple(location.path)
            owner = next((paths[path[:k]] for k in range(len(path), 0, -1) if path[:k] in paths), "")
            found.setdefault((file.name, location.span[0] + 1), set()).add(owner)
    return found


def _declarations(file: descriptor_pb2.FileDescriptorProto) -> dict[tuple[int, ...], str]:
    """Source-info path -> full name, for every message, field, enum, value, extension, service and RPC."""
    paths: dict[tuple[int, ...], str] = {}
    prefix = f"{file.package}." if file.package else ""
    for i, proto in enumerate(file.message_type):
        _message(paths, proto, prefix + proto.name, (4, i))
    for i, inner in enumerate(file.enum_type):
        _enum(paths, inner, prefix + inner.name, (5, i))
    for i, extension in enumerate(file.extension):
        paths[(7, i)] = prefix + extension.name
    for i, service in enumerate(file.service):
        paths[(6, i)] = prefix + service.name
        for j, method in enumerate(service.method):
            paths[(6, i, 2, j)] = f"{prefix}{service.name}.{method.name}"
    return paths


def _message(
    paths: dict[tuple[int, ...], str], proto: descriptor_pb2.DescriptorProto, name: str, path: tuple[int, ...]
) -> None:
    paths[path] = name
    for i, field in enumerate(proto.field):
        paths[(*path, 2, i)] = f"{name}.{field.name}"
    for i, nested in enumerate(proto.nested_type):
        _message(paths, nested, f"{name}.{nested.name}", (*path, 3, i))
    for i, inner in enumerate(proto.enum_type):
        _enum(paths, inner, f"{name}.{inner.name}", (*path, 4, i))
    for i, extension in enumerate(proto.extension):
        paths[(*path, 6, i)] = f"{name}.{extension.name}"


def _enum(
    paths: dict[tuple[int, ...], str], proto: descriptor_pb2.EnumDescriptorProto, name: str, path: tuple[int, ...]
) -> None:
    paths[path] = name
    for i, value in enumerate(proto.value):
        paths[(*path, 2, i)] = f"{name}.{value.name}"
