"""Which draft 2020-12 keywords constrain instances, which only annotate, and cheap syntactic facts.
A change to an annotation never changes the valid instances; one to an assertion must be proven per direction.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ANNOTATIONS",
    "ASSERTIONS",
    "DEFS",
    "IDENTIFIERS",
    "INPLACE",
    "is_false",
    "is_pure",
    "is_trivial",
    "unknown_keyword",
    "validation_keys",
]

ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "examples",
        "$comment",
        "deprecated",
        "readOnly",
        "writeOnly",
        "default",
        "contentMediaType",
        "contentEncoding",
        "contentSchema",
    }
)
IDENTIFIERS = frozenset({"$schema", "$id", "$anchor", "$dynamicAnchor", "$vocabulary"})
DEFS = frozenset({"$defs", "definitions"})
ASSERTIONS = frozenset(
    {
        "type",
        "enum",
        "const",
        "multipleOf",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "pattern",
        "format",
        "prefixItems",
        "items",
        "unevaluatedItems",
        "contains",
        "minContains",
        "maxContains",
        "maxItems",
        "minItems",
        "uniqueItems",
        "properties",
        "patternProperties",
        "additionalProperties",
        "unevaluatedProperties",
        "propertyNames",
        "required",
        "dependentRequired",
        "dependentSchemas",
        "maxProperties",
        "minProperties",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
        # ``dependencies`` is not a 2020-12 keyword, but jsonschema-rs (the runtime validator) still enforces it:
        # treating it as an annotation would be unsound.
        "$ref",
        "$dynamicRef",
        "$recursiveRef",
        "dependencies",
    }
)
#: Applicators that apply subschemas to the same instance and so feed unevaluated* annotations.
INPLACE = frozenset(
    {"allOf", "anyOf", "oneOf", "if", "$ref", "$dynamicRef", "$recursiveRef", "dependentSchemas", "dependencies"}
)


def unknown_keyword(key: str) -> bool:
    """A keyword draft 2020-12 does not define, and not an ``x-`` extension: validators ignore it, but the reader
    it was written for (OpenAPI's ``nullable``, a custom vocabulary) may not, so a change to it is not provably
    harmless."""
    return not (key in ASSERTIONS or key in ANNOTATIONS or key in IDENTIFIERS or key in DEFS or key.startswith("x-"))


def validation_keys(kw: dict[str, Any]) -> set[str]:
    """The keywords of ``kw`` that can reject an instance (ignored ones such as a lone ``then`` excluded)."""
    keys = {k for k in kw if k in ASSERTIONS}
    if "if" not in keys:
        keys -= {"then", "else"}
    if "contains" not in keys:
        keys -= {"minContains", "maxContains"}
    return keys


def is_trivial(value: Any) -> bool:
    """True for schemas that visibly accept everything: ``true``, ``{}``, annotations only."""
    return value is True or (isinstance(value, dict) and not validation_keys(value))


def is_false(value: Any) -> bool:
    """True for schemas that visibly accept nothing: ``false``, ``{"not": {}}``, ``{"enum": []}``."""
    if value is False:
        return True
    if not isinstance(value, dict):
        return False
    return ("not" in value and is_trivial(value["not"])) or ("enum" in value and value["enum"] == [])


def is_pure(value: Any, keyword: str) -> bool:
    """True when ``keyword`` is the only validation keyword of ``value`` (e.g. a plain ``$ref``)."""
    if not isinstance(value, dict) or keyword not in value:
        return False
    for key in value:  # noqa: SIM110 - a loop, not all() over a generator: asked of nearly every subschema met
        if key != keyword and key in ASSERTIONS and not _ignored(key, value):
            return False
    return True


def _ignored(key: str, value: dict[str, Any]) -> bool:
    return (key in ("then", "else") and "if" not in value) or (
        key in ("minContains", "maxContains") and "contains" not in value
    )
