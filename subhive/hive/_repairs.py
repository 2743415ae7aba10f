"""Repairs handed to an agent by the runtime (decision 0053): when a hive's report creates a new repair
proposal at the root and the hive declares an agent with ``repairs = true``, that agent's repair turn starts in
the background, exactly as ``subhive agent run HIVE --repair r-N`` would run it. See docs/agents.md.

The turn runs as a child process (``python -m subhive agent run ...``): the agent package sits above the hive
runtime, the turn must never block the hive's handlers, and a fix it applies restarts this very hive, which
the turn has to outlive (its own session, so the supervisor's stop does not reach it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["RepairHandoff"]

log = logging.getLogger("subhive.hive")
#: Where a handed repair turn's output goes, under the workspace: ``<hive>-<r-N>.log``.
REPAIR_LOGS = Path(".subhive") / "repairs"


class RepairHandoff:
    """Hands ``hive``'s new repair proposals to ``agent``: one turn per repair id, each in the background."""

    def __init__(self, workspace: Path, hive: str, agent: str, root_address: str) -> None:
        self.workspace, self.hive, self.agent, self.root_address = workspace, hive, agent, root_address
        #: Repair id -> its turn's process; an id is handed once per runtime, so never twice at a time.
        self.turns: dict[str, asyncio.subprocess.Process] = {}
        self._watchers: set[asyncio.Task[None]] = set()

    def is_new(self, approval: Any, reported: int) -> bool:
        """Did this report create ``approval``? A report about a repair already pending only adds to its count,
        so the returned count is larger than the report's (a repair pending from before a restart is not
        handed again: a person runs ``--repair`` on it)."""
        repair = getattr(approval, "repair", None)
        return (
            repair is not None
            and approval.status == "pending"
            and approval.id not in self.turns
            and repair.count <= reported
        )

    async def hand(self, repair_id: str) -> None:
        """Start the agent's repair turn on ``repair_id``; its diff waits for a person at the root."""
        if repair_id in self.turns:
            return
        logs = self.workspace / REPAIR_LOGS
        logs.mkdir(parents=True, exist_ok=True)
        out = (logs / f"{self.hive}-{repair_id}.log").open("ab")
        env = {**os.environ, "SUBHIVE_ROOT": self.root_address}
        # The turn acts as `subhive agent run --repair` does (the workspace's admin token), never as the hive.
        env.pop("SUBHIVE_TOKEN", None)
        try:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "subhive",
                "agent",
                "run",
                self.hive,
                "--repair",
                repair_id,
                "--agent",
                self.agent,
                "--format",
                "json",
                "-C",
                str(self.workspace),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=out,
                stderr=out,
                env=env,
                start_new_session=True,
            )
        finally:
            out.close()
        self.turns[repair_id] = process
        log.info("repair %s handed to agent %s (pid %d)", repair_id, self.agent, process.pid)
        watcher = asyncio.create_task(self._watch(repair_id, process))
        self._watchers.add(watcher)
        watcher.add_done_callback(self._watchers.discard)

    async def _watch(self, repair_id: str, process: asyncio.subprocess.Process) -> None:
        code = await process.wait()
        outcome = {0: "answered", 1: "stopped early", 2: "refused the repair"}.get(code, f"exited {code}")
        log.info("repair %s: agent %s's turn %s (see %s)", repair_id, self.agent, outcome, REPAIR_LOGS)

    async def stop(self) -> None:
        """Stop watching; the turns go on, bounded by the agent's budgets (a fix restarts this hive)."""
        for watcher in list(self._watchers):
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
