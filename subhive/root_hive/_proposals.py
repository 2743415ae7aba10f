"""Judging a proposed contract version: lint, provider, semver honesty, and whether a human must decide.

The rules are in docs/root-hive.md ("The engine: rules of negotiation"); ``_verdicts.py`` carries a
verdict out (publishing, holding).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._files import write_tree
from ..compat.contract_check import ContractCheck, check_contract
from ..contract import Contract, lint_contract
from ..errors import InputError, Location, Problem
from ..semver import Bump
from ._errors import NotFound, PermissionDenied
from ._features import missing_features
from ._lock import LockEntry, contract_hash
from ._lock_check import LockInconsistent
from ._log import Frame
from ._model import ProposalOutcome
from ._rules import CONTRACT_NAME, clean_files, peek, relocate, version_line
from ._state import Proposal, RootState, batched

__all__ = ["Proposals"]


class Proposals(RootState):
    """The verdict on a proposal."""

    @batched
    def propose(self, hive: str, files: Mapping[str, bytes], *, announcement_id: str | None = None) -> ProposalOutcome:
        """Judge a contract version proposed by ``hive``; see the module docstring for the rules.

        >>> outcome = root.propose("backend", read_dir("contracts/orders/1.2.0"))  # doctest: +SKIP
        >>> outcome.status, outcome.code  # doctest: +SKIP
        ('accepted', 'proposal.accepted')

        Returns an outcome for every verdict (``rejected`` ones carry :meth:`ProposalOutcome.error`); raises
        :class:`NotFound` (unknown hive or announcement), :class:`InputError` (not a contract directory at
        all) and :class:`PermissionDenied` (a hive proposing a contract it does not provide).
        """
        self._known_hive(hive)
        edited = self._lock_guard.edited({(e.name, e.version): e.hash for e in self._lock})
        if edited:  # what would be accepted could not be written down without rewriting the edited hash
            raise LockInconsistent(edited)
        if self._lock_guard.held_back:  # fixed since a rewrite was held back: write what it missed
            self._lock_guard.held_back, self._lock_dirty = False, True
        clean = clean_files(files)
        if announcement_id is not None and announcement_id not in self._announcements:
            raise NotFound(f"no announcement {announcement_id!r}", code="announcement.unknown")
        self._proposals += 1
        pid = f"p-{self._proposals}"
        staging = self.state_dir / "staging" / pid
        try:
            return self._judge(Proposal(hive, pid, contract_hash(clean), announcement_id), staging, clean)
        finally:
            shutil.rmtree(staging, ignore_errors=True)  # whatever was not moved to contracts/ or pending/

    def _lint(self, p: Proposal, staging: Path, files: dict[str, bytes]) -> tuple[Contract | None, tuple[Problem, ...]]:
        """Lint the proposal, in memory unless it has a ``.proto`` (protoc and the gRPC check read files).

        In memory, the files stand for their final directory ``contracts/<name>/<version>`` (name and version
        read off the manifest's text), so an accepted contract is the very object later proposals are
        checked against. If that guess is wrong (a manifest only YAML reads right), they stand for the
        staging directory instead, as on disk: the directory's name must never decide a verdict.
        """
        if any(name.lower().endswith(".proto") for name in files):
            write_tree(staging, files)
            contract, problems = lint_contract(staging)
            return contract, tuple(relocate(x, staging) for x in problems)
        p.files = files
        name, version = peek(files)
        directory = self.workspace_root / "contracts" / name / str(version)
        if not CONTRACT_NAME.match(name):
            directory = staging
        contract, problems = lint_contract(directory, files=files)
        misnamed = contract is not None and (contract.name, contract.version) != (name, version)
        if directory != staging and (misnamed or any(x.code == "manifest.version_mismatch" for x in problems)):
            directory = staging
            contract, problems = lint_contract(directory, files=files)
        return contract, tuple(relocate(x, directory) for x in problems)

    def _judge(self, p: Proposal, staging: Path, files: dict[str, bytes]) -> ProposalOutcome:
        hive, announcement_id = p.hive, p.announcement_id
        contract, problems = self._lint(p, staging, files)
        if contract is None:
            p.name, p.version = peek(files)
            return self._verdict(
                p,
                status="rejected",
                code="contract.invalid",
                problems=problems,
                message=f"the contract does not lint: {len(problems)} problem(s), first: {problems[0].message}",
            )
        name, version = p.name, p.version = contract.name, contract.version
        if contract.provider != hive:
            raise PermissionDenied(
                f"hive {hive!r} cannot propose {name} {version}: its contract.yaml names "
                f"provider {contract.provider!r}",
                code="auth.not_provider",
                location=Location(file="contract.yaml", pointer="/provider"),
                hint="a hive proposes only the contracts it provides",
            )
        if announcement_id is not None and self._announcements[announcement_id].contract != name:
            raise InputError(
                f"announcement {announcement_id} asks for contract "
                f"{self._announcements[announcement_id].contract!r}, not {name!r}",
                code="announcement.mismatch",
            )
        early = self._settled(p)
        return early if early is not None else self._against_accepted(p, contract)

    def _against_accepted(self, p: Proposal, contract: Contract) -> ProposalOutcome:
        """Check ``contract`` against the accepted version its semver is measured from, then decide."""
        name, version = contract.name, contract.version
        entries = self._lock.versions(name)
        same_line = [e for e in entries if version_line(e.version) == version_line(version)]
        if not same_line and any(e.version > version for e in entries):
            newest = entries[-1].version
            return self._verdict(
                p,
                status="rejected",
                code="proposal.version_order",
                message=f"{name} {version} would start a line below the newest accepted "
                f"version {newest}: only newer lines can be added",
            )
        base_entry = same_line[-1] if same_line else (entries[-1] if entries else None)
        check: ContractCheck | None = None
        if base_entry is not None:
            base = self._contract(name, base_entry.version)  # first: loading it is what detects a late edit
            tampered = self._tampered.get((name, base_entry.version))
            if tampered is not None:
                return self._verdict(
                    p,
                    status="rejected",
                    code="lock.tampered",
                    problems=(tampered,),
                    message=f"cannot check against {name} {base_entry.version}: {tampered.message}",
                )
            if base is None:
                return self._verdict(
                    p,
                    status="rejected",
                    code="lock.tampered",
                    message=f"the accepted {name} {base_entry.version} no "
                    "longer loads; restore it from version control",
                )
            check = check_contract(contract, base)
            if not check.semver_ok:
                return self._dishonest(p, check)
        return self._decide(p, contract, check, entries)

    def _settled(self, p: Proposal) -> ProposalOutcome | None:
        """The verdict for a version the root already knows (accepted or pending), else None."""
        name, version, digest = p.name, p.version, p.digest
        accepted = self._lock.get(name, version)
        if accepted is not None:
            if accepted.hash == digest:
                return self._verdict(
                    p,
                    status="accepted",
                    code="proposal.unchanged",
                    message=f"{name} {version} is already accepted with this content",
                    quiet=True,
                )
            return self._verdict(
                p,
                status="rejected",
                code="proposal.immutable",
                message=f"{name} {version} is already accepted with other content "
                f"({accepted.hash}); accepted versions are immutable: propose a new version",
            )
        for approval in self._approvals.values():
            if approval.status == "pending" and approval.contract == name and approval.version == version:
                if approval.hash == digest:
                    return self._verdict(
                        p,
                        status="pending",
                        code=approval.reason,
                        check=approval.check,
                        quiet=True,
                        message=f"{name} {version} already waits for approval as {approval.id}",
                    )
                return self._verdict(
                    p,
                    status="rejected",
                    code="proposal.pending_exists",
                    message=f"{name} {version} already waits for approval ({approval.id}) with "
                    "other content: have it rejected first, or propose another version",
                )
        return None

    def _dishonest(self, p: Proposal, check: ContractCheck) -> ProposalOutcome:
        if check.new_version <= check.old_version:
            code = "proposal.version_order"
            message = (
                f"{p.name} {p.version} is not newer than the accepted {check.old_version}; "
                f"propose {check.suggested_version()} or later"
            )
        else:
            code = "proposal.semver"
            offending = "; ".join(f"{part}: {c.message} [{c.code}] at {c.path or '/'}" for part, c in check.offending())
            old = check.old_version
            message = (
                f"{p.name} {p.version} is {old.describe_bump(check.actual_bump)} from {old} "
                f"but the changes need {old.describe_bump(check.required_bump)} "
                f"(propose {check.suggested_version()}): {offending}"
            )
        return self._verdict(p, status="rejected", code=code, message=message, check=check.to_dict())

    def _decide(
        self, p: Proposal, contract: Contract, check: ContractCheck | None, entries: list[LockEntry]
    ) -> ProposalOutcome:
        name, version, hive = contract.name, contract.version, p.hive
        check_dict = check.to_dict() if check is not None else None
        reason, message = "", ""
        unsatisfied = self._left_unsatisfied(contract)
        if entries and entries[-1].provider != hive:
            reason = "proposal.pending_provider"
            message = (
                f"{name} is provided by {entries[-1].provider!r}; {hive!r} taking it over needs a human's approval"
            )
        elif check is not None and check.required_bump is Bump.MAJOR:
            reason = "proposal.pending_breaking"
            changes = "; ".join(f"{part}: {c.message} [{c.code}]" for part, c in check.breaking)
            message = f"{name} {version} breaks {check.old_version}: {changes}"
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

    def _apply_received(self, data: dict[str, Any], frame: Frame, replaying: bool) -> None:
        number = data["proposal_id"].rpartition("-")[2]
        if number.isdigit():
            self._proposals = max(self._proposals, int(number))
