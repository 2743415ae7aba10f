"""The consumer's side: find a contract's gRPC endpoint through the root and open a traced channel to it whose
calls carry the calling hive's credentials (docs/rpc.md#the-consumer).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import grpc

from ..errors import InputError
from ..root_hive import NotFound, RootClient, channel_credentials, is_loopback
from ._errors import NoEndpoint
from ._interceptors import caller_interceptors, trace_interceptors
from ._keys import Keys

__all__ = ["connect_grpc"]


async def connect_grpc(
    root: RootClient,
    contract: str,
    major: int,
    *,
    keys: Keys | None = None,
    interceptors: Sequence[grpc.aio.ClientInterceptor] = (),
    options: Sequence[tuple[str, Any]] = (),
    ca_file: Path | None = None,
) -> grpc.aio.Channel:
    """A channel to where ``contract`` v``major`` is served, sending the caller's trace on every call.

    ``root`` is authenticated as a consumer of the contract (a hive that declared a requirement on it) or
    its provider. ``keys`` (the calling hive's :class:`GrpcKeys` or :class:`KeyFile`) make every call carry
    the hive's name and its token for the provider, which a provider checks; without them calls are
    anonymous, which only a provider serving with ``anonymous=True`` answers. ``ca_file`` (PEM) makes the
    channel TLS, verifying the provider's certificate against it: a provider beyond loopback serves TLS only,
    and without a CA the call is refused here (InputError ``rpc.insecure_endpoint``) rather than sent in clear.

    Raises :class:`NoEndpoint` (``rpc.no_endpoint``) when nothing is registered, PermissionDenied
    (``auth.not_consumer``) for a hive that neither consumes nor provides it, and RootUnavailable when the
    root does not answer. The channel connects lazily; close it when done (or use
    ``async with``). Failed calls raise ``grpc.aio.AioRpcError``: :func:`error_from_rpc` gives the error the
    provider raised.

    >>> async with RootClient(root_address, web_token) as root:  # doctest: +SKIP
    ...     async with await connect_grpc(root, "inventory", 1, keys=web_keys) as channel:
    ...         stock = await InventoryStub(channel).GetStock(GetStockRequest(sku="A-1"))
    """
    try:
        endpoint = await root.lookup_endpoint(contract, major)
    except NotFound as exc:
        if exc.code != "endpoint.none":
            raise
        raise NoEndpoint(
            f"no gRPC endpoint is registered for {contract} v{major}",
            hint=f"{exc.hint or 'start its provider'}; then connect again "
            "(the provider registers its address with the root when it starts serving)",
        ) from None
    outgoing = trace_interceptors() if keys is None else caller_interceptors(keys, endpoint.provider)
    if ca_file is not None:
        credentials = channel_credentials(
            ca_file,
            whose=f"{contract} v{major}'s",
            code="rpc.tls_ca_invalid",
            hint="pass the PEM certificate that signed the provider's",
        )
        return grpc.aio.secure_channel(
            endpoint.address, credentials, options=list(options) or None, interceptors=[*outgoing, *interceptors]
        )
    if not is_loopback(endpoint.address.rsplit(":", 1)[0]):
        raise InputError(
            f"{contract} v{major} is served at {endpoint.address}, beyond this machine, and no CA was "
            "given to verify it: its calls carry the hive's token",
            code="rpc.insecure_endpoint",
            hint="pass ca_file= (the PEM certificate that signed the provider's); a provider beyond "
            "loopback serves TLS only",
        )
    return grpc.aio.insecure_channel(
        endpoint.address, options=list(options) or None, interceptors=[*outgoing, *interceptors]
    )
