"""gRPC between hives: a provider serves a contract's gRPC service and registers it with the root; a consumer
finds it through the root and calls it with its trace context and its hive's credentials. See docs/rpc.md.

    >>> server = await serve_grpc(db_root, "inventory", 1, [(add_InventoryServicer_to_server, Inventory())],
    ...                           keys=db_keys)                                     # doctest: +SKIP
    >>> channel = await connect_grpc(web_root, "inventory", 1, keys=web_keys)       # doctest: +SKIP
    >>> with start_trace():                                                         # doctest: +SKIP
    ...     stock = await InventoryStub(channel).GetStock(GetStockRequest(sku="A-1"))
"""

from ._auth import OPEN_SERVICES, CallerCheck
from ._connect import connect_grpc
from ._errors import NoEndpoint, RpcFailed, error_from_rpc
from ._interceptors import ProviderInterceptor, caller_interceptors, trace_interceptors
from ._keys import HIVE_HEADER, TOKEN_HEADER, GrpcKeys, KeyFile, Keys, issue_keys, pair_token, write_keys
from ._serve import AddServicer, ProviderServer, serve_grpc
from ._trace import (
    TRACEPARENT,
    continue_trace,
    current_traceparent,
    new_traceparent,
    outgoing_traceparent,
    parse_traceparent,
    start_trace,
    trace_id,
)

__all__ = [
    "HIVE_HEADER",
    "OPEN_SERVICES",
    "TOKEN_HEADER",
    "TRACEPARENT",
    "AddServicer",
    "CallerCheck",
    "GrpcKeys",
    "KeyFile",
    "Keys",
    "NoEndpoint",
    "ProviderInterceptor",
    "ProviderServer",
    "RpcFailed",
    "caller_interceptors",
    "connect_grpc",
    "continue_trace",
    "current_traceparent",
    "error_from_rpc",
    "issue_keys",
    "new_traceparent",
    "outgoing_traceparent",
    "pair_token",
    "parse_traceparent",
    "serve_grpc",
    "start_trace",
    "trace_id",
    "trace_interceptors",
    "write_keys",
]
