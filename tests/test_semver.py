"""Semantic versions: parsing, the semver 2.0.0 ordering, and which bump a version change is."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from subhive.semver import Bump, Version, line_from_token, line_token

# The precedence example from semver.org section 11, in ascending order.
SEMVER_ORG_ORDER = [
    "1.0.0-alpha",
    "1.0.0-alpha.1",
    "1.0.0-alpha.beta",
    "1.0.0-beta",
    "1.0.0-beta.2",
    "1.0.0-beta.11",
    "1.0.0-rc.1",
    "1.0.0",
    "2.0.0",
    "2.1.0",
    "2.1.1",
]


def test_ordering_follows_semver_org_precedence() -> None:
    parsed = [Version.parse(v) for v in SEMVER_ORG_ORDER]
    shuffled = parsed.copy()
    random.Random(7).shuffle(shuffled)
    assert sorted(shuffled) == parsed


def test_build_metadata_does_not_affect_precedence() -> None:
    assert Version.parse("1.2.3+build.5") == Version.parse("1.2.3+other")
    assert str(Version.parse("1.2.3-rc.1+build.5")) == "1.2.3-rc.1+build.5"


@pytest.mark.parametrize(
    "text", ["1.0", "v1.0.0", "01.0.0", "1.0.0-", "1.0.0-01", "1.0.0+", "", "1.0.0.0", "-1.0.0", "1.x.0"]
)
def test_invalid_versions_are_refused_with_an_example(text: str) -> None:
    with pytest.raises(ValueError, match=r"MAJOR\.MINOR\.PATCH"):
        Version.parse(text)


@pytest.mark.parametrize(
    ("old", "new", "bump"),
    [
        ("1.2.3", "2.0.0", Bump.MAJOR),
        ("1.2.3", "1.3.0", Bump.MINOR),
        ("1.2.3", "1.2.4", Bump.PATCH),
        ("1.2.3", "1.2.3", Bump.NONE),
        ("1.2.3", "1.2.2", Bump.NONE),
        ("1.0.0-rc.1", "1.0.0", Bump.PATCH),
        ("0.1.3", "0.2.0", Bump.MAJOR),
        ("0.1.3", "0.1.4", Bump.MINOR),
        ("0.9.0", "1.0.0", Bump.MAJOR),
        ("0.0.3", "0.0.4", Bump.MAJOR),  # Cargo: every 0.0.z is a line of its own
        ("0.0.3", "0.1.0", Bump.MAJOR),
        ("0.0.3-rc.1", "0.0.3", Bump.PATCH),
    ],
)
def test_bump_from(old: str, new: str, bump: Bump) -> None:
    assert Version.parse(new).bump_from(Version.parse(old)) is bump


versions = st.builds(Version, st.integers(0, 5), st.integers(0, 5), st.integers(0, 5))


@given(versions, st.sampled_from([Bump.PATCH, Bump.MINOR, Bump.MAJOR]))
def test_next_is_newer_and_is_exactly_that_bump(version: Version, bump: Bump) -> None:
    following = version.next(bump)
    assert following > version
    # Below 1.0.0 minor and patch bumps coincide (docs/decisions/0003), so the bump may be larger there.
    assert following.bump_from(version) >= bump
    if version.major >= 1:
        assert following.bump_from(version) is bump


@given(versions, versions)
def test_ordering_is_total_and_consistent_with_equality(a: Version, b: Version) -> None:
    assert (a < b) + (a == b) + (a > b) == 1
    assert (a == b) == (hash(a) == hash(b) and str(a) == str(b))


@pytest.mark.parametrize(
    ("version", "line", "token"),
    [("1.2.3", "1", "1"), ("12.0.0-rc.1", "12", "12"), ("0.2.3", "0.2", "0_2"), ("0.0.3", "0.0.3", "0_0_3")],
)
def test_a_line_is_cargos_and_names_spell_it_with_underscores(version: str, line: str, token: str) -> None:
    assert Version.parse(version).line == line
    assert line_token(line) == token
    assert line_from_token(token) == line


@pytest.mark.parametrize("bad", ["", "v1", "0.2.", "1.x", "01", "-1", "0.0.0.1", "0__2"])
def test_what_is_not_a_line_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="line"):
        line_token(bad)
    with pytest.raises(ValueError, match="line"):
        line_from_token(bad)


@given(versions, versions)
def test_a_new_line_is_exactly_a_major_bump(a: Version, b: Version) -> None:
    """The line is what compatibility follows: a newer version is a major bump exactly when its line differs."""
    old, new = min(a, b), max(a, b)
    if old != new:
        assert (new.bump_from(old) is Bump.MAJOR) == (new.line != old.line)


@given(versions, st.sampled_from([Bump.PATCH, Bump.MINOR, Bump.MAJOR]))
def test_a_bump_reads_in_the_versions_own_terms(version: Version, bump: Bump) -> None:
    said = version.describe_bump(bump)
    if version.major == 0:
        assert "major" not in said
        assert "minor" not in said
        assert said == ("a new line" if bump is Bump.MAJOR else "a compatible bump")
        assert (version.next(bump).line != version.line) == (bump is Bump.MAJOR or version.minor == 0)
    else:
        assert said == f"a {bump} bump"
