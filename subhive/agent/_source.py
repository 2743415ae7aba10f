"""An agent as a knowledge source of its hive: a write to a board key its trigger names starts a turn, and a
request for the contract operation it serves starts one whose answer is the reply. The controller runs it like
any source. See docs/agents.md#agents-woken-by-the-board and docs/agents.md#agents-that-serve-an-operation.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError, Location, SubhiveError
from ..hive import Entry, KvBlackboard, Parked, Reply, Write
from ..runtime import ContractBinding
from ..workspace import (
    MANIFEST_NAME,
    AgentSpec,
    MemorySpec,
    SubhiveManifest,
    find_root,
    load_manifest,
    open_workspace,
)
from ._approvals import parking_approver
from ._build import build_agent
from ._grpc_tools import grpc_contracts
from ._hive_turn import BoardTranscript, load_bindings, sinks
from ._loop import Stop
from ._memory import AgentMemory
from ._report import RootReporter
from ._review import Review, review_for
from ._tools import Approver, ToolError
from ._vote import QuorumTool, quorum_for

__all__ = ["AgentSource", "AgentStopped", "agent_sources", "operation_answer"]

#: A refused answer goes back to the model this many times before the request fails.
ANSWER_RETRIES = 2


class AgentStopped(SubhiveError):
    """A turn started by the board ended without an answer; ``stop`` says why (its code is ``agent.<stop>``)."""

    default_code = "agent.stopped"

    def __init__(self, agent: str, stop: Stop, key: str) -> None:
        super().__init__(
            f"agent {agent} stopped on {key}: {stop.message}",
            code=f"agent.{stop.code}",
            location=Location(subject=key),
            hint="read the turn's frames: subhive board show HIVE",
        )
        self.stop = stop


class AgentSource:
    """The knowledge source for one agent whose trigger names board keys (``triggers``) or a provided operation
    (``operations``). ``name`` is ``agent_<name>``."""

    priority = 0

    def __init__(
        self,
        spec: AgentSpec,
        *,
        hive_dir: Path,
        stubs_dir: Path | None = None,
        approver: Approver | None = None,
        client: Any = None,
        memory: MemorySpec | None = None,
        critical: Sequence[str] = (),
        manifest: SubhiveManifest | None = None,
    ) -> None:
        self.spec = spec
        #: How the confidence of the hive's remembered patterns moves (``[memory]``).
        self.memory_rule = memory
        #: Board key patterns only a quorum writes (``[quorum]``): the agent's board_write refuses them.
        self.critical = tuple(critical)
        #: The hive's manifest, for its ``[review]`` of this agent's changes.
        self.manifest = manifest
        self.name = "agent_" + spec.name.replace("-", "_")
        self.triggers: tuple[str, ...] = spec.trigger.keys
        self.operations: tuple[str, ...] = (spec.trigger.operation,) if spec.trigger.operation else ()
        #: How long the controller lets a turn run before it counts as stalled: the turn's own wall time and a
        #: margin, instead of the hive-wide 30 s (a turn waiting for a person is parked meanwhile, not running).
        self.stall_after = spec.budgets.wall_time + 30.0
        self.hive_dir = Path(hive_dir)
        self.stubs_dir = stubs_dir
        self.approver = approver
        self.client = client

    def prompt_for(self, entry: Entry) -> str:
        """What the turn is asked: the key that was written, its revision, who wrote it and the value."""
        value = json.dumps(entry.value, ensure_ascii=False, sort_keys=True)
        return (
            f"The key {entry.key} of your hive's blackboard was written (revision {entry.revision}, by "
            f"{entry.writer or 'someone'}). Its value:\n{value}\n\nDo your task for it."
        )

    async def activate(self, entry: Entry, ctx: Any) -> Sequence[Write | Reply]:
        """Run the turn ``entry`` starts (or goes on with the one it started before the hive died). A call that
        waits for a person at the root parks the turn: :class:`~subhive.hive.Parked` frees the controller's
        worker, and the turn resumes from its frames once the decision or the deadline wakes it."""
        if entry.key.startswith("op."):
            return await self._turn(entry, ctx, uuid.uuid4().hex[:12], None)
        # The same board write, delivered again after the hive died mid-turn, finds its turn and goes on.
        found = await _turn_for(self._transcript(ctx), entry)
        if found is None:
            return []  # this write's turn already ended with an answer
        return await self._turn(entry, ctx, *found)

    def _transcript(self, ctx: Any) -> BoardTranscript:
        # The transcript's keys are the framework's: written past the board's schema, on the same bucket.
        return BoardTranscript(KvBlackboard(ctx.transport.connection.jetstream(), ctx.hive), self.spec.name)

    async def _woken(self, entry: Entry, turn: str, ctx: Any) -> Sequence[Write | Reply]:
        """A parked turn serving a request, woken: it goes on from its frames (a board write's turn is found
        again by its write instead, as after a restart)."""
        _summary, frames = await self._transcript(ctx).load(turn)
        return await self._turn(entry, ctx, turn, frames or None)

    async def _turn(
        self, entry: Entry, ctx: Any, turn: str, resume: list[dict[str, Any]] | None
    ) -> Sequence[Write | Reply]:
        bindings = load_bindings(self.stubs_dir) if self.stubs_dir is not None else []
        transcript = self._transcript(ctx)
        approver = self.approver
        if approver is None and getattr(ctx, "root", None) is not None:  # under `subhive up`: a person at the root
            approver = parking_approver(ctx.root, agent=self.spec.name, turn=turn, timeout=self.spec.approval_timeout)
        agent = build_agent(
            self.spec,
            hive=ctx.hive,
            hive_dir=self.hive_dir,
            board=ctx.board,
            transport=ctx.transport,
            bindings=bindings,
            approver=approver,
            client=self.client,
            root=getattr(ctx, "root", None),
            records=transcript.board,
            services=grpc_contracts(bindings, self.stubs_dir.parent.parent, hive=ctx.hive) if self.stubs_dir else (),
            channel=getattr(ctx, "channel", None),  # the hive's own channels: its keys, found through its root
            critical=self.critical,
            review=(review := self._review(ctx, transcript)),
            quorum=quorum.tool if (quorum := self._quorum(ctx, transcript)) is not None else None,
        )
        check, prompt = None, self.prompt_for(entry)
        if entry.key.startswith("op."):
            contract, _, operation = entry.key[3:].partition(".")
            binding = _provided(bindings, contract, ctx.hive, self.spec)
            check = operation_answer(binding, operation)
            prompt = self.request_prompt(binding, operation, entry.value)
        memory = AgentMemory(transcript.board, self.spec.name, rule=self.memory_rule)
        # Under `subhive up` the root's event stream shows every step too (the hive's own token).
        root = getattr(ctx, "root", None)
        reporter = RootReporter(root, agent=self.spec.name) if root is not None else None
        try:
            if resume:
                result = await agent.resume_turn(
                    turn,
                    resume,
                    on_frame=sinks(transcript, memory, reporter),
                    answer_check=check,
                    answer_retries=ANSWER_RETRIES,
                )
            else:
                result = await agent.run_turn(
                    prompt,
                    on_frame=sinks(transcript, memory, reporter),
                    answer_check=check,
                    answer_retries=ANSWER_RETRIES,
                    turn_id=turn,
                    context=await memory.recall(prompt, self.spec.memory_tokens),
                )
        finally:
            if reporter is not None:
                await reporter.close()
            await agent.close()
            if review is not None:
                await review.close()
            if quorum is not None:
                await quorum.close()
        if result.parked is not None:
            serving = entry.key.startswith("op.")
            raise Parked(
                result.parked.wake(),
                resume=(lambda context: self._woken(entry, turn, context)) if serving else None,
                reason=f"turn {turn}: {result.stop.message}",
            )
        if not result.stop.normal:
            raise AgentStopped(self.spec.name, result.stop, entry.key)
        return [Reply(result.value)] if check is not None else []

    def _quorum(self, ctx: Any, transcript: BoardTranscript) -> QuorumTool | None:
        """``propose_critical`` over the hive's board, its voters the hive's agents (``[quorum]``)."""
        if self.manifest is None:
            return None
        return quorum_for(
            self.manifest,
            self.spec,
            hive_dir=self.hive_dir,
            board=ctx.board,
            records=transcript.board,
            root=getattr(ctx, "root", None),
        )

    def _review(self, ctx: Any, transcript: BoardTranscript) -> Review | None:
        """The hive's debate over this agent's changes (``[review]``): its frames on the board and, under
        ``subhive up``, on the root's event stream."""
        if self.manifest is None or self.manifest.review is None:
            return None
        root = getattr(ctx, "root", None)
        reporter = RootReporter(root, agent=self.spec.name) if root is not None else None
        return review_for(
            self.manifest,
            self.spec,
            hive_dir=self.hive_dir,
            board=ctx.board,
            records=transcript.board,
            on_frame=reporter,
            reporter=reporter,
        )

    def request_prompt(self, binding: ContractBinding, operation: str, request: Any) -> str:
        """What a turn serving an operation is asked: the request, and the reply schema its answer must meet."""
        _input, output = binding.operation(operation)
        return (
            f"A request for operation {operation} of contract {binding.id} arrived:\n"
            f"{json.dumps(request, ensure_ascii=False, sort_keys=True)}\n\nAnswer with only the reply: one "
            f"JSON value valid against this JSON Schema:\n{json.dumps(binding.schemas[output], sort_keys=True)}"
        )


