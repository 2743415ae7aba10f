"""Self-repair end to end: a hive on a real NATS bus fails the same way twice, and a repair proposal appears
at the real root (gRPC), where ``subhive approvals list`` shows it to a human."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import nats
import pytest

from subhive.bus import EmbeddedServer, NatsTransport, ensure_event_streams, report_to_root
from subhive.cli import main
from subhive.root_hive._client import RootClient
from subhive.root_hive._service import RootServer
from subhive.workspace import Kind, new_subhive
from tests.kit import run

from ._contracts import orders


def test_the_same_failure_twice_becomes_one_repair_proposal_at_the_root(
    server: EmbeddedServer, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    new_subhive("web", Kind.ui, start=workspace)

    async def failing(payload: Any) -> None:
        raise KeyError("order_id")

    async def scenario() -> None:
        nc = await nats.connect(server.url)
        await ensure_event_streams(nc.jetstream(), [("orders", 1)], hives=["backend", "web"])
        await nc.close()
        async with await RootServer.start(workspace, codegen=False) as root_server:
            token = (workspace / ".subhive" / "tokens" / "web.token").read_text().strip()
            async with RootClient(root_server.address, token) as root:
                backend = await NatsTransport.connect(server.endpoint(), "backend")
                web = await NatsTransport.connect(server.endpoint(), "web", on_repeated_failure=report_to_root(root))
                try:
                    await web.subscribe(orders(), "order_placed", failing)
                    await backend.publish(orders(), "order_placed", {"order_id": "o-1"})
                    for _ in range(300):
                        if web.stats.dead_lettered:
                            break
                        await asyncio.sleep(0.02)
                finally:
                    await web.close()
                    await backend.close()

    run(scenario())
    # The root has stopped; the CLI reads the same durable state from the workspace.
    assert main(["approvals", "list", "-C", str(workspace), "--format", "json"]) == 0
    approvals = json.loads(capsys.readouterr().out)["approvals"]
    assert len(approvals) == 1
    [repair] = approvals
    assert repair["kind"] == "repair"
    assert repair["proposer"] == "web"
    assert repair["contract"] == "orders"
    assert "KeyError" in repair["message"]
    details = repair["repair"]
    # The error class is part of the code the root keys on: another class on this member is another repair.
    assert (details["code"], details["operation"], details["count"]) == ("handler.failed:KeyError", "order_placed", 2)
    assert details["subject"] == "subhive.orders.v1.ev.order_placed"
    assert json.loads(details["sample"]) == {"order_id": "o-1"}  # the message that failed, kept for a human
    # People read the text form: what failed, how often, where, and the message that failed.
    assert main(["approvals", "list", "-C", str(workspace)]) == 0
    line = capsys.readouterr().out
    assert "repair handler.failed:KeyError x2 at orders/order_placed" in line
    assert "None" not in line
    assert main(["approvals", "show", "r-1", "-C", str(workspace)]) == 0
    shown = capsys.readouterr().out
    assert "subject: subhive.orders.v1.ev.order_placed" in shown
    assert '{"order_id":"o-1"}' in shown
    assert main(["approvals", "approve", "r-1", "-C", str(workspace), "--note", "fixed the handler"]) == 0
    approved = capsys.readouterr().out
    assert approved.startswith("r-1: approved")  # the id and the outcome first (decision 0031)
    assert "repair r-1 from web (handler.failed:KeyError x2) accepted" in approved
