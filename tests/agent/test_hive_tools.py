"""Board and contract tools, driven by a scripted model over real HTTP, on a real nats-server: the board's
compare-and-set and schema, a consumed contract's typed tool validated before the request crosses the bus."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

import nats
import pytest
from nats.js.errors import NotFoundError

from subhive.agent import ScriptedServer, Step, ToolBox, board_tools, build_agent, contract_tools
from subhive.bus import EmbeddedServer, NatsTransport, ensure_event_streams
from subhive.errors import InputError
from subhive.hive import BoardSchema, KvBlackboard, board_stream, ensure_blackboard
from subhive.runtime import ContractBinding
from subhive.workspace import AgentModel, AgentSpec, load_manifest

from .conftest import make_agent

ORDER_IN = {
    "type": "object",
    "required": ["sku", "qty"],
    "additionalProperties": False,
    "properties": {
        "sku": {"type": "string", "pattern": "^A-[0-9]+$"},
        "qty": {"type": "integer", "minimum": 1, "maximum": 100},
    },
}
ORDERS = ContractBinding.from_dict(
    {
        "name": "orders",
        "version": "1.0.0",
        "provider": "backend",
        "operations": {"place_order": {"input": "in", "output": "out"}},
        "events": {},
        "schemas": {
            "in": ORDER_IN,
            "out": {"type": "object", "required": ["order_id"], "properties": {"order_id": {"type": "string"}}},
        },
    }
)
SCHEMA = {
    "type": "object",
    "patternProperties": {
        "^tasks\\.[^.]+$": {"type": "object", "required": ["title"], "properties": {"title": {"type": "string"}}}
    },
}


async def fresh_board(server: EmbeddedServer, hive: str) -> tuple[Any, KvBlackboard]:
    nc = await nats.connect(server.url)
    js = nc.jetstream()
    with contextlib.suppress(NotFoundError):
        await js.delete_stream(board_stream(hive))
    await ensure_blackboard(js, hive)
    return nc, await KvBlackboard.open(js, hive, BoardSchema(SCHEMA, hive=hive))


def results(server: ScriptedServer, request: int) -> list[Any]:
    return [json.loads(m["content"]) for m in server.chat_requests()[request].body["messages"] if m["role"] == "tool"]


def test_board_tools_compare_and_set_and_the_schema_reach_the_model(bus: EmbeddedServer) -> None:
    script = [
        Step.call(
            ("board_write", {"key": "tasks.t1", "value": {"title": "first"}, "expected_revision": 0}),
            ("board_write", {"key": "tasks.t1", "value": {"title": "again"}, "expected_revision": 0}),
            ("board_write", {"key": "tasks.t2", "value": {"name": "no title"}, "expected_revision": 0}),
            ("board_read", {"key": "tasks.t1"}),
            ("board_read", {"key": "bad..key"}),
        ),
        Step.say("done"),
    ]

    async def scenario(server: ScriptedServer) -> tuple[Any, list[Any]]:
        nc, board = await fresh_board(bus, "agentboard")
        try:
            agent = make_agent(server, ToolBox(board_tools(board, "agent:helper")))
            result = await agent.run_turn("write tasks")
            await agent.close()
            return result, await board.history("tasks.t1")
        finally:
            await nc.close()

    with ScriptedServer(script) as server:
        result, history = asyncio.run(scenario(server))
        written, conflict, invalid, read, bad_key = results(server, 1)
    assert result.stop.code == "completed"
    assert written["key"] == "tasks.t1"
    assert conflict["error"] == "blackboard.conflict"
    assert "board_read" in conflict["hint"]
    assert invalid["error"] == "blackboard.invalid"
    assert read == {
        "key": "tasks.t1",
        "value": {"title": "first"},
        "revision": written["revision"],
        "writer": "agent:helper",
    }
    assert bad_key["error"] == "blackboard.key_invalid"
    assert [(e.value, e.writer) for e in history] == [({"title": "first"}, "agent:helper")]


def test_a_contract_tool_is_typed_validated_and_goes_over_the_bus(bus: EmbeddedServer) -> None:
    script = [
        Step.call(
            ("call_orders_place_order", {"sku": "A-1", "qty": 0}), ("call_orders_place_order", {"sku": "A-7", "qty": 2})
        ),
        Step.say("ordered"),
    ]
    received: list[Any] = []

    async def place(payload: Any) -> Any:
        received.append(payload)
        return {"order_id": f"o-{payload['sku']}"}

    async def scenario(server: ScriptedServer) -> Any:
        nc = await nats.connect(bus.url)
        await ensure_event_streams(nc.jetstream(), [("orders", 1)], hives=["backend", "web"])
        await nc.close()
        backend = await NatsTransport.connect(bus.endpoint(), "backend")
        web = await NatsTransport.connect(bus.endpoint(), "web")
        try:
            await backend.serve(ORDERS, {"place_order": place})
            tools = contract_tools([ORDERS], web, hive="web")
            assert contract_tools([ORDERS], backend, hive="backend") == []  # its own contract is not a tool
            agent = make_agent(server, ToolBox(tools))
            result = await agent.run_turn("order A-7")
            await agent.close()
            return result
        finally:
            await web.close()
            await backend.close()

    with ScriptedServer(script) as server:
        result = asyncio.run(scenario(server))
        tool = server.chat_requests()[0].body["tools"][0]["function"]
        refused, answered = results(server, 1)
    assert result.stop.code == "completed"
    assert tool["name"] == "call_orders_place_order"
    assert tool["parameters"] == ORDER_IN  # the contract's own schema
    assert refused["error"] == "tool.arguments_invalid"
    assert "/qty" in refused["message"]
    assert answered == {"order_id": "o-A-7"}
    assert received == [{"sku": "A-7", "qty": 2}]  # the invalid call never left the hive


def _hive_dir(tmp_path: Path, tools: str) -> Path:
    hive = tmp_path / "subhives" / "web"
    (hive / "agents").mkdir(parents=True)
    (hive / "agents" / "helper.md").write_text("You place orders.")
    (hive / "subhive.toml").write_text(
        'name = "web"\nkind = "ui"\nparent = "root"\n\n[consumes]\norders = "^1"\n\n[blackboard]\n'
        'schema = "blackboard.schema.json"\n\n[knowledge]\nsources = "web_hive.knowledge:SOURCES"\n\n'
        '[agents.helper]\ninstructions = "agents/helper.md"\nmodel = "m"\n\n[agents.helper.tools]\n' + tools
    )
    return hive


def test_an_agent_is_built_from_its_manifest(tmp_path: Path) -> None:
    hive = _hive_dir(tmp_path, 'read_file = "allow"\nsearch = "deny"\n')
    (spec,) = load_manifest(hive).agents
    agent = build_agent(spec, hive="web", hive_dir=hive)
    assert agent.settings.instructions == "You place orders."
    assert [t["function"]["name"] for t in agent.tools.definitions()] == ["read_file"]
    assert agent.tools.policy("search") == "deny"
    assert agent.tools.policy("list_files") is None  # not listed: not given


def test_a_manifest_tool_the_hive_lacks_is_reported_at_its_line(tmp_path: Path) -> None:
    hive = _hive_dir(tmp_path, 'read_file = "allow"\ncall_orders_cancel = "ask"\n')
    (spec,) = load_manifest(hive).agents
    with pytest.raises(InputError) as caught:
        build_agent(spec, hive="web", hive_dir=hive, bindings=[ORDERS], transport=object())  # type: ignore[arg-type]
    assert caught.value.code == "agent.tool_unknown"
    assert caught.value.location.line == 20
    assert "call_orders_place_order" in (caught.value.hint or "")


def test_missing_instructions_are_reported_at_their_line(tmp_path: Path) -> None:
    spec = AgentSpec("helper", "agents/none.md", AgentModel("m"))
    with pytest.raises(InputError) as caught:
        build_agent(spec, hive="web", hive_dir=tmp_path)
    assert caught.value.code == "agent.instructions_missing"
