"""gRPC endpoints between hives: the registry of ``(contract, major) -> address`` and its input rules.

Pure: records are applied here at commit and at replay alike, so the registry after a restart is the one
callers were told about. See docs/root-hive.md#the-engine-rules-of-negotiation ("gRPC endpoints").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ..errors import InputError
from ._model import Endpoint

__all__ = ["EndpointRegistry", "check_address", "check_major", "check_services"]

#: ``host:port`` or ``[v6]:port``; a host name, an IPv4 address, or an IPv6 address in brackets.
_ADDRESS = re.compile(r"(?:\[[0-9A-Fa-f:.]{2,45}\]|[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252}[A-Za-z0-9])?):(\d{1,5})\Z")
_SERVICE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
#: A uint32 on the wire; majors are small in practice, and JSON and semver readers agree up to here.
MAX_MAJOR = 2**31 - 1
MAX_SERVICES = 64


def check_address(address: object) -> str:
    """``address`` if it is ``host:port`` with a port in 1..65535; raises InputError ``endpoint.address``."""
    match = _ADDRESS.match(address) if isinstance(address, str) else None
    if match is None or not 0 < int(match.group(1)) < 65536:
        raise InputError(
            f"{address!r} is not an address a consumer can dial",
            code="endpoint.address",
            hint="send host:port (or [v6]:port) with the port the server bound, e.g. 127.0.0.1:40123",
        )
    return address  # type: ignore[return-value]  # matched, so a str


def check_major(major: object) -> int:
    """``major`` if it is a major version number; raises InputError ``endpoint.major``."""
    if isinstance(major, bool) or not isinstance(major, int) or not 0 <= major <= MAX_MAJOR:
        raise InputError(
            f"{major!r} is not a major version",
            code="endpoint.major",
            hint="the major of the contract version the server implements, e.g. 1 for 1.4.2",
        )
    return major


def check_services(services: Iterable[object]) -> tuple[str, ...]:
    """Fully qualified service names (``shop.inventory.v1.Inventory``); raises InputError ``endpoint.services``."""
    out = tuple(services)
    if len(out) > MAX_SERVICES or not all(isinstance(s, str) and _SERVICE.match(s) for s in out):
        raise InputError(
            f"{list(out)[:MAX_SERVICES]!r} are not service names",
            code="endpoint.services",
            hint=f"at most {MAX_SERVICES} fully qualified names such as shop.inventory.v1.Inventory",
        )
    return out  # type: ignore[return-value]  # every item checked


class EndpointRegistry:
    """The endpoints registered now, rebuilt from ``endpoint_registered`` / ``endpoint_removed`` records."""

    def __init__(self) -> None:
        self._by_key: dict[tuple[str, int], Endpoint] = {}

    def get(self, contract: str, major: int) -> Endpoint | None:
        return self._by_key.get((contract, major))

    def all(self) -> list[Endpoint]:
        """Every endpoint, by contract and major."""
        return [self._by_key[key] for key in sorted(self._by_key)]

    def of_provider(self, hive: str) -> list[Endpoint]:
        return [e for e in self.all() if e.provider == hive]

    def apply_registered(self, data: dict[str, Any], time: float) -> None:
        endpoint = Endpoint(
            data["contract"], int(data["major"]), data["address"], data["provider"], data.get("service", ""), time
        )
        self._by_key[(endpoint.contract, endpoint.major)] = endpoint

    def apply_removed(self, data: dict[str, Any]) -> None:
        key = (data["contract"], int(data["major"]))
        known = self._by_key.get(key)
        if known is not None and known.address == data["address"]:
            del self._by_key[key]
