"""Semantic versions (semver 2.0.0) and the bump a set of changes requires.

Contract versions are strict ``MAJOR.MINOR.PATCH`` with optional pre-release and build parts. Ordering
follows semver 2.0.0 section 11: build metadata is ignored, a pre-release sorts before its release.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import IntEnum
from functools import total_ordering

__all__ = ["Bump", "Version"]

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

    def bump_from(self, old: Version) -> Bump:
        """Which part grew from ``old`` to ``self`` (``NONE`` if it did not grow).

        Pre-1.0 versions follow the Cargo convention: below 1.0.0 every minor bump may break, so
        0.1.x -> 0.2.0 counts as MAJOR and 0.1.0 -> 0.1.1 as MINOR.
        """
        if self <= old:
            return Bump.NONE
        if self.major != old.major:
            return Bump.MAJOR
        if self.minor != old.minor:
            return Bump.MAJOR if self.major == 0 else Bump.MINOR
        if self.patch != old.patch:
            return Bump.MINOR if self.major == 0 else Bump.PATCH
        return Bump.PATCH  # only the pre-release part moved forward

    def next(self, bump: Bump) -> Version:
        """The smallest version after ``self`` that is a ``bump``: ``Version(1, 2, 3).next(Bump.MINOR)`` is 1.3.0."""
        if bump is Bump.MAJOR:
            return Version(0, self.minor + 1, 0) if self.major == 0 else Version(self.major + 1, 0, 0)
        if bump is Bump.MINOR:
            return Version(0, self.minor, self.patch + 1) if self.major == 0 else Version(self.major, self.minor + 1, 0)
        if bump is Bump.PATCH:
            return Version(self.major, self.minor, self.patch + 1)
        return self
