"""A workspace with something in every list, and ``subhive root`` serving it (gRPC and HTTP) as its own process.

The workspace: ``orders`` 1.0.0 accepted and a breaking 2.0.0 pending (``p-2``), a repair (``r-1``), an agent's
tool call (``t-1``) and one agent turn's steps on the event stream. The tree is not up (no NATS): boards and
dead letters answer 503, which the tests check; ``test_bus_routes.py`` runs them against a real NATS server.
"""

from __future__ import annotations

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
        yield Api(started["http"], token, ws, hive_token)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0


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
