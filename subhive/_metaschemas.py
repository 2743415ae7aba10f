"""The meta-schemas of every dialect, bundled (subhive/metaschemas/) and found by URL: a ``$ref`` to
``http://json-schema.org/draft-07/schema#`` means the same thing offline, on every machine (decision 0095).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

from ._dialects import Translation, dialect_of, translate

__all__ = ["DIRECTORY", "is_bundled", "metaschema", "metaschema_path", "resources", "translated_metaschema", "uris"]

DIRECTORY = Path(__file__).parent / "metaschemas"


def _key(uri: str) -> str:
    """Meta-schema URLs are written with http or https, with or without the empty fragment: one key for all."""
    return uri.split("://", 1)[-1].split("#", 1)[0]


@cache
def _table() -> dict[str, Path]:
    table: dict[str, Path] = {}
    for path in sorted(DIRECTORY.glob("*.json")):
        table[_key(_canonical(path))] = path
    return table


def uris() -> list[str]:
    """The canonical ``$id`` of every bundled document."""
    return sorted(_canonical(path) for path in _table().values())


def _canonical(path: Path) -> str:
    data = _read(path)
    return str(data.get("$id", data.get("id")))


def is_bundled(uri: str) -> bool:
    """Whether ``uri`` (fragment ignored, http or https) names a bundled meta-schema."""
    return "://" in uri and _key(uri) in _table()


def metaschema_path(uri: str) -> Path | None:
    """The bundled file of the meta-schema ``uri`` names, or None."""
    return _table().get(_key(uri)) if "://" in uri else None


def metaschema(uri: str) -> Any:
    """The meta-schema ``uri`` names, as published (one object per document; do not change it); raises
    ``LookupError`` if none is bundled."""
    return _read(_path(uri))


def _path(uri: str) -> Path:
    path = metaschema_path(uri)
    if path is None:
        raise LookupError(f"{uri} is no bundled meta-schema")
    return path


@cache
def _read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@cache
def _translation(path: Path) -> Translation:
    data = _read(path)
    dialect = dialect_of(data.get("$schema"))
    assert dialect is not None, path  # every bundled document names its dialect
    return translate(data, dialect)


def translated_metaschema(uri: str) -> Any:
    """The meta-schema ``uri`` names as the draft 2020-12 schema meaning the same (what validators are given).

    >>> translated_metaschema("http://json-schema.org/draft-07/schema")["$schema"]
    'https://json-schema.org/draft/2020-12/schema'
    """
    return _translation(_path(uri)).schema


def resources(paths: Iterable[Path] | None = None) -> list[tuple[str, Any]]:
    """``(URI, translated meta-schema)`` for a validator's registry: jsonschema-rs never asks its retriever for
    json-schema.org URLs, so they must be registered beforehand. ``paths``: the bundled files a contract reached
    (see ``SchemaDocuments.bundled``), with the vocabularies of their dialect; None: all of them. Translating
    all costs ~50 ms, so a process registers only what it needs."""
    table = sorted(_table().values())
    if paths is None:
        chosen = table
    else:
        families = {_family(p) for p in paths}
        chosen = [p for p in table if _family(p) in families]
    return [_resource(p) for p in chosen]


def _family(path: Path) -> str:
    """``2020-12`` for 2020-12.json and 2020-12-meta-core.json: a dialect's meta-schema refers to its vocabularies."""
    return path.stem.split("-meta-", 1)[0]


@cache
def _resource(path: Path) -> tuple[str, Any]:
    return _canonical(path).rstrip("#"), _translation(path).schema
