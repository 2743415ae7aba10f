"""What the tree and its lock say together: an accepted version edited in place (caught by ``codegen --check``,
``codegen`` and ``contract check`` even when the stubs are up to date), and an event a consumer waits for on
a major its provider never publishes on (``event.no_publisher``, naming both hives and the fix)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from subhive.cli import main
from subhive.codegen import check_tree
from subhive.root_hive import RootHive
from subhive.root_hive._client import contract_files
from subhive.workspace import open_workspace
from tests.kit import copy_example


def _mtimes(root: Path) -> dict[Path, int]:
    return {p: p.stat().st_mtime_ns for p in (root / "stubs").rglob("*") if p.is_file()}


def test_an_accepted_version_edited_in_place_is_caught_although_the_stubs_are_up_to_date(
    shop: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["codegen", "--check", "-C", str(shop)]) == 0
    capsys.readouterr()
    before = _mtimes(shop)
    schema = shop / "contracts" / "orders" / "1.1.0" / "schemas.json"
    schema.write_text(schema.read_text().replace('"Order"', '"Order" '))  # same meaning, other bytes

    assert main(["codegen", "--check", "-C", str(shop), "--format", "json"]) == 2
    problems = json.loads(capsys.readouterr().out)["problems"]
    assert [(p["code"], p["file"].endswith("contracts/orders/1.1.0")) for p in problems] == [("lock.tampered", True)]
    assert "git checkout" in problems[0]["hint"]

    assert main(["codegen", "-C", str(shop)]) == 2  # a run refuses too, and leaves every stub as it was
    assert "lock.tampered" in capsys.readouterr().err
    assert _mtimes(shop) == before

    assert main(["contract", "check", "-C", str(shop), "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False
    assert [p["code"] for p in report["problems"]] == ["lock.tampered"]


def test_an_untouched_tree_checks_clean(shop: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert check_tree(open_workspace(shop)) == []
    assert main(["contract", "check", "-C", str(shop)]) == 0
    assert "the tree and its lock agree" in capsys.readouterr().err


@pytest.fixture
def notes_on_two_majors(tmp_path: Path) -> Path:
    """examples/notes with notes_api 1.0.0 and 2.0.0 accepted (2.0.0 approved) and the ui moved to ^2."""
    root = copy_example("notes", tmp_path, accepted=False)
    shutil.copytree(root / "changes" / "notes_api" / "2.0.0", root / "contracts" / "notes_api" / "2.0.0")
    engine = RootHive.open(root)
    try:
        for contract, version in (("notes_store", "1.0.0"), ("notes_api", "1.0.0"), ("notes_api", "2.0.0")):
            provider = "db" if contract == "notes_store" else "backend"
            outcome = engine.propose(provider, contract_files(root / "contracts" / contract / version))
            if outcome.status == "pending":
                outcome = engine.approve(outcome.id, admin_token=engine.admin_token())
            assert outcome.status == "accepted", (contract, version, outcome.message)
    finally:
        engine.close()
    manifest = root / "subhives" / "ui" / "subhive.toml"
    manifest.write_text(manifest.read_text().replace('notes_api = "^1"', 'notes_api = "^2"'))
    RootHive.open(root).close()  # the root registers the ui's new range
    # ... and its code imports the 2.x stubs: importing notes_api_v1 would be codegen.unknown_package.
    ui = root / "subhives" / "ui" / "ui_hive" / "knowledge.py"
    ui.write_text(ui.read_text().replace("stubs.ui.notes_api_v1", "stubs.ui.notes_api_v2"))
    return root


def test_code_that_imports_a_package_the_hive_no_longer_gets_is_told_which_it_gets(notes_on_two_majors: Path) -> None:
    ui = notes_on_two_majors / "subhives" / "ui" / "ui_hive" / "knowledge.py"
    ui.write_text(ui.read_text().replace("stubs.ui.notes_api_v2", "stubs.ui.notes_api_v1"))
    problems = [p for p in check_tree(open_workspace(notes_on_two_majors)) if p.code == "codegen.unknown_package"]
    assert [(p.location.file, p.message.split(":")[0]) for p in problems] == [
        (str(ui), "ui imports stubs.ui.notes_api_v1, a stub package codegen does not write for it")
    ]
    assert "ui's stub packages are notes_api_v2" in (problems[0].hint or "")


def test_a_consumer_on_a_major_its_provider_never_publishes_on_is_told_with_both_hives_and_the_fix(
    notes_on_two_majors: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    problems = check_tree(open_workspace(notes_on_two_majors))
    assert [p.code for p in problems] == ["event.no_publisher"]
    message, hint = problems[0].message, problems[0].hint or ""
    assert "ui consumes notes_api v2" in message
    assert "note_published" in message
    assert "backend's code uses the stubs of notes_api v1 only" in message
    assert "stubs.backend.notes_api_v2" in hint
    assert "NotesApiEvents" in hint

    assert main(["contract", "check", "-C", str(notes_on_two_majors)]) == 1
    assert "[event.no_publisher]" in capsys.readouterr().err


def test_a_provider_that_publishes_on_both_majors_is_not_reported(notes_on_two_majors: Path) -> None:
    knowledge = notes_on_two_majors / "subhives" / "backend" / "backend_hive" / "knowledge.py"
    knowledge.write_text(knowledge.read_text() + "\nfrom stubs.backend.notes_api_v2 import NotesApiEvents as V2\n")
    assert check_tree(open_workspace(notes_on_two_majors)) == []


def test_a_test_of_the_provider_that_names_the_major_does_not_count_as_publishing(notes_on_two_majors: Path) -> None:
    tests = notes_on_two_majors / "subhives" / "backend" / "tests"
    tests.mkdir(exist_ok=True)
    (tests / "test_v2.py").write_text("from stubs.backend.notes_api_v2 import NotesApiEvents\n")
    assert [p.code for p in check_tree(open_workspace(notes_on_two_majors))] == ["event.no_publisher"]
