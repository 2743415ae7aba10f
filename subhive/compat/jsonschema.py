"""Compatibility of two JSON Schema documents (any dialect, read as 2020-12), per direction: :func:`diff_schemas`.
Verdicts, validator semantics, references and codes: docs/compat-codes.md#json-schema.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import orjson

from ..errors import InputError, Location
from ._js_codes import CODES
from ._js_docs import Doc, Library, Node, RefResolver, check_schema
from ._js_engine import Engine
from ._js_pair import Result
from ._js_values import json_equal
from ._report import Change, DiffReport

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
    """Compare two parsed schemas (dicts or booleans) and judge each change per direction.

    Each may be written in draft-04, -06, -07, 2019-09 or 2020-12 (``$schema``; without it, 2020-12): both are
    compared by meaning, as the draft 2020-12 schemas equivalent to them, so a draft-07 OLD and a 2020-12 NEW
    that accept the same instances are compatible. Change paths point into the documents as written.

    Example::

        report = diff_schemas({"type": "integer"}, {"type": "number"})
        report.backward  # True: every integer is a number
        report.forward   # False: 1.5 is valid under NEW only
        report.changes[0].code  # "type.widened"

    ``old_pointer``/``new_pointer`` select a subschema inside each document (a contract's
    ``schemas.json#/$defs/Order``): ``#...`` references inside it still resolve against the whole document,
    and change paths stay pointers into the document.

    Raises :class:`~subhive.errors.InputError` when a schema is not a valid schema of its dialect, a ``#...``
    reference inside it points nowhere, or one path through nested subschemas and ``$ref`` hops is too
    long to follow (``schema.too_deep``: some thousands of hops, see ``_DEEP_FRAMES``).
    """
    library = Library()
    old_doc = library.new_doc(old, resolver=old_resolver)  # each read as the 2020-12 schema meaning the same
    new_doc = library.new_doc(new, resolver=new_resolver)
    check_schema(old, "the old schema", whole=not old_pointer, translated=old_doc.root)
    check_schema(new, "the new schema", whole=not new_pointer, translated=new_doc.root)
    engine = Engine(library)
    try:
        identical = (
            old_pointer == new_pointer
            and json_equal(old, new)
            and (old_resolver is new_resolver or _local_refs_only(old))
        )
    except RecursionError:
        identical = False  # too deeply nested to tell here; the comparison below copes with depth
    if identical:
        return DiffReport()  # identical documents resolving references identically
    old_node = _node_at(old_doc, old_doc.written(old_pointer), "old")
    new_node = _node_at(new_doc, new_doc.written(new_pointer), "new")
    try:
        result = engine.compare(old_node, new_node)
    except RecursionError:
        result = None  # deeper than this thread's stack allows: again below, outside this handler
    if result is None:
        result = _compare_deep(library, old_node, new_node)
    if library.remote_same and _dynamic(old_doc, new_doc, *library.reached()):
        shown = ", ".join(sorted(library.remote_same)[:3])
        # A remote schema's $dynamicRef may bind to a $dynamicAnchor of the documents that refer to it, and those
        # differ between the sides: the same URI is then not provably the same schema (decision 0141).
        unsure = Change(
            "ref.remote.unprovable",
            "",
            False,
            False,
            f"the remote {shown} is referred to on both sides, but a $dynamicAnchor here may change what it means",
        )
        return DiffReport.of([*result.changes, unsure])
    return DiffReport.of(result.changes)


def _dynamic(*docs: Doc) -> bool:
    """Some document holds a ``$dynamicAnchor`` (or ``$recursiveAnchor``), as its JSON text shows."""
    for doc in docs:
        try:
            text = orjson.dumps(doc.root)
        except TypeError:  # not plain JSON (an integer beyond 64 bits): assume the worst
            return True
        if b'"$dynamicAnchor":' in text or b'"$recursiveAnchor":' in text:
            return True
    return False


# A comparison recurses once per nested subschema and per $ref hop along the path it follows (a chain of
# definitions, or a cycle of mutually recursive ones, however they are spread over $defs): about a dozen
# Python frames per $ref hop, so the default recursion limit (1,000 frames) holds some 80 hops. Deeper
# schemas are compared again on a thread with its own large stack and a raised limit (about 4,000 hops).
# Python-to-Python calls take no C stack; each re-entry through C (any() over a generator, a property)
# takes about 0.55 KB (measured on CPython 3.11: 8 MiB hold 7,900 levels of two re-entries each). Even if
# every frame re-entered, the limit below needs under 30 MB: the stack leaves a margin of eight. Its pages
# are only reserved, and used as the recursion goes deep.
_DEEP_FRAMES = 50_000
_DEEP_STACK = 256 * 1024 * 1024
_DEEP_LOCK = threading.Lock()  # the recursion limit is per process: one deep comparison at a time


def _compare_deep(library: Library, old: Node, new: Node) -> Result:
    """Compare ``old`` and ``new`` with a fresh engine on a thread with a large stack and a raised
    recursion limit (restored afterwards); raise ``schema.too_deep`` if even that is not deep enough."""
    engine = Engine(library)
    outcome: list[Result | BaseException] = []

    def run() -> None:
        try:
            outcome.append(engine.compare(old, new))
        except BaseException as exc:  # handed to the caller's thread, raised there
            outcome.append(exc)

    with _DEEP_LOCK:
        limit, size = sys.getrecursionlimit(), threading.stack_size()
        sys.setrecursionlimit(max(limit, _DEEP_FRAMES))
        try:
            threading.stack_size(_DEEP_STACK)
            try:
                worker = threading.Thread(target=run, name="subhive-deep-schema-diff", daemon=True)
                worker.start()  # the stack size applies to threads started while it is set
            finally:
                threading.stack_size(size)
            worker.join()
        except (RuntimeError, ValueError, MemoryError):  # no thread (or no such stack) to be had here
            outcome.append(RecursionError("no thread with a large stack could be started"))
        finally:
            sys.setrecursionlimit(limit)
    found = outcome[0] if outcome else RecursionError("the comparison did not finish")
    if isinstance(found, Result):
        return found
    if isinstance(found, RecursionError):
        depth, pointer = engine.overflow or (0, "")
        how_deep = f" ({depth:,} nested subschemas and $ref targets on one path)" if depth else ""
        raise InputError(
            f"the schemas are nested too deeply to compare{how_deep}",
            code="schema.too_deep",
            location=Location(pointer=pointer),
            hint="shorten the longest chain of $ref hops (or of nested subschemas): every hop "
            "counts as a level, wherever the definitions are",
        ) from found
    raise found


def _node_at(doc: Doc, pointer: str, side: str) -> Node:
    try:
        return doc.node(pointer)
    except LookupError as exc:
        raise InputError(
            f"the {side} schema has no subschema at {pointer!r}",
            code="schema.pointer_not_found",
            location=Location(pointer=pointer),
            hint="point at an object or boolean schema",
        ) from exc


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
