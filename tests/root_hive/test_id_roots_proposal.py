"""A proposal whose schemas refer to URLs the workspace maps with ``[schemas] id_roots`` (decision 0107): the
root resolves them as lint does, and judges the next version against them."""

from __future__ import annotations

import json
from pathlib import Path

from subhive.root_hive import RootHive

from ._fixtures import orders_files

SHARED = "https://shared.example.com/common/"


def _map_shared(workspace: Path, minimum: int) -> None:
    with (workspace / "hive.toml").open("a", encoding="utf-8") as toml:
        toml.write(f'\n[schemas]\nid_roots = {{ "{SHARED}" = "shared/common" }}\n')
    common = workspace / "shared" / "common"
    common.mkdir(parents=True)
    ids = {"id": {"type": "string", "minLength": minimum}, "strict_id": {"type": "string", "minLength": minimum + 4}}
    (common / "ids.json").write_text(json.dumps({"$defs": ids}))


def _orders(version: str, ref: str) -> dict[str, bytes]:
    files = orders_files(version)
    schema = json.loads(files["in.json"])
    schema["$id"] = "https://orders.example.com/in.json"
    schema["properties"]["id"] = {"$ref": ref}
    files["in.json"] = json.dumps(schema, indent=2).encode()
    return files


def test_a_proposal_refers_to_a_mapped_url_and_is_accepted(workspace: Path) -> None:
    _map_shared(workspace, 1)
    root = RootHive.open(workspace)
    root.register_hive("backend", kind="backend")
    outcome = root.propose("backend", _orders("1.0.0", SHARED + "ids.json#/$defs/id"))
    assert (outcome.status, outcome.code) == ("accepted", "proposal.accepted"), outcome.problems
    # 1.1.0 points to the same definition by its extension-less URL: no change at all.
    again = root.propose("backend", _orders("1.1.0", SHARED + "ids#/$defs/id"))
    assert (again.status, again.code) == ("accepted", "proposal.accepted"), again.problems
    assert again.check is not None
    assert again.check["required_bump"] == "none"
    # 2.0.0 points to the stricter definition in the mapped file: the root sees the input narrowed.
    narrowed = root.propose("backend", _orders("2.0.0", SHARED + "ids.json#/$defs/strict_id"))
    assert (narrowed.status, narrowed.code) == ("pending", "proposal.pending_breaking")
    assert narrowed.check is not None
    assert narrowed.check["required_bump"] == "major"


def test_an_unmapped_file_is_refused_with_its_place_and_the_lookups(workspace: Path) -> None:
    _map_shared(workspace, 1)
    root = RootHive.open(workspace)
    root.register_hive("backend", kind="backend")
    outcome = root.propose("backend", _orders("1.0.0", SHARED + "missing.json#/$defs/id"))
    assert (outcome.status, outcome.code) == ("rejected", "contract.invalid")
    [problem] = outcome.problems
    assert (problem.code, problem.location.file, problem.location.pointer) == (
        "schema.ref_unresolved",
        "in.json",
        "/properties/id/$ref",
    )
    assert "shared/common" in problem.message
    assert "hive.toml [schemas] id_roots" in problem.message
