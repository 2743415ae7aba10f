"""An agent as a voter on a critical board key (``[quorum]``): one turn of its own, which sees the key and the
proposed value only (never another voter's answer), and answers the value it stands for as JSON. The
``propose_critical`` tool lets an agent start a round whose voters are the hive's agents."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..hive import KvBlackboard, QuorumWrites, Voter
from ..workspace import AgentSpec, SubhiveManifest
from ._loop import Agent, FrameSink
from ._tools import Tool, ToolError, schema_object

__all__ = ["QuorumTool", "agent_voter", "json_answer", "quorum_for"]

log = logging.getLogger(__name__)

#: The tools a voter keeps from its manifest: it reads the hive to check the value, and changes nothing.
_READ_ONLY = ("list_files", "read_file", "search", "board_read")


def json_answer(content: str | None) -> Any:
    """The JSON value of a final message (a fenced ```json block is unwrapped); ``answer.not_json`` otherwise."""
    text = (content or "").strip()
    fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", text, re.S)
    try:
        return json.loads(fenced.group(1) if fenced else text)
    except ValueError as exc:
        raise ToolError(
            f"the answer is not JSON: {exc}",
            code="answer.not_json",
            hint="answer with the JSON value only, no prose around it",
        ) from None


def agent_voter(agent: Agent, *, on_frame: FrameSink | None = None) -> Voter:
    """A :data:`~subhive.hive.Voter` that asks ``agent``. A turn that ends without a JSON answer casts no vote
    (it raises, and the round counts it as failed)."""

    async def vote(key: str, proposed: Any) -> Any:
        prompt = (
            f"A value is proposed for the critical board key {key}:\n{json.dumps(proposed, ensure_ascii=False)}\n"
            "Check it with your tools. Answer with the JSON value this key should hold: the proposed one if it is "
            "right, else the right one. Answer with JSON only."
        )
        result = await agent.run_turn(prompt, on_frame=on_frame, answer_check=json_answer)
        if result.stop.code != "completed":
            raise RuntimeError(f"voter {agent.settings.name} stopped: {result.stop.code}")
        return result.value

    return vote


class QuorumTool:
    """``propose_critical {key, value}``: an agent proposes a value for a critical board key (``[quorum]``) and
    the hive's voter agents decide it in a round (:class:`~subhive.hive.QuorumWrites`). ``agents`` are the voters
    the framework runs (closed with :meth:`close`)."""

    def __init__(
        self, quorum: QuorumWrites, agents: Mapping[str, Agent], *, proposer: str, root: Any = None, hive: str = ""
    ) -> None:
        self.quorum = quorum
        self.agents = dict(agents)
        self.proposer = proposer
        #: A ``RootClient``: an escalated round becomes a repair proposal a person sees (``subhive approvals``).
        self.root, self.hive = root, hive
        self.tool = Tool(
            "propose_critical",
            "Propose a value for a critical key of the hive's blackboard: the hive's voters are asked, each on "
            "its own, and the value is written only if enough of them agree. Answers the round: accepted (with "
            "the value written) or escalated (with each voter's value).",
            schema_object({"key": {"type": "string"}, "value": {"description": "any JSON value"}}, ["key", "value"]),
            self._run,
        )

    async def _run(self, arguments: dict[str, Any]) -> dict[str, Any]:
        key = str(arguments["key"])
        if not self.quorum.is_critical(key):
            raise ToolError(
                f"{key} is not a critical key of this hive",
                code="quorum.not_critical",
                hint="write it with board_write",
            )
        voters = {f"agent:{name}": agent_voter(agent) for name, agent in self.agents.items()}
        round_id, outcome = await self.quorum.decide(key, arguments["value"], voters, proposer=self.proposer)
        answer = {"round": round_id, **outcome.to_dict()}
        if not outcome.accepted and self.root is not None:
            answer["repair"] = await self._escalate(key, round_id, answer)
        return answer

    async def _escalate(self, key: str, round_id: str, answer: dict[str, Any]) -> str:
        """The round's disagreement, with each voter's value, as a repair proposal at the root; its id, or ""
        when the root could not be reached (the round stays on the board either way)."""
        from ..bus import kv_bucket

        try:
            approval = await self.root.propose_repair(
                code="quorum.escalated",
                message=f"no quorum for critical key {key} (round {round_id}): {answer.get('reason', '')}",
                subject=f"$KV.{kv_bucket(self.hive)}.{key}" if self.hive else "",
                sample=json.dumps(answer, ensure_ascii=False, default=str),
                hive=self.hive or None,  # the admin's client must name it; a hive's own may
            )
        except Exception as exc:  # the round stays on the board; the tool's answer says it was not proposed
            log.warning("quorum round %s on %s escalated, but the root refused it: %s", round_id, key, exc)
            return ""
        return str(approval.id)

    async def close(self) -> None:
        for agent in self.agents.values():
            await agent.close()


def quorum_for(
    manifest: SubhiveManifest,
    author: AgentSpec,
    *,
    hive_dir: Path,
    board: KvBlackboard,
    records: KvBlackboard,
    root: Any = None,
) -> QuorumTool | None:
    """The ``propose_critical`` tool of ``author`` in ``manifest``'s hive, or None when the author does not list
    it or the hive has no ``[quorum]``. The voters are the hive's agents named ``agent:NAME`` in ``voters``,
    each built from its own ``[agents.NAME]`` with its read-only tools only. With ``root``, a round without a
    quorum is also proposed as a repair there."""
    from ._build import build_agent

    spec = manifest.quorum
    if spec is None or "propose_critical" not in author.tools:
        return None
    declared = {a.name: a for a in manifest.agents}
    agents = {}
    for voter in spec.voters:
        name = voter.removeprefix("agent:")
        if voter.startswith("agent:") and name in declared:
            role = declared[name]
            tools = {t: "allow" for t in role.tools if t in _READ_ONLY}
            agents[name] = build_agent(replace(role, tools=tools), hive=manifest.name, hive_dir=hive_dir, board=board)
    return QuorumTool(
        QuorumWrites(spec, board, records), agents, proposer=f"agent:{author.name}", root=root, hive=manifest.name
    )
