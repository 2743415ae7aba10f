"""Checking a new contract version against an older one: a verdict per part, and the semver bump it needs.
The direction each part must keep and the bump rules are in docs/contracts.md#compatibility-per-direction.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import InputError, Location
from ..semver import Bump, Version
from ._report import Change, DiffReport, Direction
from .jsonschema import diff_schemas
from .protobuf import compile_proto, diff_protos, rules_for

if TYPE_CHECKING:
    from ..contract import Contract, SchemaRef

__all__ = ["CONTRACT_CODES", "ContractCheck", "PartVerdict", "check_contract"]

#: Codes for changes to the contract's shape (its schemas' changes carry the engines' codes).
CONTRACT_CODES: dict[str, str] = {
    "operation.added": "a request/reply operation was added (additive)",
    "operation.removed": "a request/reply operation was removed: consumers calling it break",
    "operation.idempotent_added": "an operation became idempotent: consumers may now send it again (additive)",
    "operation.idempotent_removed": "an operation is no longer idempotent: consumers that send it again break",
    "event.added": "an event was added (additive)",
    "event.removed": "an event was removed: consumers subscribed to it never hear from it again",
    "grpc.added": "a gRPC service was added (additive)",
    "grpc.removed": "the gRPC service was removed: consumers calling it break",
    "grpc.service_renamed": "the gRPC service name changed: its RPC paths change, so every call breaks",
    "provider.changed": "another hive provides the contract: routes and permissions change for consumers",
    "description.changed": "a description changed (documentation only)",
}


@dataclass(frozen=True, slots=True)
class PartVerdict:
    """The diff of one part (``operations.place_order.input``) judged in the direction that part needs."""

    part: str
    direction: Direction
    report: DiffReport

    @property
    def compatible(self) -> bool:
        return self.report.compatible(self.direction)

    @property
    def breaking(self) -> tuple[Change, ...]:
        return self.report.breaking(self.direction)

    def to_dict(self) -> dict[str, object]:
        return {
            "part": self.part,
            "direction": self.direction.value,
            "compatible": self.compatible,
            **self.report.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class ContractCheck:
    """Everything ``subhive contract check`` reports."""

    name: str
    old_version: Version
    new_version: Version
    parts: tuple[PartVerdict, ...]

    @property
    def compatible(self) -> bool:
        return all(p.compatible for p in self.parts)

    @property
    def breaking(self) -> tuple[tuple[str, Change], ...]:
        return tuple((p.part, c) for p in self.parts for c in p.breaking)

    @property
    def required_bump(self) -> Bump:
        """The smallest bump that keeps semver honest for these changes."""
        if not self.compatible:
            return Bump.MAJOR
        if any(not c.is_neutral for p in self.parts for c in p.report.changes):
            return Bump.MINOR
        if any(p.report.changes for p in self.parts):
            return Bump.PATCH
        return Bump.NONE

    @property
    def actual_bump(self) -> Bump:
        return self.new_version.bump_from(self.old_version)

    @property
    def semver_ok(self) -> bool:
        """True when the new version is newer and grew at least as much as the changes need, or is the same
        version with nothing changed (a diff of a version with itself)."""
        if self._unchanged_version:
            return True
        return self.new_version > self.old_version and self.actual_bump >= self.required_bump

    @property
    def _unchanged_version(self) -> bool:
        return self.new_version == self.old_version and self.required_bump is Bump.NONE

    def offending(self) -> tuple[tuple[str, Change], ...]:
        """The changes that need a bigger bump than the one made (empty when semver is honest)."""
        if self.semver_ok:
            return ()
        return tuple(
            (p.part, c) for p in self.parts for c in p.report.changes if _bump_for(c, p.direction) > self.actual_bump
        )

    def suggested_version(self) -> Version:
        """The smallest version these changes can be published as (the same version when nothing changed)."""
        if self._unchanged_version:
            return self.old_version
        return self.old_version.next(max(self.required_bump, Bump.PATCH))

    def to_dict(self) -> dict[str, object]:
        return {
            "contract": self.name,
            "old_version": str(self.old_version),
            "new_version": str(self.new_version),
            "compatible": self.compatible,
            "required_bump": str(self.required_bump),
            "actual_bump": str(self.actual_bump),
            "semver_ok": self.semver_ok,
            "suggested_version": str(self.suggested_version()),
            "offending": [{"part": part, **change.to_dict()} for part, change in self.offending()],
            "parts": [p.to_dict() for p in self.parts],
        }


def check_contract(new: Contract, old: Contract) -> ContractCheck:
    """Compare every part of ``new`` with ``old`` in the direction it needs.

    >>> check = check_contract(load_contract("contracts/orders/1.1.0"), load_contract("contracts/orders/1.0.0"))
    >>> check.semver_ok, check.required_bump
    (True, <Bump.MINOR: 2>)
    """
    if new.name != old.name:
        raise InputError(
            f"cannot check contract {new.name!r} against contract {old.name!r}",
            code="check.different_contracts",
            location=Location(file=str(new.directory)),
            hint="compare two versions of the same contract (contracts/<name>/<version>/)",
        )
    return ContractCheck(new.name, old.version, new.version, tuple(_parts(new, old)))


def _bump_for(change: Change, direction: Direction) -> Bump:
    if not direction.allows(change):
        return Bump.MAJOR
    return Bump.PATCH if change.is_neutral else Bump.MINOR


def _shape_change(code: str, path: str, message: str, *, compatible: bool, neutral: bool = False) -> Change:
    # A compatible shape change that is not documentation adds to the interface: it needs a minor bump.
    return Change(code, path, compatible, compatible, message, additive=compatible and not neutral)


def _parts(new: Contract, old: Contract) -> Iterator[PartVerdict]:
    shape: list[Change] = []
    if new.provider != old.provider:
        shape.append(
            _shape_change(
                "provider.changed",
                "/provider",
                f"provider changed from {old.provider!r} to {new.provider!r}",
                compatible=False,
            )
        )
    if new.description != old.description:
        shape.append(
            _shape_change(
                "description.changed", "/description", "contract description changed", compatible=True, neutral=True
            )
        )
    yield from _operations(new, old, shape)
    yield from _events(new, old, shape)
    yield from _grpc(new, old, shape)
    yield PartVerdict("contract", Direction.FULL, DiffReport.of(shape))


def _operations(new: Contract, old: Contract, shape: list[Change]) -> Iterator[PartVerdict]:
    for name in sorted(old.operations.keys() - new.operations.keys()):
        shape.append(
            _shape_change(
                "operation.removed", f"/operations/{name}", f"operation {name!r} was removed", compatible=False
            )
        )
    for name in sorted(new.operations.keys() - old.operations.keys()):
        shape.append(
            _shape_change("operation.added", f"/operations/{name}", f"operation {name!r} was added", compatible=True)
        )
    for name in sorted(new.operations.keys() & old.operations.keys()):
        before, after = old.operations[name], new.operations[name]
        if before.idempotent != after.idempotent:
            shape.append(
                _shape_change(
                    "operation.idempotent_added" if after.idempotent else "operation.idempotent_removed",
                    f"/operations/{name}/idempotent",
                    f"operation {name!r} is {'now' if after.idempotent else 'no longer'} idempotent",
                    compatible=after.idempotent,
                )
            )
        if before.description != after.description:
            shape.append(
                _shape_change(
                    "description.changed",
                    f"/operations/{name}/description",
                    f"description of operation {name!r} changed",
                    compatible=True,
                    neutral=True,
                )
            )
        yield PartVerdict(f"operations.{name}.input", Direction.BACKWARD, _diff_refs(before.input, after.input))
        yield PartVerdict(f"operations.{name}.output", Direction.FORWARD, _diff_refs(before.output, after.output))


def _events(new: Contract, old: Contract, shape: list[Change]) -> Iterator[PartVerdict]:
    for name in sorted(old.events.keys() - new.events.keys()):
        shape.append(_shape_change("event.removed", f"/events/{name}", f"event {name!r} was removed", compatible=False))
    for name in sorted(new.events.keys() - old.events.keys()):
        shape.append(_shape_change("event.added", f"/events/{name}", f"event {name!r} was added", compatible=True))
    for name in sorted(new.events.keys() & old.events.keys()):
        before, after = old.events[name], new.events[name]
        if before.description != after.description:
            shape.append(
                _shape_change(
                    "description.changed",
                    f"/events/{name}/description",
                    f"description of event {name!r} changed",
                    compatible=True,
                    neutral=True,
                )
            )
        yield PartVerdict(f"events.{name}.payload", Direction.FORWARD, _diff_refs(before.payload, after.payload))


def _grpc(new: Contract, old: Contract, shape: list[Change]) -> Iterator[PartVerdict]:
    if old.grpc is None and new.grpc is None:
        return
    if old.grpc is None:
        shape.append(_shape_change("grpc.added", "/grpc", "a gRPC service was added", compatible=True))
        return
    if new.grpc is None:
        shape.append(
            _shape_change("grpc.removed", "/grpc", f"gRPC service {old.grpc.service} was removed", compatible=False)
        )
        return
    if new.grpc.service != old.grpc.service:
        shape.append(
            _shape_change(
                "grpc.service_renamed",
                "/grpc/service",
                f"gRPC service renamed from {old.grpc.service} to {new.grpc.service}",
                compatible=False,
            )
        )
    # Compiled with the contract directory as import root, exactly as lint compiled them; judged under the
    # rule category of the workspace that holds the new version.
    before = compile_proto(old.grpc.proto, include_dirs=[old.directory])
    after = compile_proto(new.grpc.proto, include_dirs=[new.directory])
    rules = rules_for(new.grpc.proto)
    yield PartVerdict("grpc", Direction.FULL, diff_protos(before, after, rules=rules))


def _diff_refs(old: SchemaRef, new: SchemaRef) -> DiffReport:
    # Whole documents plus pointers: "#/$defs/..." references inside the chosen subschema must resolve
    # against the document they are written in.
    return diff_schemas(
        old.document.data,
        new.document.data,
        old_resolver=old.resolver,
        new_resolver=new.resolver,
        old_pointer=old.pointer,
        new_pointer=new.pointer,
    )
