"""The scripted OpenAI-compatible server, spoken to by the real ``openai`` client over real HTTP."""

from __future__ import annotations

import asyncio
import json
import time

import openai
import pytest
from openai.types.chat import ChatCompletionMessage, ChatCompletionMessageFunctionToolCall, ChatCompletionMessageParam

from subhive.agent import RecordedRequest, ScriptedServer, Step, ToolCallStep, estimate_tokens
from subhive.errors import InputError

USER: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hi"}]


def client(server: ScriptedServer, **options: object) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="scripted", **options)  # type: ignore[arg-type]


def function_calls(message: ChatCompletionMessage) -> list[ChatCompletionMessageFunctionToolCall]:
    """The message's tool calls: the scripted server sends function calls only (a custom one is left out)."""
    return [c for c in message.tool_calls or [] if isinstance(c, ChatCompletionMessageFunctionToolCall)]


def test_a_message_is_answered_and_the_request_recorded() -> None:
    with ScriptedServer([Step.say("hello there")]) as server:
        reply = client(server).chat.completions.create(model="m1", messages=USER)
        assert reply.choices[0].message.content == "hello there"
        assert reply.choices[0].finish_reason == "stop"
        assert reply.model == "m1"
        (request,) = server.chat_requests()
        assert request.body["messages"] == USER
        assert request.headers["authorization"] == "Bearer scripted"
        # Usage is the server's estimate of what it was sent, so sizes can be compared across requests.
        assert reply.usage is not None
        assert reply.usage.prompt_tokens == estimate_tokens({"messages": USER, "tools": []})


def test_several_tool_calls_in_one_response_keep_their_order_and_arguments() -> None:
    step = Step.call(("read_file", {"path": "a.py"}), ("list_files", {"dir": "."}), ("search", {"query": "x"}))
    with ScriptedServer([step]) as server:
        reply = client(server).chat.completions.create(model="m", messages=USER)
    calls = function_calls(reply.choices[0].message)
    assert [c.function.name for c in calls] == ["read_file", "list_files", "search"]
    assert json.loads(calls[0].function.arguments) == {"path": "a.py"}
    assert len({c.id for c in calls}) == 3
    assert reply.choices[0].finish_reason == "tool_calls"


def test_malformed_tool_arguments_reach_the_client_verbatim() -> None:
    with ScriptedServer([Step.call(ToolCallStep("read_file", '{"path": "a.py"'))]) as server:
        reply = client(server).chat.completions.create(model="m", messages=USER)
    arguments = function_calls(reply.choices[0].message)[0].function.arguments
    assert arguments == '{"path": "a.py"'
    with pytest.raises(json.JSONDecodeError):
        json.loads(arguments)


def test_streaming_sends_the_message_and_tool_calls_in_chunks() -> None:
    step = Step.call(
        ("read_file", {"path": "some/long/path.py"}), ("search", {"query": "needle"}), content="Looking around first."
    )
    with ScriptedServer([step], chunk_size=4) as server:
        stream = client(server).chat.completions.create(
            model="m", messages=USER, stream=True, stream_options={"include_usage": True}
        )
        chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Looking around first."
    arguments: dict[int, str] = {}
    for c in chunks:
        for call in (c.choices[0].delta.tool_calls or []) if c.choices else []:
            piece = call.function.arguments if call.function is not None else None
            arguments[call.index] = arguments.get(call.index, "") + (piece or "")
    assert json.loads(arguments[0]) == {"path": "some/long/path.py"}
    assert json.loads(arguments[1]) == {"query": "needle"}
    assert len(chunks) > 10  # really in pieces
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.prompt_tokens > 0


def test_429_and_500_are_retried_by_the_sdk_on_the_next_steps() -> None:
    script = [Step.fail(429, "slow down"), Step.fail(500), Step.say("finally")]
    with ScriptedServer(script) as server:
        reply = client(server, max_retries=2).chat.completions.create(model="m", messages=USER)
        assert reply.choices[0].message.content == "finally"
        assert len(server.chat_requests()) == 3


def test_without_retries_a_429_surfaces_as_rate_limit_error() -> None:
    with ScriptedServer([Step.fail(429, "slow down")]) as server, pytest.raises(openai.RateLimitError) as caught:
        client(server, max_retries=0).chat.completions.create(model="m", messages=USER)
    assert "slow down" in str(caught.value)


def test_a_stalled_answer_times_the_client_out_and_the_retry_gets_the_next_step() -> None:
    script = [Step.stall(5.0), Step.say("on time")]
    with ScriptedServer(script) as server:
        began = time.monotonic()
        with pytest.raises(openai.APITimeoutError):
            client(server, max_retries=0, timeout=0.3).chat.completions.create(model="m", messages=USER)
        assert time.monotonic() - began < 3
        reply = client(server, max_retries=0, timeout=2).chat.completions.create(model="m", messages=USER)
        assert reply.choices[0].message.content == "on time"


def test_an_exhausted_script_fails_fast_and_is_not_retried() -> None:
    with ScriptedServer([Step.say("one")]) as server:
        c = client(server, max_retries=3)
        c.chat.completions.create(model="m", messages=USER)
        with pytest.raises(openai.BadRequestError) as caught:
            c.chat.completions.create(model="m", messages=USER)
        assert "exhausted" in str(caught.value)
        assert len(server.chat_requests()) == 2


def test_a_function_script_sees_each_request() -> None:
    def echo(request: RecordedRequest) -> Step:
        return Step.say(f"you sent {len(request.body['messages'])} messages")

    with ScriptedServer(echo) as server:
        reply = client(server).chat.completions.create(model="m", messages=USER * 3)
    assert reply.choices[0].message.content == "you sent 3 messages"


def test_the_async_client_works_too() -> None:
    async def main(server: ScriptedServer) -> list[str]:
        c = openai.AsyncOpenAI(base_url=server.base_url, api_key="scripted")
        replies = await asyncio.gather(*(c.chat.completions.create(model="m", messages=USER) for _ in range(3)))
        await c.close()
        return sorted(r.choices[0].message.content or "" for r in replies)

    with ScriptedServer([Step.say("a"), Step.say("b"), Step.say("c")]) as server:
        assert asyncio.run(main(server)) == ["a", "b", "c"]


def test_steps_read_from_json() -> None:
    step = Step.from_dict({"call": [{"name": "search", "arguments": {"query": "q"}}], "delay": 0.1})
    assert step.tool_calls[0].name == "search"
    assert step.delay == 0.1
    assert Step.from_dict({"fail": 503}).status == 503
    with pytest.raises(InputError, match="say, call, fail") as caught:
        Step.from_dict({"shout": "x"}, where="script.json")
    assert caught.value.code == "agent.script_invalid"


def test_a_script_function_that_raises_fails_the_request_at_once() -> None:
    def broken(request: object) -> Step:
        raise KeyError("nope")

    with ScriptedServer(broken) as server, pytest.raises(openai.BadRequestError) as caught:
        client(server, max_retries=3).chat.completions.create(model="m", messages=USER)
    assert "KeyError" in str(caught.value)
    assert len(server.chat_requests()) == 1  # not retried
