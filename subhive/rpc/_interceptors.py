"""The two interceptors of gRPC between hives: the caller sends its trace, the provider continues it.

* :func:`trace_interceptors` (client, one per call shape): add ``traceparent`` metadata, the caller's
  current trace with a new span id (a new trace when there is none), unless the call sets one itself.
* :class:`ProviderInterceptor` (server, outermost): runs each handler in the trace of the incoming
  ``traceparent`` (a new one when it is missing or invalid), so what the handler calls onward keeps the trace
  id; and is the error boundary: a :class:`~subhive.errors.SubhiveError` leaves as its status
  (``subhive.root_hive._status``, the table the root hive uses), anything else as INTERNAL without details.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any

import grpc

from ..root_hive._status import abort_with
from ._trace import TRACEPARENT, continue_trace, new_traceparent, outgoing_traceparent, parse_traceparent

__all__ = ["ProviderInterceptor", "trace_interceptors"]

log = logging.getLogger("subhive.rpc")

Behavior = Callable[..., Any]


class _SendsTrace:
    # grpc.aio runs an interceptor in a task it creates when the call is made, so the contextvar read here is
    # the caller's.
    @staticmethod
    def _details(details: grpc.aio.ClientCallDetails) -> grpc.aio.ClientCallDetails:
        return _with_trace(details)


class _UnaryUnaryTrace(_SendsTrace, grpc.aio.UnaryUnaryClientInterceptor):
    async def intercept_unary_unary(self, continuation: Any, client_call_details: grpc.aio.ClientCallDetails,
                                    request: Any) -> Any:
        return await continuation(self._details(client_call_details), request)


class _UnaryStreamTrace(_SendsTrace, grpc.aio.UnaryStreamClientInterceptor):
    async def intercept_unary_stream(self, continuation: Any, client_call_details: grpc.aio.ClientCallDetails,
                                     request: Any) -> Any:
        return await continuation(self._details(client_call_details), request)


class _StreamUnaryTrace(_SendsTrace, grpc.aio.StreamUnaryClientInterceptor):
    async def intercept_stream_unary(self, continuation: Any, client_call_details: grpc.aio.ClientCallDetails,
                                     request_iterator: Any) -> Any:
        return await continuation(self._details(client_call_details), request_iterator)


class _StreamStreamTrace(_SendsTrace, grpc.aio.StreamStreamClientInterceptor):
    async def intercept_stream_stream(self, continuation: Any, client_call_details: grpc.aio.ClientCallDetails,
                                      request_iterator: Any) -> Any:
        return await continuation(self._details(client_call_details), request_iterator)


def trace_interceptors() -> list[grpc.aio.ClientInterceptor]:
    """Client interceptors that send the caller's trace as W3C ``traceparent`` metadata on every call shape.

    >>> channel = grpc.aio.insecure_channel(address, interceptors=trace_interceptors())  # doctest: +SKIP

    One per call shape: a channel files each interceptor under the first shape it implements only, so one
    object implementing all four would only see unary calls.
    """
    return [_UnaryUnaryTrace(), _UnaryStreamTrace(), _StreamUnaryTrace(), _StreamStreamTrace()]


def _with_trace(details: grpc.aio.ClientCallDetails) -> grpc.aio.ClientCallDetails:
    metadata = grpc.aio.Metadata(*tuple(details.metadata or ()))
    if metadata.get(TRACEPARENT) is not None:
        return details  # the caller chose the trace for this call
    metadata.add(TRACEPARENT, outgoing_traceparent())
    return grpc.aio.ClientCallDetails(details.method, details.timeout, metadata, details.credentials,
                                      details.wait_for_ready)


class ProviderInterceptor(grpc.aio.ServerInterceptor):
    """Continues the caller's trace in every handler and maps errors to statuses (the outermost interceptor).

    ``server`` names the provider in the INTERNAL message (``internal error in <server>; see its log``).
    """

    def __init__(self, server: str) -> None:
        self.server = server

    async def intercept_service(self, continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Any]],
                                handler_call_details: grpc.HandlerCallDetails) -> Any:
        handler = await continuation(handler_call_details)
        if handler is None:
            return None
        traceparent = _incoming(handler_call_details.invocation_metadata)
        return _wrap(handler, traceparent, self.server)


def _incoming(metadata: Iterable[tuple[str, str | bytes]] | None) -> str:
    """The incoming ``traceparent`` if valid, else a new trace: never the server task's own context, which
    is whatever was current when the server started."""
    for key, value in metadata or ():
        if key == TRACEPARENT:
            found = parse_traceparent(value.decode("ascii", "replace") if isinstance(value, bytes) else value)
            if found:
                return found
    return new_traceparent()


def _wrap(handler: Any, traceparent: str, server: str) -> Any:
    """The same method handler with each behaviour run inside the trace and the error boundary."""
    kinds = (("unary_unary", grpc.unary_unary_rpc_method_handler, _unary),
             ("unary_stream", grpc.unary_stream_rpc_method_handler, _streaming),
             ("stream_unary", grpc.stream_unary_rpc_method_handler, _unary),
             ("stream_stream", grpc.stream_stream_rpc_method_handler, _streaming))
    for attribute, make, wrapper in kinds:
        behavior = getattr(handler, attribute)
        if behavior is not None:
            return make(wrapper(behavior, traceparent, server),
                        request_deserializer=handler.request_deserializer,
                        response_serializer=handler.response_serializer)
    return handler


def _unary(behavior: Behavior, traceparent: str, server: str) -> Behavior:
    async def run(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        with continue_trace(traceparent):
            try:
                result = behavior(request, context)
                return await result if inspect.isawaitable(result) else result
            except grpc.aio.AbortError:
                raise  # the handler set its own status
            except Exception as exc:
                await abort_with(context, exc, server=server, log=log)

    return run


def _streaming(behavior: Behavior, traceparent: str, server: str) -> Behavior:
    if not (inspect.isasyncgenfunction(behavior) or inspect.isgeneratorfunction(behavior)):
        return _unary(behavior, traceparent, server)  # writes with context.write(): a coroutine like any other

    async def run(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> AsyncIterator[Any]:
        with continue_trace(traceparent):
            try:
                produced = behavior(request, context)
                if inspect.isasyncgen(produced):
                    async for item in produced:
                        yield item
                else:
                    for item in produced:
                        yield item
            except grpc.aio.AbortError:
                raise
            except Exception as exc:
                await abort_with(context, exc, server=server, log=log)

    return run
