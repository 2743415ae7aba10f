"""propose_contract against a real root over gRPC: linted before a person is asked, then negotiated by the
root like any proposal, the outcome read by the model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from subhive.agent import Approval, ScriptedServer, Step, ToolBox, ToolCall, contract_tool
from subhive.root_hive._client import RootClient, admin_token_of
from subhive.root_hive._service import RootServer
from tests.helpers import object_schema, orders_manifest
from tests.kit import run

from .conftest import make_agent

IN = object_schema({"sku": {"type": "string"}, "qty": {"type": "integer"}}, ["sku", "qty"])
OUT = object_schema({"order_id": {"type": "string"}}, ["order_id"])


def contract(**overrides: Any) -> dict[str, str]:
    files = {
        "contract.yaml": yaml.safe_dump(orders_manifest("1.0.0", **overrides), sort_keys=False),
        "in.json": json.dumps(IN),
        "out.json": json.dumps(OUT),
        "event.json": json.dumps(OUT),
    }
    return files


def turn(workspace: Path, calls: list[dict[str, Any]], asked: list[str]) -> tuple[Any, list[Any], list[Any]]:
    async def approver(call: ToolCall) -> Approval:
        asked.append(call.arguments)
        return Approval(True)

    async def scenario(server: ScriptedServer) -> tuple[Any, list[Any]]:
        async with (
            await RootServer.start(workspace) as root,
            RootClient(root.address, admin_token_of(workspace)) as admin,
        ):
            backend = admin.with_token((await admin.register_hive("backend")).token)
            agent = make_agent(
                server, ToolBox([contract_tool(backend)], {"propose_contract": "ask"}, approver=approver)
            )
            try:
                result = await agent.run_turn("publish orders 1.0.0")
            finally:
                await agent.close()
            return result, await admin.contracts("orders")

    script = [Step.call(*[("propose_contract", {"files": files}) for files in calls]), Step.say("done")]
    with ScriptedServer(script) as server:
        result, accepted = run(scenario(server))
        tools = [json.loads(m["content"]) for m in server.chat_requests()[1].body["messages"] if m["role"] == "tool"]
    return result, tools, accepted


def test_a_proposed_contract_is_linted_asked_and_accepted(workspace: Path) -> None:
    broken = contract()
    del broken["out.json"]  # the manifest names a schema file that is not there
    asked: list[str] = []
    result, (refused, accepted), contracts = turn(workspace, [broken, contract()], asked)
    assert result.stop.code == "completed"
    assert refused["error"] == "manifest.file_missing"  # refused by lint, before anyone was asked
    assert "out.json" in refused["message"]
    assert len(asked) == 1
    assert accepted["status"] == "accepted"
    assert (accepted["contract"], accepted["version"]) == ("orders", "1.0.0")
    assert [str(v.version) for c in contracts for v in c.versions] == ["1.0.0"]


def test_a_contract_of_another_provider_is_refused_by_the_root(workspace: Path) -> None:
    result, (refused,), contracts = turn(workspace, [contract(provider="web")], [])
    assert result.stop.code == "completed"
    assert refused["error"].startswith("auth.")
    assert contracts == []
