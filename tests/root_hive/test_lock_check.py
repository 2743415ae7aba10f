"""A lock that disagrees with what was accepted is reported with its fix, and never rewritten to hide it:
``check_lock`` tells an edited hash from files edited in place, the engine refuses proposals meanwhile, and
neither opening the engine nor its later lock rewrites undo the edit."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from subhive.root_hive import LOCK_FILE, LockInconsistent, RootHive, check_lock
from subhive.semver import Version
from tests.kit import make_workspace

from ._fixtures import orders_files

V1 = Version.parse("1.0.0")


@pytest.fixture(scope="module")
def accepted_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace whose root accepted orders 1.0.0 (made once; tests copy it)."""
    workspace = make_workspace(tmp_path_factory.mktemp("accepted"))
    with RootHive.open(workspace) as root:
        root.register_hive("backend", kind="backend")
        root.register_hive("web", kind="ui")
        assert root.propose("backend", orders_files("1.0.0")).status == "accepted"
    return workspace


@pytest.fixture
def workspace(accepted_template: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "shop"
    shutil.copytree(accepted_template, copy)
    (copy / ".subhive" / "root" / "engine.lock").unlink(missing_ok=True)
    return copy


def _accepted(workspace: Path) -> str:
    return str(json.loads((workspace / LOCK_FILE).read_text())["entries"][0]["hash"])


def _edit_lock_hash(workspace: Path, new_hash: str) -> bytes:
    """Put ``new_hash`` in the lock's one entry, the way a person with an editor would; return the new bytes."""
    path = workspace / LOCK_FILE
    text = path.read_text().replace(_accepted(workspace), new_hash)
    path.write_text(text)
    return text.encode()


def _edit_accepted_files(workspace: Path) -> None:
    (workspace / "contracts" / "orders" / "1.0.0" / "in.json").write_text('{"type": "object"}')


def test_an_untouched_workspace_is_consistent(workspace: Path) -> None:
    with RootHive.open(workspace) as root:
        assert check_lock(workspace, accepted={(e.name, e.version): e.hash for e in root.lock}) == []
    assert check_lock(workspace) == []


def test_an_edited_hash_is_told_apart_from_edited_files_and_names_both_hashes(workspace: Path) -> None:
    real = _accepted(workspace)
    forged = "sha256:" + "ab" * 32
    _edit_lock_hash(workspace, forged)
    [problem] = check_lock(workspace, accepted={("orders", V1): real})
    assert problem.code == "lock.hash_edited"
    assert (problem.location.file, problem.location.line) == (str(workspace / LOCK_FILE), 3)
    assert "orders@1.0.0" in problem.message
    assert forged[:19] in problem.message
    assert real[:19] in problem.message
    assert problem.hint is not None
    assert real in problem.hint
    assert "git checkout -- contracts.lock" in problem.hint
    # Without the root's record it cannot tell which side changed, and says both fixes.
    [alone] = check_lock(workspace)
    assert alone.code == "lock.tampered"
    assert alone.hint is not None
    assert "contracts/orders/1.0.0" in alone.hint
    assert LOCK_FILE in alone.hint


def test_files_edited_in_place_are_tampered_with_the_directory_and_the_fix(workspace: Path) -> None:
    real = _accepted(workspace)
    _edit_accepted_files(workspace)
    [problem] = check_lock(workspace, accepted={("orders", V1): real})
    assert problem.code == "lock.tampered"
    assert problem.location.file == str(workspace / "contracts" / "orders" / "1.0.0")
    assert f"expects {real[:19]}" in problem.message
    assert problem.hint is not None
    assert "git checkout -- contracts/orders/1.0.0" in problem.hint
    assert "propose a new version" in problem.hint


def test_files_and_hash_edited_alike_are_caught_by_the_roots_record(workspace: Path) -> None:
    from subhive.root_hive import contract_hash

    real = _accepted(workspace)
    _edit_accepted_files(workspace)
    _edit_lock_hash(workspace, contract_hash(workspace / "contracts" / "orders" / "1.0.0"))
    assert check_lock(workspace) == []  # the files and the lock agree: only the root remembers
    [problem] = check_lock(workspace, accepted={("orders", V1): real})
    assert problem.code == "lock.tampered"
    assert real[:19] in problem.message


def test_only_the_named_contracts_are_checked(workspace: Path) -> None:
    _edit_accepted_files(workspace)
    assert check_lock(workspace, names={"inventory"}) == []
    assert [p.code for p in check_lock(workspace, names={"orders"})] == ["lock.tampered"]


def test_a_gone_directory_and_a_malformed_lock_are_reported_not_raised(workspace: Path) -> None:
    shutil.rmtree(workspace / "contracts" / "orders" / "1.0.0")
    assert [p.code for p in check_lock(workspace)] == ["lock.missing"]
    (workspace / LOCK_FILE).write_text('{"format": 1, "entries": [{"name": "orders"}]}')
    [problem] = check_lock(workspace)
    assert (problem.code, problem.location.pointer) == ("lock.invalid", "/entries/0")
    (workspace / LOCK_FILE).write_text("{not json")
    [problem] = check_lock(workspace)
    assert (problem.code, problem.location.file) == ("input.json", str(workspace / LOCK_FILE))


def test_opening_the_engine_leaves_an_edited_hash_in_place_and_refuses_proposals(workspace: Path) -> None:
    edited = _edit_lock_hash(workspace, "sha256:" + "cd" * 32)
    with RootHive.open(workspace) as root:
        assert (workspace / LOCK_FILE).read_bytes() == edited  # not rewritten quietly at open
        with pytest.raises(LockInconsistent) as info:
            root.propose("backend", orders_files("1.1.0", note=True))
        assert info.value.exit_code == 2
        assert [p.code for p in info.value.problems] == ["lock.hash_edited"]
        # Nor by a later change that rewrites the lock (a requirement moves a consumer onto the version).
        root.declare_requirement("web", "orders", "^1.0")
        root.settle()
    assert (workspace / LOCK_FILE).read_bytes() == edited
    assert not (workspace / "contracts" / "orders" / "1.1.0").exists()


def test_a_hash_edited_while_the_root_runs_holds_the_lock_back_until_it_is_restored(workspace: Path) -> None:
    with RootHive.open(workspace) as root:
        root.write_files_in_background()  # as the service runs it
        original = (workspace / LOCK_FILE).read_bytes()
        edited = _edit_lock_hash(workspace, "sha256:" + "ef" * 32)
        root.declare_requirement("web", "orders", "^1.0")  # dirties the lock
        root.settle()
        assert (workspace / LOCK_FILE).read_bytes() == edited
        with pytest.raises(LockInconsistent):
            root.propose("backend", orders_files("1.1.0", note=True))
        (workspace / LOCK_FILE).write_bytes(original)  # the fix the problem names: restore the lock
        assert root.propose("backend", orders_files("1.1.0", note=True)).status == "accepted"
        root.settle()
    versions = [e["version"] for e in json.loads((workspace / LOCK_FILE).read_text())["entries"]]
    assert versions == ["1.0.0", "1.1.0"]
    assert check_lock(workspace) == []


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(digits=st.text(alphabet="0123456789abcdef", min_size=64, max_size=64))
def test_any_other_hash_in_the_lock_is_reported_as_edited_with_the_accepted_one(workspace: Path, digits: str) -> None:
    real = _accepted(workspace)
    forged = "sha256:" + digits
    path = workspace / LOCK_FILE
    before = path.read_text()
    try:
        _edit_lock_hash(workspace, forged)
        problems = check_lock(workspace, accepted={("orders", V1): real})
        if forged == real:
            assert problems == []
        else:
            assert [p.code for p in problems] == ["lock.hash_edited"]
            assert problems[0].hint is not None
            assert real in problems[0].hint
    finally:
        path.write_text(before)


def test_a_rewrite_held_back_is_written_once_the_lock_is_restored(workspace: Path) -> None:
    with RootHive.open(workspace) as root:
        root.write_files_in_background()
        original = (workspace / LOCK_FILE).read_bytes()
        _edit_lock_hash(workspace, "sha256:" + "12" * 32)
        root.declare_requirement("web", "orders", "^1.0")  # web now consumes 1.0.0: the lock should say so
        root.settle()
        assert b'"web"' not in (workspace / LOCK_FILE).read_bytes()  # held back, not written over the edit
        (workspace / LOCK_FILE).write_bytes(original)
        outcome = root.propose("backend", orders_files("1.0.0", description="Other."))  # refused, but it looks
        assert outcome.status == "rejected"
        root.settle()
    [entry] = json.loads((workspace / LOCK_FILE).read_text())["entries"]
    assert entry["consumers"] == {"web": "^1.0"}
    assert check_lock(workspace) == []


def _edit_lock_entries(workspace: Path, edit: Callable[[list[dict[str, Any]]], None]) -> bytes:
    """Change the lock's list of entries as a person with an editor would; return the new bytes."""
    path = workspace / LOCK_FILE
    document = json.loads(path.read_text())
    edit(document["entries"])
    path.write_text(json.dumps(document, indent=2) + "\n")
    return path.read_bytes()


def _add_version(entries: list[dict[str, Any]]) -> None:
    entries.append({**entries[0], "version": "1.5.0"})


@pytest.mark.parametrize(
    ("edit", "code", "named"),
    [
        (_add_version, "lock.entry_added", "orders@1.5.0"),
        (lambda entries: entries.clear(), "lock.entry_removed", "orders@1.0.0"),
    ],
)
def test_an_entry_added_or_removed_by_hand_is_reported_and_never_written_over(
    workspace: Path, edit: Callable[[list[dict[str, Any]]], None], code: str, named: str
) -> None:
    with RootHive.open(workspace) as root:
        root.write_files_in_background()  # as the service runs it
        original = (workspace / LOCK_FILE).read_bytes()
        edited = _edit_lock_entries(workspace, edit)
        with pytest.raises(LockInconsistent) as info:
            root.propose("backend", orders_files("1.1.0", note=True))
        [problem] = info.value.problems
        assert problem.code == code
        assert named in problem.message
        assert problem.hint is not None
        assert "git checkout -- contracts.lock" in problem.hint
        root.declare_requirement("web", "orders", "^1.0")  # dirties the lock: the rewrite is held back
        root.settle()
        assert (workspace / LOCK_FILE).read_bytes() == edited
        (workspace / LOCK_FILE).write_bytes(original)  # the fix the problem names
        assert root.propose("backend", orders_files("1.1.0", note=True)).status == "accepted"
        root.settle()
    entries = json.loads((workspace / LOCK_FILE).read_text())["entries"]
    assert [e["version"] for e in entries] == ["1.0.0", "1.1.0"]  # a new version is no removal: it is written
    assert entries[1]["consumers"] == {"web": "^1.0"}  # and so is what was held back (web, now on 1.1.0)
