"""The interceptors of gRPC between hives: the caller sends its trace and its hive's credentials; the provider
(:class:`ProviderInterceptor`, outermost) checks who calls, continues the trace and is the error boundary.
See docs/rpc.md#trace-context and #errors.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any

import grpc

from ..errors import SubhiveError
from ..root_hive import abort_with, error_details, status_of
from ..telemetry import TRACING, SpanHandle, span, start_span
from ._auth import CallerCheck
from ._keys import HIVE_HEADER, TOKEN_HEADER, Keys
from ._trace import TRACEPARENT, new_traceparent, outgoing_traceparent, parse_traceparent

__all__ = ["ProviderInterceptor", "caller_interceptors", "trace_interceptors"]

log = logging.getLogger("subhive.rpc")

Behavior = Callable[..., Any]


class _Credentials:
    """The metadata that says which hive calls: its name and its token for ``provider``, read at each call."""

    def __init__(self, keys: Keys, provider: str) -> None:
        self.keys = keys
        self.provider = provider

    def add_to(self, metadata: grpc.aio.Metadata) -> None:
        if metadata.get(HIVE_HEADER) is not None:
            return  # the call chose its own credentials
        keys = self.keys.current()
        metadata.add(HIVE_HEADER, keys.hive)
        token = keys.present.get(self.provider)
        if token is not None:  # none: the provider says which hive came without one
            metadata.add(TOKEN_HEADER, token)


class _Outgoing:
    # grpc.aio runs an interceptor in a task it creates when the call is made, so the contextvar read here is
    # the caller's.
    def __init__(self, credentials: _Credentials | None = None) -> None:
        self._credentials = credentials

    def _details(self, details: grpc.aio.ClientCallDetails) -> tuple[grpc.aio.ClientCallDetails, SpanHandle | None]:
        """The call's metadata with the trace and credentials; and its client span, while tracing (the
        traceparent sent is the span's own, so the provider's span is its child)."""
        metadata = grpc.aio.Metadata(*tuple(details.metadata or ()))
        chosen = metadata.get(TRACEPARENT)  # the caller chose the trace for this call
        method = details.method.decode() if isinstance(details.method, bytes) else str(details.method)
        at = start_span(method.lstrip("/"), "client", _rpc_attributes(method), parent=_text(chosen))
        if at is not None:
            metadata.set_all(TRACEPARENT, [at.traceparent])
        elif chosen is None:
            metadata.add(TRACEPARENT, outgoing_traceparent())
        if self._credentials is not None:
            self._credentials.add_to(metadata)
        return grpc.aio.ClientCallDetails(
            details.method, details.timeout, metadata, details.credentials, details.wait_for_ready
        ), at

    @staticmethod
    async def _call(continuation: Any, details: grpc.aio.ClientCallDetails, at: SpanHandle | None, sent: Any) -> Any:
        """Make the call; its span (if any) ends when the call is done, with its status."""
        try:
            call = await continuation(details, sent)
        except BaseException as exc:
            if at is not None:
                at.fail(type(exc).__name__)
                at.end()
            raise
        if at is not None:
            call.add_done_callback(lambda done: _ended(done, at))
        return call


class _UnaryUnaryOut(_Outgoing, grpc.aio.UnaryUnaryClientInterceptor):
    async def intercept_unary_unary(
        self, continuation: Any, client_call_details: grpc.aio.ClientCallDetails, request: Any
    ) -> Any:
        details, at = self._details(client_call_details)
        return await self._call(continuation, details, at, request)


class _UnaryStreamOut(_Outgoing, grpc.aio.UnaryStreamClientInterceptor):
    async def intercept_unary_stream(
        self, continuation: Any, client_call_details: grpc.aio.ClientCallDetails, request: Any
    ) -> Any:
        details, at = self._details(client_call_details)
        return await self._call(continuation, details, at, request)


class _StreamUnaryOut(_Outgoing, grpc.aio.StreamUnaryClientInterceptor):
    async def intercept_stream_unary(
        self, continuation: Any, client_call_details: grpc.aio.ClientCallDetails, request_iterator: Any
    ) -> Any:
        details, at = self._details(client_call_details)
        return await self._call(continuation, details, at, request_iterator)


class _StreamStreamOut(_Outgoing, grpc.aio.StreamStreamClientInterceptor):
    async def intercept_stream_stream(
        self, continuation: Any, client_call_details: grpc.aio.ClientCallDetails, request_iterator: Any
    ) -> Any:
        details, at = self._details(client_call_details)
        return await self._call(continuation, details, at, request_iterator)


def trace_interceptors() -> list[grpc.aio.ClientInterceptor]:
    """Client interceptors that send the caller's trace as W3C ``traceparent`` metadata on every call shape.

    >>> channel = grpc.aio.insecure_channel(address, interceptors=trace_interceptors())  # doctest: +SKIP

    One per call shape: a channel files each interceptor under the first shape it implements only, so one
    object implementing all four would only see unary calls.
    """
    return [_UnaryUnaryOut(), _UnaryStreamOut(), _StreamUnaryOut(), _StreamStreamOut()]


def caller_interceptors(keys: Keys, provider: str) -> list[grpc.aio.ClientInterceptor]:
    """Like :func:`trace_interceptors`, and each call also says which hive makes it: ``subhive-hive`` (the
    hive of ``keys``) and ``subhive-token`` (its token for the hive ``provider``), unless the call sets
    ``subhive-hive`` itself. One pass over the metadata for both.

    >>> channel = grpc.aio.insecure_channel(address, interceptors=caller_interceptors(keys, "db"))  # doctest: +SKIP
    """
    credentials = _Credentials(keys, provider)
    return [
        _UnaryUnaryOut(credentials),
        _UnaryStreamOut(credentials),
        _StreamUnaryOut(credentials),
        _StreamStreamOut(credentials),
    ]


class ProviderInterceptor(grpc.aio.ServerInterceptor):
    """Checks the caller, continues its trace in every handler and maps errors to statuses (the outermost
    interceptor).

    ``server`` names the provider in the INTERNAL message (``internal error in <server>; see its log``).
    ``check`` (a :class:`CallerCheck`) refuses callers that may not call; None lets anyone call, which
    :func:`~subhive.rpc.serve_grpc` allows only when told so (``anonymous=True``).
    """

    def __init__(self, server: str, *, check: CallerCheck | None = None) -> None:
        self.server = server
        self.check = check

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Any]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Any:
        if self.check is not None:
            refusal = self.check.refusal(handler_call_details.method, handler_call_details.invocation_metadata)
            if refusal is not None:
                log.warning("%s: refused a call: %s", self.server, refusal)
                return _refusing(refusal)
        handler = await continuation(handler_call_details)
        if handler is None:
            return None
        traceparent = _incoming(handler_call_details.invocation_metadata)
        return _wrap(handler, traceparent, self.server, str(handler_call_details.method))


def _refusing(error: SubhiveError) -> grpc.RpcMethodHandler[Any, Any]:
    """A handler that ends the call with ``error``'s status at once. Streaming both ways, whatever the
    method's shape: it reads nothing and writes nothing, and a unary caller gets the status all the same; the
    real handler is never looked up, so no other interceptor sees the call."""

    async def refuse(requests: Any, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        await context.abort(status_of(error), error_details(error))

    return grpc.stream_stream_rpc_method_handler(refuse)


def _incoming(metadata: Iterable[tuple[str, str | bytes]] | None) -> str:
    """The incoming ``traceparent`` if valid, else a new trace: never the server task's own context, which
    is whatever was current when the server started. While tracing, a new trace is "" (the server span is
    then a root, not the child of a parent that never existed); otherwise a fresh traceparent to continue."""
    for key, value in metadata or ():
        if key == TRACEPARENT:
            found = parse_traceparent(value.decode("ascii", "replace") if isinstance(value, bytes) else value)
            if found:
                return found
    return "" if TRACING.tracer is not None else new_traceparent()


def _text(value: str | bytes | None) -> str | None:
    return value.decode("ascii", "replace") if isinstance(value, bytes) else value


def _rpc_attributes(method: str) -> dict[str, str]:
    """``/package.Service/Method`` as OpenTelemetry's RPC conventions name it."""
    service, _, name = method.lstrip("/").rpartition("/")
    return {"rpc.system": "grpc", "rpc.service": service, "rpc.method": name}


