"""Deterministic, schema-valid mock instances of a JSON Schema 2020-12 document (:class:`InstanceGenerator`).
A schema no value satisfies raises :class:`Unsatisfiable` naming the keyword (``mock.unsatisfiable``).
"""

from __future__ import annotations

import importlib
import math
import random
import re
import uuid
from collections.abc import Callable, Iterable, Iterator
from fractions import Fraction
from typing import Any
from urllib.parse import quote, unquote, urljoin

import jsonschema_rs

from .._ecma_regex import EcmaRegexError, compile_ecma
from .._rs_validator import runtime_validator
from ..contract import SUBSCHEMA_KEYWORDS, SUBSCHEMA_LIST_KEYWORDS
from ..errors import InputError, Location

# Python's own regex parser inverts ordinary patterns. It is private (hence imported by name, no stubs) and
# may move in a later Python: without it, patterns get no sampler and candidates are judged by the validator
# alone (a pattern-constrained string may then be reported unsatisfiable instead of built).
try:
    sre_parse: Any = importlib.import_module("re._parser")
    sre_c: Any = importlib.import_module("re._constants")
except ImportError:  # pragma: no cover - depends on the Python version
    sre_parse = sre_c = None

__all__ = ["InstanceGenerator", "Unsatisfiable"]

Schema = dict[str, Any] | bool
Pair = tuple[Schema, str]  # a subschema and its JSON pointer in the document

#: Whole-instance attempts (each with a derived seed) before giving up.
ATTEMPTS = 24
#: Attempts at one place of the instance that has a ``not``/``oneOf``/``if`` check.
LOCAL_TRIES = 6
#: From this nesting depth on, optional properties are left out, arrays keep their minimum length and
#: branches without ``$ref`` are preferred, so recursive schemas end.
SOFT_DEPTH = 4
#: Past this depth a candidate is abandoned (a required recursion that never ends).
HARD_DEPTH = 48

_ROOT_URI = "urn:subhive:mock-root"
_ALL_TYPES = ("null", "boolean", "integer", "number", "string", "array", "object")
_SCALARS = ("null", "boolean", "integer", "number", "string")
_ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "$comment",
        "examples",
        "default",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$id",
        "$schema",
        "$anchor",
        "$dynamicAnchor",
        "$defs",
        "definitions",
        "$vocabulary",
        "contentMediaType",
        "contentEncoding",
        "contentSchema",
    }
)
_SUBSCHEMA = SUBSCHEMA_KEYWORDS
_SUBSCHEMA_MAPS = ("$defs", "definitions", "properties", "patternProperties", "dependentSchemas")
_SUBSCHEMA_LISTS = SUBSCHEMA_LIST_KEYWORDS
_TYPE_HINTS = {
    "integer": ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"),
    "string": ("minLength", "maxLength", "pattern", "format"),
    "array": ("items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains"),
    "object": (
        "properties",
        "required",
        "additionalProperties",
        "patternProperties",
        "minProperties",
        "maxProperties",
        "propertyNames",
        "dependentRequired",
    ),
}
_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_EXTRA_CHARS = "éßΩ✓😀"  # non-ASCII (one beyond the BMP) so lengths are exercised in code points
_NEGATED_POOL = _ALPHABET + " -_.,:;!?#@%&*+=/()[]{}<>'\"~é"


class Unsatisfiable(InputError):
    """No instance could be generated: ``location.pointer`` names the subschema that cannot be met."""

    default_code = "mock.unsatisfiable"


class _Impossible(Exception):
    """A definite contradiction: no value at all satisfies the subschema at ``ptr``."""

    def __init__(self, ptr: str, reason: str, hint: str = "") -> None:
        super().__init__(reason)
        self.ptr, self.reason, self.hint = ptr, reason, hint


class _Miss(Exception):
    """This candidate failed; another seed may succeed."""

    def __init__(self, ptr: str, reason: str) -> None:
        super().__init__(reason)
        self.ptr, self.reason = ptr, reason


# --------------------------------------------------------------------------------------------------- values


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return "integer"
    if isinstance(value, float):
        return "number"
    names: dict[type, str] = {str: "string", list: "array", dict: "object"}
    return names.get(type(value), "unknown")


def _type_ok(value: Any, types: Iterable[str]) -> bool:
    kind = _json_type(value)
    return kind in types or (kind == "integer" and "number" in types)


def _key(value: Any) -> Any:
    """A hashable key under which JSON-equal values are equal (1 == 1.0, but true != 1)."""
    if isinstance(value, bool) or value is None:
        return ("b", value)
    if isinstance(value, int | float):
        return ("n", value)
    if isinstance(value, list):
        return ("a", tuple(_key(v) for v in value))
    if isinstance(value, dict):
        return ("o", frozenset((k, _key(v)) for k, v in value.items()))
    return ("s", value)


def _copy(value: Any) -> Any:
    # const/enum/examples come from the schema itself: a caller mutating a mock must not change the schema.
    if isinstance(value, list):
        return [_copy(v) for v in value]
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    return value


def _number(value: Any) -> Fraction:
    # The decimal text, not the binary float: multipleOf 0.1 means tenths.
    return Fraction(repr(value)) if isinstance(value, float) else Fraction(value)


def _lcm(a: Fraction, b: Fraction) -> Fraction:
    return Fraction(math.lcm(a.numerator, b.numerator), math.gcd(a.denominator, b.denominator))


# ---------------------------------------------------------------------------------------------------- plans


class _Choice:
    """A pending ``anyOf``/``oneOf``/``if``: one branch is folded in per instance."""

    __slots__ = ("branches", "key", "kind", "ptr")

    def __init__(self, kind: str, key: int, ptr: str, branches: list[tuple[Pair, ...]]) -> None:
        self.kind, self.key, self.ptr, self.branches = kind, key, ptr, branches


