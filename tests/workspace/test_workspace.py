"""Workspaces: finding the root, reading hive.toml, and checking the tree the sub-hive manifests form."""

from __future__ import annotations

from pathlib import Path

import pytest

from subhive.errors import InputError
from subhive.workspace import (
    Kind,
    ManifestInvalid,
    SubhiveManifest,
    WorkspaceConfig,
    find_root,
    open_workspace,
    read_config,
)

HIVE_TOML = '[workspace]\nname = "shop"\nformat = 1\n'


def make_workspace(root: Path, text: str = HIVE_TOML) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "hive.toml").write_text(text, encoding="utf-8")
    return root


def add_hive(
    root: Path,
    name: str,
    kind: Kind = Kind.custom,
    parent: str = "root",
    *,
    provides: tuple[str, ...] = (),
    directory: str | None = None,
) -> None:
    manifest = SubhiveManifest(name=name, kind=kind, parent=parent, provides=provides)
    path = root / "subhives" / (directory or name) / "subhive.toml"
    path.parent.mkdir(parents=True)
    path.write_text(manifest.to_toml(), encoding="utf-8")


def test_the_root_is_the_nearest_hive_toml_above(tmp_path: Path) -> None:
    outer = make_workspace(tmp_path / "outer")
    inner = make_workspace(outer / "examples" / "inner")
    deep = inner / "subhives" / "db" / "db_hive"
    deep.mkdir(parents=True)
    assert find_root(deep) == inner
    assert find_root(outer / "examples") == outer
    assert find_root(outer) == outer


def test_outside_a_workspace_the_error_names_the_directory_and_says_run_init(tmp_path: Path) -> None:
    where = tmp_path / "project" / "src"
    where.mkdir(parents=True)
    with pytest.raises(InputError) as caught:
        find_root(where)
    error = caught.value
    assert error.code == "workspace.not_found"
    assert str(where) in error.message
    assert error.hint is not None
    assert "subhive init" in error.hint


def test_a_start_that_does_not_exist_is_not_searched_from_its_parents(tmp_path: Path) -> None:
    root = make_workspace(tmp_path / "shop")
    with pytest.raises(InputError) as caught:
        find_root(root / "typo")
    assert caught.value.code == "input.not_found"
    assert str(root / "typo") in caught.value.message


def test_a_directory_named_hive_toml_does_not_make_a_workspace(tmp_path: Path) -> None:
    (tmp_path / "hive.toml").mkdir()
    with pytest.raises(InputError, match="not inside a subhive workspace"):
        find_root(tmp_path)


def test_hive_toml_reads_back_what_was_written(tmp_path: Path) -> None:
    config = WorkspaceConfig("my-shop", description='A "shop"\nwith two lines')
    make_workspace(tmp_path, config.to_toml())
    assert read_config(tmp_path / "hive.toml") == config
    workspace = open_workspace(tmp_path)
    assert (workspace.root, workspace.config.name) == (tmp_path, "my-shop")
    assert workspace.hives_dir == tmp_path / "subhives"
    assert workspace.state_dir == tmp_path / ".subhive"


