"""One turn of a hive's agent, as ``subhive agent run`` starts it: the agent picked from the hive's manifest,
its tools built over the running hive's board and bus, and every frame kept on the hive's board."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..bus import BusEndpoint, NatsTransport
from ..errors import InputError, Location
from ..hive import BoardSchema, HiveContext, KvBlackboard
from ..runtime import ContractBinding
from ..workspace import AGENT_TOOLS, AgentSpec, SubhiveManifest, Workspace, open_workspace
from ._approvals import root_approver
from ._build import build_agent
from ._grpc_tools import grpc_contracts, hive_keys
from ._loop import Frame, FrameSink, TurnResult
from ._memory import AgentMemory
from ._report import RootReporter
from ._review import is_repair_prompt, review_for
from ._tools import Approver
from ._vote import quorum_for

__all__ = ["TRANSCRIPT_PREFIX", "BoardTranscript", "pick_agent", "run_hive_turn", "transcript_key"]

#: Board keys under this prefix are the framework's: one per turn (its summary) and one per frame.
TRANSCRIPT_PREFIX = "agent-turns"
#: The tools that work without the running tree (no board, bus or root needed).
_LOCAL_TOOLS = frozenset({"list_files", "read_file", "search", "propose_diff", "plan"})


def transcript_key(agent: str, turn: str, seq: int | None = None) -> str:
    """``agent-turns.<agent>.<turn>`` (the turn's summary) or ``...<turn>.<seq>`` (one frame, zero-padded so
    keys sort in order)."""
    key = f"{TRANSCRIPT_PREFIX}.{agent}.{turn}"
    return key if seq is None else f"{key}.{seq:06d}"


class BoardTranscript:
    """A frame sink that keeps a turn on the hive's board: each frame under its own key (linear in the turn's
    length, where rewriting one growing value would not be), and the turn's summary (prompt, status, stop,
    frame count) under the turn's key, written when it starts, parks (``parked``: the approval it waits for),
    resumes and stops. The keys are the framework's,
    so they are written past the hive's board schema."""

    def __init__(self, board: KvBlackboard, agent: str) -> None:
        self.board = board
        self.agent = agent
        self.writer = f"agent:{agent}"

    async def load(self, turn: str) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """A kept turn: its summary (None when it was never started) and its frames, in order."""
        summary = await self.board.get(transcript_key(self.agent, turn))
        if summary is None:
            return None, []
        frames = []
        for key in await self.board.keys(transcript_key(self.agent, turn) + ".*"):
            entry = await self.board.get(key)
            if entry is not None:
                frames.append(entry.value)
        return summary.value, sorted(frames, key=lambda f: int(f["seq"]))

    async def __call__(self, frame: Frame) -> None:
        data = frame.to_dict()
        await self.board.put(transcript_key(self.agent, frame.turn, frame.seq), data, writer=self.writer)
        if frame.kind == "turn.started":
            await self.board.put(
                transcript_key(self.agent, frame.turn),
                {
                    "agent": self.agent,
                    "turn": frame.turn,
                    "status": "running",
                    "prompt": frame.data.get("prompt"),
                    "started": frame.time,
                },
                writer=self.writer,
            )
        elif frame.kind in ("turn.parked", "turn.resumed"):
            parked = frame.kind == "turn.parked"
            await self.board.update(
                transcript_key(self.agent, frame.turn),
                lambda old: {
                    **{k: v for k, v in (old or {}).items() if k != "parked"},
                    "status": "parked" if parked else "running",
                    **({"parked": {k: data.get(k) for k in ("approval", "id", "name", "deadline")}} if parked else {}),
                },
                writer=self.writer,
            )
        elif frame.kind == "turn.stopped":
            await self.board.update(
                transcript_key(self.agent, frame.turn),
                lambda old: {
                    **(old or {}),
                    "status": "completed" if data["stop"]["code"] == "completed" else "stopped",
                    "stop": data["stop"],
                    "answer": data.get("answer"),
                    "frames": frame.seq,
                    "stopped": frame.time,
                },
                writer=self.writer,
            )


