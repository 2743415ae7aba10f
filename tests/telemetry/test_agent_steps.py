"""An agent's steps as spans and its tokens as metrics: a turn against the scripted model server over real HTTP
makes one span per model call and per tool call, in the trace the turn runs in, and the hive's endpoint counts
the tokens the server reported."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from subhive.agent import (
    Agent,
    AgentSettings,
    ModelSettings,
    ScriptedServer,
    Step,
    Tool,
    ToolBox,
    ToolResult,
    schema_object,
)
from subhive.telemetry import HiveCollector, serve_metrics, span

from ._scrape import scrape, value
from .conftest import finished


@pytest.fixture
def scripted() -> Iterator[ScriptedServer]:
    server = ScriptedServer([])
    server.start()
    yield server
    server.stop()


def test_model_and_tool_calls_are_spans_and_their_tokens_are_counted(
    scripted: ScriptedServer, traced: InMemorySpanExporter
) -> None:
    async def echo(arguments: dict[str, Any]) -> ToolResult:
        return ToolResult({"echo": arguments})

    tools = ToolBox([Tool("echo", "echo its arguments", schema_object({"text": {"type": "string"}}, ["text"]), echo)])
    scripted.extend([Step.call(("echo", {"text": "a"})), Step.say("done")])
    settings = AgentSettings(
        "counter", "You count.", ModelSettings("scripted-1", base_url=scripted.base_url, max_retries=0, timeout=5.0)
    )

    async def scenario() -> tuple[Any, str, list[tuple[str, dict[str, str], float]], float]:
        metrics = await serve_metrics(HiveCollector("solo", lambda: None))
        agent = Agent(settings, tools)
        try:
            before = value(await scrape(metrics.url), "subhive_agent_tokens_total", agent="counter")
            with span("turn", "internal") as turn:
                result = await agent.run_turn("count")
            return result, turn.traceparent, await scrape(metrics.url), before
        finally:
            await agent.close()
            await metrics.close()

    result, turn, samples, before = asyncio.run(scenario())
    assert result.stop.code == "completed"
    spans = finished(traced)
    chats = [s for s in spans if s["name"] == "chat scripted-1"]
    [tool] = [s for s in spans if s["name"] == "execute_tool echo"]
    turn_id = turn.split("-")[2]
    assert len(chats) == 2
    assert {s["parent_id"] for s in [*chats, tool]} == {turn_id}
    assert {s["trace_id"] for s in [*chats, tool]} == {turn.split("-")[1]}
    assert [c["kind"] for c in chats] == ["client", "client"]
    assert tool["attributes"]["gen_ai.tool.name"] == "echo"
    prompt = sum(u.prompt_tokens for u in result.usage)
    completion = sum(u.completion_tokens for u in result.usage)
    assert [c["attributes"]["gen_ai.usage.input_tokens"] for c in chats] == [u.prompt_tokens for u in result.usage]
    assert prompt > 0
    assert completion > 0
    labels = {"hive": "solo", "agent": "counter", "model": "scripted-1"}
    assert value(samples, "subhive_agent_tokens_total", kind="prompt", **labels) == prompt
    assert value(samples, "subhive_agent_tokens_total", kind="completion", **labels) == completion
    assert value(samples, "subhive_agent_tokens_total", **labels) - before == prompt + completion
    assert value(samples, "subhive_agent_model_calls_total", **labels) == 2
