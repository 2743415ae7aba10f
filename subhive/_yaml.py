"""YAML read as YAML 1.2 (core schema), on PyYAML's C loader, and written so that 1.1 and 1.2 readers agree.

PyYAML resolves plain scalars by YAML 1.1: ``NO``, ``yes``, ``on`` become booleans, ``2024-01-01`` a date, ``010``
the octal 8, ``1:20`` the sexagesimal 80. JSON Schema tools (SchemaStore, Ajv, most editors) read YAML 1.2, whose
core schema knows only ``true``/``false``, ``null``/``~``, decimal, ``0o`` and ``0x`` integers and floats; every
other plain scalar is a string (decision 0142). A scalar the two versions read differently is remembered
(:attr:`Core12Loader.yaml11`), so that a schema's reader can warn about it.
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Iterator
from typing import Any

import yaml

__all__ = ["YAML11_TAG", "Core12Loader", "Refused", "dump_yaml", "mark_pointers", "yaml11_reading"]

_INT, _FLOAT, _BOOL, _NULL = (f"tag:yaml.org,2002:{t}" for t in ("int", "float", "bool", "null"))
_MERGE = "tag:yaml.org,2002:merge"
#: A plain scalar YAML 1.2 reads as a string and YAML 1.1 as something else (``yes``, a date, ``0b1``, ``1_000``).
YAML11_TAG = "tag:subhive.dev,2026:yaml11-string"
#: A decimal integer with a leading zero: 1.2 reads ``0755`` as 755, 1.1 as the octal 493 (``089``: a string).
_LEADING_ZERO_TAG = "tag:subhive.dev,2026:leading-zero-int"

# The core schema's regular expressions, as YAML 1.2.2 (10.3.2, "Tag Resolution") writes them.
_CORE = (
    (_NULL, r"null|Null|NULL|~|"),
    (_BOOL, r"true|True|TRUE|false|False|FALSE"),
    (_INT, r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+"),
    (
        _FLOAT,
        r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?|[-+]?(\.inf|\.Inf|\.INF)|\.nan|\.NaN|\.NAN",
    ),
)
_LEADING_ZERO = r"[-+]?0[0-9]+"
_NOT_FINITE = re.compile(r"[-+]?\.(inf|Inf|INF|nan|NaN|NAN)\Z")


def _resolvers() -> dict[Any, list[tuple[str, re.Pattern[str]]]]:
    """The implicit resolvers, by first character as PyYAML looks them up: a leading-zero integer first (to be
    noted), then the core schema, then PyYAML's own 1.1 patterns, reached only by what 1.2 reads as a string."""
    table: dict[Any, list[tuple[str, re.Pattern[str]]]] = {}

    def add(tag: str, pattern: str, firsts: str | list[str]) -> None:
        regexp = re.compile(rf"(?:{pattern})\Z")
        for first in firsts:
            table.setdefault(first, []).append((tag, regexp))

    add(_LEADING_ZERO_TAG, _LEADING_ZERO, "-+0")
    add(_NULL, _CORE[0][1], ["n", "N", "~", ""])
    add(_BOOL, _CORE[1][1], "tTfF")
    add(_INT, _CORE[2][1], "-+0123456789")
    add(_FLOAT, _CORE[3][1], "-+.0123456789")
    # A merge key (1.1's "<<") has no meaning in 1.2, where it is a plain key "<<": refused as a key, where a
    # reader expecting the merge would silently get something else (see _source._construct_mapping).
    add(_MERGE, "<<", "<")
    for first, entries in yaml.resolver.Resolver.yaml_implicit_resolvers.items():
        for tag, regexp in entries:
            if tag in (_BOOL, _INT, _FLOAT, "tag:yaml.org,2002:timestamp"):
                table.setdefault(first, []).append((YAML11_TAG, regexp))
    return table


class Refused(yaml.constructor.ConstructorError):
    """YAML that parses but has no JSON meaning; ``code`` and ``hint`` say which and what to do."""

    code = "input.yaml"
    hint = ""


class _NotFinite(Refused):
    code = "input.value"
    hint = "use a finite number"


class _NoJsonMeaning(Refused):
    code = "input.value"


# libyaml's parser when PyYAML was built with it (several times faster), the pure-Python one otherwise. Tags are
# resolved in Python by either, so the resolvers below apply to both.
_FastSafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class Core12Loader(_FastSafeLoader):  # type: ignore[valid-type,misc]
    """A safe loader reading the YAML 1.2 core schema, refusing what has no JSON meaning (dates, binary, sets,
    ``.inf``), and remembering the plain scalars a YAML 1.1 reader would read otherwise in :attr:`yaml11`."""

    yaml_implicit_resolvers = _resolvers()

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        #: ``(line, column, text)`` of each plain scalar YAML 1.1 reads otherwise, 0-based as PyYAML's marks.
        self.yaml11: list[tuple[int, int, str]] = []


def _scalar(loader: Core12Loader, node: yaml.Node) -> str:
    return str(loader.construct_scalar(node))


def _refuse(node: yaml.Node, what: str) -> Refused:
    refused = _NoJsonMeaning(None, None, f"{node.value!r} is not {what} (YAML 1.2 core schema)", node.start_mark)
    refused.hint = "drop the tag, or write it as YAML 1.2 reads one: true/false, 1000, 0o17, 0x1F, 1.5e3"
    return refused


def _construct_int(loader: Core12Loader, node: yaml.Node) -> int:
    text = _scalar(loader, node)
    if re.fullmatch(r"[-+]?[0-9]+", text):
        return int(text, 10)  # "010" is ten: 1.2 has no implicit octal
    if re.fullmatch(r"0o[0-7]+|0x[0-9a-fA-F]+", text):
        return int(text[2:], 8 if text[1] == "o" else 16)
    raise _refuse(node, "an integer")  # an explicit !!int on other text (1_000, 0b1, 1:20)