def pick_agent(manifest: SubhiveManifest, name: str | None, *, where: Location | None = None) -> AgentSpec:
    """The agent ``name`` of the hive, or its only agent when ``name`` is None."""
    names = [a.name for a in manifest.agents]
    if not names:
        raise InputError(
            f"sub-hive {manifest.name} declares no agent",
            code="agent.none",
            location=where,
            hint="declare one in its subhive.toml: [agents.NAME] (docs/agents.md)",
        )
    if name is None:
        if len(names) > 1:
            raise InputError(
                f"sub-hive {manifest.name} has {len(names)} agents: {', '.join(names)}",
                code="agent.ambiguous",
                location=where,
                hint="choose one with --agent NAME",
            )
        return manifest.agents[0]
    for spec in manifest.agents:
        if spec.name == name:
            return spec
    raise InputError(
        f"sub-hive {manifest.name} has no agent {name!r}",
        code="agent.unknown",
        location=where,
        hint=f"its agents are: {', '.join(names)}",
    )


def load_bindings(stubs_dir: Path) -> list[ContractBinding]:
    """The contract versions codegen gave a hive (``stubs/<hive>/*/contract.json``), sorted."""
    bindings = [ContractBinding.load(path) for path in sorted(stubs_dir.glob("*/contract.json"))]
    return sorted(bindings, key=lambda b: (b.name, b.major))


async def run_hive_turn(
    workspace: Path,
    hive: str,
    prompt: str,
    *,
    agent: str | None = None,
    endpoint: BusEndpoint | None = None,
    on_frame: FrameSink | None = None,
    approver: Approver | None = None,
    root: Any = None,
    client: Any = None,
    resume: str | None = None,
) -> TurnResult:
    """Run one turn of ``hive``'s agent on ``prompt``. ``endpoint``: the running tree's NATS server (with the
    framework's credentials); without it only the file tools can work and no transcript is kept. ``ask`` calls
    go to ``approver``, else, with ``root`` (a ``RootClient`` with the admin's token), to a person at the root
    (``subhive approvals``), else they are refused. ``resume``: the id of a turn that died mid-way (its process
    ended); it goes on from its frames on the board, and ``prompt`` is not used."""
    ws = open_workspace(workspace)
    tree = ws.hives()
    manifest = tree.hives.get(hive)
    if manifest is None:
        raise InputError(
            f"no valid sub-hive {hive!r} in {ws.root}",
            code="hive.unknown",
            location=Location(file=str(ws.hives_dir)),
            hint="subhive status lists the hives",
        )
    hive_dir = ws.hive_dir(hive)
    spec = pick_agent(manifest, agent, where=Location(file=str(hive_dir / "subhive.toml")))
    turn = resume or uuid.uuid4().hex[:12]
    if approver is None and root is not None:
        approver = root_approver(root, agent=spec.name, turn=turn, hive=hive)
    # With the root (the admin's token, naming the hive), the root's event stream shows every step too.
    reporter = RootReporter(root, agent=spec.name, hive=hive) if root is not None else None
    try:
        return await _run(
            ws,
            spec,
            prompt,
            hive_dir=hive_dir,
            manifest=manifest,
            endpoint=endpoint,
            on_frame=sinks(on_frame, reporter),
            approver=approver,
            client=client,
            turn=turn,
            root=root,
            resume=resume,
        )
    finally:
        if reporter is not None:
            await reporter.close()


async def _run(
    ws: Workspace,
    spec: AgentSpec,
    prompt: str,
    *,
    hive_dir: Path,
    manifest: SubhiveManifest,
    endpoint: BusEndpoint | None,
    on_frame: FrameSink | None,
    approver: Approver | None,
    client: Any,
    turn: str,
    root: Any,
    resume: str | None,
) -> TurnResult:
    hive = manifest.name
    needs_bus = sorted(t for t in spec.tools if t not in _LOCAL_TOOLS)
    if endpoint is None:
        if resume:
            raise InputError(
                f"turn {resume} is kept on the board of {hive}, which needs the running tree",
                code="agent.not_running",
                hint="start it: subhive up --detach",
            )
        if needs_bus:
            raise InputError(
                f"agent {spec.name} uses {', '.join(needs_bus)}, which need the running tree",
                code="agent.not_running",
                location=spec.locations.get(f"tools.{needs_bus[0]}"),
                hint="start it: subhive up --detach",
            )
        review = review_for(manifest, spec, hive_dir=hive_dir, on_frame=on_frame, repair=is_repair_prompt(prompt))
        built = build_agent(spec, hive=hive, hive_dir=hive_dir, approver=approver, client=client, review=review)
        try:
            return await built.run_turn(prompt, on_frame=on_frame, turn_id=turn)
        finally:
            await built.close()
            if review is not None:
                await review.close()
    return await _run_on_bus(
        ws.stubs_dir / hive,
        hive_dir,
        manifest,
        spec,
        prompt,
        endpoint=endpoint,
        on_frame=on_frame,
        approver=approver,
        client=client,
        turn=turn,
        root=root,
        resume=resume is not None,
    )


