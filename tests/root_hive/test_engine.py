"""The negotiation engine against real workspaces, real lint and real compatibility checks."""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import cast

import pytest

from subhive.errors import ContractInvalid, InputError
from subhive.root_hive import (
    Conflict,
    Frame,
    Lock,
    NotFound,
    PermissionDenied,
    RootHive,
    Unauthenticated,
    contract_hash,
)
from subhive.semver import Version

from ._fixtures import orders_files


@pytest.fixture
def root(workspace: Path) -> RootHive:
    hive = RootHive.open(workspace)
    hive.register_hive("backend", kind="backend")
    hive.register_hive("web", kind="ui")
    return hive


def _kinds(root: RootHive, after: int) -> list[str]:
    return [f.kind for f in root.frames_since(after)]


def _published(workspace: Path, version: str) -> Path:
    return workspace / "contracts" / "orders" / version


# ------------------------------------------------------------------------------------------ registration
def test_a_registered_token_authenticates_its_hive(workspace: Path) -> None:
    root = RootHive.open(workspace)
    token = root.register_hive("db", kind="db").token
    assert root.authenticate(token) == "db"


def test_an_unknown_token_is_unauthenticated(root: RootHive) -> None:
    with pytest.raises(Unauthenticated):
        root.authenticate("not-a-token")


def test_registering_a_name_twice_is_a_conflict(root: RootHive) -> None:
    with pytest.raises(Conflict) as info:
        root.register_hive("backend")
    assert info.value.code == "hive.exists"


def test_rotating_a_token_retires_the_old_one(workspace: Path) -> None:
    root = RootHive.open(workspace)
    old = root.register_hive("db").token
    new = root.register_hive("db", rotate=True).token
    assert root.authenticate(new) == "db"
    with pytest.raises(Unauthenticated):
        root.authenticate(old)


def test_tokens_are_not_stored_in_clear(workspace: Path) -> None:
    root = RootHive.open(workspace)
    token = root.register_hive("db").token
    root.close()
    state = workspace / ".subhive" / "root"
    assert all(token.encode() not in p.read_bytes() for p in state.rglob("*") if p.is_file())


def test_a_bad_hive_name_is_input_error(root: RootHive) -> None:
    with pytest.raises(InputError):
        root.register_hive("Bad-Name")


def test_an_unknown_kind_is_input_error(root: RootHive) -> None:
    with pytest.raises(InputError) as info:
        root.register_hive("db", kind="database")
    assert info.value.code == "hive.kind"


def test_an_unregistered_parent_is_not_found(root: RootHive) -> None:
    with pytest.raises(NotFound):
        root.register_hive("db", parent="storage")


def test_admin_token_file_is_private_and_stable(workspace: Path) -> None:
    root = RootHive.open(workspace)
    token = root.admin_token()
    mode = stat.S_IMODE(os.stat(workspace / ".subhive" / "root" / "admin.token").st_mode)
    assert mode == 0o600
    root.close()
    assert RootHive.open(workspace).admin_token() == token


def test_the_admin_token_is_no_hive_token(root: RootHive) -> None:
    assert root.is_admin(root.admin_token())
    with pytest.raises(Unauthenticated):
        root.authenticate(root.admin_token())


def test_opening_outside_a_workspace_is_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        RootHive.open(tmp_path)
    assert info.value.code == "workspace.not_found"


# -------------------------------------------------------------------------------------------- proposals
def test_a_first_version_is_accepted_and_published_byte_for_byte(root: RootHive, workspace: Path) -> None:
    files = orders_files("1.0.0")
    outcome = root.propose("backend", files)
    assert (outcome.status, outcome.code) == ("accepted", "proposal.accepted")
    published = _published(workspace, "1.0.0")
    assert {p.name: p.read_bytes() for p in published.iterdir()} == files


def test_an_accepted_version_is_locked_with_its_hash(root: RootHive, workspace: Path) -> None:
    files = orders_files("1.0.0")
    root.propose("backend", files)
    entry = Lock.load(workspace).get("orders", Version.parse("1.0.0"))
    assert entry is not None
    assert (entry.hash, entry.provider) == (contract_hash(files), "backend")