def _construct_leading_zero(loader: Core12Loader, node: yaml.Node) -> int:
    value = int(_scalar(loader, node), 10)
    old = yaml.load(node.value, Loader=_FastSafeLoader)  # rare: 0755, 089, 007
    if type(old) is not int or old != value:
        loader.yaml11.append((node.start_mark.line, node.start_mark.column, node.value))
    return value


def _construct_float(loader: Core12Loader, node: yaml.Node) -> float:
    text = _scalar(loader, node)
    if not re.fullmatch(_CORE[3][1], text):
        raise _refuse(node, "a float")
    value = math.nan if _NOT_FINITE.match(text) else float(text)
    if not math.isfinite(value):  # .nan, .inf, 1e400: no JSON value, so no schema or payload can hold one
        raise _NotFinite(None, None, f"{node.value} is not a finite number, which JSON needs", node.start_mark)
    return value


def _construct_bool(loader: Core12Loader, node: yaml.Node) -> bool:
    text = _scalar(loader, node)
    if text.lower() not in ("true", "false") or text not in (text.lower(), text.upper(), text.capitalize()):
        raise _refuse(node, "a boolean")
    return text.lower() == "true"


def _construct_yaml11(loader: Core12Loader, node: yaml.Node) -> str:
    loader.yaml11.append((node.start_mark.line, node.start_mark.column, node.value))
    return _scalar(loader, node)


def _construct_merge_value(loader: Core12Loader, node: yaml.Node) -> str:
    return _scalar(loader, node)  # "<<" as a value is the string; as a key it is refused by the mapping


for _tag, _constructor in (
    (_INT, _construct_int),
    (_LEADING_ZERO_TAG, _construct_leading_zero),
    (_FLOAT, _construct_float),
    (_BOOL, _construct_bool),
    (YAML11_TAG, _construct_yaml11),
    (_MERGE, _construct_merge_value),
):
    Core12Loader.add_constructor(_tag, _constructor)


def _refusing(what: str, instead: str) -> Any:
    def construct(loader: Core12Loader, node: yaml.Node) -> Any:
        refused = _NoJsonMeaning(None, None, f"an explicit !!{what} has no JSON meaning", node.start_mark)
        refused.hint = instead
        raise refused

    return construct


# Explicit tags whose values JSON cannot hold (a date object, bytes, a set, pairs) are refused where they are
# written, instead of failing later in a validator or json.dumps with no line to show.
for _name, _instead in (
    ("timestamp", "drop the tag, and the date is the string it reads"),
    ("binary", "drop the tag and keep the base64 text as a string (JSON Schema: contentEncoding: base64)"),
    ("set", "write a list instead"),
    ("omap", "write a mapping or a list of mappings instead"),
    ("pairs", "write a list of mappings instead"),
):
    Core12Loader.add_constructor(f"tag:yaml.org,2002:{_name}", _refusing(_name, _instead))


def yaml11_reading(text: str) -> str:
    """How a YAML 1.1 reader (PyYAML's SafeLoader) reads the plain scalar ``text``, in words."""
    try:
        value = yaml.load(text, Loader=_FastSafeLoader)
    except yaml.YAMLError:
        return "something else"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime.datetime):
        return "a timestamp"
    if isinstance(value, datetime.date):
        return "a date"
    if isinstance(value, str):
        return f"the string {value!r}"
    return f"the number {value!r}"


def mark_pointers(text: str, marks: list[tuple[int, int, str]]) -> Iterator[tuple[int, str, str]]:
    """``(1-based line, JSON pointer, scalar text)`` for each mark of a scalar, a member's key or a value."""
    from ._source import join_pointer

    wanted = {(line, column): scalar for line, column, scalar in marks}
    try:
        root = yaml.compose(text, Loader=_FastSafeLoader)
    except (yaml.YAMLError, RecursionError):  # read once already: then only lines
        root = None
    found: dict[tuple[int, int], str] = {}
    stack: list[tuple[str, Any]] = [("", root)] if root is not None else []
    seen: set[int] = set()  # an alias is the node it names: walked once, so "billion laughs" stay small here
    while stack and len(found) < len(wanted):
        pointer, node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        at = (node.start_mark.line, node.start_mark.column)
        if isinstance(node, yaml.ScalarNode) and at in wanted:
            found.setdefault(at, pointer)
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                child = join_pointer(pointer, str(key.value))
                if (key.start_mark.line, key.start_mark.column) in wanted:
                    found.setdefault((key.start_mark.line, key.start_mark.column), child)
                stack.append((child, value))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((join_pointer(pointer, i), v) for i, v in enumerate(node.value))
    for line, column, scalar in sorted(marks):
        yield line + 1, found.get((line, column), ""), scalar


class _Dumper(yaml.SafeDumper):
    """SafeDumper quoting every string that YAML 1.1 *or* 1.2 would read as something else (``yes``, ``1e3``,
    ``0o17``), so what subhive writes reads back the same by either."""

    yaml_implicit_resolvers = {
        first: [*yaml.SafeDumper.yaml_implicit_resolvers.get(first, []), *_resolvers().get(first, [])]
        for first in {*yaml.SafeDumper.yaml_implicit_resolvers, *_resolvers()}
    }


def dump_yaml(data: Any) -> str:
    """``data`` (JSON values) as block YAML, keys in their order, strings quoted where any reader could misread."""
    text = str(yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120))
    if "\x85" in text:  # PyYAML writes NEL raw in a quoted scalar, where readers fold it: escape everything then
        text = str(yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=False, width=120))
    return text