class _Plan:
    """Everything the conjuncts at one place say, merged."""

    def __init__(self, ptr: str) -> None:
        self.ptr = ptr
        self.ptrs: list[str] = []
        self.at: dict[str, str] = {}  # plan attribute -> pointer of the subschema whose bound is in effect
        self.types: set[str] | None = None
        self.not_types: set[str] = set()
        self.consts: list[Any] = []
        self.enums: list[list[Any]] = []
        self.examples: list[Any] = []
        self.choices: list[_Choice] = []
        self.checks: list[str] = []
        # numbers
        self.lo: Fraction | None = None
        self.lo_excl = False
        self.hi: Fraction | None = None
        self.hi_excl = False
        self.multiple: Fraction | None = None
        # strings
        self.min_len = 0
        self.max_len: int | None = None
        self.patterns: list[tuple[str, str]] = []
        self.formats: list[tuple[str, str]] = []
        # arrays
        self.prefix: list[list[Pair]] = []
        self.items: list[tuple[Pair, int]] = []
        self.min_items = 0
        self.max_items: int | None = None
        self.unique = False
        self.contains: list[Pair] = []
        self.min_contains: int | None = None
        self.max_contains: int | None = None
        # objects
        self.props: dict[str, list[Pair]] = {}
        self.pattern_props: list[tuple[str, Pair]] = []
        self.additional: list[tuple[Pair, frozenset[str], tuple[str, ...]]] = []
        self.required: dict[str, str] = {}
        self.min_props = 0
        self.max_props: int | None = None
        self.names: list[Pair] = []
        self.dep_required: dict[str, list[str]] = {}
        self.dep_schemas: set[str] = set()
        # derived by finish()
        self.type_order: list[str] = []
        self.enum_values: list[Any] | None = None
        self.key_pairs: dict[str, tuple[Pair, ...]] = {}

    def where(self, *attrs: str) -> str:
        """The pointer of the subschema that set the first of ``attrs`` (else the first conjunct's)."""
        return next((self.at[a] for a in attrs if a in self.at), self.ptr)

    def lower(self, value: Any, exclusive: bool) -> None:
        bound = _number(value)
        if self.lo is None or bound > self.lo or (bound == self.lo and exclusive):
            self.lo, self.lo_excl = bound, exclusive

    def upper(self, value: Any, exclusive: bool) -> None:
        bound = _number(value)
        if self.hi is None or bound < self.hi or (bound == self.hi and exclusive):
            self.hi, self.hi_excl = bound, exclusive

    def finish(self) -> None:
        """Settle types, const and enum; raise _Impossible when they leave nothing."""
        allowed = set(_ALL_TYPES) if self.types is None else set(self.types)
        allowed -= self.not_types
        if "number" in self.not_types:
            allowed.discard("integer")
        if not allowed:
            raise _Impossible(
                self.ptr, "no JSON type is left once `type` and `not` are combined", "allow at least one type"
            )
        hinted = [t for t in _ALL_TYPES if t in allowed and self._hinted(t)]
        self.type_order = hinted + [t for t in _ALL_TYPES if t in allowed and t not in hinted]
        values = self._candidates()
        if values is not None:
            values = [v for v in values if _type_ok(v, allowed)]
            if not values:
                raise _Impossible(
                    self.ptr,
                    "no `const`/`enum` value is of an allowed type and in every enum",
                    "make `const`, `enum` and `type` agree",
                )
        self.enum_values = values

    def _hinted(self, kind: str) -> bool:
        """Whether the schema says something about values of this type (then they are generated first)."""
        if self.types is not None:
            return True
        hints = {
            "number": self.lo is not None or self.hi is not None or self.multiple is not None,
            "string": bool(self.patterns or self.formats or self.min_len or self.max_len is not None),
            "array": bool(self.prefix or self.items or self.contains or self.min_items),
            "object": bool(self.props or self.required or self.pattern_props or self.min_props),
        }
        return hints.get(kind, False)

    def _candidates(self) -> list[Any] | None:
        if self.consts:
            first = self.consts[0]
            if any(_key(c) != _key(first) for c in self.consts[1:]):
                raise _Impossible(self.ptr, "two `const` values differ", "keep one `const`")
            pool: list[Any] | None = [first]
        else:
            pool = self.enums[0] if self.enums else None
        if pool is None:
            return None
        for enum in self.enums:
            keys = {_key(v) for v in enum}
            pool = [v for v in pool if _key(v) in keys]
        return pool


# --------------------------------------------------------------------------------------------- the document


class _Document:
    """Resolves local ``$ref`` (pointers, anchors, embedded ``$id``) and knows where every subschema is."""

    def __init__(self, root: Schema) -> None:
        self.root = root
        self.where: dict[int, tuple[str, str]] = {}  # id(subschema) -> (pointer, base URI)
        self.resources: dict[str, str] = {}  # base URI -> pointer of the resource
        self.anchors: dict[tuple[str, str], str] = {}
        self.refs: dict[tuple[int, str], Pair] = {}
        base = root.get("$id", _ROOT_URI) if isinstance(root, dict) else _ROOT_URI
        self.resources[_ROOT_URI] = ""
        self._walk(root, "", str(base).partition("#")[0] or _ROOT_URI)

    def _walk(self, schema: Any, ptr: str, base: str) -> None:
        if not isinstance(schema, dict):
            return
        if isinstance(schema.get("$id"), str):
            base = urljoin(base, schema["$id"]).partition("#")[0] or base
            self.resources[base] = ptr
        for word in ("$anchor", "$dynamicAnchor"):
            if isinstance(schema.get(word), str):
                self.anchors[(base, schema[word])] = ptr
        self.where[id(schema)] = (ptr, base)
        for word, sub, sub_ptr in _children(schema, ptr):
            del word
            self._walk(sub, sub_ptr, base)

    def pointer(self, ptr: str) -> Any:
        node: Any = self.root
        for raw in ptr.split("/")[1:]:
            token = raw.replace("~1", "/").replace("~0", "~")
            node = node[int(token)] if isinstance(node, list) else node[token]
        return node

    def resolve(self, schema: dict[str, Any], ref: str, ptr: str) -> Pair:
        cached = self.refs.get((id(schema), ref))
        if cached is None:
            cached = self._resolve(schema, ref, ptr)
            self.refs[(id(schema), ref)] = cached
        return cached

    def _resolve(self, schema: dict[str, Any], ref: str, ptr: str) -> Pair:
        base = self.where.get(id(schema), (ptr, _ROOT_URI))[1]
        uri = base + ref if ref.startswith("#") else urljoin(base, ref)
        doc, _, fragment = uri.partition("#")
        fragment = unquote(fragment)
        target: str | None = None
        if doc in self.resources:
            if fragment == "" or fragment.startswith("/"):
                target = self.resources[doc] + fragment
            else:
                target = self.anchors.get((doc, fragment))
        if target is not None:
            try:
                return self.pointer(target), target
            except (KeyError, IndexError, ValueError, TypeError):
                pass
        raise InputError(
            f"$ref {ref!r} does not resolve inside the document",
            code="mock.ref_unresolved",
            location=Location(pointer=ptr + "/$ref"),
            hint="mocks need self-contained schemas: bundle other files into $defs",
        )


