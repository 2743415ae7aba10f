"""The newcomer's path, as a pip-installed user takes it: ``init``, ``new`` of each kind, ``up``, ``status``,
``down``, with no edit in between. The backend made before any db consumes ``db_storage``, which nothing
provides: that is reported, and the rest runs. Then the api hive is removed while the tree runs: the root
forgets it, and the web hive, whose contract has an accepted version but no provider any more, is answered by
a mock provider. One ``up``.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import shutil
from pathlib import Path
from typing import Any

from subhive.bus import BusEndpoint, NatsTransport
from subhive.cli import main
from subhive.runtime import ContractBinding
from subhive.up import UpLayout

from ._tree import events, processes_of, subhive, tail, tear_down, up, wait_for


def _json(workspace: Path, *args: str) -> Any:
    ran = subhive(workspace, *args, "--format", "json")
    assert ran.code in (0, 1), ran
    return json.loads(ran.out)


def _context(workspace: Path) -> str:
    return (
        "\n".join(json.dumps(e) for e in events(workspace)[-20:])
        + "\n"
        + tail(workspace / ".subhive" / "logs" / "supervisor.log", 20)
    )


async def _ask_as(workspace: Path, hive: str, package: str, operation: str) -> Any:
    """A request over NATS with ``hive``'s own credentials, as its generated client sends it."""
    layout = UpLayout(workspace)
    record = json.loads(layout.supervisor_file.read_text(encoding="utf-8"))
    endpoint = BusEndpoint(record["nats"].split(","), nkey_seed=layout.seed_file(hive))
    transport = await NatsTransport.connect(endpoint, hive)
    try:
        binding = ContractBinding.load(workspace / "stubs" / hive / package / "contract.json")
        return await transport.request(binding, operation, {})
    finally:
        await transport.close()


def test_init_and_new_of_each_kind_come_up_with_no_edit(tmp_path: Path) -> None:
    ws = (tmp_path / "ws").resolve()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["init", str(ws)]) == 0
        for name, kind in (("api", "backend"), ("web", "ui"), ("store", "db"), ("tools", "custom")):
            assert main(["new", name, "--kind", kind, "-C", str(ws)]) == 0
    try:
        ran = up(ws)
        assert ran.code == 0, ran.err + _context(ws)
        said = [e for e in events(ws) if e["event"] == "tree.warning"]
        assert [(e["code"], "api" in e["message"] and "db_storage" in e["message"]) for e in said] == [
            ("codegen.not_in_lock", True)
        ], said
        assert "no hive provides db_storage yet" in said[0]["hint"]
        assert "subhives/api/subhive.toml" in said[0]["hint"]

        status = _json(ws, "status")
        health = {name: info["health"] for name, info in status["runtime"]["hives"].items()}
        assert health == dict.fromkeys(("api", "store", "tools", "web"), "ready"), health
        assert [w["code"] for w in status["warnings"]] == ["codegen.not_in_lock"], status["warnings"]
        needs = {(h["name"], c["contract"]): c["satisfied_by"] for h in status["hives"] for c in h["consumes"]}
        assert needs == {("api", "db_storage"): None, ("web", "api_api"): "0.1.0"}, needs

        # The provider goes away while the tree runs; its accepted version stays, so a mock answers for it.
        shutil.rmtree(ws / "subhives" / "api")
        wait_for(
            lambda: any(e["event"] == "mocks.started" for e in events(ws)),
            "a mock of api_api",
            60,
            context=lambda: _context(ws),
        )
        assert any(e["event"] == "hive.removed" and e["hive"] == "api" for e in events(ws))
        answer = asyncio.run(_ask_as(ws, "web", "api_api_v0_1", "get_status"))
        assert answer["status"] in ("ok", "degraded"), answer
        status = _json(ws, "status")
        assert sorted(h["name"] for h in status["hives"]) == ["store", "tools", "web"], status["hives"]
        assert status["warnings"] == [], status["warnings"]  # api's unmet line left with it

        pids = set(processes_of(ws))
        assert subhive(ws, "down").code == 0
        assert not processes_of(ws), pids
    finally:
        tear_down(ws)
