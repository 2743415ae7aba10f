"""Version ranges: which versions of a contract a consumer accepts (Cargo's grammar, a bare version exact).
See docs/workspace.md#version-ranges.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..semver import Version

__all__ = ["VersionRange"]

_COMPARATOR = re.compile(r"\s*(\^|~|>=|<=|>|<|=)?\s*([^\s,]+)\s*\Z")
_PARTIAL = re.compile(r"(0|[1-9]\d*)(?:\.(0|[1-9]\d*)(?:\.(0|[1-9]\d*)(?:-([0-9A-Za-z.-]+))?)?)?\Z")
_EXAMPLES = "e.g. ^1.2, ~1.2.3, >=1.0.0,<2.0.0 or 1.2.3"


@dataclass(frozen=True, slots=True)
class _Bound:
    version: Version
    inclusive: bool


@dataclass(frozen=True, slots=True)
class VersionRange:
    """A set of acceptable versions: an interval, plus the pre-release lines a comparator named.

    Build with :meth:`parse`. ``str()`` is the canonical comparator form, ``text`` what was written.

        >>> r = VersionRange.parse("^1.2")
        >>> str(r), r.contains(Version.parse("1.9.0")), r.contains(Version.parse("2.0.0"))
        ('>=1.2.0, <2.0.0', True, False)

    The grammar is Cargo's, with npm's reading of a bare version (an exact match)::

        range       := "*" | comparator ("," comparator)*      all comparators must hold
        comparator  := op? partial
        op          := "^" | "~" | ">=" | ">" | "<=" | "<" | "="   (none: "=")
        partial     := MAJOR ["." MINOR ["." PATCH ["-" PRERELEASE]]]

    A partial version stands for all the versions it leaves open: ``=1.2`` is ``>=1.2.0, <1.3.0``, ``>1.2`` is
    ``>=1.3.0``, ``<=1.2`` is ``<1.3.0``. What ``^`` and ``~`` mean, pre-releases and build metadata:
    docs/workspace.md#version-ranges.
    """

    text: str
    lower: _Bound | None = field(repr=False)
    upper: _Bound | None = field(repr=False)
    #: ``(major, minor, patch)`` of every comparator that named a pre-release: only their pre-releases match.
    prerelease_lines: frozenset[tuple[int, int, int]] = field(repr=False)

    @classmethod
    def parse(cls, text: str) -> VersionRange:
        """Parse ``text`` or raise ``ValueError`` saying what is wrong and what a range looks like.

        A range no version can satisfy (``>=2.0.0, <1.0.0``) is refused: a requirement that can never be met
        is a typo, and negotiation would otherwise wait for it forever.
        """
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"{text!r} is not a version range ({_EXAMPLES})")
        # A range is a value: the same text is parsed once per process. A tree of 500 hives declares the same
        # few ranges 16,000 times, read again by the root, codegen and status (decision 0139).
        return _parsed(text.strip()) if cls is VersionRange else cls._build(text.strip())

    @classmethod
    def _build(cls, stripped: str) -> VersionRange:
        if stripped == "*":
            return cls(stripped, None, None, frozenset())
        lower: _Bound | None = None
        upper: _Bound | None = None
        lines: set[tuple[int, int, int]] = set()
        for part in stripped.split(","):
            low, high, version = _comparator(part, stripped)
            lower = _tighter(lower, low, want_max=True)
            upper = _tighter(upper, high, want_max=False)
            if version.prerelease:
                lines.add(_line(version))
        result = cls(stripped, lower, upper, frozenset(lines))
        if result.witness() is None:
            raise ValueError(
                f"version range {stripped!r} matches no version: no version lies between its bounds ({result})"
            )
        return result

    def contains(self, version: Version) -> bool:
        """Whether ``version`` satisfies the range (pre-releases only on a line a comparator named)."""
        if version.prerelease and _line(version) not in self.prerelease_lines:
            return False
        return self._in_interval(version)

    __contains__ = contains

    def best(self, versions: Iterable[Version]) -> Version | None:
        """The highest of ``versions`` the range accepts, or ``None``: what negotiation would pick."""
        return max((v for v in versions if self.contains(v)), default=None)

    def witness(self) -> Version | None:
        """The lowest version the range accepts, or ``None`` if it accepts none."""
        # The lowest member is the lowest candidate that satisfies the range: the lower bound or its
        # successors, a release at the start of the interval, or the first pre-release of a named line.
        candidates: set[Version] = {Version(0, 0, 0)}
        for line in self.prerelease_lines:
            candidates.add(Version(*line, prerelease=("0",)))
        if self.lower is not None:
            low = _release(self.lower.version)
            candidates |= {low, Version(low.major, low.minor, low.patch + 1), self.lower.version}
            if self.lower.version.prerelease:
                candidates.add(_release(self.lower.version, (*self.lower.version.prerelease, "0")))
        members = [v for v in candidates if self.contains(v)]
        return min(members) if members else None

    def __str__(self) -> str:
        parts = []
        if self.lower is not None and self.upper is not None and self.lower.version == self.upper.version:
            return f"={self.lower.version}"
        if self.lower is not None:
            parts.append((">=" if self.lower.inclusive else ">") + str(self.lower.version))
        if self.upper is not None:
            parts.append(("<=" if self.upper.inclusive else "<") + str(self.upper.version))
        return ", ".join(parts) or "*"

    def _in_interval(self, version: Version) -> bool:
        if self.lower is not None and (
            version < self.lower.version or (version == self.lower.version and not self.lower.inclusive)
        ):
            return False
        return not (
            self.upper is not None
            and (version > self.upper.version or (version == self.upper.version and not self.upper.inclusive))
        )


@functools.lru_cache(maxsize=4096)
def _parsed(stripped: str) -> VersionRange:
    return VersionRange._build(stripped)


def _line(version: Version) -> tuple[int, int, int]:
    return (version.major, version.minor, version.patch)


def _release(version: Version, prerelease: tuple[str, ...] = ()) -> Version:
    return Version(version.major, version.minor, version.patch, prerelease)


def _tighter(current: _Bound | None, new: _Bound | None, *, want_max: bool) -> _Bound | None:
    """The stricter of two lower bounds (``want_max``) or two upper bounds."""
    if new is None:
        return current
    if current is None:
        return new
    if new.version != current.version:
        return new if (new.version > current.version) == want_max else current
    return current if not current.inclusive else new


def _comparator(part: str, whole: str) -> tuple[_Bound | None, _Bound | None, Version]:
    """One comparator as (lower bound, upper bound, the version it names)."""
    match = _COMPARATOR.match(part)
    if not match:
        hint = "separate comparators with a comma" if part.strip() else "a comma with nothing on one side"
        raise ValueError(f"{whole!r} is not a version range: {hint} ({_EXAMPLES})")
    op, body = match.group(1) or "=", match.group(2)
    partial = _PARTIAL.match(body)
    if not partial:
        raise ValueError(f"{body!r} in {whole!r} is not a version: write MAJOR[.MINOR[.PATCH]] ({_EXAMPLES})")
    major, minor, patch, pre = partial.groups()
    if pre is not None:
        try:
            Version.parse(body)
        except ValueError:
            raise ValueError(f"{body!r} in {whole!r} has an invalid pre-release part") from None
    given = [int(major)] + [int(p) for p in (minor, patch) if p is not None]
    low = _version(given, tuple(pre.split(".")) if pre else ())
    # ``high`` is the first version past everything the partial version leaves open.
    high = _next(given, len(given) - 1) if len(given) < 3 else None
    lower, upper = _bounds(op, given, low, high)
    return lower, upper, low


def _version(parts: list[int], prerelease: tuple[str, ...] = ()) -> Version:
    """A version from 1 to 3 parts, the missing ones zero."""
    major, minor, patch = [*parts, 0, 0][:3]
    return Version(major, minor, patch, prerelease)


def _next(parts: list[int], index: int) -> Version:
    """Increment ``parts[index]`` and zero what follows: ``_next([0, 2, 3], 1)`` is 0.3.0."""
    return _version([*parts[:index], parts[index] + 1])


def _bounds(op: str, given: list[int], low: Version, high: Version | None) -> tuple[_Bound | None, _Bound | None]:
    at_least = _Bound(low, inclusive=True)
    if op in ("^", "~"):
        # Caret: left of the first non-zero part nothing may change (an all-zero partial frees its last part).
        # Tilde: the minor stays (the major, when only the major is given).
        index = (
            next((i for i, p in enumerate(given) if p != 0), len(given) - 1) if op == "^" else min(1, len(given) - 1)
        )
        return at_least, _Bound(_next(given, index), inclusive=False)
    past = _Bound(high, inclusive=True) if high else _Bound(low, inclusive=False)  # ">": beyond all it names
    through = _Bound(high, inclusive=False) if high else _Bound(low, inclusive=True)  # "<=": up to all it names
    table = {
        "=": (at_least, through),
        ">=": (at_least, None),
        ">": (past, None),
        "<": (None, _Bound(low, inclusive=False)),
        "<=": (None, through),
    }
    return table[op]
