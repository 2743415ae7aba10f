"""A workspace with something in every list, and ``subhive root`` serving it (gRPC and HTTP) as its own process.

The workspace: ``orders`` 1.0.0 accepted and a breaking 2.0.0 pending (``p-2``), a repair (``r-1``), an agent's
tool call (``t-1``) and one agent turn's steps on the event stream. The tree is not up (no NATS): boards and
dead letters answer 503, which the tests check; ``test_bus_routes.py`` runs them against a real NATS server.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from subhive.root_hive import AgentStep, RootHive
from subhive.workspace import init_workspace
from tests.kit import REPO

ORDERS = REPO / "contracts" / "orders"


@dataclass(frozen=True)
class Api:
    url: str
    token: str
    workspace: Path
    hive_token: str
    #: The root's gRPC address (hives and agents talk to it there).
    grpc: str = ""


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def call(
    api: Api,
    method: str,
    path: str,
    *,
    body: Any = None,
    token: str | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 10,
) -> Answer:
    """One request; any status comes back as an Answer (urllib raises for >= 400)."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(api.url + path, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    for key, value in (headers or {}).items():
        request.add_header(key, value)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return Answer(response.status, {k.lower(): v for k, v in response.headers.items()}, response.read())
    except urllib.error.HTTPError as error:
        return Answer(error.code, {k.lower(): v for k, v in error.headers.items()}, error.read())


def make_api_workspace(tmp: Path) -> tuple[Path, str]:
    """The workspace described above; returns it and the ``backend`` hive's token."""
    ws = tmp / "shop"
    init_workspace(ws)
    for version in ("1.0.0", "2.0.0"):
        shutil.copytree(ORDERS / version, ws / "drafts" / "orders" / version)
    with RootHive.open(ws) as root:
        token = root.register_hive("backend", kind="backend").token
        root.register_hive("ui", kind="ui")
        root.declare_requirement("ui", "orders", "^1.0")
        for version in ("1.0.0", "2.0.0"):
            directory = ws / "drafts" / "orders" / version
            files = {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file()}
            root.propose("backend", files)
        root.propose_repair("backend", code="schema.invalid", message="bad sku", contract="orders", count=2)
        root.propose_tool_call("ui", agent="helper", tool="write_file", arguments='{"path": "a.txt"}', turn="t1")
        root.report_frames(
            "ui",
            [
                AgentStep("helper", "t1", 1, "turn.started", '{"prompt": "hi"}', 1.0),
                AgentStep("helper", "t1", 2, "model.reply", '{"text": "hello"}', 2.0),
            ],
        )
    return ws, token


def serve(ws: Path, hive_token: str) -> Iterator[Api]:
    """``subhive root`` on ``ws`` in its own process until the generator is closed; it must then stop cleanly."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SUBHIVE_")} | {"PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "subhive", "root", "--format", "json", "--no-codegen", "-C", str(ws)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else "no output"
        started = json.loads(line)
        token = Path(started["admin_token_file"]).read_text().strip()
        yield Api(started["http"], token, ws, hive_token, started["address"])
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)  # drains and closes both pipes
        assert proc.returncode == 0, err
        assert "Traceback" not in err, err


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    """A fresh root for one test (for tests that change state)."""
    ws, hive_token = make_api_workspace(tmp_path)
    yield from serve(ws, hive_token)


@pytest.fixture(scope="module")
def shared_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    """One root a module's read-only tests share."""
    ws, hive_token = make_api_workspace(tmp_path_factory.mktemp("api"))
    yield from serve(ws, hive_token)


# -- a running tree (subhive up): boards and dead letters for real ---------------------------------------------

#: The dead letter the tree fixture leaves in db's stream: a put_record whose payload db refused.
LETTER_SUBJECT = "subhive.dlq.db.db_storage.v0_1.op.put_record"
WEB_LETTER_SUBJECT = "subhive.dlq.web.backend_api.v0_1.ev.nothing_happened"
LETTER_BYTES = b'{"key": "", "note": "\xc3\xa9t\xc3\xa9"}'


#: Appended to the scaffolded db's knowledge: a source answering put_record (the starter answers nothing).
STORE_SOURCE = """

from subhive.hive import Reply


class Store:
    name = "store"
    triggers = ()
    operations = ("db_storage.put_record",)
    priority = 5

    async def activate(self, entry, ctx):
        return [Reply({"revision": 1})]


SOURCES = (*SOURCES, Store())
"""
#: A put_record request backend sent that db failed on once: valid, so a replay is answered.
VALID_PUT = b'{"collection": "notes", "id": "n-1", "data": {"text": "hello"}}'


