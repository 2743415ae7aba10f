"""Language-model agents in hives: a stateless, prefix-stable loop over any OpenAI-compatible endpoint.

:class:`Agent` runs the loop; :func:`build_agent` gives it its manifest's tools, confined to its hive;
:func:`run_hive_turn` (``subhive agent run``), :func:`agent_sources` (board keys, served operations) and
:class:`AppServer`/:class:`WebSocketAppServer` (``subhive agent serve``) start turns, whose frames are kept on
the hive's board. :class:`ScriptedServer` stands in for a paid model. See docs/agents.md.
"""

from ._app_server import PROTOCOL_VERSION, AppServer
from ._app_websocket import TOKEN_FILE, WebSocketAppServer, parse_listen
from ._approvals import TurnParked, parking_approver, root_approver
from ._build import build_agent, settings_from_spec
from ._contracts import contract_tool
from ._conversation import COMPACTION_PROMPT, Conversation, TurnState
from ._diffs import apply_patch, diff_tool, parse_diff
from ._escalate import escalate_stop, stop_subject
from ._files import FileSlice, file_tools
from ._grpc_tools import GrpcContract, grpc_contracts, grpc_tools, load_grpc_contract, rpc_tool_name
from ._hive_tools import board_tools, contract_tool_name, contract_tools
from ._hive_turn import TRANSCRIPT_PREFIX, BoardTranscript, pick_agent, run_hive_turn, transcript_key
from ._loop import Agent, AnswerCheck, Frame, FrameSink, RequestUsage, Stop, TurnResult
from ._memory import MEMORY_PREFIX, AgentMemory, memory_note, select_memories, settled
from ._plan import PLAN_PREFIX, plan_tool, rank_plan
from ._proto_schema import message_schema
from ._repair import FIXED_BY, repair_prompt, repair_turn
from ._review import REVIEW_PREFIX, Review, consensus_signals, review_for, review_id, review_key
from ._scripted import RecordedRequest, ScriptedServer, Step, ToolCallStep, estimate_tokens
from ._settings import AgentSettings, Budgets, ModelSettings, NoEndpoint, open_client
from ._source import AgentSource, AgentStopped, agent_sources, operation_answer
from ._tools import (
    POLICIES,
    Approval,
    Approver,
    Policy,
    Tool,
    ToolBox,
    ToolCall,
    ToolError,
    ToolResult,
    announcing,
    approval_asked,
    schema_object,
)
from ._vote import agent_voter, json_answer

__all__ = [
    "COMPACTION_PROMPT",
    "FIXED_BY",
    "MEMORY_PREFIX",
    "PLAN_PREFIX",
    "POLICIES",
    "PROTOCOL_VERSION",
    "REVIEW_PREFIX",
    "TOKEN_FILE",
    "TRANSCRIPT_PREFIX",
    "Agent",
    "AgentMemory",
    "AgentSettings",
    "AgentSource",
    "AgentStopped",
    "AnswerCheck",
    "AppServer",
    "Approval",
    "Approver",
    "BoardTranscript",
    "Budgets",
    "Conversation",
    "FileSlice",
    "Frame",
    "FrameSink",
    "GrpcContract",
    "ModelSettings",
    "NoEndpoint",
    "Policy",
    "RecordedRequest",
    "RequestUsage",
    "Review",
    "ScriptedServer",
    "Step",
    "Stop",
    "Tool",
    "ToolBox",
    "ToolCall",
    "ToolCallStep",
    "ToolError",
    "ToolResult",
    "TurnParked",
    "TurnResult",
    "TurnState",
    "WebSocketAppServer",
    "agent_sources",
    "agent_voter",
    "announcing",
    "apply_patch",
    "approval_asked",
    "board_tools",
    "build_agent",
    "consensus_signals",
    "contract_tool",
    "contract_tool_name",
    "contract_tools",
    "diff_tool",
    "escalate_stop",
    "estimate_tokens",
    "file_tools",
    "grpc_contracts",
    "grpc_tools",
    "json_answer",
    "load_grpc_contract",
    "memory_note",
    "message_schema",
    "open_client",
    "operation_answer",
    "parking_approver",
    "parse_diff",
    "parse_listen",
    "pick_agent",
    "plan_tool",
    "rank_plan",
    "repair_prompt",
    "repair_turn",
    "review_for",
    "review_id",
    "review_key",
    "root_approver",
    "rpc_tool_name",
    "run_hive_turn",
    "schema_object",
    "select_memories",
    "settings_from_spec",
    "settled",
    "stop_subject",
    "transcript_key",
]