def _children(schema: dict[str, Any], ptr: str) -> Iterator[tuple[str, Any, str]]:
    for word in _SUBSCHEMA:
        if word in schema:
            yield word, schema[word], f"{ptr}/{word}"
    for word in _SUBSCHEMA_MAPS:
        if isinstance(schema.get(word), dict):
            for name, sub in schema[word].items():
                yield word, sub, f"{ptr}/{word}/{_escape(name)}"
    for word in _SUBSCHEMA_LISTS:
        if isinstance(schema.get(word), list):
            for i, sub in enumerate(schema[word]):
                yield word, sub, f"{ptr}/{word}/{i}"


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _has_ref(schema: Any, seen: set[int] | None = None) -> bool:
    if not isinstance(schema, dict):
        return False
    seen = set() if seen is None else seen
    if id(schema) in seen:
        return False
    seen.add(id(schema))
    if "$ref" in schema or "$dynamicRef" in schema:
        return True
    return any(_has_ref(sub, seen) for _, sub, _ in _children(schema, ""))


def _is_trivially_true(schema: Any) -> bool:
    return schema is True or (isinstance(schema, dict) and not (set(schema) - _ANNOTATIONS))


# ------------------------------------------------------------------------------------------------- folding


class _Folder:
    """Folds the conjuncts at one place into a :class:`_Plan`."""

    def __init__(self, doc: _Document, resolved: frozenset[int]) -> None:
        self.doc = doc
        self.resolved = resolved
        self.seen: set[int] = set()

    def fold(self, plan: _Plan, schema: Schema, ptr: str) -> None:
        if schema is True:
            return
        if schema is False:
            raise _Impossible(ptr, "the schema is `false`", "use `true` or a schema that admits a value")
        if not isinstance(schema, dict) or id(schema) in self.seen:
            return  # A and A is A: a reference met twice adds nothing
        self.seen.add(id(schema))
        plan.ptrs.append(ptr)
        if "$ref" in schema:
            target, target_ptr = self.doc.resolve(schema, schema["$ref"], ptr)
            self.fold(plan, target, target_ptr)
        if "$dynamicRef" in schema:
            target, target_ptr = self.doc.resolve(schema, schema["$dynamicRef"], ptr)
            self.fold(plan, target, target_ptr)
        for i, sub in enumerate(schema.get("allOf", ())):
            self.fold(plan, sub, f"{ptr}/allOf/{i}")
        self._combinators(plan, schema, ptr)
        self._generic(plan, schema, ptr)
        _fold_numbers(plan, schema)
        _fold_strings(plan, schema, ptr)
        _fold_arrays(plan, schema, ptr)
        _fold_objects(plan, schema, ptr)
        _note_bounds(plan, schema, ptr)

    def _combinators(self, plan: _Plan, schema: dict[str, Any], ptr: str) -> None:
        for word in ("anyOf", "oneOf"):
            branches = schema.get(word)
            if isinstance(branches, list) and id(branches) not in self.resolved:
                plan.choices.append(
                    _Choice(
                        word,
                        id(branches),
                        f"{ptr}/{word}",
                        [((b, f"{ptr}/{word}/{i}"),) for i, b in enumerate(branches)],
                    )
                )
        if "oneOf" in schema:
            plan.checks.append(ptr)
        if "if" in schema:
            plan.checks.append(ptr)
            if id(schema) not in self.resolved:
                then: tuple[Pair, ...] = (schema["if"], f"{ptr}/if"), (schema.get("then", True), f"{ptr}/then")
                other: tuple[Pair, ...] = ((schema["else"], f"{ptr}/else"),) if "else" in schema else ()
                plan.choices.append(_Choice("if", id(schema), ptr, [then, other]))
        if "not" in schema:
            self._negation(plan, schema["not"], ptr)

    @staticmethod
    def _negation(plan: _Plan, negated: Any, ptr: str) -> None:
        if _is_trivially_true(negated):
            raise _Impossible(
                f"{ptr}/not",
                "`not` forbids every value (its schema accepts everything)",
                "remove the `not` or give it a condition",
            )
        plan.checks.append(ptr)
        if isinstance(negated, dict) and set(negated) - _ANNOTATIONS == {"type"}:
            kinds = negated["type"]
            plan.not_types.update([kinds] if isinstance(kinds, str) else kinds)

    @staticmethod
    def _generic(plan: _Plan, schema: dict[str, Any], ptr: str) -> None:
        if "type" in schema:
            kinds = schema["type"]
            new = {kinds} if isinstance(kinds, str) else set(kinds)
            if plan.types is None:
                plan.types = new
            else:
                both = plan.types & new
                if ("number" in plan.types and "integer" in new) or ("integer" in plan.types and "number" in new):
                    both.add("integer")
                if not both:
                    raise _Impossible(
                        f"{ptr}/type",
                        f"`type` {sorted(new)} shares no type with {sorted(plan.types)} required elsewhere",
                        "make the types overlap",
                    )
                plan.types = both
        if "const" in schema:
            plan.consts.append(schema["const"])
        if isinstance(schema.get("enum"), list):
            plan.enums.append(schema["enum"])
        if isinstance(schema.get("examples"), list):
            plan.examples.extend(schema["examples"])
        if "default" in schema:
            plan.examples.append(schema["default"])


_BOUNDS = {
    "minimum": "lo",
    "exclusiveMinimum": "lo",
    "maximum": "hi",
    "exclusiveMaximum": "hi",
    "multipleOf": "multiple",
    "minLength": "min_len",
    "maxLength": "max_len",
    "minItems": "min_items",
    "maxItems": "max_items",
    "minContains": "min_contains",
    "maxContains": "max_contains",
    "minProperties": "min_props",
    "maxProperties": "max_props",
}


def _note_bounds(plan: _Plan, schema: dict[str, Any], ptr: str) -> None:
    # An error about contradictory bounds names the subschema whose bound is the one in effect.
    for word, attr in _BOUNDS.items():
        if word in schema:
            try:
                effective = getattr(plan, attr) == _number(schema[word])
            except (TypeError, ValueError):
                continue
            if effective:
                plan.at[attr] = ptr


