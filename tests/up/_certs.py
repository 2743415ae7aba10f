"""A CA and a certificate it signs for some hosts, made by openssl: what an operator gives ``[grpc]``."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Certs:
    ca: Path
    cert: Path
    key: Path

    def grpc_table(self, listen: str, advertise: str | None = None) -> str:
        """A ``[grpc]`` table serving TLS on ``listen`` with these files."""
        lines = ["[grpc]", f'listen = "{listen}"']
        if advertise is not None:
            lines.append(f'advertise = "{advertise}"')
        lines += [f'tls_cert = "{self.cert}"', f'tls_key = "{self.key}"', f'ca = "{self.ca}"']
        return "\n" + "\n".join(lines) + "\n"


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


def ca_and_cert(directory: Path, *, dns: tuple[str, ...] = ("localhost",), ips: tuple[str, ...] = ()) -> Certs:
    """A CA (``ca.pem``) and a server certificate it signed (``cert.pem``, ``key.pem``) for ``dns`` and ``ips``."""
    directory.mkdir(parents=True, exist_ok=True)
    ca, ca_key = directory / "ca.pem", directory / "ca.key"
    cert, key, request = directory / "cert.pem", directory / "key.pem", directory / "cert.csr"
    _openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=test CA",
        "-keyout", str(ca_key), "-out", str(ca),
    )  # fmt: skip
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=subhive", "-keyout", str(key), "-out", str(request))
    names = ",".join([*(f"DNS:{d}" for d in dns), *(f"IP:{i}" for i in ips)])
    extensions = directory / "san.cnf"
    extensions.write_text(f"subjectAltName={names}\n", encoding="utf-8")
    _openssl(
        "x509", "-req", "-in", str(request), "-CA", str(ca), "-CAkey", str(ca_key), "-CAcreateserial",
        "-days", "1", "-extfile", str(extensions), "-out", str(cert),
    )  # fmt: skip
    return Certs(ca, cert, key)
