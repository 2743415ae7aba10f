"""WorkspaceRoot: the same answers and errors from a running root (real gRPC on 127.0.0.1) and in-process,
how it finds the root (an explicit address must answer, a stale service.json does not count), which token it
calls with, and that an in-process engine's frames reach the listener handed in."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from subhive.errors import InputError
from subhive.root_hive import (
    LOCK_FILE,
    TOKENS_DIR,
    AlreadyDecided,
    Conflict,
    Frame,
    Lock,
    LockInconsistent,
    ProposalOutcome,
    RootHive,
    RootServer,
    RootUnavailable,
    Unauthenticated,
    WorkspaceRoot,
    contract_files,
)
from subhive.semver import Version
from subhive.workspace import Kind, new_subhive
from tests.kit import run
from tests.root_hive._fixtures import orders_files

REPO = Path(__file__).resolve().parents[2]
ORDERS = REPO / "contracts" / "orders"
MODES = ["in-process", "running"]


@pytest.fixture
def ws(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """backend (provides orders) and ui (needs orders ^1.0) registered through the engine; no token files."""
    monkeypatch.delenv("SUBHIVE_ROOT", raising=False)
    monkeypatch.delenv("SUBHIVE_ROOT_CA", raising=False)
    with RootHive.open(workspace) as root:
        root.register_hive("backend", kind="backend")
        root.register_hive("ui", kind="ui")
        root.declare_requirement("ui", "orders", "^1.0")
    return workspace


@contextlib.asynccontextmanager
async def reach(ws: Path, mode: str, **options: Any) -> AsyncIterator[WorkspaceRoot]:
    """The workspace's root as ``mode`` has it: a RootServer serving it, or nothing running."""
    if mode == "running":
        async with await RootServer.start(ws, codegen=False) as server, WorkspaceRoot(ws, **options) as root:
            assert root.address == server.address
            yield root
    else:
        async with WorkspaceRoot(ws, **options) as root:
            assert root.address is None
            yield root


@pytest.mark.parametrize("mode", MODES)
def test_a_proposal_an_approval_and_the_views_answer_the_same_either_way(ws: Path, mode: str) -> None:
    async def scenario() -> None:
        async with reach(ws, mode) as root:
            accepted = await root.propose(contract_files(ORDERS / "1.0.0"), provider="backend")
            assert (accepted.status, accepted.code, accepted.version) == (
                "accepted",
                "proposal.accepted",
                Version(1, 0, 0),
            )
            pending = await root.propose(contract_files(ORDERS / "2.0.0"), provider="backend")
            assert (pending.status, pending.code) == ("pending", "proposal.pending_breaking")
            assert [a.id for a in await root.approvals()] == [pending.id]
            assert (await root.approval(pending.id)).contract == "orders"

            approved = await root.approve(pending.id, note="ui moves in June")
            assert isinstance(approved, ProposalOutcome)
            assert (approved.status, approved.version) == ("accepted", Version(2, 0, 0))
            again = await root.approve(pending.id)
            assert isinstance(again, AlreadyDecided)
            assert (again.approval.status, again.approval.decision) == ("approved", "ui moves in June")
            with pytest.raises(Conflict) as refused:
                await root.reject(pending.id, reason="too late")
            assert refused.value.code == "approval.decided"
            assert f"{pending.id} was already approved on " in refused.value.message

            [orders] = await root.contracts("orders")
            assert [(str(v.version), v.status, v.consumers) for v in orders.versions] == [
                ("1.0.0", "active", {"ui": "^1.0"}),
                ("2.0.0", "active", {}),
            ]
            assert await root.contracts("nothing") == []
            tree = {h.name: h for h in await root.status()}
            assert tree["backend"].provides == ["orders"]
            assert tree["ui"].consumes[0]["satisfied_by"] == "1.0.0"
            assert await root.approvals() == []
            assert await root.lock_problems() == []

    run(scenario())
    assert [(e.name, str(e.version)) for e in Lock.load(ws)] == [("orders", "1.0.0"), ("orders", "2.0.0")]


@pytest.mark.parametrize("mode", MODES)
def test_refusals_are_the_same_errors_either_way(ws: Path, mode: str) -> None:
    async def scenario() -> None:
        async with reach(ws, mode) as root:
            await root.propose(orders_files("1.0.0"), provider="backend")
            with pytest.raises(InputError) as dishonest:  # a new required input field is not a minor change
                await root.propose(orders_files("1.1.0", required=("id",)), provider="backend")
            assert dishonest.value.code == "proposal.semver"
            with pytest.raises(Conflict) as immutable:
                await root.propose(orders_files("1.0.0", description="Other."), provider="backend")
            assert immutable.value.code == "proposal.immutable"
            rejected = await root.propose(orders_files("2.0.0", required=("id",)), provider="backend")
            assert await root.reject(rejected.id, reason="keep id optional") == await root.approval(rejected.id)
            assert isinstance(await root.reject(rejected.id, reason="again"), AlreadyDecided)
            with pytest.raises(Conflict, match="already rejected"):
                await root.approve(rejected.id)

    run(scenario())


