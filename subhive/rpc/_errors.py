"""Errors of gRPC between hives: ``NoEndpoint`` (a ``NotFound``, ``rpc.no_endpoint``) and ``RpcFailed``
(``rpc.<status>``), and :func:`error_from_rpc`, which rebuilds the error a provider raised from its status.
See docs/rpc.md#errors.
"""

from __future__ import annotations

import grpc

from ..errors import SubhiveError
from ..root_hive import NotFound, error_from_details

__all__ = ["NoEndpoint", "RpcFailed", "error_from_rpc"]


class NoEndpoint(NotFound):
    """The root knows no address for the contract's major line: its provider is not serving it."""

    default_code = "rpc.no_endpoint"


class RpcFailed(SubhiveError):
    """A call failed with a status of gRPC itself (UNAVAILABLE, DEADLINE_EXCEEDED, INTERNAL, ...)."""

    default_code = "rpc.failed"
    exit_code = 1


def error_from_rpc(exc: grpc.aio.AioRpcError, *, target: str = "") -> SubhiveError:
    """The subhive error a failed call stands for.

    >>> try:                                                    # doctest: +SKIP
    ...     await stub.GetStock(request)
    ... except grpc.aio.AioRpcError as exc:
    ...     raise error_from_rpc(exc) from None                 # e.g. InputError, code "stock.sku"

    A status a provider sent for a SubhiveError comes back as that error (class, code, message, problems);
    any other status becomes :class:`RpcFailed` with code ``rpc.<status>`` (e.g. ``rpc.unavailable``).
    """
    code = exc.code()
    error = error_from_details(code, exc.details())
    if error is not None:
        return error
    where = f" at {target}" if target else ""
    return RpcFailed(
        f"the gRPC call{where} failed: {code.name}: {exc.details() or 'no details'}",
        code=f"rpc.{code.name.lower()}",
        hint="check that the provider runs (UNAVAILABLE) and see its log (INTERNAL)",
    )
