"""A fast first check of a draft 2020-12 schema against its meta-schema, flattened (decision 0128).

The published meta-schema is an ``allOf`` of seven vocabulary meta-schemas tied together by
``$dynamicRef: "#meta"``; every one of them constrains only its own keywords (no two share one), and every
``#meta`` resolves to the whole meta-schema when it is the entry point. One schema holding all their keywords,
with ``$ref: "#"`` for ``#meta``, accepts the same documents, and jsonschema-rs checks it in about half the
time. It only ever says "valid": on "invalid", ``check_schema`` asks the published meta-schema, so errors keep
their wording and pointers.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import jsonschema_rs

from .. import _metaschemas

__all__ = ["flat_metaschema", "surely_valid"]

_ROOT = "https://json-schema.org/draft/2020-12/schema"
# Root $schema values under which jsonschema-rs checks a document against draft 2020-12 (so does none at all).
_DIALECTS = frozenset({_ROOT, _ROOT + "#"})
_VOCABULARIES = ("core", "applicator", "unevaluated", "validation", "meta-data", "format-annotation", "content")
# What a vocabulary meta-schema may hold besides its keywords' schemas (``properties``) and ``$defs``.
_FRAME = frozenset({"$schema", "$id", "$vocabulary", "$dynamicAnchor", "title", "type", "$comment", "allOf"})
_MAPS = frozenset({"properties", "$defs", "patternProperties", "dependentSchemas"})


def surely_valid(translated: Any) -> bool:
    """True when ``translated``, an object with no root ``$schema`` or draft 2020-12's, is a valid draft 2020-12
    schema; False when it may not be, or is none of that (then the published meta-schema decides)."""
    if not isinstance(translated, dict):
        return False
    dialect = translated.get("$schema")
    if dialect is not None and not (isinstance(dialect, str) and dialect in _DIALECTS):
        return False
    try:
        return bool(_validator().is_valid(translated))
    except (TypeError, ValueError, OverflowError):  # not JSON (a NaN, a set, a huge integer): the full check says
        return False


@cache
def _validator() -> Any:
    # Formats are annotations in the published meta-schema's check too (jsonschema_rs.meta asserts none).
    return jsonschema_rs.Draft202012Validator(flat_metaschema(), validate_formats=False)


def flat_metaschema() -> dict[str, Any]:
    """The draft 2020-12 meta-schema as one schema (see the module docstring); raises ``AssertionError`` if the
    bundled meta-schemas are not shaped as this flattening expects."""
    flat: dict[str, Any] = {"type": ["object", "boolean"], "properties": {}, "$defs": {}}
    parts = [_metaschemas.metaschema(_ROOT)]
    parts += [_metaschemas.metaschema(f"https://json-schema.org/draft/2020-12/meta/{v}") for v in _VOCABULARIES]
    for part in parts:
        if part.get("type") != ["object", "boolean"] or set(part) - _FRAME - {"properties", "$defs"}:
            raise AssertionError(f"unexpected meta-schema shape: {part.get('$id')}")
        for key in ("properties", "$defs"):
            for name, schema in part.get(key, {}).items():
                if name in flat[key]:
                    raise AssertionError(f"two vocabularies define {key}/{name}")
                flat[key][name] = schema
    rewritten: dict[str, Any] = _rewrite(flat)
    return rewritten


def _rewrite(schema: Any) -> Any:
    """A copy with ``$dynamicRef: "#meta"`` as ``$ref: "#"`` and ``meta/x#/$defs/y`` as ``#/$defs/y``."""
    if isinstance(schema, list):
        return [_rewrite(x) for x in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _MAPS and isinstance(value, dict):
            out[key] = {name: _rewrite(x) for name, x in value.items()}
        elif key == "$dynamicRef":
            if value != "#meta":
                raise AssertionError(f"unexpected $dynamicRef {value!r}")
            out["$ref"] = "#"
        elif key == "$ref":
            target = "#" + value.partition("#")[2]
            if not target.startswith("#/$defs/"):
                raise AssertionError(f"unexpected $ref {value!r}")
            out["$ref"] = target
        else:
            out[key] = _rewrite(value)
    return out
