"""One client for "the root of this workspace": the running root over gRPC when one answers, else the engine.

Either way the caller gets the same outcome types and the same errors, so the CLI only parses, calls and
prints (docs/root-hive.md, "Where the code lives").
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, Self

from ..errors import Problem, SubhiveError
from ..semver import Version
from ..workspace import find_root
from ._client import ROOT_ADDRESS_ENV, RootClient, RootUnavailable, admin_token_of, running_root_address
from ._errors import Conflict
from ._lock_check import LockInconsistent, check_lock
from ._log import Frame
from ._model import Approval, ContractInfo, HiveStatus, ProposalOutcome
from ._state import TOKENS_DIR
from ._tls import CA_ENV

if TYPE_CHECKING:
    from ._engine import RootHive

__all__ = ["AlreadyDecided", "FrameListener", "WorkspaceRoot"]


class FrameListener(Protocol):
    """Follows what an in-process engine commits; flushed after each call (e.g. ``subhive.codegen.CodegenTrigger``,
    which the CLI hands in: this package sits below codegen)."""

    def __call__(self, frame: Frame) -> None: ...

    def flush(self) -> None: ...


@dataclass(frozen=True, slots=True)
class AlreadyDecided:
    """An approval that already had the decision asked for: nothing changed (a repeated decision is safe)."""

    approval: Approval


class WorkspaceRoot:
    """The root of the workspace at ``workspace``, wherever it runs.

        async with WorkspaceRoot(Path("shop")) as root:
            outcome = await root.propose(files, provider="backend")   # accepted or pending; a refusal raises
            root.address                                              # None: the engine ran in-process

    On entering, it looks for a running root (``address``, else ``$SUBHIVE_ROOT``, else
    ``.subhive/root/service.json``) and checks that it answers; an address given explicitly (or through the
    environment) that does not answer raises :class:`RootUnavailable`, a stale ``service.json`` does not.
    Without a running root it opens the engine on the workspace for the duration (``running_only=True``
    refuses instead). ``token`` is what a running root is called with (default: the proposing hive's token
    file for :meth:`propose`, the admin token for the rest); in-process, the workspace's own files are the
    authority. ``ca_file`` (default ``$SUBHIVE_ROOT_CA``, else the workspace's ``[grpc] ca``) verifies a root
    that serves TLS.
    """

    def __init__(
        self,
        workspace: Path,
        *,
        address: str | None = None,
        token: str | None = None,
        ca_file: Path | None = None,
        listener: Callable[[Path], FrameListener] | None = None,
        running_only: bool = False,
    ) -> None:
        self.workspace = find_root(workspace)
        self._explicit = address
        self._token = token
        self._ca_file = ca_file or root_ca_of(self.workspace)
        self._make_listener = listener
        self._running_only = running_only
        #: The running root's address once entered; None while the engine runs in-process.
        self.address: str | None = None
        self._client: RootClient | None = None
        self._engine: RootHive | None = None
        self._listener: FrameListener | None = None

    # -- entering and leaving ---------------------------------------------------------------------------------
    async def __aenter__(self) -> Self:
        self.address = await self._running_address()
        if self.address is not None:
            return self
        if self._running_only:
            raise RootUnavailable("no root hive runs for this workspace", hint="start it with `subhive root`")
        from ._engine import RootHive

        self._engine = RootHive.open(self.workspace)
        if self._make_listener is not None:
            self._listener = self._make_listener(self.workspace)
            self._engine.add_listener(self._listener)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None
        if self._engine is not None:
            self._engine.close()
            self._engine = None

    async def _running_address(self) -> str | None:
        """The address of a root that answers, None when none runs; an explicit address must answer."""
        address = self._explicit or running_root_address(self.workspace)
        if address is None:
            return None
        client = RootClient(address, None, ca_file=self._ca_file)
        if await client.healthy():
            self._client = client
            return address
        await client.close()
        if self._explicit or os.environ.get(ROOT_ADDRESS_ENV):
            raise RootUnavailable(
                f"no root hive answers at {address}",
                hint="start it with `subhive root`, or drop --root to use the workspace directly; "
                f"a root that serves TLS needs its CA file in ${CA_ENV}",
            )
        return None  # a stale service.json: the root was killed; the state on disk is what counts

    def _remote(self, token: str | None = None) -> RootClient | None:
        """A client of the running root calling with ``token`` (default: the given token, else the admin's)."""
        if self._client is None:
            return None
        return self._client.with_token(token or self._token or admin_token_of(self.workspace))

    def _local(self) -> RootHive:
        if self._engine is None:
            raise SubhiveError(
                "the workspace root is not open",
                code="root.closed",
                hint="use it as `async with WorkspaceRoot(path) as root:`",
            )
        return self._engine

    def _done(self) -> None:
        """An in-process call returned: what it committed is followed up (codegen) before the caller sees it."""
        if self._listener is not None:
            self._listener.flush()

    # -- contracts ----------------------------------------------------------------------------------------------
    async def propose(
        self, files: Mapping[str, bytes], *, provider: str, announcement_id: str | None = None
    ) -> ProposalOutcome:
        """Propose a contract version for its ``provider``: an accepted or pending outcome; a refusal raises.

        Nothing is proposed while ``contracts.lock`` disagrees with the accepted contracts
        (:class:`LockInconsistent`): accepting would rewrite it. A running root is called with the given
        token, else the provider's ``.subhive/tokens/<provider>.token``, else the admin token on its behalf.
        """
        token = self._token or self._hive_token(provider)
        client = self._remote(token)
        if client is not None:
            self._refuse_an_inconsistent_lock(_accepted_hashes(await client.contracts()))
            return await client.propose(
                dict(files), announcement_id=announcement_id, on_behalf_of=None if token else provider
            )
        engine = self._local()
        self._refuse_an_inconsistent_lock({(e.name, e.version): e.hash for e in engine.lock})
        outcome = engine.propose(provider, files, announcement_id=announcement_id)
        error = outcome.error()
        if error is not None:  # a running root answers a refusal with a status: the same error here
            raise error
        self._done()
        return outcome

    async def contracts(self, name: str | None = None) -> list[ContractInfo]:
        """Every accepted contract (``name`` only, if given) with its versions' status and consumers."""
        client = self._remote()
        if client is not None:
            return await client.contracts(name)
        infos = [c for c in self._local().contracts() if name is None or c.name == name]
        self._done()
        return infos

    async def lock_problems(self) -> list[Problem]:
        """What is wrong with ``contracts.lock`` against the accepted contracts (empty: consistent)."""
        client = self._remote()
        if client is not None:
            accepted = _accepted_hashes(await client.contracts())
        else:
            accepted = {(e.name, e.version): e.hash for e in self._local().lock}
        return check_lock(self.workspace, accepted=accepted)

    # -- approvals ----------------------------------------------------------------------------------------------
    async def approvals(self, status: str = "pending") -> list[Approval]:
        """Approvals of every kind with ``status`` (``pending``, ``approved``, ``rejected``, ``all``), oldest first."""
        client = self._remote()
        if client is not None:
            return await client.approvals(status)
        return self._local().approvals(status)

    async def approval(self, approval_id: str) -> Approval:
        """One approval by id; raises :class:`NotFound`."""
        client = self._remote()
        if client is not None:
            return await client.approval(approval_id)
        return self._local().approval(approval_id)

    async def approve(self, approval_id: str, *, note: str = "", by: str = "") -> ProposalOutcome | AlreadyDecided:
        """Approve (the admin's decision, ``by`` whom): the version is published, or a repair acknowledged.

        Approving what is already approved is :class:`AlreadyDecided`; what was rejected raises
        :class:`Conflict` (``approval.decided``).
        """
        try:
            client = self._remote()
            if client is not None:
                return await client.approve(approval_id, note=note, by=by)
            engine = self._local()
            outcome = engine.approve(approval_id, admin_token=engine.admin_token(), note=note, by=by)
            error = outcome.error()
            if error is not None:
                raise error
            self._done()
            return outcome
        except SubhiveError as exc:
            if exc.code != "approval.decided":
                raise
        return await self._already(approval_id, "approved")

    async def reject(self, approval_id: str, *, reason: str, by: str = "") -> Approval | AlreadyDecided:
        """Reject (the admin's decision, ``by`` whom, with a ``reason`` the proposer sees); nothing is published.

        Rejecting what is already rejected is :class:`AlreadyDecided`; what was approved raises
        :class:`Conflict` (``approval.decided``).
        """
        try:
            client = self._remote()
            if client is not None:
                return await client.reject(approval_id, reason=reason, by=by)
            engine = self._local()
            return engine.reject(approval_id, admin_token=engine.admin_token(), reason=reason, by=by)
        except SubhiveError as exc:
            if exc.code != "approval.decided":
                raise
        return await self._already(approval_id, "rejected")

    async def _already(self, approval_id: str, wanted: str) -> AlreadyDecided:
        """The same decision again changes nothing; the opposite one is refused.

        Repeating a decision is safe for scripts (a reply lost on the way is simply asked again); contradicting
        one is refused: an approved version is published and immutable, a rejected one is proposed anew.
        """
        a = await self.approval(approval_id)
        if a.status == wanted:
            return AlreadyDecided(a)
        hint = (
            "an approved version is published and stays immutable; propose a newer version to change it"
            if a.status == "approved"
            else "propose the version again: it gets a new approval"
        )
        when = f" on {datetime.fromtimestamp(a.decided, UTC):%Y-%m-%d %H:%M:%SZ}" if a.decided else ""
        raise Conflict(
            f"{approval_id} was already {a.status}{when}; it cannot be {wanted} now", code="approval.decided", hint=hint
        )

    # -- the tree and its events --------------------------------------------------------------------------------
    async def status(self) -> list[HiveStatus]:
        """The hive tree the root knows: the root's direct children, each with theirs."""
        client = self._remote()
        if client is not None:
            return await client.status()
        tree = self._local().status()
        self._done()
        return tree

    async def watch(self, after: int = 0) -> AsyncIterator[Frame]:
        """Frames after ``after``, then live ones, from a running root (in-process there is nothing live)."""
        client = self._remote()
        if client is None:
            raise RootUnavailable("no root hive runs for this workspace", hint="start it with `subhive root`")
        async for frame in client.watch(after):
            yield frame

    def _hive_token(self, hive: str) -> str | None:
        """The token the root wrote for workspace hive ``hive`` (``.subhive/tokens/<hive>.token``), if any."""
        try:
            return (self.workspace / TOKENS_DIR / f"{hive}.token").read_text(encoding="utf-8").strip() or None
        except OSError:
            return None  # no file: propose with the admin token on the provider's behalf

    def _refuse_an_inconsistent_lock(self, accepted: dict[tuple[str, Version], str]) -> None:
        problems = check_lock(self.workspace, accepted=accepted)
        if problems:
            raise LockInconsistent(problems)


def _accepted_hashes(infos: list[ContractInfo]) -> dict[tuple[str, Version], str]:
    return {(info.name, v.version): v.hash for info in infos for v in info.versions}


def root_ca_of(workspace: Path) -> Path | None:
    """The CA a client of ``workspace``'s root verifies it with: ``$SUBHIVE_ROOT_CA``, else ``[grpc] ca`` of its
    hive.toml (a root ``up`` serves with TLS, decision 0123); None without one, or when hive.toml does not read
    (what needs it says so)."""
    from ..workspace import open_workspace

    if os.environ.get(CA_ENV):
        return Path(os.environ[CA_ENV])
    try:
        files = open_workspace(workspace).config.grpc.files(workspace)
    except SubhiveError:
        return None
    return files[2] if files is not None else None
