"""The provider's check of who calls it: a known hive (its token verified) that consumes the contract.
The refusals and their codes: docs/rpc.md#who-may-call.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable

from ..errors import SubhiveError
from ..root_hive import PermissionDenied, Unauthenticated
from ._keys import HIVE_HEADER, TOKEN_HEADER, Keys

__all__ = ["OPEN_SERVICES", "CallerCheck"]

#: Services any local process may call: they tell whether and what a server serves, not the contract's data.
OPEN_SERVICES = frozenset(
    {"grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"}
)
#: Compared against when the hive is unknown, so an unknown hive costs the same time as a wrong token.
_NOBODY = b"0" * 64


class CallerCheck:
    """Who may call the server of ``contract`` v``major``: its consumers in ``keys``, and the provider itself.

    One provider server serves one contract's major line, so every method it answers belongs to that contract;
    only the standard health and reflection services stay open to anyone (they say whether and what it serves,
    never the contract's data).

    >>> check = CallerCheck(KeyFile(path), "notes_store", 1)  # doctest: +SKIP
    >>> check.refusal("/notes.NotesStore/Put", metadata)  # doctest: +SKIP
    """

    def __init__(self, keys: Keys, contract: str, major: int) -> None:
        self.keys = keys
        self.contract = contract
        self.major = major

    def refusal(self, method: str, metadata: Iterable[tuple[str, str | bytes]] | None) -> SubhiveError | None:
        """None when the call may go on; else the error it is refused with (the status follows its class)."""
        if method.lstrip("/").split("/", 1)[0] in OPEN_SERVICES:
            return None
        keys = self.keys.current()
        hive, token = _credentials(metadata)
        served = f"{keys.hive}'s {self.contract} v{self.major} service"
        if hive is None or token is None:
            return Unauthenticated(
                f"{served} answers its consumers only, and this call to {method} says "
                f"{'no hive' if hive is None else f'hive {hive[:64]!r} without a token'}",
                code="auth.missing",
                hint=f"call through subhive (HiveContext.channel, or connect_grpc(..., keys=...)): it sends the "
                f"{HIVE_HEADER} and {TOKEN_HEADER} metadata; under subhive up each hive gets its keys",
            )
        expected = keys.verify.get(hive)
        matches = hmac.compare_digest(expected.encode() if expected else _NOBODY, token.encode("utf-8", "replace"))
        if expected is None or not matches:
            return Unauthenticated(
                f"{served} does not accept the credentials of this call to {method} (hive {hive[:64]!r})",
                code="auth.unauthenticated",
                hint="a token is valid at one provider only, and for one run of subhive up; a hive gets its own "
                "from subhive up (SUBHIVE_GRPC_KEYS)",
            )
        if hive != keys.hive and hive not in keys.consumers.get((self.contract, self.major), ()):
            return PermissionDenied(
                f"hive {hive!r} does not consume {self.contract} v{self.major}: {keys.hive} refuses its call to "
                f"{method}",
                code="auth.not_consumer",
                hint=f"declare a requirement on {self.contract} (consumes in {hive}'s subhive.toml); the provider "
                "accepts the hive once the lock lists it, without a restart",
            )
        return None


def _credentials(metadata: Iterable[tuple[str, str | bytes]] | None) -> tuple[str | None, str | None]:
    hive = token = None
    for key, value in metadata or ():
        if key == HIVE_HEADER:
            hive = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        elif key == TOKEN_HEADER:
            token = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    return hive, token
