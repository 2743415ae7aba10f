"""Who may register, remove and look up a contract's gRPC endpoint (decision 0013), over ``_endpoints.py``.

The registry itself and its input rules are pure and live in ``_endpoints.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import InputError
from ._endpoints import check_address, check_major, check_services
from ._errors import Conflict, NotFound, PermissionDenied
from ._log import Frame
from ._model import Endpoint
from ._rules import check_contract_name
from ._state import RootState, batched

__all__ = ["EndpointCalls"]


class EndpointCalls(RootState):
    """Endpoint registration and lookup."""

    @batched
    def register_endpoint(
        self, hive: str | None, contract: str, major: int, address: str, *, services: Sequence[str] = ()
    ) -> Endpoint:
        """Record that ``contract``'s major line ``major`` is served over gRPC at ``address``.

        >>> root.register_endpoint("db", "inventory", 1, "127.0.0.1:40123").provider  # doctest: +SKIP
        'db'

        ``hive`` must be the provider of that line (of its newest accepted version); ``None`` stands for the
        admin, who registers for that provider. The line's contract must declare a gRPC service, and
        ``services`` (what the server answers, if given) must include it. A registration replaces the previous
        one (a restarted provider has a new port); the same address again changes nothing. Raises
        :class:`PermissionDenied` (``auth.not_provider``), :class:`NotFound` (``endpoint.no_contract``: no
        accepted version of that major) and :class:`InputError` (``endpoint.*``).
        """
        check_contract_name(contract, "endpoint.contract")
        major, address, served = check_major(major), check_address(address), check_services(services)
        provider, service = self._served_line(contract, major)
        if hive is not None:
            self._known_hive(hive)
            if hive != provider:
                raise PermissionDenied(
                    f"hive {hive!r} cannot register an endpoint for {contract} v{major}: {provider!r} provides it",
                    code="auth.not_provider",
                    hint="only the contract's provider serves it",
                )
        if served and service not in served:
            raise InputError(
                f"the server at {address} does not answer {service}, the service of {contract} "
                f"v{major} (it answers {', '.join(served)})",
                code="endpoint.service_missing",
                hint="add the contract's servicer to the server before registering it",
            )
        known = self._endpoints.get(contract, major)
        if known is not None and (known.address, known.provider) == (address, provider):
            return known
        self._commit(
            [
                (
                    "endpoint_registered",
                    {
                        "contract": contract,
                        "major": major,
                        "address": address,
                        "provider": provider,
                        "service": service,
                        "replaced": known.address if known is not None else None,
                    },
                    {},
                )
            ]
        )
        return self._endpoint_now(contract, major)

    @batched
    def remove_endpoint(self, hive: str | None, contract: str, major: int, address: str) -> bool:
        """Remove the registration of ``contract`` v``major`` if it still names ``address``; True if it did.

        A provider stopping removes its own address only, so it never removes the one a newer instance of
        it registered meanwhile. ``hive`` must be the registered provider (``None``: the admin).
        """
        check_contract_name(contract, "endpoint.contract")
        major, address = check_major(major), check_address(address)
        known = self._endpoints.get(contract, major)
        if known is None:
            return False
        if hive is not None and hive != known.provider:
            raise PermissionDenied(
                f"hive {hive!r} cannot remove the endpoint of {contract} v{major}: {known.provider!r} registered it",
                code="auth.not_provider",
            )
        if known.address != address:
            return False
        self._commit(
            [
                (
                    "endpoint_removed",
                    {"contract": contract, "major": major, "address": address, "provider": known.provider},
                    {},
                )
            ]
        )
        return True

    def endpoint(self, contract: str, major: int, *, hive: str | None) -> Endpoint:
        """Where ``contract`` v``major`` is served, for ``hive`` (``None``: the admin).

        >>> root.endpoint("inventory", 1, hive="web").address  # doctest: +SKIP
        '127.0.0.1:40123'

        A hive may look up the contracts it declared a requirement on, and those it provides (decision
        0013); any other hive gets :class:`PermissionDenied` (``auth.not_consumer``), whether or not an
        endpoint exists. Nothing registered raises :class:`NotFound` (``endpoint.none``).
        """
        check_contract_name(contract, "endpoint.contract")
        major = check_major(major)
        if hive is not None:
            self._known_hive(hive)
            if (hive, contract) not in self._requirements and all(
                e.provider != hive for e in self._lock.versions(contract)
            ):
                raise PermissionDenied(
                    f"hive {hive!r} neither consumes nor provides {contract}: it may not look up its endpoint",
                    code="auth.not_consumer",
                    hint=f"declare a requirement on {contract} (consumes in subhive.toml, or DeclareRequirement) first",
                )
        found = self._endpoints.get(contract, major)
        if found is None:
            line = [e for e in self._lock.versions(contract) if e.version.major == major]
            hint = (
                f"its provider {line[-1].provider!r} registers one when it serves it (subhive.rpc.serve_grpc)"
                if line
                else f"no version of {contract} with major {major} is accepted yet: its provider proposes one first"
            )
            raise NotFound(f"no gRPC endpoint is registered for {contract} v{major}", code="endpoint.none", hint=hint)
        return found

    def endpoints(self) -> list[Endpoint]:
        """Every registered endpoint, by contract and major."""
        return self._endpoints.all()

    def _endpoint_now(self, contract: str, major: int) -> Endpoint:
        found = self._endpoints.get(contract, major)
        assert found is not None  # just applied
        return found

    def _served_line(self, contract: str, major: int) -> tuple[str, str]:
        """The provider and gRPC service of the newest accepted version of ``contract`` with ``major``."""
        line = [e for e in self._lock.versions(contract) if e.version.major == major]
        if not line:
            raise NotFound(
                f"no version of {contract} with major {major} is accepted",
                code="endpoint.no_contract",
                hint="propose the contract first; an endpoint serves an accepted version",
            )
        newest = line[-1]
        loaded = self._contract(contract, newest.version)
        if loaded is None:
            raise Conflict(
                f"the accepted {contract} {newest.version} no longer loads; restore it from version control",
                code="lock.tampered",
            )
        if loaded.grpc is None:
            raise InputError(
                f"{contract} {newest.version} declares no gRPC service: there is nothing to serve",
                code="endpoint.no_service",
                hint="add grpc: {proto, service} to its contract.yaml in a new version",
            )
        return newest.provider, loaded.grpc.service

    def _apply_endpoint(self, data: dict[str, Any], frame: Frame, replaying: bool) -> None:
        self._endpoints.apply_registered(data, frame.time)

    def _apply_endpoint_removed(self, data: dict[str, Any], frame: Frame, replaying: bool) -> None:
        self._endpoints.apply_removed(data)
