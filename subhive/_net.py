"""Which addresses stay on this machine: the rule every listener that may serve without TLS follows."""

from __future__ import annotations

import ipaddress

__all__ = ["is_loopback"]


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an IP, ``[::1]`` or ``localhost``) only reaches this machine; a hostname that is not
    ``localhost`` counts as reaching further, since what it resolves to may change."""
    name = host.strip("[]")
    if name.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False
