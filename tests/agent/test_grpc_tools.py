"""Contract tools over gRPC, driven by a scripted model through the real ``openai`` client: a real root on
127.0.0.1, a provider serving a consumed contract's service with the caller check on, and the consumer's
tools calling it through the hive's own channel (``HiveContext.channel``: its keys, found through the root).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import secrets
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import nats
import pytest
from google.protobuf import json_format, message_factory
from nats.js.errors import NotFoundError

from subhive.agent import (
    Approval,
    GrpcContract,
    ScriptedServer,
    Step,
    ToolBox,
    ToolCall,
    agent_sources,
    build_agent,
    grpc_contracts,
    grpc_tools,
    load_grpc_contract,
    rpc_tool_name,
    run_hive_turn,
)
from subhive.bus import EmbeddedServer, NatsTransport
from subhive.codegen import generate_stubs
from subhive.errors import InputError
from subhive.hive import (
    Controller,
    ControllerConfig,
    HiveContext,
    KvBlackboard,
    board_stream,
    ensure_blackboard,
)
from subhive.root_hive import Lock
from subhive.root_hive._client import RootClient, admin_token_of
from subhive.root_hive._service import RootServer
from subhive.rpc import GrpcKeys, ProviderServer, issue_keys, serve_grpc, write_keys
from subhive.runtime import ContractBinding
from subhive.workspace import Kind, load_manifest, new_subhive, open_workspace
from tests.kit import make_workspace, rewrite_manifest

from .conftest import extensions, make_agent

SERVICE = "shop.catalog.v1.Catalog"
PROTO = """syntax = "proto3";

package shop.catalog.v1;

import "google/protobuf/any.proto";
import "google/protobuf/timestamp.proto";

// Items of the shop's catalogue.
service Catalog {
  rpc PutItem(Item) returns (Saved);
  rpc ListItems(ListRequest) returns (stream Item);
  rpc Upload(stream Item) returns (Saved);
  rpc Sync(stream Item) returns (stream Item);
}

enum Kind {
  KIND_UNSPECIFIED = 0;
  BOOK = 1;
  TOOL = 2;
}

message Price {
  int64 cents = 1;
  string currency = 2;
}

message Item {
  string sku = 1;
  int64 stock = 2;
  Kind kind = 3;
  repeated string tags = 4;
  map<string, int32> counts = 5;
  Price price = 6;
  oneof shipping {
    double weight_kg = 7;
    bool digital = 8;
  }
  google.protobuf.Timestamp added = 9;
  bytes thumbnail = 10;
  uint32 shelf = 11;
  repeated Item parts = 12;
  google.protobuf.Any note = 13;
}

message Saved {
  string sku = 1;
  int64 revision = 2;
  Kind kind = 3;
}

message ListRequest {
  int32 limit = 1;
}
"""
CONTRACT_YAML = f"""contract: catalog
version: 1.0.0
provider: db
description: The catalogue, served by the db hive over gRPC.

grpc:
  proto: catalog.proto
  service: {SERVICE}
