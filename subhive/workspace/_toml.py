"""TOML in and out: strict reading with file and line errors, and the few writers the scaffolds need."""

from __future__ import annotations

import json
import re
import tomllib
from functools import cached_property
from pathlib import Path
from typing import Any

from .._source import join_pointer, nearest_line
from ..errors import InputError, Location

__all__ = ["TomlDocument", "read_toml", "toml_key", "toml_string"]

MAX_TOML_BYTES = 1024 * 1024
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+\Z")
_KEY_PART = re.compile(r"\s*(?:([A-Za-z0-9_-]+)|\"((?:[^\"\\]|\\.)*)\"|'([^']*)')\s*")
_ERROR_LINE = re.compile(r"\(at line (\d+), column (\d+)\)")


class TomlDocument:
    """A parsed TOML file that can say on which line a value starts.

    ``tomllib`` keeps no positions, so JSON pointers are mapped to lines by a small line scanner (tables,
    dotted keys, inline tables on one line; multi-line strings and arrays skipped). It only serves error
    messages: a pointer it cannot place gets the line of its nearest known ancestor.
    """

    def __init__(self, path: Path, text: str, data: dict[str, Any]) -> None:
        self.path = path
        self.text = text
        self.data = data

    def __repr__(self) -> str:
        return f"TomlDocument({str(self.path)!r})"

    def line_of(self, pointer: str) -> int | None:
        """The 1-based line of the key at ``pointer``, or of its nearest known ancestor."""
        return nearest_line(self._lines, pointer)

    def location(self, pointer: str) -> Location:
        # A key missing from the top level has no line of its own: the file's first line is where it goes.
        return Location(file=str(self.path), line=self.line_of(pointer) or 1, pointer=pointer)

    @cached_property
    def _lines(self) -> dict[str, int]:
        return _pointer_lines(self.text)


def read_toml(path: Path) -> TomlDocument:
    """Read and parse a TOML file; raise :class:`InputError` with the file and line when it is not valid."""
    where = Location(file=str(path))
    try:
        raw = path.read_bytes()
    except FileNotFoundError as exc:
        raise InputError("file not found", code="input.not_found", location=where) from exc
    except IsADirectoryError as exc:
        raise InputError("not a regular file", code="input.not_a_file", location=where) from exc
    except OSError as exc:
        raise InputError(
            f"cannot read file: {exc.strerror}",
            code="input.unreadable",
            location=where,
            hint="check the file's permissions",
        ) from exc
    if len(raw) > MAX_TOML_BYTES:
        raise InputError(
            f"file is {len(raw)} bytes, over the {MAX_TOML_BYTES} byte limit for a manifest",
            code="input.too_large",
            location=where,
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError(
            f"not valid UTF-8 (byte {exc.start})",
            code="input.encoding",
            location=Location(file=str(path), line=line),
            hint="save the file as UTF-8",
        ) from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        found = _ERROR_LINE.search(message)
        raise InputError(
            f"invalid TOML: {_ERROR_LINE.sub('', message).strip()}" + (f" (column {found.group(2)})" if found else ""),
            code="input.toml",
            location=Location(file=str(path), line=int(found.group(1)) if found else None),
            hint="fix the TOML at that line: strings in quotes, one 'key = value' per line, tables as [name]",
        ) from exc
    return TomlDocument(path, text, data)


def toml_string(value: str) -> str:
    """A TOML basic string: ``toml_string('a "b"')`` is ``'"a \\\\"b\\\\""'``."""
    # JSON string escapes are all valid TOML escapes; TOML also forbids a raw DEL, which JSON leaves alone.
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def toml_key(key: str) -> str:
    """A key as written in TOML: bare when it can be, quoted otherwise."""
    return key if _BARE_KEY.match(key) else toml_string(key)


# --- pointer -> line ------------------------------------------------------------------------------------


def _split_key(text: str) -> tuple[list[str], str] | None:
    """Parse a (dotted) key at the start of ``text``: its parts and the rest of the text, or None."""
    parts: list[str] = []
    rest = text
    while True:
        match = _KEY_PART.match(rest)
        if not match:
            return None
        bare, basic, literal = match.groups()
        parts.append(bare if bare is not None else (_unescape(basic) if basic is not None else literal))
        rest = rest[match.end() :]
        if not rest.startswith("."):
            return parts, rest
        rest = rest[1:]


def _unescape(basic: str) -> str:
    try:
        value = json.loads(f'"{basic}"')
    except ValueError:
        return basic
    return value if isinstance(value, str) else basic


def _pointer_lines(text: str) -> dict[str, int]:
    lines: dict[str, int] = {}
    table: list[str] = []
    array_counts: dict[str, int] = {}
    skip_until: str | None = None  # closing delimiter of a multi-line string
    depth = 0  # open brackets of a multi-line array or inline table
    for number, raw in enumerate(text.splitlines(), start=1):
        if skip_until is not None:
            if skip_until in raw:
                skip_until = None
            continue
        if depth > 0:
            depth = max(0, depth + _bracket_balance(raw))
            continue
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            table = _table_header(line, table, array_counts, lines, number)
            continue
        parsed = _split_key(line)
        if parsed is None or not parsed[1].startswith("="):
            continue
        parts, rest = parsed
        pointer = join_pointer("", *table, *parts)
        lines.setdefault(pointer, number)
        value = rest[1:].strip()
        for quote in ('"""', "'''"):
            if value.startswith(quote) and value.count(quote) == 1:
                skip_until = quote
        if value.startswith("{"):
            _inline_keys(value, pointer, lines, number)
        if skip_until is None and value[:1] in "[{":
            depth = max(0, _bracket_balance(value))
    return lines


def _table_header(line: str, table: list[str], counts: dict[str, int], lines: dict[str, int], number: int) -> list[str]:
    is_array = line.startswith("[[")
    parsed = _split_key(line[2:] if is_array else line[1:])
    if parsed is None:
        return table
    parts = parsed[0]
    pointer = join_pointer("", *parts)
    if is_array:
        index = counts.get(pointer, 0)
        counts[pointer] = index + 1
        lines.setdefault(pointer, number)
        return [*parts, str(index)]
    lines.setdefault(pointer, number)
    return parts


def _inline_keys(value: str, pointer: str, lines: dict[str, int], number: int) -> None:
    # Flat inline tables only ({a = 1, b = "x"}): enough to place an error on its line.
    for match in re.finditer(r"[{,]\s*([A-Za-z0-9_-]+|\"[^\"]*\")\s*=", value):
        key = match.group(1).strip('"')
        lines.setdefault(join_pointer(pointer, key), number)


def _bracket_balance(text: str) -> int:
    balance = 0
    quote: str | None = None
    for char in text:
        if quote:
            if char == quote:
                quote = None
        elif char in "\"'":
            quote = char
        elif char == "#":
            break
        elif char in "[{":
            balance += 1
        elif char in "]}":
            balance -= 1
    return balance
