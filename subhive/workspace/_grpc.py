"""Where the root's and the hives' gRPC servers listen: ``[grpc]`` in hive.toml. Loopback by default; another
interface with TLS, an ``advertise`` host the others dial, and the CA every client verifies with (docs/cluster.md,
decision 0123).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from .._net import is_dialable_host, is_loopback, is_wildcard
from .._source import join_pointer
from ._checks import unknown_keys

__all__ = ["GRPC_KEYS", "GrpcSettings"]

GRPC_KEYS = ("listen", "advertise", "tls_cert", "tls_key", "ca")
_TLS_KEYS = ("tls_cert", "tls_key", "ca")

Report = Callable[[str, str, str, str], None]


@dataclass(frozen=True, slots=True)
class GrpcSettings:
    """``listen``: the interface the root and each hive's gRPC servers bind (default ``127.0.0.1``);
    ``advertise``: the host the others dial for them (default: ``listen``; needed when it is a wildcard such as
    ``0.0.0.0``). ``tls_cert``, ``tls_key`` and ``ca`` (PEM files, relative to the workspace) go together: the
    servers then serve TLS only, and every client (hives, ``up``, the CLI) verifies them against ``ca``. A
    ``listen`` beyond loopback needs them: every call carries a token."""

    listen: str = "127.0.0.1"
    advertise: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    ca: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.listen, str) or not is_dialable_host(self.listen, wildcard_ok=True):
            raise ValueError(f"listen must be a host name or IP address, not {self.listen!r}")
        if self.advertise is not None and not is_dialable_host(self.advertise):
            raise ValueError(f"advertise must be a host others can dial, not {self.advertise!r}")
        given = [getattr(self, key) is not None for key in _TLS_KEYS]
        if any(given) and not all(given):
            raise ValueError("tls_cert, tls_key and ca go together")
        if not self.tls and not is_loopback(self.listen):
            raise ValueError(f"listen = {self.listen!r} is beyond loopback and needs tls_cert, tls_key and ca")
        if self.advertise is None and is_wildcard(self.listen):
            raise ValueError(f"listen = {self.listen!r} is every interface: name the host to dial in advertise")

    @property
    def tls(self) -> bool:
        return self.tls_cert is not None

    @property
    def host(self) -> str:
        """The host the others dial: ``advertise``, else ``listen``."""
        return self.advertise or self.listen

    def files(self, workspace: Path) -> tuple[Path, Path, Path] | None:
        """``(tls_cert, tls_key, ca)`` resolved against ``workspace`` (an absolute name stays), or None
        without TLS."""
        if self.tls_cert is None or self.tls_key is None or self.ca is None:
            return None
        return workspace / self.tls_cert, workspace / self.tls_key, workspace / self.ca

    @property
    def is_set(self) -> bool:
        return self != GrpcSettings()

    def to_toml(self) -> str:
        lines = ["[grpc]", f"listen = {json.dumps(self.listen)}"]
        lines += [f"{key} = {json.dumps(getattr(self, key))}" for key in GRPC_KEYS[1:] if getattr(self, key)]
        return "\n".join(lines) + "\n"

    @classmethod
    def read(cls, table: object, pointer: str, report: Report) -> GrpcSettings:
        """Settings from a ``[grpc]`` table at ``pointer``, each problem passed to ``report`` (codes
        ``workspace.*``); with a problem the defaults (loopback, plain) stand."""
        if not isinstance(table, Mapping):
            report(pointer, "workspace.type", "grpc must be a table", 'write it as [grpc] with listen = "0.0.0.0"')
            return cls()
        said: list[str] = []

        def bad(key: str, code: str, message: str, hint: str) -> None:
            said.append(code)
            report(join_pointer(pointer, key) if key else pointer, code, message, hint)

        if unknown_keys(table, pointer, GRPC_KEYS, "workspace.unknown_key", report):
            said.append("workspace.unknown_key")
        listen = table.get("listen", "127.0.0.1")
        if not isinstance(listen, str) or not is_dialable_host(listen, wildcard_ok=True):
            bad("listen", "workspace.grpc_listen", f"listen = {listen!r} is not a host", 'e.g. listen = "0.0.0.0"')
            listen = "127.0.0.1"
        advertise = _advertise(table.get("advertise"), listen, bad)
        files = _tls_files(table, listen, bad)
        if said:
            return cls()
        return cls(listen, advertise, *files)


def _advertise(value: object, listen: str, bad: Callable[[str, str, str, str], None]) -> str | None:
    """``advertise``: a host others dial; needed when ``listen`` is every interface."""
    if value is None:
        if is_wildcard(listen):
            bad(
                "advertise",
                "workspace.grpc_advertise",
                f"listen = {listen!r} is every interface, and no advertise says which host the others dial",
                'add advertise = "<this machine\'s name>" (a name the certificate holds)',
            )
        return None
    if not isinstance(value, str) or not is_dialable_host(value):
        bad(
            "advertise",
            "workspace.grpc_advertise",
            f"advertise = {value!r} is not a host the others can dial",
            'the name or address other machines reach this one by, e.g. advertise = "root.internal"',
        )
        return None
    return value


def _tls_files(
    table: Mapping[str, object], listen: str, bad: Callable[[str, str, str, str], None]
) -> tuple[str | None, str | None, str | None]:
    """``tls_cert``, ``tls_key`` and ``ca``: all three or none, and all three beyond loopback."""
    files: list[str | None] = []
    for key in _TLS_KEYS:
        value = table.get(key)
        if value is not None and (not isinstance(value, str) or not value):
            bad(key, "workspace.grpc_tls", f"{key} = {value!r} is not a file name", f'e.g. {key} = "certs/{key}.pem"')
        files.append(value if isinstance(value, str) and value else None)
    given = [key for key in _TLS_KEYS if key in table]
    if given and len(given) < len(_TLS_KEYS):
        missing = [key for key in _TLS_KEYS if key not in table]
        bad(
            "",
            "workspace.grpc_tls",
            f"[grpc] has {', '.join(given)} but not {', '.join(missing)}",
            "tls_cert and tls_key (the servers' certificate and key) and ca (the CA that signed it, which every "
            "client verifies with) go together",
        )
    elif not given and not is_loopback(listen):
        bad(
            "listen",
            "workspace.grpc_insecure",
            f"listen = {listen!r} is beyond loopback, and [grpc] has no TLS: every call carries a token, which "
            "plain gRPC would show to the network",
            "add tls_cert, tls_key and ca (PEM files), or listen on 127.0.0.1",
        )
    return files[0], files[1], files[2]