def test_acceptance_emits_received_verdict_ready_in_order(root: RootHive) -> None:
    before = root.last_seq
    root.propose("backend", orders_files("1.0.0"))
    assert _kinds(root, before) == ["proposal_received", "verdict", "contract_ready"]


def test_a_compatible_minor_is_accepted(root: RootHive, workspace: Path) -> None:
    root.propose("backend", orders_files("1.0.0"))
    outcome = root.propose("backend", orders_files("1.1.0", note=True))  # an optional input property: additive
    assert outcome.status == "accepted"
    assert outcome.check is not None
    assert outcome.check["required_bump"] == "minor"
    assert _published(workspace, "1.1.0").is_dir()


def test_a_breaking_change_with_a_minor_bump_is_rejected_with_its_changes(root: RootHive, workspace: Path) -> None:
    root.propose("backend", orders_files("1.0.0"))
    outcome = root.propose("backend", orders_files("1.1.0", required=("id",)))  # a new required input: breaking
    assert (outcome.status, outcome.code) == ("rejected", "proposal.semver")
    assert "required.added" in outcome.message
    assert isinstance(outcome.error(), InputError)
    assert "required.added" in str(outcome.error().to_dict())  # type: ignore[union-attr]
    assert not _published(workspace, "1.1.0").exists()


def test_a_version_not_newer_than_its_line_is_rejected(root: RootHive) -> None:
    root.propose("backend", orders_files("1.1.0"))
    outcome = root.propose("backend", orders_files("1.0.5"))
    assert (outcome.status, outcome.code) == ("rejected", "proposal.version_order")


def test_a_contract_that_does_not_lint_is_rejected_naming_its_file(root: RootHive) -> None:
    outcome = root.propose("backend", orders_files("1.0.0", broken=True))
    assert (outcome.status, outcome.code) == ("rejected", "contract.invalid")
    assert outcome.problems
    assert all(p.location.file in (None, "contract.yaml", "missing.json") for p in outcome.problems)
    assert isinstance(outcome.error(), ContractInvalid)


def test_proposing_another_providers_contract_is_denied(root: RootHive, workspace: Path) -> None:
    with pytest.raises(PermissionDenied) as info:
        root.propose("web", orders_files("1.0.0"))  # contract.yaml says provider: backend
    assert info.value.code == "auth.not_provider"
    assert not _published(workspace, "1.0.0").exists()


def test_taking_over_a_contract_waits_for_a_human(root: RootHive) -> None:
    root.propose("backend", orders_files("1.0.0"))
    outcome = root.propose("web", orders_files("2.0.0", provider="web"))
    assert (outcome.status, outcome.code) == ("pending", "proposal.pending_provider")


def test_an_accepted_version_with_other_content_is_a_conflict(root: RootHive) -> None:
    root.propose("backend", orders_files("1.0.0"))
    outcome = root.propose("backend", orders_files("1.0.0", note=True))
    assert (outcome.status, outcome.code) == ("rejected", "proposal.immutable")
    assert isinstance(outcome.error(), Conflict)


def test_the_same_accepted_content_again_is_idempotent(root: RootHive) -> None:
    root.propose("backend", orders_files("1.0.0"))
    before = root.last_seq
    outcome = root.propose("backend", orders_files("1.0.0"))
    assert (outcome.status, outcome.code) == ("accepted", "proposal.unchanged")
    assert _kinds(root, before) == ["verdict"]


@pytest.mark.parametrize(
    "files",
    [
        {},
        {"../contract.yaml": b""},
        {"/abs.json": b"", "contract.yaml": b""},
        {"in.json": b"{}"},
        {"contract.yaml": "text"},
    ],
    ids=["empty", "dotdot", "absolute", "no-manifest", "str-content"],
)
def test_malformed_file_maps_are_input_errors(root: RootHive, files: dict[str, bytes]) -> None:
    with pytest.raises(InputError):
        root.propose("backend", files)


def test_an_unregistered_proposer_is_not_found(root: RootHive) -> None:
    with pytest.raises(NotFound):
        root.propose("ghost", orders_files("1.0.0"))


# ------------------------------------------------------------------------------------------ approvals
@pytest.fixture
def pending(root: RootHive) -> str:
    root.declare_requirement("web", "orders", "^1.0")
    root.propose("backend", orders_files("1.0.0"))
    outcome = root.propose("backend", orders_files("2.0.0", required=("id",)))
    assert (outcome.status, outcome.code) == ("pending", "proposal.pending_breaking")
    return outcome.id


