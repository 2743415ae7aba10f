"""RootHive, composed: one mixin per concern over the shared state and its one commit path (``_state.py``).

docs/root-hive.md ("Where the code lives") maps concerns to modules. Not thread-safe: callers serialise calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from ._agent_frames import AgentFrames
from ._approvals import Approvals
from ._auth import Authentication
from ._endpoint_calls import EndpointCalls
from ._lifecycle import Lifecycle
from ._log import Frame
from ._proposals import Proposals
from ._registry import HiveRegistry
from ._requirements import Requirements
from ._state import TOKENS_DIR, Applier
from ._tool_calls import ToolCalls
from ._verdicts import Verdicts
from ._views import Views

__all__ = ["TOKENS_DIR", "Frame", "RootHive"]


class RootHive(
    Lifecycle,
    Authentication,
    HiveRegistry,
    Requirements,
    Proposals,
    Verdicts,
    Approvals,
    EndpointCalls,
    Views,
    ToolCalls,
    AgentFrames,
):
    """The root's state and rules. Open with :meth:`open`; close with :meth:`close` (or ``with``)."""

    #: Every event the log holds, and the concern that applies it (at commit and at replay alike).
    _APPLY: ClassVar[Mapping[str, Applier]] = {
        "hive_registered": HiveRegistry._apply_registered,
        "hive_removed": HiveRegistry._apply_hive_removed,
        "requirement_declared": Requirements._apply_requirement,
        "requirement_withdrawn": Requirements._apply_requirement_withdrawn,
        "need_announced": Requirements._apply_announced,
        "need_awarded": Requirements._apply_awarded,
        "proposal_received": Proposals._apply_received,
        "contract_ready": Verdicts._apply_ready,
        "pending_approval": Approvals._apply_pending,
        "approval_decided": Approvals._apply_decided,
        "repair_proposed": Approvals._apply_repair,
        "tool_call_proposed": ToolCalls._apply_tool_call,
        "endpoint_registered": EndpointCalls._apply_endpoint,
        "endpoint_removed": EndpointCalls._apply_endpoint_removed,
    }
