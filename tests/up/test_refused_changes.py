"""Changes a running tree cannot follow, and hives that fail on every start: each is said once, with the
command that makes it work, and nothing loops. One ``up`` of the scaffolded db, backend and web hives.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ._tree import events, subhive, tail, up, wait_for

WAIT = 60.0


def _said(workspace: Path, event: str, hive: str | None = None) -> list[dict[str, Any]]:
    return [e for e in events(workspace) if e["event"] == event and (hive is None or e.get("hive") == hive)]


def _health(workspace: Path) -> dict[str, str]:
    ran = subhive(workspace, "status", "--format", "json")
    return {name: info["health"] for name, info in json.loads(ran.out)["runtime"]["hives"].items()}


def _context(workspace: Path) -> str:
    return (
        "\n".join(json.dumps(e) for e in events(workspace)[-20:])
        + "\n"
        + tail(workspace / ".subhive" / "logs" / "web.log", 20)
    )


def test_an_unmet_range_is_refused_and_a_hive_failing_each_start_is_stopped(scaffolded_workspace: Path) -> None:
    ws = scaffolded_workspace
    assert up(ws).code == 0
    pid = json.loads((ws / ".subhive" / "up" / "supervisor.json").read_text())["hives"]["web"]["pid"]

    # Ranges no accepted version meets: each refused once, with where and the command; the hives keep running on
    # what they had.
    manifest = ws / "subhives" / "web" / "subhive.toml"
    original = manifest.read_text()
    backend_manifest = ws / "subhives" / "backend" / "subhive.toml"
    backend_original = backend_manifest.read_text()
    assert 'db_storage = "^0.1"' in backend_original
    manifest.write_text(original.replace('backend_api = "^0.1"', 'backend_api = "^2"'))
    backend_manifest.write_text(backend_original.replace('db_storage = "^0.1"', 'db_storage = "^3"'))

    def both() -> list[dict[str, Any]] | None:
        said = _said(ws, "tree.refused")
        return said if len(said) >= 2 else None

    refused = wait_for(
        both,
        "both changes to be refused",
        WAIT,
        context=lambda: _context(ws),
    )
    by_message = {e["message"]: e for e in refused}
    web = next(e for m, e in by_message.items() if "web now consumes backend_api >=2.0.0, <3.0.0" in m)
    backend = next(e for m, e in by_message.items() if "backend now consumes db_storage >=3.0.0, <4.0.0" in m)
    assert web["code"] == backend["code"] == "up.requirement_unmet", refused
    assert "subhive contract propose" in web["hint"]
    assert "subhives/web/subhive.toml" in web["where"]
    assert (ws / "stubs" / "web" / "backend_api_v0_1").is_dir()
    manifest.write_text(original)  # undone: nothing to follow, and up says so
    backend_manifest.write_text(backend_original)
    wait_for(lambda: _said(ws, "tree.restored"), "the undo to be said", WAIT, context=lambda: _context(ws))
    assert json.loads((ws / ".subhive" / "up" / "supervisor.json").read_text())["hives"]["web"]["pid"] == pid
    assert len(_said(ws, "tree.refused")) == 2

    # A hive whose code fails on import: stopped after a few quick exits, not restarted forever.
    knowledge = ws / "subhives" / "web" / "web_hive" / "knowledge.py"
    code = knowledge.read_text()
    knowledge.write_text(code + "\nraise RuntimeError('broken on purpose')\n")
    assert subhive(ws, "restart", "web").code != 0  # it exits again after the restart: said, exit code
    stopped = wait_for(
        lambda: _said(ws, "hive.stopped", "web"), "web to be stopped", WAIT, context=lambda: _context(ws)
    )
    assert "subhive restart web" in stopped[0]["hint"]
    assert "exited 3 times in a row with code 2" in stopped[0]["message"]
    assert "knowledge.py" in stopped[0]["tail"]
    assert _health(ws)["web"] == "stopped"
    crashes = len(_said(ws, "hive.crashed", "web"))
    assert crashes <= 3, _context(ws)  # the first exit after a restart is answered to `subhive restart` instead

    knowledge.write_text(code)  # fixed: a restart brings it back
    assert subhive(ws, "restart", "web").code == 0, _context(ws)
    wait_for(lambda: _health(ws)["web"] == "ready", "web to be ready again", WAIT, context=lambda: _context(ws))
    assert len(_said(ws, "hive.crashed", "web")) == crashes
