"""An agent as a knowledge source of its hive: a write to a board key its trigger names starts a turn.

A hive's knowledge module adds its agents beside its other experts::

    from subhive.agent import agent_sources
    SOURCES = [Intake(), *agent_sources(__file__)]

The controller runs the turn like any activation (priority, concurrency, escalation). The agent's writes go
through its ``board_write`` tool, compare-and-set, as it decides; the turn's frames are kept on the board. A
turn that stops for any reason but an answer raises :class:`AgentStopped`, so the controller retries it once
and then escalates it to the root like any failing source.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError, Location, SubhiveError
from ..hive import Entry, KvBlackboard, Write
from ..workspace import MANIFEST_NAME, AgentSpec, find_root, load_manifest, open_workspace
from ._build import build_agent
from ._hive_turn import BoardTranscript, load_bindings
from ._loop import Stop
from ._tools import Approver

__all__ = ["AgentSource", "AgentStopped", "agent_sources"]


class AgentStopped(SubhiveError):
    """A turn started by the board ended without an answer; ``stop`` says why (its code is ``agent.<stop>``)."""

    default_code = "agent.stopped"

    def __init__(self, agent: str, stop: Stop, key: str) -> None:
        super().__init__(f"agent {agent} stopped on {key}: {stop.message}", code=f"agent.{stop.code}",
                         location=Location(subject=key), hint="read the turn's frames: subhive board show HIVE")
        self.stop = stop


class AgentSource:
    """The knowledge source for one agent whose trigger names board keys. ``name`` is ``agent_<name>``."""

    priority = 0

    def __init__(self, spec: AgentSpec, *, hive_dir: Path, stubs_dir: Path | None = None,
                 approver: Approver | None = None, client: Any = None) -> None:
        self.spec = spec
        self.name = "agent_" + spec.name.replace("-", "_")
        self.triggers: tuple[str, ...] = spec.trigger.keys
        self.hive_dir = Path(hive_dir)
        self.stubs_dir = stubs_dir
        self.approver = approver
        self.client = client

    def prompt_for(self, entry: Entry) -> str:
        """What the turn is asked: the key that was written, its revision, who wrote it and the value."""
        value = json.dumps(entry.value, ensure_ascii=False, sort_keys=True)
        return (f"The key {entry.key} of your hive's blackboard was written (revision {entry.revision}, by "
                f"{entry.writer or 'someone'}). Its value:\n{value}\n\nDo your task for it.")

    async def activate(self, entry: Entry, ctx: Any) -> Sequence[Write]:
        bindings = load_bindings(self.stubs_dir) if self.stubs_dir is not None else []
        agent = build_agent(self.spec, hive=ctx.hive, hive_dir=self.hive_dir, board=ctx.board,
                            transport=ctx.transport, bindings=bindings, approver=self.approver, client=self.client)
        # The transcript's keys are the framework's: written past the board's schema, on the same bucket.
        transcript = BoardTranscript(KvBlackboard(ctx.transport.connection.jetstream(), ctx.hive), self.spec.name)
        try:
            result = await agent.run_turn(self.prompt_for(entry), on_frame=transcript)
        finally:
            await agent.close()
        if not result.stop.normal:
            raise AgentStopped(self.spec.name, result.stop, entry.key)
        return []


def agent_sources(near: str | Path, *, approver: Approver | None = None, client: Any = None) -> list[AgentSource]:
    """The board-triggered agents of the hive whose directory holds (or is above) ``near``: a hive's
    ``knowledge.py`` passes its ``__file__``. Agents without trigger keys are not sources."""
    start = Path(near).resolve()
    hive_dir = next((d for d in (start, *start.parents) if (d / MANIFEST_NAME).is_file()), None)
    if hive_dir is None:
        raise InputError(f"no {MANIFEST_NAME} at or above {start}", code="agent.no_hive",
                         hint="call agent_sources(__file__) from a module inside the hive's directory")
    manifest = load_manifest(hive_dir)
    try:
        stubs: Path | None = open_workspace(find_root(hive_dir)).stubs_dir / manifest.name
    except SubhiveError:
        stubs = None  # a hive outside a workspace (its own tests): no contract tools
    return [AgentSource(spec, hive_dir=hive_dir, stubs_dir=stubs, approver=approver, client=client)
            for spec in manifest.agents if spec.trigger.keys]
