"""Which addresses stay on this machine: the rule every listener that may serve without TLS follows."""

from __future__ import annotations

import ipaddress

from .errors import InputError

__all__ = ["check_advertise", "is_dialable_host", "is_loopback", "is_wildcard"]


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


def is_wildcard(host: str) -> bool:
    """Whether ``host`` is every interface (``0.0.0.0``, ``::``): a place to listen, not an address to dial."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


def is_dialable_host(value: str, *, wildcard_ok: bool = False) -> bool:
    """An IP address (IPv6 with or without brackets) or a DNS name; a wildcard only with ``wildcard_ok``.

    >>> is_dialable_host("root.internal"), is_dialable_host("[::1]"), is_dialable_host("http://root")
    (True, True, False)
    >>> is_dialable_host("0.0.0.0"), is_dialable_host("0.0.0.0", wildcard_ok=True)
    (False, True)
    """
    name = value[1:-1] if value.startswith("[") and value.endswith("]") else value
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return bool(name) and all(part and all(c.isalnum() or c in "-_" for c in part) for part in name.split("."))
    return wildcard_ok or not is_wildcard(name)


def check_advertise(advertise: str, listen: str, *, listen_hint: str) -> None:
    """Refuse an ``--advertise`` host nobody could dial, before anything is registered under it: not a host (a
    URL, a port), a wildcard, or a host elsewhere while the servers listen on loopback only (clients refuse a
    plain address beyond loopback anyway: every call carries a token). ``listen_hint`` says how to listen further.
    """
    if not is_dialable_host(advertise):
        raise InputError(
            f"--advertise {advertise!r} is not a host the others can dial",
            code="usage.advertise_invalid",
            hint="the name or address other machines reach this one by, without scheme or port, e.g. "
            "--advertise root.internal",
        )
    if is_loopback(listen) and not is_loopback(advertise):
        raise InputError(
            f"--advertise {advertise!r} names a host beyond this machine, but the gRPC servers listen on {listen} "
            "(loopback only): nobody there could reach them",
            code="usage.advertise_unreachable",
            hint=listen_hint,
        )