def test_a_breaking_major_is_pending_and_not_published(root: RootHive, workspace: Path, pending: str) -> None:
    assert not _published(workspace, "2.0.0").exists()
    assert [a.id for a in root.approvals()] == [pending]
    assert root.approval(pending).version == Version.parse("2.0.0")
    assert Lock.load(workspace).get("orders", Version.parse("2.0.0")) is None


def test_pending_emits_a_pending_approval_frame(root: RootHive, pending: str) -> None:
    frame = root.frames_since(0)[-1]
    assert (frame.kind, frame.data["approval_id"]) == ("pending_approval", pending)


def test_a_hive_cannot_approve(root: RootHive, workspace: Path, pending: str) -> None:
    hive_token = root.register_hive("rogue").token
    with pytest.raises(PermissionDenied):
        root.approve(pending, admin_token=hive_token)
    assert root.approval(pending).status == "pending"


def test_approval_publishes_the_new_major_beside_the_old(root: RootHive, workspace: Path, pending: str) -> None:
    outcome = root.approve(pending, admin_token=root.admin_token(), note="ship it")
    assert outcome.status == "accepted"
    assert _published(workspace, "1.0.0").is_dir()
    assert _published(workspace, "2.0.0").is_dir()
    versions = {str(v.version): v.status for v in root.contracts()[0].versions}
    assert versions == {"1.0.0": "active", "2.0.0": "active"}  # web's ^1.0 still only matches 1.0.0
    assert root.approval(pending).status == "approved"


def test_the_old_major_retires_when_no_consumer_needs_it(root: RootHive, pending: str) -> None:
    root.approve(pending, admin_token=root.admin_token())
    root.declare_requirement("web", "orders", "^2.0")
    versions = {str(v.version): v.status for v in root.contracts()[0].versions}
    assert versions == {"1.0.0": "retired", "2.0.0": "active"}


def test_rejection_publishes_nothing(root: RootHive, workspace: Path, pending: str) -> None:
    approval = root.reject(pending, admin_token=root.admin_token(), reason="keep id optional")
    assert (approval.status, approval.decision) == ("rejected", "keep id optional")
    assert not _published(workspace, "2.0.0").exists()
    assert not (workspace / ".subhive" / "root" / "pending" / pending).exists()


def test_deciding_twice_is_a_conflict(root: RootHive, pending: str) -> None:
    root.reject(pending, admin_token=root.admin_token(), reason="no")
    with pytest.raises(Conflict):
        root.approve(pending, admin_token=root.admin_token())


def test_an_unknown_approval_is_not_found(root: RootHive) -> None:
    with pytest.raises(NotFound):
        root.approval("p-99")


def test_a_rejection_needs_a_reason(root: RootHive, pending: str) -> None:
    with pytest.raises(InputError):
        root.reject(pending, admin_token=root.admin_token(), reason=" ")


def test_a_pending_approval_survives_reopening(workspace: Path, root: RootHive, pending: str) -> None:
    root.close()
    again = RootHive.open(workspace)
    assert [a.id for a in again.approvals()] == [pending]
    again.approve(pending, admin_token=again.admin_token())
    assert _published(workspace, "2.0.0").is_dir()


def test_dropping_what_a_consumer_uses_waits_for_a_human(root: RootHive) -> None:
    root.propose("backend", orders_files("1.0.0", note=True, open_input=True))
    root.declare_requirement("web", "orders", "^1.0", fields=["place_order.note"])
    # With an open input, no longer declaring "note" accepts more requests: compatible, a minor bump is honest.
    outcome = root.propose("backend", orders_files("1.1.0", open_input=True))
    assert (outcome.status, outcome.code) == ("pending", "proposal.pending_consumers")
    assert "place_order.note" in outcome.message


# ------------------------------------------------------------------------------------------ Contract Net
def test_an_unmet_requirement_is_announced(root: RootHive) -> None:
    outcome = root.declare_requirement("web", "orders", "^1.0")
    assert outcome.satisfied_by is None
    assert outcome.announcement_id is not None
    assert root.frames_since(0)[-1].kind == "need_announced"


