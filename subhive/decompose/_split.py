"""The recursive split: a tree whose leaves each fit the budget, cut where the import graph is thin and never
through a unit that fits. The steps and why: docs/decompose.md#how-the-split-works, decisions 0020 and 0078.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from ._model import Budget
from ._refine import refine, regraft
from ._roles import Role
from ._units import atoms, find_units, home_paths

__all__ = ["Graph", "Node", "Strategy", "split"]

_SEED = 20260107
#: Communities replace the directories of a node only when they cut fewer than this share of the edges
#: the directory split cuts at that node (decision 0020): directories win ties and near-ties.
_COMMUNITY_MARGIN = 0.95
#: Uncoupled sibling units share a leaf up to this share of the budget.
_SIBLING_SHARE = 0.8


class Strategy(StrEnum):
    graph = "graph"
    directory = "directory"


@dataclass(slots=True)
class Graph:
    """Files in path order with their sizes and roles, and ``adjacency[i][j]``: the weight between i and j
    (import edges in either direction, plus ties: inside a Go or JVM package, a file to its owner, a test to
    its subjects); symmetric, no self-loops."""

    paths: Sequence[str]
    sizes: Sequence[int]
    roles: Sequence[Role]
    adjacency: Sequence[dict[int, int]]
    #: The directed import edges from code (importer, imported), when known: refinement never makes two
    #: leaves import each other both ways that did not (decision 0079).
    imports: Sequence[tuple[int, int]] = ()


@dataclass(slots=True)
class Node:
    """A node of the split: a leaf owns ``files``; an inner node has ``children`` (and no files of its own)."""

    files: list[int]
    children: list[Node] = field(default_factory=list)
    #: The directory holding the node's files when the split made it ('' for the root); refinement may
    #: later move atoms in from elsewhere (the plan then names a leaf after where most of its files are).
    directory: str = ""
    #: On the root: pairs of leaves that refinement made import each other both ways, each by a move that cut
    #: clearly fewer edges (decision 0125); a leaf emptied later (merged, pruned) has no files left.
    made_mutual: list[tuple[Node, Node]] = field(default_factory=list)

    @property
    def leaf(self) -> bool:
        return not self.children

    def leaves(self) -> Iterator[Node]:
        if self.leaf:
            yield self
        for child in self.children:
            yield from child.leaves()

    def all_files(self) -> Iterator[int]:
        for leaf in self.leaves():
            yield from leaf.files


@dataclass(slots=True)
class _Unit:
    files: list[int]
    size: int
    depth: int  # the depth at which a big unit's files are grouped again
    big: bool
    extras: list[_Unit] = field(default_factory=list)


def split(graph: Graph, budget: Budget, strategy: Strategy = Strategy.graph) -> Node:
    """Split every file of ``graph`` into a tree whose leaves fit ``budget`` (a file that alone exceeds the
    byte budget is a leaf of its own). The steps are in docs/decompose.md#how-the-split-works.

    The ``directory`` strategy is the baseline the benchmark compares with: the same recursion and budget, but
    loose files are cut and units packed in path order, without the graph. Everything is deterministic: files
    are indexed in path order, ties break on that order, and Leiden runs with a fixed seed on a graph built in
    that order.

    >>> tree = split(Graph(["a/x.py", "a/y.py", "b/z.py"], [10, 10, 10], [Role.backend] * 3, [{1: 1}, {0: 1}, {}]),
    ...              Budget(max_files=2))
    >>> [sorted(leaf.files) for leaf in tree.leaves()]
    [[0, 1], [2]]
    """
    return _Splitter(graph, budget, strategy).run()


class _Splitter:
    def __init__(self, graph: Graph, budget: Budget, strategy: Strategy) -> None:
        self.graph = graph
        self.budget = budget
        self.strategy = strategy
        self.parts = [path.split("/") for path in home_paths(graph.paths)]
        self.small_files = max(2, budget.max_files // 10)

    def run(self) -> Node:
        files = list(range(len(self.graph.paths)))
        if not files:
            return Node([])
        tree = self._split(files, 0, [])
        if tree.leaf:
            tree = Node([], [tree], tree.directory)
        if self.strategy is Strategy.graph:
            units = find_units(self.graph.paths)
            atom = atoms(units, self.graph.sizes, self.budget.max_files, self.budget.max_bytes)
            leaves = list(tree.leaves())
            made = refine(leaves, self.graph, self.budget, atom)
            tree.made_mutual = [(leaves[a], leaves[b]) for a, b in made]
            prune(tree)
            regraft(tree, self.graph.paths)
            prune(tree)
        return tree

    # --- sizes

    def _size(self, files: Sequence[int]) -> int:
        sizes = self.graph.sizes
        return sum(sizes[f] for f in files)

    def _fits(self, count: int, size: int) -> bool:
        return count <= self.budget.max_files and size <= self.budget.max_bytes

    def _small(self, unit: _Unit) -> bool:
        return len(unit.files) < self.small_files

    # --- recursion

    def _split(self, files: list[int], depth: int, extras: list[_Unit]) -> Node:
        size = self._size(files)
        count = len(files) + sum(len(u.files) for u in extras)
        if self._fits(count, size + sum(u.size for u in extras)) or count <= 1:
            return self._node(sorted(files + [f for u in extras for f in u.files]))
        # when only the leftovers sent down make it too big, its own files stay one piece
        whole = self._fits(len(files), size)
        units = [_Unit(list(files), size, depth, False)] if whole else self._units(files, depth)
        bins = self._pack([_Unit(list(u.files), u.size, u.depth, u.big) for u in (*units, *extras)])  # packing merges
        if self.strategy is Strategy.graph:
            bins = self._or_communities(units, depth, extras, bins)
        children: list[Node] = []
        for packed in bins:
            if packed.big:
                children.append(self._split(packed.files, packed.depth, packed.extras))
            else:
                children.append(self._node(sorted(packed.files)))
        if len(children) == 1:
            return children[0]
        paths = self.graph.paths  # named after its own files' directory, not after leftovers sent down to it
        return Node([], children, _common_directory([paths[min(files)], paths[max(files)]]))

    def _units(self, files: list[int], depth: int) -> list[_Unit]:
        """The units of a node: one per subdirectory (big when it does not fit), and its loose files."""
        groups, loose = self._group(files, depth)
        while not loose and len(groups) == 1:
            depth += 1
            groups, loose = self._group(files, depth)
        units: list[_Unit] = []
        for name in sorted(groups):
            group = groups[name]
            group_size = self._size(group)
            units.append(_Unit(group, group_size, depth + 1, not self._fits(len(group), group_size)))
        if loose:
            loose_size = self._size(loose)
            if self._fits(len(loose), loose_size):
                units.append(_Unit(loose, loose_size, depth + 1, False))
            else:
                units.extend(self._loose_units(loose, depth))
        return units

    def _or_communities(self, parts: list[_Unit], depth: int, extras: list[_Unit], bins: list[_Unit]) -> list[_Unit]:
        """Where the coupling says otherwise: the node's parts (whole subdirectories, groups of loose files)
        grouped by Leiden communities of the graph between them instead of packed by directory, when that
        cuts clearly fewer edges at this level. Parts are never cut here, so units stay whole; a community
        that does not fit is split again below, by its own parts."""
        small = [p for p in parts if not p.big]
        if len(small) <= 2:
            return bins
        directory_cut = self._cut(bins)
        if directory_cut == 0:  # nothing to win
            return bins
        groups = _communities(list(range(len(small))), _quotient([p.files for p in small], self.graph.adjacency))
        if len(groups) <= 1:
            return bins
        units = [_Unit(list(p.files), p.size, p.depth, True) for p in parts if p.big]
        for group in groups:
            members = sorted(f for k in group for f in small[k].files)
            size = self._size(members)
            units.append(_Unit(members, size, depth, not self._fits(len(members), size)))
        alternative = self._pack(units + [_Unit(list(u.files), u.size, u.depth, u.big) for u in extras])
        if self._cut(alternative) < _COMMUNITY_MARGIN * directory_cut:
            return alternative
        return bins

    def _cut(self, bins: list[_Unit]) -> int:
        """The weight between different bins (each edge counted from both ends: only compared, never shown)."""
        owner: dict[int, int] = {}
        for index, unit in enumerate(bins):
            owner.update(dict.fromkeys(unit.files, index))
            for extra in unit.extras:
                owner.update(dict.fromkeys(extra.files, index))
        adjacency = self.graph.adjacency
        total = 0
        for f, index in owner.items():
            for n, w in adjacency[f].items():
                other = owner.get(n, index)
                if other != index:
                    total += w
        return total

    def _node(self, files: list[int]) -> Node:
        paths = self.graph.paths
        return Node(files, [], _common_directory([paths[files[0]], paths[files[-1]]]) if files else "")

    def _group(self, files: list[int], depth: int) -> tuple[dict[str, list[int]], list[int]]:
        groups: dict[str, list[int]] = {}
        loose: list[int] = []
        parts = self.parts
        for f in files:
            segments = parts[f]
            if len(segments) > depth + 1:
                groups.setdefault(segments[depth], []).append(f)
            else:
                loose.append(f)
        return groups, loose

    # --- loose files: communities, then path order

    def _loose_units(self, files: list[int], depth: int) -> list[_Unit]:
        if self.strategy is Strategy.directory:
            return self._chunks(files, depth)
        out: list[_Unit] = []
        pending = [files]
        while pending:
            group = pending.pop()
            size = self._size(group)
            if self._fits(len(group), size):
                out.append(_Unit(group, size, depth + 1, False))
                continue
            communities = _communities(group, self.graph.adjacency)
            if len(communities) <= 1:
                out.extend(self._chunks(group, depth))
            else:
                pending.extend(reversed(communities))
        out.sort(key=lambda u: u.files[0])
        return out

    def _chunks(self, files: list[int], depth: int) -> list[_Unit]:
        """Cut ``files`` in path order into consecutive pieces that each fit."""
        out: list[_Unit] = []
        current: list[int] = []
        current_size = 0
        for f in sorted(files):
            size = self.graph.sizes[f]
            if current and not self._fits(len(current) + 1, current_size + size):
                out.append(_Unit(current, current_size, depth + 1, False))
                current, current_size = [], 0
            current.append(f)
            current_size += size
        if current:
            out.append(_Unit(current, current_size, depth + 1, False))
        return out

    # --- packing units into leaves

    def _pack(self, units: list[_Unit]) -> list[_Unit]:
        if self.strategy is Strategy.directory:
            return self._pack_in_order(units)
        return _Packer(self, units).run()

    def _pack_in_order(self, units: list[_Unit]) -> list[_Unit]:
        out: list[_Unit] = []
        current: _Unit | None = None
        for unit in units:
            if unit.big:
                out.append(unit)
                continue
            if current is not None and self._fits(len(current.files) + len(unit.files), current.size + unit.size):
                current.files.extend(unit.files)
                current.size += unit.size
                continue
            current = _Unit(list(unit.files), unit.size, unit.depth, False)
            out.append(current)
        return out


class _Packer:
    """Greedy packing of one node's parts: by coupling, then small leftovers by coupling and position, then
    uncoupled siblings side by side."""

    def __init__(self, splitter: _Splitter, units: list[_Unit]) -> None:
        self.s = splitter
        self.units = units
        self.alive = [True] * len(units)
        owner: dict[int, int] = {}
        for index, unit in enumerate(units):
            for f in unit.files:
                owner[f] = index
        adjacency = splitter.graph.adjacency
        self.weights: list[dict[int, int]] = [{} for _ in units]
        for index, unit in enumerate(units):
            row = self.weights[index]
            for f in unit.files:
                for neighbour, weight in adjacency[f].items():
                    other = owner.get(neighbour)
                    if other is not None and other != index:
                        row[other] = row.get(other, 0) + weight

    def run(self) -> list[_Unit]:
        self._by_coupling()
        self._leftovers()
        self._siblings()
        return [unit for index, unit in enumerate(self.units) if self.alive[index]]

    def _siblings(self) -> None:
        """Units nothing couples, side by side in path order, share a leaf up to most of the budget (the rest
        is room for refinement), so a directory of forty small uncoupled pieces is a few hives, not forty."""
        budget = self.s.budget
        files, size = budget.max_files * _SIBLING_SHARE, budget.max_bytes * _SIBLING_SHARE
        current: int | None = None
        for index, unit in enumerate(self.units):
            if not self.alive[index] or unit.big:
                continue
            if current is not None:
                merged = self.units[current]
                if len(merged.files) + len(unit.files) <= files and merged.size + unit.size <= size:
                    self._merge(current, index)
                    continue
            current = index

    def _can_merge(self, a: int, b: int) -> bool:
        x, y = self.units[a], self.units[b]
        return not x.big and not y.big and self.s._fits(len(x.files) + len(y.files), x.size + y.size)

    def _merge(self, keep: int, gone: int) -> None:
        x, y = self.units[keep], self.units[gone]
        x.files.extend(y.files)
        x.size += y.size
        self.alive[gone] = False
        row = self.weights[keep]
        for other, weight in self.weights[gone].items():
            if other == keep:
                continue
            row[other] = row.get(other, 0) + weight
            back = self.weights[other]
            back[keep] = back.get(keep, 0) + back.pop(gone, 0)
        row.pop(gone, None)
        self.weights[gone] = {}

    def _score(self, a: int, b: int, weight: int) -> float:
        # edges per file of the merged leaf: small, tightly coupled units merge before big ones fill a leaf
        return weight / (len(self.units[a].files) + len(self.units[b].files))

    def _by_coupling(self) -> None:
        heap = [
            (-self._score(a, b, w), a, b, w)
            for a, row in enumerate(self.weights)
            for b, w in row.items()
            if a < b and self._can_merge(a, b)
        ]
        heapq.heapify(heap)
        while heap:
            _, a, b, weight = heapq.heappop(heap)
            if not (self.alive[a] and self.alive[b]) or self.weights[a].get(b) != weight or not self._can_merge(a, b):
                continue
            keep, gone = (a, b) if a < b else (b, a)
            self._merge(keep, gone)
            for other, w in self.weights[keep].items():
                if self.alive[other] and self._can_merge(keep, other):
                    x, y = min(keep, other), max(keep, other)
                    heapq.heappush(heap, (-self._score(x, y, w), x, y, w))

    def _leftovers(self) -> None:
        # never by role: that made type buckets (all templates in one hive); by coupling, then by position
        for index, unit in enumerate(self.units):
            if self.alive[index] and not unit.big and self.s._small(unit):
                self._place(index)

    def _place(self, index: int) -> None:
        """A small unit still alone: join the unit it is most coupled to, else the nearest that fits, and
        again while the merged unit is still small; else travel down into the big unit it is most coupled to."""
        while self.alive[index] and self.s._small(self.units[index]):
            coupled = sorted(
                ((w, -other) for other, w in self.weights[index].items() if self.alive[other]), reverse=True
            )
            target = next((-other for _, other in coupled if self._can_merge(-other, index)), None)
            if target is None:
                candidates = [
                    other
                    for other in range(len(self.units))
                    if other != index and self.alive[other] and self._can_merge(other, index)
                ]
                if candidates:
                    target = min(candidates, key=lambda other: (abs(other - index), other))
            if target is not None:
                index = self._merge_into(target, index)
                continue
            bigs = [other for other in range(len(self.units)) if self.alive[other] and self.units[other].big]
            if bigs:
                target = max(bigs, key=lambda other: (self.weights[index].get(other, 0), -other))
                self.units[target].extras.append(self.units[index])
                self.alive[index] = False
            return

    def _merge_into(self, target: int, index: int) -> int:
        """Merge two units, keeping the earlier position so a leaf's order follows the paths; the survivor."""
        keep, gone = (target, index) if target < index else (index, target)
        self._merge(keep, gone)
        return keep


