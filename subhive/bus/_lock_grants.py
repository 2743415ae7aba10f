"""What the bus needs from the lock: each hive's NATS permissions, the event streams, who may send what.
A hive touches exactly the contract versions codegen gives it stubs for (:func:`subhive.codegen.plan_stubs`),
so permissions, streams and stubs can never disagree about what a hive may use.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..errors import ContractInvalid, Problem
from ._consumers import ConsumerSpec, event_consumer
from ._permissions import Line, Permissions, hive_permissions

if TYPE_CHECKING:  # the lock and the contract loader are heavy imports a running hive never needs
    from ..root_hive import Lock
    from ..workspace import Workspace

__all__ = ["BusPlan", "bus_plan"]


@dataclass(frozen=True)
class BusPlan:
    """``permissions`` per hive; ``streams``: the (contract, line) pairs with events (``Version.line``: "1",
    "0.2"); ``senders``: the hives that may send requests for each (contract, line) (its consumers, for
    ``NatsTransport(allowed_senders=)``);
    ``consumers``: the durable event consumers the framework creates for the hives (each hive's board consumer
    comes with its bucket, :func:`subhive.hive.ensure_blackboard`); ``unmet``: requirements no locked version
    meets, which grant nothing (the rest of the tree runs; ``up`` and ``status`` report them)."""

    permissions: dict[str, Permissions]
    streams: list[tuple[str, str]]
    senders: dict[tuple[str, str], set[str]]
    consumers: list[ConsumerSpec] = field(default_factory=list)
    unmet: list[Problem] = field(default_factory=list)


def bus_plan(workspace: Workspace, lock: Lock) -> BusPlan:
    """The bus configuration of every workspace hive; raises :class:`ContractInvalid` listing every problem
    (a locked version that no longer loads). A requirement the lock cannot meet grants nothing and is listed
    in ``unmet``.

    >>> plan = bus_plan(open_workspace("shop"), Lock.load(Path("shop")))  # doctest: +SKIP
    >>> "subhive.orders.v1.op.place_order.web" in plan.permissions["web"].publish  # doctest: +SKIP
    True
    """
    from ..codegen import plan_stubs
    from ..contract import load_contract

    plan = plan_stubs(workspace, lock)
    problems: list[Problem] = list(plan.problems)
    operations: dict[tuple[str, Line], list[str]] = {}
    events: dict[tuple[str, Line], list[str]] = {}
    senders: dict[tuple[str, str], set[str]] = defaultdict(set)
    touches: dict[str, tuple[dict[str, list[Line]], dict[str, list[Line]]]] = {}
    for hive in plan.hives.values():
        provides: dict[str, list[Line]] = defaultdict(list)
        consumes: dict[str, list[Line]] = defaultdict(list)
        for stub in hive.contracts:
            key = (stub.entry.name, stub.entry.version.line)
            if key not in operations:
                try:
                    contract = load_contract(stub.entry.directory(workspace.root))
                except ContractInvalid as exc:
                    problems.extend(exc.problems)
                    continue
                operations[key] = sorted(contract.operations)
                events[key] = sorted(contract.events)
            (provides if stub.role == "provides" else consumes)[key[0]].append(key[1])
            if stub.role == "consumes":
                senders[key].add(hive.hive)
        touches[hive.hive] = (dict(provides), dict(consumes))
    if problems:
        raise ContractInvalid(problems)
    permissions = {
        hive: hive_permissions(hive, provides, consumes, operations, events)
        for hive, (provides, consumes) in touches.items()
    }
    streams = sorted((name, str(line)) for (name, line), names in events.items() if names)
    # The same (hive, contract, line, event) the grants name, so a consumer and its grants always agree.
    consumers = [
        event_consumer(hive, contract, line, event)
        for hive, (_, consumes) in sorted(touches.items())
        for contract, lines in sorted(consumes.items())
        for line in sorted(lines, key=str)
        for event in events.get((contract, line), ())
    ]
    return BusPlan(permissions, streams, dict(senders), consumers, list(plan.unmet))
