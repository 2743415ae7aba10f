"""The NATS bus: the embedded server, subjects and per-hive credentials.

The subject scheme and the permission rules are in :mod:`subhive.bus._permissions`; the server process in
:mod:`subhive.bus._server`.
"""

from subhive.bus._permissions import (
    ADMIN_USER,
    DLQ_STREAM,
    AccountsConfig,
    Permissions,
    accounts_config,
    dlq_subject,
    event_subject,
    hive_permissions,
    inbox_prefix,
    kv_bucket,
    op_subject,
)
from subhive.bus._server import BusEndpoint, EmbeddedServer, ServerConfig, find_server_binary

__all__ = [
    "ADMIN_USER",
    "DLQ_STREAM",
    "AccountsConfig",
    "BusEndpoint",
    "EmbeddedServer",
    "Permissions",
    "ServerConfig",
    "accounts_config",
    "dlq_subject",
    "event_subject",
    "find_server_binary",
    "hive_permissions",
    "inbox_prefix",
    "kv_bucket",
    "op_subject",
]
