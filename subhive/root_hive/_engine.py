"""The negotiation engine: registrations, requirements, proposals, approvals, all as replayed events.

    >>> root = RootHive.open(Path("shop"))                                    # doctest: +SKIP
    >>> backend = root.register_hive("backend", kind="backend")               # doctest: +SKIP
    >>> root.propose("backend", {"contract.yaml": b"...", "in.json": b"..."}).status  # doctest: +SKIP
    'accepted'

Every change of state is first an event appended (and fsynced) to ``.subhive/root/events.log``, then
applied to memory by the same function replay uses; so what a restart rebuilds is what callers were told.
The rules (docs/root-hive.md):

* a proposal is linted, its proposer must be the contract's ``provider`` (and the current one's, unless a
  human approves a change of provider), its version must be newer than the newest accepted version of its
  major line (or, for a new major, than the previous major) and honest about semver;
* a breaking change (a required major bump), a change of provider, or a version that drops an operation or
  field a consumer uses becomes a pending approval; anything else is accepted and published at once;
* a requirement no accepted version meets is announced (Contract Net); the first accepted version that
  meets it is awarded the announcement;
* a contract's provider registers where it serves the contract's gRPC service, per major line; its consumers
  and provider look it up (docs/decisions/0013-endpoint-registry.md);
* a hive reports an error class it saw repeatedly as a repair proposal: an approval of kind ``repair`` that a
  human accepts or dismisses; a repeat while it is pending adds to its count.

Not thread-safe: callers serialise calls (the gRPC service uses one worker thread or lock).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import errno
import fcntl
import functools
import hashlib
import hmac
import os
import re
import secrets
import shutil
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar

from ..compat.contract_check import ContractCheck, check_contract
from ..contract import Contract, lint_contract, load_contract
from ..errors import InputError, Location, Problem, SubhiveError
from ..semver import Bump, Version
from ..workspace import (
    MANIFEST_NAME,
    Kind,
    SubhiveManifest,
    VersionRange,
    Workspace,
    check_hive_name,
    open_workspace,
)
from ._durable import Barrier
from ._endpoints import EndpointRegistry, check_address, check_major, check_services
from ._errors import Conflict, NotFound, PermissionDenied, Unauthenticated
from ._features import check_feature_names, missing_features
from ._lock import Lock, LockEntry, contract_hash, fsync_directory
from ._lock_check import LockGuard, LockInconsistent
from ._log import EventLog, Frame
from ._materialise import Materialiser, decode_files, encode_files, write_tree
from ._model import (
    Approval,
    ContractInfo,
    Endpoint,
    HiveStatus,
    ProposalOutcome,
    Registration,
    RequirementOutcome,
    VersionInfo,
)
from ._repairs import RepairKey, check_report, repair_approval, repair_key

__all__ = ["Frame", "RootHive"]

ROOT = "root"
STATE_DIR = Path(".subhive") / "root"
#: Workspace hives' tokens, one file each (mode 0600), written when the root registers them at open.
TOKENS_DIR = Path(".subhive") / "tokens"
#: Held with flock(2) by the one engine that writes the state; it names that engine's pid.
WRITER_LOCK = "engine.lock"
#: A proposal is a contract directory, not a repository: generous for schemas, small for a request.
MAX_FILES = 256
MAX_BYTES = 8 * 1024 * 1024
#: Accepted files up to this size go into the log record and are written to contracts/ after the
#: acknowledgement; larger ones are published before it (staging, barrier, rename), as the log stays small.
LOGGED_FILES_MAX = 256 * 1024
#: Bytes of accepted directories the background writer may lag behind by before a batch waits for it.
UNWRITTEN_MAX = 64 * 1024 * 1024
_CONTRACT_NAME = re.compile(r"[a-z][a-z0-9_-]{0,62}\Z")
#: A repair's count is a uint32 on the wire; repeats stop adding up there rather than wrap.
_COUNT_CAP = 2**31 - 1

Record = tuple[str, dict[str, Any], dict[str, Any]]
F = TypeVar("F", bound=Callable[..., Any])


def _batched(method: F) -> F:
    """Run a public method that changes state inside :meth:`RootHive.batch` (joining an open batch)."""

    @functools.wraps(method)
    def wrapper(self: RootHive, *args: Any, **kwargs: Any) -> Any:
        with self.batch():
            return method(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class _Hive:
    name: str
    kind: str
    parent: str
    token_sha256: str
    #: Registered from a manifest under subhives/ (not through RegisterHive): forgotten when it is removed.
    from_manifest: bool = False


@dataclass(frozen=True, slots=True)
class _Requirement:
    hive: str
    contract: str
    versions: str
    range: VersionRange
    operations: tuple[str, ...]
    fields: tuple[str, ...]


@dataclass(slots=True)
class _Proposal:
    """What every verdict on one proposal repeats."""

    hive: str
    id: str
    digest: str
    announcement_id: str | None
    name: str = ""
    version: Version = field(default_factory=lambda: Version(0, 0, 0))
    #: The proposed files when they were linted in memory and are not on disk yet (see RootHive._lint).
    files: dict[str, bytes] | None = None


@dataclass(frozen=True, slots=True)
class _Announcement:
    id: str
    hive: str
    contract: str
    versions: str
    status: str  # "open" | "awarded" | "withdrawn"


def _line(version: Version) -> tuple[int, ...]:
    # Below 1.0.0 each minor is its own line (docs/decisions/0003-semver-below-1.md).
    return (version.major,) if version.major else (0, version.minor)


def _sha(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class RootHive:
    """The root's state and rules. Open with :meth:`open`; close with :meth:`close` (or ``with``)."""

    def __init__(self, workspace_root: Path) -> None:
        self.workspace_root = workspace_root
        self.state_dir = workspace_root / STATE_DIR
        self._hives: dict[str, _Hive] = {}
        self._tokens: dict[str, str] = {}
        self._requirements: dict[tuple[str, str], _Requirement] = {}
        self._announcements: dict[str, _Announcement] = {}
        # By contract name, in declaration order: a proposal looks at its own contract's, not at all of them.
        self._requirement_keys: dict[str, dict[tuple[str, str], None]] = {}
        self._announcement_ids: dict[str, list[str]] = {}
        self._approvals: dict[str, Approval] = {}
        self._lock = Lock()
        self._tampered: dict[tuple[str, Version], Problem] = {}
        #: Accepted versions as loaded (by name, version and hash): the base every proposal is checked against.
        self._contracts: dict[tuple[str, Version, str], Contract] = {}
        self._proposals = 0
        self._subscribers: list[tuple[asyncio.AbstractEventLoop, asyncio.Queue[Frame]]] = []
        self._listeners: list[Callable[[Frame], None]] = []
        self._log: EventLog | None = None
        self._admin_sha = ""
        # Group commit (see batch()): what the open batch must make durable, then announce, then clean.
        self._batch_depth = 0
        self._barrier = Barrier(workspace_root)
        self._unannounced: list[Frame] = []
        self._lock_dirty = False
        self._after_commit: list[Callable[[], None]] = []
        self._writer_fd: int | None = None
        #: Directories whose files are in durable log records, written after the batch that holds them.
        #: Tells a hand-edited hash in contracts.lock: proposals wait and the lock is not rewritten over it.
        self._lock_guard = LockGuard(workspace_root)
        self._materialiser = Materialiser(workspace_root, guard=self._lock_guard)
        self._to_write: list[tuple[Path, dict[str, bytes]]] = []
        #: Replayed acceptances whose files the log holds (for open to write a lost directory again).
        self._logged: dict[tuple[str, Version], dict[str, str]] = {}
        self._endpoints = EndpointRegistry()
        #: Pending repair approvals by what they are about: a repeat adds to the count instead of a new one.
        self._open_repairs: dict[RepairKey, str] = {}
        self._repairs = 0
        #: The manifests' bytes as last registered: views re-register when they changed (sync_manifests).
        self._manifests_seen = b""

    # ----------------------------------------------------------------------------------------- lifecycle
    @classmethod
    def open(cls, workspace_root: Path | str) -> RootHive:
        """Open the root of the workspace at ``workspace_root``, replaying its event log.

        >>> root = RootHive.open(Path("shop"))  # doctest: +SKIP

        Raises :class:`InputError` if it is not a workspace (``workspace.not_found``), or if the log or the
        lock is damaged (``log.corrupt``, ``lock.invalid``). A torn last record (a crash mid-append) is
        dropped and counted in :attr:`recovered_records`.

        Only one engine may hold a workspace: the open engine keeps an exclusive ``flock`` on
        ``.subhive/root/engine.lock`` (which names its pid) until :meth:`close` or its process ends; a second
        one raises :class:`Conflict` (``root.locked``) naming that pid. Every valid sub-hive manifest not
        registered yet is registered (with its kind and parent), its token written to
        ``.subhive/tokens/<hive>.token`` (mode 0600).
        """
        workspace = open_workspace(workspace_root)
        root = cls(workspace.root)
        root.state_dir.mkdir(parents=True, exist_ok=True)
        root._take_writer_lock()
        try:
            root._load(workspace)
        except BaseException:
            root.close()
            raise
        return root

    def _load(self, workspace: Workspace) -> None:
        root = self
        root._admin_sha = _sha(root._admin_token_file())
        base = Lock.load(workspace.root)
        root._lock = Lock({(e.name, e.version): e for e in base})
        root._log = EventLog.open(root.state_dir / "events.log")
        for frame in root._log.frames:
            root._apply(frame, replaying=True)
        root._restore_logged_directories()
        root._tampered = {(Path(p.location.file or "").parent.name, Version.parse(Path(p.location.file or "").name)):
                          p for p in root._lock.verify(workspace.root)}
        for name in root._lock.names():
            root._refresh_consumers(name)
        # A hash in the file that the log contradicts was edited by hand: leave the file as it is (status and
        # propose report it) rather than quietly rewriting it; otherwise the file is derived state.
        edited = any((e := root._lock.get(b.name, b.version)) is not None and e.hash != b.hash for b in base)
        if root._lock != base and not edited:
            root._lock.save(workspace.root)
            root._lock_guard.wrote()
        root._clean_leftovers()
        root._manifests_seen = root._manifests_digest()
        root._register_workspace_hives(workspace)

    def _take_writer_lock(self) -> None:
        """One engine per workspace: a second one would interleave its records with ours and corrupt the log."""
        path = self.state_dir / WRITER_LOCK
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            raise Conflict(f"another root engine (pid {holder}) already holds this workspace's state",
                           code="root.locked", location=Location(file=str(path)),
                           hint="talk to the running root (subhive root prints its address) or stop it first; "
                                "the lock is released when that process exits, even if it is killed") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        self._writer_fd = fd

    def _register_workspace_hives(self, workspace: Workspace) -> None:
        """Register every valid sub-hive manifest not registered yet, parents first; write each new token to
        ``.subhive/tokens/<hive>.token`` (0600) so the hive (and ``subhive contract propose``) can use it."""
        manifests = dict(workspace.hives().hives)
        tokens_dir = self.workspace_root / TOKENS_DIR
        with self.batch():
            progress = True
            while progress:
                progress = False
                for name, manifest in sorted(manifests.items()):
                    if name in self._hives:
                        continue
                    if manifest.parent != ROOT and manifest.parent not in self._hives:
                        continue  # its parent first (next round), or never if the parent's manifest is broken
                    token = secrets.token_urlsafe(32)
                    self._make_dirs(tokens_dir)
                    os.chmod(tokens_dir, 0o700)
                    _write_secret(tokens_dir / f"{name}.token", token)
                    self._barrier.add_tree(tokens_dir)  # the token on disk before the record that makes it valid
                    self.register_hive(name, kind=manifest.kind.value, parent=manifest.parent, _token=token,
                                       _manifest=True)
                    progress = True
            self._declare_manifest_needs(manifests)
            self._forget_removed_hives()

    def sync_manifests(self) -> bool:
        """Register the manifests as they are now, if any changed since the last look: new hives, changed
        ranges, and no more requirement (nor hive) whose line (or manifest) is gone. True if it looked.

        The views (:meth:`status`, :meth:`contracts`) call it first, so the root reflects the workspace of now
        and not of when it opened; a manifest that does not parse changes nothing until it is fixed.

        >>> root.sync_manifests()  # doctest: +SKIP
        True
        """
        digest = self._manifests_digest()
        if digest == self._manifests_seen or self._log is None:
            return False
        try:
            workspace = open_workspace(self.workspace_root)
        except SubhiveError:  # hive.toml is being edited: keep what is registered
            return False
        self._manifests_seen = digest
        self._register_workspace_hives(workspace)
        return True

    def _manifests_digest(self) -> bytes:
        digest = hashlib.sha256()
        hives_dir = self.workspace_root / "subhives"
        for path in sorted(hives_dir.glob(f"*/{MANIFEST_NAME}")) if hives_dir.is_dir() else ():
            with contextlib.suppress(OSError):
                data = path.read_bytes()
                digest.update(f"{path.parent.name}\0{len(data)}\0".encode() + data)
        return digest.digest()

    def _forget_removed_hives(self) -> None:
        """A hive registered from a manifest whose directory is gone leaves the tree, with its requirements
        (so an old major it pinned can retire); its children first. Hives registered through RegisterHive stay."""
        present = self._workspace_hive_names()
        tokens_dir = self.workspace_root / TOKENS_DIR
        gone = {name for name, hive in self._hives.items() if name not in present
                and (hive.from_manifest or (tokens_dir / f"{name}.token").exists())}
        while gone:
            leaves = sorted(n for n in gone if not any(h.parent == n for h in self._hives.values()))
            if not leaves:
                return  # a child still registered: it keeps its parent
            for name in leaves:
                records: list[Record] = [("requirement_withdrawn", {"hive": name, "contract": contract}, {})
                                         for (who, contract) in sorted(self._requirements) if who == name]
                self._commit([*records, ("hive_removed", {"name": name}, {})])
                (tokens_dir / f"{name}.token").unlink(missing_ok=True)
                gone.discard(name)

    def _declare_manifest_needs(self, manifests: Mapping[str, SubhiveManifest]) -> None:
        """What a manifest consumes becomes the hive's requirement (announced when nothing meets it yet), so
        the root negotiates what the hives declared; unchanged needs are not declared again."""
        for name, manifest in sorted(manifests.items()):
            if name not in self._hives:
                continue
            for need in manifest.consumes:
                known = self._requirements.get((name, need.contract))
                if known is None or str(known.range) != str(need.versions):
                    self.declare_requirement(name, need.contract, str(need.versions))
            # A line removed from the manifest: the hive no longer needs it, whatever it declared before.
            wanted = {need.contract for need in manifest.consumes}
            stale = sorted(c for (who, c) in self._requirements if who == name and c not in wanted)
            if stale:
                self._commit([("requirement_withdrawn", {"hive": name, "contract": c}, {}) for c in stale])

    @property
    def recovered_records(self) -> int:
        """Torn records dropped from the end of the log when it was opened (a crash mid-append)."""
        return self._log_.dropped

    @property
    def last_seq(self) -> int:
        """The newest frame's ``seq`` (0 for an empty log): a watcher starting now resumes from it."""
        return self._log_.last_seq

    def write_files_in_background(self) -> None:
        """Write accepted directories and the lock on a thread of their own, after acknowledgements.

        The service calls this: a call is then answered after its log fsync alone, and its directory appears
        while the next batch runs (each batch's flush first waits for the previous batch's files).
        Without it, they are written at the end of each batch, before it returns.
        """
        self._materialiser.start()

    def settle(self) -> None:
        """Wait until every accepted directory and the lock are written (the log already holds them)."""
        self._materialiser.wait()

    def close(self) -> None:
        """Close the log and release the workspace. Everything acknowledged is already on disk."""
        self._materialiser.close()
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._writer_fd is not None:
            os.close(self._writer_fd)  # releases the flock
            self._writer_fd = None

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Group commit: calls inside share one barrier for their files and one fsync of the log.

        >>> with root.batch():                                  # doctest: +SKIP
        ...     outcomes = [root.propose(h, files) for h, files in queue]
        >>> # only now are the outcomes durable: acknowledge them to their callers

        Each call still sees the state left by the calls before it. At the end of the outermost batch the
        files the calls wrote (published contracts, pending approvals) are made durable, then the log records
        are written and fsynced, then watchers get the frames and the lock (derived state) is rewritten once.
        A result obtained inside a batch must not be acknowledged before the batch has ended without error:
        if the flush fails, the engine closes itself (memory is ahead of disk) and must be opened again.
        Every public method that changes state runs in a batch of its own when called outside one.
        """
        self._batch_depth += 1
        try:
            yield
        finally:
            self._batch_depth -= 1
            if self._batch_depth == 0:
                self._flush()

    def _flush(self) -> None:
        log = self._log
        if log is None:
            return
        if log.staged or not self._barrier.empty:
            try:
                self._barrier.flush()  # files first: a durable record never names files that are not
                log.sync()
            except BaseException:
                self._fail()
                raise
        # Derived state, after the records it comes from: handed to the writer (which may lag behind by at
        # most UNWRITTEN_MAX bytes, bounding memory), and the lock once per batch.
        self._materialiser.wait(UNWRITTEN_MAX)
        jobs, self._to_write = self._to_write, []
        lock = self._lock.entries() if self._lock_dirty else None
        self._lock_dirty = False
        if jobs or lock is not None:
            self._materialiser.submit(jobs, lock)
        frames, self._unannounced = self._unannounced, []
        for loop, queue in list(self._subscribers):
            for frame in frames:
                with contextlib.suppress(RuntimeError):  # the watcher's loop has closed
                    loop.call_soon_threadsafe(queue.put_nowait, frame)
        for callback in list(self._listeners):
            for frame in frames:
                callback(frame)
        after, self._after_commit = self._after_commit, []
        for cleanup in after:
            cleanup()

    def _fail(self) -> None:
        """A flush failed: state in memory holds records the disk may not; refuse further calls."""
        self._unannounced, self._after_commit, self._lock_dirty = [], [], False
        self._to_write = []
        if self._log is not None:
            with contextlib.suppress(OSError):
                self._log.close()
            self._log = None

    def __enter__(self) -> RootHive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def _log_(self) -> EventLog:
        if self._log is None:
            raise SubhiveError("the root hive is closed", code="root.closed", hint="open it again with RootHive.open")
        return self._log

    # ------------------------------------------------------------------------------------ authentication
    def admin_token(self) -> str:
        """The human's token (``.subhive/root/admin.token``, mode 0600): approvals need it."""
        return self._admin_token_file()

    def is_admin(self, token: str) -> bool:
        return isinstance(token, str) and hmac.compare_digest(_sha(token), self._admin_sha)

    def authenticate(self, token: str) -> str:
        """The name of the hive holding ``token``; raises :class:`Unauthenticated`.

        >>> root.authenticate(root.register_hive("db").token)  # doctest: +SKIP
        'db'
        """
        name = self._tokens.get(_sha(token)) if isinstance(token, str) and token else None
        if name is None:
            raise Unauthenticated("unknown or rotated token", hint="register the hive (or rotate its token) and "
                                  "use the token the root returned")
        return name

    def _admin_token_file(self) -> str:
        path = self.state_dir / "admin.token"
        if not path.exists():
            token = secrets.token_urlsafe(32)
            with contextlib.suppress(FileExistsError):
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                try:
                    os.write(fd, (token + "\n").encode())
                    os.fsync(fd)
                finally:
                    os.close(fd)
                fsync_directory(path.parent)
        return path.read_text(encoding="utf-8").strip()

    def _require_admin(self, token: str) -> None:
        if self.is_admin(token):
            return
        if isinstance(token, str) and _sha(token) in self._tokens:
            raise PermissionDenied(f"hive {self._tokens[_sha(token)]!r} may not decide approvals: approval is for "
                                   "humans", code="auth.not_admin",
                                   hint="a human approves with the admin token (.subhive/root/admin.token)")
        raise Unauthenticated("approvals need the admin token", code="auth.unauthenticated",
                              hint="use the token in .subhive/root/admin.token")

    # -------------------------------------------------------------------------------------- registration
    @_batched
    def register_hive(self, name: str, *, kind: str = "custom", parent: str = ROOT,
                      rotate: bool = False, _token: str | None = None, _manifest: bool = False) -> Registration:
        """Register ``name`` and return its token (shown once). ``rotate=True`` replaces an existing token.

        >>> root.register_hive("db", kind="db").name  # doctest: +SKIP
        'db'
        """
        check_hive_name(name)
        if kind not in {k.value for k in Kind}:
            raise InputError(f"{kind!r} is not a hive kind", code="hive.kind",
                             hint="one of: " + ", ".join(k.value for k in Kind))
        if parent != ROOT and parent not in self._hives:
            raise NotFound(f"parent hive {parent!r} is not registered", code="hive.parent_unknown",
                           hint=f"register {parent!r} first, or use parent {ROOT!r}")
        if name in self._hives and not rotate:
            raise Conflict(f"hive {name!r} is already registered", code="hive.exists",
                           hint="register it with rotate=True to issue a new token; the old one stops working")
        if parent == name or parent in self._descendants(name):
            raise InputError(f"hive {name!r} cannot have {parent!r} as parent: the tree would have a cycle",
                             code="hive.parent_cycle")
        token = _token or secrets.token_urlsafe(32)
        data: dict[str, Any] = {"name": name, "kind": kind, "parent": parent, "rotated": name in self._hives}
        if _manifest:
            data["manifest"] = True
        self._commit([("hive_registered", data, {"token_sha256": _sha(token)})])
        return Registration(name, token)

    def hives(self) -> list[str]:
        return sorted(self._hives)

    def _descendants(self, name: str) -> set[str]:
        found: set[str] = set()
        frontier = [name]
        while frontier:
            current = frontier.pop()
            for hive in self._hives.values():
                if hive.parent == current and hive.name not in found:
                    found.add(hive.name)
                    frontier.append(hive.name)
        return found

    def _known_hive(self, hive: str) -> None:
        if hive not in self._hives and hive in self._workspace_hive_names():
            # Made with `subhive new` after this root opened: registered now, as it would have been at open.
            self._register_workspace_hives(open_workspace(self.workspace_root))
        if hive not in self._hives:
            raise NotFound(f"hive {hive!r} is not registered", code="hive.unknown",
                           hint="create it with `subhive new` (the root registers the workspace's sub-hives), "
                                "or register it through the RegisterHive call with the admin token")

    def _workspace_hive_names(self) -> set[str]:
        """The names of ``subhives/<name>/subhive.toml`` on disk now (cheap: no manifest is parsed)."""
        hives_dir = open_workspace(self.workspace_root).hives_dir
        return {p.parent.name for p in hives_dir.glob(f"*/{MANIFEST_NAME}")} if hives_dir.is_dir() else set()

    # -------------------------------------------------------------------------------------- requirements
    @_batched
    def declare_requirement(self, hive: str, contract: str, versions: str, *, operations: Sequence[str] = (),
                            fields: Sequence[str] = ()) -> RequirementOutcome:
        """Record what ``hive`` needs; announce an open need (Contract Net) when no accepted version meets it.

        >>> root.declare_requirement("web", "orders", "^1.2", operations=["place_order"])  # doctest: +SKIP
        RequirementOutcome(satisfied_by=Version(1, 2, 0), announcement_id=None)
        """
        self._known_hive(hive)
        if not isinstance(contract, str) or not _CONTRACT_NAME.match(contract):
            raise InputError(f"{contract!r} is not a contract name", code="requirement.contract",
                             hint="[a-z][a-z0-9_-]*, at most 63 characters, as in contract.yaml")
        try:
            parsed = VersionRange.parse(versions)
        except ValueError as exc:
            raise InputError(str(exc), code="requirement.range", hint="e.g. ^1.2, ~1.2.3 or >=1.0.0,<2.0.0") from None
        operations, fields = tuple(operations), tuple(fields)
        check_feature_names(operations, fields)
        requirement = _Requirement(hive, contract, versions, parsed, operations, fields)
        satisfied = self._resolve(requirement)
        announcement = None if satisfied else f"need-{len(self._announcements) + 1}"
        records: list[Record] = [("requirement_declared", {
            "hive": hive, "contract": contract, "versions": versions, "operations": list(operations),
            "fields": list(fields), "satisfied_by": str(satisfied) if satisfied else None,
            "announcement_id": announcement}, {})]
        if announcement:
            records.append(("need_announced", {"announcement_id": announcement, "hive": hive, "contract": contract,
                                               "versions": versions, "operations": list(operations),
                                               "fields": list(fields)}, {}))
        self._commit(records)
        return RequirementOutcome(satisfied, announcement)

    def announcements(self, status: str | None = "open") -> list[dict[str, Any]]:
        """Announced needs (Contract Net calls for proposals), ``status`` ``open``/``awarded``/``withdrawn``."""
        return [{"id": a.id, "hive": a.hive, "contract": a.contract, "versions": a.versions, "status": a.status}
                for a in self._announcements.values() if status is None or a.status == status]

    def _resolve(self, req: _Requirement, extra: tuple[Version, Contract] | None = None) -> Version | None:
        """The best intact accepted version meeting ``req`` (``extra`` counts as accepted, for what-ifs)."""
        candidates = [e.version for e in self._lock.versions(req.contract)
                      if (req.contract, e.version) not in self._tampered and req.range.contains(e.version)]
        if extra is not None and req.range.contains(extra[0]):
            candidates.append(extra[0])
        for version in sorted(candidates, reverse=True):
            if not (req.operations or req.fields):
                return version
            contract = extra[1] if extra is not None and version == extra[0] else self._contract(req.contract, version)
            if contract is not None and not missing_features(contract, req.operations, req.fields):
                return version
        return None

    def _contract(self, name: str, version: Version) -> Contract | None:
        entry = self._lock.get(name, version)
        key = (name, version, entry.hash if entry is not None else "")
        if key not in self._contracts:
            self._materialiser.wait()  # its directory may still be on its way to disk
            directory = self.workspace_root / "contracts" / name / str(version)
            if entry is not None and (name, version) not in self._tampered:
                # Read from disk only now, maybe long after open: an edit since then is tampering too.
                for problem in Lock({(name, version): entry}).verify(self.workspace_root):
                    self._tampered[(name, version)] = problem
            if (name, version) in self._tampered:
                return None
            try:
                self._contracts[key] = load_contract(directory)
            except SubhiveError:
                return None
        return self._contracts[key]

    # ----------------------------------------------------------------------------------------- proposals
    @_batched
    def propose(self, hive: str, files: Mapping[str, bytes], *,
                announcement_id: str | None = None) -> ProposalOutcome:
        """Judge a contract version proposed by ``hive``; see the module docstring for the rules.

        >>> outcome = root.propose("backend", read_dir("contracts/orders/1.2.0"))  # doctest: +SKIP
        >>> outcome.status, outcome.code  # doctest: +SKIP
        ('accepted', 'proposal.accepted')

        Returns an outcome for every verdict (``rejected`` ones carry :meth:`ProposalOutcome.error`); raises
        :class:`NotFound` (unknown hive or announcement), :class:`InputError` (not a contract directory at
        all) and :class:`PermissionDenied` (a hive proposing a contract it does not provide).
        """
        self._known_hive(hive)
        edited = self._lock_guard.edited(self._accepted_hash)
        if edited:  # what would be accepted could not be written down without rewriting the edited hash
            raise LockInconsistent(edited)
        if self._lock_guard.held_back:  # fixed since a rewrite was held back: write what it missed
            self._lock_guard.held_back, self._lock_dirty = False, True
        clean = _clean_files(files)
        if announcement_id is not None and announcement_id not in self._announcements:
            raise NotFound(f"no announcement {announcement_id!r}", code="announcement.unknown")
        self._proposals += 1
        pid = f"p-{self._proposals}"
        staging = self.state_dir / "staging" / pid
        try:
            return self._judge(_Proposal(hive, pid, contract_hash(clean), announcement_id), staging, clean)
        finally:
            shutil.rmtree(staging, ignore_errors=True)  # whatever was not moved to contracts/ or pending/

    def _accepted_hash(self, name: str, version: Version) -> str | None:
        entry = self._lock.get(name, version)
        return None if entry is None else entry.hash

    def _lint(self, p: _Proposal, staging: Path, files: dict[str, bytes]) -> tuple[Contract | None,
                                                                                  tuple[Problem, ...]]:
        """Lint the proposal, in memory unless it has a ``.proto`` (protoc and the gRPC check read files).

        In memory, the files stand for their final directory ``contracts/<name>/<version>`` (name and version
        read off the manifest's text), so an accepted contract is the very object later proposals are
        checked against. If that guess is wrong (a manifest only YAML reads right), they stand for the
        staging directory instead, as on disk: the directory's name must never decide a verdict.
        """
        if any(name.lower().endswith(".proto") for name in files):
            write_tree(staging, files)
            contract, problems = lint_contract(staging)
            return contract, tuple(_relocate(x, staging) for x in problems)
        p.files = files
        name, version = _peek(files)
        directory = self.workspace_root / "contracts" / name / str(version)
        if not _CONTRACT_NAME.match(name):
            directory = staging
        contract, problems = lint_contract(directory, files=files)
        misnamed = contract is not None and (contract.name, contract.version) != (name, version)
        if directory != staging and (misnamed or any(x.code == "manifest.version_mismatch" for x in problems)):
            directory = staging
            contract, problems = lint_contract(directory, files=files)
        return contract, tuple(_relocate(x, directory) for x in problems)

    def _judge(self, p: _Proposal, staging: Path, files: dict[str, bytes]) -> ProposalOutcome:
        hive, announcement_id = p.hive, p.announcement_id
        contract, problems = self._lint(p, staging, files)
        if contract is None:
            p.name, p.version = _peek(files)
            return self._verdict(p, status="rejected",
                                 code="contract.invalid", problems=problems,
                                 message=f"the contract does not lint: {len(problems)} problem(s), first: "
                                         f"{problems[0].message}")
        name, version = p.name, p.version = contract.name, contract.version
        if contract.provider != hive:
            raise PermissionDenied(f"hive {hive!r} cannot propose {name} {version}: its contract.yaml names "
                                   f"provider {contract.provider!r}", code="auth.not_provider",
                                   location=Location(file="contract.yaml", pointer="/provider"),
                                   hint="a hive proposes only the contracts it provides")
        if announcement_id is not None and self._announcements[announcement_id].contract != name:
            raise InputError(f"announcement {announcement_id} asks for contract "
                             f"{self._announcements[announcement_id].contract!r}, not {name!r}",
                             code="announcement.mismatch")
        early = self._settled(p)
        return early if early is not None else self._against_accepted(p, contract)

    def _against_accepted(self, p: _Proposal, contract: Contract) -> ProposalOutcome:
        """Check ``contract`` against the accepted version its semver is measured from, then decide."""
        name, version = contract.name, contract.version
        entries = self._lock.versions(name)
        same_line = [e for e in entries if _line(e.version) == _line(version)]
        if not same_line and any(e.version > version for e in entries):
            newest = entries[-1].version
            return self._verdict(p, status="rejected",
                                 code="proposal.version_order",
                                 message=f"{name} {version} would start a major line below the newest accepted "
                                         f"version {newest}: only newer major lines can be added")
        base_entry = same_line[-1] if same_line else (entries[-1] if entries else None)
        check: ContractCheck | None = None
        if base_entry is not None:
            base = self._contract(name, base_entry.version)  # first: loading it is what detects a late edit
            tampered = self._tampered.get((name, base_entry.version))
            if tampered is not None:
                return self._verdict(p, status="rejected",
                                     code="lock.tampered", problems=(tampered,),
                                     message=f"cannot check against {name} {base_entry.version}: {tampered.message}")
            if base is None:
                return self._verdict(p, status="rejected",
                                     code="lock.tampered", message=f"the accepted {name} {base_entry.version} no "
                                     "longer loads; restore it from version control")
            check = check_contract(contract, base)
            if not check.semver_ok:
                return self._dishonest(p, check)
        return self._decide(p, contract, check, entries)

    def _settled(self, p: _Proposal) -> ProposalOutcome | None:
        """The verdict for a version the root already knows (accepted or pending), else None."""
        name, version, digest = p.name, p.version, p.digest
        accepted = self._lock.get(name, version)
        if accepted is not None:
            if accepted.hash == digest:
                return self._verdict(p, status="accepted",
                                     code="proposal.unchanged", message=f"{name} {version} is already accepted "
                                     "with this content", quiet=True)
            return self._verdict(p, status="rejected",
                                 code="proposal.immutable",
                                 message=f"{name} {version} is already accepted with other content "
                                         f"({accepted.hash}); accepted versions are immutable: propose a new version")
        for approval in self._approvals.values():
            if approval.status == "pending" and approval.contract == name and approval.version == version:
                if approval.hash == digest:
                    return self._verdict(p, status="pending",
                                         code=approval.reason, check=approval.check, quiet=True,
                                         message=f"{name} {version} already waits for approval as {approval.id}")
                return self._verdict(p, status="rejected",
                                     code="proposal.pending_exists",
                                     message=f"{name} {version} already waits for approval ({approval.id}) with "
                                             "other content: have it rejected first, or propose another version")
        return None

    def _dishonest(self, p: _Proposal, check: ContractCheck) -> ProposalOutcome:
        if check.new_version <= check.old_version:
            code = "proposal.version_order"
            message = (f"{p.name} {p.version} is not newer than the accepted {check.old_version}; "
                       f"propose {check.suggested_version()} or later")
        else:
            code = "proposal.semver"
            offending = "; ".join(f"{part}: {c.message} [{c.code}] at {c.path or '/'}" for part, c in check.offending())
            message = (f"{p.name} {p.version} is a {check.actual_bump} bump from {check.old_version} "
                       f"but the changes need a {check.required_bump} bump (propose {check.suggested_version()}): "
                       f"{offending}")
        return self._verdict(p, status="rejected", code=code, message=message, check=check.to_dict())

    def _decide(self, p: _Proposal, contract: Contract, check: ContractCheck | None,
                entries: list[LockEntry]) -> ProposalOutcome:
        name, version, hive = contract.name, contract.version, p.hive
        check_dict = check.to_dict() if check is not None else None
        reason, message = "", ""
        unsatisfied = self._left_unsatisfied(contract)
        if entries and entries[-1].provider != hive:
            reason = "proposal.pending_provider"
            message = (f"{name} is provided by {entries[-1].provider!r}; {hive!r} taking it over needs a human's "
                       "approval")
        elif check is not None and check.required_bump is Bump.MAJOR:
            reason = "proposal.pending_breaking"
            changes = "; ".join(f"{part}: {c.message} [{c.code}]" for part, c in check.breaking)
            message = f"{name} {version} breaks {check.old_version} and waits for approval: {changes}"
        elif unsatisfied:
            reason = "proposal.pending_consumers"
            message = f"{name} {version} drops what consumers use: " + "; ".join(unsatisfied)
        if reason:
            return self._hold(p, contract, check_dict, reason=reason, message=message)
        return self._accept(p, contract, check_dict, records_before=None)

    def _left_unsatisfied(self, contract: Contract) -> list[str]:
        """Consumers satisfied today whose range takes ``contract`` but who use something it lacks."""
        out: list[str] = []
        newest = {e.version for e in self._lock.versions(contract.name)}
        for req in self._requirements_of(contract.name):
            if not req.range.contains(contract.version):
                continue
            if any(v > contract.version and req.range.contains(v) for v in newest):
                continue  # a newer accepted version keeps serving it
            if not (req.operations or req.fields) or self._resolve(req) is None:
                continue
            missing = missing_features(contract, req.operations, req.fields)
            if missing:
                out.append(f"{req.hive} ({req.versions}) uses {', '.join(missing)}")
        return out

    def _hold(self, p: _Proposal, contract: Contract, check: dict[str, Any] | None, *, reason: str,
              message: str) -> ProposalOutcome:
        self._place(p, contract, self.state_dir / "pending" / p.id)
        approval = {"approval_id": p.id, "contract": p.name, "version": str(p.version), "proposer": p.hive,
                    "reason": reason, "message": message, "hash": p.digest, "check": check,
                    "announcement_id": p.announcement_id}
        return self._verdict(p, status="pending",
                             code=reason, message=message, check=check,
                             extra=[("pending_approval", approval, {})])

    def _accept(self, p: _Proposal, contract: Contract, check: dict[str, Any] | None,
                records_before: list[Record] | None) -> ProposalOutcome:
        name, version, hive, pid, digest = contract.name, contract.version, p.hive, p.id, p.digest
        consumers = sorted(r.hive for r in self._requirements_of(name)
                           if self._resolve(r, (version, contract)) == version)
        awarded = sorted(a.id for a in (self._announcements[i] for i in self._announcement_ids.get(name, ()))
                         if a.status == "open"
                         and (a.hive, name) in self._requirements
                         and self._resolve(self._requirements[(a.hive, name)], (version, contract)) == version)
        target = self.workspace_root / "contracts" / name / str(version)
        logged = p.files is not None and records_before is None and sum(map(len, p.files.values())) <= LOGGED_FILES_MAX
        conflict = self._unlocked_conflict(p, target) if logged else self._publish(p, contract)
        if conflict is not None:
            return self._verdict(p, status="rejected",
                                 code="proposal.exists_unlocked", message=conflict)
        if contract.directory == self.workspace_root / "contracts" / name / str(version):
            # Linted in memory as the published directory: no need to read it back to check the next version.
            self._contracts[(name, version, digest)] = contract
        # The files ride in the record (private: replay only), so the acknowledgement waits for one log fsync;
        # the directory is written after the batch (see _flush), and again at open if it was lost.
        private = {"files": encode_files(p.files)} if logged and p.files is not None else {}
        ready: list[Record] = [("contract_ready", {"contract": name, "version": str(version), "hash": digest,
                                                   "provider": hive, "proposal_id": pid, "consumers": consumers},
                                private)]
        if logged and p.files is not None and not target.exists():
            self._to_write.append((target, p.files))
        ready += [("need_awarded", {"announcement_id": a, "proposal_id": pid, "contract": name,
                                    "version": str(version), "provider": hive,
                                    "consumer": self._announcements[a].hive}, {}) for a in awarded]
        message = f"{name} {version} accepted" + (f"; awarded {', '.join(awarded)}" if awarded else "")
        if records_before is not None:  # an approval: no proposal_received/verdict frames of its own
            self._commit(records_before + ready)
            self._after_accept(name)
            return ProposalOutcome(pid, name, version, "accepted", check, (), message, "proposal.accepted", digest,
                                   tuple(awarded))
        outcome = self._verdict(p, status="accepted",
                                code="proposal.accepted", message=message, check=check, extra=ready,
                                awarded=tuple(awarded))
        self._after_accept(name)
        return outcome

    def _after_accept(self, name: str) -> None:
        self._refresh_consumers(name)
        self._lock_dirty = True

    def _publish(self, p: _Proposal, contract: Contract) -> str | None:
        """Put the contract's files at ``contracts/<name>/<version>/`` atomically; a message if another tree is
        there."""
        target = self.workspace_root / "contracts" / contract.name / str(contract.version)
        conflict = self._unlocked_conflict(p, target)
        if conflict is None and not target.exists():
            self._place(p, contract, target)
        return conflict

    def _unlocked_conflict(self, p: _Proposal, target: Path) -> str | None:
        """A message if ``target`` (not in the lock) exists with other files than the proposal's."""
        if not target.exists():
            return None
        if target.is_dir() and contract_hash(target) == p.digest:
            return None  # published before a crash kept the log from saying so, or placed by hand: same bytes
        return (f"contracts/{p.name}/{p.version} exists but is not in the lock and holds other files; move it away "
                "or propose another version")

    def _place(self, p: _Proposal, contract: Contract, target: Path) -> None:
        """Put the proposal's files at ``target``: files linted in memory are written (once, to staging, then
        renamed, so ``target`` appears whole or not at all); a tree on disk is renamed."""
        if p.files is None:
            self._move(contract.directory, target)
            return
        staging = self.state_dir / "staging" / p.id
        write_tree(staging, p.files)
        self._move(staging, target)

    def _move(self, source: Path, target: Path) -> None:
        """Rename the tree ``source`` (staging or pending, the root's own) to ``target``, durable at the flush.

        A rename publishes all files at once and writes them only once (they were written for linting).
        """
        self._make_dirs(target.parent)
        try:
            os.rename(source, target)
        except OSError as exc:
            if exc.errno != errno.EXDEV:  # .subhive on another filesystem than contracts/: copy, then rename
                raise
            tmp = target.parent / f".{target.name}.{os.getpid()}.tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            write_tree(tmp, _read_tree(source))
            os.rename(tmp, target)
        self._barrier.add_tree(target)
        self._barrier.add_dir(target.parent)

    def _make_dirs(self, directory: Path) -> None:
        missing: list[Path] = []
        while not directory.is_dir():
            missing.append(directory)
            directory = directory.parent
        for created in reversed(missing):
            created.mkdir(exist_ok=True)
            self._barrier.add_dir(created.parent)

    def _verdict(self, p: _Proposal, *, status: str, code: str, message: str, problems: tuple[Problem, ...] = (),
                 check: dict[str, Any] | None = None, extra: Sequence[Record] = (), quiet: bool = False,
                 awarded: tuple[str, ...] = ()) -> ProposalOutcome:
        hive, pid, name, version, digest = p.hive, p.id, p.name, p.version, p.digest
        verdict: Record = ("verdict", {"proposal_id": pid, "hive": hive, "contract": name, "version": str(version),
                                       "status": status, "code": code, "message": message, "check": check,
                                       "problems": [p.to_dict() for p in problems]}, {})
        received: list[Record] = [] if quiet else [
            ("proposal_received", {"proposal_id": pid, "hive": hive, "contract": name, "version": str(version),
                                   "hash": digest, "announcement_id": p.announcement_id}, {})]
        self._commit([*received, verdict, *extra])
        return ProposalOutcome(pid, name, version, status, check, problems, message, code, digest,  # type: ignore[arg-type]
                               awarded)

    # ----------------------------------------------------------------------------------------- approvals
    def approvals(self, status: str | None = "pending", *, kind: str | None = None) -> list[Approval]:
        """Approvals with ``status`` (``pending``, ``approved``, ``rejected``; ``all`` or None for all) and
        ``kind`` (``contract``, ``repair``; ``all`` or None for both), oldest first; raises :class:`InputError`
        for any other status or kind."""
        if status == "all":
            status = None
        if status is not None and status not in ("pending", "approved", "rejected"):
            raise InputError(f"no approval status {status!r}", code="approval.unknown_status",
                             hint="use pending, approved, rejected or all")
        if kind == "all":
            kind = None
        if kind is not None and kind not in ("contract", "repair"):
            raise InputError(f"no approval kind {kind!r}", code="approval.unknown_kind",
                             hint="use contract, repair or all")
        return [a for a in self._approvals.values()
                if (status is None or a.status == status) and (kind is None or a.kind == kind)]

    def approval(self, approval_id: str) -> Approval:
        """One approval by id; raises :class:`NotFound`."""
        try:
            return self._approvals[approval_id]
        except KeyError:
            raise NotFound(f"no approval {approval_id!r}", code="approval.unknown",
                           hint="list them with `subhive approvals list`") from None

    def pending_files(self, approval_id: str) -> dict[str, bytes]:
        """The proposed files of a pending approval (for ``approvals show``)."""
        approval = self._pending(approval_id)
        if approval.kind != "contract":
            raise InputError(f"approval {approval_id} is a repair: it has no files", code="approval.no_files",
                             hint="its sample is in the approval's repair details")
        return _read_tree(self.state_dir / "pending" / approval.id)

    def _pending(self, approval_id: str) -> Approval:
        approval = self.approval(approval_id)
        if approval.status != "pending":
            raise Conflict(f"approval {approval_id} was already {approval.status}", code="approval.decided")
        return approval

    @_batched
    def approve(self, approval_id: str, *, admin_token: str, note: str = "") -> ProposalOutcome:
        """A human approves: the version is published (beside the old major) and its frames go out.

        >>> root.approve("p-7", admin_token=root.admin_token()).status  # doctest: +SKIP
        'accepted'
        """
        self._require_admin(admin_token)
        approval = self._pending(approval_id)
        if approval.kind == "repair" or approval.version is None:  # a repair: acknowledged, nothing to publish
            return self._acknowledge_repair(approval, note)
        name, version = approval.contract, approval.version
        accepted = self._lock.get(name, version)
        if accepted is not None and accepted.hash != approval.hash:
            raise Conflict(f"{name} {version} was accepted meanwhile with other content; reject this approval",
                           code="proposal.immutable")
        source = self.state_dir / "pending" / approval_id
        if not source.is_dir():  # a crash after publishing and before the log said so
            source = self.workspace_root / "contracts" / name / str(version)
        try:
            contract = load_contract(source)
        except SubhiveError as exc:
            raise Conflict(f"the files of approval {approval_id} are gone or damaged: {exc.message}",
                           code="approval.files_lost") from None
        decided: list[Record] = [("approval_decided", {"approval_id": approval_id, "kind": "contract",
                                                       "contract": name, "version": str(version),
                                                       "status": "approved", "decision": note}, {})]
        announcement = next((f.data.get("announcement_id") for f in self._log_.frames
                             if f.kind == "pending_approval" and f.data["approval_id"] == approval_id), None)
        proposal = _Proposal(approval.proposer, approval_id, approval.hash, announcement, name, version)
        outcome = self._accept(proposal, contract, None, records_before=decided)
        outcome = replace(outcome, check=approval.check)
        self._after_commit.append(functools.partial(shutil.rmtree, self.state_dir / "pending" / approval_id,
                                                    ignore_errors=True))
        return outcome

    @_batched
    def reject(self, approval_id: str, *, admin_token: str, reason: str) -> Approval:
        """A human rejects: nothing is published and the proposer sees the reason in the frame."""
        self._require_admin(admin_token)
        approval = self._pending(approval_id)
        if not isinstance(reason, str) or not reason.strip():
            raise InputError("a rejection needs a reason", code="approval.reason_required",
                             hint="say what the provider should change")
        self._commit([("approval_decided", {"approval_id": approval_id, "kind": approval.kind,
                                            "contract": approval.contract,
                                            "version": str(approval.version) if approval.version else None,
                                            "status": "rejected", "decision": reason}, {})])
        if approval.kind == "contract":
            # Only once the decision is durable: until then a crash must find the files of a pending approval.
            self._after_commit.append(functools.partial(shutil.rmtree, self.state_dir / "pending" / approval_id,
                                                        ignore_errors=True))
        return self._approvals[approval_id]

    # ------------------------------------------------------------------------------------------- repairs
    @_batched
    def propose_repair(self, hive: str, *, code: str, message: str, contract: str = "", operation: str = "",
                       subject: str = "", count: int = 1, sample: bytes | str = b"") -> Approval:
        """``hive`` reports an error class it saw ``count`` times; a human decides what to do about it.

        >>> root.propose_repair("backend", code="handler.failed", message="KeyError: 'sku'",
        ...                     contract="orders", operation="place_order", count=2).id  # doctest: +SKIP
        'r-1'

        The report becomes a pending approval of kind ``repair`` (``r-N``), or, when one about the same
        (hive, code, contract, operation, subject) is pending, adds ``count`` to it (its message and sample
        become the latest). ``approve`` acknowledges it and ``reject`` dismisses it; neither publishes
        anything. Raises :class:`NotFound` for an unknown hive and :class:`InputError` (``repair.*``) for a
        malformed report (a sample over 4 KiB is refused, not cut: the hive cuts it; text is kept as UTF-8).
        """
        self._known_hive(hive)
        report = check_report(hive, code=code, message=message, contract=contract, operation=operation,
                              subject=subject, count=count, sample=sample)
        pending_id = self._open_repairs.get(report.key)
        pending = self._approvals.get(pending_id) if pending_id is not None else None
        if pending is not None and pending.repair is not None:
            approval_id, total = pending.id, min(pending.repair.count + report.count, _COUNT_CAP)
        else:
            approval_id, total = f"r-{self._repairs + 1}", report.count
        self._commit([("repair_proposed", {
            "approval_id": approval_id, "hive": hive, "code": report.code, "contract": report.contract,
            "operation": report.operation, "subject": report.subject, "count": total, "added": report.count,
            "repeat": pending is not None, "message": report.message,
            "sample_bytes": len(report.sample)}, {"sample": base64.b64encode(report.sample).decode("ascii")})])
        return self._approvals[approval_id]

    def _acknowledge_repair(self, approval: Approval, note: str) -> ProposalOutcome:
        """Approving a repair records that a human accepted it; the repair itself is the hive's work."""
        self._commit([("approval_decided", {"approval_id": approval.id, "kind": "repair",
                                            "contract": approval.contract, "version": None,
                                            "status": "approved", "decision": note}, {})])
        repair = approval.repair
        what = f"{repair.code} x{repair.count}" if repair is not None else "repair"
        return ProposalOutcome(approval.id, approval.contract, None, "accepted", None, (),
                               f"repair {approval.id} from {approval.proposer} ({what}) accepted",
                               "repair.accepted", kind="repair")

    # ----------------------------------------------------------------------------------------- endpoints
    @_batched
    def register_endpoint(self, hive: str | None, contract: str, major: int, address: str, *,
                          services: Sequence[str] = ()) -> Endpoint:
        """Record that ``contract``'s major line ``major`` is served over gRPC at ``address``.

        >>> root.register_endpoint("db", "inventory", 1, "127.0.0.1:40123").provider  # doctest: +SKIP
        'db'

        ``hive`` must be the provider of that line (of its newest accepted version); ``None`` stands for the
        admin, who registers for that provider. The line's contract must declare a gRPC service, and
        ``services`` (what the server answers, if given) must include it. A registration replaces the previous
        one (a restarted provider has a new port); the same address again changes nothing. Raises
        :class:`PermissionDenied` (``auth.not_provider``), :class:`NotFound` (``endpoint.no_contract``: no
        accepted version of that major) and :class:`InputError` (``endpoint.*``).
        """
        _check_contract_name(contract, "endpoint.contract")
        major, address, served = check_major(major), check_address(address), check_services(services)
        provider, service = self._served_line(contract, major)
        if hive is not None:
            self._known_hive(hive)
            if hive != provider:
                raise PermissionDenied(f"hive {hive!r} cannot register an endpoint for {contract} v{major}: "
                                       f"{provider!r} provides it", code="auth.not_provider",
                                       hint="only the contract's provider serves it")
        if served and service not in served:
            raise InputError(f"the server at {address} does not answer {service}, the service of {contract} "
                             f"v{major} (it answers {', '.join(served)})", code="endpoint.service_missing",
                             hint="add the contract's servicer to the server before registering it")
        known = self._endpoints.get(contract, major)
        if known is not None and (known.address, known.provider) == (address, provider):
            return known
        self._commit([("endpoint_registered", {"contract": contract, "major": major, "address": address,
                                               "provider": provider, "service": service,
                                               "replaced": known.address if known is not None else None}, {})])
        return self._endpoint_now(contract, major)

    @_batched
    def remove_endpoint(self, hive: str | None, contract: str, major: int, address: str) -> bool:
        """Remove the registration of ``contract`` v``major`` if it still names ``address``; True if it did.

        A provider stopping removes its own address only, so it never removes the one a newer instance of
        it registered meanwhile. ``hive`` must be the registered provider (``None``: the admin).
        """
        _check_contract_name(contract, "endpoint.contract")
        major, address = check_major(major), check_address(address)
        known = self._endpoints.get(contract, major)
        if known is None:
            return False
        if hive is not None and hive != known.provider:
            raise PermissionDenied(f"hive {hive!r} cannot remove the endpoint of {contract} v{major}: "
                                   f"{known.provider!r} registered it", code="auth.not_provider")
        if known.address != address:
            return False
        self._commit([("endpoint_removed", {"contract": contract, "major": major, "address": address,
                                            "provider": known.provider}, {})])
        return True

    def endpoint(self, contract: str, major: int, *, hive: str | None) -> Endpoint:
        """Where ``contract`` v``major`` is served, for ``hive`` (``None``: the admin).

        >>> root.endpoint("inventory", 1, hive="web").address  # doctest: +SKIP
        '127.0.0.1:40123'

        A hive may look up the contracts it declared a requirement on, and those it provides (decision
        0013); any other hive gets :class:`PermissionDenied` (``auth.not_consumer``), whether or not an
        endpoint exists. Nothing registered raises :class:`NotFound` (``endpoint.none``).
        """
        _check_contract_name(contract, "endpoint.contract")
        major = check_major(major)
        if hive is not None:
            self._known_hive(hive)
            if (hive, contract) not in self._requirements and \
                    all(e.provider != hive for e in self._lock.versions(contract)):
                raise PermissionDenied(f"hive {hive!r} neither consumes nor provides {contract}: it may not look up "
                                       "its endpoint", code="auth.not_consumer",
                                       hint=f"declare a requirement on {contract} (consumes in subhive.toml, or "
                                            "DeclareRequirement) first")
        found = self._endpoints.get(contract, major)
        if found is None:
            line = [e for e in self._lock.versions(contract) if e.version.major == major]
            hint = (f"its provider {line[-1].provider!r} registers one when it serves it (subhive.rpc.serve_grpc)"
                    if line else f"no version of {contract} with major {major} is accepted yet: its provider "
                                 "proposes one first")
            raise NotFound(f"no gRPC endpoint is registered for {contract} v{major}", code="endpoint.none",
                           hint=hint)
        return found

    def endpoints(self) -> list[Endpoint]:
        """Every registered endpoint, by contract and major."""
        return self._endpoints.all()

    def _endpoint_now(self, contract: str, major: int) -> Endpoint:
        found = self._endpoints.get(contract, major)
        assert found is not None  # just applied
        return found

    def _served_line(self, contract: str, major: int) -> tuple[str, str]:
        """The provider and gRPC service of the newest accepted version of ``contract`` with ``major``."""
        line = [e for e in self._lock.versions(contract) if e.version.major == major]
        if not line:
            raise NotFound(f"no version of {contract} with major {major} is accepted", code="endpoint.no_contract",
                           hint="propose the contract first; an endpoint serves an accepted version")
        newest = line[-1]
        loaded = self._contract(contract, newest.version)
        if loaded is None:
            raise Conflict(f"the accepted {contract} {newest.version} no longer loads; restore it from version "
                           "control", code="lock.tampered")
        if loaded.grpc is None:
            raise InputError(f"{contract} {newest.version} declares no gRPC service: there is nothing to serve",
                             code="endpoint.no_service", hint="add grpc: {proto, service} to its contract.yaml "
                             "in a new version")
        return newest.provider, loaded.grpc.service

    # ------------------------------------------------------------------------------------------- views
    def contracts(self) -> list[ContractInfo]:
        """Every accepted contract with its versions' status and consumers."""
        self.sync_manifests()
        out: list[ContractInfo] = []
        for name in self._lock.names():
            entries = self._lock.versions(name)
            heads = {_line(e.version): e.version for e in entries}  # ascending, so the last write is the newest
            newest_line = _line(entries[-1].version)
            infos = []
            for e in entries:
                if e.consumers or (heads[_line(e.version)] == e.version and _line(e.version) == newest_line):
                    status = "active"
                elif heads[_line(e.version)] == e.version:
                    status = "retired"
                else:
                    status = "superseded"
                infos.append(VersionInfo(e.version, e.hash, e.provider, status,  # type: ignore[arg-type]
                                         dict(e.consumers), (name, e.version) not in self._tampered))
            out.append(ContractInfo(name, infos))
        return out

    @property
    def lock(self) -> Lock:
        """The lock as the root holds it (equal to ``contracts.lock`` after every acceptance)."""
        return self._lock

    def verify(self) -> list[Problem]:
        """``lock.tampered`` / ``lock.missing`` problems for accepted versions whose files changed.

        Tampered versions found at open are not served: they satisfy no requirement and no proposal is
        checked against them until their files are restored.
        """
        self._materialiser.wait()
        return self._lock.verify(self.workspace_root)

    def status(self) -> list[HiveStatus]:
        """The hive tree under the root: each hive with the contracts it provides and consumes."""
        self.sync_manifests()
        provides: dict[str, list[str]] = {}
        for name in self._lock.names():
            provides.setdefault(self._lock.versions(name)[-1].provider, []).append(name)
        open_needs = {(a.hive, a.contract): a.id for a in self._announcements.values() if a.status == "open"}

        def node(hive: _Hive) -> HiveStatus:
            consumes = []
            for (who, contract), req in sorted(self._requirements.items()):
                if who == hive.name:
                    best = self._resolve(req)
                    consumes.append({"contract": contract, "versions": req.versions,
                                     "satisfied_by": str(best) if best else None,
                                     "announcement_id": open_needs.get((who, contract))})
            children = [node(h) for h in sorted(self._hives.values(), key=lambda h: h.name) if h.parent == hive.name]
            return HiveStatus(hive.name, hive.kind, hive.parent, children, provides.get(hive.name, []), consumes,
                              self._endpoints.of_provider(hive.name))

        return [node(h) for h in sorted(self._hives.values(), key=lambda h: h.name) if h.parent == ROOT]

    # ---------------------------------------------------------------------------------------- frames
    def frames_since(self, token: int) -> list[Frame]:
        """Frames after resume token ``token`` (0 for all), in order. A token beyond the log raises Conflict."""
        if not isinstance(token, int) or token < 0:
            raise InputError(f"{token!r} is not a resume token", code="frames.token",
                             hint="use 0 or the seq of the last frame seen")
        if token > self._log_.last_seq:
            raise Conflict(f"resume token {token} is ahead of the log (last frame {self._log_.last_seq}): this root "
                           "has a different history", code="frames.token_ahead", hint="resume from 0")
        return self._log_.since(token)

    def subscribe(self) -> asyncio.Queue[Frame]:
        """A queue receiving every frame committed from now on (call from the event loop that reads it)."""
        queue: asyncio.Queue[Frame] = asyncio.Queue()
        self._subscribers.append((asyncio.get_running_loop(), queue))
        return queue

    def unsubscribe(self, queue: asyncio.Queue[Frame]) -> None:
        self._subscribers = [(loop, q) for loop, q in self._subscribers if q is not queue]

    def add_listener(self, callback: Callable[[Frame], None]) -> None:
        """Call ``callback(frame)`` for each committed frame, synchronously, in the committing thread."""
        self._listeners.append(callback)

    def remove_listener(self, callback: Callable[[Frame], None]) -> None:
        self._listeners = [c for c in self._listeners if c is not callback]

    async def watch(self, after: int = 0) -> AsyncIterator[Frame]:
        """Frames after ``after``, then live ones: no gap, no duplicate, in ``seq`` order.

        >>> async for frame in root.watch(after=41): ...  # doctest: +SKIP
        """
        queue = self.subscribe()  # before reading the backlog, so nothing falls between the two
        try:
            last = after
            for frame in self.frames_since(after):
                yield frame
                last = frame.seq
            while True:
                frame = await queue.get()
                if frame.seq > last:
                    yield frame
                    last = frame.seq
        finally:
            self.unsubscribe(queue)

    # -------------------------------------------------------------------------------- events and state
    def _commit(self, records: list[Record]) -> list[Frame]:
        """Stage ``records`` in the log and apply them; the batch's end makes them durable and announces them."""
        with self.batch():
            frames = self._log_.stage(records)
            for frame in frames:
                self._apply(frame, replaying=False)
            self._unannounced.extend(frames)
        return frames

    def _apply(self, frame: Frame, *, replaying: bool) -> None:
        handler = _APPLY.get(frame.kind)
        if handler is not None:
            handler(self, frame.data, frame, replaying)

    def _apply_registered(self, data: dict[str, Any], frame: Frame, replaying: bool) -> None:
        old = self._hives.get(data["name"])
        if old is not None:
            self._tokens.pop(old.token_sha256, None)
        sha = frame.private["token_sha256"]
        manifest = bool(data.get("manifest")) or (old is not None and old.from_manifest)
        self._hives[data["name"]] = _Hive(data["name"], data["kind"], data["parent"], sha, manifest)
        self._tokens[sha] = data["name"]

    def _apply_hive_removed(self, data: dict[str, Any], frame: Frame, replaying: bool) -> None:
        old = self._hives.pop(data["name"], None)
        if old is not None:
            self._tokens.pop(old.token_sha256, None)

    def _apply_requirement_withdrawn(self, data: dict[str, Any], frame: Frame, replaying: bool) -> None:
        key = (data["hive"], data["contract"])
        self._requirements.pop(key, None)
        self._requirement_keys.get(data["contract"], {}).pop(key, None)
        for a in [self._announcements[i] for i in self._announcement_ids.get(data["contract"], ())]:
            if a.hive == data["hive"] and a.status == "open":
                self._announcements[a.id] = replace(a, status="withdrawn")
        if not replaying:
            self._refresh_consumers(data["contract"])
            self._lock_dirty = True

    def _apply_requirement(self, data: dict[str, Any], frame: Frame, replaying: bool) -> None:
        key = (data["hive"], data["contract"])
        self._requirements[key] = _Requirement(data["hive"], data["contract"], data["versions"],
                                               VersionRange.parse(data["versions"]), tuple(data["operations"]),
                                               tuple(data["fields"]))
        self._requirement_keys.setdefault(data["contract"], {})[key] = None
        for a in [self._announcements[i] for i in self._announcement_ids.get(data["contract"], ())]:
            if a.hive == data["hive"] and a.status == "open":
                self._announcements[a.id] = replace(a, status="withdrawn")
        if not replaying:
            self._refresh_consumers(data["contract"])
            self._lock_dirty = True

    def _apply_announced(self, data: dict[str, Any], frame: Frame, replaying: bool) -> None:
        self._announcements[data["announcement_id"]] = _Announcement(
            data["announcement_id"], data["hive"], data["contract"], data["versions"], "open")
        self._announcement_ids.setdefault(data["contract"], []).append(data["announcement_id"])

    def _apply_received(self, data: dict[str, Any], frame: Frame, replaying: bool) -> None:
        number = data["proposal_id"].rpartition("-")[2]
        if number.isdigit():
            self._proposals = max(self._proposals, int(number))

    def _apply_pending(self, data: dict[str, Any], frame: Frame, replaying: bool) -> None:
        self._approvals[data["approval_id"]] = Approval(
            data["approval_id"], data["contract"], Version.parse(data["version"]), data["proposer"], data["check"],
            frame.time, "pending", data["reason"], data["message"], data["hash"])

    def _apply_decided(self, data: dict[str, Any], frame: Frame, replaying: bool) -> None:
        approval = self._approvals[data["approval_id"]]
        self._approvals[approval.id] = replace(approval, status=data["status"], decision=data["decision"],
                                               decided=frame.time)
        if approval.repair is not None:
            self._open_repairs.pop(repair_key(approval), None)

    def _apply_repair(self, data: dict[str, Any], frame: Frame, replaying: bool) -> None:
        pending = self._approvals.get(data["approval_id"])
        approval = repair_approval(data, base64.b64decode(frame.private.get("sample", "")), frame.time, pending)
        self._approvals[approval.id] = approval
        self._open_repairs[repair_key(approval)] = approval.id
        number = approval.id.rpartition("-")[2]
        if number.isdigit():
            self._repairs = max(self._repairs, int(number))

    def _apply_endpoint(self, data: dict[str, Any], frame: Frame, replaying: bool) -> None:
        self._endpoints.apply_registered(data, frame.time)

    def _apply_endpoint_removed(self, data: dict[str, Any], frame: Frame, replaying: bool) -> None:
        self._endpoints.apply_removed(data)

    def _apply_ready(self, data: dict[str, Any], frame: Frame, replaying: bool) -> None:
        version = Version.parse(data["version"])
        self._lock.put(LockEntry(data["contract"], version, data["hash"], data["provider"], {}))
        files = frame.private.pop("files", None)  # already serialised in the log: not kept in memory
        if replaying and files is not None:
            self._logged[(data["contract"], version)] = files

    def _restore_logged_directories(self) -> None:
        """Write every accepted directory the log holds and the disk lacks (a crash between the acknowledgement
        and the write, or a half-written temporary left by one); check each against its hash first."""
        jobs: list[tuple[Path, dict[str, bytes]]] = []
        for (name, version), encoded in self._logged.items():
            entry = self._lock.get(name, version)
            target = self.workspace_root / "contracts" / name / str(version)
            if entry is None or target.exists():
                continue
            files = decode_files(encoded)
            if contract_hash(files) != entry.hash:
                raise InputError(f"the event log's files of {name} {version} do not match its hash {entry.hash}",
                                 code="log.corrupt", location=Location(file=str(self._log_.path)),
                                 hint="restore .subhive/root from a backup")
            jobs.append((target, files))
        self._logged.clear()
        if jobs:
            self._materialiser.write(jobs)

    def _apply_awarded(self, data: dict[str, Any], frame: Frame, replaying: bool) -> None:
        a = self._announcements.get(data["announcement_id"])
        if a is not None:
            self._announcements[a.id] = replace(a, status="awarded")

    def _requirements_of(self, contract: str) -> list[_Requirement]:
        """The requirements on ``contract``, in the order they were first declared."""
        return [self._requirements[key] for key in self._requirement_keys.get(contract, ())]

    def _refresh_consumers(self, name: str) -> None:
        """Put each consumer of ``name`` on the version it resolves to (what the lock records)."""
        resolved: dict[Version, dict[str, str]] = {}
        for req in self._requirements_of(name):
            best = self._resolve(req)
            if best is not None:
                resolved.setdefault(best, {})[req.hive] = req.versions
        for entry in self._lock.versions(name):
            consumers = resolved.get(entry.version, {})
            if dict(entry.consumers) != consumers:
                self._lock.put(replace(entry, consumers=consumers))

    def _clean_leftovers(self) -> None:
        """Staging trees of unfinished proposals and files of decided approvals are garbage after a restart."""
        shutil.rmtree(self.state_dir / "staging", ignore_errors=True)
        for leftover in self.workspace_root.glob("contracts/*/.*.tmp"):  # a write cut short by a crash
            shutil.rmtree(leftover, ignore_errors=True)
        pending = self.state_dir / "pending"
        if pending.is_dir():
            for child in pending.iterdir():
                approval = self._approvals.get(child.name)
                if approval is None or approval.status != "pending":
                    shutil.rmtree(child, ignore_errors=True)


