"""The tools that reach past the hive's files: its own blackboard (compare-and-set, like every writer) and one
typed tool per operation of each contract it consumes, validated against the contract before the request
goes over the bus."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..hive import KvBlackboard, RevisionConflict, check_key, key_matches
from ..runtime import ContractBinding, Transport
from ._tools import Tool, ToolError, schema_object

__all__ = ["board_tools", "contract_tool_name", "contract_tools"]

_KEY = {"type": "string", "description": "a key of the hive's blackboard, e.g. tasks.t1"}


def board_tools(board: KvBlackboard, writer: str, *, critical: Sequence[str] = ()) -> list[Tool]:
    """``board_read`` and ``board_write`` on ``board``, writes attributed to ``writer``. A key matching a
    ``critical`` pattern (``[quorum]``) is refused (``quorum.required``): only a quorum of voters writes it."""

    async def board_read(arguments: dict[str, Any]) -> dict[str, Any]:
        key = _key(arguments["key"])
        entry = await board.get(key)
        if entry is None:
            return {"key": key, "value": None, "revision": 0}
        return {"key": key, "value": entry.value, "revision": entry.revision, "writer": entry.writer}

    async def board_write(arguments: dict[str, Any]) -> dict[str, Any]:
        key = _key(arguments["key"])
        if any(key_matches(pattern, key) for pattern in critical):
            raise ToolError(
                f"{key} is critical in this hive: no agent writes it alone",
                code="quorum.required",
                hint="a value is written there only when a quorum of voters agrees ([quorum] in subhive.toml)",
            )
        expected = arguments["expected_revision"]
        try:
            revision = await board.put(key, arguments["value"], writer=writer, expected_revision=expected)
        except RevisionConflict as conflict:
            raise ToolError(
                conflict.message,
                code=conflict.code,
                hint="board_read the key again, then write with its current revision",
            ) from None
        return {"key": key, "revision": revision}

    return [
        Tool(
            "board_read",
            "Read one key of the hive's blackboard: its value, revision (0: never written) and writer.",
            schema_object({"key": _KEY}, ["key"]),
            board_read,
            concurrent=True,
        ),
        Tool(
            "board_write",
            "Write one key of the hive's blackboard, compare-and-set: expected_revision is the "
            "revision you read (0 to create); a write that lost a race is refused.",
            schema_object(
                {
                    "key": _KEY,
                    "value": {"description": "any JSON value the board's schema allows"},
                    "expected_revision": {"type": "integer", "minimum": 0},
                },
                ["key", "value", "expected_revision"],
            ),
            board_write,
        ),
    ]


def _key(key: str) -> str:
    check_key(key)  # blackboard.key_invalid, with its hint, reaches the model as the tool's error
    return key


def contract_tool_name(contract: str, operation: str) -> str:
    """``call_<contract>_<operation>``, in the characters a tool name allows."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", f"call_{contract}_{operation}")[:64]


def contract_tools(bindings: Sequence[ContractBinding], transport: Transport, *, hive: str) -> list[Tool]:
    """One tool per operation of every contract ``hive`` consumes (not those it provides); its parameters are
    the operation's input schema, its result the provider's validated reply."""
    tools: list[Tool] = []
    for binding in bindings:
        if binding.provider == hive:
            continue
        for operation, (input_key, _output) in sorted(binding.operations.items()):
            tools.append(_contract_tool(binding, operation, input_key, transport))
    return tools


def _contract_tool(binding: ContractBinding, operation: str, input_key: str, transport: Transport) -> Tool:
    schema = binding.schemas[input_key]
    wrapped = not (isinstance(schema, dict) and schema.get("type") == "object")
    parameters = schema_object({"input": schema}, ["input"]) if wrapped else dict(schema)

    async def call(arguments: dict[str, Any]) -> Any:
        payload = arguments["input"] if wrapped else arguments
        binding.check(input_key, payload, moving="outgoing")  # a PayloadInvalid reaches the model with its pointer
        return await transport.request(binding, operation, payload)

    return Tool(
        contract_tool_name(binding.name, operation),
        f"Call {operation} of contract {binding.id} (provided by {binding.provider}) over the bus; "
        "the result is its reply.",
        parameters,
        call,
        concurrent=True,  # another hive's operation: the model asked for these calls together (decision 0063)
    )
