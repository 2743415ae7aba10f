"""Refinement of a split: whole atoms move between leaves where that cuts fewer import edges. Fiduccia-Mattheyses
passes (the best move first, even a losing one, then back to the best point of the pass), evictions (an atom
makes room in a full leaf by moving out one that costs less to move) and, last, tiny leaves joining their
neighbours. Why and what it costs: docs/decompose.md#how-the-split-works, decisions 0078, 0079 and 0125.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ._model import Budget
from ._naming import dominant_directory
from ._roles import Role

if TYPE_CHECKING:
    from ._split import Graph, Node

__all__ = ["refine", "regraft"]

#: What one import edge from code between two leaves weighs against one tie (a test to its subjects, a file
#: to its owner, the files of one Go or JVM package): the import edges become contracts, the ties only keep
#: files where a maintainer expects them (decision 0125).
PRODUCTION = 8
TIE = 1
#: Rounds of FM passes and evictions; a pass stops after this many moves that did not beat its best point.
_ROUNDS = 8
_WINDOW = 200
#: Rounds of pair re-bisection (each followed by FM passes and evictions), the atoms most connected inside a
#: pair that seed a greedy growth there, the moves a two-way FM pass may make past its best point, and the
#: work allowed in all (atoms bisected, summed over every try), so a huge tree stays fast (decision 0126):
#: SymPy's 2,000 files take about 120,000, a 100,000-file tree stops at the heaviest few hundred pairs.
_PAIR_ROUNDS = 4
_SEEDS = 3
_PAIR_WINDOW = 50
_PAIR_WORK = 150_000
#: A move that makes two leaves import each other both ways is refused unless it lowers the cut by at least
#: this many production edges (decision 0125): a cyclic pair of contracts costs more than a few edges.
CYCLE_MARGIN = 8


def refine(leaves: list[Node], graph: Graph, budget: Budget, atom: Sequence[int]) -> list[tuple[int, int]]:
    """Move atoms (a unit kept whole, or a single file outside any fitting unit) between ``leaves`` while that
    lowers the weighted cut and the receiving leaf has room; then a leaf under a tenth of the budget joins the
    leaf it is most coupled to. Leaves may be emptied (the caller prunes them); a unit is never cut. Returns
    the pairs of leaves (indexes, ascending) that now import each other both ways and did not before."""
    if len(leaves) < 2:
        return []
    leaf_of = [0] * len(graph.paths)
    for index, leaf in enumerate(leaves):
        for f in leaf.files:
            leaf_of[f] = index
    members: dict[int, list[int]] = {}
    for f, key in enumerate(atom):
        members.setdefault(key, []).append(f)
    items: list[list[int]] = []
    for key in sorted(members, key=lambda k: members[k][0]):
        files = members[key]
        if len({leaf_of[f] for f in files}) == 1:
            items.append(files)
        else:  # cannot happen for a fitting unit; kept safe: its files move one by one
            items.extend([f] for f in files)
    refiner = Refiner(graph, budget, items, [leaf_of[item[0]] for item in items], len(leaves))
    before = refiner.mutual_pairs()
    refiner.settle()
    for _ in range(_PAIR_ROUNDS):
        if refiner.rebisect_pass() <= 0:
            break
        refiner.settle()
    refiner.absorb_small(max(2, budget.max_files // 10))
    for leaf in leaves:
        leaf.files.clear()
    for k, item in enumerate(items):
        leaves[refiner.owner[k]].files.extend(item)
    for leaf in leaves:
        leaf.files.sort()
    return sorted(refiner.mutual_pairs() - before)


def regraft(tree: Node, paths: Sequence[str]) -> None:
    """A leaf whose files now lie mostly in a directory outside its parent's moves under the deepest inner
    hive whose directory holds that one (the root, if none), so the tree still reads like the directories;
    the caller prunes the inner hives left with one child."""
    inner: list[tuple[Node, int]] = []
    leaves: list[tuple[Node, Node]] = []

    def visit(node: Node, depth: int) -> None:
        inner.append((node, depth))
        for child in node.children:
            if child.leaf:
                leaves.append((child, node))
            else:
                visit(child, depth + 1)

    visit(tree, 0)
    for leaf, parent in leaves:
        where = dominant_directory([paths[f] for f in leaf.files])
        if not leaf.files or _within(where, parent.directory):
            continue
        holders = [(node, depth) for node, depth in inner if node is tree or _within(where, node.directory)]
        target = max(holders, key=lambda h: (h[0].directory.count("/") if h[0].directory else -1, h[1]))[0]
        if target is not parent:
            parent.children = [child for child in parent.children if child is not leaf]
            target.children.append(leaf)


def _within(path: str, directory: str) -> bool:
    return not directory or path == directory or path.startswith(directory + "/")


def _shared(members: list[int], adjacency: list[dict[int, int]], side: dict[int, int]) -> int:
    """The weight between the two sides of ``members``."""
    total = 0
    for k in members:
        here = side[k]
        for m, w in adjacency[k].items():
            if m > k and side.get(m, here) != here:
                total += w
    return total


def weights(graph: Graph, items: list[list[int]]) -> list[dict[int, int]]:
    """The weight between items: :data:`PRODUCTION` per import edge from code, :data:`TIE` per other tie."""
    item_of = [0] * len(graph.paths)
    for k, item in enumerate(items):
        for f in item:
            item_of[f] = k
    production: dict[tuple[int, int], int] = {}
    for i, j in graph.imports:
        key = (i, j) if i < j else (j, i)
        production[key] = production.get(key, 0) + 1
    out: list[dict[int, int]] = [{} for _ in items]
    for i, row in enumerate(graph.adjacency):
        a = item_of[i]
        for j, w in row.items():
            b = item_of[j]
            if a == b:
                continue
            imports = production.get((i, j) if i < j else (j, i), 0)
            out[a][b] = out[a].get(b, 0) + PRODUCTION * imports + TIE * (w - imports)
    return out


class Refiner:
    """Moves of items (groups of files that move together) between leaves, keeping per leaf its files and
    bytes, and the directed production imports between leaves (for the cycle rule)."""

    def __init__(
        self,
        graph: Graph,
        budget: Budget,
        items: list[list[int]],
        owner: list[int],
        leaves: int,
        *,
        margin: int = CYCLE_MARGIN,
    ) -> None:
        self.budget = budget
        #: the least gain, in weight, of a move allowed to make a mutual pair
        self.margin = margin * PRODUCTION
        self.owner = owner
        self.item_count = [len(item) for item in items]
        self.item_size = [sum(graph.sizes[f] for f in item) for item in items]
        self.adjacency = weights(graph, items)
        self._towards: dict[int, dict[int, int]] = {}
        #: what is left of the work allowed for re-bisecting pairs of leaves (atoms, summed over every try)
        self.pair_work = _PAIR_WORK
        #: items whose neighbourhood changed since the last FM pass began: only they can have a new best move
        self._dirty: set[int] = set(range(len(items)))
        self.counts = [0] * leaves
        self.sizes = [0] * leaves
        self.members: list[set[int]] = [set() for _ in range(leaves)]
        tests = [0] * leaves
        for k, leaf in enumerate(owner):
            self.counts[leaf] += self.item_count[k]
            self.sizes[leaf] += self.item_size[k]
            self.members[leaf].add(k)
            tests[leaf] += sum(1 for f in items[k] if graph.roles[f] is Role.tests)
        #: Items holding a file that is not a test, and the leaves mostly of tests when refinement began: such an
        #: item never moves into such a leaf (decision 0144), so production code does not end up in a hive of
        #: tests because the tests there use it; a test still moves to what it tests.
        self.production = [any(graph.roles[f] is not Role.tests for f in item) for item in items]
        self.of_tests = [n * 2 > count for n, count in zip(tests, self.counts, strict=True)]
        item_of = [0] * len(graph.paths)
        for k, item in enumerate(items):
            for f in item:
                item_of[f] = k
        #: directed import weights between items, and between leaves
        self.out_edges: list[dict[int, int]] = [{} for _ in items]
        self.in_edges: list[dict[int, int]] = [{} for _ in items]
        self.between: dict[tuple[int, int], int] = {}
        for i, j in graph.imports:
            a, b = item_of[i], item_of[j]
            if a != b:
                self.out_edges[a][b] = self.out_edges[a].get(b, 0) + 1
                self.in_edges[b][a] = self.in_edges[b].get(a, 0) + 1
                x, y = owner[a], owner[b]
                if x != y:
                    self.between[(x, y)] = self.between.get((x, y), 0) + 1

    # --- the state

    def mutual_pairs(self) -> set[tuple[int, int]]:
        """The pairs of leaves (a < b) importing each other both ways."""
        between = self.between
        return {(a, b) for (a, b), n in between.items() if a < b and n > 0 and between.get((b, a), 0) > 0}

    def _room(self, leaf: int, k: int, leaving: int = -1) -> bool:
        """Whether leaf ``leaf`` has room for item ``k`` (once item ``leaving``, if any, has left it), and may
        take it (:meth:`barred`)."""
        if self.barred(k, leaf):
            return False
        count, size = self.item_count[k], self.item_size[k]
        if leaving >= 0:
            count -= self.item_count[leaving]
            size -= self.item_size[leaving]
        return self.counts[leaf] + count <= self.budget.max_files and self.sizes[leaf] + size <= self.budget.max_bytes

    def barred(self, k: int, leaf: int) -> bool:
        """Whether item ``k`` may not move to leaf ``leaf``: production code into a leaf of tests."""
        return self.production[k] and self.of_tests[leaf] and self.owner[k] != leaf

    def _by_leaf(self, k: int) -> tuple[dict[int, int], dict[int, int]]:
        """Item ``k``'s production imports per leaf: to each leaf, and from each leaf."""
        owner = self.owner
        out_by: dict[int, int] = {}
        in_by: dict[int, int] = {}
        for m, c in self.out_edges[k].items():
            out_by[owner[m]] = out_by.get(owner[m], 0) + c
        for m, c in self.in_edges[k].items():
            in_by[owner[m]] = in_by.get(owner[m], 0) + c
        return out_by, in_by

    def _mutual_after(self, k: int, to: int, by_leaf: tuple[dict[int, int], dict[int, int]] | None = None) -> bool:
        """Whether moving item ``k`` to leaf ``to`` would make ``to`` and some leaf import each other both ways
        where they did not (``by_leaf``: :meth:`_by_leaf`, when already known)."""
        if not self.out_edges[k] and not self.in_edges[k]:
            return False
        here, between = self.owner[k], self.between
        out_by, in_by = by_leaf or self._by_leaf(k)
        for leaf in out_by.keys() | in_by.keys():
            if leaf == to:
                continue
            forward, backward = between.get((to, leaf), 0), between.get((leaf, to), 0)
            if forward and backward:
                continue  # already both ways
            new_forward = forward + out_by.get(leaf, 0) - (in_by.get(to, 0) if leaf == here else 0)
            new_backward = backward + in_by.get(leaf, 0) - (out_by.get(to, 0) if leaf == here else 0)
            if new_forward > 0 and new_backward > 0:
                return True
        return False

    def _allowed(self, k: int, to: int, gain: int) -> bool:
        return gain >= self.margin or not self._mutual_after(k, to)

    def _move(self, k: int, to: int) -> None:
        here = self.owner[k]
        between, owner = self.between, self.owner
        for m, c in self.out_edges[k].items():
            if owner[m] != here:
                between[(here, owner[m])] -= c
            if owner[m] != to:
                between[(to, owner[m])] = between.get((to, owner[m]), 0) + c
        for m, c in self.in_edges[k].items():
            if owner[m] != here:
                between[(owner[m], here)] -= c
            if owner[m] != to:
                between[(owner[m], to)] = between.get((owner[m], to), 0) + c
        self.owner[k] = to
        self.counts[here] -= self.item_count[k]
        self.counts[to] += self.item_count[k]
        self.sizes[here] -= self.item_size[k]
        self.sizes[to] += self.item_size[k]
        self.members[here].discard(k)
        self.members[to].add(k)
        towards, dirty = self._towards, self._dirty
        towards.pop(k, None)
        dirty.add(k)
        for neighbour in self.adjacency[k]:
            towards.pop(neighbour, None)
            dirty.add(neighbour)

    def _toward(self, k: int) -> dict[int, int]:
        """Item ``k``'s weight to each leaf (kept until it or a neighbour moves; never to be changed)."""
        toward = self._towards.get(k)
        if toward is None:
            owner = self.owner
            toward = {}
            for neighbour, weight in self.adjacency[k].items():
                leaf = owner[neighbour]
                toward[leaf] = toward.get(leaf, 0) + weight
            self._towards[k] = toward
        return toward

    # --- Fiduccia-Mattheyses

    def settle(self) -> int:
        """Rounds of FM passes and evictions until one gains nothing. What they gained."""
        gained = 0
        for _ in range(_ROUNDS):
            gain = self.fm_pass() + self.evict_pass()
            gained += gain
            if gain <= 0:
                break
        return gained

    def _best_move(self, k: int) -> tuple[int, int] | None:
        """The move of item ``k`` that gains most (possibly a loss) to a leaf with room: (gain, leaf)."""
        here = self.owner[k]
        toward = self._toward(k)
        stay = toward.get(here, 0)
        ranked = sorted(((w - stay, leaf) for leaf, w in toward.items() if leaf != here), key=lambda m: (-m[0], m[1]))
        by_leaf = None
        for gain, leaf in ranked:
            if not self._room(leaf, k):
                continue
            if gain < self.margin and (self.out_edges[k] or self.in_edges[k]):
                by_leaf = by_leaf or self._by_leaf(k)
                if self._mutual_after(k, leaf, by_leaf):
                    continue
            return gain, leaf
        return None

    def fm_pass(self) -> int:
        """One Fiduccia-Mattheyses pass: move the unlocked item with the best gain, even a loss, lock it, and
        so on; then undo the moves after the best point reached. What the pass gained."""
        locked = [False] * len(self.owner)
        heap: list[tuple[int, int, int]] = []
        candidates, self._dirty = sorted(self._dirty), set()
        for k in candidates:
            if self.adjacency[k]:
                self._queue(heap, k)
        moves: list[tuple[int, int]] = []
        gained = best_gain = best_length = 0
        while heap and len(moves) - best_length <= _WINDOW:
            negative, k, leaf = heapq.heappop(heap)
            best = None if locked[k] else self._best_move(k)
            if best is None:
                continue
            if best != (-negative, leaf):  # stale: queue it again with what it is worth now
                heapq.heappush(heap, (-best[0], k, best[1]))
                continue
            moves.append((k, self.owner[k]))
            self._move(k, leaf)
            locked[k] = True
            gained += best[0]
            if gained > best_gain:
                best_gain, best_length = gained, len(moves)
            for neighbour in self.adjacency[k]:
                if not locked[neighbour]:
                    self._queue(heap, neighbour)
        for k, back in reversed(moves[best_length:]):
            self._move(k, back)
        return best_gain

    def _queue(self, heap: list[tuple[int, int, int]], k: int) -> None:
        best = self._best_move(k)
        if best is not None:
            heapq.heappush(heap, (-best[0], k, best[1]))

    # --- evictions

    def evict_pass(self) -> int:
        """An item pulled to a full leaf moves there when an item of that leaf can make room by moving out (to
        a leaf it is coupled to, or into the first one's place) at a smaller loss. What the pass gained."""
        gained = 0
        for k, row in enumerate(self.adjacency):
            if not row:
                continue
            here = self.owner[k]
            toward = self._toward(k)
            stay = toward.get(here, 0)
            for want, leaf in sorted(
                ((w - stay, t) for t, w in toward.items() if t != here), key=lambda m: (-m[0], m[1])
            ):
                if want <= 0 or self._room(leaf, k):
                    break  # nothing to win here, or a plain move (the FM pass's business)
                found = self._eviction(k, leaf, want, toward, stay)
                if found is not None:
                    gain, out, to = found
                    self._move(out, to)
                    if self._allowed(k, leaf, gain):
                        self._move(k, leaf)
                        gained += gain
                        break
                    self._move(out, leaf)
        return gained

    def _eviction(self, k: int, leaf: int, want: int, toward: dict[int, int], stay: int) -> tuple[int, int, int] | None:
        """The item of ``leaf`` whose leaving makes room for ``k`` with the best net gain: (gain, item, to)."""
        here = self.owner[k]
        best: tuple[int, int, int] | None = None
        for out in sorted(self.members[leaf]):
            pull = self._toward(out)
            keep = pull.get(leaf, 0)
            if keep >= want or not self._room(leaf, k, leaving=out):
                continue
            between = self.adjacency[k].get(out, 0)
            for to in sorted({t for t in pull if t != leaf} | {here}):
                if not (self._room(to, out, leaving=k) if to == here else self._room(to, out)):
                    continue
                # out leaves first (it may move into k's place), then k arrives
                gain = pull.get(to, 0) - keep + (toward[leaf] - between) - (stay + (between if to == here else 0))
                if gain > 0 and (best is None or gain > best[0]) and self._allowed(out, to, gain):
                    best = (gain, out, to)
        return best

    # --- pairs of leaves cut again

    def rebisect_pass(self) -> int:
        """For each pair of leaves sharing weight, heaviest first: cut their union in two again (two-way FM from
        the current cut, and from a greedy growth around each of its most connected atoms), keeping the best
        cut when it shares less weight than now and adds no mutual pair for a gain under the margin (else the
        next best). Only the weight between the two changes (their atoms stay in the pair). Stops when the
        work allowed is spent. What the pass gained."""
        owner, adjacency = self.owner, self.adjacency
        between: dict[tuple[int, int], int] = {}
        for k, row in enumerate(adjacency):
            a = owner[k]
            for m, w in row.items():
                b = owner[m]
                if a < b:
                    between[(a, b)] = between.get((a, b), 0) + w
        gained = 0
        for (a, b), _ in sorted(between.items(), key=lambda item: (-item[1], item[0])):
            members = sorted(self.members[a] | self.members[b])
            if len(members) < 2:
                continue
            if self.pair_work < (1 + _SEEDS) * len(members):
                break
            self.pair_work -= (1 + _SEEDS) * len(members)
            side = {k: int(owner[k] == b) for k in members}
            before = _shared(members, adjacency, side)
            if before == 0:
                continue
            candidates = [self._bisect(members, dict(side), (a, b))]
            inside = set(members)
            seeds = sorted(members, key=lambda k: (-sum(w for m, w in adjacency[k].items() if m in inside), k))
            for seed in seeds[:_SEEDS]:
                grown = self._grow(members, seed)
                if grown is not None:
                    candidates.append(self._bisect(members, grown, (a, b)))
            # the best cut first; one that makes mutual pairs its gain does not pay for gives way to the next
            ranked = sorted((_shared(members, adjacency, c), n) for n, c in enumerate(candidates))
            for cut, n in ranked:
                if cut < before and self._apply(members, candidates[n], (a, b), before - cut):
                    gained += before - cut
                    break
        return gained

    def _fits_side(self, files: int, size: int) -> bool:
        return files <= self.budget.max_files and size <= self.budget.max_bytes

    def _grow(self, members: list[int], seed: int) -> dict[int, int] | None:
        """Side 0 grown from ``seed`` by the atom most connected to it, to half the files; None when the rest
        does not fit one leaf."""
        count, size = self.item_count, self.item_size
        total = sum(count[k] for k in members)
        inside = set(members)
        grown: set[int] = set()
        files = nbytes = 0
        pull: dict[int, int] = {}
        heap = [(0, seed)]
        while heap and files * 2 < total:
            _, k = heapq.heappop(heap)
            if k in grown or not self._fits_side(files + count[k], nbytes + size[k]):
                continue
            grown.add(k)
            files += count[k]
            nbytes += size[k]
            for m, w in self.adjacency[k].items():
                if m in inside and m not in grown:
                    pull[m] = pull.get(m, 0) + w
                    heapq.heappush(heap, (-pull[m], m))
        rest = [k for k in members if k not in grown]
        if not self._fits_side(sum(count[k] for k in rest), sum(size[k] for k in rest)):
            return None
        return {k: int(k not in grown) for k in members}

    def _bisect(self, members: list[int], side: dict[int, int], pair: tuple[int, int]) -> dict[int, int]:
        """Two-way FM passes on ``members`` from ``side`` (atom -> 0 or 1, the side of ``pair``'s leaf): the best
        cut reached, both sides within the budget (one side may end empty: the two leaves then are one)."""
        bisection = _Bisection(self, members, side, pair)
        for _ in range(_ROUNDS):
            if bisection.fm_pass() <= 0:
                break
        return side

    def _apply(self, members: list[int], side: dict[int, int], pair: tuple[int, int], gain: int) -> bool:
        """Move the pair's atoms to their sides (whichever way moves fewer files); undone, and False, when the
        pair then has more mutual pairs with the leaves around it and the gain is under the margin for each
        one more (decisions 0125, 0126)."""
        before = self._mutual_of(members, pair)
        count = self.item_count
        turned = (pair[1], pair[0])  # the same cut, the other way round
        allowed = [p for p in (pair, turned) if not any(self.barred(k, p[side[k]]) for k in members)]
        if not allowed:
            return False
        if len(allowed) == 2 and sum(count[k] for k in members if self.owner[k] != pair[side[k]]) * 2 > sum(
            count[k] for k in members
        ):
            pair = turned  # it moves fewer files
        else:
            pair = allowed[0]
        moved = [(k, self.owner[k]) for k in members if self.owner[k] != pair[side[k]]]
        for k, _ in moved:
            self._move(k, pair[side[k]])
        if gain < self.margin * (len(self._mutual_of(members, pair)) - len(before)):
            for k, back in reversed(moved):
                self._move(k, back)
            return False
        return True

    def _mutual_of(self, members: list[int], pair: tuple[int, int]) -> set[tuple[int, int]]:
        """The mutual pairs of leaves that involve one of ``pair`` (found through the edges of ``members``,
        the atoms of both)."""
        owner, between = self.owner, self.between
        near: set[int] = set(pair)
        for k in members:
            near.update(owner[m] for m in self.out_edges[k])
            near.update(owner[m] for m in self.in_edges[k])
        out: set[tuple[int, int]] = set()
        for leaf in pair:
            for other in near:
                if other != leaf and between.get((leaf, other), 0) > 0 and between.get((other, leaf), 0) > 0:
                    out.add((min(leaf, other), max(leaf, other)))
        return out

    # --- tiny leaves

    def absorb_small(self, floor: int) -> None:
        """A leaf left with fewer than ``floor`` files joins, whole, the leaf it is most coupled to when that
        has room, else the nearest leaf in tree order that has: no one-file hives."""
        members: dict[int, list[int]] = {}
        for k, leaf in enumerate(self.owner):
            members.setdefault(leaf, []).append(k)
        for leaf in sorted(members):
            items = members[leaf]
            if not 0 < self.counts[leaf] < floor:
                continue
            toward: dict[int, int] = {}
            for k in items:
                for other, weight in self._toward(k).items():
                    if other != leaf:
                        toward[other] = toward.get(other, 0) + weight
            # the most coupled leaf with room, else the nearest in tree order (leaves are listed in that order)
            coupled = sorted(toward, key=lambda t: (-toward[t], t))
            nearby = (t for d in range(1, len(self.counts)) for t in (leaf - d, leaf + d) if 0 <= t < len(self.counts))
            for target in itertools.chain(coupled, nearby):
                if (
                    self.counts[target] > 0
                    and not any(self.barred(k, target) for k in items)
                    and self.counts[target] + self.counts[leaf] <= self.budget.max_files
                    and self.sizes[target] + self.sizes[leaf] <= self.budget.max_bytes
                ):
                    for k in items:
                        self._move(k, target)
                    members.setdefault(target, []).extend(items)
                    break