@pytest.mark.parametrize("mode", MODES)
def test_nothing_is_proposed_while_the_lock_was_edited_by_hand(ws: Path, mode: str) -> None:
    async def accept_one() -> None:
        async with reach(ws, "in-process") as root:
            await root.propose(orders_files("1.0.0"), provider="backend")

    run(accept_one())
    lock_file = ws / LOCK_FILE
    entry = Lock.load(ws).get("orders", Version(1, 0, 0))
    assert entry is not None
    lock_file.write_text(lock_file.read_text().replace(entry.hash, "sha256:" + "0" * 64))

    async def scenario() -> None:
        async with reach(ws, mode) as root:
            assert [p.code for p in await root.lock_problems()] == ["lock.hash_edited"]
            with pytest.raises(LockInconsistent):
                await root.propose(orders_files("1.1.0", note=True), provider="backend")
            assert [c.name for c in await root.contracts()] == ["orders"]
            assert [str(v.version) for v in (await root.contracts())[0].versions] == ["1.0.0"]

    run(scenario())


def test_an_explicit_address_must_answer_and_a_stale_service_file_does_not_count(ws: Path) -> None:
    async def scenario() -> None:
        with pytest.raises(RootUnavailable) as unavailable:
            async with WorkspaceRoot(ws, address="127.0.0.1:1"):
                pass
        assert "127.0.0.1:1" in unavailable.value.message
        # A root killed with SIGKILL leaves service.json behind: the workspace's state is used instead.
        (ws / ".subhive" / "root" / "service.json").write_text(json.dumps({"address": "127.0.0.1:1"}))
        async with WorkspaceRoot(ws) as root:
            assert root.address is None
            assert [h.name for h in await root.status()] == ["backend", "ui"]

    run(scenario())


def test_running_only_refuses_without_a_root_and_leaves_the_state_alone(ws: Path) -> None:
    log = ws / ".subhive" / "root" / "events.log"
    before = log.read_bytes()

    async def scenario() -> None:
        with pytest.raises(RootUnavailable, match="no root hive runs"):
            async with WorkspaceRoot(ws, running_only=True):
                pass
        async with WorkspaceRoot(ws) as root:
            with pytest.raises(RootUnavailable):
                async for _ in root.watch():
                    pass

    run(scenario())
    assert log.read_bytes() == before


def test_a_running_root_streams_what_was_proposed(ws: Path) -> None:
    async def scenario() -> list[str]:
        async with reach(ws, "running") as root:
            await root.propose(orders_files("1.0.0"), provider="backend")
            kinds = []
            async for frame in root.watch(after=0):
                kinds.append(frame.kind)
                if frame.kind == "contract_ready":
                    return kinds
        raise AssertionError("the watch ended before the contract was ready")

    kinds = run(scenario())
    assert kinds.count("hive_registered") == 2
    assert kinds[-3:] == ["proposal_received", "verdict", "contract_ready"]
    assert kinds.count("need_announced") == 1  # ui's need, before anything met it


def test_a_running_root_is_called_with_the_providers_token_file_else_the_admin_on_its_behalf(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SUBHIVE_ROOT", raising=False)
    new_subhive("backend", Kind.backend, start=workspace)  # the root registers it and writes its token file
    with RootHive.open(workspace):
        pass
    tokens = workspace / TOKENS_DIR
    ws = workspace
    (tokens / "backend.token").write_text("not-a-token\n")

    async def scenario() -> None:
        async with reach(ws, "running") as root:
            with pytest.raises(Unauthenticated):  # the file is used, so its stale token is refused
                await root.propose(orders_files("1.0.0"), provider="backend")
            (tokens / "backend.token").unlink()
            outcome = await root.propose(orders_files("1.0.0"), provider="backend")  # admin, for backend
            assert outcome.status == "accepted"
        (tokens / "backend.token").write_text("not-a-token\n")
        async with reach(ws, "in-process") as root:  # in-process the workspace's files are the authority
            assert (await root.propose(orders_files("1.1.0", note=True), provider="backend")).status == "accepted"

    run(scenario())


class Recorder:
    """A FrameListener that records what it is given and when it is flushed."""

    def __init__(self) -> None:
        self.kinds: list[str] = []
        self.flushed_after: list[list[str]] = []

    def __call__(self, frame: Frame) -> None:
        self.kinds.append(frame.kind)

    def flush(self) -> None:
        self.flushed_after.append(list(self.kinds))


def test_an_in_process_engine_hands_its_frames_to_the_listener_and_flushes_it_before_answering(ws: Path) -> None:
    made: list[tuple[Path, Recorder]] = []

    def listener(workspace: Path) -> Recorder:
        made.append((workspace, Recorder()))
        return made[-1][1]

    async def scenario() -> None:
        async with WorkspaceRoot(ws / "contracts", listener=listener) as root:  # found from a subdirectory
            assert root.workspace == ws
            await root.propose(orders_files("1.0.0"), provider="backend")
            [(where, recorder)] = made
            assert where == ws
            # ui's open need for orders ^1.0 is awarded in the same commit
            assert recorder.flushed_after == [["proposal_received", "verdict", "contract_ready", "need_awarded"]]

    run(scenario())
