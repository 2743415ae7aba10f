"""The plan says truly where files go (decision 0144): a hive's directory, role and description come from the
files it holds; a unit too big for one leaf that is cut apart is named; production code in a test hive is
said."""

from __future__ import annotations

from pathlib import Path

from subhive.decompose import Budget, DecompositionPlan, Role, decompose, plan_workspace
from subhive.decompose._roles import dominant_role
from tests.decompose._fixtures import polyglot_shop, write_tree


def _go_server(root: Path, files: int) -> Path:
    """One Go package, ``server/``, of ``files`` files using each other (no imports), and a main using it."""
    tree = {
        "go.mod": "module example.com/app\n\ngo 1.22\n",
        "main.go": 'package main\n\nimport "example.com/app/server"\n\nfunc main() { server.Run() }\n',
        **{
            f"server/part{k:02d}.go": f"package server\n\nfunc Part{k}() {{ Part{(k + 1) % files}() }}\n"
            for k in range(files)
        },
        "docs/guide.md": "# guide\n",
    }
    return write_tree(root, tree)


def test_a_go_package_too_big_for_a_leaf_is_named_when_cut_apart(tmp_path: Path) -> None:
    plan = decompose(_go_server(tmp_path / "repo", 9), Budget(max_files=4))
    assert plan.stats.units_split == 0
    assert plan.stats.units_too_big == 1
    warning = next(w for w in plan.warnings if "too big for one leaf" in w)
    assert "Go package server/ (9 files" in warning
    owners = {hive.name for hive in plan.leaves() if any(p.startswith("server/") for p in hive.files)}
    assert f"over {len(owners)} hives" in warning
    assert "use each other without imports: the cut does not count those references" in warning
    assert plan.to_dict()["stats"]["units_too_big"] == 1  # type: ignore[index]


def test_a_go_package_that_fits_is_kept_whole_and_no_warning(tmp_path: Path) -> None:
    plan = decompose(_go_server(tmp_path / "repo", 9), Budget(max_files=12))
    assert plan.stats.units_too_big == 0
    assert not [w for w in plan.warnings if "too big" in w]
    assert len({hive.name for hive in plan.leaves() if any(p.startswith("server/") for p in hive.files)}) == 1


def test_every_hive_counts_its_files_outside_its_directory(tmp_path: Path) -> None:
    for repo, budget in ((polyglot_shop(tmp_path / "shop"), 6), (_go_server(tmp_path / "go", 9), 4)):
        plan = decompose(repo, Budget(max_files=budget))
        leaf_files = {hive.name: list(hive.files) for hive in plan.leaves()}
        for hive in plan.hives:
            files = leaf_files.get(hive.name) or [
                p for leaf in plan.leaves() if _below(plan, leaf.name, hive.name) for p in leaf.files
            ]
            prefix = "" if hive.path == "." else hive.path + "/"
            outside = sum(1 for p in files if not p.startswith(prefix))
            assert hive.outside == outside, hive
            if hive.leaf:
                assert outside * 2 <= len(files), hive  # a leaf sits where most of its files are


def _below(plan: DecompositionPlan, leaf: str, hive: str) -> bool:
    name = leaf
    while name != "root":
        if name == hive:
            return True
        name = plan.hive(name).parent
    return False


def test_a_hive_is_of_tests_only_when_most_of_its_files_are_tests() -> None:
    assert dominant_role({Role.tests: 4, Role.backend: 3, Role.config: 2}) is Role.backend
    assert dominant_role({Role.tests: 5, Role.backend: 3, Role.config: 1}) is Role.tests
    assert dominant_role({Role.tests: 2}) is Role.tests


def test_production_code_in_a_test_hive_is_said(tmp_path: Path) -> None:
    # a Go package of one file and five tests is one unit that fits: kept whole, mostly tests
    tree = {
        "cart/cart.go": "package cart\n\nfunc Total() int { return 1 }\n",
        **{f"cart/cart{k}_test.go": "package cart\n" for k in range(5)},
        "shop/shop.go": 'package shop\n\nimport "example.com/app/cart"\n\nfunc F() { cart.Total() }\n',
        **{f"shop/s{k}.go": "package shop\n" for k in range(5)},
        "go.mod": "module example.com/app\n",
    }
    plan = decompose(write_tree(tmp_path / "repo", tree), Budget(max_files=6))
    leaf = next(hive for hive in plan.leaves() if "cart/cart.go" in hive.files)
    assert leaf.role is Role.tests
    assert f"1 hive(s) of tests also hold files that are not tests: {leaf.name} (1: cart/cart.go)" in plan.warnings


def test_a_written_hive_describes_what_it_holds(tmp_path: Path) -> None:
    plan = decompose(_go_server(tmp_path / "repo", 9), Budget(max_files=4))
    written = plan_workspace(plan, tmp_path / "ws")
    for hive in plan.leaves():
        manifest = next(
            f.content for f in written.files if f.path.name == "subhive.toml" and f.path.parent.name == hive.name
        )
        ranked = sorted(hive.roles.items(), key=lambda item: (-item[1], item[0].value))
        assert f"{ranked[0][1]} {ranked[0][0].value}" in manifest
        assert "mostly" not in manifest
        assert (f"({hive.outside} of them elsewhere)" in manifest) is (hive.outside > 0)
