"""Version ranges. Expected answers come from the rules (Cargo's caret and tilde, comparators read as
inequalities on semver order, the pre-release rule), written out here independently of the parser.
"""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from subhive.semver import Version
from subhive.workspace import VersionRange

PRERELEASES: list[tuple[str, ...]] = [(), ("0",), ("alpha",), ("alpha", "0"), ("beta",)]
parts = st.integers(min_value=0, max_value=3)
prereleases = st.sampled_from(PRERELEASES)
versions = st.builds(Version, parts, parts, parts, prereleases)
releases = st.builds(Version, parts, parts, parts)
#: Every version with parts 0..2 and the pre-releases above: small enough to check exhaustively.
UNIVERSE = [Version(a, b, c, pre) for a, b, c in itertools.product(range(3), repeat=3) for pre in PRERELEASES]


def v(text: str) -> Version:
    return Version.parse(text)


# --- the rules, written out ------------------------------------------------------------------------------


def caret_rule(major: int, minor: int, patch: int, version: Version) -> bool:
    """^M.m.p: at least M.m.p, and nothing left of the first non-zero part may change."""
    if version.prerelease or (version.major, version.minor, version.patch) < (major, minor, patch):
        return False
    if major > 0:
        return version.major == major
    if minor > 0:
        return version.major == 0 and version.minor == minor
    return (version.major, version.minor, version.patch) == (0, 0, patch)


def tilde_rule(major: int, minor: int, patch: int, version: Version) -> bool:
    """~M.m.p: patches of M.m from p on."""
    return not version.prerelease and version.major == major and version.minor == minor and version.patch >= patch


OPS = {">=": lambda a, b: a >= b, ">": lambda a, b: a > b, "<": lambda a, b: a < b, "<=": lambda a, b: a <= b}


def comparators_rule(comparators: list[tuple[str, Version]], version: Version) -> bool:
    """Every inequality holds, and a pre-release needs a comparator naming a pre-release of its line."""
    if not all(OPS[op](version, bound) for op, bound in comparators):
        return False
    line = (version.major, version.minor, version.patch)
    return not version.prerelease or any(b.prerelease and (b.major, b.minor, b.patch) == line for _, b in comparators)


# --- examples from the documentation ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "inside", "outside"),
    [
        ("^1.2", ["1.2.0", "1.9.9"], ["1.1.9", "2.0.0", "2.0.0-alpha", "1.5.0-rc.1"]),
        ("^0.2.3", ["0.2.3", "0.2.9"], ["0.2.2", "0.3.0"]),
        ("^0.0.3", ["0.0.3"], ["0.0.4", "0.0.2"]),
        ("^0", ["0.0.0", "0.9.9"], ["1.0.0"]),
        ("~1.2.3", ["1.2.3", "1.2.9"], ["1.3.0", "1.2.2"]),
        ("~1.2", ["1.2.0", "1.2.9"], ["1.3.0"]),
        ("~1", ["1.0.0", "1.9.0"], ["2.0.0"]),
        (">=1.0.0,<2.0.0", ["1.0.0", "1.99.0"], ["2.0.0", "0.9.0"]),
        ("1.2.3", ["1.2.3", "1.2.3+build.5"], ["1.2.4", "1.2.3-rc.1"]),
        ("=1.2", ["1.2.0", "1.2.7"], ["1.3.0"]),
        (">1.2", ["1.3.0"], ["1.2.9"]),
        ("<=1.2", ["1.2.9", "0.1.0"], ["1.3.0"]),
        ("*", ["0.0.0", "7.1.2"], ["1.0.0-alpha"]),
        (">=1.3.0-rc.1, <2", ["1.3.0-rc.1", "1.3.0-rc.2", "1.3.0", "1.9.0"], ["1.3.0-beta", "1.4.0-rc.1"]),
    ],
)
def test_documented_examples(text: str, inside: list[str], outside: list[str]) -> None:
    versions_range = VersionRange.parse(text)
    assert [s for s in inside if not versions_range.contains(v(s))] == []
    assert [s for s in outside if versions_range.contains(v(s))] == []


