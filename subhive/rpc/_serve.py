"""The provider's side: serve a contract's gRPC service on loopback (or with TLS), with health and the caller
check, and register its address with the root (docs/rpc.md#the-provider).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from ..errors import InputError, SubhiveError, UsageError
from ..root_hive import Endpoint, RootClient, ServerTls, check_listen_address
from ._auth import CallerCheck
from ._interceptors import ProviderInterceptor
from ._keys import Keys

__all__ = ["AddServicer", "ProviderServer", "serve_grpc"]

log = logging.getLogger("subhive.rpc")

#: A generated ``add_<Service>Servicer_to_server(servicer, server)`` function.
AddServicer = Callable[[Any, Any], None]


class ProviderServer:
    """A running provider: its gRPC server, health service and the endpoint the root holds for it."""

    def __init__(
        self,
        server: grpc.aio.Server,
        health_servicer: health.aio.HealthServicer,
        root: RootClient,
        endpoint: Endpoint,
        services: tuple[str, ...],
    ) -> None:
        self.endpoint = endpoint
        #: The services the server answers (health excluded), as the generated code named them.
        self.services = services
        self._server = server
        self._health = health_servicer
        self._root = root
        self._stopped = False

    @property
    def address(self) -> str:
        return self.endpoint.address

    async def stop(self, grace: float | None = 1.0) -> None:
        """Stop cleanly: health says NOT_SERVING, the root forgets the address (if it still names this
        one), and in-flight calls get ``grace`` seconds. A root that does not answer only leaves a stale
        registration behind, which the provider's next start replaces."""
        if self._stopped:
            return
        self._stopped = True
        await self._health.enter_graceful_shutdown()
        try:
            await self._root.remove_endpoint(self.endpoint.contract, self.endpoint.major, self.address)
        except (SubhiveError, grpc.aio.UsageError) as exc:  # UsageError: the root client was closed first
            log.warning(
                "could not unregister %s v%d at %s: %s", self.endpoint.contract, self.endpoint.major, self.address, exc
            )
        await self._server.stop(grace)

    async def wait_for_termination(self) -> None:
        await self._server.wait_for_termination()

    async def __aenter__(self) -> ProviderServer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


async def serve_grpc(
    root: RootClient,
    contract: str,
    major: int,
    servicers: Sequence[tuple[AddServicer, object]],
    *,
    keys: Keys | None = None,
    anonymous: bool = False,
    host: str = "127.0.0.1",
    port: int = 0,
    tls: ServerTls | None = None,
    interceptors: Sequence[grpc.aio.ServerInterceptor] = (),
    advertise: str | None = None,
) -> ProviderServer:
    """Serve ``servicers`` for ``contract`` v``major`` and register the address with ``root``.

    ``root`` is authenticated as the contract's provider (its hive token). ``servicers`` pairs each generated
    ``add_*_to_server`` function with its servicer; the root refuses the registration
    (``endpoint.service_missing``) when none of them is the contract's service. ``keys`` (the provider's
    own) say which hives may call: the contract's consumers and the provider itself; others are refused
    (UNAUTHENTICATED, PERMISSION_DENIED) before any handler runs. ``anonymous=True`` instead lets any local
    process call, for a local experiment. ``tls`` (the server's certificate and key) makes it serve TLS only,
    which a ``host`` that is not loopback needs: every call carries a token. ``advertise``: the host consumers
    dial, registered with the root, when it is not ``host`` (e.g. serving on ``0.0.0.0``). ``interceptors``
    run inside the check, the trace and the error boundary. Raises :class:`~subhive.errors.UsageError` for no
    servicers and for neither keys nor ``anonymous`` (``rpc.no_keys``), InputError ``rpc.insecure_address``
    for a host beyond loopback without ``tls`` and ``rpc.tls_invalid`` for a pair that does not load (before
    anything opens), ``rpc.bind_failed`` when the address cannot be bound, and what the root raises (PermissionDenied
    ``auth.not_provider`` for a hive that does not provide the contract); the server is stopped then.

    >>> server = await serve_grpc(root, "inventory", 1, [(add_InventoryServicer_to_server, Inventory())],
    ...                           keys=db_keys)  # doctest: +SKIP
    >>> server.address  # doctest: +SKIP
    '127.0.0.1:40123'
    """
    _check_servicers(servicers)
    check_listen_address(
        host,
        tls,
        server=f"{contract} v{major}",
        code="rpc.insecure_address",
        hint="serve on 127.0.0.1 (the default), or pass tls=ServerTls(cert_file, key_file); "
        "consumers then verify it with connect_grpc(..., ca_file=...)",
    )
    credentials = tls.credentials(code="rpc.tls_invalid") if tls is not None else None
    check = _caller_check(keys, anonymous, contract, major)
    provider = ProviderInterceptor(f"{contract} v{major} provider", check=check)
    server = grpc.aio.server(interceptors=[provider, *interceptors])
    recorder = _Recorder(server)
    for add, servicer in servicers:
        add(servicer, recorder)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    address = _bind(server, host, port, credentials)
    if advertise is not None:
        port_bound = address.rsplit(":", 1)[1]
        address = f"[{advertise.strip('[]')}]:{port_bound}" if ":" in advertise else f"{advertise}:{port_bound}"
    await server.start()
    try:
        for name in ("", *recorder.services):
            await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
        # SERVING before the root hands the address out: a consumer that finds it can call it at once.
        endpoint = await root.register_endpoint(contract, major, address, services=recorder.services)
    except BaseException:
        await server.stop(None)
        raise
    return ProviderServer(server, health_servicer, root, endpoint, tuple(recorder.services))


