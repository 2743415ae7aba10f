"""A debate before a change reaches a person (``[review]`` in subhive.toml): a reviewer and a devil's advocate
argue over an agent's proposed diff or contract for a few rounds, then a judge decides.

The judge is not left to count votes. The framework reads the debate itself and computes signals of false
consensus (objections raised and whether each was answered with evidence it can check, positions that moved
without new evidence, arguments repeated), gives them to the judge, and records them with the verdict. A change
the judge rejects goes back to its author as the tool's result, with the reasons; one it approves goes on to the
person, who sees the verdict, the strongest objection and the evidence (``subhive approvals show``). Every step
is a frame (the root's event stream, the hive's board). See docs/agents.md#review-quorum-and-memory and
decisions 0087, 0088.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import SubhiveError
from ..hive import KvBlackboard, check_key
from ..workspace import AgentSpec, ReviewSpec, SubhiveManifest
from ._files import FileSlice
from ._loop import Agent, Frame, FrameSink
from ._tools import Tool, ToolError
from ._vote import json_answer

__all__ = [
    "REVIEW_PREFIX",
    "Review",
    "consensus_signals",
    "is_repair_prompt",
    "review_for",
    "review_id",
    "review_key",
]

#: Board keys under this prefix are the framework's: one per review (its record), one per frame.
REVIEW_PREFIX = "agent-reviews"
_CITATION = re.compile(r"^(?P<path>[^\s:]+):(?P<line>\d+)(?:-(?P<end>\d+))?$")
_WORD = re.compile(r"[a-z0-9_]{3,}")
#: Two arguments sharing this share of their words (Jaccard) are the same argument said twice.
DUPLICATE_AT = 0.8
_REPAIR_PROMPT = re.compile(r"^Repair r-\d+: ")
#: The tools a debater or judge keeps from its manifest: it reads the hive to find evidence, and changes nothing.
_READ_ONLY = ("list_files", "read_file", "search", "board_read")

_ROLE_TEXT = {
    "reviewer": "You are the reviewer. Find what is wrong with the change; approve it only if it is right.",
    "advocate": "You are the devil's advocate. Test the reviewer's position: argue the other side, raise what "
    "the reviewer missed, and concede only to evidence.",
}
_DEBATE_FORMAT = (
    "Answer with one JSON object only: "
    '{"position": "approve" or "reject", "argument": "why, in a few sentences", '
    '"objections": ["a new objection", ...], '
    '"answers": [{"objection": "o1", "text": "how it is answered", "evidence": ["path:line", "board:KEY"]}], '
    '"evidence": ["path:line", "board:KEY"]}. '
    "Evidence is checked by the framework: cite a line of the hive's files as path:line (or path:first-last) "
    "and a board key as board:KEY; a citation that does not exist counts against you."
)
_JUDGE_FORMAT = (
    "Answer with one JSON object only: "
    '{"verdict": "approve" or "reject", "reasoning": "why", "strongest_objection": "the strongest objection, '
    'answered or not", "evidence": ["path:line", "board:KEY"]}. Weigh the framework\'s signals: agreement '
    "without evidence, objections left unanswered and positions that moved without new evidence are not "
    "consensus."
)


def review_id(tool: str, arguments: str) -> str:
    """The id of a review of one proposed call: a hash of the tool and its exact arguments, so the approval
    that shows the same call (``subhive approvals show``) finds its review."""
    return hashlib.sha256(f"{tool}\n{arguments}".encode()).hexdigest()[:16]


def review_key(author: str, review: str, seq: int | None = None) -> str:
    """``agent-reviews.<author>.<review>`` (the record) or ``...<review>.<seq>`` (one frame)."""
    key = f"{REVIEW_PREFIX}.{author}.{review}"
    return key if seq is None else f"{key}.{seq:06d}"


def _strings(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def _position(content: str | None) -> dict[str, Any]:
    """A debater's answer, checked: ``answer.invalid`` (the model is told and answers again) when it is not one."""
    value = json_answer(content)
    if not isinstance(value, dict) or value.get("position") not in ("approve", "reject"):
        raise ToolError(
            "the answer must be a JSON object whose position is approve or reject",
            code="answer.invalid",
            hint=_DEBATE_FORMAT,
        )
    answers = [
        {
            "objection": str(a.get("objection", "")),
            "text": str(a.get("text", "")),
            "evidence": _strings(a.get("evidence")),
        }
        for a in value.get("answers", [])
        if isinstance(a, dict)
    ]
    return {
        "position": value["position"],
        "argument": str(value.get("argument", "")),
        "objections": _strings(value.get("objections")),
        "answers": answers,
        "evidence": _strings(value.get("evidence")),
    }


