"""Upward synthesis: a parent summarises its children (counts, roles, health, open contracts, failures)."""

from __future__ import annotations

from pathlib import Path

import pytest

from subhive.decompose import Budget, HivePlan, decompose, normalise_health, summarise_tree, write_workspace
from subhive.root_hive import Lock, LockEntry
from subhive.semver import Version
from subhive.workspace import open_workspace
from tests.decompose._fixtures import polyglot_shop


@pytest.fixture
def written(tmp_path: Path) -> tuple[Path, list[HivePlan]]:
    plan = decompose(polyglot_shop(tmp_path / "shop"), Budget(max_files=3))
    write_workspace(plan, tmp_path / "ws")
    return tmp_path / "ws", list(plan.hives)


def test_the_root_summarises_the_whole_tree(written: tuple[Path, list[HivePlan]]) -> None:
    root, hives = written
    summary = summarise_tree(open_workspace(root))
    top = summary.root
    leaves = [h for h in hives if h.leaf]
    assert top.hives == len(hives)
    assert top.leaves == len(leaves)
    assert top.files == sum(h.file_count for h in leaves) == 24
    assert sum(top.roles.values()) == len(leaves)
    assert top.health == "unknown"
    assert top.health_counts == {"unknown": len(hives)}
    assert top.failures == 0


def test_parents_keep_counts_not_content(written: tuple[Path, list[HivePlan]]) -> None:
    root, hives = written
    summary = summarise_tree(open_workspace(root))
    inner = next(h for h in hives if not h.leaf)
    assert summary.hives[inner.name].files == inner.file_count
    assert summary.hives[inner.name].children == tuple(sorted(inner.children))
    document = summary.to_dict()
    assert all(isinstance(h["summary"]["files"], int) for h in document["hives"])  # a count, never the list


def test_health_is_the_worst_below_and_failures_add_up(written: tuple[Path, list[HivePlan]]) -> None:
    root, hives = written
    leaves = [h for h in hives if h.leaf]
    deep = max(leaves, key=lambda h: h.depth)
    other = next(h for h in leaves if h.parent != deep.parent)
    runtime: dict[str, dict[str, object]] = {h.name: {"health": "ok"} for h in hives}
    runtime[deep.name] = {"health": "DEGRADED", "failures": 2}
    runtime[other.name] = {"health": "ok", "failures": 1}
    summary = summarise_tree(open_workspace(root), runtime)
    assert deep.parent != "root"
    assert summary.hives[deep.parent].health == "degraded"
    assert summary.hives[deep.parent].failures == 2
    assert summary.hives[other.name].health == "ok"
    assert summary.root.health == "degraded"
    assert summary.root.failures == 3
    assert summary.root.health_counts == {"ok": len(hives) - 1, "degraded": 1}


def test_open_contracts_close_when_the_lock_accepts_them(written: tuple[Path, list[HivePlan]]) -> None:
    root, _ = written
    workspace = open_workspace(root)
    before = summarise_tree(workspace).root.open_contracts
    assert before
    provider = next(m for m in workspace.hives().hives.values() if m.provides)
    contract = provider.provides[0]
    consumers = {m.name: "^0.1" for m in workspace.hives().hives.values() if m.requirement(contract)}
    lock = Lock()
    lock.put(LockEntry(contract, Version.parse("0.1.0"), "sha256:" + "0" * 64, provider.name, consumers))
    lock.save(root)
    after = summarise_tree(workspace).root.open_contracts
    assert contract in before
    assert contract not in after
    assert set(after) == set(before) - {contract}


def test_text_lines_show_the_tree(written: tuple[Path, list[HivePlan]]) -> None:
    root, hives = written
    lines = summarise_tree(open_workspace(root)).lines()
    assert lines[0].startswith("root (root, unknown): ")
    assert len(lines) == len(hives) + 1
    assert any(line.startswith("  ") for line in lines)


@pytest.mark.parametrize(
    ("value", "health"),
    [
        ("SERVING", "ok"),
        ("down", "failing"),
        ("degraded", "degraded"),
        ("mystery", "unknown"),
        (None, "unknown"),
        (3, "unknown"),
        # what `subhive up`'s hives report (subhive status)
        ("ready", "ok"),
        ("starting", "degraded"),
        ("restarting", "failing"),
        ("unresponsive", "failing"),
    ],
)
def test_reported_health_words_are_normalised(value: object, health: str) -> None:
    assert normalise_health(value) == health
