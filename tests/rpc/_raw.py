"""Calls over a gRPC channel with raw bytes both ways, in each of the four shapes.

Without serializers the stubs cannot tell the request and reply types; these say what they are: bytes.
"""

from __future__ import annotations

import grpc


def unary_unary(channel: grpc.aio.Channel, method: str) -> grpc.aio.UnaryUnaryMultiCallable[bytes, bytes]:
    return channel.unary_unary(method)


def unary_stream(channel: grpc.aio.Channel, method: str) -> grpc.aio.UnaryStreamMultiCallable[bytes, bytes]:
    return channel.unary_stream(method)


def stream_unary(channel: grpc.aio.Channel, method: str) -> grpc.aio.StreamUnaryMultiCallable[bytes, bytes]:
    return channel.stream_unary(method)


def stream_stream(channel: grpc.aio.Channel, method: str) -> grpc.aio.StreamStreamMultiCallable[bytes, bytes]:
    return channel.stream_stream(method)