def _verdict(content: str | None) -> dict[str, Any]:
    value = json_answer(content)
    if not isinstance(value, dict) or value.get("verdict") not in ("approve", "reject"):
        raise ToolError(
            "the answer must be a JSON object whose verdict is approve or reject",
            code="answer.invalid",
            hint=_JUDGE_FORMAT,
        )
    return {
        "verdict": value["verdict"],
        "reasoning": str(value.get("reasoning", "")),
        "strongest_objection": str(value.get("strongest_objection", "")),
        "evidence": _strings(value.get("evidence")),
    }


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def consensus_signals(arguments: Sequence[Mapping[str, Any]], valid: Mapping[str, bool]) -> dict[str, Any]:
    """What the debate shows beyond its votes. ``arguments``: in the order said, each with ``role``, ``round``,
    ``position``, ``argument``, ``objections`` (``[{id, text}]``), ``answers`` and ``evidence``; ``valid``:
    each citation and whether it checks out (the file and line exist, the board key exists).

    The signals: every objection and whether the other side answered it with valid evidence; positions that
    changed without a valid citation new to the debate; arguments said twice (by anyone); citations that do
    not check out; and ``flags`` naming what makes an agreement look like conformity rather than evidence.
    ``false_consensus`` is true when the two sides end agreeing and at least one such flag is raised."""
    objections: dict[str, dict[str, Any]] = {}
    seen: set[str] = set()
    changes: list[dict[str, Any]] = []
    last: dict[str, str] = {}
    invalid: list[dict[str, Any]] = []
    cited_valid = 0
    for index, arg in enumerate(arguments):
        cited = list(arg.get("evidence", [])) + [c for a in arg.get("answers", []) for c in a.get("evidence", [])]
        fresh = [c for c in cited if valid.get(c) and c not in seen]
        cited_valid += sum(1 for c in cited if valid.get(c))
        invalid += [{"citation": c, "role": arg["role"], "round": arg["round"]} for c in cited if not valid.get(c)]
        _answered(objections, arg, valid)
        before = last.get(arg["role"])
        if before is not None and before != arg["position"]:
            changes.append(
                {
                    "role": arg["role"],
                    "round": arg["round"],
                    "from": before,
                    "to": arg["position"],
                    "new_evidence": bool(fresh),
                }
            )
        last[arg["role"]] = arg["position"]
        seen.update(c for c in cited if valid.get(c))
        for objection in arg.get("objections", []):
            objections[objection["id"]] = {
                "id": objection["id"],
                "role": arg["role"],
                "round": arg["round"],
                "text": objection["text"],
                "answered": False,
                "answered_with_evidence": False,
                "evidence": [],
                "at": index,
            }
    duplicates = _duplicates(arguments)
    final = set(last.values())
    agreement = len(last) >= 2 and len(final) == 1
    unanswered = [o["id"] for o in objections.values() if not o["answered_with_evidence"]]
    flags = []
    if agreement and cited_valid == 0:
        flags.append("agreement_without_evidence")
    if unanswered and final == {"approve"}:
        flags.append("objection_unanswered")
    if any(not c["new_evidence"] for c in changes):
        flags.append("position_change_without_evidence")
    if duplicates:
        flags.append("duplicated_arguments")
    if invalid:
        flags.append("invalid_citations")
    return {
        "objections": [{k: v for k, v in o.items() if k != "at"} for o in objections.values()],
        "unanswered": unanswered,
        "position_changes": changes,
        "duplicated_arguments": duplicates,
        "invalid_citations": invalid,
        "valid_citations": cited_valid,
        "agreement": agreement,
        "final_positions": dict(last),
        "flags": flags,
        "false_consensus": agreement and bool(flags),
    }


