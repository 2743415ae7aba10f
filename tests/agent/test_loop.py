"""The agent loop against the scripted server over real HTTP: prefix stability, tools, budgets, retries,
compaction, and every stop with its reason."""

from __future__ import annotations

import json
from typing import Any

import pytest

from subhive.agent import (
    COMPACTION_PROMPT,
    Agent,
    AgentSettings,
    Approval,
    Budgets,
    Frame,
    ModelSettings,
    NoEndpoint,
    RecordedRequest,
    ScriptedServer,
    Step,
    ToolBox,
    ToolCall,
    ToolCallStep,
    announcing,
    approval_asked,
)

from .conftest import echo_tool, extensions, make_agent, run


def tool_messages(request: RecordedRequest) -> list[dict[str, Any]]:
    return [m for m in request.body["messages"] if m["role"] == "tool"]


def test_a_turn_runs_several_tool_calls_and_every_request_extends_the_previous(scripted: ScriptedServer) -> None:
    scripted.extend(
        [
            Step.call(("echo", {"text": "a"}), ("shout", {"text": "b"})),
            Step.call(("echo", {"text": "c"})),
            Step.say("all done"),
        ]
    )
    agent = make_agent(scripted, ToolBox([echo_tool("echo"), echo_tool("shout")]))
    frames: list[Frame] = []
    result = run(agent, "say a, b, c", on_frame=frames.append)

    assert result.stop.code == "completed"
    assert result.answer == "all done"
    assert result.tool_calls == 3
    requests = scripted.chat_requests()
    assert len(requests) == 3
    assert all(extensions(requests))
    first = requests[0].body
    assert first["messages"][0] == {"role": "system", "content": "You help with notes."}
    assert first["messages"][1] == {"role": "user", "content": "say a, b, c"}
    assert [t["function"]["name"] for t in first["tools"]] == ["echo", "shout"]
    # Both results of the first response, in the order of the calls, before the next request.
    results = tool_messages(requests[1])
    assert [json.loads(m["content"]) for m in results] == [{"echo": {"text": "a"}}, {"echo": {"text": "b"}}]
    calls = requests[1].body["messages"][2]["tool_calls"]
    assert [m["tool_call_id"] for m in results] == [c["id"] for c in calls]
    kinds = [f.kind for f in frames]
    assert kinds[0] == "turn.started"
    assert kinds[-1] == "turn.stopped"
    assert kinds.count("model.request") == 3
    assert kinds.count("tool.call") == kinds.count("tool.result") == 3
    assert [f.seq for f in frames] == list(range(1, len(frames) + 1))
    # Usage is recorded per request, as the server reported it.
    assert len(result.usage) == 3
    assert all(not u.estimated and u.prompt_tokens > 0 for u in result.usage)
    assert result.usage[2].prompt_tokens > result.usage[0].prompt_tokens


def test_streaming_gives_the_same_conversation(scripted: ScriptedServer) -> None:
    scripted.extend(
        [
            Step.call(("echo", {"text": "a long piece of text"}), ("echo", {"text": "b"}), content="first I look"),
            Step.say("streamed answer"),
        ]
    )
    result = run(make_agent(scripted, ToolBox([echo_tool()]), stream=True))
    assert result.stop.code == "completed"
    assert result.answer == "streamed answer"
    requests = scripted.chat_requests()
    assert requests[0].body["stream"] is True
    assistant = requests[1].body["messages"][2]
    assert assistant["content"] == "first I look"
    assert [json.loads(c["function"]["arguments"]) for c in assistant["tool_calls"]] == [
        {"text": "a long piece of text"},
        {"text": "b"},
    ]
    assert all(extensions(requests))
    assert result.usage[0].prompt_tokens > 0


def test_bad_calls_become_tool_errors_the_model_reads(scripted: ScriptedServer) -> None:
    scripted.extend(
        [
            Step.call(
                ToolCallStep("echo", '{"text": "unclosed'),
                ToolCallStep("echo", {"text": 3}),
                ToolCallStep("nope", {}),
                ToolCallStep("secret", {"text": "x"}),
            ),
            Step.say("sorry"),
        ]
    )
    tools = ToolBox([echo_tool("echo"), echo_tool("secret")], {"secret": "deny"})
    result = run(make_agent(scripted, tools))
    assert result.stop.code == "completed"
    errors = [json.loads(m["content"])["error"] for m in tool_messages(scripted.chat_requests()[1])]
    assert errors == ["tool.arguments_malformed", "tool.arguments_invalid", "tool.unknown", "tool.denied"]
    # A denied tool is not offered at all.
    assert [t["function"]["name"] for t in scripted.chat_requests()[0].body["tools"]] == ["echo"]


