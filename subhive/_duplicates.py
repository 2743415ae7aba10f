"""Duplicate keys, judged: which repeats in a schema document cannot change what it accepts (decision 0136).

Read only after the strict reader of ``subhive._source`` met a repeated key, so the usual document costs nothing.
A repeat is harmless when its two values are equal JSON, or, at a schema position, differ only in annotations
(:data:`ANNOTATIONS`); the last value is kept, as ``JSON.parse`` and most readers do, with a warning. Any other
repeat, and every repeat in a document that is not a schema, is an ``input.duplicate_key`` error naming both lines.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ._schema_positions import LEGACY_ONE, LISTS, MAPS, ONE
from ._source import join_pointer
from .errors import InputError, Location, Problem

__all__ = ["ANNOTATIONS", "Pairs", "keep_pairs", "settle"]

#: Keywords that describe a schema without changing which instances it accepts. ``default`` is not among them:
#: validators ignore it, but generated models fill it in, so two defaults mean two different programs.
#: ``format`` is not either (the bus asserts it, decision 0009), nor ``content*`` or any identifier.
ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "$comment",
        "examples",
        "example",  # OpenAPI's singular form; an unknown keyword elsewhere
        "deprecated",
        "readOnly",
        "writeOnly",
        # Editors' annotations (VS Code, SchemaStore): text and completion hints only.
        "markdownDescription",
        "markdownEnumDescriptions",
        "enumDescriptions",
        "deprecationMessage",
        "errorMessage",
        "patternErrorMessage",
        "doNotSuggest",
        "defaultSnippets",
        "suggestSortText",
    }
)

# What a member's value is, by where it sits: a schema, a map of schemas, a list of schemas, or plain data.
_SCHEMA, _MAP, _LIST, _DATA = range(4)
_ONE = frozenset(ONE + LEGACY_ONE)
# ``dependencies`` (draft-04 to -07) maps to a schema or a list of names; a list is compared as data.
_MAPS = frozenset((*MAPS, "dependencies"))
_LISTS = frozenset(LISTS)


class Pairs(list[tuple[str, Any]]):
    """A mapping whose keys repeat, as read: its ``(key, value)`` pairs in document order."""


def keep_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any] | Pairs:
    """``object_pairs_hook`` keeping a mapping with a repeated key as its pairs, for :func:`settle`."""
    out = dict(pairs)
    return out if len(out) == len(pairs) else Pairs(pairs)


@dataclass(frozen=True, slots=True)
class _Repeat:
    tokens: tuple[str | int, ...]  # of the repeated member
    key: str
    harmless: str | None  # why it cannot matter, or None


def settle(tree: Any, text: str, path: Path, *, schema: bool) -> tuple[Any, tuple[Problem, ...]]:
    """``tree`` (read with :func:`keep_pairs`) as plain data, the last value of a key kept, and a
    ``schema.duplicate_key`` warning for each harmless repeat; raise ``input.duplicate_key`` for the first other."""
    repeats: list[_Repeat] = []
    try:
        walk = _Settle(repeats, path, budget=max(10_000, 2 * len(text)))
        data = walk.value(tree, (), _SCHEMA if schema else _DATA)
    except RecursionError as exc:  # the parser took it, just: a few frames more here
        raise InputError(
            "nesting is too deep", code="input.json", location=Location(file=str(path)), hint="flatten the document"
        ) from exc
    lines = _KeyLines(text)
    notes: list[Problem] = []
    for repeat in repeats:
        first, last = lines.of(repeat.tokens)
        where = Location(file=str(path), line=last, pointer=join_pointer("", *repeat.tokens))
        on = f"duplicate key {repeat.key!r}" + (f" (lines {first} and {last})" if first and last else "")
        if repeat.harmless is None or not schema:  # outside schemas, every repeat may lose something
            why = (
                "the two values differ in more than annotations, so which one a reader keeps changes the schema"
                if schema
                else "the second would silently replace the first"
            )
            raise InputError(
                f"{on}: {why}", code="input.duplicate_key", location=where, hint="keep one of them, remove the other"
            )
        notes.append(
            Problem(
                "schema.duplicate_key",
                f"{on}: {repeat.harmless}; the last one is used, as JSON.parse and most readers do",
                where,
                "remove the first one",
            )
        )
    return data, tuple(notes)


class _Settle:
    def __init__(self, repeats: list[_Repeat], path: Path, *, budget: int) -> None:
        self.repeats = repeats
        self.path = path
        # YAML aliases can make a tree far larger than its text ("billion laughs"); without them a document has
        # fewer values than characters. The walk and every comparison stay within this many values.
        self.budget = budget

    def value(self, value: Any, tokens: tuple[str | int, ...], kind: int) -> Any:
        self.budget -= 1
        if self.budget < 0:
            raise InputError(
                "YAML aliases expand this document far beyond its size",
                code="input.yaml",
                location=Location(file=str(self.path)),
                hint="write the repeated parts once (under $defs, referred to with $ref)",
            )
        if isinstance(value, list) and not isinstance(value, Pairs):
            item = _SCHEMA if kind in (_LIST, _SCHEMA) else _DATA  # a schema that is a list: old tuple ``items``
            return [self.value(v, (*tokens, i), item) for i, v in enumerate(value)]
        if not isinstance(value, dict | Pairs):
            return value
        out: dict[str, Any] = {}
        for key, raw in value.items() if isinstance(value, dict) else value:
            child = _child_kind(kind, key)
            settled = self.value(raw, (*tokens, key), child)
            if key in out:
                self.repeats.append(_Repeat((*tokens, key), key, _harmless(out[key], settled, kind, key)))
            out[key] = settled  # the last value, at the first one's place (as json.loads and JSON.parse)
        return out


def _child_kind(kind: int, key: str) -> int:
    if kind == _MAP:
        return _SCHEMA
    if kind != _SCHEMA:
        return _DATA
    return _SCHEMA if key in _ONE else _MAP if key in _MAPS else _LIST if key in _LISTS else _DATA


def _annotation(key: str) -> bool:
    return key in ANNOTATIONS or key.startswith("x-")


def _harmless(first: Any, last: Any, kind: int, key: str) -> str | None:
    """Why the repeat of ``key`` in a mapping of ``kind`` cannot change what is accepted, or None."""
    if _same(first, last):
        return "the two values are equal"
    if kind == _SCHEMA and _annotation(key):
        return f"{key} is an annotation, which does not change what is accepted"
    names = _differ(first, last, _child_kind(kind, key))
    if names is None:
        return None
    return f"the two differ only in annotations ({', '.join(sorted(names))}), which do not change what is accepted"


def _differ(a: Any, b: Any, kind: int) -> set[str] | None:
    """The annotations in which ``a`` and ``b`` (both of ``kind``) differ, or None if they differ in more."""
    if kind == _DATA or type(a) is not type(b) or not isinstance(a, dict | list):
        return set() if _same(a, b) else None
    names: set[str] = set()
    pairs: list[tuple[Any, Any, int]] = []
    if isinstance(a, list):
        if kind not in (_LIST, _SCHEMA) or len(a) != len(b):
            return None
        pairs = [(x, y, _SCHEMA) for x, y in zip(a, b, strict=True)]
    else:
        for k in a.keys() | b.keys():
            if kind == _SCHEMA and _annotation(k):
                if not (k in a and k in b and _same(a[k], b[k])):
                    names.add(k)
            elif k not in a or k not in b:
                return None
            else:
                pairs.append((a[k], b[k], _child_kind(kind, k)))
    out: set[str] = set()
    for x, y, child in pairs:
        found = _differ(x, y, child)
        if found is None:
            return None
        out |= found
    return out | names


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON values: ``1 == 1.0``, but ``true`` is no number."""
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