@pytest.mark.parametrize(
    ("text", "code", "line"),
    [
        ('[workspace]\nname = "Shop"\n', "workspace.name_invalid", 2),
        ('[workspace]\nname = "shop"\nformat = 2\n', "workspace.format", 3),
        ('[workspace]\nname = "shop"\nformat = "1"\n', "workspace.format", 3),
        ('[workspace]\nname = "shop"\nnmae = "x"\n', "workspace.unknown_key", 3),
        ('[workspace]\nname = "shop"\n[cluster]\nnodes = 3\n', "workspace.unknown_key", 3),
        ('[workspace]\nname = "shop"\n[nats]\nurl = "x"\n', "workspace.unknown_key", 4),
        ('[workspace]\nname = "shop"\n[nats]\nnodes = 2\n', "workspace.nats_nodes", 4),
        ('[workspace]\nname = "shop"\n[nats]\nsync = "never"\n', "workspace.nats_sync", 4),
        ('[workspace]\nname = "shop"\n[nats]\nfailover = -1\n', "workspace.nats_failover", 4),
        ('[workspace]\nname = "shop"\n[nats]\nfailover = 200\n', "workspace.nats_failover", 4),  # past dedupe
        ('name = "shop"\n', "workspace.unknown_key", 1),
        ("[workspace]\nformat = 1\n", "workspace.missing_key", 1),
    ],
)
def test_hive_toml_mistakes_are_located(tmp_path: Path, text: str, code: str, line: int) -> None:
    make_workspace(tmp_path, text)
    with pytest.raises(ManifestInvalid) as caught:
        open_workspace(tmp_path)
    first = caught.value.problems[0]
    assert (first.code, first.location.line) == (code, line)
    assert first.location.file == str(tmp_path / "hive.toml")


def test_a_newer_format_says_to_upgrade(tmp_path: Path) -> None:
    make_workspace(tmp_path, '[workspace]\nname = "shop"\nformat = 2\n')
    with pytest.raises(ManifestInvalid) as caught:
        read_config(tmp_path / "hive.toml")
    assert caught.value.hint is not None
    assert "upgrade subhive" in caught.value.hint


def test_broken_toml_in_hive_toml_names_file_and_line(tmp_path: Path) -> None:
    make_workspace(tmp_path, '[workspace]\nname = "shop\n')
    with pytest.raises(InputError) as caught:
        open_workspace(tmp_path)
    assert (caught.value.code, caught.value.location.line) == ("input.toml", 2)


def test_the_tree_of_valid_hives(tmp_path: Path) -> None:
    root = make_workspace(tmp_path)
    add_hive(root, "store", Kind.db, provides=("store_storage",))
    add_hive(root, "shop", Kind.custom)
    add_hive(root, "api", Kind.backend, parent="shop", provides=("api_api",))
    add_hive(root, "web", Kind.ui, parent="shop")
    tree = open_workspace(root).hives()
    assert tree.problems == ()
    assert sorted(tree.hives) == ["api", "shop", "store", "web"]
    assert tree.children("root") == ["shop", "store"]
    assert tree.children("shop") == ["api", "web"]
    assert tree.providers() == {"store_storage": "store", "api_api": "api"}


def test_tree_problems_land_on_the_hives_concerned(tmp_path: Path) -> None:
    root = make_workspace(tmp_path)
    add_hive(root, "a", parent="b")
    add_hive(root, "b", parent="a")  # a loop: a -> b -> a
    add_hive(root, "c", parent="a")  # below the loop, not in it
    add_hive(root, "orphan", parent="gone")
    add_hive(root, "p1", provides=("orders",))
    add_hive(root, "p2", provides=("orders",))
    add_hive(root, "named", directory="elsewhere")
    (root / "subhives" / "empty").mkdir()
    (root / "subhives" / ".subhive-tmp-0a1b").mkdir()  # staging directories are not hives
    tree = open_workspace(root).hives()
    codes = {name: [p.code for p in problems] for name, problems in tree.problems_by_hive.items()}
    assert codes == {
        "a": ["hive.parent_cycle"],
        "b": ["hive.parent_cycle"],
        "c": ["hive.parent_invalid"],
        "orphan": ["hive.parent_unknown"],
        "p2": ["hive.provides_conflict"],
        "elsewhere": ["hive.name_mismatch"],
        "empty": ["hive.no_manifest"],
    }
    assert sorted(tree.hives) == ["p1"]
    assert tree.directories == {"a", "b", "c", "orphan", "p1", "p2", "elsewhere", "empty"}
    assert len(tree.problems) == 7
    cycle = tree.problems_by_hive["a"][0]
    assert (cycle.location.file, cycle.location.line, cycle.location.pointer) == (
        str(root / "subhives" / "a" / "subhive.toml"),
        5,
        "/parent",
    )
