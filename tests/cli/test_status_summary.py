"""`subhive status` shows each parent's synthesis of what is below it: counts, roles, health, open
contracts, failures (issue 7's upward synthesis), with or without a running workspace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from subhive.cli import main
from subhive.workspace import Kind, init_workspace, new_subhive


@pytest.fixture
def nested(tmp_path: Path) -> Path:
    workspace = tmp_path / "shop"
    init_workspace(workspace)
    new_subhive("backend", Kind.backend, start=workspace)
    new_subhive("orders", Kind.custom, parent="backend", start=workspace)
    new_subhive("payments", Kind.custom, parent="backend", start=workspace)
    new_subhive("web", Kind.ui, start=workspace)
    return workspace


def test_status_json_carries_the_synthesis_of_every_parent(nested: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["status", "-C", str(nested), "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["runtime"] is None  # nothing is up
    summaries = {h["name"]: h for h in document["summary"]["hives"]}
    assert summaries["root"]["children"] == ["backend", "web"]
    assert summaries["root"]["summary"]["hives"] == 4
    assert summaries["backend"]["children"] == ["orders", "payments"]
    assert summaries["backend"]["summary"]["hives"] == 2
    # backend_api was never accepted, and web's requirement on it is unmet: both are open below the root.
    assert "backend_api" in summaries["root"]["summary"]["open_contracts"]
    assert summaries["backend"]["summary"]["health"] == "unknown"  # not running: nobody reported


def test_status_text_shows_the_synthesis_under_each_parent(nested: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["status", "-C", str(nested)]) == 0
    out = capsys.readouterr().out
    assert "not running (subhive up starts it)" in out
    assert "root (root, unknown): 4 hives, 3 leaves" in out
    assert "below: backend (backend, unknown): 2 hives, 2 leaves" in out
    assert "below: web" not in out  # a leaf has nothing below it to sum up
