"""The agent tests' kit: agents pointed at a scripted server, and the prefix-stability check."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from subhive.agent import (
    Agent,
    AgentSettings,
    Budgets,
    ModelSettings,
    RecordedRequest,
    ScriptedServer,
    Tool,
    ToolBox,
    schema_object,
)
from subhive.bus import EmbeddedServer
from tests.kit import StartServer


def make_agent(
    server: ScriptedServer, tools: ToolBox | None = None, *, budgets: Budgets | None = None, **model: Any
) -> Agent:
    options: dict[str, Any] = {"max_retries": 0, "timeout": 5.0, **model}
    settings = AgentSettings(
        "helper",
        "You help with notes.",
        ModelSettings("scripted-1", base_url=server.base_url, **options),
        budgets=budgets or Budgets(),
    )
    return Agent(settings, tools)


def run(agent: Agent, prompt: str = "do the task", **options: Any) -> Any:
    async def main() -> Any:
        try:
            return await agent.run_turn(prompt, **options)
        finally:
            await agent.close()

    return asyncio.run(main())


def echo_tool(name: str = "echo", *, changed: Sequence[str] = ()) -> Tool:
    """A tool that answers with its arguments (and, optionally, says it changed files)."""
    from subhive.agent import ToolResult

    async def run(arguments: dict[str, Any]) -> ToolResult:
        return ToolResult({"echo": arguments}, files_changed=tuple(changed))

    return Tool(name, f"{name} its arguments", schema_object({"text": {"type": "string"}}, ["text"]), run)


def extensions(requests: Sequence[RecordedRequest]) -> list[bool]:
    """For each request after the first: is it the previous request plus new messages, with the same model,
    tools and instructions?"""
    out = []
    for before, after in itertools.pairwise(requests):
        a, b = before.body, after.body
        same = a.get("tools") == b.get("tools") and a["model"] == b["model"]
        out.append(
            same and b["messages"][: len(a["messages"])] == a["messages"] and len(b["messages"]) > len(a["messages"])
        )
    return out


@pytest.fixture
def scripted() -> Iterator[ScriptedServer]:
    server = ScriptedServer([])
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def bus(start_module_nats: StartServer) -> EmbeddedServer:
    """One nats-server for the whole module: each test opens its own boards on it."""
    return start_module_nats()