def _check_servicers(servicers: Sequence[tuple[AddServicer, object]]) -> None:
    if not servicers or not all(isinstance(s, tuple) and len(s) == 2 and callable(s[0]) for s in servicers):
        raise UsageError(
            "serve_grpc needs (add_*_to_server, servicer) pairs, at least one",
            code="rpc.servicers",
            hint="e.g. [(inventory_pb2_grpc.add_InventoryServicer_to_server, Inventory())]",
        )


def _caller_check(keys: Keys | None, anonymous: bool, contract: str, major: int) -> CallerCheck | None:
    if keys is not None and anonymous:
        raise UsageError(
            "serve_grpc takes keys or anonymous=True, not both",
            code="rpc.no_keys",
            hint="keys: only the contract's consumers may call; anonymous: anyone on this machine",
        )
    if keys is not None:
        return CallerCheck(keys, contract, major)
    if not anonymous:
        raise UsageError(
            f"serve_grpc({contract!r}, {major}) has no keys to check its callers with",
            code="rpc.no_keys",
            hint="pass keys= (the provider hive's GrpcKeys or KeyFile; subhive up gives each hive "
            "its own), or anonymous=True for a local experiment: any local process may then "
            "call it",
        )
    log.warning("%s v%d is served to anonymous callers: any local process may call it", contract, major)
    return None


def _bind(server: grpc.aio.Server, host: str, port: int, credentials: grpc.ServerCredentials | None) -> str:
    target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        bound = server.add_insecure_port(target) if credentials is None else server.add_secure_port(target, credentials)
    except RuntimeError as exc:
        raise InputError(
            f"cannot listen on {host}:{port}", code="rpc.bind_failed", hint="choose another port, or 0 for a free one"
        ) from exc
    if not bound:
        raise InputError(
            f"cannot listen on {host}:{port}", code="rpc.bind_failed", hint="choose another port, or 0 for a free one"
        )
    return f"[{host}]:{bound}" if ":" in host else f"{host}:{bound}"


class _Recorder:
    """Stands in for the server while generated ``add_*_to_server`` functions run, to learn the names of
    the services they add (for health checking and for the root's check) and pass everything on."""

    def __init__(self, server: grpc.aio.Server) -> None:
        self._server = server
        self.services: list[str] = []

    def _note(self, name: str) -> None:
        if name not in self.services:
            self.services.append(name)

    def add_generic_rpc_handlers(self, handlers: Iterable[grpc.GenericRpcHandler]) -> None:
        handlers = tuple(handlers)
        for handler in handlers:
            service_name = getattr(handler, "service_name", None)
            if callable(service_name):
                self._note(str(service_name()))
        self._server.add_generic_rpc_handlers(handlers)

    def add_registered_method_handlers(self, service: str, handlers: dict[str, Any]) -> None:
        self._note(service)
        self._server.add_registered_method_handlers(service, handlers)