class _Bisection:
    """Two-way FM on the atoms of a pair of leaves: ``side`` (atom -> 0 or 1) changes in place; the gains count
    only the weight inside the pair and are kept up to date as atoms move, so a gain is a lookup."""

    def __init__(self, refiner: Refiner, members: list[int], side: dict[int, int], pair: tuple[int, int]) -> None:
        self.refiner = refiner
        self.members = members
        self.side = side
        self.pair = pair
        self.files, self.bytes = [0, 0], [0, 0]
        for k in members:
            self.files[side[k]] += refiner.item_count[k]
            self.bytes[side[k]] += refiner.item_size[k]
        self.local = {k: [(m, w) for m, w in refiner.adjacency[k].items() if m in side] for k in members}
        self.gain = {k: sum(w if side[m] != side[k] else -w for m, w in self.local[k]) for k in members}

    def flip(self, k: int) -> None:
        side, gain = self.side, self.gain
        here = side[k]
        side[k] = 1 - here
        count, size = self.refiner.item_count[k], self.refiner.item_size[k]
        self.files[here] -= count
        self.files[1 - here] += count
        self.bytes[here] -= size
        self.bytes[1 - here] += size
        gain[k] = -gain[k]
        for m, w in self.local[k]:
            gain[m] += 2 * w if side[m] == here else -2 * w

    def fm_pass(self) -> int:
        """Move the unlocked atom with the best gain that fits the other side, lock it, and so on; then undo
        the moves after the best point. What the pass gained."""
        gain, refiner = self.gain, self.refiner
        locked: set[int] = set()
        moves: list[int] = []
        gained = best = best_length = 0
        heap = [(-gain[k], k) for k in self.members]
        heapq.heapify(heap)
        while heap and len(moves) - best_length <= _PAIR_WINDOW:
            negative, k = heapq.heappop(heap)
            if k in locked or gain[k] != -negative:  # locked, or stale (queued again when it changed)
                continue
            there = 1 - self.side[k]
            if refiner.barred(k, self.pair[there]) or not refiner._fits_side(
                self.files[there] + refiner.item_count[k], self.bytes[there] + refiner.item_size[k]
            ):
                continue
            gained += gain[k]
            self.flip(k)
            locked.add(k)
            moves.append(k)
            if gained > best:
                best, best_length = gained, len(moves)
            for m, _ in self.local[k]:
                if m not in locked:
                    heapq.heappush(heap, (-gain[m], m))
        for k in reversed(moves[best_length:]):
            self.flip(k)
        return best