def _subhive(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SUBHIVE_")} | {"PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "subhive", *args, "-C", str(ws)],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        cwd=ws,
        check=False,
    )


def _put_record_letter(code: str) -> dict[str, str]:
    """The headers the transport keeps with a put_record request from backend that db refused (``code``)."""
    from subhive.bus import op_subject

    return {
        "Subhive-Dlq-Code": code,
        "Subhive-Dlq-Subject": op_subject("db_storage", "0.1", "put_record", "backend"),
        "Subhive-Dlq-Headers": json.dumps({"Subhive-Sender": "backend"}),
    }


def keep_put_record_letter(ws: Path, data: bytes) -> None:
    """A put_record request backend sent, kept in db's dead letters as failed (what the transport keeps)."""
    import asyncio

    from subhive.up import framework_endpoint

    endpoint = framework_endpoint(ws)
    assert endpoint is not None

    async def keep() -> None:
        nc = await endpoint.connect_once()
        try:
            await nc.jetstream().publish(LETTER_SUBJECT, data, headers=_put_record_letter("handler.failed"))
        finally:
            await nc.close()

    # In a thread of its own: a test module may hold Playwright's event loop open in this one.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, keep()).result(timeout=60)


def _seed_tree(ws: Path) -> None:
    """One dead letter in db's stream, one value on web's board, a repair and a tool call pending, a turn."""
    import asyncio

    from subhive.bus import DeadLetters
    from subhive.hive import BoardSchema, KvBlackboard
    from subhive.root_hive import RootClient, admin_token_of
    from subhive.up import framework_endpoint, running_supervisor

    endpoint = framework_endpoint(ws)
    record = running_supervisor(ws)
    assert endpoint is not None
    assert record is not None

    async def seed() -> None:
        nc = await endpoint.connect_once()
        try:
            # A request backend (db_storage's consumer) sent, which db refused: the lock lets it replay.
            await nc.jetstream().publish(LETTER_SUBJECT, LETTER_BYTES, headers=_put_record_letter("payload.invalid"))
            assert len(await DeadLetters(nc).list("db")) == 1
            # And web:1, an event web never consumed: a bare "1" is ambiguous, and its replay is refused.
            await nc.jetstream().publish(WEB_LETTER_SUBJECT, b"{}", headers={"Subhive-Dlq-Code": "payload.invalid"})
            schema = BoardSchema.load(ws / "subhives" / "web" / "blackboard.schema.json", hive="web")
            board = await KvBlackboard.open(nc.jetstream(), "web", schema)
            for status in ("open", "done"):
                await board.put("tasks.t1", {"title": "draw the page", "status": status}, writer="ada")
        finally:
            await nc.close()
        async with RootClient(str(record["root"]), admin_token_of(ws)) as root:
            await root.propose_repair(
                hive="db", code="handler.failed", message="KeyError", contract="db_storage", operation="put_record"
            )
            await root.propose_tool_call(hive="web", agent="helper", tool="write_file", arguments="{}", turn="w1")
            await root.report_frames([AgentStep("helper", "w1", 1, "turn.started", "{}", 1.0)], hive="web")

    # In a thread of its own: a test module may hold Playwright's event loop open in this one.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, seed()).result(timeout=60)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    """``subhive up --detach`` of a db, a backend and a ui hive (web), seeded by :func:`_seed_tree`; its root's
    HTTP API. Shared by a module's tests (an ``up`` costs seconds); ``subhive down`` at the end."""
    from subhive.cli import main
    from subhive.up import running_supervisor

    ws = (tmp_path_factory.mktemp("tree") / "ws").resolve()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["init", str(ws)]) == 0
        for name, kind in (("db", "db"), ("backend", "backend"), ("web", "ui")):
            assert main(["new", name, "--kind", kind, "-C", str(ws)]) == 0
    with (ws / "subhives" / "db" / "db_hive" / "knowledge.py").open("a", encoding="utf-8") as knowledge:
        knowledge.write(STORE_SOURCE)  # so that a replayed request finds a provider that answers it
    try:
        started = _subhive(ws, "up", "--detach")
        assert started.returncode == 0, started.stderr
        record = running_supervisor(ws)
        assert record is not None
        assert str(record.get("http", "")).startswith("http://127.0.0.1:")
        assert f"HTTP API on {record['http']}, console at {record['http']}/console/" in started.stderr
        _seed_tree(ws)
        token = (ws / ".subhive" / "root" / "admin.token").read_text().strip()
        hive_token = (ws / ".subhive" / "tokens" / "web.token").read_text().strip()
        yield Api(str(record["http"]), token, ws, hive_token, str(record["root"]))
    finally:
        _subhive(ws, "down")
