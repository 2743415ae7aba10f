"""``[dead_letters]`` in hive.toml (the workspace's default) and subhive.toml (one hive's override): sizes and
durations people write, the errors they get (file, line, pointer, did-you-mean), and what each hive ends with."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from subhive.workspace import (
    DEFAULT_DEAD_LETTER_LIMITS,
    DeadLetterLimits,
    Kind,
    ManifestInvalid,
    SubhiveManifest,
    WorkspaceConfig,
    format_age,
    format_size,
    load_manifest,
    open_workspace,
    read_config,
)

HIVE_TOML = '[workspace]\nname = "shop"\nformat = 1\n'


@pytest.mark.parametrize(
    ("written", "size"),
    [
        (4096, 4096),
        ("64MiB", 64 * 1024**2),
        ("500KB", 500_000),
        ("1GiB", 1024**3),
        ("1.5 MiB", 1572864),
        ("2048B", 2048),
        ("2048", 2048),
        ("8kib", 8192),
    ],
)
def test_sizes_are_bytes_or_a_number_with_a_unit(written: object, size: int) -> None:
    assert DeadLetterLimits.parse({"max_bytes": written}).max_bytes == size


@pytest.mark.parametrize(
    ("written", "seconds"),
    [
        (90, 90.0),
        ("90s", 90.0),
        ("30m", 1800.0),
        ("12h", 43200.0),
        ("7d", 604800.0),
        ("1.5h", 5400.0),
        (0, 0.0),
        ("0", 0.0),
    ],
)
def test_ages_are_seconds_or_a_duration(written: object, seconds: float) -> None:
    assert DeadLetterLimits.parse({"max_age": written}).max_age == seconds


@pytest.mark.parametrize(
    "table",
    [
        {"max_bytes": 0},
        {"max_bytes": 100},
        {"max_bytes": -5},
        {"max_bytes": "lots"},
        {"max_bytes": "64 MB/s"},
        {"max_bytes": True},
        {"max_bytes": 1.5e30},
        {"max_age": "7 weeks"},
        {"max_age": -1},
        {"max_age": 0.5},
        {"max_age": "nan"},
        {"max_age": [1]},
        {"max_size": "1MiB"},
    ],
)
def test_a_wrong_limit_is_refused_with_what_to_write(table: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=r"\(.+\)"):  # the reason, then the hint in parentheses
        DeadLetterLimits.parse(table)


@given(st.integers(min_value=1024, max_value=2**50))
def test_any_size_reads_back_from_what_is_written(size: int) -> None:
    assert DeadLetterLimits.parse({"max_bytes": format_size(size)}).max_bytes == size


@given(st.one_of(st.just(0.0), st.floats(min_value=1, max_value=10 * 365 * 86400, allow_nan=False)))
def test_any_age_reads_back_from_what_is_written(seconds: float) -> None:
    assert DeadLetterLimits.parse({"max_age": format_age(seconds)}).max_age == seconds


def test_a_hive_overrides_the_workspace_which_overrides_the_defaults(tmp_path: Path) -> None:
    (tmp_path / "hive.toml").write_text(HIVE_TOML + '\n[dead_letters]\nmax_bytes = "8MiB"\nmax_age = "2d"\n')
    for name, limits in (("db", DeadLetterLimits(max_age=3600)), ("web", DeadLetterLimits())):
        manifest = SubhiveManifest(name=name, kind=Kind.custom, dead_letters=limits)
        (tmp_path / "subhives" / name).mkdir(parents=True)
        (tmp_path / "subhives" / name / "subhive.toml").write_text(manifest.to_toml())
    workspace = open_workspace(tmp_path)
    default = workspace.config.dead_letters
    effective = {
        name: m.dead_letters.over(default).over(DEFAULT_DEAD_LETTER_LIMITS)
        for name, m in workspace.hives().hives.items()
    }
    eight_mib = 8 * 1024**2
    assert effective == {"db": DeadLetterLimits(eight_mib, 3600.0), "web": DeadLetterLimits(eight_mib, 172800.0)}
    assert load_manifest(tmp_path / "subhives" / "db").dead_letters == DeadLetterLimits(max_age=3600)
    # Written back, read back equal; without limits the files say nothing about them.
    assert read_config(tmp_path / "hive.toml") == WorkspaceConfig("shop", dead_letters=default)
    assert "dead_letters" not in SubhiveManifest(name="web", kind=Kind.custom).to_toml()
    assert "dead_letters" not in WorkspaceConfig("shop").to_toml()
    (tmp_path / "again.toml").write_text(workspace.config.to_toml())
    assert read_config(tmp_path / "again.toml") == workspace.config


def test_a_typo_in_hive_toml_is_located_and_a_close_key_suggested(tmp_path: Path) -> None:
    path = tmp_path / "hive.toml"
    path.write_text(HIVE_TOML + '\n[dead_letters]\nmax_byte = "8MiB"\nmax_age = "forever"\n\n[dead_leters]\n')
    with pytest.raises(ManifestInvalid) as caught:
        read_config(path)
    found = {(p.code, p.location.pointer, p.location.line, p.hint) for p in caught.value.problems}
    assert ("deadletters.unknown_key", "/dead_letters/max_byte", 6, "did you mean 'max_bytes'?") in found
    assert ("workspace.unknown_key", "/dead_leters", 9, "did you mean [dead_letters]?") in found
    [age] = [p for p in caught.value.problems if p.code == "deadletters.age_invalid"]
    assert (age.location.file, age.location.line) == (str(path), 7)
    assert age.hint is not None
    assert '"7d"' in age.hint


def test_a_bad_limit_in_subhive_toml_is_a_manifest_problem(tmp_path: Path) -> None:
    directory = tmp_path / "subhives" / "db"
    directory.mkdir(parents=True)
    text = SubhiveManifest(name="db", kind=Kind.db).to_toml() + "\n[dead_letters]\nmax_bytes = 12\n"
    (directory / "subhive.toml").write_text(text)
    with pytest.raises(ManifestInvalid) as caught:
        load_manifest(directory)
    [problem] = caught.value.problems
    assert (problem.code, problem.location.pointer) == ("deadletters.size_invalid", "/dead_letters/max_bytes")
    assert problem.location.line == text.splitlines().index("max_bytes = 12") + 1
