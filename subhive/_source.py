"""Reading JSON and YAML files (YAML 1.2: subhive._yaml) with source positions, so every error names a file and line.
Strict where silence would lose something (duplicate keys, NaN, non-UTF-8, oversized files: docs/lint.md; in a
schema, a repeated key that cannot change what it accepts is only a warning: subhive._duplicates); line lookups
are computed only when an error needs one, so the happy path costs a plain ``json.loads``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml

from ._yaml import Core12Loader, Refused, mark_pointers, yaml11_reading
from .errors import InputError, Location, Problem

__all__ = [
    "MAX_DOCUMENT_BYTES",
    "SourceDocument",
    "escape_pointer_token",
    "join_pointer",
    "load_document",
    "nearest_line",
    "parse_document",
    "read_source",
]

#: Larger schema or manifest files are refused: real contracts are kilobytes, and a runaway file would
#: otherwise stall lint and every validator compiled from it.
MAX_DOCUMENT_BYTES = 8 * 1024 * 1024

JSON_SUFFIXES = frozenset({".json"})
YAML_SUFFIXES = frozenset({".yaml", ".yml"})


def escape_pointer_token(token: str | int) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


def join_pointer(base: str, *tokens: str | int) -> str:
    """``join_pointer("/properties", "a/b")`` -> ``"/properties/a~1b"`` (RFC 6901 escaping)."""
    return base + "".join("/" + escape_pointer_token(t) for t in tokens)


class SourceDocument:
    """A parsed JSON or YAML document that remembers where it came from."""

    def __init__(self, path: Path, text: str, data: Any, *, is_yaml: bool, notes: tuple[Problem, ...] = ()) -> None:
        self.path = path
        self.text = text
        self.data = data
        self.is_yaml = is_yaml
        #: Warnings found while reading (a harmless duplicate key of a schema: decision 0136).
        self.notes = notes

    def __repr__(self) -> str:
        return f"SourceDocument({str(self.path)!r})"

    def line_of(self, pointer: str) -> int | None:
        """The 1-based line where the value at ``pointer`` starts, or of its nearest known ancestor."""
        return nearest_line(self._pointer_lines, pointer)

    def location(self, pointer: str) -> Location:
        return Location(file=str(self.path), line=self.line_of(pointer), pointer=pointer)

    @cached_property
    def _pointer_lines(self) -> dict[str, int]:
        # JSON gets its own scanner (a tenth of PyYAML's time on a 1.5 MB schema, the same lines); YAML, and JSON
        # the scanner cannot follow, PyYAML's node marks; json_source_map covers the rare JSON that PyYAML rejects
        # (it does not escape "/" in keys, hence last).
        lines = None if self.is_yaml else _json_pointer_lines(self.text)
        if lines is not None:
            return lines
        lines = _yaml_pointer_lines(self.text)
        if lines or self.is_yaml:
            return lines
        from json_source_map import calculate

        try:
            return {ptr: entry.value_start.line + 1 for ptr, entry in calculate(self.text).items()}
        except Exception:  # the map is a nicety: a document json accepted but the mapper did not
            return {}


def load_document(path: str | Path) -> SourceDocument:
    """Read and parse a ``.json``, ``.yaml`` or ``.yml`` file; raise :class:`InputError` naming what is wrong."""
    path = Path(path)
    return parse_document(
        read_source(path, split_hint="split the schema into smaller files joined by relative $ref"), path
    )


def read_source(path: Path, *, split_hint: str) -> bytes:
    """The bytes of a source file, refusing missing, special, unreadable and oversized files with a clear error."""
    where = Location(file=str(path))
    if not path.exists():
        raise InputError(
            "file not found",
            code="input.not_found",
            location=where,
            hint="check the path; it is resolved from the current directory",
        )
    if not path.is_file():
        raise InputError("not a regular file", code="input.not_a_file", location=where)
    size = path.stat().st_size
    if size > MAX_DOCUMENT_BYTES:
        raise InputError(
            f"file is {size / 1e6:.1f} MB, over the {MAX_DOCUMENT_BYTES // (1024 * 1024)} MiB limit",
            code="input.too_large",
            location=where,
            hint=split_hint,
        )
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror}", code="input.unreadable", location=where) from exc


def nearest_line(lines: dict[str, int], pointer: str) -> int | None:
    """The line recorded for ``pointer``, or for its nearest ancestor that has one."""
    while True:
        if pointer in lines:
            return lines[pointer]
        if not pointer:
            return None
        pointer = pointer.rsplit("/", 1)[0]


def parse_document(raw: bytes, path: Path, *, schema: bool = False) -> SourceDocument:
    """Parse ``raw`` as the JSON or YAML its suffix says. A repeated key is refused, unless ``schema`` (the document
    is a JSON Schema) and the repeat cannot change what it accepts: then the last value is kept, with a note."""
    where = Location(file=str(path))
    if b"\x00" in raw:
        raise InputError("file is binary, not JSON or YAML text", code="input.binary", location=where)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError(
            f"not valid UTF-8 (byte {exc.start})",
            code="input.encoding",
            location=Location(file=str(path), line=line),
            hint="save the file as UTF-8",
        ) from exc
    suffix = path.suffix.lower()
    is_yaml = suffix in YAML_SUFFIXES
    if not is_yaml and suffix not in JSON_SUFFIXES and suffix:
        raise InputError(
            f"unsupported file type {suffix!r}", code="input.file_type", location=where, hint="use .json, .yaml or .yml"
        )
    try:
        data, marks = _parse_yaml(text, path) if is_yaml else (_parse_json(text, path), [])
        notes: tuple[Problem, ...] = ()
    except _DuplicateKey:  # rare: read again keeping every pair, and judge each repeat (decision 0136)
        from ._duplicates import keep_pairs, settle

        tree, marks = _parse_yaml(text, path, _PairsLoader) if is_yaml else (_parse_json(text, path, keep_pairs), [])
        data, notes = settle(tree, text, path, schema=schema)
    if schema and marks:
        notes += _yaml11_notes(text, path, marks)
    return SourceDocument(path, text, data, is_yaml=is_yaml, notes=notes)


def _yaml11_notes(text: str, path: Path, marks: list[tuple[int, int, str]]) -> tuple[Problem, ...]:
    """A ``schema.yaml11`` warning for each plain scalar a YAML 1.1 reader (PyYAML, older tools) reads otherwise
    than YAML 1.2 does: the schema means one thing here and another there (decision 0142)."""
    notes = []
    for line, pointer, scalar in mark_pointers(text, marks):
        value = yaml.load(scalar, Loader=Core12Loader)
        now = f"the string {value!r}" if isinstance(value, str) else f"the number {value!r}"
        notes.append(
            Problem(
                "schema.yaml11",
                f"{scalar} is read as {now} (YAML 1.2), but as {yaml11_reading(scalar)} by YAML 1.1 readers",
                Location(file=str(path), line=line, pointer=pointer),
                f"quote it to be clear: {json.dumps(scalar)}",
            )
        )
    return tuple(notes)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400: Python would read infinity, which no JSON value is
        raise ValueError(f"number {text} is too large for a float")
    return value


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _DuplicateKey
    return out


class _DuplicateKey(Exception):
    """A key repeats: :func:`parse_document` reads the document again to say where, and whether it matters."""


def _parse_json(text: str, path: Path, pairs_hook: Callable[[list[tuple[str, Any]]], Any] = _no_duplicate_keys) -> Any:
    try:
        return json.loads(
            text, object_pairs_hook=pairs_hook, parse_constant=_reject_constant, parse_float=_finite_float
        )
    except json.JSONDecodeError as exc:
        raise InputError(
            f"invalid JSON: {exc.msg} (column {exc.colno})",
            code="input.json",
            location=Location(file=str(path), line=exc.lineno),
        ) from exc
    except (ValueError, RecursionError) as exc:
        msg = "nesting is too deep" if isinstance(exc, RecursionError) else str(exc)
        raise InputError(f"invalid JSON: {msg}", code="input.json", location=Location(file=str(path))) from exc


# libyaml's parser when PyYAML was built with it (several times faster), the pure-Python one otherwise.
_FastSafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MERGE_TAG = "tag:yaml.org,2002:merge"


class _StrictLoader(Core12Loader):
    """The YAML 1.2 loader (subhive._yaml), refusing duplicate keys instead of keeping the last one."""


_Refused = Refused


class _NonStringKey(_Refused):
    code = "input.key"
    hint = "write keys as strings: quote them ('true': ..., '1': ...)"


class _MergeKey(_Refused):
    code = "input.yaml"
    hint = "write the members out, or share a schema with $ref; quote the key ('<<') if it is a name"


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: set[Any] = set()
    keys: list[str] = []
    for key_node, _ in node.value:
        if key_node.tag == _MERGE_TAG:  # YAML 1.1 merges here; 1.2 reads a key "<<": readers would disagree
            raise _MergeKey(None, None, "merge keys ('<<') are YAML 1.1, not YAML 1.2", key_node.start_mark)
        key = loader.construct_object(key_node, deep=deep)
        if not isinstance(key, str):
            # JSON has string keys only; YAML also reads `true`, `1` or `null` as non-strings, which would
            # silently become another name (True, 1) or fail deep inside a validator.
            problem = (
                f"key {key_node.value!r} is not a string (YAML reads it as {type(key).__name__}); quote it"
                if isinstance(key_node, yaml.ScalarNode)
                else f"a key is a {type(key).__name__}; keys must be strings, as in JSON"
            )
            raise _NonStringKey(None, None, problem, key_node.start_mark)
        if key in seen and not isinstance(loader, _PairsLoader):
            raise _DuplicateKey
        seen.add(key)
        keys.append(key)
    if len(seen) != len(keys):  # the _PairsLoader: keep every pair, for _duplicates.settle to judge
        from ._duplicates import Pairs

        return Pairs((key, loader.construct_object(v, deep=deep)) for key, (_, v) in zip(keys, node.value, strict=True))
    return loader.construct_mapping(node, deep=deep)


class _PairsLoader(_StrictLoader):
    """The strict loader, keeping a mapping whose keys repeat as its pairs (for ``_duplicates.settle``)."""


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _parse_yaml(
    text: str, path: Path, loader: type[_StrictLoader] = _StrictLoader
) -> tuple[Any, list[tuple[int, int, str]]]:
    """The document's data, and where a plain scalar is one YAML 1.1 would read otherwise (``Core12Loader``)."""
    try:
        reader = loader(text)
        try:
            return reader.get_single_data(), reader.yaml11
        finally:
            reader.dispose()
    except _Refused as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else None
        raise InputError(
            f"invalid YAML: {exc.problem}", code=exc.code, location=Location(file=str(path), line=line), hint=exc.hint
        ) from exc
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        raise InputError(
            f"invalid YAML: {exc.problem or exc.context}",
            code="input.yaml",
            location=Location(file=str(path), line=line),
        ) from exc
    except (yaml.YAMLError, RecursionError) as exc:
        raise InputError(f"invalid YAML: {exc}", code="input.yaml", location=Location(file=str(path))) from exc
    except ValueError as exc:  # a scalar YAML cannot build, like an integer of more digits than Python converts
        raise InputError(
            f"a value in this YAML cannot be read: {exc}",
            code="input.value",
            location=Location(file=str(path)),
            hint="JSON Schema and contract files need numbers a program can hold; shorten it",
        ) from exc


