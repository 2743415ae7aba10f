"""A NATS cluster someone else runs: ``subhive up`` starts no server, connects to the URLs it is given and first
checks that the cluster holds the accounts the tree needs (the ones ``subhive nats accounts`` writes for its
operator). The same surface as :class:`~subhive.bus.EmbeddedServer`, minus the processes. Decision 0121.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from subhive.errors import Location, SubhiveError

from ._accounts import ACCOUNTS_MARK, HUB_ACCOUNT, AccountsConfig, installable_accounts
from ._server import BusEndpoint

__all__ = ["ExternalCluster"]

_ASK_TIMEOUT = 3.0
_JETSTREAM_TRIES = 5


class ExternalCluster:
    """The nodes at ``urls``, reached as the framework with the seed in ``admin_seed``; ``seed_of(hive)`` is the
    seed file of each hive (to tell which hive's user is missing); ``monitor_urls`` are the nodes' monitoring
    endpoints, if the operator shares them. ``accounts_file`` is where a check that fails writes the accounts
    to install. Nothing here starts, stops or reloads a server: those are the operator's."""

    def __init__(
        self,
        urls: list[str],
        *,
        admin_seed: Path,
        seed_of: Callable[[str], Path],
        accounts_file: Path,
        monitor_urls: list[str] | None = None,
        tls_ca: Path | None = None,
    ) -> None:
        self.urls = list(urls)
        self.admin_seed = admin_seed
        self.seed_of = seed_of
        self.accounts_file = accounts_file
        self.monitor_urls = list(monitor_urls or [])
        self.tls_ca = tls_ca

    @property
    def url(self) -> str:
        return self.urls[0]

    @property
    def pids(self) -> list[int]:
        """No process of this machine: ``down`` and ``status`` leave the nodes alone."""
        return []

    @property
    def pid(self) -> int | None:
        return None

    @property
    def running(self) -> bool:
        """Always: whether the nodes run is the operator's watch, and clients move between them by themselves."""
        return True

    def endpoint(
        self, user: str | None = None, password: str | None = None, *, nkey_seed: Path | None = None
    ) -> BusEndpoint:
        return BusEndpoint(self.urls, user=user, password=password, nkey_seed=nkey_seed, tls_ca=self.tls_ca)

    async def check(self, accounts: AccountsConfig, *, source: str = "") -> None:
        """Return when the cluster holds exactly ``accounts``; else write them to :attr:`accounts_file` and raise
        ``up.nats_accounts_missing`` naming the accounts whose users cannot log in, or ``up.nats_accounts_stale``
        when every user can but the grants are another lock's (or another workspace's)."""
        installed = await self.installed_digest()
        if installed == accounts.digest:
            unwired = [hive for hive in accounts.hives[:1] if not await self._reaches_jetstream(hive)]
            if unwired:
                # nats-server 2.15: the first reload that adds these accounts leaves the hives' imports of the
                # hub's JetStream API unanswered (measured: still after 20 s); a second reload wires them.
                raise SubhiveError(
                    f"the NATS cluster at {', '.join(self.urls)} holds this tree's accounts, but hive "
                    f"{unwired[0]!r} gets no answer from JetStream through them",
                    code="up.nats_accounts_unwired",
                    hint="reload the nodes once more (nats-server --signal reload): the reload that adds accounts "
                    "leaves their imports unanswered; later reloads and a restart wire them",
                )
            return
        self.accounts_file.parent.mkdir(parents=True, exist_ok=True)
        self.accounts_file.write_text(installable_accounts(accounts, source=source), encoding="utf-8")
        todo = (
            f"include {self.accounts_file} (written now; `subhive nats accounts --out FILE` writes the same) inside "
            "the accounts { } block of every node's configuration, reload the nodes (nats-server --signal reload, "
            "or SIGHUP), then run this again"
        )
        missing = [] if installed is not None else [HUB_ACCOUNT]
        for hive in accounts.hives:
            if not await self._logs_in(self.seed_of(hive)):
                missing.append(hive)
        if missing:
            raise SubhiveError(
                f"the NATS cluster at {', '.join(self.urls)} has no account {missing[0]!r}"
                + (f" (nor {', '.join(repr(m) for m in missing[1:])})" if len(missing) > 1 else "")
                + ": the tree's accounts are not installed there",
                code="up.nats_accounts_missing",
                location=Location(file=str(self.accounts_file)),
                hint=todo,
            )
        raise SubhiveError(
            f"the NATS cluster at {', '.join(self.urls)} holds this tree's users, but their grants are not the "
            f"ones its lock gives (installed {installed or 'without a digest'}, needed {accounts.digest})",
            code="up.nats_accounts_stale",
            location=Location(file=str(self.accounts_file)),
            hint=todo,
        )

    async def installed_digest(self) -> str | None:
        """The digest of the accounts installed on the cluster (``installable_accounts`` maps a subject of the hub
        account to it), or None when the framework's user cannot log in or nothing is mapped."""
        from ._wire import BusError

        try:
            nc = await self.endpoint(nkey_seed=self.admin_seed).connect_once(timeout=_ASK_TIMEOUT)
        except BusError as exc:
            if "Authorization" in str(exc):
                return None
            raise
        try:
            sub = await nc.subscribe(f"{ACCOUNTS_MARK}.>")
            await nc.publish(f"{ACCOUNTS_MARK}.digest", b"")
            try:
                msg = await sub.next_msg(timeout=_ASK_TIMEOUT)
            except TimeoutError:
                return None
            digest = msg.subject.removeprefix(f"{ACCOUNTS_MARK}.")
            return None if digest == "digest" else digest
        finally:
            await nc.close()

    async def _reaches_jetstream(self, hive: str) -> bool:
        """Whether ``hive``'s import of the hub's JetStream API answers: any answer (its board's stream may not
        exist yet) rather than no responders."""
        import nats

        from ._permissions import inbox_prefix, kv_bucket

        async def quiet(exc: Exception) -> None:  # a refused connection is the answer, not a log line
            pass

        try:
            nc = await nats.connect(
                **self.endpoint(nkey_seed=self.seed_of(hive)).connect_options(),  # type: ignore[arg-type]
                inbox_prefix=inbox_prefix(hive),
                allow_reconnect=False,
                connect_timeout=2,
                error_cb=quiet,
            )
        except (OSError, nats.errors.Error, TimeoutError):
            return False
        try:
            # No responders: the import is not wired. A timeout: JetStream may still be electing its leader
            # (a cluster just started), so ask again for a while before calling it unwired.
            for _ in range(_JETSTREAM_TRIES):
                try:
                    await nc.request(f"$JS.API.STREAM.INFO.KV_{kv_bucket(hive)}", b"", timeout=_ASK_TIMEOUT)
                except nats.errors.NoRespondersError:
                    return False
                except nats.errors.TimeoutError:
                    continue
                return True
            return False
        finally:
            await nc.close()

    async def _logs_in(self, seed: Path) -> bool:
        from ._wire import BusError

        try:
            nc = await self.endpoint(nkey_seed=seed).connect_once(timeout=_ASK_TIMEOUT)
        except BusError:
            return False
        await nc.close()
        return True

    # -- what EmbeddedServer does, which is the operator's here -------------------------------------------

    async def reload(self, accounts: AccountsConfig | None) -> None:
        """The tree's grants changed (a contract accepted): check the cluster holds the new ones; the operator
        installs them (the error says what to run)."""
        if accounts is not None:
            await self.check(accounts)

    async def restart(self) -> None:
        """Nothing to restart: the cluster is the operator's to keep up."""

    async def stop(self) -> None:
        """Nothing to stop: ``subhive down`` leaves a cluster it did not start running."""

    async def __aenter__(self) -> ExternalCluster:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()
