"""gRPC between hives: a provider serves a contract's gRPC service and registers it with the root; a consumer
finds it through the root and calls it with the same trace context (docs/rpc.md).

    >>> server = await serve_grpc(db_root, "inventory", 1, [(add_InventoryServicer_to_server, Inventory())])
    ...                                                                             # doctest: +SKIP
    >>> channel = await connect_grpc(web_root, "inventory", 1)                      # doctest: +SKIP
    >>> with start_trace():                                                         # doctest: +SKIP
    ...     stock = await InventoryStub(channel).GetStock(GetStockRequest(sku="A-1"))

Errors a provider raises leave as statuses (InputError as INVALID_ARGUMENT, Conflict as FAILED_PRECONDITION,
NotFound as NOT_FOUND, anything not a SubhiveError as INTERNAL without details) and come back as the same
errors through :func:`error_from_rpc`.
"""

from ._connect import connect_grpc
from ._errors import NoEndpoint, RpcFailed, error_from_rpc
from ._interceptors import ProviderInterceptor, trace_interceptors
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
    "TRACEPARENT",
    "AddServicer",
    "NoEndpoint",
    "ProviderInterceptor",
    "ProviderServer",
    "RpcFailed",
    "connect_grpc",
    "continue_trace",
    "current_traceparent",
    "error_from_rpc",
    "new_traceparent",
    "outgoing_traceparent",
    "parse_traceparent",
    "serve_grpc",
    "start_trace",
    "trace_id",
    "trace_interceptors",
]