def _fold_numbers(plan: _Plan, schema: dict[str, Any]) -> None:
    if "minimum" in schema:
        plan.lower(schema["minimum"], False)
    if "exclusiveMinimum" in schema:
        plan.lower(schema["exclusiveMinimum"], True)
    if "maximum" in schema:
        plan.upper(schema["maximum"], False)
    if "exclusiveMaximum" in schema:
        plan.upper(schema["exclusiveMaximum"], True)
    if "multipleOf" in schema:
        step = _number(schema["multipleOf"])
        plan.multiple = step if plan.multiple is None else _lcm(plan.multiple, step)


def _fold_strings(plan: _Plan, schema: dict[str, Any], ptr: str) -> None:
    if "minLength" in schema:
        plan.min_len = max(plan.min_len, int(schema["minLength"]))
    if "maxLength" in schema:
        top = int(schema["maxLength"])
        plan.max_len = top if plan.max_len is None else min(plan.max_len, top)
    if isinstance(schema.get("pattern"), str):
        plan.patterns.append((schema["pattern"], f"{ptr}/pattern"))
    if isinstance(schema.get("format"), str) and schema["format"] in _FORMATS:
        plan.formats.append((schema["format"], f"{ptr}/format"))


def _fold_arrays(plan: _Plan, schema: dict[str, Any], ptr: str) -> None:
    prefix = schema.get("prefixItems")
    if isinstance(prefix, list):
        for i, sub in enumerate(prefix):
            if i == len(plan.prefix):
                plan.prefix.append([])
            plan.prefix[i].append((sub, f"{ptr}/prefixItems/{i}"))
    if "items" in schema:
        plan.items.append(((schema["items"], f"{ptr}/items"), len(prefix) if isinstance(prefix, list) else 0))
    if "minItems" in schema:
        plan.min_items = max(plan.min_items, int(schema["minItems"]))
    if "maxItems" in schema:
        top = int(schema["maxItems"])
        plan.max_items = top if plan.max_items is None else min(plan.max_items, top)
    if schema.get("uniqueItems") is True:
        plan.unique = True
    if "contains" in schema:
        plan.contains.append((schema["contains"], f"{ptr}/contains"))
        # min/maxContains of one conjunct only bound its own `contains`; checked as a whole by the validator
        need = int(schema.get("minContains", 1))
        plan.min_contains = need if plan.min_contains is None else max(plan.min_contains, need)
        if "maxContains" in schema:
            top = int(schema["maxContains"])
            plan.max_contains = top if plan.max_contains is None else min(plan.max_contains, top)


def _fold_objects(plan: _Plan, schema: dict[str, Any], ptr: str) -> None:
    props: dict[str, Any] = schema["properties"] if isinstance(schema.get("properties"), dict) else {}
    for name, sub in props.items():
        plan.props.setdefault(name, []).append((sub, f"{ptr}/properties/{_escape(name)}"))
    patterns: dict[str, Any] = schema["patternProperties"] if isinstance(schema.get("patternProperties"), dict) else {}
    for pattern, sub in patterns.items():
        plan.pattern_props.append((pattern, (sub, f"{ptr}/patternProperties/{_escape(pattern)}")))
    if "additionalProperties" in schema:
        plan.additional.append(
            ((schema["additionalProperties"], f"{ptr}/additionalProperties"), frozenset(props), tuple(patterns))
        )
    for i, name in enumerate(schema.get("required", ())):
        plan.required.setdefault(name, f"{ptr}/required/{i}")
    if "minProperties" in schema:
        plan.min_props = max(plan.min_props, int(schema["minProperties"]))
    if "maxProperties" in schema:
        top = int(schema["maxProperties"])
        plan.max_props = top if plan.max_props is None else min(plan.max_props, top)
    if "propertyNames" in schema:
        plan.names.append((schema["propertyNames"], f"{ptr}/propertyNames"))
    for name, needed in (schema.get("dependentRequired") or {}).items():
        plan.dep_required.setdefault(name, []).extend(needed)
    plan.dep_schemas.update(schema.get("dependentSchemas") or {})


# ------------------------------------------------------------------------------------------------- strings


def _pick_chars(rng: random.Random, count: int) -> str:
    exotic = rng.random() < 0.15
    return "".join(
        rng.choice(_EXTRA_CHARS) if exotic and rng.random() < 0.3 else rng.choice(_ALPHABET) for _ in range(count)
    )


def _fmt_date(rng: random.Random) -> str:
    return f"{rng.randint(1970, 2099):04d}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def _fmt_time(rng: random.Random) -> str:
    zone = rng.choice(["Z", "+01:00", "-05:30", "Z"])
    return f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}{zone}"


def _fmt_ipv6(rng: random.Random) -> str:
    groups = [f"{rng.randint(0, 0xFFFF):x}" for _ in range(8)]
    return ":".join(groups) if rng.random() < 0.7 else f"{groups[0]}::{groups[7]}"


def _word(rng: random.Random) -> str:
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(1, 8)))


_FORMATS: dict[str, Callable[[random.Random], str]] = {
    "date-time": lambda r: f"{_fmt_date(r)}T{_fmt_time(r)}",
    "date": _fmt_date,
    "time": _fmt_time,
    "duration": lambda r: r.choice(
        [
            f"P{r.randint(1, 30)}D",
            f"PT{r.randint(1, 59)}M",
            f"P{r.randint(1, 9)}DT{r.randint(1, 23)}H",
            f"P{r.randint(1, 52)}W",
        ]
    ),
    "email": lambda r: f"{_word(r)}@{_word(r)}.example",
    "idn-email": lambda r: f"{_word(r)}{r.choice(['', 'ü', 'é'])}@{_word(r)}.example",
    "hostname": lambda r: f"{_word(r)}-{r.randint(0, 99)}.{_word(r)}.example",
    "idn-hostname": lambda r: f"{_word(r)}{r.choice(['', 'ü', 'ö'])}.{_word(r)}.example",
    "ipv4": lambda r: ".".join(str(r.randint(0, 255)) for _ in range(4)),
    "ipv6": _fmt_ipv6,
    "uri": lambda r: f"https://{_word(r)}.example/{_word(r)}?n={r.randint(0, 99)}",
    "uri-reference": lambda r: r.choice(
        [f"/{_word(r)}/{r.randint(0, 99)}", f"https://{_word(r)}.example/", f"{_word(r)}#{_word(r)}"]
    ),
    "iri": lambda r: f"https://{_word(r)}.example/{_word(r)}{r.choice(['', 'ü', 'é'])}",
    "iri-reference": lambda r: f"/{_word(r)}{r.choice(['', 'ü'])}",
    "uuid": lambda r: str(uuid.UUID(int=r.getrandbits(128), version=4)),
    "regex": lambda r: r.choice(["^[a-z]+$", "[0-9]{2,4}", "a|b", f"^{_word(r)}.*$"]),
    "json-pointer": lambda r: "".join(f"/{_word(r)}" for _ in range(r.randint(0, 3))),
    "relative-json-pointer": lambda r: r.choice(
        [f"{r.randint(0, 5)}", f"{r.randint(0, 5)}#", f"{r.randint(0, 5)}/{_word(r)}"]
    ),
}


