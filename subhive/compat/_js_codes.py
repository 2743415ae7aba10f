"""The stable change codes of the JSON Schema diff engine, each with a one-line description.

Codes are part of the public contract (``subhive schema diff --format json``, docs/compat-codes.md):
add new ones freely, never rename or reuse one.
"""

from __future__ import annotations

__all__ = ["CODES"]


def _bounds() -> dict[str, str]:
    out: dict[str, str] = {}
    for code, keyword, what in (
        ("minimum", "minimum", "numbers"),
        ("exclusive_minimum", "exclusiveMinimum", "numbers"),
        ("maximum", "maximum", "numbers"),
        ("exclusive_maximum", "exclusiveMaximum", "numbers"),
        ("min_length", "minLength", "strings"),
        ("max_length", "maxLength", "strings"),
        ("min_items", "minItems", "arrays"),
        ("max_items", "maxItems", "arrays"),
        ("min_properties", "minProperties", "objects"),
        ("max_properties", "maxProperties", "objects"),
    ):
        out[f"{code}.added"] = f"{keyword} added (constrains {what} only)"
        out[f"{code}.removed"] = f"{keyword} removed (constrains {what} only)"
        out[f"{code}.tightened"] = f"{keyword} made stricter"
        out[f"{code}.relaxed"] = f"{keyword} made looser"
    return out


