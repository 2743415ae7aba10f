"""What hives need: requirements, announced needs (Contract Net), and which accepted version meets each.

The resolution rule here decides consumers in the lock, awards, and what a proposal may not drop.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..contract import Contract, load_contract
from ..errors import InputError, SubhiveError
from ..semver import Version
from ..workspace import VersionRange
from ._features import check_feature_names, missing_features
from ._lock import Lock
from ._log import Frame
from ._model import RequirementOutcome
from ._rules import CONTRACT_NAME
from ._state import Announcement, Record, Requirement, RootState, batched

__all__ = ["Requirements"]


class Requirements(RootState):
    """Requirements, announcements and resolution."""

    @batched
    def declare_requirement(
        self, hive: str, contract: str, versions: str, *, operations: Sequence[str] = (), fields: Sequence[str] = ()
    ) -> RequirementOutcome:
        """Record what ``hive`` needs; announce an open need (Contract Net) when no accepted version meets it.

        >>> root.declare_requirement("web", "orders", "^1.2", operations=["place_order"])  # doctest: +SKIP
        RequirementOutcome(satisfied_by=Version(1, 2, 0), announcement_id=None)
        """
        self._known_hive(hive)
        if not isinstance(contract, str) or not CONTRACT_NAME.match(contract):
            raise InputError(
                f"{contract!r} is not a contract name",
                code="requirement.contract",
                hint="[a-z][a-z0-9_-]*, at most 63 characters, as in contract.yaml",
            )
        try:
            parsed = VersionRange.parse(versions)
        except ValueError as exc:
            raise InputError(str(exc), code="requirement.range", hint="e.g. ^1.2, ~1.2.3 or >=1.0.0,<2.0.0") from None
        operations, fields = tuple(operations), tuple(fields)
        check_feature_names(operations, fields)
        requirement = Requirement(hive, contract, versions, parsed, operations, fields)
        satisfied = self._resolve(requirement)
        announcement = None if satisfied else f"need-{len(self._announcements) + 1}"
        records: list[Record] = [
            (
                "requirement_declared",
                {
                    "hive": hive,
                    "contract": contract,
                    "versions": versions,
                    "operations": list(operations),
                    "fields": list(fields),
                    "satisfied_by": str(satisfied) if satisfied else None,
                    "announcement_id": announcement,
                },
                {},
            )
        ]
        if announcement:
            records.append(
                (
                    "need_announced",
                    {
                        "announcement_id": announcement,
                        "hive": hive,
                        "contract": contract,
                        "versions": versions,
                        "operations": list(operations),
                        "fields": list(fields),
                    },
                    {},
                )
            )
        self._commit(records)
        return RequirementOutcome(satisfied, announcement)

    def announcements(self, status: str | None = "open") -> list[dict[str, Any]]:
        """Announced needs (Contract Net calls for proposals), ``status`` ``open``/``awarded``/``withdrawn``."""
        return [
            {"id": a.id, "hive": a.hive, "contract": a.contract, "versions": a.versions, "status": a.status}
            for a in self._announcements.values()
            if status is None or a.status == status
        ]

    def _resolve(self, req: Requirement, extra: tuple[Version, Contract] | None = None) -> Version | None:
        """The best intact accepted version meeting ``req`` (``extra`` counts as accepted, for what-ifs)."""
        candidates = [
            e.version
            for e in self._lock.versions(req.contract)
            if (req.contract, e.version) not in self._tampered and req.range.contains(e.version)
        ]
        if extra is not None and req.range.contains(extra[0]):
            candidates.append(extra[0])
        for version in sorted(candidates, reverse=True):
            if not (req.operations or req.fields):
                return version
            contract = extra[1] if extra is not None and version == extra[0] else self._contract(req.contract, version)
            if contract is not None and not missing_features(contract, req.operations, req.fields):
                return version
        return None

    def _contract(self, name: str, version: Version) -> Contract | None:
        entry = self._lock.get(name, version)
        key = (name, version, entry.hash if entry is not None else "")
        if key not in self._contracts:
            self._materialiser.wait()  # its directory may still be on its way to disk
            directory = self.workspace_root / "contracts" / name / str(version)
            if entry is not None and (name, version) not in self._tampered:
                # Read from disk only now, maybe long after open: an edit since then is tampering too.
                for problem in Lock({(name, version): entry}).verify(self.workspace_root):
                    self._tampered[(name, version)] = problem
            if (name, version) in self._tampered:
                return None
            try:
                self._contracts[key] = load_contract(directory)
            except SubhiveError:
                return None
        return self._contracts[key]

    def _apply_awarded(self, data: dict[str, Any], frame: Frame, replaying: bool) -> None:
        a = self._announcements.get(data["announcement_id"])
        if a is not None:
            self._announcements[a.id] = replace(a, status="awarded")

    def _requirements_of(self, contract: str) -> list[Requirement]:
        """The requirements on ``contract``, in the order they were first declared."""
        return [self._requirements[key] for key in self._requirement_keys.get(contract, ())]

    def _refresh_consumers(self, name: str) -> None:
        """Put each consumer of ``name`` on the version it resolves to (what the lock records)."""
        resolved: dict[Version, dict[str, str]] = {}
        for req in self._requirements_of(name):
            best = self._resolve(req)
            if best is not None:
                resolved.setdefault(best, {})[req.hive] = req.versions
        for entry in self._lock.versions(name):
            consumers = resolved.get(entry.version, {})
            if dict(entry.consumers) != consumers:
                self._lock.put(replace(entry, consumers=consumers))

    def _apply_requirement_withdrawn(self, data: dict[str, Any], frame: Frame, replaying: bool) -> None:
        key = (data["hive"], data["contract"])
        self._requirements.pop(key, None)
        self._requirement_keys.get(data["contract"], {}).pop(key, None)
        for a in [self._announcements[i] for i in self._announcement_ids.get(data["contract"], ())]:
            if a.hive == data["hive"] and a.status == "open":
                self._announcements[a.id] = replace(a, status="withdrawn")
        if not replaying:
            self._refresh_consumers(data["contract"])
            self._lock_dirty = True

    def _apply_requirement(self, data: dict[str, Any], frame: Frame, replaying: bool) -> None:
        key = (data["hive"], data["contract"])
        self._requirements[key] = Requirement(
            data["hive"],
            data["contract"],
            data["versions"],
            VersionRange.parse(data["versions"]),
            tuple(data["operations"]),
            tuple(data["fields"]),
        )
        self._requirement_keys.setdefault(data["contract"], {})[key] = None
        for a in [self._announcements[i] for i in self._announcement_ids.get(data["contract"], ())]:
            if a.hive == data["hive"] and a.status == "open":
                self._announcements[a.id] = replace(a, status="withdrawn")
        if not replaying:
            self._refresh_consumers(data["contract"])
            self._lock_dirty = True

    def _apply_announced(self, data: dict[str, Any], frame: Frame, replaying: bool) -> None:
        self._announcements[data["announcement_id"]] = Announcement(
            data["announcement_id"], data["hive"], data["contract"], data["versions"], "open"
        )
        self._announcement_ids.setdefault(data["contract"], []).append(data["announcement_id"])
