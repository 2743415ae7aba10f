"""Decomposition: a repository becomes a tree of sub-hives, each small enough for one team of agents.
How and why: docs/decompose.md and docs/decisions/0020-decompose-communities.md.

    >>> from subhive.decompose import Budget, decompose, write_workspace
    >>> plan = decompose("shop", Budget(max_files=200, max_bytes=2_000_000))  # doctest: +SKIP
    >>> [(h.name, h.role.value, h.file_count) for h in plan.leaves()][:2]  # doctest: +SKIP
    [('api', 'backend', 42), ('web', 'ui', 88)]
    >>> write_workspace(plan, "shop")  # doctest: +SKIP
"""

from ._decompose import decompose
from ._discover import SKIP_REASONS
from ._imports import Language, extract, language_of
from ._model import Budget, Crossing, Cycle, DecompositionPlan, HivePlan, PlanStats
from ._picture import render_picture
from ._refine import CYCLE_MARGIN
from ._roles import Role, classify
from ._split import Graph, Node, Strategy, split
from ._synthesis import HEALTH_ORDER, HiveSummary, TreeSummary, normalise_health, summarise_tree
from ._write import SCOPE_FILE, plan_workspace, write_workspace

__all__ = [
    "CYCLE_MARGIN",
    "HEALTH_ORDER",
    "SCOPE_FILE",
    "SKIP_REASONS",
    "Budget",
    "Crossing",
    "Cycle",
    "DecompositionPlan",
    "Graph",
    "HivePlan",
    "HiveSummary",
    "Language",
    "Node",
    "PlanStats",
    "Role",
    "Strategy",
    "TreeSummary",
    "classify",
    "decompose",
    "extract",
    "language_of",
    "normalise_health",
    "plan_workspace",
    "render_picture",
    "split",
    "summarise_tree",
    "write_workspace",
]