class _Unsupported(Exception):
    """A regex feature the sampler does not invert (lookaround, conditional group)."""


_CATEGORY_CHARS = {
    sre_c.CATEGORY_DIGIT: "0123456789",
    sre_c.CATEGORY_NOT_DIGIT: "abcXYZ-_",
    sre_c.CATEGORY_WORD: _ALPHABET + "_",
    sre_c.CATEGORY_NOT_WORD: " -.,:",
    sre_c.CATEGORY_SPACE: " ",
    sre_c.CATEGORY_NOT_SPACE: _ALPHABET,
}


class _RegexSampler:
    """Builds strings that match an ordinary regular expression, from Python's own parse of it."""

    def __init__(self, rng: random.Random, extra: int) -> None:
        self.rng = rng
        self.extra = extra  # how far past its minimum an unbounded repetition may go
        self.groups: dict[int, str] = {}

    def sample(self, items: Any) -> str:
        return "".join(self._one(op, av) for op, av in items)

    def _one(self, op: Any, av: Any) -> str:  # noqa: PLR0911 - one return per regex node kind
        if op is sre_c.LITERAL:
            return chr(av)
        if op in (sre_c.ANY, sre_c.NOT_LITERAL):
            return self.rng.choice([c for c in _ALPHABET if op is sre_c.ANY or ord(c) != av])
        if op is sre_c.IN:
            return self._in(av)
        if op is sre_c.CATEGORY:
            return self.rng.choice(_CATEGORY_CHARS.get(av, _ALPHABET))
        if op is sre_c.BRANCH:
            return self.sample(self.rng.choice(av[1]))
        if op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, sre_c.POSSESSIVE_REPEAT):
            return self._repeat(*av)
        return self._structure(op, av)

    def _structure(self, op: Any, av: Any) -> str:
        if op is sre_c.SUBPATTERN:
            text = self.sample(av[3])
            if av[0] is not None:
                self.groups[av[0]] = text
            return text
        if op is sre_c.ATOMIC_GROUP:
            return self.sample(av)
        if op is sre_c.GROUPREF:
            return self.groups.get(av, "")
        if op is sre_c.AT:
            return ""  # anchors and boundaries: the whole string is checked afterwards
        raise _Unsupported(str(op))

    def _repeat(self, low: int, high: Any, sub: Any) -> str:
        top = low + self.extra if high is sre_c.MAXREPEAT else min(high, low + self.extra)
        return "".join(self.sample(sub) for _ in range(self.rng.randint(low, max(low, top))))

    def _in(self, members: list[tuple[Any, Any]]) -> str:
        if members and members[0][0] is sre_c.NEGATE:
            pool = [c for c in _NEGATED_POOL if not _in_set(c, members[1:])]
            if not pool:
                raise _Unsupported("negated set")
            return self.rng.choice(pool)
        op, av = self.rng.choice(members)
        if op is sre_c.LITERAL:
            return chr(av)
        if op is sre_c.RANGE:
            return chr(self.rng.randint(av[0], min(av[1], av[0] + 200)))
        if op is sre_c.CATEGORY:
            return self.rng.choice(_CATEGORY_CHARS.get(av, _ALPHABET))
        raise _Unsupported(str(op))


def _in_set(char: str, members: list[tuple[Any, Any]]) -> bool:
    for op, av in members:
        if op is sre_c.LITERAL and ord(char) == av:
            return True
        if op is sre_c.RANGE and av[0] <= ord(char) <= av[1]:
            return True
        if op is sre_c.CATEGORY and char in _CATEGORY_CHARS.get(av, ""):
            return True
    return False


_PARSED: dict[str, Any] = {}
_COMPILED: dict[str, re.Pattern[str] | None] = {}


def _parse_regex(pattern: str) -> tuple[Any, re.Pattern[str]] | None:
    """The parse tree the sampler walks, and the compiled pattern; None when there is no sampler for it."""
    compiled = _compiled(pattern)
    if sre_parse is None or compiled is None:
        return None
    if pattern not in _PARSED:
        try:
            _PARSED[pattern] = (sre_parse.parse(compiled.pattern), compiled)
        except (re.error, OverflowError, RecursionError):
            _PARSED[pattern] = None
    result: tuple[Any, re.Pattern[str]] | None = _PARSED[pattern]
    return result


def _compiled(pattern: str) -> re.Pattern[str] | None:
    if pattern not in _COMPILED:
        try:
            _COMPILED[pattern] = compile_ecma(pattern)  # ECMA-262 read as such (\d is ASCII, $ the very end)
        except EcmaRegexError:
            _COMPILED[pattern] = None  # no exact Python reading (\p{...}): the validator still judges the candidates
    return _COMPILED[pattern]


def _matches(pattern: str, text: str) -> bool:
    compiled = _compiled(pattern)
    return compiled is not None and compiled.search(text) is not None


def _string_from_patterns(plan: _Plan, rng: random.Random) -> str:
    pattern, ptr = plan.patterns[0]
    parsed = _parse_regex(pattern)
    top = plan.max_len if plan.max_len is not None else plan.min_len + 40
    for attempt in range(16):
        if parsed is None:
            break
        try:
            text = _RegexSampler(rng, (0, 1, 3, 6, 12)[attempt % 5]).sample(parsed[0])
        except _Unsupported:
            break
        text = _pad(text, pattern, plan.min_len, rng)
        if plan.min_len <= len(text) <= top and all(_matches(p, text) for p, _ in plan.patterns):
            return text
    raise _Miss(ptr, f"could not build a string matching pattern {pattern!r} within the length bounds")


def _pad(text: str, pattern: str, min_len: int, rng: random.Random) -> str:
    # Patterns are unanchored searches: extra characters around a match keep it a match unless anchored.
    if len(text) >= min_len:
        return text
    fill = _pick_chars(rng, min_len - len(text))
    for candidate in (text + fill, fill + text):
        if _matches(pattern, candidate):
            return candidate
    return text


# ----------------------------------------------------------------------------------------------- generator


