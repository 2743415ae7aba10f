"""Every jsonschema-rs validator subhive builds, with a regex engine that reads ``pattern`` right.

jsonschema-rs 0.60/0.61 match ``pattern`` with fancy-regex 0.19 by default, whose optimiser rewrites three
adjacent greedy repeats ``X+ M? X+`` (``M`` any repeat that may match nothing) into ``X+(?:M+X+)?`` and so drops
the second ``X``: ``a+a*a+`` matches ``"a"``, ``\\d+-?\\d+`` matches ``"1"``. It also turns ``(?:X+M?X*)+`` into
``X+(?:M X*)*``, which lets two ``M`` follow each other. The ``regex`` crate engine (:class:`RegexOptions`) has no
such rewrite, matches in linear time and is as fast on the bus, but it has no back-references nor look-around.
So a schema is built with it when it can be. A schema only fancy-regex compiles (a back-reference, a look-around
somewhere) has its ``pattern`` checked by the ECMA-262 translation subhive tests (:mod:`subhive._ecma_regex`;
fancy-regex also reads ``\\d``, ``\\w`` and ``\\s`` as Unicode classes there), and its ``patternProperties``
keys given an empty alternation ``(?:|)`` after every quantifier: the same strings, an easy pattern still easy,
and no adjacent repeats left for the optimiser to rewrite. Decision 0137.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import jsonschema_rs

from ._ecma_regex import EcmaRegexError, compile_ecma
from ._schema_positions import LEGACY_ONE, LISTS, MAPS, ONE

__all__ = ["defuse_pattern", "runtime_validator"]

_BREAK = "(?:|)"
# Keywords whose value is a schema, a list of schemas, or an object of schemas (by name or pattern).
_ONE = frozenset(ONE + LEGACY_ONE)
_MANY = frozenset((*LISTS, "items"))  # "items" a list: the tuple form of drafts before 2020-12
_NAMED = frozenset((*MAPS, "dependencies"))


def runtime_validator(schema: Any, *, draft: type[Any] | None = None, **options: Any) -> Any:
    """The jsonschema-rs validator of ``schema`` (``draft`` one of its ``Draft*Validator`` classes, else the
    draft ``$schema`` names), ``options`` as jsonschema-rs takes them (``validate_formats``, ``registry``...).

    >>> runtime_validator({"pattern": "a+a*a+"}).is_valid("a")
    False

    A schema jsonschema-rs refuses raises what it raises without this module.
    """
    build = draft or jsonschema_rs.validator_for
    try:
        return build(schema, pattern_options=jsonschema_rs.RegexOptions(), **options)
    except Exception:  # a pattern the regex crate cannot read (\1, look-around, [^]), or a broken schema
        pass
    fancy = {**options, "keywords": {**options.get("keywords", {}), "pattern": _EcmaPattern}}
    try:
        return build(_defuse_schema(schema), pattern_options=jsonschema_rs.FancyRegexOptions(), **fancy)
    except Exception:  # e.g. a $ref into a patternProperties key we rewrote: the schema as written
        pass
    return build(schema, **options)


class _EcmaPattern:
    """``pattern`` as a jsonschema-rs custom keyword, matched by the ECMA-262 translation."""

    def __init__(self, parent_schema: Any, value: str, schema_path: Any) -> None:
        self._pattern = value
        self._search: Callable[[str], object]
        try:
            self._search = compile_ecma(value).search
        except EcmaRegexError:  # \p{...}: no exact Python reading, so fancy-regex's, defused
            nested = jsonschema_rs.validator_for(
                {"pattern": defuse_pattern(value)}, pattern_options=jsonschema_rs.FancyRegexOptions()
            )
            self._search = nested.is_valid

    def validate(self, instance: Any) -> None:
        if isinstance(instance, str) and not self._search(instance):
            raise ValueError(f"{json.dumps(instance, ensure_ascii=False)} does not match {json.dumps(self._pattern)}")


def defuse_pattern(pattern: str) -> str:
    """``pattern`` with ``(?:|)`` after each quantifier (outside classes and escapes): the same ECMA-262 language.

    >>> defuse_pattern("^a+b{1,2}?[+*](?<n>c*)\\\\k<n>$")
    '^a+(?:|)b{1,2}?(?:|)[+*](?<n>c*(?:|))\\\\k<n>$'
    """
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            end = i + 2
            if pattern[i + 1 : i + 2] in ("u", "p", "P", "k") and pattern[end : end + 1] in ("{", "<"):
                close = pattern.find("}" if pattern[end] == "{" else ">", end)
                end = n if close < 0 else close + 1
            out.append(pattern[i:end])
            i = end
        elif ch == "[":
            # ECMA-262: a "]" right after "[" or "[^" closes the class ([] and [^] are classes).
            j = i + 1
            while j < n and pattern[j] != "]":
                j += 2 if pattern[j] == "\\" else 1
            out.append(pattern[i : j + 1])
            i = j + 1
        elif ch == "(" and pattern[i + 1 : i + 2] == "?":
            out.append("(?")
            i += 2
        elif ch in "*+?" or (ch == "{" and _quantifier_end(pattern, i) > i):
            end = i + 1 if ch != "{" else _quantifier_end(pattern, i)
            if pattern[end : end + 1] == "?":
                end += 1
            out.append(pattern[i:end] + _BREAK)
            i = end
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _quantifier_end(pattern: str, i: int) -> int:
    """Where ``{n}``, ``{n,}`` or ``{n,m}`` starting at ``i`` ends; ``i`` when it is a literal brace."""
    close = pattern.find("}", i)
    if close < 0:
        return i
    lo, _, hi = pattern[i + 1 : close].partition(",")
    return close + 1 if lo.isdigit() and (not hi or hi.isdigit()) and lo.isascii() and hi.isascii() else i


def _defuse_schema(schema: Any) -> Any:
    """A copy of ``schema`` with every ``patternProperties`` key defused; ``schema`` itself when none changes.
    Only schema positions are walked: a ``patternProperties`` inside ``const`` or ``enum`` is data."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    changed = False
    for key, value in schema.items():
        new = value
        if key in _ONE and isinstance(value, dict):
            new = _defuse_schema(value)
        elif key in _MANY and isinstance(value, list):
            items = [_defuse_schema(v) for v in value]
            new = items if any(a is not b for a, b in zip(items, value, strict=True)) else value
        elif key in _NAMED and isinstance(value, dict):
            rename = key == "patternProperties"
            named = {(defuse_pattern(k) if rename else k): _defuse_schema(v) for k, v in value.items()}
            same = list(named) == list(value) and all(named[k] is value[k] for k in value)
            new = value if same else named
        changed = changed or new is not value
        out[key] = new
    return out if changed else schema
