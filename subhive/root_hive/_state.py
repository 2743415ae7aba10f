"""The root engine's shared state and the one way it changes: a record staged, applied, made durable.

Each concern of RootHive is a mixin over :class:`RootState`; replay applies records with the same handlers,
so a restart rebuilds what callers were told (docs/root-hive.md, "Durable state").
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from ..contract import Contract
from ..errors import SubhiveError
from ..semver import Version
from ..workspace import VersionRange
from ._durable import Barrier
from ._endpoints import EndpointRegistry
from ._lock import Lock
from ._lock_check import LockGuard
from ._log import EventLog, Frame
from ._materialise import Materialiser
from ._model import Approval, ProposalOutcome, ProposalStatus, RequirementOutcome
from ._repairs import RepairKey

if TYPE_CHECKING:
    from ..errors import Problem
    from ..workspace import Workspace

__all__ = [
    "ROOT",
    "STATE_DIR",
    "TOKENS_DIR",
    "Announcement",
    "Applier",
    "HiveEntry",
    "Proposal",
    "Record",
    "Requirement",
    "RootState",
    "batched",
]

ROOT = "root"
STATE_DIR = Path(".subhive") / "root"
#: Workspace hives' tokens, one file each (mode 0600), written when the root registers them at open.
TOKENS_DIR = Path(".subhive") / "tokens"
#: Bytes of accepted directories the background writer may lag behind by before a batch waits for it.
UNWRITTEN_MAX = 64 * 1024 * 1024

#: An event to commit: its kind, its data (what watchers see) and its private part (replay only).
Record = tuple[str, dict[str, Any], dict[str, Any]]
#: Applies one event's data to the state, at commit and at replay alike.
Applier = Callable[[Any, dict[str, Any], Frame, bool], None]
F = TypeVar("F", bound=Callable[..., Any])


def batched(method: F) -> F:
    """Run a public method that changes state inside :meth:`RootState.batch` (joining an open batch)."""

    @functools.wraps(method)
    def wrapper(self: RootState, *args: Any, **kwargs: Any) -> Any:
        with self.batch():
            return method(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class HiveEntry:
    name: str
    kind: str
    parent: str
    token_sha256: str
    #: Registered from a manifest under subhives/ (not through RegisterHive): forgotten when it is removed.
    from_manifest: bool = False


@dataclass(frozen=True, slots=True)
class Requirement:
    hive: str
    contract: str
    versions: str
    range: VersionRange
    operations: tuple[str, ...]
    fields: tuple[str, ...]


@dataclass(slots=True)
class Proposal:
    """What every verdict on one proposal repeats."""

    hive: str
    id: str
    digest: str
    announcement_id: str | None
    name: str = ""
    version: Version = field(default_factory=lambda: Version(0, 0, 0))
    #: The proposed files when they were linted in memory and are not on disk yet (see Proposals._lint).
    files: dict[str, bytes] | None = None


@dataclass(frozen=True, slots=True)
class Announcement:
    id: str
    hive: str
    contract: str
    versions: str
    status: str  # "open" | "awarded" | "withdrawn"


class RootState:
    """The attributes every concern reads and writes, and the one way to change them: :meth:`_commit`."""

    #: Event kind -> the concern's handler; set by RootHive, which knows every concern.
    _APPLY: ClassVar[Mapping[str, Applier]] = {}

    def __init__(self, workspace_root: Path) -> None:
        self.workspace_root = workspace_root
        self.state_dir = workspace_root / STATE_DIR
        self._hives: dict[str, HiveEntry] = {}
        self._tokens: dict[str, str] = {}
        self._requirements: dict[tuple[str, str], Requirement] = {}
        self._announcements: dict[str, Announcement] = {}
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
        #: Tells a hand-edited hash in contracts.lock: proposals wait and the lock is not rewritten over it.
        self._lock_guard = LockGuard(workspace_root)
        #: Writes accepted directories and the lock after the batch whose log records hold them.
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

    # -- committing -----------------------------------------------------------------------------------------
    def _commit(self, records: list[Record]) -> list[Frame]:
        """Stage ``records`` in the log and apply them; the batch's end makes them durable and announces them."""
        with self.batch():
            frames = self._log_.stage(records)
            for frame in frames:
                self._apply(frame, replaying=False)
            self._unannounced.extend(frames)
        return frames

    def _apply(self, frame: Frame, *, replaying: bool) -> None:
        handler = self._APPLY.get(frame.kind)
        if handler is not None:
            handler(self, frame.data, frame, replaying)

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

    @property
    def _log_(self) -> EventLog:
        if self._log is None:
            raise SubhiveError("the root hive is closed", code="root.closed", hint="open it again with RootHive.open")
        return self._log

    def _make_dirs(self, directory: Path) -> None:
        """Create ``directory`` and its missing parents, each made durable at the batch's barrier."""
        missing: list[Path] = []
        while not directory.is_dir():
            missing.append(directory)
            directory = directory.parent
        for created in reversed(missing):
            created.mkdir(exist_ok=True)
            self._barrier.add_dir(created.parent)

    if TYPE_CHECKING:
        # What one concern asks of another: defined by the mixins RootHive is composed of, declared here so
        # each mixin type-checks on its own (mypy checks the definitions against these signatures).
        def _admin_token_file(self) -> str: ...
        def _require_admin(self, token: str) -> None: ...
        def _known_hive(self, hive: str) -> None: ...
        def _register_workspace_hives(self, workspace: Workspace) -> None: ...
        def _manifests_digest(self) -> bytes: ...
        def sync_manifests(self) -> bool: ...
        def declare_requirement(
            self, hive: str, contract: str, versions: str, *, operations: Sequence[str] = (), fields: Sequence[str] = ()
        ) -> RequirementOutcome: ...
        def _requirements_of(self, contract: str) -> list[Requirement]: ...
        def _resolve(self, req: Requirement, extra: tuple[Version, Contract] | None = None) -> Version | None: ...
        def _contract(self, name: str, version: Version) -> Contract | None: ...
        def _refresh_consumers(self, name: str) -> None: ...
        def _verdict(
            self,
            p: Proposal,
            *,
            status: ProposalStatus,
            code: str,
            message: str,
            problems: tuple[Problem, ...] = (),
            check: dict[str, Any] | None = None,
            extra: Sequence[Record] = (),
            quiet: bool = False,
            awarded: tuple[str, ...] = (),
        ) -> ProposalOutcome: ...
        def _hold(
            self, p: Proposal, contract: Contract, check: dict[str, Any] | None, *, reason: str, message: str
        ) -> ProposalOutcome: ...
        def _accept(
            self, p: Proposal, contract: Contract, check: dict[str, Any] | None, records_before: list[Record] | None
        ) -> ProposalOutcome: ...
        def _restore_logged_directories(self) -> None: ...
        def _acknowledge_repair(self, approval: Approval, note: str, *, by: str = "") -> ProposalOutcome: ...
