"""The split on its own: budgets hold, seams are found, small leftovers merge, same input same tree."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from subhive.decompose import Budget, Graph, Role, Strategy, split
from subhive.decompose._split import Node


def graph_of(
    paths: list[str],
    edges: list[tuple[str, str]],
    sizes: dict[str, int] | None = None,
    roles: dict[str, Role] | None = None,
) -> Graph:
    paths = sorted(paths)
    index = {p: i for i, p in enumerate(paths)}
    adjacency: list[dict[int, int]] = [{} for _ in paths]
    for a, b in edges:
        i, j = index[a], index[b]
        adjacency[i][j] = adjacency[i].get(j, 0) + 1
        adjacency[j][i] = adjacency[j].get(i, 0) + 1
    return Graph(
        paths, [(sizes or {}).get(p, 10) for p in paths], [(roles or {}).get(p, Role.backend) for p in paths], adjacency
    )


def leaves(tree: Node, graph: Graph) -> list[list[str]]:
    return sorted(sorted(graph.paths[f] for f in leaf.files) for leaf in tree.leaves())


def cut(tree: Node, graph: Graph) -> int:
    owner = {f: k for k, leaf in enumerate(tree.leaves()) for f in leaf.files}
    return sum(w for i, row in enumerate(graph.adjacency) for j, w in row.items() if i < j and owner[i] != owner[j])


def test_directories_are_the_natural_cut() -> None:
    paths = [f"{d}/{n}.py" for d in ("api", "db", "web") for n in range(3)]
    edges = [(f"{d}/0.py", f"{d}/{n}.py") for d in ("api", "db", "web") for n in (1, 2)]
    graph = graph_of(paths, edges)
    tree = split(graph, Budget(max_files=3))
    assert leaves(tree, graph) == [[f"{d}/{n}.py" for n in range(3)] for d in ("api", "db", "web")]
    assert cut(tree, graph) == 0


def test_loose_files_split_by_communities_where_path_order_would_cut_both_clusters() -> None:
    a, b = ["alpha", "charlie", "echo", "golf"], ["bravo", "delta", "foxtrot", "hotel"]
    edges = [(f"pkg/{x}.py", f"pkg/{y}.py") for cluster in (a, b) for x in cluster for y in cluster if x < y]
    graph = graph_of([f"pkg/{n}.py" for n in a + b], edges)
    tree = split(graph, Budget(max_files=4))
    assert leaves(tree, graph) == [sorted(f"pkg/{n}.py" for n in a), sorted(f"pkg/{n}.py" for n in b)]
    assert cut(tree, graph) == 0
    assert cut(split(graph, Budget(max_files=4), Strategy.directory), graph) > 0


def test_coupled_sibling_directories_are_packed_together() -> None:
    # four small directories; api imports models heavily, web and docs stand alone
    paths = [f"{d}/{n}.py" for d in ("api", "docs", "models", "web") for n in range(3)]
    edges = [(f"api/{n}.py", f"models/{m}.py") for n in range(3) for m in range(3)]
    graph = graph_of(paths, edges)
    tree = split(graph, Budget(max_files=6))
    assert sorted(f"api/{n}.py" for n in range(3)) + sorted(f"models/{n}.py" for n in range(3)) in leaves(tree, graph)
    assert cut(tree, graph) == 0


def test_a_one_file_leftover_joins_a_neighbour_instead_of_becoming_a_hive() -> None:
    paths = ["setup.py", *(f"src/a/{n}.py" for n in range(4)), *(f"src/b/{n}.py" for n in range(4))]
    graph = graph_of(paths, [("setup.py", "src/a/0.py")])
    tree = split(graph, Budget(max_files=5))
    assert all(len(leaf.files) > 1 for leaf in tree.leaves())
    assert ["setup.py", *(f"src/a/{n}.py" for n in range(4))] in leaves(tree, graph)


def test_the_byte_budget_holds_too() -> None:
    paths = [f"d/{n}.py" for n in range(6)]
    graph = graph_of(paths, [], sizes=dict.fromkeys(paths, 400))
    tree = split(graph, Budget(max_files=100, max_bytes=1000))
    assert [len(leaf.files) for leaf in tree.leaves()] == [2, 2, 2]


def test_one_file_over_the_byte_budget_is_a_leaf_of_its_own() -> None:
    graph = graph_of(["a/big.bin", "a/small.py"], [], sizes={"a/big.bin": 5000, "a/small.py": 10})
    tree = split(graph, Budget(max_bytes=1000))
    assert leaves(tree, graph) == [["a/big.bin"], ["a/small.py"]]


def test_a_tree_that_fits_is_one_leaf_below_the_root() -> None:
    graph = graph_of(["a.py", "b.py"], [])
    tree = split(graph, Budget())
    assert not tree.leaf
    assert [sorted(leaf.files) for leaf in tree.leaves()] == [[0, 1]]


_SEGMENTS = st.sampled_from(["a", "b", "c", "src", "lib", "tests"])
_PATHS = st.lists(
    st.lists(_SEGMENTS, min_size=0, max_size=3).map(lambda p: "/".join([*p, ""])), min_size=1, max_size=60
)


@st.composite
def graphs(draw: st.DrawFn) -> tuple[Graph, Budget]:
    prefixes = draw(_PATHS)
    paths = sorted({f"{prefix}f{i}.py" for i, prefix in enumerate(prefixes)})
    sizes = draw(st.lists(st.integers(0, 500), min_size=len(paths), max_size=len(paths)))
    count = len(paths)
    pairs = draw(st.lists(st.tuples(st.integers(0, count - 1), st.integers(0, count - 1)), max_size=4 * count))
    adjacency: list[dict[int, int]] = [{} for _ in paths]
    for i, j in pairs:
        if i != j:
            adjacency[i][j] = adjacency[i].get(j, 0) + 1
            adjacency[j][i] = adjacency[j].get(i, 0) + 1
    roles = draw(st.lists(st.sampled_from(list(Role)), min_size=count, max_size=count))
    budget = Budget(max_files=draw(st.integers(1, 12)), max_bytes=draw(st.integers(500, 3000)))
    return Graph(paths, sizes, roles, adjacency), budget


@settings(max_examples=150, deadline=None)
@given(graphs(), st.sampled_from(list(Strategy)))
def test_every_file_lands_in_exactly_one_leaf_that_fits_and_the_split_is_deterministic(
    case: tuple[Graph, Budget], strategy: Strategy
) -> None:
    graph, budget = case
    tree = split(graph, budget, strategy)
    placed = sorted(f for leaf in tree.leaves() for f in leaf.files)
    assert placed == list(range(len(graph.paths)))
    for leaf in tree.leaves():
        assert leaf.files
        assert len(leaf.files) <= budget.max_files
        assert sum(graph.sizes[f] for f in leaf.files) <= budget.max_bytes
    again = split(graph, budget, strategy)
    assert [leaf.files for leaf in again.leaves()] == [leaf.files for leaf in tree.leaves()]


def test_leftovers_merged_with_each_other_keep_merging_while_still_small() -> None:
    # two small units of different roles beside one oversized directory: they merge with each other, and the
    # merged unit, still small (under a tenth of the budget), travels into the big one instead of staying a
    # three-file hive beside it
    paths = [
        "a/one.py",
        "c/x.md",
        "c/y.md",
        *(f"big/p/{n:02d}.py" for n in range(30)),
        *(f"big/q/{n:02d}.py" for n in range(30)),
        "big/r.py",
    ]
    graph = graph_of(paths, [], roles={"c/x.md": Role.docs, "c/y.md": Role.docs})
    tree = split(graph, Budget(max_files=60))
    assert sorted(len(leaf.files) for leaf in tree.leaves()) == [30, 34]


def test_communities_replace_directories_where_the_coupling_says_otherwise() -> None:
    # each feature spans both directories (a layered layout): the directory cut splits both features
    paths = ["models/cart.py", "models/user.py", "views/cart.py", "views/user.py"]
    edges = [("models/cart.py", "views/cart.py"), ("models/user.py", "views/user.py")] * 3
    graph = graph_of(paths, edges)
    tree = split(graph, Budget(max_files=2))
    assert leaves(tree, graph) == [["models/cart.py", "views/cart.py"], ["models/user.py", "views/user.py"]]
    assert cut(tree, graph) == 0
    directory = split(graph, Budget(max_files=2), Strategy.directory)
    assert leaves(directory, graph) == [["models/cart.py", "models/user.py"], ["views/cart.py", "views/user.py"]]


def test_a_leaf_left_tiny_joins_the_nearest_leaf_with_room_even_uncoupled() -> None:
    from subhive.decompose._refine import Refiner

    graph = graph_of(["a/0.py", "b/1.py", "b/2.py", "c/3.py"], [])
    refiner = Refiner(graph, Budget(max_files=3), [[0], [1], [2], [3]], [0, 1, 1, 2], 3)
    refiner.absorb_small(2)
    assert refiner.owner == [1, 1, 1, 2]  # a's file joins b (nearest, room for one); c's finds no room left