def _answered(objections: dict[str, dict[str, Any]], arg: Mapping[str, Any], valid: Mapping[str, bool]) -> None:
    """Mark the objections of the other side that ``arg`` answers (with valid evidence, or without)."""
    for answer in arg.get("answers", []):
        target = objections.get(answer.get("objection", ""))
        if target is None or target["role"] == arg["role"]:
            continue
        target["answered"] = True
        good = [c for c in answer.get("evidence", []) if valid.get(c)]
        if good:
            target["answered_with_evidence"] = True
            target["evidence"] = sorted({*target["evidence"], *good})


def _duplicates(arguments: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Pairs of arguments (role, round) that say the same thing: most of their words shared."""
    found = []
    for i, first in enumerate(arguments):
        for second in arguments[i + 1 :]:
            a, b = _words(str(first.get("argument", ""))), _words(str(second.get("argument", "")))
            if len(a) >= 3 and len(b) >= 3 and len(a & b) / len(a | b) >= DUPLICATE_AT:
                found.append({"first": [first["role"], first["round"]], "second": [second["role"], second["round"]]})
    return found


@dataclass
class _Frames:
    """The review's own frames: kept on the board under its key and handed to the turn's sinks (the root's
    event stream shows them as ``agent.review.*``)."""

    author: str
    review: str
    records: KvBlackboard | None
    sink: FrameSink | None
    seq: int = 0
    frames: list[Frame] = field(default_factory=list)

    async def emit(self, kind: str, data: dict[str, Any]) -> None:
        self.seq += 1
        frame = Frame(kind, f"review-{self.review}", self.seq, data, time.time())
        self.frames.append(frame)
        if self.records is not None:
            await self.records.put(
                review_key(self.author, self.review, self.seq), frame.to_dict(), writer="review:" + self.author
            )
        if self.sink is not None:
            outcome = self.sink(frame)
            if outcome is not None:
                await outcome


class Review:
    """The review protocol of one hive for one author agent: ``agents`` holds the reviewer, advocate and judge
    (:class:`Agent`, each with its own instructions, model and read-only tools), ``files`` the hive's files and
    ``board`` its board, against which citations are checked; ``records`` keeps the reviews (the bucket
    without the schema). ``on_frame`` gets every frame of the debate."""

    def __init__(
        self,
        spec: ReviewSpec,
        agents: Mapping[str, Agent],
        *,
        author: str,
        files: FileSlice,
        board: KvBlackboard | None = None,
        records: KvBlackboard | None = None,
        on_frame: FrameSink | None = None,
        repair: bool = False,
        reporter: Any = None,
    ) -> None:
        self.spec = spec
        self.agents = dict(agents)
        self.author = author
        self.files = files
        self.board = board
        self.records = records
        self.on_frame = on_frame
        self.repair = repair
        self.reporter = reporter
        #: The last record made (the tests and the benchmark read it).
        self.last: dict[str, Any] | None = None

    async def close(self) -> None:
        for agent in self.agents.values():
            await agent.close()
        if self.reporter is not None:
            await self.reporter.close()

    def covers(self, tool: str) -> bool:
        """Whether a call to ``tool`` is reviewed: listed in ``changes``, or a repair turn's diff."""
        return tool in self.spec.changes or (self.repair and tool == "propose_diff" and "repair" in self.spec.changes)

    def wrap(self, tool: Tool) -> Tool:
        """``tool`` with the review run after its own check and before anyone is asked: a rejected change is
        refused as ``review.rejected`` (what the author reads), an approved one goes on to the person."""
        if not self.covers(tool.name):
            return tool
        inner = tool.check

        async def check(arguments: dict[str, Any]) -> None:
            if inner is not None:
                await inner(arguments)
            text = arguments.get("diff") if tool.name == "propose_diff" else arguments
            record = await self.run(tool.name, json.dumps(arguments, sort_keys=True), text)
            if record["verdict"] == "reject":
                raise ToolError(
                    "the review rejected this change: "
                    + (record["reasoning"] or "no reason given")
                    + (
                        f" Strongest objection: {record['strongest_objection']}"
                        if record["strongest_objection"]
                        else ""
                    ),
                    code="review.rejected",
                    hint="answer the objections with evidence (path:line, board:KEY), or propose another change",
                )

        return Tool(tool.name, tool.description, tool.parameters, tool.run, check=check, concurrent=tool.concurrent)

    async def _valid(self, citation: str) -> bool:
        """Whether a citation checks out: ``board:KEY`` an existing key of the hive's board, ``path:line`` (or
        ``path:first-last``) lines that exist in a file of the hive."""
        if citation.startswith("board:"):
            key = citation[6:]
            try:
                check_key(key)
            except SubhiveError:
                return False
            return self.board is not None and await self.board.get(key) is not None
        match = _CITATION.match(citation.strip())
        if match is None:
            return False
        try:
            real = self.files.resolve(match["path"])
            lines = len(real.read_text(encoding="utf-8", errors="replace").splitlines()) if real.is_file() else 0
        except (SubhiveError, OSError):
            return False
        first, end = int(match["line"]), int(match["end"] or match["line"])
        return 1 <= first <= end <= lines

    async def run(self, tool: str, arguments: str, change: Any) -> dict[str, Any]:
        """Debate ``change`` (the diff, or the contract files) for the configured rounds, have the judge decide,
        and record it all; a call reviewed before gets its kept record back. Returns the record: ``verdict``
        (``approve``, ``reject``, or ``undecided`` when the judge gave no verdict: then the person decides alone),
        ``reasoning``, ``strongest_objection``, ``evidence``, ``signals`` and the transcript."""
        rid = review_id(tool, arguments)
        kept = await self.records.get(review_key(self.author, rid)) if self.records is not None else None
        if kept is not None and isinstance(kept.value, dict) and kept.value.get("verdict") in ("approve", "reject"):
            # The same call reviewed before: a parked turn that is woken checks its call again, and the same
            # change proposed again gets the same verdict, without a second debate. An `undecided` one (the
            # judge gave none: its model was down, say) is debated again rather than kept.
            self.last = kept.value
            return kept.value
        frames = _Frames(self.author, rid, self.records, self.on_frame)
        shown = change if isinstance(change, str) else json.dumps(change, indent=1, sort_keys=True)
        await frames.emit("review.started", {"author": self.author, "tool": tool, "rounds": self.spec.rounds})
        debate: list[dict[str, Any]] = []
        numbered = 0
        for round_no in range(1, self.spec.rounds + 1):
            for role in ("reviewer", "advocate"):
                name = getattr(self.spec, role)
                prompt = (
                    f"{_ROLE_TEXT[role]}\nAgent {self.author} proposes this change with {tool}:\n{shown}\n\n"
                    f"Round {round_no} of {self.spec.rounds}. The debate so far:\n{_transcript(debate)}\n\n"
                    + _DEBATE_FORMAT
                )
                result = await self.agents[name].run_turn(prompt, answer_check=_position)
                said: dict[str, Any] = (
                    dict(result.value)
                    if result.stop.code == "completed" and result.value is not None
                    else {"position": None, "argument": "", "objections": [], "answers": [], "evidence": []}
                    | {"failed": result.stop.code}
                )
                ids = []
                for text in said["objections"]:
                    numbered += 1
                    ids.append({"id": f"o{numbered}", "text": text})
                argument = {**said, "role": role, "agent": name, "round": round_no, "objections": ids}
                if argument["position"] is not None:
                    debate.append(argument)
                await frames.emit("review.argument", argument)
        citations = {c for a in debate for c in a["evidence"]} | {
            c for a in debate for answer in a["answers"] for c in answer["evidence"]
        }
        valid = {c: await self._valid(c) for c in sorted(citations)}
        signals = consensus_signals(debate, valid)
        await frames.emit("review.signals", signals)
        judged = await self.agents[self.spec.judge].run_turn(
            f"You are the judge. Agent {self.author} proposes this change with {tool}:\n{shown}\n\n"
            f"The debate:\n{_transcript(debate)}\n\nThe framework's signals, computed from the debate "
            f"(citations checked against the hive's files and board):\n{json.dumps(signals, indent=1)}\n\n"
            + _JUDGE_FORMAT,
            answer_check=_verdict,
        )
        verdict = judged.value if judged.stop.code == "completed" and judged.value else None
        record = await self._record(
            rid=rid,
            tool=tool,
            arguments=arguments,
            debate=debate,
            signals=signals,
            verdict=verdict,
            judge_stop=judged.stop.code,
        )
        await frames.emit("review.verdict", {k: v for k, v in record.items() if k != "debate"})
        if self.records is not None:
            await self.records.put(review_key(self.author, rid), record, writer="review:" + self.author)
        self.last = record
        return record

    async def _record(
        self,
        *,
        rid: str,
        tool: str,
        arguments: str,
        debate: list[dict[str, Any]],
        signals: dict[str, Any],
        verdict: dict[str, Any] | None,
        judge_stop: str,
    ) -> dict[str, Any]:
        # The strongest objection: the judge's, else the first one left without an evidence-backed answer.
        unanswered = [o["text"] for o in signals["objections"] if not o["answered_with_evidence"]]
        evidence = [{"citation": c, "valid": await self._valid(c)} for c in (verdict or {}).get("evidence", [])]
        return {
            "review": rid,
            "author": self.author,
            "tool": tool,
            "arguments_sha256": hashlib.sha256(arguments.encode()).hexdigest(),
            "verdict": verdict["verdict"] if verdict else "undecided",
            "reasoning": verdict["reasoning"] if verdict else f"the judge gave no verdict ({judge_stop})",
            "strongest_objection": (verdict or {}).get("strongest_objection") or (unanswered[0] if unanswered else ""),
            "evidence": evidence,
            "signals": signals,
            "warning": "false consensus"
            if signals["false_consensus"] and verdict and verdict["verdict"] == "approve"
            else "",
            "judge": self.spec.judge,
            "debate": debate,
            "time": time.time(),
        }


def _transcript(debate: Sequence[Mapping[str, Any]]) -> str:
    if not debate:
        return "(nothing yet: you speak first)"
    lines = []
    for arg in debate:
        lines.append(f"- round {arg['round']}, {arg['role']} ({arg['agent']}): {arg['position']}. {arg['argument']}")
        lines += [f"  objection {o['id']}: {o['text']}" for o in arg["objections"]]
        lines += [
            f"  answers {a['objection']}: {a['text']} (evidence: {', '.join(a['evidence']) or 'none'})"
            for a in arg["answers"]
        ]
        if arg["evidence"]:
            lines.append(f"  evidence: {', '.join(arg['evidence'])}")
    return "\n".join(lines)


def is_repair_prompt(prompt: str) -> bool:
    """Whether a turn's prompt is a repair's (``repair_prompt``): its diffs are ``repair`` changes."""
    return bool(_REPAIR_PROMPT.match(prompt))


def review_for(
    manifest: SubhiveManifest,
    author: AgentSpec,
    *,
    hive_dir: Path,
    board: KvBlackboard | None = None,
    records: KvBlackboard | None = None,
    on_frame: FrameSink | None = None,
    repair: bool = False,
    reporter: Any = None,
) -> Review | None:
    """The review of ``author``'s changes in ``manifest``'s hive, or None when the hive declares none (or the
    author is itself one of the roles: a debater's turns are not debated). Each role is built from its own
    ``[agents.NAME]`` (instructions, model), keeping only its read-only tools, all allowed. ``reporter``: a
    ``RootReporter`` the review closes when it is closed."""
    from ._build import build_agent

    spec = manifest.review
    roles = (spec.reviewer, spec.advocate, spec.judge) if spec is not None else ()
    if spec is None or author.name in roles:
        return None
    agents = {}
    for name in roles:
        role = next(a for a in manifest.agents if a.name == name)
        tools = {t: "allow" for t in role.tools if t in _READ_ONLY and (board is not None or t != "board_read")}
        agents[name] = build_agent(replace(role, tools=tools), hive=manifest.name, hive_dir=hive_dir, board=board)
    return Review(
        spec,
        agents,
        author=author.name,
        files=FileSlice(hive_dir),
        board=board,
        records=records,
        on_frame=on_frame,
        repair=repair,
        reporter=reporter,
    )