async def _run_on_bus(
    stubs: Path,
    hive_dir: Path,
    manifest: SubhiveManifest,
    spec: AgentSpec,
    prompt: str,
    *,
    endpoint: BusEndpoint,
    on_frame: FrameSink | None,
    approver: Approver | None,
    client: Any,
    turn: str,
    root: Any,
    resume: bool = False,
) -> TurnResult:
    hive = manifest.name
    transport = await NatsTransport.connect(endpoint, hive)
    try:
        js = transport.connection.jetstream()
        board = await KvBlackboard.open(js, hive, BoardSchema.load(hive_dir / manifest.blackboard_schema, hive=hive))
        transcript = BoardTranscript(await KvBlackboard.open(js, hive), spec.name)
        memory = AgentMemory(transcript.board, spec.name, rule=manifest.memory)
        uses_contracts = any(t not in AGENT_TOOLS for t in spec.tools)
        if root is None and "propose_contract" in spec.tools:
            raise InputError(
                f"agent {spec.name} uses propose_contract, which needs the running root",
                code="agent.not_running",
                location=spec.locations.get("tools.propose_contract"),
                hint="start the tree: subhive up --detach",
            )
        bindings = load_bindings(stubs) if uses_contracts else []
        # gRPC tools call as the hive itself (the key file `subhive up` gave it), as its own sources do.
        channels = HiveContext(hive, board, transport, root=root, keys=hive_keys(stubs.parent.parent, hive))
        review = review_for(
            manifest,
            spec,
            hive_dir=hive_dir,
            board=board,
            records=transcript.board,
            on_frame=on_frame,
            repair=is_repair_prompt(prompt),
        )
        quorum = quorum_for(manifest, spec, hive_dir=hive_dir, board=board, records=transcript.board, root=root)
        built = build_agent(
            spec,
            hive=hive,
            hive_dir=hive_dir,
            board=board,
            transport=transport,
            bindings=bindings,
            approver=approver,
            client=client,
            root=root,
            root_is_admin=True,
            records=transcript.board,
            services=grpc_contracts(bindings, stubs.parent.parent, hive=hive),
            channel=channels.channel,
            critical=manifest.quorum.keys if manifest.quorum else (),
            review=review,
            quorum=quorum.tool if quorum is not None else None,
        )
        try:
            if resume:
                return await built.resume_turn(
                    turn, await _resumable(transcript, turn, hive), on_frame=sinks(transcript, memory, on_frame)
                )
            return await built.run_turn(
                prompt,
                on_frame=sinks(transcript, memory, on_frame),
                turn_id=turn,
                context=await memory.recall(prompt, spec.memory_tokens),
            )
        finally:
            await built.close()
            await channels.close()
            if review is not None:
                await review.close()
            if quorum is not None:
                await quorum.close()
    finally:
        await transport.close()


async def _resumable(transcript: BoardTranscript, turn: str, hive: str) -> list[dict[str, Any]]:
    summary, frames = await transcript.load(turn)
    if summary is None:
        raise InputError(
            f"no turn {turn} of agent {transcript.agent} on the board of {hive}",
            code="agent.turn_unknown",
            hint=f"the turns are the keys {TRANSCRIPT_PREFIX}.{transcript.agent}.*: subhive board show {hive}",
        )
    if summary.get("status") == "parked":
        waiting = (summary.get("parked") or {}).get("approval") or "an approval"
        raise InputError(
            f"turn {turn} is parked: its hive resumes it once {waiting} is decided or times out",
            code="agent.turn_parked",
            hint=f"decide it: subhive approvals show {waiting}",
        )
    if summary.get("status") != "running":
        raise InputError(
            f"turn {turn} already {summary.get('status')}: nothing to resume",
            code="agent.turn_ended",
            hint="start a new turn instead",
        )
    return frames


def sinks(*given: FrameSink | None) -> FrameSink:
    """One frame sink that hands each frame to every sink given, in order (None skipped)."""
    chosen: Sequence[FrameSink] = [s for s in given if s is not None]

    async def sink(frame: Frame) -> None:
        for each in chosen:
            outcome = each(frame)
            if outcome is not None:
                await outcome

    return sink