def test_a_bid_meeting_the_need_is_awarded(root: RootHive) -> None:
    need = root.declare_requirement("web", "orders", "^1.0", operations=["place_order"]).announcement_id
    outcome = root.propose("backend", orders_files("1.0.0"), announcement_id=need)
    assert outcome.awarded == (need,)
    assert root.announcements("awarded")[0]["id"] == need
    web = next(h for h in root.status() if h.name == "web")
    assert web.consumes[0]["satisfied_by"] == "1.0.0"


def test_a_better_bid_accepted_after_the_award_takes_the_consumer_over(root: RootHive, workspace: Path) -> None:
    need = root.declare_requirement("web", "orders", "^1.0").announcement_id
    assert root.propose("backend", orders_files("1.0.0"), announcement_id=need).awarded == (need,)
    later = root.propose("backend", orders_files("1.1.0", note=True))
    assert later.status == "accepted"
    web = next(h for h in root.status() if h.name == "web")
    assert web.consumes[0]["satisfied_by"] == "1.1.0"
    lock = Lock.load(workspace)
    assert lock.get("orders", Version.parse("1.1.0")).consumers == {"web": "^1.0"}  # type: ignore[union-attr]
    assert lock.get("orders", Version.parse("1.0.0")).consumers == {}  # type: ignore[union-attr]


def test_a_bid_outside_the_range_is_not_awarded(root: RootHive) -> None:
    need = root.declare_requirement("web", "orders", "^2.0").announcement_id
    outcome = root.propose("backend", orders_files("1.0.0"), announcement_id=need)
    assert (outcome.status, outcome.awarded) == ("accepted", ())
    assert [a["id"] for a in root.announcements()] == [need]


def test_a_requirement_met_by_an_accepted_version_is_satisfied(root: RootHive, workspace: Path) -> None:
    root.propose("backend", orders_files("1.0.0"))
    root.propose("backend", orders_files("1.1.0", note=True))
    outcome = root.declare_requirement("web", "orders", "^1.0", fields=["place_order.note"])
    assert (outcome.satisfied_by, outcome.announcement_id) == (Version.parse("1.1.0"), None)
    assert Lock.load(workspace).get("orders", Version.parse("1.1.0")).consumers == {"web": "^1.0"}  # type: ignore[union-attr]


def test_a_requirement_for_a_missing_field_is_not_satisfied(root: RootHive) -> None:
    root.propose("backend", orders_files("1.0.0"))
    assert root.declare_requirement("web", "orders", "^1.0", fields=["place_order.note"]).satisfied_by is None


def test_a_bad_range_is_input_error(root: RootHive) -> None:
    with pytest.raises(InputError) as info:
        root.declare_requirement("web", "orders", ">=2.0.0, <1.0.0")
    assert info.value.code == "requirement.range"


# ---------------------------------------------------------------------------------------- views, frames
def test_status_is_a_tree(workspace: Path) -> None:
    root = RootHive.open(workspace)
    root.register_hive("backend", kind="backend")
    root.register_hive("api", parent="backend")
    root.propose("backend", orders_files("1.0.0"))
    tree = [h.to_dict() for h in root.status()]
    assert tree == [
        {
            "name": "backend",
            "kind": "backend",
            "parent": "root",
            "provides": ["orders"],
            "consumes": [],
            "endpoints": [],
            "children": [
                {
                    "name": "api",
                    "kind": "custom",
                    "parent": "backend",
                    "provides": [],
                    "consumes": [],
                    "endpoints": [],
                    "children": [],
                }
            ],
        }
    ]


def test_frames_resume_after_a_token(root: RootHive) -> None:
    root.propose("backend", orders_files("1.0.0"))
    everything = root.frames_since(0)
    assert [f.seq for f in everything] == list(range(1, len(everything) + 1))
    assert root.frames_since(3) == everything[3:]


def test_a_resume_token_beyond_the_log_is_a_conflict(root: RootHive) -> None:
    with pytest.raises(Conflict):
        root.frames_since(root.last_seq + 1)


def test_frames_never_carry_token_hashes(root: RootHive) -> None:
    registered = [f for f in root.frames_since(0) if f.kind == "hive_registered"]
    assert registered
    assert all("token" not in str(f.to_dict()) for f in registered)


