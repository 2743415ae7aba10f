"""Contract tools over gRPC: one ``call_<contract>_<rpc>`` per unary or server-streaming RPC of each gRPC service
a hive consumes. The parameters are the request message's proto3 JSON form; the call goes over the hive's own
channel (``connect_grpc``: its keys, its trace, a deadline), and the reply comes back as proto3 JSON.
See docs/agents.md#contract-tools-over-grpc and docs/decisions/0060-grpc-contract-tools.md.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import descriptor_pool, json_format, message_factory
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor
from google.protobuf.message import Message

from ..errors import InputError, Location
from ._hive_tools import contract_tool_name
from ._proto_schema import message_schema
from ._tools import Tool, ToolError, schema_object

__all__ = [
    "DEADLINE",
    "STREAM_LIMIT",
    "ChannelOpener",
    "GrpcContract",
    "grpc_contracts",
    "grpc_tools",
    "hive_keys",
    "load_grpc_contract",
    "rpc_tool_name",
]

#: Seconds a call may take before it fails with DEADLINE_EXCEEDED (the whole stream, for a streaming RPC).
DEADLINE = 30.0
#: The most replies a server-streaming tool returns; the call is cancelled past them.
STREAM_LIMIT = 100
#: How a tool reaches a provider: a channel to ``contract`` v``major`` (``HiveContext.channel`` does it).
ChannelOpener = Callable[[str, int], Awaitable[Any]]


@dataclass(frozen=True)
class GrpcContract:
    """A consumed contract's gRPC service: its descriptor lives in a pool of its own, so two versions (or a
    hive's own generated modules) never clash in protobuf's default pool."""

    name: str
    version: str
    provider: str
    service: ServiceDescriptor

    @property
    def major(self) -> int:
        return int(self.version.split(".", 1)[0])

    @property
    def id(self) -> str:
        return f"{self.name}@{self.version}"


def load_grpc_contract(directory: Path) -> GrpcContract | None:
    """The gRPC service of the contract version in ``directory``, compiled from its ``.proto`` (None when it
    declares none). A contract that does not load or compile raises its lint errors."""
    from ..compat.protobuf import compile_proto
    from ..contract import load_contract

    contract = load_contract(directory)
    if contract.grpc is None:
        return None
    pool = descriptor_pool.DescriptorPool()
    for file in compile_proto(contract.grpc.proto, include_dirs=[directory]).file:
        pool.Add(file)
    try:
        service = pool.FindServiceByName(contract.grpc.service)
    except KeyError:
        raise InputError(
            f"{contract.grpc.proto.name} declares no service {contract.grpc.service!r}",
            code="grpc.service_missing",
            location=Location(file=str(contract.grpc.proto)),
            hint="subhive contract lint reports the same problem",
        ) from None
    return GrpcContract(contract.name, str(contract.version), contract.provider, service)


def grpc_contracts(bindings: Sequence[Any], workspace_root: Path, *, hive: str) -> list[GrpcContract]:
    """The gRPC services among the contracts ``hive`` consumes (``bindings``: its ``ContractBinding``s), read
    from the workspace's ``contracts/<name>/<version>/``, sorted by name and major."""
    found = []
    for binding in bindings:
        directory = Path(workspace_root) / "contracts" / binding.name / str(binding.version)
        if binding.provider == hive or not (directory / "contract.yaml").is_file():
            continue
        contract = load_grpc_contract(directory)
        if contract is not None:
            found.append(contract)
    return sorted(found, key=lambda c: (c.name, c.major))


def hive_keys(workspace_root: Path, hive: str) -> Any:
    """The ``KeyFile`` ``subhive up`` wrote for ``hive``, None outside up: a turn started outside the hive's
    process (``subhive agent run``) still calls as the hive."""
    from ..rpc import KeyFile

    # UpLayout.keys_dir; subhive.up sits above this package, so its layout is spelled out here.
    path = Path(workspace_root) / ".subhive" / "up" / "keys" / f"{hive}.json"
    return KeyFile(path) if path.is_file() else None


def rpc_tool_name(contract: str, method: str) -> str:
    """``call_<contract>_<rpc in snake case>``: ``GetStock`` of ``inventory`` is ``call_inventory_get_stock``,
    spelled as the NATS tools' ``call_<contract>_<operation>``."""
    snake = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", method)).lower()
    return contract_tool_name(contract, snake)


def grpc_tools(
    contracts: Sequence[GrpcContract],
    channel: ChannelOpener,
    *,
    deadline: float = DEADLINE,
    stream_limit: int = STREAM_LIMIT,
) -> list[Tool]:
    """One tool per unary or server-streaming RPC of each of ``contracts``; client- and bidi-streaming RPCs are
    not tools (a model cannot hold a stream open across its steps). ``channel`` opens the hive's channel."""
    if deadline <= 0 or stream_limit < 1:
        raise ValueError("the deadline must be positive and the stream limit at least 1")
    tools = []
    for contract in contracts:
        for method in sorted(contract.service.methods, key=lambda m: m.name):
            if not method.client_streaming:
                tools.append(_rpc_tool(contract, method, channel, deadline, stream_limit))
    return tools


