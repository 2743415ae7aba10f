"""`init` and `new` as a library: what they write, that what they write is valid and runs, and that
every refusal or failure leaves the tree byte for byte as it was.

What a kind provides and consumes comes from the table in docs/workspace.md; validity is judged by the
real checkers (manifest loader, `subhive.contract.lint_paths`, ruff) and by running the generated tests
with a real pytest process.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path, PurePosixPath

import pytest

from subhive.contract import lint_paths
from subhive.errors import InputError
from subhive.workspace import (
    FileAction,
    Kind,
    ManifestInvalid,
    Plan,
    PlannedFile,
    Workspace,
    apply_plan,
    init_workspace,
    load_manifest,
    new_subhive,
    open_workspace,
    plan_init,
    plan_new,
    read_config,
)
from tests.workspace._helpers import snapshot

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    """A fresh, empty workspace made by `init`."""
    init_workspace(tmp_path / "shop")
    return open_workspace(tmp_path / "shop")


def run_pytest(directory: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=directory,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


# --- init ---------------------------------------------------------------------------------------------------


def test_init_makes_every_part_of_a_workspace(tmp_path: Path) -> None:
    root = tmp_path / "My Shop"
    plan = init_workspace(root)
    assert {str(f.path) for f in plan.files} == {
        "hive.toml",
        ".gitignore",
        "contracts/README.md",
        "subhives/README.md",
        "stubs/README.md",
    }
    assert read_config(root / "hive.toml").name == "my-shop"  # derived from the directory name
    for sub in ("contracts", "subhives", "stubs"):
        assert (root / sub).is_dir()
    assert ".subhive/" in (root / ".gitignore").read_text().splitlines()
    assert not (root / ".subhive").exists()  # runtime state is made when something runs
    assert open_workspace(root / "subhives").root == root
    assert [p.name for p in root.iterdir() if p.name.startswith(".subhive-tmp")] == []


def test_init_writes_hive_toml_last(tmp_path: Path) -> None:
    # hive.toml marks a complete workspace, so it is the last thing written.
    assert plan_init(tmp_path / "shop").files[-1].path == PurePosixPath("hive.toml")


def test_init_refuses_an_existing_workspace_and_changes_nothing(tmp_path: Path) -> None:
    init_workspace(tmp_path / "shop")
    (tmp_path / "shop" / "contracts" / "mine.txt").write_text("keep me")
    before = snapshot(tmp_path)
    with pytest.raises(InputError) as caught:
        init_workspace(tmp_path / "shop")
    assert caught.value.code == "workspace.exists"
    assert snapshot(tmp_path) == before


def test_init_in_an_existing_project_keeps_what_is_there(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "contracts" / "orders").mkdir(parents=True)
    (project / "contracts" / "orders" / "notes.md").write_text("mine")
    (project / ".gitignore").write_text("node_modules/\n*.log")  # no final newline
    plan = init_workspace(project, name="shop")
    assert {str(f.path): f.action for f in plan.files} == {
        "subhives/README.md": FileAction.create,
        "stubs/README.md": FileAction.create,
        ".gitignore": FileAction.update,
        "hive.toml": FileAction.create,
    }
    assert (project / "contracts" / "orders" / "notes.md").read_text() == "mine"
    assert not (project / "contracts" / "README.md").exists()
    lines = (project / ".gitignore").read_text().splitlines()
    assert lines[:2] == ["node_modules/", "*.log"]
    assert lines[-1] == ".subhive/"


def test_init_does_not_repeat_an_existing_ignore_rule(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("/.subhive\n")
    plan = init_workspace(tmp_path, name="shop")
    assert ".gitignore" not in {str(f.path) for f in plan.files}
    assert (tmp_path / ".gitignore").read_text() == "/.subhive\n"


@pytest.mark.parametrize(
    ("setup", "code"),
    [
        ("file_in_the_way", "workspace.not_a_directory"),
        ("target_is_a_file", "workspace.not_a_directory"),
        ("bad_name", "workspace.name_invalid"),
    ],
)
def test_init_refusals_change_nothing(tmp_path: Path, setup: str, code: str) -> None:
    target = tmp_path / "shop"
    name = None
    if setup == "file_in_the_way":
        target.mkdir()
        (target / "stubs").write_text("a file where a directory should be")
    elif setup == "target_is_a_file":
        target.write_text("x")
    else:
        name = "Shop!"
    before = snapshot(tmp_path)
    with pytest.raises(InputError) as caught:
        init_workspace(target, name=name)
    assert caught.value.code == code
    assert snapshot(tmp_path) == before


def test_init_needs_a_name_when_the_directory_has_none_to_give(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        plan_init(tmp_path / "123")
    assert caught.value.code == "workspace.name_invalid"
    assert caught.value.hint is not None
    assert "--name" in caught.value.hint


# --- new: each kind -------------------------------------------------------------------------------------

#: kind -> (contract it provides, contracts it consumes in an otherwise empty workspace), per docs/workspace.md.
EXPECTED = {
    Kind.db: (("store_storage",), []),
    Kind.backend: (("store_api",), ["db_storage"]),
    Kind.ui: ((), ["backend_api"]),
    Kind.custom: ((), []),
}


@pytest.mark.parametrize("kind", list(Kind))
def test_new_scaffolds_a_valid_hive_whose_test_passes(workspace: Workspace, kind: Kind) -> None:
    plan = new_subhive("store", kind, start=workspace.root / "subhives")  # found by walking up
    hive = workspace.root / "subhives" / "store"
    manifest = load_manifest(hive / "subhive.toml")
    provides, consumes = EXPECTED[kind]
    assert (manifest.name, manifest.kind, manifest.parent) == ("store", kind, "root")
    assert manifest.provides == provides
    assert [r.contract for r in manifest.consumes] == consumes
    assert all(r.versions.text == "^0.1" for r in manifest.consumes)
    assert (hive / manifest.blackboard_schema).is_file()
    assert manifest.knowledge_sources == "store_hive.knowledge:SOURCES"
    assert (hive / "store_hive" / "knowledge.py").is_file()
    assert open_workspace(workspace.root).hives().problems == ()
    # The plan lists exactly what was written.
    written = {str(p.relative_to(workspace.root)) for p in workspace.root.rglob("*") if p.is_file()}
    assert {str(f.path) for f in plan.files} <= written

    contracts = [workspace.root / "contracts" / c for c in provides]
    if contracts:
        result = lint_paths(contracts)
        assert result.problems == ()
        assert [(c.name, str(c.version), c.provider) for c in result.contracts] == [(provides[0], "0.1.0", "store")]
    else:
        assert sorted(p.name for p in (workspace.root / "contracts").iterdir()) == ["README.md"]

    proc = run_pytest(hive)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "5 passed" in proc.stdout


def test_the_storage_draft_serves_put_get_delete(workspace: Workspace) -> None:
    new_subhive("db", Kind.db, start=workspace.root)
    (contract,) = lint_paths([workspace.root / "contracts" / "db_storage" / "0.1.0"]).contracts
    assert sorted(contract.operations) == ["delete_record", "get_record", "put_record"]
    put = contract.operations["put_record"].input.schema
    assert isinstance(put, dict)
    assert put["required"] == ["collection", "id", "data"]


def test_generated_code_passes_ruff_with_the_project_rules(workspace: Workspace) -> None:
    for name, kind in (("web", Kind.ui), ("db", Kind.db)):
        new_subhive(name, kind, start=workspace.root)
    # From the workspace, as its owner would run it: there `subhive` is a third-party import.
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--config", str(REPO / "pyproject.toml"), "subhives"],
        cwd=workspace.root,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_children_sit_side_by_side_and_consume_their_siblings(workspace: Workspace) -> None:
    new_subhive("shop", Kind.custom, start=workspace.root)
    new_subhive("api", Kind.backend, start=workspace.root, parent="shop")
    new_subhive("other_api", Kind.backend, start=workspace.root)  # a backend elsewhere in the tree
    new_subhive("web", Kind.ui, start=workspace.root, parent="shop")
    web = load_manifest(workspace.root / "subhives" / "web")
    assert web.parent == "shop"
    assert [r.contract for r in web.consumes] == ["api_api"]  # its sibling's contract only
    tree = open_workspace(workspace.root).hives()
    assert tree.problems == ()
    assert tree.children("shop") == ["api", "web"]
    assert not (workspace.root / "subhives" / "shop" / "subhives").exists()  # flat, not nested
    # Every hive's tests pass together too, from the workspace root: no module names collide.
    proc = run_pytest(workspace.root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "20 passed" in proc.stdout


def test_no_contract_keeps_the_provides_entry_without_a_draft(workspace: Workspace) -> None:
    (workspace.root / "contracts" / "db_storage" / "1.0.0").mkdir(parents=True)
    plan = new_subhive("db", Kind.db, start=workspace.root, contract=False)
    assert all(not str(f.path).startswith("contracts/") for f in plan.files)
    assert load_manifest(workspace.root / "subhives" / "db").provides == ("db_storage",)


# --- new: refusals touch nothing --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "kind", "parent", "code"),
    [
        ("Bad-Name", Kind.db, "root", "hive.name_invalid"),
        ("root", Kind.db, "root", "hive.name_reserved"),
        ("class", Kind.ui, "root", "hive.name_keyword"),
        ("db", Kind.db, "root", "hive.exists"),
        ("web", Kind.ui, "nowhere", "hive.parent_unknown"),
        ("web", Kind.ui, "Not Valid", "hive.name_invalid"),
        ("web", "frontend", "root", "hive.kind_unknown"),
        ("stock", Kind.db, "root", "scaffold.conflict"),  # contracts/stock_storage exists already
    ],
)
def test_new_refusals_change_nothing(workspace: Workspace, name: str, kind: Kind | str, parent: str, code: str) -> None:
    new_subhive("db", Kind.db, start=workspace.root)
    (workspace.root / "contracts" / "stock_storage" / "0.1.0").mkdir(parents=True)
    before = snapshot(workspace.root)
    with pytest.raises(InputError) as caught:
        new_subhive(name, kind, start=workspace.root, parent=parent)
    assert caught.value.code == code
    assert caught.value.hint
    assert snapshot(workspace.root) == before


def test_an_existing_directory_without_a_manifest_is_taken(workspace: Workspace) -> None:
    (workspace.root / "subhives" / "db").mkdir()
    before = snapshot(workspace.root)
    with pytest.raises(InputError, match="already exists"):
        new_subhive("db", Kind.db, start=workspace.root)
    assert snapshot(workspace.root) == before


def test_a_parent_with_a_broken_manifest_is_reported_not_guessed(workspace: Workspace) -> None:
    new_subhive("shop", Kind.custom, start=workspace.root)
    manifest = workspace.root / "subhives" / "shop" / "subhive.toml"
    manifest.write_text(manifest.read_text().replace('kind = "custom"', 'kind = "shop"'))
    before = snapshot(workspace.root)
    with pytest.raises(ManifestInvalid) as caught:
        new_subhive("web", Kind.ui, start=workspace.root, parent="shop")
    assert [p.code for p in caught.value.problems] == ["hive.parent_invalid", "hive.kind_unknown"]
    assert caught.value.problems[1].location.file == str(manifest)
    assert snapshot(workspace.root) == before


def test_an_unknown_parent_gets_a_did_you_mean(workspace: Workspace) -> None:
    new_subhive("shop", Kind.custom, start=workspace.root)
    with pytest.raises(InputError) as caught:
        new_subhive("web", Kind.ui, start=workspace.root, parent="shoop")
    assert caught.value.hint is not None
    assert caught.value.hint.startswith("did you mean 'shop'?")


def test_outside_a_workspace_new_changes_nothing(tmp_path: Path) -> None:
    before = snapshot(tmp_path)
    with pytest.raises(InputError) as caught:
        new_subhive("db", Kind.db, start=tmp_path)
    assert caught.value.code == "workspace.not_found"
    assert str(tmp_path) in caught.value.message
    assert snapshot(tmp_path) == before


# --- plans: dry run and all-or-nothing --------------------------------------------------------------------


def test_a_plan_writes_nothing_until_applied_and_then_exactly_itself(workspace: Workspace) -> None:
    before = snapshot(workspace.root)
    plan = plan_new(workspace, "db", Kind.db)
    assert snapshot(workspace.root) == before
    assert [str(f.path) for f in plan.files][:2] == [
        "contracts/db_storage/0.1.0/contract.yaml",
        "contracts/db_storage/0.1.0/schemas.json",
    ]
    assert plan.files[-1].path == PurePosixPath("subhives/db/subhive.toml")
    apply_plan(plan)
    after = snapshot(workspace.root)
    added = {k: v for k, v in after.items() if k not in before}
    files = {k: v for k, v in added.items() if isinstance(v, bytes)}
    assert files == {str(f.path): f.content.encode() for f in plan.files}


def test_a_conflict_found_while_applying_writes_nothing(workspace: Workspace) -> None:
    plan = plan_new(workspace, "db", Kind.db)
    (workspace.root / "subhives" / "db").mkdir()  # someone else was faster
    before = snapshot(workspace.root)
    with pytest.raises(InputError) as caught:
        apply_plan(plan)
    assert caught.value.code == "scaffold.conflict"
    assert snapshot(workspace.root) == before  # the contract draft, planned first, was not written either


def test_a_failure_half_way_undoes_the_steps_already_done(tmp_path: Path) -> None:
    (tmp_path / "kept.txt").write_text("old")
    (tmp_path / "existing").mkdir()
    before = snapshot(tmp_path)
    plan = Plan(
        tmp_path,
        "test plan",
        (
            PlannedFile(PurePosixPath("new/a.txt"), "a"),  # a new tree
            PlannedFile(PurePosixPath("existing/b.txt"), "b"),  # a new file
            PlannedFile(PurePosixPath("kept.txt"), "new", FileAction.update, "old"),  # an update
            PlannedFile(PurePosixPath("later/" + "x" * 300), "too long a name"),  # the file system says no
        ),
    )
    with pytest.raises(InputError) as caught:
        apply_plan(plan)
    assert caught.value.code == "scaffold.write_failed"
    assert snapshot(tmp_path) == before


def test_an_update_refuses_a_file_that_changed_since_planning(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("a\n")
    plan = plan_init(tmp_path, name="shop")
    (tmp_path / ".gitignore").write_text("a\nb\n")
    before = snapshot(tmp_path)
    with pytest.raises(InputError) as caught:
        apply_plan(plan)
    assert caught.value.code == "scaffold.conflict"
    assert snapshot(tmp_path) == before


def test_new_files_keep_the_usual_permissions(workspace: Workspace) -> None:
    new_subhive("db", Kind.db, start=workspace.root)
    hive = workspace.root / "subhives" / "db"
    assert hive.stat().st_mode & 0o777 == (workspace.root / "subhives").stat().st_mode & 0o777
    assert (hive / "subhive.toml").stat().st_mode & 0o777 == (workspace.root / "hive.toml").stat().st_mode & 0o777
