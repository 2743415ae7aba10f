"""Diffing two schema files by kind: JSON Schema (``.json``, ``.yaml``, ``.yml``) or protobuf (``.proto``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..errors import InputError, Location
from ._report import DiffReport

__all__ = ["diff_files"]

_JSON_SCHEMA_SUFFIXES = frozenset({".json", ".yaml", ".yml"})


def diff_files(
    old: str | Path,
    new: str | Path,
    *,
    proto_paths: Sequence[str | Path] = (),
    breaking: str | None = None,
) -> DiffReport:
    """Lint both files, then diff them: ``diff_files("v1/order.json", "v2/order.json").backward``.

    For ``.proto`` files, ``proto_paths`` are extra import roots and ``breaking`` the rule category
    (``FILE``, ``PACKAGE``, ``RUNTIME``, ``WIRE_JSON``, ``WIRE``; default: the workspace's setting); see
    :func:`subhive.compat.protobuf.diff_protos`.

    Raises :class:`~subhive.errors.InputError` (or ``ContractInvalid`` with every problem) when either file is
    missing, unreadable, not a valid schema, or the two are of different kinds.
    """
    old, new = Path(old), Path(new)
    kinds = {_kind(old), _kind(new)}
    if len(kinds) != 1:
        raise InputError(
            f"cannot compare {old.name} with {new.name}: one is protobuf, the other JSON Schema",
            code="input.kind_mismatch",
            location=Location(file=str(new)),
            hint="compare two .proto files or two JSON Schema files",
        )
    # Imported here: the contract package itself uses the diff engines.
    from ..contract import load_schema_file

    if kinds == {"proto"}:
        from .protobuf import diff_protos

        return diff_protos(old, new, rules=breaking, include_dirs=proto_paths)
    from .jsonschema import diff_schemas

    before, after = load_schema_file(old), load_schema_file(new)
    return diff_schemas(before.schema, after.schema, old_resolver=before.resolver, new_resolver=after.resolver)


def _kind(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix == ".proto":
        return "proto"
    if suffix in _JSON_SCHEMA_SUFFIXES:
        return "jsonschema"
    raise InputError(
        f"unsupported file type {suffix or '(none)'!r}",
        code="input.file_type",
        location=Location(file=str(path)),
        hint="use .json, .yaml or .yml for JSON Schema, or .proto",
    )
