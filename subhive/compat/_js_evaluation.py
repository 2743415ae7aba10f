"""Which in-place subschemas can mark properties or items as evaluated (for ``unevaluated*``).

``unevaluatedProperties`` (``unevaluatedItems``) sees the annotations of every in-place subschema that
validated: ``allOf``, ``$ref``, the passing branches of ``anyOf``/``oneOf``, ``if`` and the branch taken,
``dependentSchemas``. A branching applicator whose subschemas carry no such keyword anywhere adds nothing,
whichever branch passes, so the set of evaluated names (indices) stays fixed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._js_docs import Node, Unresolved

if TYPE_CHECKING:
    from ._js_engine import Engine

__all__ = ["BRANCHING", "ITEM_KEYWORDS", "PROPERTY_KEYWORDS", "branches_evaluate_nothing", "evaluates_nothing"]

PROPERTY_KEYWORDS = frozenset({"properties", "patternProperties", "additionalProperties", "unevaluatedProperties"})
ITEM_KEYWORDS = frozenset({"prefixItems", "items", "contains", "unevaluatedItems"})
#: In-place applicators whose annotations depend on the instance (which branch passes).
BRANCHING = ("anyOf", "oneOf", "if", "dependentSchemas", "dependencies", "$dynamicRef", "$recursiveRef")
_LIMIT = 256  # subschemas visited before giving up (unproven, never wrong)


def _in_place(eng: Engine, node: Node) -> list[Node] | None:
    """The in-place subschemas of ``node`` that can contribute annotations; None when one cannot be read."""
    value = node.value
    if not isinstance(value, dict):
        return []
    if "$dynamicRef" in value or "$recursiveRef" in value:
        return None
    out: list[Node] = []
    for keyword in ("allOf", "anyOf", "oneOf"):
        out += eng.children(node, keyword)
    out += [node.child(value[k], k) for k in ("if", "then", "else") if k in value]
    for keyword in ("dependentSchemas", "dependencies"):
        mapping: Any = value.get(keyword)
        if isinstance(mapping, dict):
            out += [node.child(s, keyword, name) for name, s in mapping.items() if isinstance(s, dict | bool)]
    if "$ref" in value:
        target = eng.deref(node)
        if isinstance(target, Unresolved):
            return None
        out.append(target)
    return out


def evaluates_nothing(eng: Engine, nodes: list[Node], keywords: frozenset[str]) -> bool:
    """Proven: no subschema in ``nodes``, nor any in-place subschema they reach, has one of ``keywords``."""
    seen: set[tuple[int, str]] = set()
    todo = list(nodes)
    while todo:
        node = todo.pop()
        key = (node.doc.uid, node.key)
        if key in seen:
            continue
        seen.add(key)
        if len(seen) > _LIMIT or (isinstance(node.value, dict) and not keywords.isdisjoint(node.value)):
            return False
        inner = _in_place(eng, node)
        if inner is None:
            return False
        todo += inner
    return True


def branches_evaluate_nothing(eng: Engine, node: Node, keywords: frozenset[str]) -> bool:
    """Proven: the branching applicators of ``node`` (anyOf, oneOf, if/then/else, dependentSchemas) can
    never mark a property or item as evaluated, whichever branches pass."""
    value = node.value
    if not isinstance(value, dict) or "$dynamicRef" in value or "$recursiveRef" in value:
        return False
    branches = eng.children(node, "anyOf") + eng.children(node, "oneOf")
    branches += [node.child(value[k], k) for k in ("if", "then", "else") if k in value]
    for keyword in ("dependentSchemas", "dependencies"):
        mapping: Any = value.get(keyword)
        if isinstance(mapping, dict):
            branches += [node.child(s, keyword, name) for name, s in mapping.items() if isinstance(s, dict | bool)]
    return evaluates_nothing(eng, branches, keywords)
