"""Facing cycles: two leaves that import each other would become chatty, cyclic contracts. They are merged
when the merged leaf fits; the cycles left (strongly connected groups of leaves) are named with the edges
that form them, so a person can decide. Why: docs/decisions/0079-decompose-cycles.md.
"""

from __future__ import annotations

from collections.abc import Sequence

from ._model import Budget
from ._split import Graph, Node, prune

__all__ = ["leaf_cycles", "merge_mutual"]


def _directed(leaves: list[Node], edges: Sequence[tuple[int, int]], files: int) -> dict[tuple[int, int], int]:
    owner = [0] * files
    for index, leaf in enumerate(leaves):
        for f in leaf.files:
            owner[f] = index
    weights: dict[tuple[int, int], int] = {}
    for i, j in edges:
        a, b = owner[i], owner[j]
        if a != b:
            weights[(a, b)] = weights.get((a, b), 0) + 1
    return weights


def merge_mutual(tree: Node, graph: Graph, edges: Sequence[tuple[int, int]], budget: Budget) -> int:
    """Merge pairs of leaves that import each other both ways while the merged leaf fits, heaviest pair
    first; ``edges`` are the directed production edges. Emptied leaves leave the tree. How many merges."""
    merges = 0
    while True:
        leaves = list(tree.leaves())
        weights = _directed(leaves, edges, len(graph.paths))
        counts = [len(leaf.files) for leaf in leaves]
        sizes = [sum(graph.sizes[f] for f in leaf.files) for leaf in leaves]
        pairs = sorted(
            ((w + weights[(b, a)], a, b) for (a, b), w in weights.items() if a < b and (b, a) in weights),
            key=lambda item: (-item[0], item[1], item[2]),
        )
        done: set[int] = set()
        for _, a, b in pairs:
            if a in done or b in done:
                continue
            if counts[a] + counts[b] > budget.max_files or sizes[a] + sizes[b] > budget.max_bytes:
                continue
            keep, gone = (a, b) if counts[a] >= counts[b] else (b, a)
            leaves[keep].files = sorted(leaves[keep].files + leaves[gone].files)
            leaves[gone].files = []
            done.update((a, b))
            merges += 1
        if not done:
            break
        prune(tree)
    return merges


def leaf_cycles(leaves: Sequence[Sequence[int]], edges: Sequence[tuple[int, int]], files: int) -> list[list[int]]:
    """The groups of leaves (indexes into ``leaves``, each a list of files) that reach each other through
    ``edges``: strongly connected components of two or more leaves, sorted."""
    owner = [0] * files
    for index, leaf in enumerate(leaves):
        for f in leaf:
            owner[f] = index
    links = sorted({(owner[i], owner[j]) for i, j in edges if owner[i] != owner[j]})
    if not links:
        return []
    import igraph  # type: ignore[import-untyped]

    components = igraph.Graph(n=len(leaves), edges=links, directed=True).connected_components(mode="strong")
    return sorted(sorted(component) for component in components if len(component) > 1)
