"""How ``subhive up`` runs the hives: ``[up]`` in hive.toml. One process per hive for a small tree, several
hives in one process for a large one (docs/up.md#large-trees, docs/decisions/0117-hives-share-a-host-process.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from .._source import join_pointer
from ._checks import unknown_keys

__all__ = ["AUTO_GROUP", "AUTO_SHARED_FROM", "MAX_PER_PROCESS", "UP_KEYS", "UpSettings"]

UP_KEYS = ("hives_per_process", "elsewhere")
#: ``"auto"`` keeps one process per hive up to this many hives; a larger tree shares processes.
AUTO_SHARED_FROM = 24
#: ``"auto"``: hives per shared process (measured: 16 idle hives take ~34-38 MiB PSS together, decision 0117).
AUTO_GROUP = 16
#: More hives in one process buys little memory and makes a crash of the process restart more of them.
MAX_PER_PROCESS = 64

Report = Callable[[str, str, str, str], None]


@dataclass(frozen=True, slots=True)
class UpSettings:
    """``hives_per_process``: ``None`` (``"auto"``, the default) runs each hive in its own process for a tree of
    up to :data:`AUTO_SHARED_FROM` hives and groups of :data:`AUTO_GROUP` above; ``1`` always one process per
    hive; ``N`` up to N hives per process. Hives share a process only with siblings (the same parent).

    ``elsewhere``: hives ``up`` starts no process of, because they run on other machines or containers
    (``subhive creds`` and ``subhive join``): their identities, accounts, boards and keys are made all the same
    (docs/up.md#a-hive-that-runs-elsewhere, decision 0122)."""

    hives_per_process: int | None = None
    elsewhere: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        n = self.hives_per_process
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_PER_PROCESS):
            raise ValueError(f"hives_per_process must be 1 to {MAX_PER_PROCESS} or None (auto), not {n!r}")

    def per_process(self, hives: int) -> int:
        """Hives per process for a tree of ``hives``.

        >>> UpSettings().per_process(3), UpSettings().per_process(500), UpSettings(8).per_process(3)
        (1, 16, 8)
        """
        if self.hives_per_process is not None:
            return self.hives_per_process
        return 1 if hives <= AUTO_SHARED_FROM else AUTO_GROUP

    @property
    def is_set(self) -> bool:
        return self != UpSettings()

    def to_toml(self) -> str:
        auto = self.hives_per_process is None
        text = "[up]\n" + (
            'hives_per_process = "auto"\n' if auto else f"hives_per_process = {self.hives_per_process}\n"
        )
        if self.elsewhere:
            text += f"elsewhere = [{', '.join(json.dumps(h) for h in self.elsewhere)}]\n"
        return text

    @classmethod
    def read(cls, table: object, pointer: str, report: Report) -> UpSettings:
        """Settings from an ``[up]`` table at ``pointer``, each problem passed to ``report``; what is wrong keeps
        its default."""
        if not isinstance(table, Mapping):
            report(pointer, "workspace.type", "up must be a table", "write it as [up] with hives_per_process = 16")
            return cls()
        unknown_keys(table, pointer, UP_KEYS, "workspace.unknown_key", report)
        elsewhere = _elsewhere(table.get("elsewhere", []), join_pointer(pointer, "elsewhere"), report)
        value = table.get("hives_per_process", "auto")
        if value == "auto":
            return cls(elsewhere=elsewhere)
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_PER_PROCESS:
            report(
                join_pointer(pointer, "hives_per_process"),
                "workspace.up_hives_per_process",
                f'hives_per_process = {value!r} is not "auto" or 1 to {MAX_PER_PROCESS}',
                '1 runs each hive in its own process; 16 lets up to 16 sibling hives share one; "auto" (the default) '
                f"shares from {AUTO_SHARED_FROM + 1} hives on",
            )
            return cls(elsewhere=elsewhere)
        return cls(value, elsewhere)


def _elsewhere(value: object, pointer: str, report: Report) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(h, str) and h for h in value):
        report(
            pointer,
            "workspace.up_elsewhere",
            f"elsewhere = {value!r} is not a list of hive names",
            'e.g. elsewhere = ["db"]: hives that run on another machine, joined with subhive join',
        )
        return ()
    return tuple(value)
