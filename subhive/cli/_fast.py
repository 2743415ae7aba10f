"""``subhive schema diff`` without typer's argument parsing, for the argument lists read exactly as typer reads them.

typer 0.29 converts every parameter through a pydantic ``TypeAdapter``: importing pydantic and building the
adapters is about a third of a ``schema diff`` process on small files, which scripts and git hooks run once per
file (issue #16 targets <= 0.15 s). :func:`schema_diff_arguments` reads the plain forms of the command's own
options and returns what typer would pass to the command's function; any doubt (help, an unknown option, a
value typer would refuse or read differently, completion) returns None and typer parses as always, so usage
errors and help keep typer's wording. ``tests/cli/test_fast_schema_diff.py`` holds the rule for all argument
lists: whatever is read here, typer reads the same way. Decision 0110.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..compat import Direction
from ..compat.proto_settings import BreakingRules
from ._output import Format

__all__ = ["schema_diff_arguments"]

# option spelling -> (parameter, how its text becomes the value, repeatable)
_Reader = Callable[[str], Any]
_OPTIONS: dict[str, tuple[str, _Reader, bool]] = {
    "--format": ("fmt", Format, False),
    "-f": ("fmt", Format, False),
    "--require": ("require", Direction, False),
    "--proto-path": ("proto_path", Path, True),
    "-I": ("proto_path", Path, True),
    "--breaking": ("rules", BreakingRules, False),
    "--id-root": ("id_root", str, True),
    "--old-id-root": ("old_id_root", str, True),
    "--new-id-root": ("new_id_root", str, True),
}
_DEFAULTS: dict[str, Any] = {
    "fmt": Format.text,
    "require": None,
    "proto_path": None,
    "rules": None,
    "id_root": None,
    "old_id_root": None,
    "new_id_root": None,
}


class _Decline(Exception):
    """Not a form read here for certain: typer parses it."""


def schema_diff_arguments(argv: Sequence[str]) -> dict[str, Any] | None:
    """``subhive ARGV`` as keyword arguments of ``schema diff``'s function, or None to let typer parse it.

    >>> schema_diff_arguments(["schema", "diff", "a.json", "b.json", "-f", "json"])["fmt"]
    <Format.json: 'json'>
    """
    if len(argv) < 2 or argv[0] != "schema" or argv[1] != "diff":
        return None
    try:
        return _read(list(argv[2:]))
    except _Decline:
        return None


def _read(args: list[str]) -> dict[str, Any]:
    values = dict(_DEFAULTS)
    positional: list[str] = []
    i = 0
    while i < len(args):
        token = args[i]
        i += 1
        if token == "--":
            positional += args[i:]
            break
        if not token.startswith("-") or token == "-":
            positional.append(token)
            continue
        name, attached = _split(token)
        if attached is None:
            if i >= len(args):
                raise _Decline
            attached, i = args[i], i + 1
        parameter, read, repeatable = _OPTIONS[name]
        value = _value(read, attached)
        values[parameter] = [*(values[parameter] or ()), value] if repeatable else value
    if len(positional) != 2 or any(not p or p.startswith("-") for p in positional):
        raise _Decline
    return {"old": Path(positional[0]), "new": Path(positional[1]), **values}


def _split(token: str) -> tuple[str, str | None]:
    """``--format=json`` -> ("--format", "json"); ``-fjson`` -> ("-f", "json"); ``--format`` -> ("--format", None)."""
    if token.startswith("--"):
        name, eq, value = token.partition("=")
        if name not in _OPTIONS:
            raise _Decline
        return name, (value if eq else None)
    name, rest = token[:2], token[2:]
    if name not in _OPTIONS:
        raise _Decline
    return name, (rest or None)


def _value(read: _Reader, text: str) -> Any:
    # A value that looks like an option, or is empty, is left to typer, which has its own rules for both.
    if not text or text.startswith("-"):
        raise _Decline
    try:
        return read(text)
    except ValueError:  # not a member of the enum: typer explains the choices
        raise _Decline from None