def _rpc_tool(
    contract: GrpcContract, method: MethodDescriptor, channel: ChannelOpener, deadline: float, limit: int
) -> Tool:
    request_type = message_factory.GetMessageClass(method.input_type)
    reply_type = message_factory.GetMessageClass(method.output_type)
    path = f"/{contract.service.full_name}/{method.name}"
    name = rpc_tool_name(contract.name, method.name)
    schema = message_schema(method.input_type)
    wrapped = schema.get("type") != "object"  # a well-known type as the request: {"input": its JSON}
    parameters = schema
    if wrapped:
        defs = schema.pop("$defs", None)  # a $ref resolves against the document's root: keep them there
        parameters = schema_object({"input": schema}, ["input"]) | ({"$defs": defs} if defs else {})
    streaming = method.server_streaming

    async def run(arguments: dict[str, Any]) -> Any:
        request = _request(request_type, arguments["input"] if wrapped else arguments, name, wrapped)
        target = await channel(contract.name, contract.major)
        try:
            if not streaming:
                call = target.unary_unary(
                    path, request_serializer=_serialize, response_deserializer=reply_type.FromString
                )
                return _json(await call(request, timeout=deadline))
            opened = target.unary_stream(
                path, request_serializer=_serialize, response_deserializer=reply_type.FromString
            )
            stream = opened(request, timeout=deadline)
            replies: list[Any] = []
            async for reply in stream:
                if len(replies) == limit:
                    stream.cancel()
                    return {"replies": replies, "complete": False}
                replies.append(_json(reply))
            return {"replies": replies, "complete": True}
        except grpc.aio.AioRpcError as exc:
            raise _failed(exc, contract, method.name) from None

    kind = f"at most {limit} replies, as {{replies, complete}}" if streaming else "its reply"
    return Tool(
        name,
        f"Call {method.name} of {contract.service.full_name} (contract {contract.id}, provided by "
        f"{contract.provider}) over gRPC; arguments and result are proto3 JSON (64-bit integers as strings, "
        f"enums by name). The result is {kind}.",
        parameters,
        run,
        concurrent=True,  # a consumed contract's operation, as the NATS tools (decision 0063)
    )


def _serialize(message: Message) -> bytes:
    return message.SerializeToString()


def _request(request_type: type[Message], value: Any, tool: str, wrapped: bool) -> Message:
    """The request message; what the schema let through but protobuf refuses (a Timestamp's 13th month, an
    Any's fields) is the model's mistake, with the pointer json_format names."""
    try:
        # The contract's own pool: an Any's @type names a message of the contract, not of the default pool.
        request = request_type()
        return json_format.ParseDict(value, request, descriptor_pool=_pool(request))
    except json_format.ParseError as exc:
        pointer = ("/input" if wrapped else "") + _pointer(str(exc))
        raise ToolError(
            f"the arguments of {tool} are invalid at {pointer or '/'}: {exc}",
            code="tool.arguments_invalid",
            hint="match the tool's parameters schema (proto3 JSON)",
        ) from None


def _pointer(message: str) -> str:
    """``/items/0/name`` from json_format's ``... at Request.items[0].name.``"""
    found = re.search(r" at \"?([A-Za-z_][\w.\[\]-]*?)\"?\.?$", message)
    if found is None:
        return ""
    parts = re.sub(r"\[([^\]]*)\]", r".\1", found.group(1)).split(".")[1:]
    return "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in parts if p)


def _json(reply: Message) -> Any:
    # Every field, defaults included: the model reads what is 0 or empty instead of guessing why it is absent.
    return json_format.MessageToDict(
        reply,
        preserving_proto_field_name=True,
        always_print_fields_with_no_presence=True,
        descriptor_pool=_pool(reply),
    )


def _pool(message: Message) -> Any:
    # The stubs type it as the pure-Python pool; at run time it is upb's, which json_format takes alike.
    return message.DESCRIPTOR.file.pool


_HINTS = {
    grpc.StatusCode.UNAVAILABLE: "the provider does not answer: it may be down or restarting; try again later",
    grpc.StatusCode.DEADLINE_EXCEEDED: "the provider did not answer in time; ask for less or try again later",
    grpc.StatusCode.PERMISSION_DENIED: "this hive may not make this call; do without it",
    grpc.StatusCode.UNAUTHENTICATED: "this hive's credentials were refused; do without the call",
}


def _failed(exc: grpc.aio.AioRpcError, contract: GrpcContract, method: str) -> ToolError:
    """The tool error a failed call is: the provider's own error (its code, message and hint) when it sent one,
    else ``rpc.<status>`` (``rpc.unavailable``, ``rpc.deadline_exceeded``); the message always names the status."""
    from ..rpc import RpcFailed, error_from_rpc

    status = exc.code()
    error = error_from_rpc(exc)
    own = not isinstance(error, RpcFailed)
    text = error.message if own else (exc.details() or "no details")
    return ToolError(
        f"{method} of {contract.id} failed with gRPC status {status.name}: {text}",
        code=error.code,
        hint=(error.hint if own else None) or _HINTS.get(status, "see the provider's log"),
    )
