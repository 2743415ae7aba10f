"""The plan ``subhive decompose`` makes: a tree of sub-hives, the files of each leaf, and the crossing edges.
Immutable data, rendered by :meth:`DecompositionPlan.to_dict` in a fixed order so the same repository always
gives the same document (docs/decompose.md#output).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from ..errors import InputError
from ._roles import Role

__all__ = ["Budget", "Crossing", "Cycle", "DecompositionPlan", "HivePlan", "PlanStats"]

_DEFAULTS = {"max_files": 200, "max_bytes": 2_000_000}


@dataclass(frozen=True, slots=True)
class Budget:
    """How big one leaf sub-hive may be: ``Budget(max_files=200, max_bytes=2_000_000)``.

    The defaults are those of a sub-hive manifest's ``[budgets]``. A value below 1 raises
    :class:`InputError` (``decompose.budget_invalid``).
    """

    max_files: int = 200
    max_bytes: int = 2_000_000

    def __post_init__(self) -> None:
        for name in ("max_files", "max_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                option = "--" + name.replace("_", "-")
                raise InputError(
                    f"{option} must be a positive integer, not {value!r}",
                    code="decompose.budget_invalid",
                    hint=f"a leaf sub-hive holds at most this many {name[4:]}; e.g. {option} {_DEFAULTS[name]}",
                )

    def to_dict(self) -> dict[str, int]:
        return {"max_files": self.max_files, "max_bytes": self.max_bytes}


@dataclass(frozen=True, slots=True)
class HivePlan:
    """One sub-hive of the plan. A leaf owns ``files``; an inner hive has ``children`` and owns none."""

    name: str
    parent: str
    role: Role
    #: The directory holding its files ('.' for the repository's root), or most of them (``outside``).
    path: str
    files: tuple[str, ...]
    children: tuple[str, ...]
    file_count: int
    bytes: int
    #: How many of its files (its leaves' files, for an inner hive) have each role.
    roles: Mapping[Role, int]
    depth: int
    #: How many of its files lie outside ``path`` (a leaf is placed where most of its files are).
    outside: int = 0

    @property
    def leaf(self) -> bool:
        return not self.children

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "name": self.name,
            "parent": self.parent,
            "role": self.role.value,
            "path": self.path,
            "leaf": self.leaf,
            "depth": self.depth,
            "file_count": self.file_count,
            "outside": self.outside,
            "bytes": self.bytes,
            "roles": {role.value: count for role, count in sorted(self.roles.items(), key=lambda i: (-i[1], i[0]))},
        }
        if self.leaf:
            out["files"] = list(self.files)
        else:
            out["children"] = list(self.children)
        return out


@dataclass(frozen=True, slots=True)
class Crossing:
    """The import edges from files of ``consumer`` to files of ``provider``: a candidate contract that
    ``provider`` serves to ``consumer``. ``edges`` are (importing file, imported file), sorted."""

    consumer: str
    provider: str
    contract: str
    edges: tuple[tuple[str, str], ...]
    #: The names the consumer uses from the provider, where the imports say (``from a import B``, an
    #: ``import { b }``, Go's ``pkg.Func``): (name, providing file, how many importing files), most used first.
    symbols: tuple[tuple[str, str, int], ...] = ()

    def to_dict(self) -> dict[str, object]:
        return {
            "consumer": self.consumer,
            "provider": self.provider,
            "contract": self.contract,
            "count": len(self.edges),
            "edges": [{"from": a, "to": b} for a, b in self.edges],
            "symbols": [{"name": name, "file": path, "count": count} for name, path, count in self.symbols],
        }


@dataclass(frozen=True, slots=True)
class Cycle:
    """Leaves that reach each other through their crossings and could not be merged (together they exceed
    the budget): ``links`` are the crossings inside the cycle as (consumer, provider, edge count), and
    ``weakest`` the lightest of them, the first a person might cut."""

    hives: tuple[str, ...]
    links: tuple[tuple[str, str, int], ...]

    @property
    def weakest(self) -> tuple[str, str, int]:
        return min(self.links, key=lambda link: (link[2], link[0], link[1]))

    def to_dict(self) -> dict[str, object]:
        consumer, provider, count = self.weakest
        return {
            "hives": list(self.hives),
            "links": [{"consumer": a, "provider": b, "count": n} for a, b, n in self.links],
            "weakest": {"consumer": consumer, "provider": provider, "count": count},
        }


@dataclass(frozen=True, slots=True)
class PlanStats:
    files: int
    bytes: int
    #: Import edges between two files of the repository (each ordered pair once).
    edges_total: int
    #: Those whose two files are in different leaves.
    edges_cut: int
    #: Imports that name nothing in the repository (standard library, third-party, unresolvable).
    unresolved: int
    #: Files per language whose imports were read.
    languages: Mapping[str, int]
    #: Files and directories left out, by reason (docs/decompose.md).
    skipped: Mapping[str, int]
    #: Import edges from test files, and those of them that cross between leaves (never contracts).
    test_edges: int = 0
    test_edges_cut: int = 0
    #: The code's units (packages, crates, modules: docs/decompose.md#units) and those that fit the budget
    #: yet were split (always 0: a check anyone can read).
    units: int = 0
    units_split: int = 0
    one_file_leaves: int = 0
    #: Pairs of leaves that import each other both ways.
    mutual_pairs: int = 0
    #: Units larger than one leaf, which the plan had to split (each named by a warning).
    units_too_big: int = 0

    def to_dict(self) -> dict[str, object]:
        return {
            "files": self.files,
            "bytes": self.bytes,
            "edges_total": self.edges_total,
            "edges_cut": self.edges_cut,
            "test_edges": self.test_edges,
            "test_edges_cut": self.test_edges_cut,
            "unresolved_imports": self.unresolved,
            "units": self.units,
            "units_split": self.units_split,
            "units_too_big": self.units_too_big,
            "one_file_leaves": self.one_file_leaves,
            "mutual_pairs": self.mutual_pairs,
            "languages": dict(sorted(self.languages.items())),
            "skipped": dict(sorted(self.skipped.items())),
            "skipped_total": sum(self.skipped.values()),
        }


@dataclass(frozen=True, slots=True)
class DecompositionPlan:
    """The whole plan: ``hives`` in tree order (each parent before its children), the crossings sorted by
    (consumer, provider)."""

    root: str
    source: str
    budget: Budget
    strategy: str
    hives: tuple[HivePlan, ...]
    crossings: tuple[Crossing, ...]
    stats: PlanStats
    cycles: tuple[Cycle, ...] = ()
    #: What a person should know about the plan (a byte budget that binds before the file budget...).
    warnings: tuple[str, ...] = ()
    #: Pairs of leaves (names, sorted) that import each other both ways because a refinement move cut clearly
    #: fewer edges that way (decision 0125); also among ``cycles`` and named by a warning.
    made_mutual: tuple[tuple[str, str], ...] = ()
    _by_name: dict[str, HivePlan] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._by_name.update((h.name, h) for h in self.hives)

    def hive(self, name: str) -> HivePlan:
        return self._by_name[name]

    def leaves(self) -> Iterator[HivePlan]:
        return (h for h in self.hives if h.leaf)

    def leaf_of(self) -> dict[str, str]:
        """Each file -> the leaf hive that owns it."""
        return {path: hive.name for hive in self.leaves() for path in hive.files}

    def to_dict(self) -> dict[str, object]:
        return {
            "root": self.root,
            "source": self.source,
            "strategy": self.strategy,
            "budget": self.budget.to_dict(),
            "stats": self.stats.to_dict(),
            "hives": [h.to_dict() for h in self.hives],
            "crossings": [c.to_dict() for c in self.crossings],
            "cycles": [c.to_dict() for c in self.cycles],
            "warnings": list(self.warnings),
            "made_mutual": [list(pair) for pair in self.made_mutual],
        }
