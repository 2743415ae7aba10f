"""Semantic versions (semver 2.0.0) and the bump a set of changes requires.

Contract versions are strict ``MAJOR.MINOR.PATCH`` with optional pre-release and build parts. Ordering
follows semver 2.0.0 section 11: build metadata is ignored, a pre-release sorts before its release.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import IntEnum
from functools import total_ordering

__all__ = ["Bump", "Version", "line_from_token", "line_token"]

#: A compatibility line as :attr:`Version.line` spells it ("1", "0.2", "0.0.3"), and as names spell it ("0_2").
_LINE = re.compile(r"(0|[1-9]\d*)(?:\.(0|[1-9]\d*)){0,2}")
_TOKEN = re.compile(r"(0|[1-9]\d*)(?:_(0|[1-9]\d*)){0,2}")

_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)


class Bump(IntEnum):
    """How much a version must grow; ordered so that ``max()`` picks the strongest need."""

    NONE = 0
    PATCH = 1
    MINOR = 2
    MAJOR = 3

    def __str__(self) -> str:
        return self.name.lower()


@total_ordering
@dataclass(frozen=True, slots=True)
class Version:
    """A parsed semantic version: ``Version.parse("1.2.3-rc.1")``."""

    major: int
    minor: int
    patch: int
    prerelease: tuple[str, ...] = ()
    build: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> Version:
        """Parse ``text`` or raise ``ValueError`` saying what a valid version looks like."""
        match = _SEMVER.match(text.strip()) if isinstance(text, str) else None
        if not match:
            raise ValueError(f"{text!r} is not a semantic version (expected MAJOR.MINOR.PATCH, e.g. 1.4.0)")
        major, minor, patch, pre, build = match.groups()
        return cls(
            int(major),
            int(minor),
            int(patch),
            tuple(pre.split(".")) if pre else (),
            tuple(build.split(".")) if build else (),
        )

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            text += "-" + ".".join(self.prerelease)
        if self.build:
            text += "+" + ".".join(self.build)
        return text

    def _key(self) -> tuple[int, int, int, int, tuple[tuple[int, int | str], ...]]:
        # A release sorts after all its pre-releases; numeric identifiers sort before alphanumeric ones.
        pre = tuple((0, int(p)) if p.isdigit() else (1, p) for p in self.prerelease)
        return (self.major, self.minor, self.patch, 0 if self.prerelease else 1, pre)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Version) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __lt__(self, other: Version) -> bool:
        return self._key() < other._key()

    @property
    def line(self) -> str:
        """The compatibility line (Cargo's rule, decision 0003): what is left of the first non-zero part, and it.

        Versions of one line are compatible with each other; a new line may break. Stub packages, bus subjects
        and streams are one per line (decision 0140).

        >>> Version(1, 2, 3).line, Version(0, 2, 3).line, Version(0, 0, 3).line
        ('1', '0.2', '0.0.3')
        """
        if self.major:
            return str(self.major)
        if self.minor:
            return f"0.{self.minor}"
        return f"0.0.{self.patch}"

    def bump_from(self, old: Version) -> Bump:
        """Which part grew from ``old`` to ``self`` (``NONE`` if it did not grow).

        Pre-1.0 versions follow the Cargo convention: below 1.0.0 the leftmost non-zero part is the major, so
        0.1.x -> 0.2.0 and 0.0.3 -> 0.0.4 count as MAJOR (a new :attr:`line`) and 0.1.0 -> 0.1.1 as MINOR.
        """
        if self <= old:
            return Bump.NONE
        if self.line != old.line:
            return Bump.MAJOR
        if self.major and self.minor != old.minor:
            return Bump.MINOR
        if self.patch != old.patch:
            return Bump.MINOR if self.major == 0 else Bump.PATCH
        return Bump.PATCH  # only the pre-release part moved forward

    def next(self, bump: Bump) -> Version:
        """The smallest version after ``self`` that is a ``bump``: ``Version(1, 2, 3).next(Bump.MINOR)`` is 1.3.0.

        Below 1.0.0 a major bump starts the next line (0.1.3 -> 0.2.0, 0.0.3 -> 0.0.4) and a minor one is the
        next patch (0.1.3 -> 0.1.4); a 0.0.z line has no room for a compatible change, so every bump is 0.0.z+1.
        """
        if self.major == 0 and self.minor == 0:
            return Version(0, 0, self.patch + 1) if bump is not Bump.NONE else self
        if bump is Bump.MAJOR:
            return Version(0, self.minor + 1, 0) if self.major == 0 else Version(self.major + 1, 0, 0)
        if bump is Bump.MINOR:
            return Version(0, self.minor, self.patch + 1) if self.major == 0 else Version(self.major, self.minor + 1, 0)
        if bump is Bump.PATCH:
            return Version(self.major, self.minor, self.patch + 1)
        return self

    def describe_bump(self, bump: Bump) -> str:
        """How ``bump`` from this version reads in the version's own terms: below 1.0.0 a "major" bump is a new
        line and minor and patch bumps are one compatible bump (decision 0003).

        >>> Version(1, 2, 3).describe_bump(Bump.MAJOR), Version(0, 1, 0).describe_bump(Bump.MAJOR)
        ('a major bump', 'a new line')
        >>> Version(0, 1, 0).describe_bump(Bump.PATCH), Version(0, 1, 0).describe_bump(Bump.NONE)
        ('a compatible bump', 'no bump')
        """
        if bump is Bump.NONE:
            return "no bump"
        if self.major:
            return f"a {bump} bump"
        return "a new line" if bump is Bump.MAJOR else "a compatible bump"


def line_token(line: str | int) -> str:
    """A line as a name may hold it (subject tokens and Python packages cannot hold "."): "0.2" -> "0_2".

    An int is a major (1 -> "1"); raises ``ValueError`` for anything that is not a line.

    >>> line_token("1"), line_token("0.2"), line_token("0.0.3"), line_token(2)
    ('1', '0_2', '0_0_3', '2')
    """
    if isinstance(line, int) and not isinstance(line, bool) and line >= 0:
        return str(line)
    if isinstance(line, str) and _LINE.fullmatch(line):
        return line.replace(".", "_")
    if isinstance(line, str) and _TOKEN.fullmatch(line):
        return line
    raise ValueError(f"{line!r} is not a contract line (expected a major like 1, or 0.2 or 0.0.3 below 1.0.0)")


def line_from_token(token: str) -> str:
    """The line a name's token spells: "0_2" -> "0.2"; raises ``ValueError`` for anything else.

    >>> line_from_token("0_2"), line_from_token("1")
    ('0.2', '1')
    """
    if not isinstance(token, str) or not _TOKEN.fullmatch(token):
        raise ValueError(f"{token!r} is not a contract line token (expected 1, 0_2 or 0_0_3)")
    return token.replace("_", ".")
