"""The trace and error interceptors on every call shape, against a real grpc.aio server on 127.0.0.1:0."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from subhive.errors import InputError
from subhive.rpc import (
    ProviderInterceptor,
    current_traceparent,
    new_traceparent,
    start_trace,
    trace_id,
    trace_interceptors,
)
from tests.kit import run

from ._raw import stream_stream, stream_unary, unary_stream, unary_unary

SERVICE = "test.Echo"


class Echo:
    """Answers with the traceparent each handler runs in; ``fail`` as the request raises an InputError."""

    @staticmethod
    def _current(request: bytes) -> bytes:
        if request == b"fail":
            raise InputError("told to fail", code="echo.fail")
        return (current_traceparent() or "").encode()

    async def unary_unary(self, request: bytes, context: Any) -> bytes:
        return self._current(request)

    async def unary_stream(self, request: bytes, context: Any) -> AsyncIterator[bytes]:
        yield self._current(request)
        yield self._current(request)

    async def stream_unary(self, requests: AsyncIterator[bytes], context: Any) -> bytes:
        return self._current(b"".join([r async for r in requests]))

    async def stream_stream(self, requests: AsyncIterator[bytes], context: Any) -> AsyncIterator[bytes]:
        async for request in requests:
            yield self._current(request)


async def start_server() -> tuple[grpc.aio.Server, str]:
    echo = Echo()
    server = grpc.aio.server(interceptors=[ProviderInterceptor("echo")])
    handlers: dict[str, grpc.RpcMethodHandler[bytes, bytes]] = {
        "UnaryUnary": grpc.unary_unary_rpc_method_handler(echo.unary_unary),
        "UnaryStream": grpc.unary_stream_rpc_method_handler(echo.unary_stream),
        "StreamUnary": grpc.stream_unary_rpc_method_handler(echo.stream_unary),
        "StreamStream": grpc.stream_stream_rpc_method_handler(echo.stream_stream),
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, f"127.0.0.1:{port}"


async def call_every_shape(channel: grpc.aio.Channel, request: bytes = b"x") -> list[str]:
    """The traceparent the handler saw, for each of the four call shapes."""

    async def requests() -> AsyncIterator[bytes]:
        yield request

    seen = [await unary_unary(channel, f"/{SERVICE}/UnaryUnary")(request)]
    seen += [m async for m in unary_stream(channel, f"/{SERVICE}/UnaryStream")(request)][:1]
    seen.append(await stream_unary(channel, f"/{SERVICE}/StreamUnary")(requests()))
    seen += [m async for m in stream_stream(channel, f"/{SERVICE}/StreamStream")(requests())]
    return [s.decode() for s in seen]


def test_every_call_shape_carries_the_callers_trace_with_a_new_span() -> None:
    async def scenario() -> None:
        server, address = await start_server()
        try:
            async with grpc.aio.insecure_channel(address, interceptors=trace_interceptors()) as channel:
                with start_trace() as traceparent:
                    seen = await call_every_shape(channel)
        finally:
            await server.stop(None)
        assert len(seen) == 4
        assert {trace_id(s) for s in seen} == {trace_id(traceparent)}
        assert traceparent not in seen  # each hop is a span of its own

    run(scenario())


def test_a_call_outside_a_trace_starts_one_per_call() -> None:
    async def scenario() -> None:
        server, address = await start_server()
        try:
            async with grpc.aio.insecure_channel(address, interceptors=trace_interceptors()) as channel:
                seen = await call_every_shape(channel)
        finally:
            await server.stop(None)
        assert all(s.startswith("00-") for s in seen)
        assert len({trace_id(s) for s in seen}) == len(seen)  # unrelated calls: unrelated traces

    run(scenario())


def test_a_traceparent_the_caller_sets_is_sent_as_it_is() -> None:
    async def scenario() -> None:
        server, address = await start_server()
        chosen = new_traceparent()
        try:
            async with grpc.aio.insecure_channel(address, interceptors=trace_interceptors()) as channel:
                reply = await unary_unary(channel, f"/{SERVICE}/UnaryUnary")(b"x", metadata=(("traceparent", chosen),))
        finally:
            await server.stop(None)
        assert reply.decode() == chosen

    run(scenario())


@pytest.mark.parametrize(
    "metadata",
    [(), (("traceparent", "00-not-a-trace-01"),), (("traceparent", "00-" + "0" * 32 + "-" + "1" * 16 + "-01"),)],
)
def test_without_a_valid_incoming_trace_the_handler_gets_a_new_one_not_the_servers(
    metadata: tuple[tuple[str, str], ...],
) -> None:
    async def scenario() -> None:
        with start_trace() as at_start:  # whatever was current when the server started must not leak into calls
            server, address = await start_server()
        try:
            async with grpc.aio.insecure_channel(address) as channel:
                reply = (await unary_unary(channel, f"/{SERVICE}/UnaryUnary")(b"x", metadata=metadata)).decode()
        finally:
            await server.stop(None)
        assert reply.startswith("00-")
        assert trace_id(reply) != trace_id(at_start)

    run(scenario())


def test_errors_leave_as_statuses_on_every_call_shape() -> None:
    async def scenario() -> None:
        server, address = await start_server()
        codes = []
        try:
            async with grpc.aio.insecure_channel(address, interceptors=trace_interceptors()) as channel:
                for shape in ("UnaryUnary", "UnaryStream", "StreamUnary", "StreamStream"):
                    with pytest.raises(grpc.aio.AioRpcError) as caught:
                        await call_one(channel, shape)
                    codes.append(caught.value.code())
        finally:
            await server.stop(None)
        assert codes == [grpc.StatusCode.INVALID_ARGUMENT] * 4

    run(scenario())


async def call_one(channel: grpc.aio.Channel, shape: str) -> None:
    async def requests() -> AsyncIterator[bytes]:
        yield b"fail"

    method = f"/{SERVICE}/{shape}"
    if shape == "UnaryUnary":
        await unary_unary(channel, method)(b"fail")
    elif shape == "UnaryStream":
        _ = [m async for m in unary_stream(channel, method)(b"fail")]
    elif shape == "StreamUnary":
        await stream_unary(channel, method)(requests())
    else:
        _ = [m async for m in stream_stream(channel, method)(requests())]