async def _turn_for(transcript: BoardTranscript, entry: Entry) -> tuple[str, list[dict[str, Any]] | None] | None:
    """The turn a board write starts, named after the write (``k<hash of key and revision>``): a new one, or the
    one it started before a crash (with its frames), or None when that turn ended with an answer. A turn that
    stopped otherwise is tried again under the next name (``...-2``), as the controller's retry asks."""
    base = "k" + hashlib.sha256(f"{entry.key}@{entry.revision}".encode()).hexdigest()[:15]
    for attempt in range(1, 100):
        turn = base if attempt == 1 else f"{base}-{attempt}"
        summary, frames = await transcript.load(turn)
        if summary is None:
            return turn, None
        if summary.get("status") in ("running", "parked"):
            return turn, frames or None
        if summary.get("status") == "completed":
            return None
    raise InputError(
        f"the write {entry.key}@{entry.revision} started 99 turns that all stopped",
        code="agent.too_many_attempts",
        hint="read the turns: subhive board show HIVE",
    )


def operation_answer(binding: ContractBinding, operation: str) -> Callable[[str | None], Any]:
    """The check a served operation's answer passes: JSON (a fenced ```json block is unwrapped), valid against
    the operation's reply schema; otherwise ``answer.not_json`` or the contract's ``payload.*`` code."""
    _input, output = binding.operation(operation)

    def check(content: str | None) -> Any:
        text = (content or "").strip()
        fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", text, re.S)
        try:
            value = json.loads(fenced.group(1) if fenced else text)
        except ValueError as exc:
            raise ToolError(
                f"the answer is not JSON: {exc}",
                code="answer.not_json",
                hint="answer with the JSON reply only, no prose around it",
            ) from None
        binding.check(output, value, moving="outgoing")
        return value

    return check


