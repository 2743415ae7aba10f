"""On a running tree (issue #20): ``subhive approvals show`` on an agent's diff that went through its hive's
review (``[review]``) shows the judge's verdict, the strongest objection, the evidence cited (each checked) and
the false-consensus signals, read from the hive's board; ``subhive memory show`` shows what the agents remember,
with each entry's confidence and history. One tree serves both tests (each ``up`` costs seconds)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import nats
import pytest

from subhive.agent import review_id, review_key
from subhive.bus import ADMIN_USER
from subhive.hive import KvBlackboard
from subhive.root_hive._client import RootClient, admin_token_of
from subhive.up import UpLayout

from ._tree import CopyTemplate, subhive, up


@pytest.fixture(scope="module")
def tree(module_template_copy: CopyTemplate) -> Path:
    """The template with only its db hive, up."""
    workspace = module_template_copy("web", "backend", "backend_api")
    ran = up(workspace)
    assert ran.code == 0, ran
    return workspace


async def _board(workspace: Path) -> tuple[Any, KvBlackboard]:
    """The db hive's board with the framework's credentials (the bucket without the schema)."""
    layout = UpLayout(workspace)
    nc = await nats.connect(
        json.loads(layout.supervisor_file.read_text())["nats"], nkeys_seed=str(layout.seed_file(ADMIN_USER))
    )
    return nc, KvBlackboard(nc.jetstream(), "db")


DIFF = "--- a/notes.md\n+++ b/notes.md\n@@ -1,2 +1 @@\n one\n-two\n"


async def _propose_and_record(workspace: Path) -> str:
    """What a reviewed turn leaves: its review on the db hive's board, then the diff waiting at the root."""
    layout = UpLayout(workspace)
    arguments = json.dumps({"diff": DIFF})
    rid = review_id("propose_diff", json.dumps(json.loads(arguments), sort_keys=True))
    record = {
        "review": rid,
        "verdict": "approve",
        "judge": "judge",
        "reasoning": "both sides agree",
        "strongest_objection": "line two is read by the importer",
        "evidence": [{"citation": "importer.py:12", "valid": False}],
        "warning": "false consensus",
        "signals": {
            "flags": ["agreement_without_evidence", "invalid_citations"],
            "valid_citations": 0,
            "unanswered": ["o1"],
        },
    }
    nc = await nats.connect(
        json.loads(layout.supervisor_file.read_text())["nats"], nkeys_seed=str(layout.seed_file(ADMIN_USER))
    )
    try:
        board = KvBlackboard(nc.jetstream(), "db")
        await board.put(review_key("helper", rid), record, writer="review:helper")
    finally:
        await nc.close()
    address = json.loads(layout.supervisor_file.read_text())["root"]
    async with RootClient(address, admin_token_of(workspace)) as root:
        pending = await root.propose_tool_call(
            agent="helper", tool="propose_diff", arguments=arguments, turn="t1", call_id="c1", hive="db"
        )
    return str(pending.id)


def test_the_person_sees_the_verdict_objection_and_evidence(tree: Path) -> None:
    workspace = tree
    approval = asyncio.run(asyncio.wait_for(_propose_and_record(workspace), 30))
    shown = subhive(workspace, "approvals", "show", approval)
    assert shown.code == 0, shown
    text = " ".join(shown.out.split())
    assert "review: approve by judge judge false consensus" in text
    assert "strongest objection: line two is read by the importer" in text
    assert "evidence: importer.py:12 (does not exist)" in text
    assert "signals: agreement_without_evidence, invalid_citations; 0 valid citations, 1 objections unanswered" in text
    as_json = subhive(workspace, "approvals", "show", approval, "--format", "json")
    assert json.loads(as_json.out)["review"]["strongest_objection"] == "line two is read by the importer"


def test_memory_show_lists_entries_with_confidence_and_history(tree: Path) -> None:
    from subhive.agent import AgentMemory
    from subhive.workspace import MemorySpec

    async def learn() -> None:
        nc, board = await _board(tree)
        try:
            memory = AgentMemory(board, "helper", rule=MemorySpec(rate=0.5, threshold=0.2, initial=0.6))
            kept = await memory.remember("lesson", "index the notes by date")
            doomed = await memory.remember("lesson", "delete notes.md to trim it")
            await memory.settle([kept], True, turn="t1")
            await memory.settle([doomed], False, turn="t1")
            await memory.settle([doomed], False, turn="t2")
        finally:
            await nc.close()

    asyncio.run(asyncio.wait_for(learn(), 30))
    shown = subhive(tree, "memory", "show", "db")
    assert shown.code == 0, shown
    lines = shown.out.splitlines()
    assert any("helper kept confidence 0.64" in line and "index the notes by date" in line for line in lines)
    assert any("helper pruned confidence 0.15" in line and "delete notes.md" in line for line in lines)
    assert any("learnt 0.60" in line and "failed 0.30" in line and "pruned 0.15" in line for line in lines)
    as_json = json.loads(subhive(tree, "memory", "show", "db", "--agent", "helper", "--format", "json").out)
    assert sorted((e["text"], e["pruned"]) for e in as_json["entries"]) == [
        ("delete notes.md to trim it", True),
        ("index the notes by date", False),
    ]
    assert subhive(tree, "memory", "show", "db", "--agent", "nobody").err.strip() == (
        "the agents of db remember nothing yet"
    )
