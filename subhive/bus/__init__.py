"""The NATS bus: the embedded server, subjects and per-hive credentials, and the contract transport.
See docs/bus.md.
"""

from subhive.bus._accounts import HUB_ACCOUNT, AccountsConfig, accounts_config, installable_accounts
from subhive.bus._asyncapi import export_asyncapi, render_asyncapi
from subhive.bus._cluster import EmbeddedCluster, jetstream_ready
from subhive.bus._consumers import (
    BOARD_ACK_WAIT,
    BOARD_CONSUMER,
    EVENT_MAX_ACK_PENDING,
    ConsumerSpec,
    Deliveries,
    bind_consumer,
    board_consumer,
    ensure_consumers,
    event_consumer,
)
from subhive.bus._deadletter import (
    REPLAYS_STREAM,
    DeadLetter,
    DeadLetters,
    DeadLetterUsage,
    FullnessAlarm,
    Replay,
    dlq_stream,
    ensure_dead_letter_stream,
    ensure_dead_letter_streams,
)
from subhive.bus._external import ExternalCluster
from subhive.bus._failover import through_failover
from subhive.bus._lock_grants import BusPlan, bus_plan
from subhive.bus._nkeys import NKey, nkey_of, public_key_of
from subhive.bus._permissions import (
    ADMIN_USER,
    DLQ_STREAM,
    Line,
    Permissions,
    deliver_subject,
    dlq_subject,
    durable_name,
    event_stream,
    event_subject,
    hive_permissions,
    inbox_prefix,
    kv_bucket,
    line_name,
    op_subject,
    replay_subject,
    sender_of,
)
from subhive.bus._repair import propose_repair, report_to_root
from subhive.bus._replay_rules import ReplayRules, ReplayTarget
from subhive.bus._server import BusEndpoint, EmbeddedServer, ServerConfig, find_server_binary
from subhive.bus._streams import ensure_event_streams
from subhive.bus._transport import MAX_DELIVER, BusStats, Failure, NatsTransport
from subhive.bus._wire import BusError, PermissionViolation, RemoteError, WireError

__all__ = [
    "ADMIN_USER",
    "BOARD_ACK_WAIT",
    "BOARD_CONSUMER",
    "DLQ_STREAM",
    "EVENT_MAX_ACK_PENDING",
    "HUB_ACCOUNT",
    "MAX_DELIVER",
    "REPLAYS_STREAM",
    "AccountsConfig",
    "BusEndpoint",
    "BusError",
    "BusPlan",
    "BusStats",
    "ConsumerSpec",
    "DeadLetter",
    "DeadLetterUsage",
    "DeadLetters",
    "Deliveries",
    "EmbeddedCluster",
    "EmbeddedServer",
    "ExternalCluster",
    "Failure",
    "FullnessAlarm",
    "Line",
    "NKey",
    "NatsTransport",
    "PermissionViolation",
    "Permissions",
    "RemoteError",
    "Replay",
    "ReplayRules",
    "ReplayTarget",
    "ServerConfig",
    "WireError",
    "accounts_config",
    "bind_consumer",
    "board_consumer",
    "bus_plan",
    "deliver_subject",
    "dlq_stream",
    "dlq_subject",
    "durable_name",
    "ensure_consumers",
    "ensure_dead_letter_stream",
    "ensure_dead_letter_streams",
    "ensure_event_streams",
    "event_consumer",
    "event_stream",
    "event_subject",
    "export_asyncapi",
    "find_server_binary",
    "hive_permissions",
    "inbox_prefix",
    "installable_accounts",
    "jetstream_ready",
    "kv_bucket",
    "line_name",
    "nkey_of",
    "op_subject",
    "propose_repair",
    "public_key_of",
    "render_asyncapi",
    "replay_subject",
    "report_to_root",
    "sender_of",
    "through_failover",
]
