"""Tool calls an agent asks a person about (approvals of kind ``tool``): in the engine, durable across a
restart, and over the root's gRPC service with the hive asking for itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from subhive.errors import InputError
from subhive.root_hive import NotFound, PermissionDenied, RootHive
from subhive.root_hive._client import RootClient, admin_token_of
from subhive.root_hive._service import RootServer
from tests.kit import run

ARGUMENTS = '{"key": "plans.t1", "value": {"steps": ["a"]}, "expected_revision": 0}'


@pytest.fixture
def root(workspace: Path) -> RootHive:
    hive = RootHive.open(workspace)
    hive.register_hive("notes")
    return hive


def test_a_call_becomes_a_pending_tool_approval_with_its_exact_arguments(root: RootHive) -> None:
    approval = root.propose_tool_call(
        "notes", agent="helper", tool="board_write", arguments=ARGUMENTS, turn="abc123", call_id="call_1"
    )
    assert (approval.id, approval.kind, approval.status, approval.reason) == ("t-1", "tool", "pending", "tool.ask")
    assert approval.proposer == "notes"
    assert approval.tool_call is not None
    assert approval.tool_call.arguments == ARGUMENTS
    assert [a.id for a in root.approvals(kind="tool")] == ["t-1"]
    assert root.approvals(kind="repair") == []
    # Each call is its own approval: a person approves exactly what runs.
    assert root.propose_tool_call("notes", agent="helper", tool="board_write", arguments=ARGUMENTS).id == "t-2"
    frame = root.frames_since(0)[-1]
    assert frame.kind == "tool_call_proposed"
    assert "arguments" not in frame.data  # watchers see the size, not the data
    assert frame.data["arguments_bytes"] == len(ARGUMENTS)


def test_approving_and_rejecting(root: RootHive) -> None:
    first = root.propose_tool_call("notes", agent="helper", tool="board_write", arguments="{}")
    second = root.propose_tool_call("notes", agent="helper", tool="search", arguments="{}")
    outcome = root.approve(first.id, admin_token=root.admin_token(), note="fine")
    assert (outcome.kind, outcome.code, outcome.status) == ("tool", "tool_call.approved", "accepted")
    assert root.approval(first.id).status == "approved"
    rejected = root.reject(second.id, admin_token=root.admin_token(), reason="not that file")
    assert (rejected.status, rejected.decision) == ("rejected", "not that file")


def test_tool_approvals_survive_a_restart(workspace: Path, root: RootHive) -> None:
    root.propose_tool_call("notes", agent="helper", tool="board_write", arguments=ARGUMENTS, turn="t9")
    root.close()
    again = RootHive.open(workspace)
    try:
        approval = again.approval("t-1")
        assert approval.tool_call is not None
        assert (approval.tool_call.arguments, approval.tool_call.turn) == (ARGUMENTS, "t9")
        assert again.propose_tool_call("notes", agent="helper", tool="search", arguments="{}").id == "t-2"
    finally:
        again.close()


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        ({"agent": "no spaces"}, "tool_call.agent"),
        ({"tool": ""}, "tool_call.tool"),
        ({"turn": "has space"}, "tool_call.turn"),
        ({"arguments": "x" * (16 * 1024 + 1)}, "tool_call.arguments_too_large"),
    ],
)
def test_malformed_requests_are_refused(root: RootHive, fields: dict[str, str], code: str) -> None:
    request = {"agent": "helper", "tool": "search", "arguments": "{}", **fields}
    with pytest.raises(InputError) as caught:
        root.propose_tool_call("notes", **request)
    assert caught.value.code == code
    assert root.approvals(kind="tool") == []


def test_an_unknown_hive_cannot_ask(root: RootHive) -> None:
    with pytest.raises(NotFound):
        root.propose_tool_call("ghost", agent="helper", tool="search", arguments="{}")


def test_over_grpc_a_hive_asks_for_itself_and_reads_the_decision(workspace: Path) -> None:
    async def scenario() -> None:
        async with (
            await RootServer.start(workspace) as server,
            RootClient(server.address, admin_token_of(workspace)) as admin,
        ):
            notes = admin.with_token((await admin.register_hive("notes")).token)
            await admin.register_hive("web")
            asked = await notes.propose_tool_call(
                agent="helper", tool="board_write", arguments=ARGUMENTS, turn="t1", call_id="c1"
            )
            assert (asked.id, asked.kind) == ("t-1", "tool")
            (listed,) = await admin.approvals(kind="tool")
            assert listed.tool_call == asked.tool_call
            with pytest.raises(PermissionDenied):
                await notes.propose_tool_call(agent="helper", tool="search", arguments="{}", hive="web")
            assert (await notes.approval(asked.id)).status == "pending"
            outcome = await admin.approve(asked.id)
            assert outcome.code == "tool_call.approved"
            assert (await notes.approval(asked.id)).status == "approved"  # what the waiting agent polls

    run(scenario())
