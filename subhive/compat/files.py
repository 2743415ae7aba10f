"""Diffing two schema files by kind: JSON Schema (``.json``, ``.yaml``, ``.yml``) or protobuf (``.proto``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from urllib.parse import unquote

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

    A JSON Schema may be named inside a document, ``api.yaml#/components/schemas/Order``: a JSON pointer after
    ``#`` (an OpenAPI or AsyncAPI document is no schema as a whole).

    Raises :class:`~subhive.errors.InputError` (or ``ContractInvalid`` with every problem) when either file is
    missing, unreadable, not a valid schema, or the two are of different kinds.
    """
    (old, old_pointer), (new, new_pointer) = _pointed(old), _pointed(new)
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

        if old_pointer or new_pointer:
            raise InputError(
                "a .proto file has no JSON pointer",
                code="input.pointer_invalid",
                location=Location(file=str(old if old_pointer else new)),
                hint="name .proto files alone; a '#/pointer' selects a schema inside a JSON or YAML document",
            )

        return diff_protos(old, new, rules=breaking, include_dirs=proto_paths)
    from .jsonschema import diff_schemas

    before, after = load_schema_file(old, old_pointer), load_schema_file(new, new_pointer)
    # Whole documents plus pointers: "#/..." references inside the chosen schema resolve in its document.
    return diff_schemas(
        before.document.data,
        after.document.data,
        old_resolver=before.resolver,
        new_resolver=after.resolver,
        old_pointer=before.pointer,
        new_pointer=after.pointer,
    )


def _pointed(name: str | Path) -> tuple[Path, str]:
    """``"api.yaml#/components/schemas/Order"`` -> ``(Path("api.yaml"), "/components/schemas/Order")``; a file
    whose name holds a ``#`` is taken as it is."""
    path = Path(name)
    text = str(name)
    if "#" not in text or path.exists():
        return path, ""
    file, _, fragment = text.partition("#")
    pointer = unquote(fragment)
    if pointer and not pointer.startswith("/"):
        raise InputError(
            f"{'#' + fragment!r} is not a JSON pointer",
            code="input.pointer_invalid",
            location=Location(file=file),
            hint="after '#' write a JSON pointer starting with '/', e.g. 'api.yaml#/components/schemas/Order'",
        )
    return Path(file), pointer


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