class InstanceGenerator:
    """Deterministic, schema-valid instances of one self-contained JSON Schema 2020-12 document.

    Every conjunct that applies at one place of the instance (the schema, its ``$ref`` targets, its ``allOf``
    members, the ``anyOf``/``oneOf``/``if`` branch chosen by the seed) is folded into one :class:`_Plan`
    (intersected types, tightest bounds, property maps), cached per set of conjuncts, and a value is built from
    it with a seeded ``random.Random``. Keywords that cannot be merged (``not``, ``oneOf``, ``if``) are checked
    with a compiled validator for that subschema, and every value is re-validated against the whole document
    (jsonschema-rs, formats asserted) before it is returned.

    Two kinds of failure are kept apart: a *definite* contradiction (``false``, ``minimum > maximum``, a
    required property that may have no value, ...) raises :class:`Unsatisfiable` at once; a candidate that
    merely missed (a pattern the sampler could not hit, a ``oneOf`` that matched twice) is retried with derived
    seeds, a bounded number of times, before :class:`Unsatisfiable` names the keyword that kept failing.

    >>> gen = InstanceGenerator({"type": "string", "format": "email"}, label="users 1.0.0 email")
    >>> "@" in gen.instance(seed=1)
    True

    Every value is re-validated by jsonschema-rs with formats asserted before it is returned. A schema no
    value can meet raises :class:`Unsatisfiable` (code ``mock.unsatisfiable``) with the pointer at fault.
    """

    def __init__(self, schema: dict[str, Any] | bool, *, label: str = "") -> None:
        if not isinstance(schema, dict | bool):
            raise InputError(
                f"{label or 'schema'}: a JSON Schema is an object or a boolean, not {type(schema).__name__}",
                code="mock.schema_invalid",
                location=Location(pointer=""),
            )
        self.schema = schema
        self.label = label
        self._validator = self._compile(schema, None)
        self._doc = _Document(schema)
        try:
            self._registry = jsonschema_rs.Registry([(_ROOT_URI, schema)])
        except ValueError as exc:
            raise InputError(
                f"{label or 'schema'}: the schema's references do not resolve: {exc}",
                code="mock.ref_unresolved",
                location=Location(pointer=""),
            ) from None
        self._subs: dict[str, Any] = {}
        self._plans: dict[tuple[tuple[int, ...], frozenset[int]], _Plan | _Impossible] = {}
        self._has_ref: dict[int, bool] = {}

    def instance(self, seed: int = 0) -> Any:
        """One instance; the same schema and seed always give the same value.

        >>> InstanceGenerator({"enum": ["a", "b"]}).instance(seed=5) in ("a", "b")
        True
        """
        last: _Miss | None = None
        for attempt in range(ATTEMPTS):
            rng = random.Random(seed * 64 + attempt)
            try:
                value = self._gen(((self.schema, ""),), frozenset(), rng, 0)
            except _Impossible as exc:
                raise self._unsatisfiable(exc.ptr, exc.reason, exc.hint) from None
            except _Miss as exc:
                last = exc
                continue
            error = next(iter(self._validator.iter_errors(value)), None)
            if error is None:
                return value
            last = _Miss("/" + "/".join(_escape(str(p)) for p in error.schema_path), error.message)
        assert last is not None  # ATTEMPTS > 0
        raise self._unsatisfiable(
            last.ptr,
            f"no valid instance after {ATTEMPTS} attempts; last failure: {last.reason}",
            "simplify this subschema or add `examples`",
        )

    def instances(self, count: int, seed: int = 0) -> list[Any]:
        """``count`` instances, varied and deterministic.

        >>> len(InstanceGenerator({"type": "integer"}).instances(3, seed=1))
        3
        """
        return [self.instance(seed * 7919 + i) for i in range(count)]

    # ---- plumbing

    def _compile(self, schema: Any, registry: Any) -> Any:
        try:
            return runtime_validator(
                schema, draft=jsonschema_rs.Draft202012Validator, validate_formats=True, offline=True, registry=registry
            )
        except (ValueError, jsonschema_rs.ReferencingError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise InputError(
                f"{self.label or 'schema'}: the schema does not compile: {first}",
                code="mock.schema_invalid",
                location=Location(pointer=""),
                hint="check the schema with `subhive contract lint`",
            ) from None

    def _sub(self, ptr: str) -> Any:
        validator = self._subs.get(ptr)
        if validator is None:
            ref = _ROOT_URI + "#" + quote(ptr, safe="/~!$&'()*+,;=:@")
            validator = self._compile({"$ref": ref}, self._registry)
            self._subs[ptr] = validator
        return validator

    def _unsatisfiable(self, ptr: str, reason: str, hint: str) -> Unsatisfiable:
        prefix = f"{self.label}: " if self.label else ""
        return Unsatisfiable(
            f"{prefix}{reason}", location=Location(pointer=ptr), hint=hint or "relax the constraints at this pointer"
        )

    def _plan(self, pairs: tuple[Pair, ...], resolved: frozenset[int]) -> _Plan:
        key = (tuple(id(s) for s, _ in pairs), resolved)
        plan = self._plans.get(key)
        if plan is None:
            try:
                plan = _Plan(pairs[0][1] if pairs else "")
                folder = _Folder(self._doc, resolved)
                for schema, ptr in pairs:
                    folder.fold(plan, schema, ptr)
                plan.finish()
            except _Impossible as exc:
                plan = exc
            self._plans[key] = plan
        if isinstance(plan, _Impossible):
            raise plan
        return plan

    def _gen(self, pairs: tuple[Pair, ...], resolved: frozenset[int], rng: random.Random, depth: int) -> Any:
        if depth > HARD_DEPTH:
            raise _Miss(pairs[0][1], f"the instance nests deeper than {HARD_DEPTH} levels")
        plan = self._plan(pairs, resolved)
        if plan.choices:
            return self._gen_choice(plan, pairs, resolved, rng, depth)
        failed = plan.ptr
        for _ in range(LOCAL_TRIES if plan.checks else 1):
            value = self._gen_value(plan, rng, depth)
            bad = next((p for p in plan.checks if not self._sub(p).is_valid(value)), None)
            if bad is None:
                return value
            failed = bad
        raise _Miss(failed, "the value kept failing `not`, `oneOf` or `if` here")

    def _gen_choice(
        self, plan: _Plan, pairs: tuple[Pair, ...], resolved: frozenset[int], rng: random.Random, depth: int
    ) -> Any:
        choice = plan.choices[0]
        order = list(range(len(choice.branches)))
        rng.shuffle(order)
        if depth >= SOFT_DEPTH:  # prefer the way out of a recursion
            order.sort(key=lambda i: any(self._refs(s) for s, _ in choice.branches[i]))
        impossible: _Impossible | None = None
        miss: _Miss | None = None
        for i in order:
            try:
                return self._gen(pairs + choice.branches[i], resolved | {choice.key}, rng, depth)
            except _Impossible as exc:
                impossible = impossible or exc
            except _Miss as exc:
                miss = exc
        if miss is not None:
            raise miss
        if choice.kind == "if" or impossible is None:
            raise impossible or _Impossible(choice.ptr, "no branch")
        raise _Impossible(
            choice.ptr,
            f"no branch of `{choice.kind}` can be met (first: {impossible.reason})",
            "make at least one branch satisfiable together with its siblings",
        )

    def _refs(self, schema: Schema) -> bool:
        known = self._has_ref.get(id(schema))
        if known is None:
            known = self._has_ref[id(schema)] = _has_ref(schema)
        return known

    def _gen_value(self, plan: _Plan, rng: random.Random, depth: int) -> Any:
        if plan.enum_values is not None:
            return _copy(rng.choice(plan.enum_values))
        if plan.examples and rng.random() < 0.2:
            example = rng.choice(plan.examples)
            if all(self._sub(p).is_valid(example) for p in plan.ptrs):
                return _copy(example)
        order = list(plan.type_order)
        hinted = [t for t in order if plan._hinted(t)] or order
        rng.shuffle(hinted)
        rest = [t for t in order if t not in hinted]
        rng.shuffle(rest)
        order = hinted + rest
        if depth >= SOFT_DEPTH:
            order.sort(key=lambda t: t not in _SCALARS)
        first: _Impossible | None = None
        for kind in order:
            try:
                return self._gen_type(kind, plan, rng, depth)
            except _Impossible as exc:
                first = first or exc
        assert first is not None  # finish() leaves at least one type
        raise first

    def _gen_type(self, kind: str, plan: _Plan, rng: random.Random, depth: int) -> Any:
        if kind == "null":
            return None
        if kind == "boolean":
            return rng.random() < 0.5
        if kind in ("integer", "number"):
            return _gen_number(plan, rng, kind == "integer")
        if kind == "string":
            return _gen_string(plan, rng)
        if kind == "array":
            return self._gen_array(plan, rng, depth)
        return self._gen_object(plan, rng, depth)

    # ---- arrays

    def _position(self, plan: _Plan, index: int) -> tuple[Pair, ...]:
        found: list[Pair] = list(plan.prefix[index]) if index < len(plan.prefix) else []
        found.extend(pair for pair, start in plan.items if index >= start)
        return tuple(found)

    def _gen_array(self, plan: _Plan, rng: random.Random, depth: int) -> list[Any]:
        top = plan.max_items
        if top is not None and plan.min_items > top:
            raise _Impossible(
                plan.where("max_items", "min_items"),
                f"minItems {plan.min_items} exceeds maxItems {top}",
                "lower minItems or raise maxItems",
            )
        need = (1 if plan.min_contains is None else plan.min_contains) if plan.contains else 0
        if (plan.max_contains is not None and need > plan.max_contains) or (top is not None and need > top):
            raise _Impossible(
                plan.where("max_contains", "max_items", "min_contains"),
                f"`contains` needs {need} items but maxContains/maxItems allow fewer",
                "lower minContains",
            )
        low = max(plan.min_items, need)
        count = low if depth >= SOFT_DEPTH else rng.randint(low, low + 3 if top is None else min(top, low + 3))
        # `contains` hits go after prefixItems where the length allows: a prefix may exclude the hit
        free = range(len(plan.prefix), count) if count - len(plan.prefix) >= need else range(count)
        hits = set(rng.sample(free, need)) if need else set()
        out: list[Any] = []
        seen: set[Any] = set()
        for index in range(count):
            pairs = self._position(plan, index) + (tuple(plan.contains) if index in hits else ())
            try:
                item = self._gen_item(plan, pairs, rng, depth, seen, counted=index not in hits)
            except _Impossible as exc:
                if index in hits:  # only this pairing of position and `contains` is impossible
                    raise _Miss(exc.ptr, f"array item {index} cannot meet `contains`: {exc.reason}") from None
                if index < low:
                    raise _Impossible(
                        exc.ptr, f"array item {index} can have no value: {exc.reason}", exc.hint
                    ) from None
                break
            out.append(item)
        return out

    def _gen_item(
        self, plan: _Plan, pairs: tuple[Pair, ...], rng: random.Random, depth: int, seen: set[Any], *, counted: bool
    ) -> Any:
        # Items outside the chosen `contains` hits must not match it when maxContains caps the count.
        avoid = counted and plan.max_contains is not None
        for _ in range(LOCAL_TRIES):
            item = self._gen(pairs, frozenset(), rng, depth + 1)
            if avoid and any(self._sub(p).is_valid(item) for _, p in plan.contains):
                continue
            if plan.unique:
                if _key(item) in seen:
                    continue
                seen.add(_key(item))
            return item
        raise _Miss(plan.ptr, "could not find distinct array items (uniqueItems/maxContains)")

    # ---- objects

    def _key_pairs(self, plan: _Plan, name: str) -> tuple[Pair, ...]:
        pairs = plan.key_pairs.get(name)
        if pairs is None:
            found = list(plan.props.get(name, ()))
            found.extend(pair for pattern, pair in plan.pattern_props if _matches(pattern, name))
            found.extend(
                pair
                for pair, names, patterns in plan.additional
                if name not in names and not any(_matches(p, name) for p in patterns)
            )
            pairs = plan.key_pairs[name] = tuple(found)
        return pairs

    def _gen_object(self, plan: _Plan, rng: random.Random, depth: int) -> dict[str, Any]:
        top = plan.max_props
        if top is not None and max(plan.min_props, len(plan.required)) > top:
            raise _Impossible(
                plan.where("max_props"),
                f"maxProperties {top} is below minProperties or the required count",
                "raise maxProperties",
            )
        for name, ptr in plan.required.items():
            bad = next((p for _, p in plan.names if not self._sub(p).is_valid(name)), None)
            if bad is not None:
                raise _Impossible(
                    bad,
                    f"required property {name!r} is not allowed by propertyNames",
                    f"allow the name {name!r} or stop requiring it ({ptr})",
                )
        keys = self._choose_keys(plan, rng, depth)
        out: dict[str, Any] = {}
        for name in keys:
            try:
                out[name] = self._gen(self._key_pairs(plan, name), frozenset(), rng, depth + 1)
            except _Impossible as exc:
                if name in plan.required:
                    raise _Impossible(
                        exc.ptr,
                        f"required property {name!r} can have no value: {exc.reason}",
                        exc.hint or f"stop requiring {name!r} or allow a value",
                    ) from None
                if name in self._closure(plan, plan.required):
                    raise _Miss(exc.ptr, f"property {name!r} (dependentRequired) can have no value") from None
        if len(out) < plan.min_props:
            raise _Miss(plan.ptr, f"could not reach minProperties {plan.min_props}")
        return out

    def _closure(self, plan: _Plan, keys: Iterable[str]) -> list[str]:
        out = list(dict.fromkeys(keys))
        for name in out:  # grows while iterating: dependentRequired chains
            out.extend(n for n in plan.dep_required.get(name, ()) if n not in out)
        return out

    def _choose_keys(self, plan: _Plan, rng: random.Random, depth: int) -> list[str]:
        optional = [n for n in plan.props if n not in plan.required]
        chosen = (
            [] if depth >= SOFT_DEPTH else [n for n in optional if n not in plan.dep_schemas and rng.random() < 0.5]
        )
        keys = self._closure(plan, [*plan.required, *chosen])
        spare = iter([n for n in optional if n not in keys] + list(self._extra_names(plan, rng)))
        while len(keys) < plan.min_props:
            name = next(spare, None)
            if name is None:
                raise _Miss(plan.ptr, f"could not find {plan.min_props} property names")
            keys = self._closure(plan, [*keys, name])
        top = plan.max_props
        while top is not None and len(keys) > top and chosen:
            chosen.pop()
            keys = self._closure(plan, [*plan.required, *chosen])
        return keys

    def _extra_names(self, plan: _Plan, rng: random.Random) -> Iterator[str]:
        """Names beyond ``properties`` for minProperties: from patternProperties, propertyNames, or made up."""
        seen: set[str] = set()
        for i in range(16):
            name = self._extra_name(plan, rng, i)
            if name is None or name in seen or name in plan.props:
                continue
            seen.add(name)
            if not all(self._sub(p).is_valid(name) for _, p in plan.names):
                continue
            try:
                self._plan(self._key_pairs(plan, name), frozenset())
            except _Impossible:
                continue  # e.g. additionalProperties: false
            yield name

    def _extra_name(self, plan: _Plan, rng: random.Random, i: int) -> str | None:
        if plan.pattern_props and i % 4 != 3:
            holder = _Plan(plan.ptr)
            holder.patterns = [(plan.pattern_props[i % len(plan.pattern_props)][0], plan.ptr)]
            try:
                return _string_from_patterns(holder, rng)
            except _Miss:
                return None
        if plan.names:
            try:
                name = self._gen(tuple(plan.names), frozenset(), rng, SOFT_DEPTH)
            except (_Miss, _Impossible):
                return None
            return name if isinstance(name, str) else None
        return f"extra_{_word(rng)}"


# ------------------------------------------------------------------------------------------ numbers/strings


def _gen_number(plan: _Plan, rng: random.Random, integer: bool) -> int | float:
    lo, hi = plan.lo, plan.hi
    if lo is not None and hi is not None and (lo > hi or (lo == hi and (plan.lo_excl or plan.hi_excl))):
        raise _Impossible(
            plan.where("hi", "lo"),
            f"the lower bound {lo} is not below the upper bound {hi}",
            "make minimum/exclusiveMinimum smaller than maximum/exclusiveMaximum",
        )
    step = plan.multiple
    if integer:
        step = Fraction(step.numerator) if step is not None else Fraction(1)
    if step is None:
        if rng.random() < 0.5 and _has_int(plan):
            step = Fraction(1)
        else:
            return _plain_float(plan, rng)
    first, last = _multiples(plan, step)
    if first is not None and last is not None and first > last:
        kind = "integer" if integer else "multiple of the step"
        raise _Impossible(
            plan.where("multiple", "hi", "lo"),
            f"no {kind} lies between the bounds",
            "widen the bounds or change multipleOf",
        )
    if first is None:
        first = (last if last is not None else 0) - 40
    if last is None:
        last = first + 40
    value = rng.randint(first, min(last, first + 1000)) * step
    return int(value) if value.denominator == 1 else float(value)


def _has_int(plan: _Plan) -> bool:
    first, last = _multiples(plan, Fraction(1))
    return first is None or last is None or first <= last


def _multiples(plan: _Plan, step: Fraction) -> tuple[int | None, int | None]:
    """The range of k such that k*step lies within the bounds (None: unbounded)."""
    first = last = None
    if plan.lo is not None:
        q = plan.lo / step
        first = math.floor(q) + 1 if plan.lo_excl and q.denominator == 1 else math.ceil(q)
    if plan.hi is not None:
        q = plan.hi / step
        last = math.ceil(q) - 1 if plan.hi_excl and q.denominator == 1 else math.floor(q)
    return first, last


def _plain_float(plan: _Plan, rng: random.Random) -> float:
    lo = plan.lo if plan.lo is not None else (plan.hi - 100 if plan.hi is not None else Fraction(-100))
    hi = plan.hi if plan.hi is not None else lo + 100
    for _ in range(8):
        value = float(lo + (hi - lo) * Fraction(rng.randint(1, 999), 1000))
        exact = _number(value)
        above = exact > lo or (not plan.lo_excl and exact == lo)
        if above and (exact < hi or (not plan.hi_excl and exact == hi)):
            return value
    return float((lo + hi) / 2)


def _gen_string(plan: _Plan, rng: random.Random) -> str:
    low, top = plan.min_len, plan.max_len
    if top is not None and low > top:
        raise _Impossible(
            plan.where("max_len", "min_len"),
            f"minLength {low} exceeds maxLength {top}",
            "lower minLength or raise maxLength",
        )
    if plan.formats:
        name, ptr = plan.formats[0]
        for _ in range(16):
            text = _FORMATS[name](rng)
            if low <= len(text) <= (top if top is not None else len(text)) and all(
                _matches(p, text) for p, _ in plan.patterns
            ):
                return text
        raise _Miss(ptr, f"could not build a {name!r} string within the length bounds and patterns")
    if plan.patterns:
        return _string_from_patterns(plan, rng)
    return _pick_chars(rng, rng.randint(low, low + 12 if top is None else min(top, low + 12)))
