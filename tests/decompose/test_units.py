"""The code's own units: found from paths, and never split by a plan when they fit its budget."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from subhive.decompose import Budget, Graph, Role, Strategy, split
from subhive.decompose._units import atoms, find_units, home_paths, split_units


def test_units_of_each_language_are_found_from_paths() -> None:
    paths = sorted(
        [
            "shop/__init__.py",
            "shop/api/__init__.py",
            "shop/api/views.py",
            "shop/templates/cart.html",
            "web/package.json",
            "web/src/index.ts",
            "svc/handler.go",
            "svc/store.go",
            "svc/sub/x.go",
            "crate/Cargo.toml",
            "crate/src/lib.rs",
            "crate/src/net.rs",
            "crate/src/net/tcp.rs",
            "java/com/shop/Order.java",
            "tests/__init__.py",
            "tests/test_api.py",
        ]
    )
    found = {(u.kind, u.directory): sorted(paths[f] for f in u.files) for u in find_units(paths)}
    assert found[("python", "shop")] == [
        "shop/__init__.py",
        "shop/api/__init__.py",
        "shop/api/views.py",
        "shop/templates/cart.html",
    ]
    assert found[("python", "shop/api")] == ["shop/api/__init__.py", "shop/api/views.py"]
    assert found[("javascript", "web")] == ["web/package.json", "web/src/index.ts"]
    assert found[("go", "svc")] == ["svc/handler.go", "svc/store.go"]  # a Go package: its own directory only
    assert found[("rust_module", "crate/src/net")] == ["crate/src/net.rs", "crate/src/net/tcp.rs"]
    assert len(found[("rust", "crate")]) == 4
    assert found[("java", "java/com/shop")] == ["java/com/shop/Order.java"]
    assert ("python", "tests") not in found  # tests join what they test, never a unit of their own
    assert home_paths(["src/net.rs", "src/net/tcp.rs"]) == ["src/net/net.rs", "src/net/tcp.rs"]


def test_atoms_are_the_outermost_fitting_units() -> None:
    paths = ["a/__init__.py", "a/b/__init__.py", "a/b/x.py", "a/y.py", "z.py"]
    units = find_units(paths)
    assert atoms(units, [1] * 5, max_files=3, max_bytes=100) == [-1, 1, 1, -4, -5]  # a/ is too big, a/b/ fits
    assert atoms(units, [1] * 5, max_files=3, max_bytes=1) == [-1, -2, -3, -4, -5]  # the byte budget binds
    assert atoms(units, [1] * 5, max_files=10, max_bytes=100)[:4] == [0, 0, 0, 0]


_NAMES = st.sampled_from(["a", "b", "c", "api", "tests", "web"])
_MARKERS = st.sampled_from(["__init__.py", "package.json", "m.go", "Cargo.toml", "x.py", "y.ts", "z.md", "K.java"])


@st.composite
def repositories(draw: st.DrawFn) -> tuple[Graph, Budget]:
    directories = draw(st.lists(st.lists(_NAMES, min_size=0, max_size=4).map("/".join), min_size=1, max_size=12))
    paths: set[str] = set()
    for directory in directories:
        for marker in draw(st.lists(_MARKERS, min_size=1, max_size=3)):
            paths.add(f"{directory}/{marker}".lstrip("/"))
        for n in range(draw(st.integers(0, 6))):
            paths.add(f"{directory}/f{n}.py".lstrip("/"))
    ordered = sorted(paths)
    count = len(ordered)
    pairs = draw(st.lists(st.tuples(st.integers(0, count - 1), st.integers(0, count - 1)), max_size=3 * count))
    adjacency: list[dict[int, int]] = [{} for _ in ordered]
    for i, j in pairs:
        if i != j:
            adjacency[i][j] = adjacency[i].get(j, 0) + 1
            adjacency[j][i] = adjacency[j].get(i, 0) + 1
    sizes = draw(st.lists(st.integers(0, 400), min_size=count, max_size=count))
    budget = Budget(max_files=draw(st.integers(1, 15)), max_bytes=draw(st.integers(400, 4000)))
    imports = sorted({(i, j) for i, j in pairs if i != j})  # directions too: refinement must keep track
    return Graph(ordered, sizes, [Role.backend] * count, adjacency, imports), budget


@settings(max_examples=200, deadline=None)
@given(repositories(), st.sampled_from(list(Strategy)))
def test_no_fitting_unit_is_ever_split_every_leaf_fits_and_the_plan_is_stable(
    case: tuple[Graph, Budget], strategy: Strategy
) -> None:
    graph, budget = case
    tree = split(graph, budget, strategy)
    leaf_of = [0] * len(graph.paths)
    for index, leaf in enumerate(tree.leaves()):
        assert leaf.files
        assert len(leaf.files) <= budget.max_files or len(leaf.files) == 1
        assert sum(graph.sizes[f] for f in leaf.files) <= budget.max_bytes or len(leaf.files) == 1
        for f in leaf.files:
            leaf_of[f] = index
    assert sorted(f for leaf in tree.leaves() for f in leaf.files) == list(range(len(graph.paths)))
    broken = split_units(find_units(graph.paths), leaf_of, graph.sizes, budget.max_files, budget.max_bytes)
    assert broken == [], [(u.directory, [graph.paths[f] for f in u.files]) for u in broken]
    again = split(graph, budget, strategy)
    assert [leaf.files for leaf in again.leaves()] == [leaf.files for leaf in tree.leaves()]


def test_a_package_that_fits_stays_whole_though_its_modules_pull_elsewhere() -> None:
    # pkg/ fits (3 files) but each of its modules is heavily coupled to a module of other/; a file-level
    # refinement would tear it apart, units move only whole
    paths = ["other/a.py", "other/b.py", "other/c.py", "pkg/__init__.py", "pkg/x.py", "pkg/y.py"]
    adjacency: list[dict[int, int]] = [{} for _ in paths]
    for i, j in ((0, 4), (1, 5)):
        adjacency[i][j] = adjacency[j][i] = 5
    graph = Graph(paths, [10] * 6, [Role.backend] * 6, adjacency)
    tree = split(graph, Budget(max_files=3))
    leaves = sorted(sorted(graph.paths[f] for f in leaf.files) for leaf in tree.leaves())
    assert ["pkg/__init__.py", "pkg/x.py", "pkg/y.py"] in leaves
