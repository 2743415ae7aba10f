"""``subhive approvals show`` on an agent's diff that went through its hive's review (``[review]``, issue #20):
the person sees the judge's verdict, the strongest objection, the evidence cited (each checked) and the
false-consensus signals, read from the hive's board on the running tree."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import nats

from subhive.agent import review_id, review_key
from subhive.bus import ADMIN_USER
from subhive.hive import KvBlackboard
from subhive.root_hive._client import RootClient, admin_token_of
from subhive.up import UpLayout

from ._tree import CopyTemplate, subhive, up

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


def test_the_person_sees_the_verdict_objection_and_evidence(module_template_copy: CopyTemplate) -> None:
    workspace = module_template_copy("web", "backend", "backend_api")
    assert up(workspace).code == 0
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
