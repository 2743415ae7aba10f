"""ECMA-262 patterns (what JSON Schema's ``pattern`` is) as Python ``re`` patterns meaning the same.

Python's ``re`` lacks some ECMA syntax (``(?<name>...)``, ``\\k<name>``, ``\\cJ``, ``\\u{1F600}``, ``[^]``) and
reads other syntax differently: ``\\d``, ``\\w`` and ``\\b`` are ASCII in ECMA-262 and Unicode in Python, ``\\s``
is a different set, ``.`` stops at every line terminator (not only ``\\n``), and ``$`` is the end of the input
(Python's also matches before a final newline). :func:`to_python` rewrites each of these into the Python
spelling of the ECMA meaning, and refuses what has no exact Python equivalent (``\\p{...}``) or is no ECMA-262
(``\\A``, ``\\Z``, ``\\a``), so that lint, mock data and comparisons read a pattern as the validator does.
Decision 0097.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["EcmaRegexError", "compile_ecma", "to_python"]

# ECMA-262 WhiteSpace and LineTerminator: what \s matches (Python's \s adds \x1c-\x1f and \x85, lacks \ufeff).
_SPACE = "\\t\\n\\v\\f\\r \\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
_SETS = {"d": "0-9", "w": "A-Za-z0-9_", "s": _SPACE}
_DOT = "[^\\n\\r\\u2028\\u2029]"
_ANY = "(?s:.)"
_NOT_BOUNDARY = "(?:(?<=[A-Za-z0-9_])(?=[A-Za-z0-9_])|(?<![A-Za-z0-9_])(?![A-Za-z0-9_]))"
_SIMPLE = {"f": "\\f", "n": "\\n", "r": "\\r", "t": "\\t", "v": "\\v"}
_NAME = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_HEX = re.compile(r"[0-9A-Fa-f]+")


class EcmaRegexError(ValueError):
    """The pattern is no ECMA-262 regular expression subhive can read; ``position`` is where, in characters."""

    def __init__(self, reason: str, position: int) -> None:
        super().__init__(f"{reason} (at character {position})")
        self.reason = reason
        self.position = position


@lru_cache(maxsize=4096)
def to_python(pattern: str) -> str:
    """The Python ``re`` pattern that matches exactly the strings ``pattern`` matches under ECMA-262.

    >>> to_python(r"^(?<year>\\d{4})-\\cJ$")
    '^(?P<year>[0-9]{4})-\\\\x0a\\\\Z'

    Raises :class:`EcmaRegexError` for what ECMA-262 refuses or Python cannot say exactly.
    """
    out = _Translator(pattern).run()
    try:
        re.compile(out)
    except (re.error, RecursionError, OverflowError) as exc:
        raise EcmaRegexError(f"not a regular expression: {exc}", getattr(exc, "pos", None) or 0) from None
    return out


def compile_ecma(pattern: str) -> re.Pattern[str]:
    """``re.compile(to_python(pattern))``; use ``.search`` (JSON Schema patterns are not anchored)."""
    return re.compile(to_python(pattern))


class _Translator:
    def __init__(self, pattern: str) -> None:
        self.src = pattern
        self.i = 0
        self.out: list[str] = []

    def run(self) -> str:
        src = self.src
        while self.i < len(src):
            c = src[self.i]
            if c == "\\":
                self.out.append(self._escape(in_class=False))
            elif c == "[":
                self.out.append(self._class())
            elif c == "(" and src.startswith("(?<", self.i) and not src.startswith(("(?<=", "(?<!"), self.i):
                name = _NAME.match(src, self.i + 3)
                if name is None or src[name.end() : name.end() + 1] != ">":
                    raise EcmaRegexError("a group name must be an identifier: (?<name>...)", self.i)
                self.out.append(f"(?P<{name.group()}>")
                self.i = name.end() + 1
            elif c == "$":
                self.out.append("\\Z")  # the end of the input, never before a final newline
                self.i += 1
            elif c == ".":
                self.out.append(_DOT)
                self.i += 1
            else:
                self.out.append(c)
                self.i += 1
        return "".join(self.out)

    def _escape(self, *, in_class: bool) -> str:  # noqa: C901, PLR0911, PLR0912 - one branch per escape kind
        src, at = self.src, self.i
        if at + 1 >= len(src):
            raise EcmaRegexError("the pattern ends with a lone backslash", at)
        e = src[at + 1]
        self.i = at + 2
        if e in "dws":
            return _SETS[e] if in_class else f"[{_SETS[e]}]"
        if e in "DWS":
            assert not in_class  # classes handle their negated sets themselves
            return f"[^{_SETS[e.lower()]}]"
        if e in "bB":
            if in_class:
                if e == "B":
                    raise EcmaRegexError("\\B cannot be in a character class", at)
                return "\\x08"  # backspace, in a class
            # Between ASCII word characters; Python's \B never matches an empty string, so it is spelled out.
            return "(?a:\\b)" if e == "b" else _NOT_BOUNDARY
        if e == "c":
            letter = src[at + 2 : at + 3]
            if not (letter.isascii() and letter.isalpha()):
                raise EcmaRegexError("\\c must be followed by a letter (a control character: \\cJ)", at)
            self.i = at + 3
            return f"\\x{ord(letter) % 32:02x}"
        if e == "k":
            name = _NAME.match(src, at + 3) if src[at + 2 : at + 3] == "<" else None
            if name is None or src[name.end() : name.end() + 1] != ">":
                raise EcmaRegexError("\\k must name a group: \\k<name>", at)
            self.i = name.end() + 1
            return f"(?P={name.group()})"
        if e == "u":
            return self._unicode(at)
        if e == "x":
            digits = src[at + 2 : at + 4]
            if len(digits) != 2 or not _HEX.fullmatch(digits):
                raise EcmaRegexError("\\x needs two hexadecimal digits", at)
            self.i = at + 4
            return f"\\x{digits}"
        if e == "0" and not src[at + 2 : at + 3].isdigit():
            return "\\x00"
        if e.isdigit():
            if in_class or e == "0":
                raise EcmaRegexError(f"\\{e} is no escape here", at)
            end = at + 2
            while end < len(src) and src[end].isdigit():
                end += 1
            self.i = end
            return f"(?:\\{src[at + 1 : end]})"  # a back-reference, kept apart from a digit after it
        if e in _SIMPLE:
            return _SIMPLE[e]
        if e in "pP":
            raise EcmaRegexError("Unicode property classes (\\p{...}) have no exact Python equivalent", at)
        if e.isascii() and e.isalnum():
            raise EcmaRegexError(f"\\{e} is no ECMA-262 escape", at)
        return re.escape(e)  # an escaped syntax character (\/ \. \- ...) is that character, spelled one way

    def _unicode(self, at: int) -> str:
        src = self.src
        if src[at + 2 : at + 3] == "{":
            close = src.find("}", at + 3)
            digits = src[at + 3 : close] if close > 0 else ""
            if not _HEX.fullmatch(digits) or int(digits, 16) > 0x10FFFF:
                raise EcmaRegexError("\\u{...} needs a code point in hexadecimal", at)
            self.i = close + 1
            return f"\\U{int(digits, 16):08x}"
        digits = src[at + 2 : at + 6]
        if len(digits) != 4 or not _HEX.fullmatch(digits):
            raise EcmaRegexError("\\u needs four hexadecimal digits", at)
        self.i = at + 6
        code = int(digits, 16)
        low = src[at + 6 : at + 12]
        if 0xD800 <= code < 0xDC00 and re.fullmatch(r"\\u[dD][c-fC-F][0-9A-Fa-f]{2}", low):
            self.i = at + 12  # a surrogate pair is the one code point it encodes
            code = 0x10000 + ((code - 0xD800) << 10) + (int(low[2:], 16) - 0xDC00)
        return f"\\U{code:08x}"

    def _class(self) -> str:
        src, start = self.src, self.i
        self.i += 1
        negated = src[self.i : self.i + 1] == "^"
        if negated:
            self.i += 1
        items: list[str] = []
        excluded: list[str] = []  # the sets of \D, \W, \S in the class: "anything but these"
        while True:
            if self.i >= len(src):
                raise EcmaRegexError("a character class is not closed", start)
            c = src[self.i]
            if c == "]":
                self.i += 1
                break
            if c == "\\" and src[self.i + 1 : self.i + 2] in ("D", "W", "S"):
                excluded.append(_SETS[src[self.i + 1].lower()])
                self.i += 2
            elif c == "\\":
                items.append(self._escape(in_class=True))
            else:
                items.append("\\" + c if c in "[]^&~|" else c)  # Python reads [[, &&, ~~, || in sets apart
                self.i += 1
        choices = ([f"[{''.join(items)}]"] if items else []) + [f"[^{s}]" for s in excluded]
        if not choices:  # [] matches nothing, [^] anything
            return _ANY if negated else "(?!)"
        if not negated:
            return choices[0] if len(choices) == 1 else f"(?:{'|'.join(choices)})"
        if not excluded:
            return f"[^{''.join(items)}]"
        return f"(?:(?!{'|'.join(choices)}){_ANY})"
