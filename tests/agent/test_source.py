"""An agent as a knowledge source: a board write its trigger names starts a turn under the hive's controller,
on a real nats-server; the agent writes through its tools, the transcript lands on the board, and a turn that
stops early is escalated like any failing source."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

import nats
import pytest
from nats.js.errors import NotFoundError

from subhive.agent import AgentSource, AgentStopped, ScriptedServer, Step, agent_sources
from subhive.bus import EmbeddedServer, NatsTransport
from subhive.hive import (
    Controller,
    ControllerConfig,
    Escalation,
    HiveContext,
    KvBlackboard,
    board_stream,
    ensure_blackboard,
)
from subhive.workspace import Kind, init_workspace, new_subhive

AGENT = """
[agents.planner]
instructions = "agents/planner.md"

[agents.planner.model]
name = "scripted-1"
max_retries = 0

[agents.planner.tools]
board_read = "allow"
board_write = "allow"

[agents.planner.trigger]
keys = ["tasks.*"]

[agents.quiet]
instructions = "agents/planner.md"
model = "m"
"""


def hive(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    init_workspace(root)
    new_subhive("notes", Kind.backend, start=root)
    directory = root / "subhives" / "notes"
    (directory / "subhive.toml").write_text((directory / "subhive.toml").read_text() + AGENT)
    (directory / "agents").mkdir()
    (directory / "agents" / "planner.md").write_text("You plan tasks.")
    return directory


async def run_controller(
    bus: EmbeddedServer, sources: list[AgentSource], key: str, value: Any, escalations: list[Escalation]
) -> dict[str, Any]:
    nc = await nats.connect(bus.url)
    js = nc.jetstream()
    with contextlib.suppress(NotFoundError):
        await js.delete_stream(board_stream("notes"))
    with contextlib.suppress(NotFoundError):
        await js.delete_consumer(board_stream("notes"), "board")
    await ensure_blackboard(js, "notes")
    transport = await NatsTransport.connect(bus.endpoint(), "notes")
    board = await KvBlackboard.open(transport.connection.jetstream(), "notes")

    async def escalate(escalation: Escalation) -> None:
        escalations.append(escalation)

    controller = Controller(
        board,
        sources,
        context=HiveContext("notes", board, transport),
        config=ControllerConfig(retry_delay=0.05),
        on_escalation=escalate,
    )
    await controller.start(transport.connection.jetstream())
    try:
        await board.put(key, value, writer="human")
        await controller.idle(timeout=30)
        return dict(await board.snapshot())
    finally:
        await controller.stop()
        await transport.close()
        await nc.close()


def test_a_triggered_agent_runs_a_turn_and_writes_through_its_tools(
    tmp_path: Path, bus: EmbeddedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = hive(tmp_path)
    sources = agent_sources(directory / "notes_hive" / "knowledge.py")
    assert [(s.name, s.triggers) for s in sources] == [("agent_planner", ("tasks.*",))]  # quiet has no trigger
    script = [
        Step.call(("board_write", {"key": "plans.t1", "value": {"steps": ["a", "b"]}, "expected_revision": 0})),
        Step.say("planned"),
    ]
    escalations: list[Escalation] = []
    with ScriptedServer(script) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        board = asyncio.run(run_controller(bus, sources, "tasks.t1", {"title": "Add login"}, escalations))
        prompt = server.chat_requests()[0].body["messages"][1]["content"]
    assert "tasks.t1" in prompt
    assert '{"title": "Add login"}' in prompt
    assert board["plans.t1"].value == {"steps": ["a", "b"]}
    assert board["plans.t1"].writer == "agent:planner"
    turns = [k for k in board if k.startswith("agent-turns.planner.") and k.count(".") == 2]
    assert len(turns) == 1
    assert board[turns[0]].value["status"] == "completed"
    assert escalations == []


def test_a_turn_that_stops_early_is_escalated(
    tmp_path: Path, bus: EmbeddedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = hive(tmp_path)
    sources = agent_sources(directory)
    escalations: list[Escalation] = []
    with ScriptedServer([Step.fail(500, "down")] * 4) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        board = asyncio.run(run_controller(bus, sources, "tasks.t2", {"title": "x"}, escalations))
    assert len(escalations) == 1
    assert escalations[0].source == "agent_planner"
    assert "the model endpoint answered 500" in escalations[0].message
    assert "agent.model.failed" in escalations[0].sample.decode()
    stopped = [e.value for k, e in board.items() if k.startswith("agent-turns.planner.") and k.count(".") == 2]
    assert [s["stop"]["code"] for s in stopped] == ["model.failed", "model.failed"]  # tried, retried once


def test_the_stop_travels_in_the_error() -> None:
    from subhive.agent import Stop

    error = AgentStopped("planner", Stop("budget.tokens", "too many"), "tasks.t1")
    assert error.code == "agent.budget.tokens"
    assert error.location.subject == "tasks.t1"


SUMMARISE_OUT = {
    "type": "object",
    "required": ["summary"],
    "additionalProperties": False,
    "properties": {"summary": {"type": "string", "minLength": 1}},
}


def serving_hive(tmp_path: Path) -> Path:
    from subhive.runtime import ContractBinding

    directory = hive(tmp_path)
    manifest = directory / "subhive.toml"
    manifest.write_text(manifest.read_text().replace('keys = ["tasks.*"]', 'operation = "notes_api.summarise"'))
    binding = ContractBinding.from_dict(
        {
            "name": "notes_api",
            "version": "0.1.0",
            "provider": "notes",
            "events": {},
            "operations": {"summarise": {"input": "in", "output": "out"}},
            "schemas": {"in": {"type": "object"}, "out": SUMMARISE_OUT},
        }
    )
    stubs = tmp_path / "ws" / "stubs" / "notes" / "notes_api_v0_1"
    stubs.mkdir(parents=True)
    (stubs / "contract.json").write_text(json.dumps(binding.to_dict()))
    return directory


async def answer(bus: EmbeddedServer, sources: list[AgentSource], request: Any) -> Any:
    nc = await nats.connect(bus.url)
    js = nc.jetstream()
    with contextlib.suppress(NotFoundError):
        await js.delete_stream(board_stream("notes"))
    await ensure_blackboard(js, "notes")
    transport = await NatsTransport.connect(bus.endpoint(), "notes")
    board = await KvBlackboard.open(transport.connection.jetstream(), "notes")
    controller = Controller(board, sources, context=HiveContext("notes", board, transport))
    await controller.start(transport.connection.jetstream())
    try:
        return await controller.answer("notes_api", "summarise", request)
    finally:
        await controller.stop()
        await transport.close()
        await nc.close()


def test_an_agent_serves_an_operation_with_a_checked_answer(
    tmp_path: Path, bus: EmbeddedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    sources = agent_sources(serving_hive(tmp_path))
    assert [(s.name, s.operations, s.triggers) for s in sources] == [("agent_planner", ("notes_api.summarise",), ())]
    script = [Step.say("Sure! It is about logins."), Step.say('```json\n{"summary": "logins"}\n```')]
    with ScriptedServer(script) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        reply = asyncio.run(answer(bus, sources, {"text": "Add login"}))
        prompt = server.chat_requests()[0].body["messages"][1]["content"]
    assert reply == {"summary": "logins"}
    assert '{"text": "Add login"}' in prompt
    assert '"required": ["summary"]' in prompt  # the reply schema is given to the model


def test_an_operation_answered_wrongly_three_times_fails_the_request(
    tmp_path: Path, bus: EmbeddedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    sources = agent_sources(serving_hive(tmp_path))
    with ScriptedServer([Step.say('{"summary": ""}')] * 3) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        with pytest.raises(AgentStopped) as caught:
            asyncio.run(answer(bus, sources, {"text": "x"}))
        assert len(server.chat_requests()) == 3
    assert caught.value.code == "agent.answer.invalid"
    assert caught.value.stop.detail["error"] == "payload.invalid"