"""
FILES = {"contract.yaml": CONTRACT_YAML.encode(), "catalog.proto": PROTO.encode()}
ITEM = {
    "sku": "B-1",
    "stock": "9007199254740993",  # 2**53 + 1: only a string keeps it
    "kind": "BOOK",
    "tags": ["new", "paper"],
    "counts": {"shelf": 3},
    "price": {"cents": "1250", "currency": "EUR"},
    "digital": True,
    "added": "2026-11-25T10:00:00Z",
    "thumbnail": "AAEC",
    "parts": [{"sku": "B-1a", "stock": 1}],
    "note": {"@type": "type.googleapis.com/shop.catalog.v1.Price", "cents": 5},  # a type of the contract's own
}
REVISION = 2**40 + 1


@dataclass
class Provider:
    """The servicer: records what it was sent; ``sku`` "taken" fails, "slow" never answers."""

    contract: GrpcContract
    received: list[dict[str, Any]] = field(default_factory=list)

    def add(self, _servicer: object, server: Any) -> None:
        methods = self.contract.service.methods_by_name
        item = message_factory.GetMessageClass(methods["PutItem"].input_type)
        saved = message_factory.GetMessageClass(methods["PutItem"].output_type)
        listing = message_factory.GetMessageClass(methods["ListItems"].input_type)

        async def put_item(request: Any, context: Any) -> Any:
            if request.sku == "taken":
                raise InputError(f"sku {request.sku} is taken", code="catalog.sku_taken", hint="choose another sku")
            if request.sku == "slow":
                await asyncio.Event().wait()  # until the caller's deadline cancels the call
            pool = request.DESCRIPTOR.file.pool
            self.received.append(
                json_format.MessageToDict(request, preserving_proto_field_name=True, descriptor_pool=pool)
            )
            return saved(sku=request.sku, revision=REVISION, kind=request.kind)

        async def list_items(request: Any, context: Any) -> AsyncIterator[Any]:
            for i in range(request.limit):
                yield item(sku=f"s{i}", stock=i)

        handler = grpc.method_handlers_generic_handler(
            SERVICE,
            {
                "PutItem": grpc.unary_unary_rpc_method_handler(
                    put_item, request_deserializer=item.FromString, response_serializer=saved.SerializeToString
                ),
                "ListItems": grpc.unary_stream_rpc_method_handler(
                    list_items, request_deserializer=listing.FromString, response_serializer=item.SerializeToString
                ),
            },
        )
        server.add_generic_rpc_handlers((handler,))


@dataclass
class Tree:
    """A root, ``db`` serving catalog 1.0.0, ``web`` consuming it (its root client and keys), and the contract
    as the consumer loads it from the workspace."""

    workspace: Path
    db: RootClient
    web: RootClient
    keys: dict[str, GrpcKeys]
    contract: GrpcContract
    provider: Provider
    server: ProviderServer

    def context(self) -> HiveContext:
        """What the web hive's runtime hands its sources: ``channel`` is the path every gRPC call of the hive
        takes (board and transport are not used by it)."""
        return HiveContext("web", None, None, root=self.web, keys=self.keys["web"])  # type: ignore[arg-type]

    async def restart(self, keys: GrpcKeys) -> None:
        """Serve again, checking callers with ``keys``."""
        await self.server.stop(None)
        self.server = await serve_grpc(self.db, "catalog", 1, [(self.provider.add, object())], keys=keys)


@asynccontextmanager
async def tree(workspace: Path) -> AsyncIterator[Tree]:
    async with (
        await RootServer.start(workspace, codegen=False) as root,
        RootClient(root.address, admin_token_of(workspace)) as admin,
    ):
        # rotate: a hive of the workspace is registered when the root starts; its token is drawn again here
        tokens = {name: (await admin.register_hive(name, rotate=True)).token for name in ("db", "web")}
        db, web = admin.with_token(tokens["db"]), admin.with_token(tokens["web"])
        assert (await db.propose(FILES)).status == "accepted"
        await web.declare_requirement("catalog", "^1.0")
        lock = await _settled_lock(workspace)
        keys = issue_keys(secrets.token_bytes(32), tokens, lock)
        # The consumer's view: the contract version in the workspace, as codegen's binding names it.
        binding = ContractBinding.from_dict(
            {"name": "catalog", "version": "1.0.0", "provider": "db", "operations": {}, "events": {}, "schemas": {}}
        )
        (contract,) = grpc_contracts([binding], workspace, hive="web")
        served = load_grpc_contract(workspace / "contracts" / "catalog" / "1.0.0")
        assert served is not None
        provider = Provider(served)  # its own descriptors: the consumer's never meet the provider's
        server = await serve_grpc(db, "catalog", 1, [(provider.add, object())], keys=keys["db"])
        made = Tree(workspace, db, web, keys, contract, provider, server)
        try:
            yield made
        finally:
            await made.server.stop(None)


async def _settled_lock(workspace: Path) -> Lock:
    for _ in range(500):  # the root writes the lock file just after it answers
        lock = Lock.load(workspace)
        if any("web" in e.consumers for e in lock):
            return lock
        await asyncio.sleep(0.01)
    raise AssertionError("the root did not write the lock")


def tool_results(server: ScriptedServer, request: int) -> list[Any]:
    """The tool results a request carries that the one before it did not."""
    requests = server.chat_requests()
    before = len(requests[request - 1].body["messages"])
    return [json.loads(m["content"]) for m in requests[request].body["messages"][before:] if m["role"] == "tool"]


def run_turn(
    workspace: Path,
    script: list[Step],
    body: Callable[[Tree, ScriptedServer], Any],
) -> tuple[ScriptedServer, Any]:
    with ScriptedServer(script) as server:

        async def main() -> Any:
            async with tree(workspace) as made:
                return await body(made, server)

        return server, asyncio.run(main())


# -- the tools ------------------------------------------------------------------------------------------------


def test_a_turn_calls_a_grpc_service_with_typed_validated_arguments_and_reads_proto3_json(workspace: Path) -> None:
    script = [
        Step.call(
            ("call_catalog_put_item", ITEM),
            ("call_catalog_put_item", {**ITEM, "weight_kg": 1.5}),  # two members of one oneof
            ("call_catalog_put_item", {"sku": "B-2", "kind": "GADGET"}),
            ("call_catalog_put_item", {"sku": "B-3", "parts": [{"stock": "12x"}]}),
            ("call_catalog_put_item", {"sku": "B-4", "shelf": -1}),
            ("call_catalog_put_item", {"sku": "B-5", "added": "2026-13-45T10:00:00Z"}),  # past the pattern
        ),
        Step.call(("call_catalog_list_items", {"limit": 2}), ("call_catalog_list_items", {"limit": 5})),
        Step.say("stored"),
    ]

    async def body(made: Tree, server: ScriptedServer) -> Any:
        context = made.context()
        try:
            tools = grpc_tools([made.contract], context.channel, stream_limit=3)
            agent = make_agent(server, ToolBox(tools))
            result = await agent.run_turn("store B-1")
            await agent.close()
            return result, made.provider.received
        finally:
            await context.close()

    server, (result, received) = run_turn(workspace, script, body)
    stored, two_members, bad_enum, bad_int, negative, bad_time = tool_results(server, 1)
    short, cut = tool_results(server, 2)
    definitions = {t["function"]["name"]: t["function"] for t in server.chat_requests()[0].body["tools"]}
    assert result.stop.code == "completed"
    assert all(extensions(server.chat_requests()))  # the same tools, in the same order, on every request
    # Unary and server-streaming RPCs are tools, in snake case like the NATS tools; streams from the caller are not.
    assert list(definitions) == ["call_catalog_list_items", "call_catalog_put_item"]
    parameters = definitions["call_catalog_put_item"]["parameters"]
    assert parameters["type"] == "object"
    assert parameters["additionalProperties"] is False
    assert list(parameters["properties"]) == [
        "sku", "stock", "kind", "tags", "counts", "price", "weight_kg", "digital", "added", "thumbnail", "shelf",
        "parts", "note",
    ]  # fmt: skip
    assert parameters["properties"]["parts"]["type"] == ["array", "null"]
    assert parameters["properties"]["parts"]["items"] == {"$ref": "#/$defs/shop.catalog.v1.Item"}
    # The reply as proto3 JSON: int64 as a string, the enum by name, every field shown.
    assert stored == {"sku": "B-1", "revision": str(REVISION), "kind": "BOOK"}
    assert two_members["error"] == "tool.arguments_invalid"
    assert "/digital" in two_members["message"]
    assert bad_enum["error"] == "tool.arguments_invalid"
    assert "/kind" in bad_enum["message"]
    assert bad_int["error"] == "tool.arguments_invalid"
    assert "/parts/0/stock" in bad_int["message"]
    assert negative["error"] == "tool.arguments_invalid"
    assert "/shelf" in negative["message"]
    # What the schema lets through and protobuf refuses is refused the same way, with json_format's pointer.
    assert bad_time["error"] == "tool.arguments_invalid"
    assert "/added" in bad_time["message"]
    assert short == {"replies": [{"sku": "s0", "stock": "0", "kind": "KIND_UNSPECIFIED", **_empty()},
                                 {"sku": "s1", "stock": "1", "kind": "KIND_UNSPECIFIED", **_empty()}],
                     "complete": True}  # fmt: skip
    assert len(cut["replies"]) == 3
    assert cut["complete"] is False
    # Only the valid call reached the provider, with every value as the model meant it.
    assert [r["sku"] for r in received] == ["B-1"]
    received = received[0]
    assert received["stock"] == "9007199254740993"
    assert received["price"] == {"cents": "1250", "currency": "EUR"}
    assert received["kind"] == "BOOK"
    assert received["digital"] is True
    assert received["counts"] == {"shelf": 3}
    assert received["added"] == "2026-11-25T10:00:00Z"
    assert received["parts"] == [{"sku": "B-1a", "stock": "1"}]
    assert received["note"] == {"@type": "type.googleapis.com/shop.catalog.v1.Price", "cents": "5"}


def _empty() -> dict[str, Any]:
    return {"tags": [], "counts": {}, "thumbnail": "", "shelf": 0, "parts": []}


def test_the_providers_errors_a_deadline_a_refusal_and_a_provider_down_are_tool_errors(workspace: Path) -> None:
    script = [
        Step.call(("call_catalog_put_item", {"sku": "taken"}), ("call_catalog_put_item", {"sku": "slow"})),
        Step.say("turn 1"),
        *[Step.call(("call_catalog_put_item", {"sku": "B-9"})), Step.say("again")] * 3,
    ]

    async def body(made: Tree, server: ScriptedServer) -> Any:
        async def turn(context: HiveContext) -> None:
            agent = make_agent(server, ToolBox(grpc_tools([made.contract], context.channel, deadline=0.3)))
            assert (await agent.run_turn("store")).stop.code == "completed"
            await agent.close()

        first, second, third = made.context(), made.context(), made.context()
        try:
            await turn(first)
            # db now holds keys by which web consumes nothing: its check refuses web's call.
            await made.restart(dataclasses.replace(made.keys["db"], consumers={}))
            await turn(second)
            await made.server.stop(None)  # down: the open channel finds no one, the root no address
            await turn(second)
            await turn(third)
        finally:
            for context in (first, second, third):
                await context.close()
        return made.provider.received

    server, received = run_turn(workspace, script, body)
    taken, slow = tool_results(server, 1)
    refused, unavailable, unregistered = (tool_results(server, n)[0] for n in (3, 5, 7))
    assert received == []
    # The provider's own error, its code and hint, with the status it travelled as.
    assert taken["error"] == "catalog.sku_taken"
    assert "INVALID_ARGUMENT" in taken["message"]
    assert "sku taken is taken" in taken["message"]
    assert taken["hint"] == "choose another sku"
    assert slow["error"] == "rpc.deadline_exceeded"
    assert "DEADLINE_EXCEEDED" in slow["message"]
    assert refused["error"] == "auth.not_consumer"
    assert "PERMISSION_DENIED" in refused["message"]
    assert unavailable["error"] == "rpc.unavailable"
    assert "UNAVAILABLE" in unavailable["message"]
    assert "try again later" in unavailable["hint"]
    assert unregistered["error"] == "rpc.no_endpoint"


def test_policies_apply_to_grpc_tools_as_to_every_tool(workspace: Path) -> None:
    script = [
        Step.call(
            ("call_catalog_list_items", {"limit": 1}),
            ("call_catalog_put_item", {"sku": "B-1"}),
            ("call_catalog_put_item", {"sku": "B-2"}),
        ),
        Step.say("done"),
    ]
    asked: list[ToolCall] = []

    async def approver(call: ToolCall) -> Approval:
        asked.append(call)
        sku = json.loads(call.arguments)["sku"]
        return Approval(sku == "B-2", "" if sku == "B-2" else "not that one")

    async def body(made: Tree, server: ScriptedServer) -> Any:
        context = made.context()
        try:
            box = ToolBox(
                grpc_tools([made.contract], context.channel),
                {"call_catalog_list_items": "deny", "call_catalog_put_item": "ask"},
                approver=approver,
            )
            agent = make_agent(server, box)
            await agent.run_turn("store")
            await agent.close()
        finally:
            await context.close()
        return made.provider.received

    server, received = run_turn(workspace, script, body)
    denied, rejected, approved = tool_results(server, 1)
    assert [t["function"]["name"] for t in server.chat_requests()[0].body["tools"]] == ["call_catalog_put_item"]
    assert denied["error"] == "tool.denied"
    assert rejected["error"] == "tool.rejected"
    assert "not that one" in rejected["message"]
    assert approved == {"sku": "B-2", "revision": str(REVISION), "kind": "KIND_UNSPECIFIED"}
    assert [json.loads(c.arguments)["sku"] for c in asked] == ["B-1", "B-2"]  # the exact arguments, each asked
    assert [r["sku"] for r in received] == ["B-2"]  # only the approved call ran


# -- from the manifest: `subhive agent run` with the tree up ----------------------------------------------------

AGENT = """
[agents.clerk]
instructions = "agents/clerk.md"
model = "scripted-1"

