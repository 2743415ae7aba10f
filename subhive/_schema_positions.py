"""Where subschemas sit in a schema object: the keywords whose value is one subschema, a list of them, or an
object of them. Every walker of schemas (translation, bundling, models, mock data, lint, the diff engine, the
runtime validator's pattern guard, the duplicate-key judge) reads these, adding what its own input may hold.
"""

from __future__ import annotations

__all__ = ["LEGACY_ONE", "LEGACY_PLACES", "LISTS", "MAPS", "ONE"]

#: Draft 2020-12 keywords whose value is one subschema.
ONE: tuple[str, ...] = (
    "additionalProperties",
    "propertyNames",
    "items",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
)
#: Draft 2020-12 keywords whose value is a list of subschemas.
LISTS: tuple[str, ...] = ("allOf", "anyOf", "oneOf", "prefixItems")
#: Keywords whose value is an object of subschemas by name or pattern. ``definitions`` is no 2020-12 keyword, but
#: older drafts keep their definitions there, and their translations to 2020-12 too, for references to point into.
MAPS: tuple[str, ...] = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
#: Drafts 04 to 2019-09 only: a keyword whose value is one subschema.
LEGACY_ONE: tuple[str, ...] = ("additionalItems",)
#: Drafts 04 to 07 only: ``dependencies`` maps names to a subschema or to a list of names; and ``items`` may be a
#: list of subschemas (the tuple form 2020-12 calls ``prefixItems``).
LEGACY_PLACES: tuple[str, ...] = ("dependencies", "items")
