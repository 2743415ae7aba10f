"""gRPC credentials under ``subhive up``, on the notes example: each hive's own 0600 key file, the db hive
refusing the anonymous caller of the finding, and a consumer accepted while the tree runs let in by the db
hive without a restart (its key file rewritten by the supervisor, re-read by the provider)."""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from subhive.root_hive._client import RootClient
from subhive.rpc import KeyFile, caller_interceptors, error_from_rpc
from subhive.up import UpLayout
from tests.kit import copy_example, run

from ..up._tree import subhive, tail, tear_down, up, wait_for
from ._raw import unary_unary

LIST = "/notes.store.v1.NotesStore/List"


@pytest.fixture
def notes(tmp_path: Path) -> Iterator[Path]:
    workspace = copy_example("notes", tmp_path)
    try:
        yield workspace
    finally:
        tear_down(workspace)


async def list_notes(address: str, keys: KeyFile | None = None) -> bytes | grpc.aio.AioRpcError:
    """What db's List answers the caller with ``keys`` (None: anonymous): the reply, or the error."""
    interceptors = caller_interceptors(keys, "db") if keys is not None else None
    async with grpc.aio.insecure_channel(address, interceptors=interceptors) as channel:
        try:
            return bytes(await unary_unary(channel, LIST)(b"", timeout=10))
        except grpc.aio.AioRpcError as exc:
            return exc


def test_up_gives_each_hive_its_keys_and_db_answers_its_consumers_only(notes: Path) -> None:
    ran = up(notes)
    layout = UpLayout(notes)
    assert ran.code == 0, ran.out + ran.err + tail(layout.log_file("supervisor"))
    keys_dir = layout.keys_dir
    assert stat.S_IMODE(keys_dir.stat().st_mode) == 0o700
    files = {p.stem: p for p in keys_dir.glob("*.json")}
    assert sorted(files) == ["backend", "db", "ui"]
    assert {stat.S_IMODE(p.stat().st_mode) for p in files.values()} == {0o600}
    held = {name: json.loads(p.read_text()) for name, p in files.items()}
    assert sorted(held["db"]["verify"]) == ["backend", "db", "ui"]  # who calls: any hive of the tree
    assert held["db"]["consumers"] == {"notes_store": {"1": ["backend"]}}  # who may: the lock's consumers
    assert sorted(held["ui"]["present"]) == ["backend", "db"]
    assert held["ui"]["verify"] == {}  # ui provides nothing
    # The hive got its file through its environment, never its command line.
    hive_cmdline = Path(f"/proc/{_pid(layout, 'db')}/cmdline").read_bytes()
    assert b"keys" not in hive_cmdline

    address = wait_for(lambda: _db_address(layout), "db's gRPC endpoint in its heartbeat")
    db_pid = _pid(layout, "db")
    anonymous = run(list_notes(address))
    as_ui = run(list_notes(address, KeyFile(files["ui"])))
    as_backend = run(list_notes(address, KeyFile(files["backend"])))

    # The finding: an anonymous local process called db's NotesStore. Now it is refused, and so is ui, which
    # does not consume notes_store.
    assert isinstance(anonymous, grpc.aio.AioRpcError)
    assert anonymous.code() == grpc.StatusCode.UNAUTHENTICATED
    assert error_from_rpc(anonymous).code == "auth.missing"
    assert isinstance(as_ui, grpc.aio.AioRpcError)
    assert as_ui.code() == grpc.StatusCode.PERMISSION_DENIED
    assert error_from_rpc(as_ui).message == f"hive 'ui' does not consume notes_store v1: db refuses its call to {LIST}"
    assert as_backend == b""  # an empty NoteList: nothing stored yet

    # ui declares a requirement on notes_store while the tree runs: the lock lists it, the supervisor
    # rewrites the key files, and db (not restarted) lets ui in.
    root = json.loads(layout.supervisor_file.read_text())["root"]
    token = (notes / ".subhive" / "tokens" / "ui.token").read_text().strip()

    async def declare() -> None:
        async with RootClient(root, token) as ui:
            await ui.declare_requirement("notes_store", "^1.0")

    run(declare())
    wait_for(
        lambda: "ui" in json.loads(files["db"].read_text())["consumers"]["notes_store"]["1"],
        "db's key file to list ui as a consumer",
        context=lambda: tail(layout.log_file("supervisor")),
    )
    now = run(list_notes(address, KeyFile(files["ui"])))
    assert now == b"", now
    assert _pid(layout, "db") == db_pid
    assert subhive(notes, "down").code == 0


def _pid(layout: UpLayout, hive: str) -> Any:
    return json.loads(layout.supervisor_file.read_text())["hives"][hive]["pid"]


def _db_address(layout: UpLayout) -> str | None:
    try:
        endpoints = json.loads(layout.status_file("db").read_text()).get("endpoints", [])
    except (OSError, ValueError):
        return None
    return endpoints[0].rsplit(" at ", 1)[1] if endpoints else None
