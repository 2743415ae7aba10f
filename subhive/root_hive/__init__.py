"""The root hive: the lock, the negotiation engine, and its durable state (docs/root-hive.md).

    >>> from subhive.root_hive import RootHive
    >>> root = RootHive.open(Path("shop"))                      # doctest: +SKIP
    >>> token = root.register_hive("backend", kind="backend").token  # doctest: +SKIP
    >>> root.propose("backend", files).status                   # doctest: +SKIP
    'accepted'

The engine is synchronous and not thread-safe; the gRPC service serialises calls into it. Every change is
an event in ``.subhive/root/events.log`` (fsynced before a call returns), and those events are the frames
watchers receive, so a ``seq`` is both a resume token and a position in the log.
"""

from typing import TYPE_CHECKING, Any

from ._errors import Conflict, NotFound, PermissionDenied, Unauthenticated
from ._lock import LOCK_FILE, Lock, LockEntry, contract_hash
from ._lock_check import LockInconsistent, check_lock
from ._log import Frame
from ._model import (
    Approval,
    ContractInfo,
    Endpoint,
    HiveStatus,
    ProposalOutcome,
    Registration,
    Repair,
    RequirementOutcome,
    VersionInfo,
)

__all__ = [
    "LOCK_FILE",
    "Approval",
    "Conflict",
    "ContractInfo",
    "Endpoint",
    "Frame",
    "HiveStatus",
    "Lock",
    "LockEntry",
    "LockInconsistent",
    "NotFound",
    "PermissionDenied",
    "ProposalOutcome",
    "Registration",
    "Repair",
    "RequirementOutcome",
    "RootHive",
    "Unauthenticated",
    "VersionInfo",
    "check_lock",
    "contract_hash",
]

if TYPE_CHECKING:
    from ._engine import RootHive


def __getattr__(name: str) -> Any:
    # The engine is the heaviest import here, and a hive process (which only talks to the root through its
    # client) never needs it: load it when someone asks for it.
    if name == "RootHive":
        from ._engine import RootHive

        return RootHive
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
