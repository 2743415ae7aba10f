"""Compatibility of two JSON Schema (draft 2020-12) documents, per direction.

``diff_schemas(old, new)`` lists every difference as a :class:`~subhive.compat._report.Change` with a
stable code (see :data:`CODES` and docs/compat-codes.md), a JSON pointer and two verdicts:

* ``backward``: proven that every instance valid under OLD is valid under NEW;
* ``forward``: proven that every instance valid under NEW is valid under OLD.

A verdict is True only when proven; anything the engine cannot decide (two different regular
expressions, a changed ``if``, remote references, ``$dynamicRef`` ...) is reported False with a code that
says why. Validity follows the runtime validator, jsonschema-rs with ``validate_formats=True``: ``format``
is an assertion, unknown keywords are ignored, the legacy ``dependencies`` keyword is enforced.

References: ``#...`` references inside a document are followed here; references to other documents
(``other.json#/$defs/X``) need a :data:`RefResolver`, which is called with the document part only
(``"other.json"``) and returns ``(that document's root, a resolver for references inside it)`` or None.
Remote references (``https:``, ``urn:``, ``file:`` ...) are never fetched.
"""

from __future__ import annotations

from typing import Any

from ..errors import InputError, Location
from ._js_codes import CODES
from ._js_docs import Doc, Library, Node, RefResolver, check_schema
from ._js_engine import Engine
from ._js_values import json_equal
from ._report import DiffReport

__all__ = ["CODES", "RefResolver", "diff_schemas"]


def diff_schemas(
    old: Any,
    new: Any,
    *,
    old_resolver: RefResolver | None = None,
    new_resolver: RefResolver | None = None,
    old_pointer: str = "",
    new_pointer: str = "",
) -> DiffReport:
    """Compare two parsed draft 2020-12 schemas (dicts or booleans) and judge each change per direction.

    Example::

        report = diff_schemas({"type": "integer"}, {"type": "number"})
        report.backward  # True: every integer is a number
        report.forward   # False: 1.5 is valid under NEW only
        report.changes[0].code  # "type.widened"

    ``old_pointer``/``new_pointer`` select a subschema inside each document (a contract's
    ``schemas.json#/$defs/Order``): ``#...`` references inside it still resolve against the whole document,
    and change paths stay pointers into the document.

    Raises :class:`~subhive.errors.InputError` when a schema is not a valid 2020-12 schema or a
    ``#...`` reference inside it points nowhere.
    """
    check_schema(old, "the old schema")
    check_schema(new, "the new schema")
    library = Library()
    old_doc = library.new_doc(old, resolver=old_resolver)
    new_doc = library.new_doc(new, resolver=new_resolver)
    engine = Engine(library)
    if old_pointer == new_pointer and json_equal(old, new) and (
            old_resolver is new_resolver or _local_refs_only(old)):
        return DiffReport()  # identical documents resolving references identically
    try:
        result = engine.compare(_node_at(old_doc, old_pointer, "old"), _node_at(new_doc, new_pointer, "new"))
    except RecursionError as exc:
        raise InputError("the schemas are nested too deeply to compare", code="schema.too_deep",
                         location=Location(pointer=""),
                         hint="flatten deeply nested subschemas into $defs") from exc
    return DiffReport.of(result.changes)


def _node_at(doc: Doc, pointer: str, side: str) -> Node:
    try:
        return doc.node(pointer)
    except LookupError as exc:
        raise InputError(f"the {side} schema has no subschema at {pointer!r}", code="schema.pointer_not_found",
                         location=Location(pointer=pointer), hint="point at an object or boolean schema") from exc


def _local_refs_only(value: Any) -> bool:
    """No reference in ``value`` leaves the document (so equal documents mean equal schemas)."""
    if isinstance(value, dict):
        for key in ("$ref", "$dynamicRef", "$recursiveRef"):
            ref = value.get(key)
            if ref is not None and not (isinstance(ref, str) and ref.startswith("#")):
                return False
        return all(_local_refs_only(v) for v in value.values())
    if isinstance(value, list):
        return all(_local_refs_only(v) for v in value)
    return True