def _common_directory(paths: list[str], *, directories: bool = False) -> str:
    """The deepest directory holding every path (``paths`` sorted, or just the first and last of them)."""
    if not paths:
        return ""
    first, last = min(paths), max(paths)
    if not directories:
        first, last = first.rpartition("/")[0], last.rpartition("/")[0]
    a, b = first.split("/"), last.split("/")
    common: list[str] = []
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        common.append(x)
    return "/".join(common)


def _quotient(groups: list[list[int]], adjacency: Sequence[dict[int, int]]) -> list[dict[int, int]]:
    """The graph between ``groups`` of files: ``out[a][b]`` is the weight between groups a and b."""
    owner = {f: k for k, group in enumerate(groups) for f in group}
    out: list[dict[int, int]] = [{} for _ in groups]
    for k, group in enumerate(groups):
        row = out[k]
        for f in group:
            for n, w in adjacency[f].items():
                other = owner.get(n)
                if other is not None and other != k:
                    row[other] = row.get(other, 0) + w
    return out


def _communities(files: list[int], adjacency: Sequence[dict[int, int]]) -> list[list[int]]:
    """Leiden communities (modularity) of the subgraph on ``files``; isolated files each alone."""
    local = {f: i for i, f in enumerate(files)}
    edges: list[tuple[int, int]] = []
    weights: list[int] = []
    for i, f in enumerate(files):
        for neighbour, weight in adjacency[f].items():
            j = local.get(neighbour)
            if j is not None and i < j:
                edges.append((i, j))
                weights.append(weight)
    if not edges:
        return [[f] for f in files]
    import igraph  # type: ignore[import-untyped]

    graph = igraph.Graph(n=len(files), edges=edges, directed=False)
    previous = random.getstate()
    igraph.set_random_number_generator(random.Random(_SEED))
    try:
        clustering = graph.community_leiden(objective_function="modularity", weights=weights, n_iterations=-1)
    finally:
        igraph.set_random_number_generator(random)
        random.setstate(previous)
    groups: dict[int, list[int]] = {}
    for i, membership in enumerate(clustering.membership):
        groups.setdefault(membership, []).append(files[i])
    return sorted(groups.values(), key=lambda g: g[0])


def prune(node: Node) -> None:
    """Drop emptied leaves; an inner node left with one child takes that child's place."""
    kept: list[Node] = []
    for child in node.children:
        if not child.leaf:
            prune(child)
            if len(child.children) == 1:
                only = child.children[0]
                child.files, child.children = only.files, only.children
        if child.files or child.children:
            kept.append(child)
    node.children = kept
