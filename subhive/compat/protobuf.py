"""Protobuf compatibility: compile ``.proto`` files with the real protoc and judge every change per direction.
Compiling dominates the cost, so compiled sets and their models are cached per process by content hash.
Wire and ProtoJSON rules and codes: docs/compat-codes.md#protobuf; imports and rule categories:
docs/contracts.md#protobuf-imports-and-rule-categories.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

from google.protobuf import descriptor_pb2

from ..errors import UsageError
from ._proto_codes import CODES, RULES, Rule
from ._proto_compile import compile_proto, compile_proto_bytes, proto_roots
from ._proto_diff import diff_schemas
from ._proto_model import ProtoSchema, build_schema, root_packages
from ._report import DiffReport
from .proto_settings import (
    DEFAULT_BREAKING,
    PROTOBUF_KEYS,
    BreakingRules,
    ProtoSettings,
    bundled_roots,
    extra_proto_paths,
    read_protobuf_table,
    workspace_proto_settings,
)

__all__ = [
    "CODES",
    "DEFAULT_BREAKING",
    "PROTOBUF_KEYS",
    "RULES",
    "BreakingRules",
    "ProtoSettings",
    "ProtoSource",
    "Rule",
    "bundled_roots",
    "compile_proto",
    "diff_protos",
    "extra_proto_paths",
    "proto_roots",
    "read_protobuf_table",
    "rules_for",
    "workspace_proto_settings",
]

#: What :func:`diff_protos` compares: a ``.proto`` file (compiled with its own directory as import root) or
#: an already compiled ``FileDescriptorSet`` (with its imports, as ``protoc --include_imports`` writes it).
ProtoSource = str | Path | descriptor_pb2.FileDescriptorSet

_MODELS: OrderedDict[tuple[str, tuple[str, str] | None], ProtoSchema] = OrderedDict()
_MODELS_LOCK = threading.Lock()
_MODELS_SIZE = 64


def diff_protos(
    old: ProtoSource,
    new: ProtoSource,
    *,
    rules: BreakingRules | str | None = None,
    include_dirs: Sequence[str | Path] = (),
) -> DiffReport:
    """Every change from ``old`` to ``new`` with its effect on each direction, under the rule category
    ``rules`` (default: the ``[protobuf] breaking`` setting of the workspace holding ``new``, else RUNTIME).

    ``diff_protos("v1/orders.proto", "v2/orders.proto").breaking(Direction.FULL)`` lists what breaks;
    ``diff_protos(a, b, rules="WIRE")`` judges the binary encoding only. ``include_dirs`` are searched for
    imports of ``.proto`` paths (see :func:`compile_proto`).
    Raises :class:`~subhive.errors.InputError` / ``ContractInvalid`` when a file is missing or does not
    compile, and :class:`~subhive.errors.UsageError` for an argument of another type or an unknown category.
    """
    category = rules_for(new, rules)
    old_fds, old_data = _load(old, "old", include_dirs)
    new_fds, new_data = _load(new, "new", include_dirs)
    package = _package_move(old_fds, new_fds)
    before = _model(old_fds, old_data, package)
    after = _model(new_fds, new_data, None)
    return DiffReport.of(diff_schemas(before, after, package=package, rules=category))


def rules_for(source: object, rules: BreakingRules | str | None = None) -> BreakingRules:
    """``rules`` as a category; None: the setting of the workspace holding ``source`` (a path), else RUNTIME."""
    if rules is None:
        if isinstance(source, str | Path):
            return workspace_proto_settings(source).breaking
        return DEFAULT_BREAKING
    try:
        return BreakingRules(rules)
    except ValueError:
        raise UsageError(
            f"unknown rule category {rules!r}",
            code="usage.breaking_unknown",
            hint=f"one of {', '.join(r.value for r in BreakingRules)}",
        ) from None


def _load(
    source: object, side: str, include_dirs: Sequence[str | Path]
) -> tuple[descriptor_pb2.FileDescriptorSet, bytes]:
    if isinstance(source, descriptor_pb2.FileDescriptorSet):
        return source, source.SerializeToString(deterministic=True)
    if isinstance(source, str | Path):
        data = compile_proto_bytes(source, include_dirs=include_dirs)
        return descriptor_pb2.FileDescriptorSet.FromString(data), data
    raise UsageError(
        f"diff_protos: {side} must be a .proto path or a FileDescriptorSet, not {type(source).__name__}",
        code="usage.argument_type",
    )


def _package_move(
    old: descriptor_pb2.FileDescriptorSet, new: descriptor_pb2.FileDescriptorSet
) -> tuple[str, str] | None:
    """(old, new) when the files asked for moved, all together, from one package to another."""
    before, after = root_packages(old), root_packages(new)
    if len(before) == 1 and len(after) == 1 and before != after:
        return next(iter(before)), next(iter(after))
    return None


def _model(fds: descriptor_pb2.FileDescriptorSet, data: bytes, rename: tuple[str, str] | None) -> ProtoSchema:
    key = (hashlib.sha256(data).hexdigest(), rename)
    with _MODELS_LOCK:
        model = _MODELS.get(key)
        if model is not None:
            _MODELS.move_to_end(key)
            return model
    model = build_schema(fds, rename=rename)
    with _MODELS_LOCK:
        _MODELS[key] = model
        while len(_MODELS) > _MODELS_SIZE:
            _MODELS.popitem(last=False)
    return model
