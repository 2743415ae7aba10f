"""The sub-hive runtime: a local blackboard, knowledge sources and the controller that schedules them.

A sub-hive's experts are **knowledge sources**: each declares what wakes it (``triggers``: NATS key patterns
on the blackboard; optionally ``operations`` of contracts the hive provides and ``events`` of contracts it
consumes), how urgent it is (``priority``) and what it writes in reaction (``activate``). The blackboard is a
JetStream key-value bucket only the hive may touch (:class:`KvBlackboard`: typed, full history, compare-and-set,
writes attributed to their writer); the :class:`Controller` wakes sources by priority with bounded
concurrency and escalates a source that loops, stalls or keeps failing to the root (docs/hives.md).

    >>> from subhive.hive import Entry, Write, key_matches
    >>> key_matches("tasks.*", "tasks.t1"), key_matches("tasks.*", "tasks.t1.notes")
    (True, False)

Keep the decision of a knowledge source pure (entry in, writes out) and ``activate`` a thin shell around
it: the pure part is what tests exercise, without a bus or a fake of one.
"""

from ._blackboard import BlackboardError, BrokenValue, KvBlackboard, RevisionConflict, board_stream, ensure_blackboard
from ._board_schema import BlackboardInvalid, BoardSchema
from ._controller import Controller, ControllerConfig, ControllerStats, Escalation, KnowledgeSourceFailed
from ._knowledge import (
    Blackboard,
    Entry,
    KnowledgeSource,
    Reply,
    Write,
    check_key,
    check_key_pattern,
    key_matches,
)
from ._loops import LoopDetector
from ._runtime import HiveContext, HiveRuntime
from ._sources import GrpcService

__all__ = [
    "Blackboard",
    "BlackboardError",
    "BlackboardInvalid",
    "BoardSchema",
    "BrokenValue",
    "Controller",
    "ControllerConfig",
    "ControllerStats",
    "Entry",
    "Escalation",
    "GrpcService",
    "HiveContext",
    "HiveRuntime",
    "KnowledgeSource",
    "KnowledgeSourceFailed",
    "KvBlackboard",
    "LoopDetector",
    "Reply",
    "RevisionConflict",
    "Write",
    "board_stream",
    "check_key",
    "check_key_pattern",
    "ensure_blackboard",
    "key_matches",
]
