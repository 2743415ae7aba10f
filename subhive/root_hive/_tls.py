"""TLS for the root's gRPC service: plain on loopback only, TLS (server certificate, client CA) anywhere else.

    check_listen_address("0.0.0.0", None)         # raises InputError root.insecure_address
    tls = ServerTls(Path("root.crt"), Path("root.key"))
    channel = root_channel("root.example:50051", ca_file=Path("ca.crt"))

Every call to the root carries a bearer token (docs/decisions/0029-root-tls-off-loopback.md).
"""

from __future__ import annotations

import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path

import grpc

from ..errors import InputError, Location

__all__ = ["CA_ENV", "ServerTls", "check_listen_address", "is_loopback", "root_channel"]

#: The CA file the CLI verifies a TLS root with (the library takes it as an argument).
CA_ENV = "SUBHIVE_ROOT_CA"


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


@dataclass(frozen=True)
class ServerTls:
    """The root's certificate chain and private key (PEM files)."""

    cert_file: Path
    key_file: Path

    def credentials(self) -> grpc.ServerCredentials:
        """Server credentials, once the pair is known to load (so a bad file is an error naming it, not a
        failed bind)."""
        try:
            ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(self.cert_file, self.key_file)
        except (OSError, ssl.SSLError) as exc:
            raise InputError(f"cannot use {self.cert_file} with {self.key_file} for TLS: {_reason(exc)}",
                             code="root.tls_invalid", location=Location(file=str(self.cert_file)),
                             hint="give a PEM certificate (chain) and the PEM private key that belongs to it"
                             ) from None
        return grpc.ssl_server_credentials([(self.key_file.read_bytes(), self.cert_file.read_bytes())])


def check_listen_address(host: str, tls: ServerTls | None) -> None:
    """Refuse to serve tokens in plain text beyond this machine: a non-loopback ``host`` needs ``tls``."""
    if tls is None and not is_loopback(host):
        raise InputError(f"refusing to serve the root on {host} without TLS: every call carries a token, and "
                         "plain gRPC would show it to the network", code="root.insecure_address",
                         hint="listen on 127.0.0.1 (the default), or give --tls-cert and --tls-key; clients then "
                              f"verify the root with its CA file (${CA_ENV}, or RootClient(ca_file=...))")


def root_channel(address: str, *, ca_file: Path | None = None) -> grpc.aio.Channel:
    """A channel to the root at ``address``: TLS verified against ``ca_file`` when given, plain otherwise."""
    if ca_file is None:
        return grpc.aio.insecure_channel(address)
    try:
        ssl.create_default_context(cafile=str(ca_file))
        pem = ca_file.read_bytes()
    except (OSError, ssl.SSLError) as exc:
        raise InputError(f"cannot use {ca_file} as the root's CA: {_reason(exc)}", code="root.tls_ca_invalid",
                         location=Location(file=str(ca_file)),
                         hint=f"point ${CA_ENV} (or ca_file) at the PEM certificate that signed the root's") from None
    return grpc.aio.secure_channel(address, grpc.ssl_channel_credentials(root_certificates=pem))


def _reason(exc: OSError | ssl.SSLError) -> str:
    if isinstance(exc, ssl.SSLError):
        return exc.reason or str(exc)
    return exc.strerror or str(exc)
