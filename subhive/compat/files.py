"""Diffing two schema files by kind: JSON Schema (``.json``, ``.yaml``, ``.yml``) or protobuf (``.proto``)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote

from .._id_roots import IdRoot, parse_id_root
from ..errors import InputError, Location, Problem
from ._report import Change, DiffReport

if TYPE_CHECKING:
    from ..contract import SchemaRef

__all__ = ["diff_files"]

_JSON_SCHEMA_SUFFIXES = frozenset({".json", ".yaml", ".yml"})


def diff_files(
    old: str | Path,
    new: str | Path,
    *,
    proto_paths: Sequence[str | Path] = (),
    breaking: str | None = None,
    old_id_roots: Sequence[str | IdRoot] = (),
    new_id_roots: Sequence[str | IdRoot] = (),
) -> DiffReport:
    """Lint both files, then diff them: ``diff_files("v1/order.json", "v2/order.json").backward``.

    For ``.proto`` files, ``proto_paths`` are extra import roots and ``breaking`` the rule category
    (``FILE``, ``PACKAGE``, ``RUNTIME``, ``WIRE_JSON``, ``WIRE``; default: the workspace's setting); see
    :func:`subhive.compat.protobuf.diff_protos`.

    A JSON Schema may be named inside a document, ``api.yaml#/components/schemas/Order``: a JSON pointer after
    ``#`` (an OpenAPI or AsyncAPI document is no schema as a whole).

    ``old_id_roots``/``new_id_roots`` (``"PREFIX=DIR"`` as ``--old-id-root`` takes it, or parsed entries) map
    ``$ref`` URLs for one side only, before ``--id-root``'s and the workspace's (decision 0141). A ``$ref`` to a URL
    nothing offline places is never fetched: the same URI at the same place on both sides is the same schema,
    another one ``ref.remote.unprovable``; the report's ``warnings`` name each such reference. When one side reads a
    file of the other side's directory through an id root both share, that side's own version is never compared:
    ``ref.id_root.unprovable``.

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

    sides = (_side(old_id_roots, "--old-id-root"), _side(new_id_roots, "--new-id-root"))
    old_remote: list[Problem] = []
    new_remote: list[Problem] = []
    before = load_schema_file(old, old_pointer, side=sides[0], remote=old_remote)
    after = load_schema_file(new, new_pointer, side=sides[1], remote=new_remote)
    # Whole documents plus pointers: "#/..." references inside the chosen schema resolve in its document.
    report = diff_schemas(
        before.document.data,
        after.document.data,
        old_resolver=before.resolver,
        new_resolver=after.resolver,
        old_pointer=before.pointer,
        new_pointer=after.pointer,
    )
    crossed, shared = _through_one_root(before, after)
    remote = [
        dataclasses.replace(w, message=f"{w.message}: never fetched; the same URI at the same place on both sides "
                            "is compared as the same schema, another one is ref.remote.unprovable")
        for w in (*old_remote, *new_remote)
    ]  # fmt: skip
    warnings = (*remote, *shared)
    if crossed or warnings:
        report = dataclasses.replace(DiffReport.of([*report.changes, *crossed]), warnings=warnings)
    return report


def _side(entries: Sequence[str | IdRoot], option: str) -> tuple[IdRoot, ...]:
    return tuple(e if isinstance(e, IdRoot) else parse_id_root(e, origin=option) for e in entries)


def _through_one_root(before: SchemaRef, after: SchemaRef) -> tuple[list[Change], list[Problem]]:
    """The files both sides read through an id root that is not one side's own (decision 0141): a file of one
    side's directory read by the other side is ``ref.id_root.unprovable`` (that side's own version is never
    compared: ``--id-root PREFIX=new`` for ``old/a.json new/a.json``); a file elsewhere read by both, a warning
    (compared as one schema, unchanged)."""
    old_docs, new_docs = before.documents, after.documents
    if old_docs is None or new_docs is None:  # never: load_schema_file gives both
        return [], []
    dirs = (Path(os.path.abspath(old_docs.directory)), Path(os.path.abspath(new_docs.directory)))
    if dirs[0] == dirs[1]:
        return [], []  # one directory: its files are both sides' own
    crossed: list[Change] = []
    sides = (("OLD", "NEW", "--old-id-root", before, dirs[0], dirs[1]),
             ("NEW", "OLD", "--new-id-root", after, dirs[1], dirs[0]))  # fmt: skip
    for name, other, option, ref, own, theirs in sides:
        assert ref.documents is not None  # checked above
        for path, (root, doc, site) in ref.documents.mapped.items():
            # Given for this side alone (--old-id-root for OLD), the mapping says what the user means.
            if root.origin != option and _inside(path, theirs) and not _inside(path, own):
                same = os.path.abspath(doc.path) == os.path.abspath(ref.file)
                crossed.append(
                    Change(
                        "ref.id_root.unprovable",
                        site.pointer if same else f"{doc.path.name}#{site.pointer}",
                        False,
                        False,
                        f"{name} reads {_shown(path)}, a file of {other}'s directory, for {site.keyword} {site.ref!r} "
                        f"through the id root {root.describe()}: {name}'s own version of it is never compared; "
                        f"map the prefix for each side (--old-id-root, --new-id-root)",
                    )
                )
    shared: list[Problem] = []
    for path in sorted(old_docs.mapped.keys() & new_docs.mapped.keys()):
        old_root, root = old_docs.mapped[path][0], new_docs.mapped[path][0]
        if _inside(path, dirs[0]) or _inside(path, dirs[1]):
            continue  # one side's own file: judged above
        if (old_root.origin, root.origin) == ("--old-id-root", "--new-id-root"):
            continue  # each side was told so on its own
        shared.append(
            Problem(
                "schema.id_root_shared",
                f"both sides read {_shown(path)} through the id root {root.describe()}: compared as one schema, "
                "unchanged",
                Location(file=_shown(path)),
                "if each side has its own version of it, map the prefix for each side: --old-id-root PREFIX=DIR "
                "and --new-id-root PREFIX=DIR",
            )
        )
    return crossed, shared


def _inside(path: Path, directory: Path) -> bool:
    return path == directory or directory in path.parents


def _shown(path: Path) -> str:
    relative = os.path.relpath(path)
    return relative if not relative.startswith("..") else str(path)


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