def test_canonical_form_spells_the_interval() -> None:
    assert str(VersionRange.parse("^1.2")) == ">=1.2.0, <2.0.0"
    assert str(VersionRange.parse("~0.3")) == ">=0.3.0, <0.4.0"
    assert str(VersionRange.parse(" 1.2.3 ")) == "=1.2.3"
    assert VersionRange.parse(" ^1.2 ").text == "^1.2"
    assert repr(VersionRange.parse("^1.2")) == "VersionRange(text='^1.2')"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "not a version range"),
        (">=1.0.0 <2.0.0", "separate comparators with a comma"),
        (">=1.0.0,", "a comma with nothing on one side"),
        ("^x", "'x' in '^x' is not a version"),
        ("1.2.3.4", "not a version"),
        ("v1.2", "not a version"),
        ("1.2.3-01", "invalid pre-release"),
        ("01.2", "not a version"),
        (">=2.0.0,<1.0.0", "matches no version"),
        ("=1.0.0,>1.0.0", "matches no version"),
        (">1.0.0,<1.0.1-0", "matches no version"),  # nothing lies strictly between the two
    ],
)
def test_bad_ranges_are_refused_saying_why(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        VersionRange.parse(text)


def test_best_picks_the_highest_accepted_version() -> None:
    available = [v(s) for s in ("1.0.0", "1.4.2", "2.0.0", "2.1.0-rc.1", "1.5.0-beta")]
    assert VersionRange.parse("^1.0").best(available) == v("1.4.2")
    assert VersionRange.parse(">=2.1.0-rc.0").best(available) == v("2.1.0-rc.1")
    assert VersionRange.parse("^3").best(available) is None


# --- properties -----------------------------------------------------------------------------------------


@given(parts, parts, parts, versions)
def test_caret_follows_the_cargo_rule(major: int, minor: int, patch: int, version: Version) -> None:
    assert VersionRange.parse(f"^{major}.{minor}.{patch}").contains(version) == caret_rule(major, minor, patch, version)


@given(parts, parts, versions)
def test_caret_with_two_parts(major: int, minor: int, version: Version) -> None:
    # ^M.m is ^M.m.0, except that ^0.0 leaves its patch free: >=0.0.0, <0.1.0 (Cargo).
    expected = (
        caret_rule(major, minor, 0, version)
        if (major, minor) != (0, 0)
        else not version.prerelease and (version.major, version.minor) == (0, 0)
    )
    assert VersionRange.parse(f"^{major}.{minor}").contains(version) == expected


@given(parts, parts, parts, versions)
def test_tilde_allows_patches_only(major: int, minor: int, patch: int, version: Version) -> None:
    assert VersionRange.parse(f"~{major}.{minor}.{patch}").contains(version) == tilde_rule(major, minor, patch, version)


@given(releases, releases, versions)
def test_a_half_open_interval_holds_the_releases_between(low: Version, high: Version, version: Version) -> None:
    text = f">={low},<{high}"
    if not low < high:
        with pytest.raises(ValueError, match="matches no version"):
            VersionRange.parse(text)
        return
    assert VersionRange.parse(text).contains(version) == (not version.prerelease and low <= version < high)


@given(st.sampled_from(["^", "~", "=", ">=", ">", "<=", ""]), releases, versions)
def test_pre_releases_match_only_when_named(op: str, bound: Version, version: Version) -> None:
    try:
        versions_range = VersionRange.parse(f"{op}{bound}")
    except ValueError:
        return
    if version.prerelease:
        assert not versions_range.contains(version)


@given(st.lists(st.tuples(st.sampled_from(sorted(OPS)), st.sampled_from(UNIVERSE)), min_size=1, max_size=3))
def test_comparators_mean_what_they_say(comparators: list[tuple[str, Version]]) -> None:
    text = ", ".join(f"{op}{bound}" for op, bound in comparators)
    members = [u for u in UNIVERSE if comparators_rule(comparators, u)]
    try:
        versions_range = VersionRange.parse(text)
    except ValueError:
        assert members == [], f"{text} was refused as empty but holds {members[0]}"
        return
    assert [u for u in UNIVERSE if versions_range.contains(u)] == members
    witness = versions_range.witness()
    assert witness is not None
    assert comparators_rule(comparators, witness)
    assert all(witness <= m for m in members)  # the witness is the lowest member
    # The canonical form means the same as what was written.
    again = VersionRange.parse(str(versions_range))
    assert [u for u in UNIVERSE if again.contains(u)] == members


@given(st.text(max_size=30))
def test_any_text_parses_or_is_refused_with_a_value_error(text: str) -> None:
    try:
        versions_range = VersionRange.parse(text)
    except ValueError:
        return  # the documented refusal; any other exception fails the test
    witness = versions_range.witness()
    assert witness is not None  # a range that parses is never empty
    assert versions_range.contains(witness)


@given(
    st.lists(
        st.sampled_from(["^1.2", " ^1.2", "~0.1.3", ">=1.0.0, <2.0.0", "*", "=1.0.0,>1.0.0", "^x", ""]), max_size=6
    )
)
def test_a_text_parsed_again_gives_the_same_range_or_the_same_refusal(texts: list[str]) -> None:
    """Ranges are kept per text once parsed (decision 0139): a second parse answers what the first did, a
    refusal included, whatever was parsed in between."""

    def outcome(text: str) -> tuple[str, str]:
        try:
            parsed = VersionRange.parse(text)
        except ValueError as exc:
            return ("refused", str(exc))
        return (parsed.text, str(parsed))

    first = [outcome(text) for text in texts]
    assert [outcome(text) for text in reversed(texts)] == list(reversed(first))
    assert VersionRange.parse(" ^1.2 ") == VersionRange.parse("^1.2")
    assert str(VersionRange.parse("^1.2")) == ">=1.2.0, <2.0.0"
