"""The rules behind following a running tree, without running one: what changed between two snapshots, and
which changes a running hive cannot take (a range no accepted version meets)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from subhive.root_hive import Lock, LockEntry
from subhive.semver import Version
from subhive.up._follow import Settle, Snapshot, Stamp, refused_requirements, tree_stamp
from subhive.workspace import Kind, Requirement, SubhiveManifest, VersionRange

names = st.sampled_from(["api", "db", "ui", "web", "store"])
manifests = st.dictionaries(names, st.sampled_from([b"a", b"b", b"c"]), max_size=5)


@given(manifests, manifests)
def test_every_hive_is_added_removed_edited_or_unchanged_exactly_once(
    old: dict[str, bytes], new: dict[str, bytes]
) -> None:
    change = Snapshot(new).change_from(Snapshot(old))
    groups = [set(change.added), set(change.removed), set(change.edited)]
    assert sum(len(g) for g in groups) == len(set().union(*groups))  # disjoint
    assert set(change.added) == set(new) - set(old)
    assert set(change.removed) == set(old) - set(new)
    assert set(change.edited) == {n for n in set(old) & set(new) if old[n] != new[n]}
    assert bool(change) == (old != new)


def _consumer(name: str, **ranges: str) -> SubhiveManifest:
    return SubhiveManifest(
        name=name,
        kind=Kind.ui,
        parent="root",
        consumes=tuple(Requirement(c, VersionRange.parse(r)) for c, r in ranges.items()),
    )


def _lock(*versions: str) -> Lock:
    return Lock(
        {
            ("notes_api", Version.parse(v)): LockEntry("notes_api", Version.parse(v), "sha256:" + "0" * 64, "backend")
            for v in versions
        }
    )


def test_a_running_hive_moving_to_a_range_no_version_meets_is_refused_with_the_pending_approval() -> None:
    (problem,) = refused_requirements(
        {"ui": _consumer("ui", notes_api="^2")}, {"ui": {"notes_api": "^1"}}, _lock("1.0.0"), {"notes_api": ["p-3"]}
    )
    assert problem.code == "up.requirement_unmet"
    assert "ui now consumes notes_api >=2.0.0, <3.0.0" in problem.message
    assert "the lock has 1.0.0" in problem.message
    assert "subhive approvals approve p-3" in (problem.hint or "")
    assert problem.location.file == "subhives/ui/subhive.toml"


def test_without_a_pending_version_the_fix_is_a_proposal() -> None:
    (problem,) = refused_requirements({"ui": _consumer("ui", notes_api="^2")}, {"ui": {}}, _lock("1.0.0"), {})
    assert "subhive contract propose contracts/notes_api/VERSION" in (problem.hint or "")


def test_a_met_range_a_new_hive_and_an_unchanged_line_are_all_followed() -> None:
    wanted = {
        "ui": _consumer("ui", notes_api="^2"),
        "new": _consumer("new", notes_api="^3"),
        "old": _consumer("old", notes_api="^5"),
    }
    running = {"ui": {"notes_api": "^1"}, "old": {"notes_api": str(VersionRange.parse("^5"))}}
    assert refused_requirements(wanted, running, _lock("1.0.0", "2.1.0"), {}) == []


def test_the_stamp_moves_with_a_manifest_or_a_contract_file_and_not_with_hive_code(tmp_path: Path) -> None:
    (tmp_path / "subhives" / "ui" / "ui_hive").mkdir(parents=True)
    (tmp_path / "contracts" / "notes_api" / "1.0.0").mkdir(parents=True)
    manifest = tmp_path / "subhives" / "ui" / "subhive.toml"
    manifest.write_text("name = 'ui'\n")
    schema = tmp_path / "contracts" / "notes_api" / "1.0.0" / "schemas.json"
    schema.write_text("{}")
    first = tree_stamp(tmp_path)
    (tmp_path / "subhives" / "ui" / "ui_hive" / "knowledge.py").write_text("x = 1\n")
    assert tree_stamp(tmp_path) == first
    schema.write_text("{ }")
    second = tree_stamp(tmp_path)
    assert second != first
    manifest.write_text("name = 'ui'  # edited\n")
    assert tree_stamp(tmp_path) != second


SETTLE = 1.5
# Looks: the time since the last look, and which of three states the workspace is in ("a" is what up follows).
looks = st.lists(st.tuples(st.sampled_from([0.2, 0.5, 1.0, 1.6, 3.0]), st.sampled_from("abc")), max_size=30)


@given(looks)
def test_a_change_is_followed_once_it_stayed_the_same_for_the_settle_time_and_said_once(
    seen: list[tuple[float, str]],
) -> None:
    settle = Settle(SETTLE)
    followed, now, previous = "a", 0.0, "a"
    run_start = 0.0  # the first look of the current run of equal states
    for gap, state in seen:
        now += gap
        if state != previous:
            run_start = now
        stamp: Stamp = ((state, 0, 0),)
        if state == followed:  # what the supervisor does when a look finds nothing to follow
            settle.reset()
            previous = state
            continue
        due = settle.due(now)
        answer = settle.see(stamp, now)
        # Said once a wave: the first look that finds the workspace unlike what is followed.
        assert (answer == "new") == (previous == followed), (seen, now)
        # Followed exactly when every look since the run began found it the same, for the settle time at least.
        assert (answer == "settled") == (now - run_start >= SETTLE and previous == state), (seen, now)
        if answer == "settled":
            assert due, (seen, now)  # up looks then, not only at its next regular look
            followed = state
        previous = state
