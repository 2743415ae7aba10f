"""The engine's pure rules (``subhive.root_hive._rules``), for every input: version lines, a proposal's file
map, and the best-effort name and version of a manifest that does not lint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from subhive.errors import InputError, Location, Problem
from subhive.root_hive._rules import MAX_FILES, check_contract_name, clean_files, peek, relocate, version_line
from subhive.semver import Version

versions = st.builds(Version, st.integers(0, 5), st.integers(0, 5), st.integers(0, 5))
segment = st.text(alphabet="abcdefghij_-0123456789", min_size=1, max_size=8)


@given(versions, versions)
def test_two_versions_share_a_line_when_their_major_does_and_below_1_their_minor_too(v: Version, w: Version) -> None:
    # Cargo's rule: the leftmost non-zero part and what is left of it; 0.0.z is a line of its own.
    same = v.major == w.major and (v.major > 0 or (v.minor == w.minor and (v.minor > 0 or v.patch == w.patch)))
    assert (version_line(v) == version_line(w)) is same


@given(st.lists(segment, min_size=1, max_size=4), st.binary(max_size=64))
def test_a_relative_path_is_kept_with_its_bytes(parts: list[str], content: bytes) -> None:
    name = "/".join(parts)
    files: dict[str, Any] = {"contract.yaml": b"contract: x\n", name: bytearray(content)}  # bytearray is fine too
    cleaned = clean_files(files)
    assert cleaned[name] == content
    assert type(cleaned[name]) is bytes


@given(st.lists(segment, max_size=2), st.sampled_from(["..", ".", ""]), st.lists(segment, max_size=2))
def test_a_path_leaving_the_directory_or_with_empty_parts_is_refused(
    before: list[str], bad: str, after: list[str]
) -> None:
    name = "/".join([*before, bad, *after])
    with pytest.raises(InputError) as info:
        clean_files({"contract.yaml": b"", name: b"x"})
    assert info.value.code == "proposal.bad_path"


@pytest.mark.parametrize(
    ("files", "code"),
    [
        ({}, "proposal.no_files"),
        ({"in.json": b"{}"}, "proposal.no_manifest"),
        ({"contract.yaml": b"", "/etc/passwd": b""}, "proposal.bad_path"),
        ({"contract.yaml": b"", "a": b"", "a/b": b""}, "proposal.bad_path"),
        ({"contract.yaml": "text"}, "proposal.bad_content"),
        ({f"f{i}": b"" for i in range(MAX_FILES + 1)}, "proposal.too_many_files"),
    ],
)
def test_what_is_not_a_contract_directory_is_refused_with_its_code(files: dict[str, bytes], code: str) -> None:
    with pytest.raises(InputError) as info:
        clean_files(files)
    assert info.value.code == code


@pytest.mark.parametrize("name", ["", "Orders", "1orders", "a" * 64, "or ders", 7])
def test_a_contract_name_is_lowercase_and_short(name: object) -> None:
    with pytest.raises(InputError) as info:
        check_contract_name(name, "endpoint.contract")
    assert info.value.code == "endpoint.contract"
    check_contract_name("orders_v2-x", "endpoint.contract")  # and this one is fine


def test_peek_reads_name_and_version_off_the_text_and_falls_back_to_0_0_0() -> None:
    assert peek({"contract.yaml": b"contract: 'orders'\nversion: \"1.2.3\"\n"}) == ("orders", Version(1, 2, 3))
    assert peek({"contract.yaml": b"contract: orders\nversion: one\n"}) == ("orders", Version(0, 0, 0))
    assert peek({}) == ("", Version(0, 0, 0))


def test_relocate_names_files_relative_to_the_proposal_not_the_staging_directory(tmp_path: Path) -> None:
    staging = tmp_path / "staging" / "p-1"
    inside = Problem("x", "m", Location(file=str(staging / "schemas" / "a.json")))
    assert relocate(inside, staging).location.file == "schemas/a.json"
    assert relocate(Problem("x", "m", Location(file=str(staging))), staging).location.file == "."
    elsewhere = Problem("x", "m", Location(file="/other/file"))
    assert relocate(elsewhere, staging) is elsewhere
