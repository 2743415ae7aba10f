"""Keyword families on single values: annotations, ``type``/``enum``/``const``, numbers and strings.
Each check answers "does the hypothesis side, as a whole, imply this one keyword of the other side?".
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from .._dialects import IGNORED_SIBLINGS
from .._ecma_regex import EcmaRegexError, to_python
from ..errors import InputError
from ._js_docs import Node
from ._js_pair import Facts, Pair
from ._js_values import (
    NUMBER,
    as_number,
    is_integral,
    jkey,
    json_equal,
    kind_of,
    kinds_of_type,
    runtime_accepts,
    type_names,
)
from ._js_vocab import ANNOTATIONS, ASSERTIONS, DEFS, IDENTIFIERS, unknown_keyword, validation_keys
from ._report import Change

__all__ = [
    "admitter",
    "annotation_changes",
    "bounds_disjoint",
    "diff_annotations",
    "diff_numbers",
    "diff_strings",
    "diff_values",
    "sharpen",
    "show",
]


# One encoder for every message: json.dumps with options builds a new one each call (~2% of a median diff).
_SHOW = json.JSONEncoder(ensure_ascii=False, sort_keys=True)


def show(value: Any, limit: int = 60) -> str:
    """A short JSON-ish rendering of a value for messages."""
    text = _SHOW.encode(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- annotations and other keywords that never change validity -----------------------------------------


def diff_annotations(p: Pair) -> None:
    p.own.extend(annotation_changes(p.o, p.n, p.ok, p.nk))


def annotation_changes(o: Node, n: Node, ok: dict[str, Any], nk: dict[str, Any]) -> list[Change]:
    """Neutral changes: annotations, identifiers, definitions, unknown and ignored keywords."""
    out: list[Change] = []
    keys = (ok.keys() | nk.keys()) - _JUDGED - _NOT_COMPARED
    if not keys:
        return out
    active: set[str] | None = None  # keywords judged by the families; computed only when needed
    for key in sorted(keys):
        if key in ASSERTIONS:
            active = validation_keys(ok) | validation_keys(nk) if active is None else active
            if key in active:
                continue
        in_o, in_n = key in ok, key in nk
        if key in DEFS:  # only names added or removed count here: no need to compare the (large) values first
            out += _definition_changes(o, n, ok.get(key), nk.get(key), key)
            continue
        if in_o and in_n and json_equal(ok[key], nk[key]):
            continue
        path = _path(n if in_n else o, key)
        if unknown_keyword(key):
            verb = "added" if not in_o else "removed" if not in_n else "changed"
            why = (
                f"unknown keyword {key!r} {verb}; subhive's validator ignores it, but what it was written for "
                "(OpenAPI's nullable, a custom vocabulary) may read it, so the change is not provably harmless; "
                "prefix notes with 'x-' or move them into $comment"
            )
            out.append(Change("keyword.unknown.unprovable", path, False, False, why))
        else:
            code, why = _neutral_code(key, in_o, in_n)
            out.append(Change(code, path, True, True, why))
    return out


_IGNORABLE = frozenset({"then", "else", "minContains", "maxContains"})
_NOT_COMPARED = frozenset({IGNORED_SIBLINGS})
_JUDGED = ASSERTIONS - _IGNORABLE  # always compared by a keyword family, never here


def _neutral_code(key: str, in_o: bool, in_n: bool) -> tuple[str, str]:
    verb = "added" if not in_o else "removed" if not in_n else "changed"
    if key == "default":
        return f"default.{verb}", (
            f"default {verb}; a default is an annotation: validators do not inject it, so validity is unchanged"
        )
    if key in ANNOTATIONS:
        return f"annotation.{verb}", f"annotation {key!r} {verb}; validity is unchanged"
    if key in IDENTIFIERS:
        return "identifier.changed", f"{key} {verb}; references are resolved and compared by target"
    if key in ASSERTIONS:
        return "keyword.ignored.changed", (
            f"{key!r} {verb}, but it has no effect here (then/else need if, minContains/maxContains need contains)"
        )
    return "keyword.unknown.changed", (
        f"extension keyword {key!r} {verb}; 'x-' keywords are annotations, so validity is unchanged"
    )


def _definition_changes(o: Node, n: Node, old: Any, new: Any, key: str) -> list[Change]:
    old, new = old if isinstance(old, dict) else {}, new if isinstance(new, dict) else {}
    out = []
    for name in new.keys() - old.keys():
        out.append(
            Change(
                "definition.added",
                _path(n, key, name),
                True,
                True,
                f"definition {name!r} added; definitions validate only where they are referenced",
            )
        )
    for name in old.keys() - new.keys():
        out.append(
            Change(
                "definition.removed",
                _path(o, key, name),
                True,
                True,
                f"definition {name!r} removed; uses through $ref are compared where they occur",
            )
        )
    return out


def _equal_json(a: Any, b: Any) -> bool:
    return json_equal(a, b)


def _path(node: Node, *tokens: str | int) -> str:
    return node.path + "".join("/" + str(t).replace("~", "~0").replace("/", "~1") for t in tokens)


# -- type, enum, const ----------------------------------------------------------------------------------


def diff_values(p: Pair) -> None:
    if p.keys.isdisjoint(("type", "enum", "const")):
        return
    if "type" in p.ok or "type" in p.nk:
        _diff_type(p)
    if "enum" in p.ok or "enum" in p.nk:
        _diff_enum(p)
    if "const" in p.ok or "const" in p.nk:
        _diff_const(p)


def _diff_type(p: Pair) -> None:
    ko, kn = kinds_of_type(p.ok.get("type")), kinds_of_type(p.nk.get("type"))
    if ko == kn:
        if p.ok.get("type") != p.nk.get("type"):
            p.add(
                "type.rewritten",
                p.path("type"),
                True,
                True,
                f"type spelled differently ({show(p.ok['type'])} -> {show(p.nk['type'])}), same meaning",
            )
        return
    back = kn is None or p.A.types <= kn
    fwd = ko is None or p.B.types <= ko
    if ko is None:
        verb, text = "added", f"type {type_names(kn or ())} added"
    elif kn is None:
        verb, text = "removed", f"type {type_names(ko)} removed"
    else:
        verb = "widened" if ko < kn else "narrowed" if kn < ko else "changed"
        text = f"type {verb} from {type_names(ko)} to {type_names(kn)}"
    p.add(f"type.{verb}", p.path("type"), back, fwd, text)


def _holds_enum(facts: Facts, allowed: list[Any] | None) -> bool:
    if allowed is None:
        return True
    if facts.finite is None:
        return False
    keys = {jkey(v) for v in allowed}
    return all(jkey(v) in keys for v in facts.finite)


def _diff_enum(p: Pair) -> None:
    eo, en = p.ok.get("enum"), p.nk.get("enum")
    so = {jkey(v) for v in eo} if eo is not None else None
    sn = {jkey(v) for v in en} if en is not None else None
    if so == sn:
        if [jkey(v) for v in eo or ()] != [jkey(v) for v in en or ()]:
            p.add("enum.reordered", p.path("enum"), True, True, "enum values reordered; same set")
        return
    back, fwd = _holds_enum(p.A, en), _holds_enum(p.B, eo)
    if so is None or sn is None:
        verb = "added" if so is None else "removed"
        p.add(f"enum.{verb}", p.path("enum"), back, fwd, f"enum {verb}: {show(en if so is None else eo)}")
        return
    gained = [v for v in en or () if jkey(v) not in so]
    lost = [v for v in eo or () if jkey(v) not in sn]
    verb = "widened" if not lost else "narrowed" if not gained else "changed"
    parts = ([f"added {show(gained)}"] if gained else []) + ([f"removed {show(lost)}"] if lost else [])
    p.add(f"enum.{verb}", p.path("enum"), back, fwd, f"enum {verb}: " + ", ".join(parts))


def _diff_const(p: Pair) -> None:
    in_o, in_n = "const" in p.ok, "const" in p.nk
    if in_o and in_n and _equal_json(p.ok["const"], p.nk["const"]):
        return
    back = not in_n or _holds_enum(p.A, [p.nk["const"]])
    fwd = not in_o or _holds_enum(p.B, [p.ok["const"]])
    verb = "added" if not in_o else "removed" if not in_n else "changed"
    shown = show(p.nk["const"]) if in_n else show(p.ok["const"])
    p.add(f"const.{verb}", p.path("const"), back, fwd, f"const {verb} ({shown})")


# -- bounds (shared by numbers, strings, arrays, objects) -----------------------------------------------

Holds = Callable[[Pair, Facts, str, Any], bool]


def diff_bound(p: Pair, keyword: str, code: str, holds: Holds, *, lower: bool, what: str) -> None:
    """One bound keyword: added, removed, tightened or relaxed, judged by ``holds`` in each direction."""
    in_o, in_n = keyword in p.ok, keyword in p.nk
    if not (in_o or in_n) or (in_o and in_n and _equal_json(p.ok[keyword], p.nk[keyword])):
        return
    back = not in_n or holds(p, p.A, keyword, p.nk[keyword])
    fwd = not in_o or holds(p, p.B, keyword, p.ok[keyword])
    if not in_o:
        verb, text = "added", f"{keyword} {show(p.nk[keyword])} added"
    elif not in_n:
        verb, text = "removed", f"{keyword} {show(p.ok[keyword])} removed"
    else:
        tighter = p.nk[keyword] > p.ok[keyword] if lower else p.nk[keyword] < p.ok[keyword]
        verb = "tightened" if tighter else "relaxed"
        text = f"{keyword} {verb} from {show(p.ok[keyword])} to {show(p.nk[keyword])}"
    p.add(f"{code}.{verb}", p.path(keyword), back, fwd, f"{text} (applies to {what} only)")


# -- numbers --------------------------------------------------------------------------------------------

_NUMBER_KEYS = frozenset({"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "multipleOf"})
_STRING_KEYS = frozenset({"minLength", "maxLength", "pattern", "format"})


def diff_numbers(p: Pair) -> None:
    if p.keys.isdisjoint(_NUMBER_KEYS):
        return
    for keyword, code, lower in (
        ("minimum", "minimum", True),
        ("exclusiveMinimum", "exclusive_minimum", True),
        ("maximum", "maximum", False),
        ("exclusiveMaximum", "exclusive_maximum", False),
    ):
        diff_bound(p, keyword, code, _holds_number, lower=lower, what="numbers")
    if "multipleOf" in p.ok or "multipleOf" in p.nk:
        _diff_multiple_of(p)


def _number_bound(facts: Facts, lower: bool) -> tuple[int | float, bool] | None:
    """The tightest (value, exclusive) bound of a schema; inclusive integers when only integers pass."""
    names = ("minimum", "exclusiveMinimum") if lower else ("maximum", "exclusiveMaximum")
    cands = [(kw[name], name.startswith("exclusive")) for kw in facts.conj for name in names if name in kw]
    if not cands:
        return None
    if lower:
        value, exclusive = max(cands, key=lambda c: (c[0], c[1]))
    else:
        value, exclusive = min(cands, key=lambda c: (c[0], not c[1]))
    # Integers only: x > 2.5 is x >= 3. (An int needs no finiteness check, and one past float range has none.)
    if facts.types & NUMBER == {"int"} and (isinstance(value, int) or math.isfinite(value)):
        if lower:
            return (math.floor(value) + 1 if exclusive else math.ceil(value)), False
        return (math.ceil(value) - 1 if exclusive else math.floor(value)), False
    return value, exclusive


def _number_ok(keyword: str, bound: Any, value: Any) -> bool:
    if keyword == "minimum":
        return bool(value >= bound)
    if keyword == "exclusiveMinimum":
        return bool(value > bound)
    if keyword == "maximum":
        return bool(value <= bound)
    if keyword == "exclusiveMaximum":
        return bool(value < bound)
    return runtime_accepts({"multipleOf": bound}, value)


def _holds_number(p: Pair, facts: Facts, keyword: str, bound: Any) -> bool:
    if not facts.types & NUMBER:
        return True
    if facts.finite is not None:
        return all(_number_ok(keyword, bound, v) for v in facts.finite if kind_of(v) in NUMBER)
    if keyword == "multipleOf":
        return _holds_multiple(facts, bound)
    lower = keyword in ("minimum", "exclusiveMinimum")
    have = _number_bound(facts, lower)
    if have is None:
        return False
    value, exclusive = have
    if lower:
        return value > bound or (value == bound and (exclusive or keyword == "minimum"))
    return value < bound or (value == bound and (exclusive or keyword == "maximum"))


def _holds_multiple(facts: Facts, bound: Any) -> bool:
    for mine in facts.values("multipleOf"):
        if _equal_json(mine, bound):
            return True
        if is_integral(mine) and is_integral(bound) and int(mine) % int(bound) == 0:
            return True  # exact for integers; fractional divisors stay unproven
    return bool(is_integral(bound) and int(bound) == 1 and facts.types & NUMBER == {"int"})


def _diff_multiple_of(p: Pair) -> None:
    mo, mn = p.ok.get("multipleOf"), p.nk.get("multipleOf")
    if mo is not None and mn is not None and _equal_json(mo, mn):
        return
    back = mn is None or _holds_number(p, p.A, "multipleOf", mn)
    fwd = mo is None or _holds_number(p, p.B, "multipleOf", mo)
    if mo is None or mn is None:
        verb = "added" if mo is None else "removed"
        text = f"multipleOf {show(mn if mo is None else mo)} {verb}"
    else:
        exact = is_integral(mo) and is_integral(mn)
        verb = (
            "tightened"
            if exact and int(mn) % int(mo) == 0
            else "relaxed"
            if exact and int(mo) % int(mn) == 0
            else "changed"
        )
        text = f"multipleOf {verb} from {show(mo)} to {show(mn)}"
        if not exact:
            text += "; fractional divisors are not compared (validators round differently)"
    p.add(f"multiple_of.{verb}", p.path("multipleOf"), back, fwd, text)


# -- strings --------------------------------------------------------------------------------------------


def diff_strings(p: Pair) -> None:
    if p.keys.isdisjoint(_STRING_KEYS):
        return
    diff_bound(p, "minLength", "min_length", _holds_length, lower=True, what="strings")
    diff_bound(p, "maxLength", "max_length", _holds_length, lower=False, what="strings")
    for keyword in ("pattern", "format"):
        if keyword in p.ok or keyword in p.nk:
            _diff_string_assertion(p, keyword)


def _holds_length(p: Pair, facts: Facts, keyword: str, bound: Any) -> bool:
    if "string" not in facts.types:
        return True
    lower = keyword == "minLength"
    if facts.finite is not None:
        return all((len(v) >= bound) if lower else (len(v) <= bound) for v in facts.finite if isinstance(v, str))
    return any(mine >= bound if lower else mine <= bound for mine in facts.values(keyword))


def _holds_string_assertion(p: Pair, facts: Facts, keyword: str, value: Any) -> bool:
    if "string" not in facts.types:
        return True
    if facts.finite is not None:
        return all(
            runtime_accepts({keyword: value}, v, pointer=p.path(keyword)) for v in facts.finite if isinstance(v, str)
        )
    return value in facts.values(keyword)


def _same_pattern(old: Any, new: Any) -> bool:
    """Two ECMA-262 patterns written differently that read the same (``\\d`` and ``[0-9]``, ``\\/`` and ``/``):
    their Python translations are equal. Sound: the translation is exact (subhive._ecma_regex)."""
    if not (isinstance(old, str) and isinstance(new, str)):
        return False
    try:
        return to_python(old) == to_python(new)
    except EcmaRegexError:
        return False


def _diff_string_assertion(p: Pair, keyword: str) -> None:
    vo, vn = p.ok.get(keyword), p.nk.get(keyword)
    if vo == vn or (keyword == "pattern" and _same_pattern(vo, vn)):
        return
    back = vn is None or _holds_string_assertion(p, p.A, keyword, vn)
    fwd = vo is None or _holds_string_assertion(p, p.B, keyword, vo)
    if vo is None or vn is None:
        verb = "added" if vo is None else "removed"
        p.add(f"{keyword}.{verb}", p.path(keyword), back, fwd, f"{keyword} {show(vn if vo is None else vo)} {verb}")
        return
    code = f"{keyword}.changed.unprovable" if not (back or fwd) else f"{keyword}.changed"
    why = (
        "regular expressions cannot be compared"
        if keyword == "pattern"
        else "formats are asserted at run time and cannot be compared"
    )
    p.add(code, p.path(keyword), back, fwd, f"{keyword} changed from {show(vo)} to {show(vn)}; {why}")


# -- sharper facts --------------------------------------------------------------------------------------

#: Keywords whose values hold no subschema: a fragment of them validates one value exactly as the runtime
#: does, so filtering candidate values through it keeps every value the subschema can accept. (type, enum
#: and const are checked natively: a large enum would make every fragment key expensive.)
_VALUE_KEYS = (
    "multipleOf",
    "minimum",
    "exclusiveMinimum",
    "maximum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "required",
    "dependentRequired",
)
_MAX_RANGE = 64  # integer ranges up to this size are listed as values (enough for every enum-like range)


def sharpen(facts: Facts) -> None:
    """Narrow ``facts`` (in place) where the keywords pin the accepted values down, still over-approximating.

    ``finite`` comes from an enum or const in any conjunct (not only the node's own), or from number bounds
    (``{"type": "integer", "minimum": 1, "maximum": 3}`` is ``[1, 2, 3]``, a number bounded to one point is
    that point, and ``null``/booleans join them when the type allows them too); its members are then filtered
    through every conjunct's value keywords by the runtime validator. ``types`` keeps only the kinds of those
    values, and loses fractional numbers under an integral ``multipleOf``. So a range and the enum listing it
    read alike in both directions (decision 0099).
    """
    values = facts.finite
    if values is None:
        values = _conjunct_values(facts)
    if values is None and facts.types & NUMBER and facts.types - NUMBER <= {"null", "boolean"}:
        values = _range_values(facts)  # a nullable range too: null and booleans are finite already
        if values is not None:
            values += [None] if "null" in facts.types else []
            values += [False, True] if "boolean" in facts.types else []
    if values is not None:
        check = _checker(facts)
        values = [v for v in values if check(v)]
        facts.finite = values
        facts.types = facts.types & {kind_of(v) for v in values}
    if "frac" in facts.types and any(is_integral(m) and m != 0 for m in facts.values("multipleOf")):
        facts.types = facts.types - {"frac"}  # a multiple of an integer is an integer


def admitter(facts: Facts) -> Callable[[Any], bool]:
    """A test that answers False only when proven: no instance equal to the value is valid under the
    subschema ``facts`` describe (``facts`` already sharpened)."""
    if facts.finite is not None:
        keys = {jkey(v) for v in facts.finite}
        return lambda value: jkey(value) in keys
    return _checker(facts)


def _checker(facts: Facts) -> Callable[[Any], bool]:
    members = [{jkey(v) for v in kw["enum"]} for kw in facts.conj if isinstance(kw.get("enum"), list)]
    members += [{jkey(kw["const"])} for kw in facts.conj if "const" in kw]
    fragments = [f for f in ({k: kw[k] for k in _VALUE_KEYS if k in kw} for kw in facts.conj) if f]
    types = facts.types

    def check(value: Any) -> bool:
        if kind_of(value) not in types:
            return False
        key = jkey(value)
        return all(key in m for m in members) and all(_accepts(f, value) for f in fragments)

    return check


def _accepts(fragment: dict[str, Any], value: Any) -> bool:
    try:
        return runtime_accepts(fragment, value)
    except InputError:
        return True  # a keyword the runtime cannot compile is reported where it is compared


def _conjunct_values(facts: Facts) -> list[Any] | None:
    for kw in facts.conj:
        if "const" in kw:
            return [kw["const"]]
        if isinstance(kw.get("enum"), list):
            return list({jkey(v): v for v in kw["enum"]}.values())
    return None


def _range_values(facts: Facts) -> list[Any] | None:
    low, high = _number_bound(facts, True), _number_bound(facts, False)
    if low is None or high is None:
        return None
    (lo, lo_excl), (hi, hi_excl) = low, high
    if lo > hi or (lo == hi and (lo_excl or hi_excl)):
        return []
    if lo == hi:
        return [lo]
    if facts.types & NUMBER == {"int"} and isinstance(lo, int) and isinstance(hi, int) and hi - lo < _MAX_RANGE:
        return list(range(lo, hi + 1))  # _number_bound made integer bounds inclusive integers
    return None


def bounds_disjoint(fx: Facts, fy: Facts) -> bool:
    """Proven by bounds alone: for every kind both admit, the two ranges of that kind cannot meet
    (``maxLength`` 0 against ``minLength`` 1, ``maximum`` 2 against ``exclusiveMinimum`` 2, ...)."""
    kinds = {"number" if k in NUMBER else k for k in fx.types & fy.types}
    return all(_kind_disjoint(fx, fy, kind) or _kind_disjoint(fy, fx, kind) for kind in kinds)


_COUNTS = {
    "string": ("minLength", "maxLength"),
    "array": ("minItems", "maxItems"),
    "object": ("minProperties", "maxProperties"),
}


def _kind_disjoint(fx: Facts, fy: Facts, kind: str) -> bool:
    """x's lower bound for ``kind`` lies above y's upper bound."""
    if kind == "number":
        low, high = _number_bound(fx, True), _number_bound(fy, False)
        if low is None or high is None:
            return False
        (lo, lo_excl), (hi, hi_excl) = low, high
        return bool(lo > hi or (lo == hi and (lo_excl or hi_excl)))
    names = _COUNTS.get(kind)
    if names is None:
        return False
    lows = [v for v in fx.values(names[0]) if as_number(v) is not None]
    highs = [v for v in fy.values(names[1]) if as_number(v) is not None]
    return bool(lows and highs and max(lows) > min(highs))