def _ended(call: Any, at: SpanHandle) -> None:
    """A client call is done: end its span once its status is read (an awaitable in grpc.aio)."""

    async def end() -> None:
        try:
            code = await call.code()
            at.set("rpc.grpc.status_code", code.value[0])
            if code != grpc.StatusCode.OK:
                at.fail(code.name, str(await call.details() or ""))
        finally:
            at.end()

    with contextlib.suppress(RuntimeError):  # no running loop: the call outlived it
        task = asyncio.get_running_loop().create_task(end())
        _ending.add(task)
        task.add_done_callback(_ending.discard)


_ending: set[asyncio.Task[None]] = set()  # tasks hold no reference to themselves


def _serving(traceparent: str, method: str) -> contextlib.AbstractContextManager[SpanHandle]:
    """The provider's side of a call: its server span while tracing (else only the caller's trace)."""
    return span(method.lstrip("/"), "server", _rpc_attributes(method), parent=traceparent)


def _wrap(handler: Any, traceparent: str, server: str, method: str = "") -> Any:
    """The same method handler with each behaviour run inside the trace and the error boundary."""
    kinds = (
        ("unary_unary", grpc.unary_unary_rpc_method_handler, _unary),
        ("unary_stream", grpc.unary_stream_rpc_method_handler, _streaming),
        ("stream_unary", grpc.stream_unary_rpc_method_handler, _unary),
        ("stream_stream", grpc.stream_stream_rpc_method_handler, _streaming),
    )
    for attribute, make, wrapper in kinds:
        behavior = getattr(handler, attribute)
        if behavior is not None:
            return make(
                wrapper(behavior, traceparent, server, method),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
    return handler


def _unary(behavior: Behavior, traceparent: str, server: str, method: str) -> Behavior:
    async def run(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        with _serving(traceparent, method) as at:
            try:
                result = behavior(request, context)
                return await result if inspect.isawaitable(result) else result
            except grpc.aio.AbortError:
                at.fail(_aborted(context))
                raise  # the handler set its own status
            except Exception as exc:
                at.fail(str(getattr(exc, "code", "")) or type(exc).__name__, str(exc)[:200])
                await abort_with(context, exc, server=server, log=log)

    return run


def _streaming(behavior: Behavior, traceparent: str, server: str, method: str) -> Behavior:
    if not (inspect.isasyncgenfunction(behavior) or inspect.isgeneratorfunction(behavior)):
        return _unary(behavior, traceparent, server, method)  # writes with context.write(): a coroutine like any other

    async def run(request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> AsyncIterator[Any]:
        with _serving(traceparent, method) as at:
            try:
                produced = behavior(request, context)
                if inspect.isasyncgen(produced):
                    async for item in produced:
                        yield item
                else:
                    for item in produced:
                        yield item
            except grpc.aio.AbortError:
                at.fail(_aborted(context))
                raise
            except Exception as exc:
                at.fail(str(getattr(exc, "code", "")) or type(exc).__name__, str(exc)[:200])
                await abort_with(context, exc, server=server, log=log)

    return run


def _aborted(context: grpc.aio.ServicerContext[Any, Any]) -> str:
    """The status a handler aborted with, by name."""
    code = context.code()
    return code.name if isinstance(code, grpc.StatusCode) else str(code)
