"""Carrying a verdict out: its frames, an accepted version's lock entry, files and awards, a held one's files.

Small accepted directories ride in the log record and are written after the acknowledgement (docs/root-hive.md).
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._files import write_tree
from ..contract import Contract
from ..errors import InputError, Location, Problem
from ..semver import Version
from ._lock import LockEntry, contract_hash, directory_files
from ._log import Frame
from ._materialise import decode_files, encode_files
from ._model import ProposalOutcome, ProposalStatus
from ._state import Proposal, Record, RootState

__all__ = ["Verdicts"]

#: Accepted files up to this size go into the log record and are written to contracts/ after the
#: acknowledgement; larger ones are published before it (staging, barrier, rename), as the log stays small.
LOGGED_FILES_MAX = 256 * 1024


class Verdicts(RootState):
    """Verdict frames, publishing and holding."""

    def _hold(
        self, p: Proposal, contract: Contract, check: dict[str, Any] | None, *, reason: str, message: str
    ) -> ProposalOutcome:
        self._place(p, contract, self.state_dir / "pending" / p.id)
        approval = {
            "approval_id": p.id,
            "contract": p.name,
            "version": str(p.version),
            "proposer": p.hive,
            "reason": reason,
            "message": message,
            "hash": p.digest,
            "check": check,
            "announcement_id": p.announcement_id,
        }
        return self._verdict(
            p, status="pending", code=reason, message=message, check=check, extra=[("pending_approval", approval, {})]
        )

    def _accept(
        self, p: Proposal, contract: Contract, check: dict[str, Any] | None, records_before: list[Record] | None
    ) -> ProposalOutcome:
        name, version, hive, pid, digest = contract.name, contract.version, p.hive, p.id, p.digest
        consumers = sorted(
            r.hive for r in self._requirements_of(name) if self._resolve(r, (version, contract)) == version
        )
        awarded = sorted(
            a.id
            for a in (self._announcements[i] for i in self._announcement_ids.get(name, ()))
            if a.status == "open"
            and (a.hive, name) in self._requirements
            and self._resolve(self._requirements[(a.hive, name)], (version, contract)) == version
        )
        target = self.workspace_root / "contracts" / name / str(version)
        logged = p.files is not None and records_before is None and sum(map(len, p.files.values())) <= LOGGED_FILES_MAX
        conflict = self._unlocked_conflict(p, target) if logged else self._publish(p, contract)
        if conflict is not None:
            return self._verdict(p, status="rejected", code="proposal.exists_unlocked", message=conflict)
        if contract.directory == self.workspace_root / "contracts" / name / str(version):
            # Linted in memory as the published directory: no need to read it back to check the next version.
            self._contracts[(name, version, digest)] = contract
        # The files ride in the record (private: replay only), so the acknowledgement waits for one log fsync;
        # the directory is written after the batch (see _flush), and again at open if it was lost.
        private = {"files": encode_files(p.files)} if logged and p.files is not None else {}
        ready: list[Record] = [
            (
                "contract_ready",
                {
                    "contract": name,
                    "version": str(version),
                    "hash": digest,
                    "provider": hive,
                    "proposal_id": pid,
                    "consumers": consumers,
                },
                private,
            )
        ]
        if logged and p.files is not None and not target.exists():
            self._to_write.append((target, p.files))
        ready += [
            (
                "need_awarded",
                {
                    "announcement_id": a,
                    "proposal_id": pid,
                    "contract": name,
                    "version": str(version),
                    "provider": hive,
                    "consumer": self._announcements[a].hive,
                },
                {},
            )
            for a in awarded
        ]
        message = f"{name} {version} accepted" + (f"; awarded {', '.join(awarded)}" if awarded else "")
        if records_before is not None:  # an approval: no proposal_received/verdict frames of its own
            self._commit(records_before + ready)
            self._after_accept(name)
            return ProposalOutcome(
                pid, name, version, "accepted", check, (), message, "proposal.accepted", digest, tuple(awarded)
            )
        outcome = self._verdict(
            p,
            status="accepted",
            code="proposal.accepted",
            message=message,
            check=check,
            extra=ready,
            awarded=tuple(awarded),
        )
        self._after_accept(name)
        return outcome

    def _after_accept(self, name: str) -> None:
        self._refresh_consumers(name)
        self._lock_dirty = True

    def _publish(self, p: Proposal, contract: Contract) -> str | None:
        """Put the contract's files at ``contracts/<name>/<version>/`` atomically; a message if another tree is
        there."""
        target = self.workspace_root / "contracts" / contract.name / str(contract.version)
        conflict = self._unlocked_conflict(p, target)
        if conflict is None and not target.exists():
            self._place(p, contract, target)
        return conflict

    def _unlocked_conflict(self, p: Proposal, target: Path) -> str | None:
        """A message if ``target`` (not in the lock) exists with other files than the proposal's."""
        if not target.exists():
            return None
        if target.is_dir() and contract_hash(target) == p.digest:
            return None  # published before a crash kept the log from saying so, or placed by hand: same bytes
        return (
            f"contracts/{p.name}/{p.version} exists but is not in the lock and holds other files; move it away "
            "or propose another version"
        )

    def _place(self, p: Proposal, contract: Contract, target: Path) -> None:
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
            write_tree(tmp, directory_files(source))
            os.rename(tmp, target)
        self._barrier.add_tree(target)
        self._barrier.add_dir(target.parent)

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
    ) -> ProposalOutcome:
        hive, pid, name, version, digest = p.hive, p.id, p.name, p.version, p.digest
        verdict: Record = (
            "verdict",
            {
                "proposal_id": pid,
                "hive": hive,
                "contract": name,
                "version": str(version),
                "status": status,
                "code": code,
                "message": message,
                "check": check,
                "problems": [p.to_dict() for p in problems],
            },
            {},
        )
        received: list[Record] = (
            []
            if quiet
            else [
                (
                    "proposal_received",
                    {
                        "proposal_id": pid,
                        "hive": hive,
                        "contract": name,
                        "version": str(version),
                        "hash": digest,
                        "announcement_id": p.announcement_id,
                    },
                    {},
                )
            ]
        )
        self._commit([*received, verdict, *extra])
        return ProposalOutcome(
            pid,
            name,
            version,
            status,
            check,
            problems,
            message,
            code,
            digest,
            awarded,
        )

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
                raise InputError(
                    f"the event log's files of {name} {version} do not match its hash {entry.hash}",
                    code="log.corrupt",
                    location=Location(file=str(self._log_.path)),
                    hint="restore .subhive/root from a backup",
                )
            jobs.append((target, files))
        self._logged.clear()
        if jobs:
            self._materialiser.write(jobs)