CODES: dict[str, str] = {
    # Neutral: never change the set of valid instances.
    "annotation.added": "an annotation (title, description, examples, $comment, deprecated, readOnly, "
    "writeOnly, content*) was added",
    "annotation.removed": "an annotation was removed",
    "annotation.changed": "an annotation changed",
    "default.added": "a default was added; defaults are annotations, validators do not insert them",
    "default.removed": "a default was removed; validity is unchanged",
    "default.changed": "a default changed; validity is unchanged",
    "identifier.changed": "$id, $anchor, $dynamicAnchor, $schema or $vocabulary changed; references are "
    "compared by their targets",
    "definition.added": "a $defs entry was added; definitions validate only where referenced",
    "definition.removed": "a $defs entry was removed; its former uses are compared where they occur",
    "keyword.unknown.changed": "an extension keyword (x-...) changed; extensions are annotations",
    "keyword.ignored.changed": "a keyword without effect here changed (then/else without if, "
    "min/maxContains without contains, unevaluated* already covered)",
    "type.rewritten": "type spelled differently with the same meaning (reordered, integer inside number)",
    "enum.reordered": "enum values reordered or duplicated; same set",
    "required.reordered": "required names reordered; same set",
    "all_of.reordered": "allOf branches reordered",
    "any_of.reordered": "anyOf branches reordered",
    "one_of.reordered": "oneOf branches reordered",
    # Whole schema.
    "schema.false.added": "the schema now rejects every instance (false)",
    "schema.false.removed": "the schema rejected every instance (false) and now accepts some",
    # type, enum, const.
    "type.added": "a type constraint was added",
    "type.removed": "the type constraint was removed (any type)",
    "type.widened": "more types are accepted (integer -> number counts as widening)",
    "type.narrowed": "fewer types are accepted",
    "type.changed": "the accepted types changed in both ways",
    "enum.added": "an enum was added",
    "enum.removed": "the enum was removed",
    "enum.widened": "enum values were added",
    "enum.narrowed": "enum values were removed",
    "enum.changed": "enum values were added and removed",
    "const.added": "a const was added",
    "const.removed": "the const was removed",
    "const.changed": "the const value changed (JSON equality: 1 == 1.0, true != 1)",
    **_bounds(),
    "multiple_of.added": "multipleOf added",
    "multiple_of.removed": "multipleOf removed",
    "multiple_of.tightened": "multipleOf changed to a multiple of the old divisor (integers)",
    "multiple_of.relaxed": "multipleOf changed to a divisor of the old one (integers)",
    "multiple_of.changed": "multipleOf changed otherwise (or to a fractional divisor: not compared)",
    # Strings.
    "pattern.added": "a pattern was added",
    "pattern.removed": "the pattern was removed",
    "pattern.changed": "the pattern changed, but it cannot affect the values this schema accepts",
    "pattern.changed.unprovable": "the pattern changed; regular expressions are not compared",
    "format.added": "a format was added (asserted at run time)",
    "format.removed": "the format was removed",
    "format.changed": "the format changed, but it cannot affect the values this schema accepts",
    "format.changed.unprovable": "the format changed; formats are not compared",
    # Arrays.
    "prefix_items.added": "an item position got its own schema",
    "prefix_items.removed": "an item position lost its own schema",
    "items.added": "a schema for the remaining items was added",
    "items.removed": "the schema for the remaining items was removed",
    "items.changed": "the schema for the remaining items changed between boolean and schema forms",
    "contains.added": "contains was added (judged with minContains/maxContains)",
    "contains.removed": "contains was removed",
    "contains.changed": "the contains schema changed while maxContains is in play",
    "min_contains.added": "minContains was added",
    "min_contains.removed": "minContains was removed",
    "min_contains.changed": "minContains changed while maxContains is in play",
    "min_contains.tightened": "minContains raised",
    "min_contains.relaxed": "minContains lowered",
    "max_contains.added": "maxContains was added",
    "max_contains.removed": "maxContains was removed",
    "max_contains.changed": "maxContains changed",
    "unique_items.added": "uniqueItems: true was added",
    "unique_items.removed": "uniqueItems: true was removed",
    "unevaluated_items.added": "unevaluatedItems was added next to applicators or contains",
    "unevaluated_items.removed": "unevaluatedItems was removed where applicators or contains evaluate",
    "unevaluated_items.unprovable": "unevaluatedItems interacts with changed applicators; not provable",
    # Objects.
    "property.added": "a property was listed in properties (judged against the old content model)",
    "property.removed": "a property was removed from properties (judged against the new content model)",
    "pattern_property.added": "a patternProperties entry was added",
    "pattern_property.removed": "a patternProperties entry was removed",
    "additional_properties.added": "additionalProperties (or an equivalent unevaluatedProperties) was added",
    "additional_properties.removed": "additionalProperties was removed (unlisted properties are free)",
    "additional_properties.changed": "additionalProperties changed between boolean and schema forms",
    "required.added": "a property became required",
    "required.added_with_default": "a property with a default became required; still breaking for old "
    "data because validators do not insert defaults",
    "required.removed": "a property is no longer required",
    "dependent_required.added": "a dependentRequired name was added",
    "dependent_required.removed": "a dependentRequired name was removed",
    "dependent_schema.added": "a dependentSchemas entry was added",
    "dependent_schema.removed": "a dependentSchemas entry was removed",
    "dependent_schema.changed": "a dependentSchemas entry changed; judged with the rest of the schema",
    "property_names.added": "propertyNames was added",
    "property_names.removed": "propertyNames was removed",
    "property_names.changed": "propertyNames changed; judged against the names each model allows",
    "unevaluated_properties.added": "unevaluatedProperties was added next to applicators",
    "unevaluated_properties.removed": "unevaluatedProperties was removed where applicators evaluate",
    "unevaluated_properties.unprovable": "unevaluatedProperties interacts with changed applicators; not provable",
    "unevaluated_properties.scope_changed": "a property is now (or no longer) evaluated by an allOf/$ref "
    "conjunct, so unevaluatedProperties stops (or starts) applying "
    "to it",
    # Applicators.
    "all_of.added": "allOf was added",
    "all_of.removed": "allOf was removed",
    "all_of.branch_added": "an allOf branch was added",
    "all_of.branch_removed": "an allOf branch was removed",
    "any_of.added": "anyOf was added",
    "any_of.removed": "anyOf was removed",
    "any_of.branch_added": "an anyOf branch was added",
    "any_of.branch_removed": "an anyOf branch was removed",
    "one_of.added": "oneOf was added",
    "one_of.removed": "oneOf was removed",
    "one_of.branch_added": "a oneOf branch was added",
    "one_of.branch_removed": "a oneOf branch was removed",
    "one_of.exclusivity.unprovable": "oneOf branches changed and are not provably disjoint",
    "not.added": "not was added",
    "not.removed": "not was removed",
    "conditional.added": "if/then/else was added",
    "conditional.removed": "if/then/else was removed",
    "conditional.changed": "the if condition changed; proven case by case in the directions marked",
    "conditional.changed.unprovable": "the if condition changed; not provable",
    "conditional.then.added": "then was added under an unchanged if",
    "conditional.then.removed": "then was removed under an unchanged if",
    "conditional.else.added": "else was added under an unchanged if",
    "conditional.else.removed": "else was removed under an unchanged if",
    "ref.added": "a $ref was added beside other keywords",
    "ref.removed": "a $ref beside other keywords was removed",
    "ref.external_unresolved": "a $ref into another document could not be resolved; not provable",
    "ref.remote.unprovable": "a $ref names a remote URI, which is never fetched, and the other side another "
    "(or a document that may bind it differently); not provable",
    "ref.id_root.unprovable": "schema diff: one side reads a file of the other side's directory through a shared "
    "id root, so its own version is never compared; not provable",
    "ref.cycle.unprovable": "a reference cycle does not pass through a property or item, or passes "
    "through negation; not provable",
    "keyword.unknown.unprovable": "a keyword unknown to JSON Schema (not x-...) changed; validators ignore it, "
    "but what it was written for may not",
    "dynamic_ref.unprovable": "$dynamicRef/$recursiveRef is involved; not provable",
    "dependencies.added": "legacy dependencies was added (enforced by jsonschema-rs)",
    "dependencies.removed": "legacy dependencies was removed",
    "dependencies.changed": "legacy dependencies changed; not compared",
}