def test_an_ask_tool_waits_for_the_approver_and_a_refusal_reaches_the_model(scripted: ScriptedServer) -> None:
    asked: list[ToolCall] = []

    async def approver(call: ToolCall) -> Approval:
        asked.append(call)
        return Approval(json.loads(call.arguments)["text"] == "fine", "not that one")

    scripted.extend([Step.call(("echo", {"text": "fine"}), ("echo", {"text": "bad"})), Step.say("ok")])
    result = run(make_agent(scripted, ToolBox([echo_tool()], {"echo": "ask"}, approver=approver)))
    assert [json.loads(c.arguments)["text"] for c in asked] == ["fine", "bad"]
    contents = [json.loads(m["content"]) for m in tool_messages(scripted.chat_requests()[1])]
    assert contents[0] == {"echo": {"text": "fine"}}
    assert contents[1]["error"] == "tool.rejected"
    assert "not that one" in contents[1]["message"]
    assert result.stop.code == "completed"


def test_the_same_call_repeated_stops_the_turn(scripted: ScriptedServer) -> None:
    scripted.extend([Step.call(("echo", {"text": "again"}))] * 5)
    result = run(make_agent(scripted, ToolBox([echo_tool()]), budgets=Budgets(repeat_limit=3)))
    assert result.stop.code == "loop.repeated_call"
    assert result.stop.detail["tool"] == "echo"
    assert result.tool_calls == 2  # the third identical call is not run
    assert not result.stop.normal


@pytest.mark.parametrize(
    ("budgets", "code"),
    [
        (Budgets(model_calls=2), "budget.model_calls"),
        (Budgets(tool_calls=3), "budget.tool_calls"),
        (Budgets(tokens=150), "budget.tokens"),
    ],
)
def test_budgets_stop_the_turn_with_their_reason(scripted: ScriptedServer, budgets: Budgets, code: str) -> None:
    scripted.extend([Step.call(("echo", {"text": f"t{i}"}), ("echo", {"text": f"u{i}"})) for i in range(6)])
    result = run(make_agent(scripted, ToolBox([echo_tool()]), budgets=budgets))
    assert result.stop.code == code
    assert result.stop.detail["limit"] > 0
    assert result.frames[-1].kind == "turn.stopped"
    assert result.frames[-1].data["stop"]["code"] == code


def test_wall_time_cuts_a_slow_model(scripted: ScriptedServer) -> None:
    scripted.extend([Step.stall(5.0)])
    result = run(make_agent(scripted, budgets=Budgets(wall_time=0.4), timeout=10.0))
    assert result.stop.code == "budget.wall_time"
    assert result.seconds < 3


def test_429_and_500_are_retried_then_the_turn_goes_on(scripted: ScriptedServer) -> None:
    scripted.extend([Step.fail(429), Step.fail(500), Step.say("there")])
    result = run(make_agent(scripted, max_retries=2))
    assert result.stop.code == "completed"
    assert len(scripted.chat_requests()) == 3
    assert len(result.usage) == 1  # one model call, three HTTP requests


def test_an_endpoint_that_keeps_failing_stops_with_its_status(scripted: ScriptedServer) -> None:
    scripted.extend([Step.fail(503, "overloaded")] * 3)
    result = run(make_agent(scripted, max_retries=2))
    assert result.stop.code == "model.failed"
    assert result.stop.detail == {"status": 503, "retries": 2}
    assert "overloaded" in result.stop.message


def test_a_model_that_never_answers_times_out(scripted: ScriptedServer) -> None:
    scripted.extend([Step.stall(5.0)])
    result = run(make_agent(scripted, timeout=0.3))
    assert result.stop.code == "model.timeout"
    assert f"the model at {scripted.base_url} (from base_url in [agents.helper.model])" in result.stop.message
    assert "timeout" in result.stop.detail["hint"]


def test_an_unreachable_endpoint_is_named_with_where_it_was_set_and_a_hint() -> None:
    import socket

    with socket.socket() as probe:  # a port nothing listens on once it is closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # A password in the URL stays out of the message, which is shown, kept and escalated.
    model = ModelSettings("m", base_url=f"http://user:secret@127.0.0.1:{port}/v1", max_retries=0)
    result = run(Agent(AgentSettings("helper", "You help.", model), ToolBox()))
    assert result.stop.code == "model.unreachable"
    assert result.stop.message.startswith(
        f"the model endpoint http://127.0.0.1:{port}/v1 (from base_url in [agents.helper.model]) cannot be reached"
    )
    assert "secret" not in json.dumps(result.stop.to_dict())
    assert result.stop.detail["url"] == f"http://127.0.0.1:{port}/v1"
    assert "OPENAI_BASE_URL" in result.stop.detail["hint"]