_APPLY: dict[str, Callable[[RootHive, dict[str, Any], Frame, bool], None]] = {
    "hive_registered": RootHive._apply_registered,
    "hive_removed": RootHive._apply_hive_removed,
    "requirement_declared": RootHive._apply_requirement,
    "requirement_withdrawn": RootHive._apply_requirement_withdrawn,
    "need_announced": RootHive._apply_announced,
    "proposal_received": RootHive._apply_received,
    "pending_approval": RootHive._apply_pending,
    "approval_decided": RootHive._apply_decided,
    "contract_ready": RootHive._apply_ready,
    "need_awarded": RootHive._apply_awarded,
    "repair_proposed": RootHive._apply_repair,
    "endpoint_registered": RootHive._apply_endpoint,
    "endpoint_removed": RootHive._apply_endpoint_removed,
}


def _check_contract_name(contract: object, code: str) -> None:
    if not isinstance(contract, str) or not _CONTRACT_NAME.match(contract):
        raise InputError(f"{contract!r} is not a contract name", code=code,
                         hint="[a-z][a-z0-9_-]*, at most 63 characters, as in contract.yaml")


# ------------------------------------------------------------------------------------------------ files
def _clean_files(files: Mapping[str, bytes]) -> dict[str, bytes]:
    """Check a proposal's file map: relative POSIX paths inside the directory, bytes, a manifest, limits."""
    if not isinstance(files, Mapping) or not files:
        raise InputError("a proposal needs the contract directory's files", code="proposal.no_files",
                         hint="send {relative path: bytes}, including contract.yaml")
    if len(files) > MAX_FILES:
        raise InputError(f"{len(files)} files; a contract has at most {MAX_FILES}", code="proposal.too_many_files")
    out: dict[str, bytes] = {}
    total = 0
    for name, content in files.items():
        where = Location(file=str(name))
        path = PurePosixPath(name) if isinstance(name, str) else None
        if (path is None or not name or name.startswith("/") or "\\" in name or "\0" in name
                or any(part in ("", ".", "..") for part in name.split("/")) or len(name) > 255):
            raise InputError(f"{name!r} is not a relative path inside the contract directory",
                             code="proposal.bad_path", location=where,
                             hint="use relative POSIX paths like schemas/order.json, without '..'")
        if not isinstance(content, bytes | bytearray):
            raise InputError(f"the content of {name} must be bytes", code="proposal.bad_content", location=where)
        total += len(content)
        out[name] = bytes(content)
    if total > MAX_BYTES:
        raise InputError(f"the proposal holds {total} bytes; the limit is {MAX_BYTES}", code="proposal.too_large")
    if "contract.yaml" not in out:
        raise InputError("the proposal has no contract.yaml", code="proposal.no_manifest",
                         hint="send the whole contract directory, with its contract.yaml at the top")
    names = set(out)
    for name in out:  # a file and a directory of the same name cannot both exist on disk
        parts = name.split("/")
        for i in range(1, len(parts)):
            if "/".join(parts[:i]) in names:
                raise InputError(f"{'/'.join(parts[:i])} is both a file and a directory", code="proposal.bad_path",
                                 location=Location(file=name))
    return out


def _write_secret(path: Path, secret: str) -> None:
    """Write ``secret`` to ``path`` readable by its owner only (mode 0600 from creation, never wider)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, (secret + "\n").encode("utf-8"))
    finally:
        os.close(fd)
    os.replace(tmp, path)


def _read_tree(directory: Path) -> dict[str, bytes]:
    from ._lock import directory_files

    return directory_files(directory)


def _relocate(problem: Problem, staging: Path) -> Problem:
    """Name files relative to the proposal, not to the root's private staging directory."""
    file = problem.location.file
    if file and file.startswith(str(staging)):
        rel = file[len(str(staging)):].lstrip("/") or "."
        return replace(problem, location=replace(problem.location, file=rel))
    return problem


def _peek(files: Mapping[str, bytes]) -> tuple[str, Version]:
    """Best-effort name and version of a contract that does not lint (for the verdict frame)."""
    name, version = "", Version(0, 0, 0)
    for line in files.get("contract.yaml", b"").decode("utf-8", "replace").splitlines():
        key, _, value = line.partition(":")
        value = value.strip().strip("'\"")
        if key == "contract":
            name = value
        elif key == "version":
            with contextlib.suppress(ValueError):
                version = Version.parse(value)
    return name, version
