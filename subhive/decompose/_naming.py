"""Hive and contract names for the nodes of a split, following the hive-name rules of docs/workspace.md.
How a hive is named after its directory: docs/decompose.md#how-the-split-works.
"""

from __future__ import annotations

import keyword
import re
from collections import Counter
from collections.abc import Sequence

from ..workspace import MAX_HIVE_NAME as MAX_HIVE_NAME_LENGTH
from ..workspace import ROOT_HIVE, check_hive_name
from ._roles import Role

__all__ = ["HiveNames", "contract_for", "dominant_directory", "sanitise"]

_NOT_NAME = re.compile(r"[^a-z0-9]+")


def sanitise(text: str) -> str:
    """``text`` as a hive-name fragment: lower case, runs of other characters as one '_' (may be empty)."""
    return _NOT_NAME.sub("_", text.lower()).strip("_")


def _fit(text: str, limit: int = MAX_HIVE_NAME_LENGTH) -> str:
    return text[:limit].rstrip("_")


class HiveNames:
    """Hands out unique valid hive names, first come first served: made unique in tree order by prefixing the
    parent's name, then by a number, always within 32 characters.

    >>> names = HiveNames()
    >>> names.claim("Web-App"), names.claim("web_app"), names.claim("class"), names.claim("root")
    ('web_app', 'web_app_2', 'class_hive', 'root_dir')
    """

    def __init__(self, taken: set[str] | None = None) -> None:
        self.taken: set[str] = set(taken or ())

    def claim_first(self, wanted: list[str], *, parent: str | None = None, fallback: str = "hive") -> str:
        """The first of ``wanted`` that is free as it is, else :meth:`claim` of the first."""
        for candidate in wanted:
            valid = self._valid(sanitise(candidate) or sanitise(fallback) or "hive")
            if valid not in self.taken:
                return self._take(valid)
        return self.claim(wanted[0] if wanted else fallback, parent=parent, fallback=fallback)

    def claim(self, wanted: str, *, parent: str | None = None, fallback: str = "hive") -> str:
        base = self._valid(sanitise(wanted) or sanitise(fallback) or "hive")
        candidates = [base]
        if parent and parent != ROOT_HIVE and not base.startswith(parent):
            candidates.append(self._valid(f"{parent}_{base}"))
        for candidate in candidates:
            if candidate not in self.taken:
                return self._take(candidate)
        number = 2
        while True:
            suffix = f"_{number}"
            candidate = _fit(base, MAX_HIVE_NAME_LENGTH - len(suffix)) + suffix
            if candidate not in self.taken:
                return self._take(candidate)
            number += 1

    def _take(self, name: str) -> str:
        check_hive_name(name)  # a bug here, not a user mistake: every path above makes a valid name
        self.taken.add(name)
        return name

    @staticmethod
    def _valid(name: str) -> str:
        if not name[0].isalpha():
            name = "h_" + name
        name = _fit(name)
        if keyword.iskeyword(name):
            name = _fit(name + "_hive")
        if name == ROOT_HIVE:
            name = "root_dir"
        return name


def contract_for(hive: str, role: Role) -> str:
    """The contract a hive of the plan provides to the hives importing it: ``<hive>_storage`` for a db hive
    (as ``subhive new --kind db`` names it), else ``<hive>_api``."""
    return f"{hive}_storage" if role is Role.db else f"{hive}_api"


def dominant_directory(paths: Sequence[str], percent: int = 50) -> str:
    """The deepest directory holding at least ``percent`` % of ``paths`` ('' for the repository's root).

    >>> dominant_directory(["a/b/x.py", "a/b/y.py", "a/c/z.py"])
    'a/b'
    >>> dominant_directory(["a/b/x.py", "a/b/y.py", "a/c/z.py"], percent=80)
    'a'
    """
    counts: Counter[str] = Counter()
    for path in paths:
        parts = path.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            counts["/".join(parts[:depth])] += 1
    half = (len(paths) * percent + 99) // 100  # at least this many: half of 3 is 2
    best = ""
    for directory, count in counts.items():
        if count >= half and (directory.count("/"), directory) > (best.count("/") if best else -1, best):
            best = directory
    return best
