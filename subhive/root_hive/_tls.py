"""TLS for the root's gRPC service and providers' (subhive.rpc): plain on loopback only, TLS anywhere else.

See docs/root-hive.md#the-grpc-service and docs/decisions/0029-root-tls-off-loopback.md.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path

import grpc

from .._net import is_loopback
from ..errors import InputError, Location

__all__ = ["CA_ENV", "ServerTls", "channel_credentials", "check_listen_address", "is_loopback", "root_channel"]

#: The CA file the CLI verifies a TLS root with (the library takes it as an argument).
CA_ENV = "SUBHIVE_ROOT_CA"


@dataclass(frozen=True)
class ServerTls:
    """A server's certificate chain and private key (PEM files): the root's, or a provider's."""

    cert_file: Path
    key_file: Path

    def credentials(self, *, code: str = "root.tls_invalid") -> grpc.ServerCredentials:
        """Server credentials, once the pair is known to load (so a bad file is an error naming it, ``code``,
        not a failed bind)."""
        try:
            ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(self.cert_file, self.key_file)
        except (OSError, ssl.SSLError) as exc:
            raise InputError(
                f"cannot use {self.cert_file} with {self.key_file} for TLS: {_reason(exc)}",
                code=code,
                location=Location(file=str(self.cert_file)),
                hint="give a PEM certificate (chain) and the PEM private key that belongs to it",
            ) from None
        return grpc.ssl_server_credentials([(self.key_file.read_bytes(), self.cert_file.read_bytes())])


def check_listen_address(
    host: str,
    tls: ServerTls | None,
    *,
    server: str = "the root",
    code: str = "root.insecure_address",
    hint: str | None = None,
) -> None:
    """Refuse to serve tokens in plain text beyond this machine: a non-loopback ``host`` needs ``tls``.
    ``server``, ``code`` and ``hint`` say whose address it is (the defaults: the root's, for its CLI)."""
    if tls is None and not is_loopback(host):
        raise InputError(
            f"refusing to serve {server} on {host} without TLS: every call carries a token, and "
            "plain gRPC would show it to the network",
            code=code,
            hint=hint
            or "listen on 127.0.0.1 (the default), or give --tls-cert and --tls-key; clients "
            f"then verify the root with its CA file (${CA_ENV}, or RootClient(ca_file=...))",
        )


def channel_credentials(
    ca_file: Path, *, whose: str = "the root's", code: str = "root.tls_ca_invalid", hint: str | None = None
) -> grpc.ChannelCredentials:
    """Credentials that verify a server against the PEM CA certificate(s) in ``ca_file``; a file that is not
    one is an InputError ``code`` naming it."""
    try:
        ssl.create_default_context(cafile=str(ca_file))
        pem = ca_file.read_bytes()
    except (OSError, ssl.SSLError) as exc:
        raise InputError(
            f"cannot use {ca_file} as {whose} CA: {_reason(exc)}",
            code=code,
            location=Location(file=str(ca_file)),
            hint=hint or f"point ${CA_ENV} (or ca_file) at the PEM certificate that signed the root's",
        ) from None
    return grpc.ssl_channel_credentials(root_certificates=pem)


def root_channel(address: str, *, ca_file: Path | None = None) -> grpc.aio.Channel:
    """A channel to the root at ``address``: TLS verified against ``ca_file`` when given, plain otherwise. A root
    beyond loopback without a CA is refused (InputError ``root.insecure_channel``): every call carries a token,
    which must not cross the network in plain text."""
    if ca_file is None:
        host = address.rpartition(":")[0] or address
        if not is_loopback(host):
            raise InputError(
                f"the root at {address} is not on this machine, and without its CA the calls (each with a token) "
                "would cross the network in plain text",
                code="root.insecure_channel",
                hint=f"point ${CA_ENV} ([grpc] ca in hive.toml, or `subhive join --root-ca`) at the PEM certificate "
                "that signed the root's",
            )
        return grpc.aio.insecure_channel(address)
    return grpc.aio.secure_channel(address, channel_credentials(ca_file))


def _reason(exc: OSError | ssl.SSLError) -> str:
    if isinstance(exc, ssl.SSLError):
        return exc.reason or str(exc)
    return exc.strerror or str(exc)
