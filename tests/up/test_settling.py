"""A change to a running tree is followed once its files have stopped changing (decision 0135): a new contract
version written in steps (the copy of the old one renumbered, then the breaking edit) reaches the root as it
ends, a breaking proposal waiting for a person, not as the copy, which would be accepted at once and stay
(an accepted version is immutable: the edit would only be reported as ``lock.tampered``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from subhive.root_hive import Lock
from subhive.up import UpLayout

from ._tree import events, subhive, tail, up, wait_for


def _after(workspace: Path, mark: int, wanted: Any) -> dict[str, Any] | None:
    return next((e for e in events(workspace)[mark:] if wanted(e)), None)


def test_a_version_edited_while_up_waits_is_proposed_as_it_ends(one_hive_workspace: Path) -> None:
    workspace = one_hive_workspace
    ran = up(workspace)
    assert ran.code == 0, ran
    mark = len(events(workspace))
    logs = UpLayout(workspace).logs_dir

    def context() -> str:
        seen = "\n".join(json.dumps(e) for e in events(workspace)[mark:])
        return f"{seen}\n{tail(logs / 'supervisor.log', 20)}\n{tail(logs / 'root.log', 20)}"

    contract = workspace / "contracts" / "db_storage"
    new = contract / "1.0.0"
    shutil.copytree(contract / "0.1.0", new)
    manifest = new / "contract.yaml"
    manifest.write_text(manifest.read_text(encoding="utf-8").replace("version: 0.1.0", "version: 1.0.0"))
    # Compatible with 0.1.0 so far. Up says it has noticed and waits; without a wait it proposes this at once.
    noticed = wait_for(
        lambda: _after(
            workspace,
            mark,
            lambda e: e["event"] in ("tree.settling", "tree.changed") or e["event"].startswith("contract."),
        ),
        "up to notice db_storage 1.0.0",
        30,
        context=context,
    )
    schemas = json.loads((new / "schemas.json").read_text(encoding="utf-8"))
    schemas["$defs"]["PutRecordInput"]["required"].append("expected_revision")  # breaking for senders
    (new / "schemas.json").write_text(json.dumps(schemas, indent=2), encoding="utf-8")

    outcome = wait_for(
        lambda: _after(workspace, mark, lambda e: e["event"].startswith("contract.") and e.get("version") == "1.0.0"),
        "up to propose db_storage 1.0.0",
        60,
        context=context,
    )
    # The root saw the final content only: a breaking proposal, waiting for approval; nothing of 1.0.0 accepted.
    assert outcome["event"] == "contract.pending", context()
    assert noticed["event"] == "tree.settling", context()
    assert "contracts/db_storage/1.0.0/contract.yaml" in noticed["message"]
    assert noticed["seconds"] > 0
    listed = subhive(workspace, "approvals", "list", "--format", "json")
    assert listed.code == 0, listed
    pending = [
        a for a in json.loads(listed.out)["approvals"] if (a["contract"], a["version"]) == ("db_storage", "1.0.0")
    ]
    assert len(pending) == 1, listed.out
    assert "required.added" in json.dumps(pending[0])
    assert [str(e.version) for e in Lock.load(workspace) if e.name == "db_storage"] == ["0.1.0"]
    followed = wait_for(
        lambda: _after(workspace, mark, lambda e: e["event"] == "lock.followed"), "up to follow", 30, context=context
    )
    assert followed["restarted"] == []
    assert not _after(workspace, mark, lambda e: e["event"] == "tree.warning"), context()
