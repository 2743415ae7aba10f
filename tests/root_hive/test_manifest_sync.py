"""The root reflects the manifests as they are now: a line removed from a manifest withdraws its requirement
(and the lock's consumer record), a removed hive leaves the tree, a changed range is re-declared, all without
reopening the engine, and a replay after a restart keeps it so. Hives registered through RegisterHive stay."""

from __future__ import annotations

import contextlib
import io
import shutil
from pathlib import Path

from subhive.cli import main
from subhive.root_hive import RootHive
from subhive.root_hive._client import contract_files
from tests.kit import make_workspace


def _new(workspace: Path, *args: str) -> None:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["new", *args, "-C", str(workspace)]) == 0


def _needs(root: RootHive) -> dict[str, dict[str, str]]:
    return {h.name: {c["contract"]: c["versions"] for c in h.consumes} for h in root.status()}


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")


def test_a_removed_consumption_and_a_removed_hive_leave_the_root_while_it_runs(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    _new(ws, "api", "--kind", "backend")  # consumes db_storage: nothing provides it
    _new(ws, "web", "--kind", "ui")  # consumes api_api
    root = RootHive.open(ws)
    try:
        root.register_hive("outside")  # through the API, no manifest: never forgotten
        assert root.propose("api", contract_files(ws / "contracts" / "api_api" / "0.1.0")).status == "accepted"
        assert _needs(root) == {
            "api": {"db_storage": ">=0.1.0, <0.2.0"},
            "outside": {},
            "web": {"api_api": ">=0.1.0, <0.2.0"},
        }

        _edit(ws / "subhives" / "api" / "subhive.toml", 'db_storage = "^0.1"\n', "")
        assert _needs(root)["api"] == {}  # status registers the manifest as it is now

        _edit(ws / "subhives" / "web" / "subhive.toml", 'api_api = "^0.1"', 'api_api = ">=0.1.0"')
        assert _needs(root)["web"] == {"api_api": ">=0.1.0"}

        shutil.rmtree(ws / "subhives" / "web")
        assert sorted(h.name for h in root.status()) == ["api", "outside"]
        assert not (ws / ".subhive" / "tokens" / "web.token").exists()
        (entry,) = root.lock.versions("api_api")
        assert dict(entry.consumers) == {}  # the lock no longer records web: its stubs may go
        root.settle()
    finally:
        root.close()

    reopened = RootHive.open(ws)  # the log replays to the same tree
    try:
        assert _needs(reopened) == {"api": {}, "outside": {}}
        assert reopened.hives() == ["api", "outside"]
    finally:
        reopened.close()


def test_a_manifest_that_does_not_parse_changes_nothing(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    _new(ws, "api", "--kind", "backend")
    root = RootHive.open(ws)
    try:
        manifest = ws / "subhives" / "api" / "subhive.toml"
        manifest.write_text(manifest.read_text() + "\nthis is not toml [\n")
        assert _needs(root) == {"api": {"db_storage": ">=0.1.0, <0.2.0"}}
        assert root.hives() == ["api"]
    finally:
        root.close()
