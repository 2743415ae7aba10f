"""The root hive: the lock, the negotiation engine, its durable state and gRPC service (docs/root-hive.md).

>>> root = RootHive.open(Path("shop"))  # doctest: +SKIP
>>> root.propose("backend", files).status  # doctest: +SKIP
'accepted'
"""

from typing import TYPE_CHECKING, Any

from ._errors import Conflict, NotFound, PermissionDenied, Unauthenticated
from ._lock import LOCK_FILE, Lock, LockEntry, contract_hash
from ._lock_check import LockInconsistent, check_lock
from ._log import Frame
from ._model import (
    AgentStep,
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
    "ADMIN_TOKEN_FILE",
    "LOCK_FILE",
    "TOKENS_DIR",
    "AgentStep",
    "AlreadyDecided",
    "Approval",
    "Conflict",
    "ContractInfo",
    "Endpoint",
    "Frame",
    "FrameListener",
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
    "RootClient",
    "RootHive",
    "RootServer",
    "RootUnavailable",
    "ServerTls",
    "Unauthenticated",
    "VersionInfo",
    "WorkspaceRoot",
    "abort_with",
    "admin_token_of",
    "channel_credentials",
    "check_listen_address",
    "check_lock",
    "contract_files",
    "contract_hash",
    "error_details",
    "error_from_details",
    "is_loopback",
    "root_ca_of",
    "running_root_address",
    "served_root",
    "status_of",
]

if TYPE_CHECKING:
    from ._client import (
        ADMIN_TOKEN_FILE,
        RootClient,
        RootUnavailable,
        admin_token_of,
        contract_files,
        running_root_address,
        served_root,
    )
    from ._engine import TOKENS_DIR, RootHive
    from ._service import RootServer
    from ._status import abort_with, error_details, error_from_details, status_of
    from ._tls import ServerTls, channel_credentials, check_listen_address, is_loopback
    from ._workspace_root import AlreadyDecided, FrameListener, WorkspaceRoot, root_ca_of

# What loads on first use, by the module that has it: the engine is the heaviest import here, and a hive
# process (which only talks to the root through its client) never needs it; the client and the gRPC status
# table bring grpc, which commands that only read files do without.
_LAZY = {
    "ADMIN_TOKEN_FILE": "._client",
    "RootUnavailable": "._client",
    "running_root_address": "._client",
    "served_root": "._client",
    "contract_files": "._client",
    "TOKENS_DIR": "._engine",
    "RootServer": "._service",
    "ServerTls": "._tls",
    "channel_credentials": "._tls",
    "check_listen_address": "._tls",
    "is_loopback": "._tls",
    "RootHive": "._engine",
    "RootClient": "._client",
    "admin_token_of": "._client",
    "abort_with": "._status",
    "error_details": "._status",
    "error_from_details": "._status",
    "status_of": "._status",
    "WorkspaceRoot": "._workspace_root",
    "AlreadyDecided": "._workspace_root",
    "FrameListener": "._workspace_root",
    "root_ca_of": "._workspace_root",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module, __name__), name)