[agents.clerk.tools]
{tools}
"""


def consumer_hive(root: Path, tools: str) -> None:
    """``web``: consumes catalog, with an agent given ``tools``."""
    new_subhive("web", Kind.ui, start=root)
    rewrite_manifest(root, "web", consumes={"catalog": "^1"})
    hive = root / "subhives" / "web"
    manifest = hive / "subhive.toml"
    manifest.write_text(manifest.read_text() + AGENT.format(tools=tools))
    (hive / "agents").mkdir()
    (hive / "agents" / "clerk.md").write_text("You keep the catalogue.")


def test_subhive_agent_run_calls_as_the_hive_with_the_keys_up_gave_it(
    tmp_path: Path, bus: EmbeddedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_workspace(tmp_path)
    consumer_hive(root, 'call_catalog_put_item = "allow"')
    script = [Step.call(("call_catalog_put_item", {"sku": "B-7", "stock": "3"})), Step.say("stored")]

    async def scenario() -> Any:
        nc = await nats.connect(bus.url)
        await ensure_blackboard(nc.jetstream(), "web")
        await nc.close()
        async with tree(root) as made, RootClient(made.db.address, admin_token_of(root)) as admin:
            assert not generate_stubs(open_workspace(root), hives=["web"]).problems  # what codegen gives web
            write_keys(root / ".subhive" / "up" / "keys", made.keys)  # as subhive up does
            result = await run_hive_turn(root, "web", "store B-7", endpoint=bus.endpoint(), root=admin)
            return result, made.provider.received

    with ScriptedServer(script) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        result, received = asyncio.run(scenario())
        (answer,) = tool_results(server, 1)
    assert result.stop.code == "completed"
    assert answer == {"sku": "B-7", "revision": str(REVISION), "kind": "KIND_UNSPECIFIED"}
    assert received == [{"sku": "B-7", "stock": "3"}]  # db's check let web in: the call carried web's token


def test_a_manifest_can_list_unary_and_server_streaming_rpcs_only(tmp_path: Path) -> None:
    root = make_workspace(tmp_path)
    contract = root / "contracts" / "catalog" / "1.0.0"
    contract.mkdir(parents=True)
    for name, data in FILES.items():
        (contract / name).write_bytes(data)
    binding = ContractBinding.from_dict(
        {"name": "catalog", "version": "1.0.0", "provider": "db", "operations": {}, "events": {}, "schemas": {}}
    )
    services = grpc_contracts([binding], root, hive="web")
    assert grpc_contracts([binding], root, hive="db") == []  # its own service is not a tool
    consumer_hive(root, 'call_catalog_list_items = "allow"\ncall_catalog_put_item = "ask"\nread_file = "allow"')
    hive = root / "subhives" / "web"

    async def never(contract: str, major: int) -> Any:
        raise AssertionError("no call is made while building")

    (spec,) = load_manifest(hive).agents
    agent = build_agent(spec, hive="web", hive_dir=hive, services=services, channel=never)
    assert [t["function"]["name"] for t in agent.tools.definitions()] == [
        "call_catalog_list_items",
        "call_catalog_put_item",
        "read_file",
    ]
    assert agent.tools.policy("call_catalog_put_item") == "ask"
    again = build_agent(
        spec, hive="web", hive_dir=hive, services=grpc_contracts([binding], root, hive="web"), channel=never
    )
    assert json.dumps(again.tools.definitions()) == json.dumps(agent.tools.definitions())  # byte for byte
    manifest = hive / "subhive.toml"
    manifest.write_text(manifest.read_text().replace('read_file = "allow"', 'call_catalog_upload = "allow"'))
    (spec,) = load_manifest(hive).agents
    with pytest.raises(InputError) as caught:  # a stream from the caller is not a tool
        build_agent(spec, hive="web", hive_dir=hive, services=services, channel=never)
    assert caught.value.code == "agent.tool_unknown"
    assert caught.value.location is not None
    assert caught.value.location.line is not None
    assert "client- and bidi-streaming RPCs are not tools" in (caught.value.hint or "")


def test_rpc_names_become_snake_case_tool_names() -> None:
    assert rpc_tool_name("catalog", "PutItem") == "call_catalog_put_item"
    assert rpc_tool_name("web_api", "GetHTTPStatus") == "call_web_api_get_http_status"
    assert rpc_tool_name("inventory", "get_stock") == "call_inventory_get_stock"


def test_an_agent_woken_by_the_board_calls_through_its_hives_context(
    tmp_path: Path, bus: EmbeddedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_workspace(tmp_path)
    consumer_hive(root, 'call_catalog_put_item = "allow"\n\n[agents.clerk.trigger]\nkeys = ["tasks.*"]')
    (source,) = agent_sources(root / "subhives" / "web" / "web_hive" / "knowledge.py")
    script = [Step.call(("call_catalog_put_item", {"sku": "B-8", "kind": "TOOL"})), Step.say("stored")]

    async def scenario() -> Any:
        nc = await nats.connect(bus.url)
        js = nc.jetstream()
        with contextlib.suppress(NotFoundError):
            await js.delete_stream(board_stream("web"))
        await ensure_blackboard(js, "web")
        await nc.close()
        async with tree(root) as made:
            assert not generate_stubs(open_workspace(root), hives=["web"]).problems
            transport = await NatsTransport.connect(bus.endpoint(), "web")
            board = await KvBlackboard.open(transport.connection.jetstream(), "web")
            # What the web hive's runtime hands its sources: its root client and its own keys.
            context = HiveContext("web", board, transport, root=made.web, keys=made.keys["web"])
            controller = Controller(board, [source], context=context, config=ControllerConfig(retry_delay=0.05))
            await controller.start(transport.connection.jetstream())
            try:
                await board.put("tasks.t1", {"title": "stock the drill"}, writer="human")
                await controller.idle(timeout=30)
            finally:
                await controller.stop()
                await context.close()
                await transport.close()
            return made.provider.received

    with ScriptedServer(script) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        received = asyncio.run(scenario())
        (answer,) = tool_results(server, 1)
    assert answer == {"sku": "B-8", "revision": str(REVISION), "kind": "TOOL"}
    assert received == [{"sku": "B-8", "kind": "TOOL"}]