def test_no_endpoint_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(NoEndpoint) as caught:
        ModelSettings("m").endpoint()
    assert caught.value.code == "agent.no_endpoint"
    assert "OPENAI_BASE_URL" in (caught.value.hint or "")


def test_the_environment_names_the_endpoint_and_the_agent_can_override_it(monkeypatch: pytest.MonkeyPatch) -> None:
    with ScriptedServer([Step.say("from env")]) as env_server, ScriptedServer([Step.say("own")]) as own:
        monkeypatch.setenv("OPENAI_BASE_URL", env_server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
        monkeypatch.setenv("HIVE_KEY", "sk-hive")
        from subhive.agent import Agent, AgentSettings

        plain = Agent(AgentSettings("a", "i", ModelSettings("m", max_retries=0)))
        assert run(plain).answer == "from env"
        assert env_server.chat_requests()[0].headers["authorization"] == "Bearer sk-env"
        mine = Agent(AgentSettings("a", "i", ModelSettings("m", base_url=own.base_url, api_key_env="HIVE_KEY")))
        assert run(mine).answer == "own"
        assert own.chat_requests()[0].headers["authorization"] == "Bearer sk-hive"


def _compacting_script(steps: int, summary: str = "I echoed things.") -> Any:
    count = {"n": 0}

    def respond(request: RecordedRequest) -> Step:
        if request.body["messages"][-1].get("content") == COMPACTION_PROMPT:
            return Step.say(summary)
        count["n"] += 1
        if count["n"] > steps:
            return Step.say("finished")
        return Step.call(("echo", {"text": f"step {count['n']} " + "x" * 200}))

    return respond


def test_compaction_keeps_the_task_the_files_and_stays_under_the_threshold() -> None:
    with ScriptedServer(_compacting_script(40)) as server:
        agent = make_agent(
            server,
            ToolBox([echo_tool(changed=["notes/a.md"])]),
            context_window=4000,
            compact_at=0.5,
            budgets=Budgets(repeat_limit=100),
        )
        result = run(agent, "echo forty times")
    assert result.stop.code == "completed"
    assert result.compactions >= 2
    requests = server.chat_requests()
    threshold = 2000
    sizes = [r_usage.prompt_tokens for r_usage in result.usage]
    assert max(sizes) < threshold
    # Before every compaction request, each request extends the previous one; a compaction starts a new prefix.
    compacting = [i for i, r in enumerate(requests) if r.body["messages"][-1].get("content") == COMPACTION_PROMPT]
    assert len(compacting) == result.compactions
    stable = extensions(requests)
    assert all(stable[i - 1] for i in range(1, len(requests)) if i - 1 not in compacting)
    after = requests[compacting[0] + 1].body["messages"]
    assert after[0]["role"] == "system"
    handoff = after[1]["content"]
    assert len(after) == 2
    assert "echo forty times" in handoff
    assert "I echoed things." in handoff
    assert "notes/a.md" in handoff
    assert "step " in handoff  # the last steps, verbatim
    assert next(f for f in result.frames if f.kind == "compaction").data["state"]["files_changed"] == ["notes/a.md"]


def test_compaction_off_lets_the_conversation_grow(scripted: ScriptedServer) -> None:
    with ScriptedServer(_compacting_script(12)) as server:
        agent = make_agent(server, ToolBox([echo_tool()]), context_window=1000, compact_at=0.5, compaction=False)
        result = run(agent)
    assert result.compactions == 0
    assert all(extensions(server.chat_requests()))
    assert max(u.prompt_tokens for u in result.usage) > 500


def test_settings_refuse_nonsense() -> None:
    with pytest.raises(ValueError, match="compact_at"):
        ModelSettings("m", compact_at=1.5)
    with pytest.raises(ValueError, match="model_calls"):
        Budgets(model_calls=0)
    with pytest.raises(ValueError, match="do not exist"):
        ToolBox([echo_tool()], {"other": "deny"})


def test_an_unanswered_approval_times_out_visibly_and_the_turn_goes_on(scripted: ScriptedServer) -> None:
    import asyncio

    async def never(call: ToolCall) -> Approval:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    scripted.extend([Step.call(("echo", {"text": "please"})), Step.say("went on without it")])
    tools = ToolBox([echo_tool()], {"echo": "ask"}, approver=never, approval_timeout=0.2)
    result = run(make_agent(scripted, tools))
    assert result.stop.code == "completed"
    kinds = [f.kind for f in result.frames]
    assert kinds.index("approval.waiting") == kinds.index("tool.call") + 1
    waiting = next(f for f in result.frames if f.kind == "approval.waiting")
    assert waiting.data["arguments"] == '{"text":"please"}'
    assert json.loads(tool_messages(scripted.chat_requests()[1])[0]["content"])["error"] == "tool.approval_timeout"


def _wants_n(content: str | None) -> Any:
    from subhive.agent import ToolError

    try:
        value = json.loads(content or "")
    except ValueError:
        raise ToolError("not JSON", code="answer.not_json", hint="JSON only") from None
    if not isinstance(value, dict) or not isinstance(value.get("n"), int):
        raise ToolError("needs an integer n", code="payload.invalid")
    return value


def test_a_refused_answer_goes_back_to_the_model_until_it_is_right(scripted: ScriptedServer) -> None:
    import asyncio

    scripted.extend([Step.say("here you go: 3"), Step.say('{"n": "3"}'), Step.say('{"n": 3}')])
    agent = make_agent(scripted)
    result = asyncio.run(agent.run_turn("give n", answer_check=_wants_n, answer_retries=2))
    assert result.stop.code == "completed"
    assert result.value == {"n": 3}
    refused = [f.data["error"] for f in result.frames if f.kind == "answer.refused"]
    assert refused == ["answer.not_json", "payload.invalid"]
    requests = scripted.chat_requests()
    assert all(extensions(requests))
    assert requests[1].body["messages"][-1]["role"] == "user"
    assert "answer.not_json" in requests[1].body["messages"][-1]["content"]


def test_an_answer_refused_too_often_stops_the_turn(scripted: ScriptedServer) -> None:
    import asyncio

    scripted.extend([Step.say("no")] * 3)
    result = asyncio.run(make_agent(scripted).run_turn("give n", answer_check=_wants_n, answer_retries=1))
    assert result.stop.code == "answer.invalid"
    assert result.stop.detail == {"error": "answer.not_json", "attempts": 2}
    assert len(scripted.chat_requests()) == 2


def test_a_call_refused_before_anyone_is_asked_never_says_it_waits(scripted: ScriptedServer) -> None:
    asked: list[str] = []

    async def person(call: ToolCall) -> Approval:
        asked.append(call.arguments)
        return Approval(True)

    scripted.extend([Step.call(("echo", {"nope": 1})), Step.call(("echo", {"text": "hi"})), Step.say("done")])
    result = run(make_agent(scripted, ToolBox([echo_tool()], {"echo": "ask"}, approver=person)))
    shown = [(f.kind, f.data.get("error")) for f in result.frames if f.kind in ("approval.waiting", "tool.result")]
    # Invalid arguments: refused before anyone is asked. Valid: asked (a plain approver asks once called).
    assert shown == [("tool.result", "tool.arguments_invalid"), ("approval.waiting", None), ("tool.result", None)]
    assert asked == ['{"text":"hi"}']
    assert next(f for f in result.frames if f.kind == "approval.waiting").data["approval"] is None


def test_with_no_one_to_ask_a_call_is_refused_without_a_waiting_frame(scripted: ScriptedServer) -> None:
    scripted.extend([Step.call(("echo", {"text": "hi"})), Step.say("done")])
    result = run(make_agent(scripted, ToolBox([echo_tool()], {"echo": "ask"})))
    assert "approval.waiting" not in [f.kind for f in result.frames]
    assert next(f for f in result.frames if f.kind == "tool.result").data["error"] == "tool.approval_unavailable"


def test_an_announcing_approver_says_it_waits_only_once_its_approval_exists(scripted: ScriptedServer) -> None:
    async def desk(call: ToolCall) -> Approval:
        if "refuse" in call.arguments:  # refused before any approval was made: no wait to show
            return Approval(False, "not even asked")
        await approval_asked("a-7")
        await approval_asked("a-7")  # said once, however often the approver says it
        return Approval(True)

    scripted.extend([Step.call(("echo", {"text": "refuse"})), Step.call(("echo", {"text": "fine"})), Step.say("done")])
    result = run(make_agent(scripted, ToolBox([echo_tool()], {"echo": "ask"}, approver=announcing(desk))))
    waiting = [f for f in result.frames if f.kind == "approval.waiting"]
    assert [(f.data["approval"], f.data["arguments"]) for f in waiting] == [("a-7", '{"text":"fine"}')]
    kinds = [f.kind for f in result.frames]
    assert kinds.index("approval.waiting") > kinds.index("tool.result")  # after the first call's refusal
