"""A hive's runtime against a real nats-server and a real root: a looping knowledge source ends as a repair
proposal at the root, and a hive that cannot start says exactly why."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

import nats
import pytest

from subhive.bus import EmbeddedServer
from subhive.errors import InputError
from subhive.hive import HiveRuntime, KvBlackboard, ensure_blackboard
from subhive.root_hive import Approval
from subhive.root_hive._client import RootClient
from subhive.root_hive._service import RootServer
from subhive.workspace import Kind, init_workspace, new_subhive
from tests.kit import run

ECHO = '''
from subhive.hive import Write


class Echo:
    """Writes back exactly what woke it: a loop."""

    name = "echo"
    triggers = ("tasks.*",)
    priority = 1

    async def activate(self, entry, blackboard):
        return [Write(entry.key, entry.value)]


SOURCES = (Echo(),)
'''


def _workspace(tmp_path: Path, knowledge: str) -> Path:
    workspace = tmp_path / "ws"
    init_workspace(workspace)
    new_subhive("solo", Kind.custom, start=workspace)
    (workspace / "subhives" / "solo" / "solo_hive" / "knowledge.py").write_text(textwrap.dedent(knowledge))
    return workspace


def test_a_looping_source_becomes_a_repair_proposal_at_the_root(server: EmbeddedServer, tmp_path: Path) -> None:
    workspace = _workspace(tmp_path, ECHO)

    async def scenario() -> list[Approval]:
        nc = await nats.connect(server.url)
        await ensure_blackboard(nc.jetstream(), "solo")
        board = KvBlackboard(nc.jetstream(), "solo")
        async with await RootServer.start(workspace, codegen=False) as root_server:
            token = (workspace / ".subhive" / "tokens" / "solo.token").read_text().strip()
            runtime = await HiveRuntime.start(
                workspace,
                "solo",
                server.endpoint(),
                root_address=root_server.address,
                token=token,
                status_file=tmp_path / "solo.json",
            )
            try:
                await board.put("tasks.t1", {"title": "again", "status": "open"}, writer="human")
                async with RootClient(root_server.address) as admin:
                    for _ in range(250):
                        repairs = await admin.with_token(
                            (workspace / ".subhive/root/admin.token").read_text().strip()
                        ).approvals(kind="repair")
                        if repairs:
                            break
                        await asyncio.sleep(0.02)
                assert runtime.controller is not None
                assert runtime.controller.stats.quarantined == {"echo"}
                status = (tmp_path / "solo.json").read_text()
                assert '"state": "ready"' in status
            finally:
                await runtime.stop()
                await nc.close()
        return list(repairs)

    [repair] = run(scenario())
    assert repair.repair is not None
    assert (repair.kind, repair.proposer, repair.repair.code) == ("repair", "solo", "ks.loop")
    assert repair.repair.subject == "$KV.bb_solo.tasks.t1"
    assert "echo wrote the same value to 'tasks.t1' 5 times in a row" in repair.message


def test_a_knowledge_module_that_does_not_import_is_named_with_its_line(server: EmbeddedServer, tmp_path: Path) -> None:
    workspace = _workspace(tmp_path, "import nowhere_to_be_found\n")

    async def scenario() -> None:
        await HiveRuntime.start(workspace, "solo", server.endpoint())

    with pytest.raises(InputError) as failed:
        run(scenario())
    assert failed.value.code == "ks.import_failed"
    assert "ModuleNotFoundError" in failed.value.message
    assert "knowledge.py:1" in failed.value.message
    assert str(failed.value.location.file).endswith("subhive.toml")


def test_a_source_answering_an_operation_the_hive_does_not_provide_is_refused(
    server: EmbeddedServer, tmp_path: Path
) -> None:
    workspace = _workspace(
        tmp_path,
        """
        class Answers:
            name = "answers"
            operations = ("orders.place_order",)
            priority = 1

            async def activate(self, entry, blackboard):
                return []


        SOURCES = (Answers(),)
    """,
    )

    async def scenario() -> None:
        await HiveRuntime.start(workspace, "solo", server.endpoint())

    with pytest.raises(InputError, match=r"answers answers 'orders\.place_order', which is not an operation") as bad:
        run(scenario())
    assert bad.value.code == "ks.unknown_member"
