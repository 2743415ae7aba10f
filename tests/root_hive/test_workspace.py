"""The root and its workspace: one engine per workspace (a real second process is refused), and the
workspace's sub-hives registered at open with their tokens in ``.subhive/tokens/``."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from subhive.cli import main
from subhive.root_hive import Conflict, NotFound, RootHive, Unauthenticated
from subhive.root_hive._client import contract_files
from tests.kit import make_workspace

REPO = Path(__file__).resolve().parents[2]

HOLDER = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, sys.argv[2])
    from pathlib import Path
    from subhive.root_hive import RootHive
    root = RootHive.open(Path(sys.argv[1]))
    print("open", flush=True)
    time.sleep(60)
""")


def test_a_second_engine_on_the_same_workspace_is_refused_naming_the_holders_pid(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(workspace), str(REPO)], stdout=subprocess.PIPE, text=True, cwd=REPO
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "open\n"
        with pytest.raises(Conflict) as caught:
            RootHive.open(workspace)
        assert caught.value.code == "root.locked"
        assert f"pid {holder.pid}" in caught.value.message
        assert caught.value.location.file == str(workspace / ".subhive" / "root" / "engine.lock")
    finally:
        holder.kill()  # SIGKILL: the kernel releases the lock with the process
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
    root = RootHive.open(workspace)  # the holder is gone: the workspace is free again
    try:
        assert (workspace / ".subhive" / "root" / "engine.lock").read_text() == f"{os.getpid()}\n"
        root.register_hive("db")  # and the state is writable
    finally:
        root.close()


def test_closing_the_engine_frees_the_workspace_in_the_same_process(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path)
    first = RootHive.open(workspace)
    with pytest.raises(Conflict):
        RootHive.open(workspace)  # flock is per open file: a second engine in one process is refused too
    first.close()
    RootHive.open(workspace).close()


def _new(workspace: Path, *args: str) -> None:
    assert main(["new", *args, "-C", str(workspace)]) == 0


def test_workspace_hives_are_registered_at_open_with_their_tokens_on_disk(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path)
    _new(workspace, "db", "--kind", "db")
    _new(workspace, "api", "--kind", "backend")
    _new(workspace, "orders_store", "--kind", "db", "--parent", "db")

    root = RootHive.open(workspace)
    try:
        tree = {h.name: (h.kind, h.parent, [c.name for c in h.children]) for h in root.status()}
        assert tree == {"api": ("backend", "root", []), "db": ("db", "root", ["orders_store"])}
        tokens = workspace / ".subhive" / "tokens"
        assert stat.S_IMODE(tokens.stat().st_mode) == 0o700
        for name in ("db", "api", "orders_store"):
            path = tokens / f"{name}.token"
            assert stat.S_IMODE(path.stat().st_mode) == 0o600
            assert root.authenticate(path.read_text().strip()) == name
        # The admin token stays where it was, and is no hive's token.
        assert root.is_admin((workspace / ".subhive" / "root" / "admin.token").read_text().strip())
        db_token = (tokens / "db.token").read_text()
    finally:
        root.close()

    # Opening again registers nothing new: the tokens stay valid, the files unchanged.
    _new(workspace, "web", "--kind", "ui")
    root = RootHive.open(workspace)
    try:
        assert (tokens / "db.token").read_text() == db_token
        assert root.authenticate(db_token.strip()) == "db"
        assert root.authenticate((tokens / "web.token").read_text().strip()) == "web"
        assert root.hives() == ["api", "db", "orders_store", "web"]
        with pytest.raises(Unauthenticated):
            root.authenticate("not-" + db_token.strip())
    finally:
        root.close()


def test_registration_at_open_survives_a_restart_from_the_log(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path)
    _new(workspace, "db", "--kind", "db")
    RootHive.open(workspace).close()
    token = (workspace / ".subhive" / "tokens" / "db.token").read_text().strip()
    (workspace / ".subhive" / "tokens" / "db.token").unlink()  # the log, not the file, says who is registered
    root = RootHive.open(workspace)
    try:
        assert root.authenticate(token) == "db"
        assert not (workspace / ".subhive" / "tokens" / "db.token").exists()  # never re-issued behind its back
    finally:
        root.close()


def test_what_a_manifest_consumes_becomes_a_requirement_once(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path)
    _new(workspace, "db", "--kind", "db")
    _new(workspace, "api", "--kind", "backend")  # consumes its sibling db hive's storage contract
    _new(workspace, "web", "--kind", "ui")  # consumes the backend's API contract

    root = RootHive.open(workspace)
    try:
        consumes = {h.name: sorted(c["contract"] for c in h.consumes) for h in root.status()}
        assert consumes["api"] == ["db_storage"]
        assert consumes["web"] == ["api_api"]
        # Nothing provides them yet: each need is announced for providers to bid on.
        assert {(a["hive"], a["contract"]) for a in root.announcements()} == {("api", "db_storage"), ("web", "api_api")}
        seen = root.last_seq
    finally:
        root.close()

    root = RootHive.open(workspace)  # unchanged manifests declare nothing again
    try:
        assert root.last_seq == seen
    finally:
        root.close()


def test_a_hive_made_while_the_root_runs_is_registered_when_it_first_calls(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path)
    _new(workspace, "db", "--kind", "db")
    root = RootHive.open(workspace)
    try:
        _new(workspace, "pay", "--kind", "backend")  # after the root opened
        outcome = root.propose("pay", contract_files(workspace / "contracts" / "pay_api" / "0.1.0"))
        assert outcome.status == "accepted"
        token = (workspace / ".subhive" / "tokens" / "pay.token").read_text().strip()
        assert root.authenticate(token) == "pay"
        assert {h.name: h.kind for h in root.status()} == {"db": "db", "pay": "backend"}
        # A name with no manifest on disk is still unknown, and the error says how to make one.
        with pytest.raises(NotFound) as caught:
            root.propose("ghost", contract_files(workspace / "contracts" / "pay_api" / "0.1.0"))
        assert caught.value.code == "hive.unknown"
        assert "subhive new" in (caught.value.hint or "")
    finally:
        root.close()