# A JSON token: a string (escapes kept), a structural character, or a bare scalar (number, true, false, null).
_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\],:]|[^\s{}\[\],:"]+')
# Line breaks as PyYAML counts them (anywhere, inside strings too), so both readers agree on every line.
_LINE_BREAK = re.compile("\r\n|[\n\r\x85\u2028\u2029]")


def _json_pointer_lines(text: str) -> dict[str, int] | None:  # noqa: C901, PLR0912, PLR0915 - a token loop, hot
    """The 1-based line of every pointer of a JSON document, as :func:`_yaml_pointer_lines` gives it: a member's
    is its key's line (the last key, when one is repeated), an item's where the item starts. None when the text
    is not JSON this scanner follows (the caller falls back to PyYAML)."""
    starts = [0] + [m.end() for m in _LINE_BREAK.finditer(text)]
    lines: dict[str, int] = {}
    # One frame a container: [pointer, is_object, next index or pending key's pointer, expecting a key]
    stack: list[list[Any]] = []
    index = 0  # into starts: lines only grow along the text, so a forward walk finds each one
    top_done = False
    last = len(starts) - 1
    for match in _JSON_TOKEN.finditer(text):
        pos = match.start()
        while index < last and starts[index + 1] <= pos:
            index += 1
        line = index + 1
        token = match.group()
        first = token[0]
        frame = stack[-1] if stack else None
        if frame is not None and frame[1] and frame[3]:  # an object member's key, or its end
            if first == '"':
                key = token[1:-1] if "\\" not in token else json.loads(token)
                if "~" in key or "/" in key:  # join_pointer, inlined: a large schema has tens of thousands of keys
                    key = key.replace("~", "~0").replace("/", "~1")
                frame[2] = frame[0] + "/" + key
                lines[frame[2]] = line
                frame[3] = False
                continue
            if first == "}":  # {} or a trailing comma (which the parse already refused)
                stack.pop()
                continue
            return None
        if first == ":":
            continue
        if first == ",":
            if frame is None:
                return None
            if frame[1]:
                frame[3] = True
            else:
                frame[2] += 1
            continue
        if first in "}]":
            if frame is None or frame[1] != (first == "}"):
                return None
            stack.pop()
            continue
        # A value starts: the root, an object member's (its key's line is kept), or an array item.
        if frame is None:
            if top_done:
                return None
            top_done = True
            here = ""
        elif frame[1]:
            here = frame[2]
        else:
            here = f"{frame[0]}/{frame[2]}"
        lines.setdefault(here, line)
        if first == "{":
            stack.append([here, True, "", True])
        elif first == "[":
            stack.append([here, False, 0, False])
    return lines if top_done and not stack else None


def _yaml_pointer_lines(text: str) -> dict[str, int]:
    try:
        root = yaml.compose(text, Loader=_FastSafeLoader)
    except (yaml.YAMLError, RecursionError):  # line numbers are a nicety; the parse itself already succeeded
        return {}
    lines: dict[str, int] = {}
    stack: list[tuple[str, yaml.Node]] = [("", root)] if root is not None else []
    # An alias is walked again under each path that names it, until the walk outgrows the text ("billion
    # laughs"): from then on only once, its paths past that left to their nearest ancestor's line.
    budget, seen = max(10_000, 2 * len(text)), set[int]()
    while stack:
        pointer, node = stack.pop()
        budget -= 1
        if budget < 0 and id(node) in seen:
            continue
        seen.add(id(node))
        lines.setdefault(pointer, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                child = join_pointer(pointer, str(key.value))
                lines[child] = key.start_mark.line + 1  # the key's line: where a reader looks for it
                stack.append((child, value))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((join_pointer(pointer, i), v) for i, v in enumerate(node.value))
    return lines
