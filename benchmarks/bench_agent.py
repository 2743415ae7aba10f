"""The agent loop against the scripted OpenAI-compatible server: framework overhead per step, prefix stability
and the size of a long turn.

    .venv/bin/python benchmarks/bench_agent.py            # a table
    .venv/bin/python benchmarks/bench_agent.py --json     # one JSON object

Measured in the same run:

* **overhead per loop step**: between the model's reply and the next request, everything the framework does
  (parse the tool call, validate its arguments, run a trivial tool, append to the conversation, emit frames,
  check the size) for ``--steps`` steps; median and p99 in ms. Twice: frames kept in memory only, and every
  frame also written to the hive's board on an embedded nats-server (``BoardTranscript``). The baseline is a
  bare loop on the raw ``openai`` client doing the same appends, timed the same way;
* **a 300-step turn** (``--long``) with compaction on: the share of requests that are exact extensions of the
  previous one, counted over the requests that follow a request of the same epoch (must be 1.0), compactions
  made, the largest request against the compaction threshold (must stay below 1.0);
* **bytes sent** over whole turns of ``long/2`` and ``long`` steps with compaction on, and of ``long/4`` and
  ``long/2`` with it off: the ratio of two totals is about 2 when growth is linear and about 4 when it is
  quadratic.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import nats
import openai
from _common import parser, percentile, render

from subhive.agent import (
    COMPACTION_PROMPT,
    Agent,
    AgentSettings,
    BoardTranscript,
    Budgets,
    Frame,
    ModelSettings,
    RecordedRequest,
    ScriptedServer,
    Step,
    Tool,
    ToolBox,
    schema_object,
)
from subhive.bus import EmbeddedServer, ServerConfig
from subhive.hive import KvBlackboard, ensure_blackboard

PAD = "x" * 160  # a tool argument of a realistic size: each step adds a few hundred bytes


def script(steps: int) -> Any:
    """A model that calls ``echo`` ``steps`` times (different arguments each time), then answers; asked for
    a compaction summary, it gives one."""
    counter = itertools.count(1)

    def respond(request: RecordedRequest) -> Step:
        if request.body["messages"][-1].get("content") == COMPACTION_PROMPT:
            return Step.say("Echoed steps so far; keep echoing.")
        n = next(counter)
        return Step.say("done") if n > steps else Step.call(("echo", {"text": f"step {n} {PAD}"}))

    return respond


def echo() -> Tool:
    async def run(arguments: dict[str, Any]) -> Any:
        return {"echo": arguments["text"]}

    return Tool("echo", "echo its text", schema_object({"text": {"type": "string"}}, ["text"]), run)


def settings(server: ScriptedServer, *, compaction: bool = True, window: int = 8000) -> AgentSettings:
    return AgentSettings(
        "bench",
        "You echo.",
        ModelSettings(
            "scripted",
            base_url=server.base_url,
            max_retries=0,
            context_window=window,
            compact_at=0.5,
            compaction=compaction,
        ),
        budgets=Budgets(model_calls=100_000, tool_calls=100_000, tokens=10**12, wall_time=3600),
    )


def gaps(frames: list[Frame]) -> list[float]:
    """Seconds from each model reply to the next request: the framework's own time in that step."""
    out: list[float] = []
    reply: float | None = None
    for frame in frames:
        if frame.kind == "model.reply":
            reply = frame.time
        elif frame.kind == "model.request" and reply is not None:
            out.append(frame.time - reply)
            reply = None
    return out


async def ours(steps: int, sink: Any = None) -> list[float]:
    with ScriptedServer(script(steps)) as server:
        agent = Agent(settings(server), ToolBox([echo()]))  # compaction on: requests stay small
        result = await agent.run_turn("echo", on_frame=sink)
        await agent.close()
    assert result.stop.code == "completed", result.stop
    return gaps(result.frames)


async def baseline(steps: int) -> list[float]:
    """The same turn on the raw openai client: call, append the reply and a result, call again; every 20 steps
    the history is cut back to the start, as compaction keeps ours small."""
    with ScriptedServer(script(steps)) as server:
        client = openai.AsyncOpenAI(base_url=server.base_url, api_key="x", max_retries=0)
        tools = [echo().definition()]
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": "You echo."},
            {"role": "user", "content": "echo"},
        ]
        out: list[float] = []
        while True:
            reply = await client.chat.completions.create(model="scripted", messages=messages, tools=tools)
            began = time.time()
            message = reply.choices[0].message
            if not message.tool_calls:
                break
            calls = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.function.name, "arguments": c.function.arguments},
                }
                for c in message.tool_calls
            ]
            messages.append({"role": "assistant", "content": message.content, "tool_calls": calls})
            for call in calls:
                text = json.loads(call["function"]["arguments"])["text"]
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": json.dumps({"echo": text})})
            out.append(time.time() - began)
            if len(out) % 20 == 0:
                del messages[2:]
        await client.close()
    return out