def test_watch_gives_backlog_then_live_frames_without_gap(root: RootHive) -> None:
    async def run() -> list[int]:
        seen: list[int] = []
        # An async generator, closed below; RootHive.watch is annotated AsyncIterator, which has no aclose.
        watcher = cast(AsyncGenerator[Frame, None], root.watch(after=1))
        seen.append((await anext(watcher)).seq)  # backlog: frame 2
        root.propose("backend", orders_files("1.0.0"))  # three live frames
        seen.extend([(await anext(watcher)).seq for _ in range(3)])
        await watcher.aclose()
        return seen

    assert asyncio.run(run()) == [2, 3, 4, 5]


# ------------------------------------------------------------------------------------------ replay
def test_reopening_rebuilds_the_same_state(workspace: Path, root: RootHive) -> None:
    root.declare_requirement("web", "orders", "^1.0")
    root.propose("backend", orders_files("1.0.0"))
    root.propose("backend", orders_files("2.0.0", required=("id",)))
    views = (
        [c.to_dict() for c in root.contracts()],
        [a.to_dict() for a in root.approvals(None)],
        [h.to_dict() for h in root.status()],
        root.announcements(None),
    )
    root.close()
    again = RootHive.open(workspace)
    assert (
        [c.to_dict() for c in again.contracts()],
        [a.to_dict() for a in again.approvals(None)],
        [h.to_dict() for h in again.status()],
        again.announcements(None),
    ) == views


def test_a_torn_last_record_is_dropped_and_counted(workspace: Path, root: RootHive) -> None:
    seq = root.last_seq
    root.close()
    with open(workspace / ".subhive" / "root" / "events.log", "ab") as log:
        log.write(b'1234abcd {"seq": 99, "ki')
    again = RootHive.open(workspace)
    assert (again.recovered_records, again.last_seq) == (1, seq)
    again.register_hive("db")  # appends cleanly after the cut
    again.close()
    assert RootHive.open(workspace).recovered_records == 0


def test_a_damaged_record_before_good_ones_refuses_to_open(workspace: Path, root: RootHive) -> None:
    root.close()
    path = workspace / ".subhive" / "root" / "events.log"
    lines = path.read_bytes().split(b"\n")
    lines[0] = lines[0].replace(b"backend", b"backenX")
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(InputError) as info:
        RootHive.open(workspace)
    assert (info.value.code, info.value.location.line) == ("log.corrupt", 1)


def test_a_tampered_version_is_reported_and_not_built_on(workspace: Path, root: RootHive) -> None:
    root.propose("backend", orders_files("1.0.0"))
    root.close()
    (_published(workspace, "1.0.0") / "in.json").write_text('{"type": "object"}')
    again = RootHive.open(workspace)
    assert [p.code for p in again.verify()] == ["lock.tampered"]
    assert again.contracts()[0].versions[0].intact is False
    outcome = again.propose("backend", orders_files("1.1.0", note=True))
    assert (outcome.status, outcome.code) == ("rejected", "lock.tampered")
    assert again.declare_requirement("web", "orders", "^1.0").satisfied_by is None


def test_a_version_edited_while_the_root_runs_is_tampered_when_first_read(workspace: Path, root: RootHive) -> None:
    root.propose("backend", orders_files("1.0.0"))
    root.close()
    again = RootHive.open(workspace)  # opens clean: 1.0.0 is intact, and not read yet
    assert again.verify() == []
    (_published(workspace, "1.0.0") / "in.json").write_text('{"type": "object"}')
    outcome = again.propose("backend", orders_files("1.1.0", note=True))
    assert (outcome.status, outcome.code) == ("rejected", "lock.tampered")
    assert "1.0.0" in outcome.message
    assert again.contracts()[0].versions[0].intact is False


def test_a_lost_lock_is_rebuilt_from_the_log(workspace: Path, root: RootHive) -> None:
    root.propose("backend", orders_files("1.0.0"))
    expected = (workspace / "contracts.lock").read_bytes()
    root.close()
    (workspace / "contracts.lock").unlink()
    RootHive.open(workspace).close()
    assert (workspace / "contracts.lock").read_bytes() == expected