class _KeyLines:
    """The lines of a repeated key's first and last occurrence, from PyYAML's node marks (JSON is YAML too)."""

    def __init__(self, text: str) -> None:
        self.text = text
        try:
            self.root: yaml.Node | None = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        except (yaml.YAMLError, RecursionError):  # then a text search, which may miss: lines are a nicety
            self.root = None

    def of(self, tokens: tuple[str | int, ...]) -> tuple[int | None, int | None]:
        node = self.root
        for token in tokens[:-1]:
            if isinstance(node, yaml.MappingNode):
                found = [v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == token]
                node = found[-1] if found else None
            elif isinstance(node, yaml.SequenceNode) and isinstance(token, int) and token < len(node.value):
                node = node.value[token]
            else:
                node = None
        if isinstance(node, yaml.MappingNode):
            keys = [k for k, _ in node.value if isinstance(k, yaml.ScalarNode) and k.value == tokens[-1]]
            if len(keys) >= 2:
                return keys[0].start_mark.line + 1, keys[-1].start_mark.line + 1
        return self._search(str(tokens[-1]))

    def _search(self, key: str) -> tuple[int | None, int | None]:
        quoted = re.compile(re.escape(json.dumps(key)) + r"\s*:")
        found = [n for n, line in enumerate(self.text.splitlines(), start=1) if quoted.search(line)]
        return (found[0], found[1]) if len(found) >= 2 else (None, None)