def _provided(bindings: Sequence[ContractBinding], contract: str, hive: str, spec: AgentSpec) -> ContractBinding:
    for binding in bindings:
        if binding.name == contract and binding.provider == hive:
            return binding
    raise InputError(
        f"agent {spec.name} serves {contract}, but {hive} has no stubs for it",
        code="agent.contract_missing",
        location=spec.locations.get(""),
        hint="run subhive codegen (subhive up does) so the hive has its contracts",
    )


def agent_sources(near: str | Path, *, approver: Approver | None = None, client: Any = None) -> list[AgentSource]:
    """The board-triggered agents of the hive whose directory holds (or is above) ``near``: a hive's
    ``knowledge.py`` passes its ``__file__``. Agents without a trigger are not sources."""
    start = Path(near).resolve()
    hive_dir = next((d for d in (start, *start.parents) if (d / MANIFEST_NAME).is_file()), None)
    if hive_dir is None:
        raise InputError(
            f"no {MANIFEST_NAME} at or above {start}",
            code="agent.no_hive",
            hint="call agent_sources(__file__) from a module inside the hive's directory",
        )
    manifest = load_manifest(hive_dir)
    try:
        stubs: Path | None = open_workspace(find_root(hive_dir)).stubs_dir / manifest.name
    except SubhiveError:
        stubs = None  # a hive outside a workspace (its own tests): no contract tools
    return [
        AgentSource(
            spec,
            hive_dir=hive_dir,
            stubs_dir=stubs,
            approver=approver,
            client=client,
            memory=manifest.memory,
            critical=manifest.quorum.keys if manifest.quorum else (),
            manifest=manifest,
        )
        for spec in manifest.agents
        if spec.trigger.keys or spec.trigger.operation
    ]
