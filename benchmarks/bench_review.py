"""Review debates (issue #20): how many wrong changes reach the person and how many good ones are held back,
with no review, with a judge that counts the debaters' votes, and with a judge that weighs the framework's
false-consensus signals.

    .venv/bin/python benchmarks/bench_review.py            # a table
    .venv/bin/python benchmarks/bench_review.py --json     # one JSON object

Every scenario is a proposed diff to a small hive whose ground truth is known (good or wrong) and a scripted
debate between a reviewer and a devil's advocate (the scripted server, over real HTTP, through the real
``openai`` client and the real ``Review``): an evidence-backed approval, an objection answered with evidence,
an objection left unanswered, a lying reviewer echoed by a conforming advocate (made-up citation), a reviewer
who flips without new evidence, and a short agreement without evidence on a good change (what the signals
cost). The judges are deterministic stand-ins that read their prompt: the vote counter approves when both
debaters end on approve; the signal-aware judge also rejects when the framework flags false consensus or an
objection stands unanswered. What the figures measure is what the framework's signals let a judge see; a real
model's judgement is not measured here.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parser, render

from subhive.agent import Agent, AgentSettings, FileSlice, ModelSettings, RecordedRequest, Review, ScriptedServer, Step
from subhive.workspace import ReviewSpec

APP = "def first(notes):\n    return notes.splitlines()[0]\n\n\ndef count(notes):\n    return len(notes.splitlines())\n"
DIFF_GOOD = (
    "--- a/app.py\n+++ b/app.py\n@@ -5,2 +5,2 @@\n def count(notes):\n-    return len(notes.splitlines())\n"
    "+    return len([n for n in notes.splitlines() if n])\n"
)
DIFF_WRONG = (
    "--- a/app.py\n+++ b/app.py\n@@ -1,2 +1,2 @@\n def first(notes):\n-    return notes.splitlines()[0]\n"
    "+    return notes.splitlines()[1]\n"
)


def say(position: str, argument: str, **more: Any) -> Step:
    return Step.say(json.dumps({"position": position, "argument": argument, **more}))


#: (name, diff, good?, the debaters' answers in order: reviewer then advocate, each round)
SCENARIOS: list[tuple[str, str, bool, list[Step]]] = [
    (
        "good, agreed with evidence",
        DIFF_GOOD,
        True,
        [
            say("approve", "count now skips blank lines, as the task asks", evidence=["app.py:5-6"]),
            say("approve", "only count changes; first is untouched", evidence=["app.py:1-2"]),
        ],
    ),
    (
        "good, objection answered",
        DIFF_GOOD,
        True,
        [
            say("reject", "does first still work?", objections=["first may read blank lines too"]),
            say(
                "approve",
                "first is not touched by the diff",
                answers=[{"objection": "o1", "text": "unchanged", "evidence": ["app.py:2"]}],
            ),
            say("approve", "conceded: the hunk starts at count", evidence=["app.py:5-6"]),
            say("approve", "so the change is what the task asks"),
        ],
    ),
    (
        "wrong, objection unanswered",
        DIFF_WRONG,
        False,
        [
            say(
                "reject",
                "first now returns the second line",
                objections=["index 1 is the second line"],
                evidence=["app.py:2"],
            ),
            say("approve", "shorter is fine"),
        ],
    ),
    (
        "wrong, lying reviewer and conforming advocate",
        DIFF_WRONG,
        False,
        [
            say("approve", "The header line is skipped on purpose, as the spec says", evidence=["spec.md:14"]),
            say("approve", "The header line is skipped on purpose, as the spec says."),
        ],
    ),
    (
        "wrong, flip without evidence",
        DIFF_WRONG,
        False,
        [
            say("reject", "this changes which line first returns", objections=["first returns another line"]),
            say("approve", "I think it is fine"),
            say("approve", "fine, I was persuaded"),
            say("approve", "as I said, fine"),
        ],
    ),
    (
        "good, agreed without evidence",
        DIFF_GOOD,
        True,
        [
            say("approve", "count skips blanks now"),
            say("approve", "agreed, looks right"),
        ],
    ),
]


def judge(aware: bool) -> Callable[[RecordedRequest], Step]:
    """A scripted judge: reads the signals from its prompt and answers a verdict."""

    def answer(request: RecordedRequest) -> Step:
        prompt = request.body["messages"][-1]["content"]
        signals = json.loads(
            prompt.split("(citations checked against the hive's files and board):\n", 1)[1].split("\n\nAnswer with", 1)[
                0
            ]
        )
        positions = set(signals["final_positions"].values())
        verdict = "approve" if positions == {"approve"} else "reject"
        if aware and (signals["false_consensus"] or signals["unanswered"]):
            verdict = "reject"
        return Step.say(json.dumps({"verdict": verdict, "reasoning": ", ".join(signals["flags"]) or "agreed"}))

    return answer


def agent(name: str, server: ScriptedServer) -> Agent:
    return Agent(
        AgentSettings(
            name, f"You are the {name}.", ModelSettings(f"{name}-model", base_url=server.base_url, max_retries=0)
        )
    )


async def run_mode(mode: str, hive: Path) -> dict[str, Any]:
    wrong_through = good_held = 0
    rows = []
    started = time.perf_counter()
    for name, diff, good, steps in SCENARIOS:
        if mode == "none":
            reaches = True
        else:
            rounds = len(steps) // 2
            with ScriptedServer(steps) as debaters, ScriptedServer(judge(mode == "signals")) as judging:
                agents = {
                    "critic": agent("critic", debaters),
                    "devil": agent("devil", debaters),
                    "judge": agent("judge", judging),
                }
                review = Review(
                    ReviewSpec("critic", "devil", "judge", rounds=rounds),
                    agents,
                    author="helper",
                    files=FileSlice(hive),
                )
                record = await review.run("propose_diff", json.dumps({"diff": diff}), diff)
                await review.close()
            reaches = record["verdict"] != "reject"
        wrong_through += reaches and not good
        good_held += (not reaches) and good
        rows.append({"scenario": name, "good": good, "reaches_person": reaches})
    return {
        "wrong_reaching_person": wrong_through,
        "good_held_back": good_held,
        "rows": rows,
        "seconds": round(time.perf_counter() - started, 3),
    }


async def main() -> dict[str, Any]:
    figures: dict[str, Any] = {"scenarios": len(SCENARIOS), "wrong": sum(not s[2] for s in SCENARIOS)}
    with tempfile.TemporaryDirectory() as tmp:
        hive = Path(tmp)
        (hive / "app.py").write_text(APP)
        for mode in ("none", "votes", "signals"):
            result = await run_mode(mode, hive)
            figures[f"{mode}_wrong_reaching_person"] = result["wrong_reaching_person"]
            figures[f"{mode}_good_held_back"] = result["good_held_back"]
            figures[f"{mode}_seconds"] = result["seconds"]
    return figures


if __name__ == "__main__":
    ARGS = parser(__doc__.splitlines()[0]).parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        print(render("review debates", asyncio.run(main()), as_json=ARGS.json))