# ------------------------------------------------------------------------------------- how files are handled
CONTRACT_FIXTURES = Path(__file__).parents[1] / "contract" / "fixtures"


def _files_of(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def _left_in_staging(workspace: Path) -> list[Path]:
    staging = workspace / ".subhive" / "root" / "staging"
    return sorted(staging.iterdir()) if staging.is_dir() else []


def test_a_rejected_proposal_leaves_no_file_behind(root: RootHive, workspace: Path) -> None:
    files = orders_files("1.0.0")
    files["in.json"] = b'{\n  "type": "object",\n  "properties": {"id": {"type": 12}}\n}'
    outcome = root.propose("backend", files)
    assert (outcome.status, outcome.code) == ("rejected", "contract.invalid")
    assert [(p.code, p.location.file, p.location.line) for p in outcome.problems] == [("schema.meta", "in.json", 3)]
    assert not (workspace / "contracts" / "orders").exists()
    assert _left_in_staging(workspace) == []


def test_problems_in_subdirectories_name_the_file_as_proposed(root: RootHive) -> None:
    files = orders_files("1.0.0")
    files["contract.yaml"] = files["contract.yaml"].replace(b"in.json", b"schemas/in.json")
    files["schemas/in.json"] = b'{"type": "object",\n "properties": {"id": {"type": "string",}}}'
    outcome = root.propose("backend", files)
    assert [(p.code, p.location.file, p.location.line) for p in outcome.problems] == [
        ("input.json", "schemas/in.json", 2)
    ]


def test_a_manifest_read_right_only_by_yaml_is_published_where_it_says(root: RootHive, workspace: Path) -> None:
    # The version line carries a comment: the version is still 1.0.0, in a directory named 1.0.0.
    files = orders_files("1.0.0")
    files["contract.yaml"] = files["contract.yaml"].replace(b"version: 1.0.0", b"version: 1.0.0  # first")
    outcome = root.propose("backend", files)
    assert (outcome.status, outcome.code) == ("accepted", "proposal.accepted")
    assert _files_of(_published(workspace, "1.0.0")) == files
    again = root.propose("backend", orders_files("1.1.0", note=True))
    assert (again.status, again.check and again.check["old_version"]) == ("accepted", "1.0.0")


def test_proposals_are_checked_against_the_accepted_content(root: RootHive, workspace: Path) -> None:
    # The lock names 1.0.0 by the hash of what was accepted: that is the base, even if its files are
    # overwritten on disk afterwards (an open input there would make 1.1.0's closed input breaking).
    root.propose("backend", orders_files("1.0.0"))
    (_published(workspace, "1.0.0") / "in.json").write_text('{"type": "object"}')
    outcome = root.propose("backend", orders_files("1.1.0", note=True))
    assert (outcome.status, outcome.code) == ("accepted", "proposal.accepted")
    assert outcome.check is not None
    assert outcome.check["required_bump"] == "minor"


def _grpc_files(version: str) -> dict[str, bytes]:
    files = _files_of(CONTRACT_FIXTURES / "valid_grpc" / "1.0.0")
    files["contract.yaml"] = files["contract.yaml"].replace(b"version: 1.0.0", f"version: {version}".encode())
    return files


def test_a_grpc_contract_is_compiled_published_and_checked(root: RootHive, workspace: Path) -> None:
    first = root.propose("backend", _grpc_files("1.0.0"))
    assert (first.status, first.code) == ("accepted", "proposal.accepted")
    assert _files_of(_published(workspace, "1.0.0")) == _grpc_files("1.0.0")
    second = root.propose("backend", _grpc_files("1.0.1"))  # the same service: nothing changed
    assert (second.status, second.code) == ("accepted", "proposal.accepted")
    assert second.check is not None
    assert second.check["required_bump"] == "none"  # identical protos and schemas: no change at all
    broken = _files_of(CONTRACT_FIXTURES / "proto_does_not_compile")
    broken["contract.yaml"] = broken["contract.yaml"].replace(b"version: 1.0.0", b"version: 1.1.0")
    outcome = root.propose("backend", broken)
    assert [(p.code, p.location.file, p.location.line) for p in outcome.problems] == [
        ("proto.compile", "orders.proto", 4)
    ]
    assert _left_in_staging(workspace) == []
