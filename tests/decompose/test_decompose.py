"""decompose() end to end on small repositories with known seams."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from subhive.decompose import Budget, DecompositionPlan, Role, decompose
from subhive.errors import InputError
from tests.decompose._fixtures import CLUSTER_A, CLUSTER_B, interleaved_clusters, polyglot_shop, write_tree

SEAMS = ("backend/", "web/", "inventory/", "billing/")


def seam_of(path: str) -> str | None:
    return next((seam for seam in SEAMS if path.startswith(seam)), None)


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    return polyglot_shop(tmp_path / "shop")


def test_the_cut_follows_the_seams_between_languages(shop: Path) -> None:
    plan = decompose(shop, Budget(max_files=6))
    for leaf in plan.leaves():
        assert len({seam_of(p) for p in leaf.files} - {None}) <= 1, leaf.files
        assert len(leaf.files) <= 6
    assert plan.stats.edges_total == 14
    # the only edges cut are inside the Python backend, which is larger than one leaf
    assert {seam_of(a) for c in plan.crossings for a, _ in c.edges} <= {"backend/"}


def test_every_file_is_in_exactly_one_leaf(shop: Path) -> None:
    plan = decompose(shop, Budget(max_files=4))
    listed = [p for leaf in plan.leaves() for p in leaf.files]
    assert len(listed) == len(set(listed)) == plan.stats.files == 24


def test_hives_name_their_role_and_parent(shop: Path) -> None:
    plan = decompose(shop, Budget(max_files=6))
    names = {hive.name for hive in plan.hives}
    for hive in plan.hives:
        assert hive.parent == "root" or hive.parent in names
        if not hive.leaf:
            assert all(plan.hive(child).parent == hive.name for child in hive.children)
    web = next(h for h in plan.leaves() if "web/src/App.tsx" in h.files)
    assert web.role is Role.ui
    go = next(h for h in plan.leaves() if "inventory/cmd/server/main.go" in h.files)
    assert go.role is Role.backend


def test_crossings_are_grouped_by_pair_and_counted(shop: Path) -> None:
    plan = decompose(shop, Budget(max_files=3))
    owner = plan.leaf_of()
    assert plan.stats.edges_cut == sum(len(c.edges) for c in plan.crossings) > 0
    for crossing in plan.crossings:
        assert crossing.consumer != crossing.provider
        for source, target in crossing.edges:
            assert (owner[source], owner[target]) == (crossing.consumer, crossing.provider)
    pairs = [(c.consumer, c.provider) for c in plan.crossings]
    assert pairs == sorted(set(pairs))


def test_communities_find_the_seam_path_order_misses(tmp_path: Path) -> None:
    repo = interleaved_clusters(tmp_path / "clusters")
    graph = decompose(repo, Budget(max_files=4))
    assert sorted(sorted(leaf.files) for leaf in graph.leaves()) == [
        sorted(f"pkg/{n}.py" for n in CLUSTER_A),
        sorted(f"pkg/{n}.py" for n in CLUSTER_B),
    ]
    assert graph.stats.edges_cut == 0
    directory = decompose(repo, Budget(max_files=4), strategy="directory")
    assert directory.stats.edges_cut > 0


def test_the_same_input_gives_the_same_output(shop: Path) -> None:
    first = json.dumps(decompose(shop, Budget(max_files=4)).to_dict())
    second = json.dumps(decompose(shop, Budget(max_files=4)).to_dict())
    assert first == second


def test_bad_files_are_counted_not_fatal(tmp_path: Path) -> None:
    repo = write_tree(
        tmp_path / "repo",
        {
            "ok.py": "import util\n",
            "util.py": "",
            "blob.bin": b"\x00\x01\x02",
            "latin1.py": "caf\xe9 = 1\n".encode("latin-1"),
            "huge.txt": "x" * 5000,
        },
    )
    (repo / "out.py").symlink_to(tmp_path)
    plan = decompose(repo, Budget(max_bytes=4000))
    assert plan.stats.skipped == {"binary": 1, "invalid_encoding": 1, "too_large": 1, "symlink_outside": 1}
    assert [p for leaf in plan.leaves() for p in leaf.files] == ["ok.py", "util.py"]
    assert plan.stats.edges_total == 1


@pytest.mark.parametrize(
    ("setup", "code"),
    [
        (lambda p: p / "missing", "decompose.not_found"),
        (lambda p: write_tree(p, {"file.py": ""}) / "file.py", "decompose.not_a_directory"),
        (lambda p: p, "decompose.empty"),
        (lambda p: write_tree(p, {"a.bin": b"\x00"}), "decompose.empty"),
    ],
)
def test_bad_paths_are_clear_errors(tmp_path: Path, setup: object, code: str) -> None:
    path = setup(tmp_path)  # type: ignore[operator]
    with pytest.raises(InputError) as raised:
        decompose(path)
    assert raised.value.code == code
    assert raised.value.hint


@pytest.mark.parametrize("budget", [{"max_files": 0}, {"max_bytes": -1}, {"max_files": True}])
def test_a_budget_below_one_is_refused(budget: dict[str, int]) -> None:
    with pytest.raises(InputError) as raised:
        Budget(**budget)
    assert raised.value.code == "decompose.budget_invalid"


def test_to_dict_lists_every_leaf_file_and_the_edge_counts(shop: Path) -> None:
    plan: DecompositionPlan = decompose(shop, Budget(max_files=5))
    document = plan.to_dict()
    stats = document["stats"]
    assert isinstance(stats, dict)
    assert stats["edges_total"] == 14
    assert stats["edges_cut"] == plan.stats.edges_cut
    hives = document["hives"]
    assert isinstance(hives, list)
    assert sum(len(h["files"]) for h in hives if h["leaf"]) == 24
    assert all({"name", "parent", "role", "path"} <= set(h) for h in hives)


def test_names_come_from_the_directories_a_maintainer_knows(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {}
    for app in ("billing", "orders"):
        for part in ("api", "models"):
            files.update({f"shop/{app}/{part}/m{n}.py": "" for n in range(3)})
    files.update({f"shop/flat/{name}.py": "" for name in ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot")})
    plan = decompose(write_tree(tmp_path / "shop-repo", files), Budget(max_files=3))
    names = [hive.name for hive in plan.hives]
    assert len(names) == len(set(names))
    owner = plan.leaf_of()
    assert plan.hive(owner["shop/billing/api/m0.py"]).parent == "billing"
    assert (owner["shop/billing/api/m0.py"], owner["shop/orders/api/m0.py"]) == ("api", "orders_api")
    # parts of one flat directory say which stretch of it they hold
    flat = sorted({owner[f"shop/flat/{n}.py"] for n in ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot")})
    assert flat == ["flat_alpha_bravo", "flat_charlie_delta", "flat_echo_foxtrot"]
    again = decompose(write_tree(tmp_path / "shop-repo", files), Budget(max_files=3))
    assert [hive.name for hive in again.hives] == names


def test_reading_reports_how_many_files_were_read(tmp_path: Path) -> None:
    repo = write_tree(tmp_path / "repo", {f"d{n // 100}/m{n}.py": "" for n in range(1200)})
    seen: list[tuple[int, int]] = []
    decompose(repo, Budget(max_files=500), reading=lambda done, total: seen.append((done, total)))
    assert seen == [(500, 1200), (1000, 1200), (1200, 1200)]
