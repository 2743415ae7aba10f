"""Repair proposals in the engine: one pending approval per (hive, code, place), counted, decided by humans."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from subhive.errors import InputError
from subhive.root_hive import Conflict, NotFound, PermissionDenied, RootHive

WHERE = {"contract": "orders", "operation": "place_order"}


@pytest.fixture
def root(workspace: Path) -> RootHive:
    hive = RootHive.open(workspace)
    hive.register_hive("backend")
    hive.register_hive("web")
    return hive


def _report(root: RootHive, hive: str = "backend", **overrides: Any) -> Any:
    fields: dict[str, Any] = {
        "code": "handler.failed",
        "message": "KeyError: 'sku'",
        **WHERE,
        "count": 2,
        "sample": '{"id": "o-1"}',
    }
    fields.update(overrides)
    return root.propose_repair(hive, **fields)


def test_a_report_becomes_a_pending_repair_approval(root: RootHive) -> None:
    approval = _report(root)
    assert (approval.id, approval.kind, approval.status, approval.reason) == (
        "r-1",
        "repair",
        "pending",
        "repair.proposed",
    )
    assert (approval.proposer, approval.contract, approval.version) == ("backend", "orders", None)
    assert approval.repair is not None
    assert (approval.repair.code, approval.repair.operation, approval.repair.count) == (
        "handler.failed",
        "place_order",
        2,
    )
    assert [a.id for a in root.approvals()] == ["r-1"]
    assert root.approvals(kind="contract") == []
    assert root.approval("r-1").to_dict()["repair"]["sample"] == '{"id": "o-1"}'


def test_the_frame_carries_the_report_but_not_the_sample(root: RootHive) -> None:
    _report(root)
    frame = root.frames_since(0)[-1]
    assert frame.kind == "repair_proposed"
    assert (frame.data["approval_id"], frame.data["count"], frame.data["repeat"]) == ("r-1", 2, False)
    assert frame.data["sample_bytes"] == len('{"id": "o-1"}')
    assert "sample" not in frame.data


def test_a_repeat_while_pending_adds_to_the_count(root: RootHive) -> None:
    _report(root)
    again = _report(root, count=3, message="KeyError: 'qty'", sample="")
    assert again.id == "r-1"
    assert again.repair is not None
    assert (again.repair.count, again.message, again.repair.sample) == (5, "KeyError: 'qty'", b"")
    assert len(root.approvals()) == 1
    assert root.frames_since(0)[-1].data["repeat"] is True


@pytest.mark.parametrize(
    "other",
    [{"hive": "web"}, {"code": "payload.invalid"}, {"operation": "cancel_order"}, {"subject": "orders.v1.place_order"}],
)
def test_another_hive_code_or_place_is_another_repair(root: RootHive, other: dict[str, str]) -> None:
    _report(root)
    second = _report(root, **other)
    assert second.id == "r-2"
    assert len(root.approvals()) == 2


def test_approving_acknowledges_and_publishes_nothing(root: RootHive, workspace: Path) -> None:
    _report(root)
    outcome = root.approve("r-1", admin_token=root.admin_token(), note="fix the sku lookup")
    assert (outcome.kind, outcome.status, outcome.code, outcome.version) == (
        "repair",
        "accepted",
        "repair.accepted",
        None,
    )
    decided = root.approval("r-1")
    assert (decided.status, decided.decision) == ("approved", "fix the sku lookup")
    assert root.frames_since(0)[-1].data == {
        "approval_id": "r-1",
        "kind": "repair",
        "contract": "orders",
        "version": None,
        "status": "approved",
        "decision": "fix the sku lookup",
    }
    assert root.lock.names() == []
    assert not (workspace / "contracts" / "orders").exists()


def test_a_report_after_the_decision_opens_a_new_repair(root: RootHive) -> None:
    _report(root)
    root.reject("r-1", admin_token=root.admin_token(), reason="the client sends bad data")
    assert _report(root).id == "r-2"
    assert [(a.id, a.status) for a in root.approvals("all")] == [("r-1", "rejected"), ("r-2", "pending")]


def test_rejecting_needs_a_reason_and_deciding_twice_is_a_conflict(root: RootHive) -> None:
    _report(root)
    with pytest.raises(InputError):
        root.reject("r-1", admin_token=root.admin_token(), reason="")
    root.reject("r-1", admin_token=root.admin_token(), reason="not a bug")
    with pytest.raises(Conflict):
        root.approve("r-1", admin_token=root.admin_token())


def test_a_hive_cannot_decide_a_repair(root: RootHive) -> None:
    _report(root)
    token = root.register_hive("rogue").token
    with pytest.raises(PermissionDenied):
        root.approve("r-1", admin_token=token)


def test_a_repair_has_no_files(root: RootHive) -> None:
    _report(root)
    with pytest.raises(InputError) as caught:
        root.pending_files("r-1")
    assert caught.value.code == "approval.no_files"


def test_an_unknown_hive_cannot_report(root: RootHive) -> None:
    with pytest.raises(NotFound):
        _report(root, hive="ghost")


@pytest.mark.parametrize(
    ("overrides", "code"),
    [
        ({"code": ""}, "repair.code"),
        ({"code": "has space"}, "repair.code"),
        ({"contract": "", "operation": ""}, "repair.where"),
        ({"contract": "", "operation": "place_order", "subject": "x"}, "repair.operation"),
        ({"contract": "Orders"}, "repair.contract"),
        ({"subject": "two words"}, "repair.subject"),
        ({"count": 0}, "repair.count"),
        ({"message": "  "}, "repair.message"),
        ({"message": "x" * 1025}, "repair.message"),
        ({"sample": "é" * 2049}, "repair.sample_too_large"),  # 4,098 bytes of UTF-8
    ],
)
def test_malformed_reports_are_input_errors(root: RootHive, overrides: dict[str, Any], code: str) -> None:
    with pytest.raises(InputError) as caught:
        _report(root, **overrides)
    assert caught.value.code == code
    assert root.approvals("all") == []


def test_a_sample_of_exactly_4_kib_is_kept_bytes_intact(workspace: Path, root: RootHive) -> None:
    sample = bytes(range(256)) * 16  # 4,096 bytes, not UTF-8
    assert _report(root, sample=sample).repair.sample == sample
    root.close()
    again = RootHive.open(workspace)
    repair = again.approval("r-1").repair
    assert repair is not None
    assert repair.sample == sample
    assert isinstance(repair.to_dict()["sample"], str)  # for people: undecodable bytes replaced


def test_repairs_survive_reopening_and_keep_counting(workspace: Path, root: RootHive) -> None:
    _report(root)
    before = root.approval("r-1")
    root.close()
    again = RootHive.open(workspace)
    assert again.approval("r-1") == before
    bumped = _report(again, count=1)
    assert (bumped.id, bumped.repair.count if bumped.repair else None) == ("r-1", 3)
    again.approve("r-1", admin_token=again.admin_token())
    assert _report(again, code="other.code").id == "r-2"
