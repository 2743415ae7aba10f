"""``subhive.up.start`` (what ``up`` runs after its own check) on a tree with several broken manifests: the
supervisor's failure carries every problem, located, not only the first; nothing is left running."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from subhive.up import UpFailed, start

from ._tree import processes_of


def test_the_supervisor_reports_every_manifest_problem(scaffolded_workspace: Path) -> None:
    workspace = scaffolded_workspace
    for hive, old, new in (("db", 'kind = "db"', 'kynd = "db"'), ("web", "max_files = 200", "max_files = 0")):
        manifest = workspace / "subhives" / hive / "subhive.toml"
        manifest.write_text(manifest.read_text().replace(old, new))
    seen: list[dict[str, object]] = []

    with pytest.raises(UpFailed) as caught:
        start(workspace, on_event=seen.append, ready_timeout=60)

    problems = {(p.code, Path(p.location.file or "").parent.name) for p in caught.value.problems}
    assert problems >= {("hive.unknown_key", "db"), ("hive.budget_invalid", "web")}
    assert all(p.location.line for p in caught.value.problems)
    assert caught.value.exit_code == 2
    assert seen[-1]["event"] == "failed"
    reported = seen[-1]["problems"]
    assert isinstance(reported, list)
    assert len(reported) == len(caught.value.problems)
    assert processes_of(workspace) == {}


def test_a_codegen_failure_while_nats_starts_is_reported_and_nothing_is_left_running(
    one_hive_workspace: Path,
) -> None:
    """Codegen runs in a thread while NATS starts (decision 0139): when it fails, the failure is the start's,
    said once both have ended, and the NATS server started meanwhile is stopped with the rest."""
    workspace = one_hive_workspace
    shutil.rmtree(workspace / "stubs", ignore_errors=True)
    (workspace / "stubs").write_text("a file where codegen writes its directory\n")
    seen: list[dict[str, object]] = []

    with pytest.raises(UpFailed) as caught:
        start(workspace, on_event=seen.append, ready_timeout=60)

    assert "codegen.unwritable" in {p.code for p in caught.value.problems} | {caught.value.code}, caught.value
    said = [e["event"] for e in seen]
    assert "nats.started" in said  # NATS did start, beside codegen
    assert said[-1] == "failed"
    assert "ready" not in said
    assert processes_of(workspace) == {}
