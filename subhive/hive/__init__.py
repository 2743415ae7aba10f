"""The sub-hive runtime: a local blackboard, knowledge sources and the controller that schedules them.
Keep a source's decision pure (entry in, writes out) and ``activate`` a thin shell around it: the pure part is
what tests exercise, without a bus. See docs/hives.md.

    >>> from subhive.hive import Entry, Write, key_matches
    >>> key_matches("tasks.*", "tasks.t1"), key_matches("tasks.*", "tasks.t1.notes")
    (True, False)
"""

from ._blackboard import (
    BlackboardError,
    BoardSnapshot,
    BrokenValue,
    KvBlackboard,
    RevisionConflict,
    board_stream,
    ensure_blackboard,
)
from ._board_schema import BlackboardInvalid, BoardSchema
from ._controller import Controller, ControllerConfig, ControllerStats, Escalation, KnowledgeSourceFailed, Parked
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
from ._quorum import QUORUM_ROUNDS, QUORUM_VOTES, QuorumOutcome, QuorumWrites, Voter, agreement_needed, tally
from ._runtime import HiveContext, HiveRuntime
from ._serve import serve_hive
from ._sources import GrpcService

__all__ = [
    "QUORUM_ROUNDS",
    "QUORUM_VOTES",
    "Blackboard",
    "BlackboardError",
    "BlackboardInvalid",
    "BoardSchema",
    "BoardSnapshot",
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
    "Parked",
    "QuorumOutcome",
    "QuorumWrites",
    "Reply",
    "RevisionConflict",
    "Voter",
    "Write",
    "agreement_needed",
    "board_stream",
    "check_key",
    "check_key_pattern",
    "ensure_blackboard",
    "key_matches",
    "serve_hive",
    "tally",
]
