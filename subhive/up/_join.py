"""One hive started by hand, anywhere its NATS servers and the root can be reached: ``subhive creds HIVE``
exports what it needs (its own NKey seed, nobody else's) from a running tree into one owner-only file, and
``subhive join --creds FILE`` runs the hive with nothing else (docs/up.md#a-hive-that-runs-elsewhere). It joins
as another process of that hive: requests and events are shared with the one ``up`` runs (queue groups), and
``status`` counts it.
"""

from __future__ import annotations

import json
import os
import signal
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._files import read_json, write_json
from ..errors import InputError, Location, SubhiveError
from ._control import running_supervisor
from ._layout import UpLayout

__all__ = ["CREDENTIALS_FORMAT", "HiveCredentials", "export_credentials", "join", "write_elsewhere_credentials"]

#: The layout version of a credentials file; a newer one is refused with "upgrade subhive".
CREDENTIALS_FORMAT = 1
_KEYS = ("format", "hive", "nats", "nkey_seed", "root", "token", "failover", "grpc_keys")


@dataclass(frozen=True)
class HiveCredentials:
    """Everything one hive's process needs besides the workspace's files: where NATS and the root are, its NKey
    seed, its root token and its gRPC keys. Secrets are not shown by ``repr``."""

    hive: str
    nats: tuple[str, ...]
    nkey_seed: str = field(repr=False)
    root: str
    token: str = field(repr=False)
    failover: float = 0.0
    grpc_keys: dict[str, Any] = field(default_factory=dict, repr=False)
    #: The PEM CA that signed the root's certificate (and the providers'), when the tree's gRPC serves TLS
    #: (``[grpc]``); "" for a root on loopback. Optional in the file: older files have none.
    root_ca: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": CREDENTIALS_FORMAT,
            "hive": self.hive,
            "nats": list(self.nats),
            "nkey_seed": self.nkey_seed,
            "root": self.root,
            "token": self.token,
            "failover": self.failover,
            "grpc_keys": self.grpc_keys,
            "root_ca": self.root_ca,
        }

    def write(self, path: Path) -> None:
        """Owner-only (0600), atomically: it holds the hive's secrets."""
        write_json(path, self.to_dict(), private=True)

    @classmethod
    def read(cls, path: Path) -> HiveCredentials:
        """A credentials file; ``up.creds_invalid`` naming the file and the key that is wrong."""
        if not path.is_file():
            raise InputError(
                f"no credentials file at {path}",
                code="up.creds_missing",
                location=Location(file=str(path)),
                hint="make one on the machine running the tree: subhive creds HIVE --out FILE",
            )
        data = read_json(path)
        if data is None:
            raise _invalid(path, "", "is not a JSON object")
        if data.get("format") != CREDENTIALS_FORMAT:
            raise _invalid(path, "/format", f"format {data.get('format')!r} is not {CREDENTIALS_FORMAT}")
        for key in _KEYS:
            if key not in data:
                raise _invalid(path, f"/{key}", "is missing")
        for key in ("hive", "nkey_seed", "root", "token"):
            if not isinstance(data[key], str) or not data[key]:
                raise _invalid(path, f"/{key}", "must be a non-empty string")
        nats = data["nats"]
        if not isinstance(nats, list) or not nats or not all(isinstance(u, str) and u for u in nats):
            raise _invalid(path, "/nats", "must be a non-empty list of NATS URLs")
        failover = data["failover"]
        if isinstance(failover, bool) or not isinstance(failover, int | float) or failover < 0:
            raise _invalid(path, "/failover", "must be a number of seconds, 0 or more")
        if not isinstance(data["grpc_keys"], dict):
            raise _invalid(path, "/grpc_keys", "must be an object")
        root_ca = data.get("root_ca", "")
        if not isinstance(root_ca, str) or (root_ca and "-----BEGIN CERTIFICATE-----" not in root_ca):
            raise _invalid(path, "/root_ca", "must be a PEM certificate, or empty")
        return cls(
            data["hive"],
            tuple(nats),
            data["nkey_seed"],
            data["root"],
            data["token"],
            float(failover),
            data["grpc_keys"],
            root_ca,
        )


def _invalid(path: Path, pointer: str, what: str) -> InputError:
    return InputError(
        f"{path}: {pointer or 'the file'} {what}",
        code="up.creds_invalid",
        location=Location(file=str(path), pointer=pointer),
        hint="make it again with subhive creds HIVE --out FILE",
    )