async def with_board(steps: int) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        server = await EmbeddedServer.start(ServerConfig(Path(tmp) / "nats"))
        try:
            nc = await nats.connect(server.url)
            js = nc.jetstream()
            await ensure_blackboard(js, "bench")
            board = await KvBlackboard.open(js, "bench")
            try:
                return await ours(steps, BoardTranscript(board, "bench"))
            finally:
                await nc.close()
        finally:
            await server.stop()


def stability(requests: list[RecordedRequest]) -> tuple[int, int]:
    """(exact extensions, requests that should be one): a request after a compaction request starts anew."""
    good = total = 0
    for before, after in itertools.pairwise(requests):
        if before.body["messages"][-1].get("content") == COMPACTION_PROMPT:
            continue
        total += 1
        a, b = before.body, after.body
        good += (
            a["tools"] == b["tools"]
            and a["model"] == b["model"]
            and len(b["messages"]) > len(a["messages"])
            and b["messages"][: len(a["messages"])] == a["messages"]
        )
    return good, total


async def long_turn(steps: int, *, compaction: bool) -> dict[str, Any]:
    with ScriptedServer(script(steps)) as server:
        agent_settings = settings(server, compaction=compaction)
        agent = Agent(agent_settings, ToolBox([echo()]))
        result = await agent.run_turn("echo")
        await agent.close()
        requests = server.chat_requests()
    assert result.stop.code == "completed", result.stop
    good, total = stability(requests)
    return {
        "requests": len(requests),
        "extensions": good,
        "should_extend": total,
        "compactions": result.compactions,
        "largest_tokens": max(u.prompt_tokens for u in result.usage),
        "threshold": agent_settings.model.compact_threshold,
        "bytes": sum(len(r.raw) for r in requests),
    }


async def main() -> dict[str, Any]:
    args = ARGS
    figures: dict[str, Any] = {}
    plain, board, raw = [], [], []
    for _ in range(args.rounds):
        plain += await ours(args.steps)
        board += await with_board(args.steps)
        raw += await baseline(args.steps)
    for name, values in (("overhead", plain), ("overhead_with_board", board), ("raw_client", raw)):
        figures[f"{name}_p50_ms"] = round(statistics.median(values) * 1e3, 3)
        figures[f"{name}_p99_ms"] = round(percentile(values, 99) * 1e3, 3)
    long = await long_turn(args.long, compaction=True)
    figures["long_turn_steps"] = args.long
    figures["long_turn_requests"] = long["requests"]
    figures["long_turn_compactions"] = long["compactions"]
    figures["prefix_extension_share"] = round(long["extensions"] / max(long["should_extend"], 1), 4)
    figures["largest_request_over_threshold"] = round(long["largest_tokens"] / long["threshold"], 3)
    half_on = await long_turn(args.long // 2, compaction=True)
    # Without compaction the SDK's per-request work grows with the history too, so the reference runs at a
    # quarter and a half of the length: the ratio shows the same quadratic growth in a fraction of the time.
    quarter_off = await long_turn(args.long // 4, compaction=False)
    half_off = await long_turn(args.long // 2, compaction=False)
    figures["bytes_sent_on"] = long["bytes"]
    figures["bytes_growth_on_x2_steps"] = round(long["bytes"] / half_on["bytes"], 2)
    figures["bytes_sent_off_half"] = half_off["bytes"]
    figures["bytes_growth_off_x2_steps"] = round(half_off["bytes"] / quarter_off["bytes"], 2)
    return figures


if __name__ == "__main__":
    cli = parser(__doc__.splitlines()[0])
    cli.add_argument("--steps", type=int, default=200, help="steps per overhead turn (200)")
    cli.add_argument("--rounds", type=int, default=3, help="overhead turns per variant (3)")
    cli.add_argument("--long", type=int, default=300, help="steps of the long turn (300)")
    ARGS = cli.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        print(render("agent loop", asyncio.run(main()), as_json=ARGS.json))