def export_credentials(workspace: Path, hive: str) -> HiveCredentials:
    """``hive``'s credentials in the running tree of ``workspace``; ``up.not_running`` when it is not up and
    ``up.unknown_hive`` when the tree has no such hive."""
    from ..root_hive import TOKENS_DIR

    record = running_supervisor(workspace)
    if record is None:
        raise SubhiveError(
            "this workspace is not up, so it has no credentials to give",
            code="up.not_running",
            hint="subhive up --detach, then subhive creds HIVE --out FILE",
        )
    layout = UpLayout(workspace)
    seed = layout.seed_file(hive)
    if hive not in (record.get("hives") or {}) or not seed.is_file():
        known = ", ".join(sorted(record.get("hives") or {})) or "none"
        raise SubhiveError(
            f"the running tree has no hive {hive!r} (it has: {known})",
            code="up.unknown_hive",
            hint="subhive status lists the hives",
        )
    token_file = workspace / TOKENS_DIR / f"{hive}.token"
    token = token_file.read_text(encoding="utf-8").strip() if token_file.is_file() else ""
    settings, root_ca = _settings(workspace)
    return HiveCredentials(
        hive=hive,
        nats=tuple(u for u in str(record.get("nats") or "").split(",") if u),
        nkey_seed=seed.read_text(encoding="utf-8").strip(),
        root=str(record.get("root") or ""),
        token=token,
        failover=settings,
        grpc_keys=read_json(layout.keys_dir / f"{hive}.json") or {},
        root_ca=root_ca,
    )


def write_elsewhere_credentials(workspace: Path, directory: Path) -> list[Path]:
    """The credentials of each hive ``[up] elsewhere`` names, each in its own owner-only directory
    ``<directory>/<hive>/<hive>.creds`` (what a container of that hive mounts, and nothing of the others')."""
    from ..workspace import open_workspace

    written = []
    for hive in open_workspace(workspace).config.up.elsewhere:
        path = directory / hive / f"{hive}.creds"
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        export_credentials(workspace, hive).write(path)
        written.append(path)
    return written


def _settings(workspace: Path) -> tuple[float, str]:
    """The failover seconds, and the text of ``[grpc] ca`` (the CA a hive elsewhere verifies the root with)."""
    from ..workspace import open_workspace

    config = open_workspace(workspace).config
    files = config.grpc.files(workspace)
    if files is None:
        return config.nats.failover_seconds, ""
    try:
        return config.nats.failover_seconds, files[2].read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(
            f"cannot read [grpc] ca {files[2]}: {exc}",
            code="up.grpc_ca_missing",
            location=Location(file=str(workspace / "hive.toml"), pointer="/grpc/ca"),
            hint="point ca at the PEM certificate that signed the root's and the hives' certificates",
        ) from None


async def join(
    workspace: Path,
    credentials: HiveCredentials,
    *,
    tls_ca: Path | None = None,
    root: str | None = None,
    root_ca: Path | None = None,
    advertise: str | None = None,
) -> signal.Signals:
    """Run ``credentials.hive`` from ``workspace``'s files until SIGINT or SIGTERM (returned), connected as the
    credentials say (``tls_ca``: the CA of NATS servers that speak TLS). ``root`` and ``root_ca`` replace the
    root's address and the CA the credentials bring (which verifies the root and the providers);
    ``advertise``: the host this machine's gRPC servers are dialled at (``[grpc] listen`` on every interface)."""
    from ..bus import BusEndpoint
    from ..hive import serve_hive

    with tempfile.TemporaryDirectory(prefix="subhive-join-") as private:  # 0700: the seed and keys stay ours
        seed = Path(private) / f"{credentials.hive}.nk"
        _write_private(seed, credentials.nkey_seed)
        keys = Path(private) / f"{credentials.hive}.json"
        _write_private(keys, json.dumps(credentials.grpc_keys))
        endpoint = BusEndpoint(list(credentials.nats), nkey_seed=seed, tls_ca=tls_ca)
        if root_ca is None and credentials.root_ca:
            root_ca = Path(private) / "root-ca.pem"
            _write_private(root_ca, credentials.root_ca)
        return await serve_hive(
            workspace,
            credentials.hive,
            endpoint,
            root_address=root or credentials.root or None,
            token=credentials.token or None,
            grpc_keys=keys if credentials.grpc_keys else None,
            failover=credentials.failover,
            root_ca=root_ca,
            advertise=advertise,
        )


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
