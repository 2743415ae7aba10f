"""The agent loop: request, reply, tool calls, results, again until the model answers with a message or a
budget stops the turn. Stateless (the whole conversation goes with every request) and prefix-stable (tools and
instructions first, fixed; history append-only until a compaction); every step is a :class:`Frame`."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import SubhiveError
from ..telemetry import record_agent_usage, span
from ._approvals import TurnParked
from ._conversation import COMPACTION_PROMPT, Conversation, TurnState, handoff_message
from ._scripted import estimate_tokens
from ._settings import AgentSettings, endpoint_origin, open_client, shown_url
from ._tools import ToolBox, ToolCall, ToolError, error_content, result_content

__all__ = ["Agent", "AnswerCheck", "Frame", "FrameSink", "RequestUsage", "Stop", "TurnResult"]

#: Stop codes a turn that ended as it should carries; every other code is a failure to escalate.
NORMAL_STOPS = frozenset({"completed"})


@dataclass(frozen=True)
class Frame:
    """One step of a turn: ``kind`` is ``turn.started`` (or ``turn.resumed``), ``model.request``,
    ``model.reply``, ``tool.call``, ``approval.waiting``, ``tool.result``, ``answer.refused``, ``compaction``,
    ``turn.parked`` (it waits for a decision without running; resumed later) or ``turn.stopped``; ``seq`` counts
    from 1 within the turn."""

    kind: str
    turn: str
    seq: int
    data: dict[str, Any]
    time: float

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "turn": self.turn, "seq": self.seq, "time": round(self.time, 6), **self.data}


FrameSink = Callable[[Frame], Awaitable[None] | None]
#: The model's final message in, the turn's value out; raises a SubhiveError to refuse it.
AnswerCheck = Callable[[str | None], Any]


@dataclass(frozen=True)
class Stop:
    """Why a turn ended: ``completed``, ``budget.model_calls|tool_calls|tokens|wall_time``, ``loop.repeated_call``,
    ``model.failed|timeout|unreachable|length``, ``context.exhausted``; ``detail`` says more (limits, status).
    ``parked`` is no end: the turn waits for an approval and is resumed once woken (``TurnResult.parked``)."""

    code: str
    message: str
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def normal(self) -> bool:
        return self.code in NORMAL_STOPS

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, **({"detail": self.detail} if self.detail else {})}


@dataclass(frozen=True)
class RequestUsage:
    """Tokens of one model request, as the server reported them (``estimated``: it reported none)."""

    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int = 0
    estimated: bool = False
    compaction: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cached_tokens": self.cached_tokens,
            "estimated": self.estimated,
        }


@dataclass
class TurnResult:
    turn: str
    stop: Stop
    answer: str | None
    usage: list[RequestUsage]
    frames: list[Frame]
    state: TurnState
    compactions: int = 0
    tool_calls: int = 0
    #: Seconds spent waiting for the model (the rest of the turn's time is the framework's and the tools').
    model_seconds: float = 0.0
    seconds: float = 0.0
    #: The checked answer (``answer_check``'s result), when the turn had a check.
    value: Any = None
    #: Set when the turn parked (stop ``parked``): what it waits for and how to be woken.
    parked: TurnParked | None = None

    @property
    def tokens(self) -> int:
        return sum(u.prompt_tokens + u.completion_tokens for u in self.usage)


class _Stopped(Exception):
    def __init__(self, stop: Stop) -> None:
        super().__init__(stop.message)
        self.stop = stop


@dataclass(frozen=True)
class _Outcome:
    """What one tool call came to, before it joins the conversation."""

    content: str
    error: str | None
    changed: tuple[str, ...]
    waiting: tuple[str, ...]
    seconds: float


@dataclass
class _Reply:
    content: str | None
    calls: list[ToolCall]
    finish: str | None
    usage: RequestUsage


class Agent:
    """One agent: settings, tools, and an OpenAI client opened from the settings on first use (or given).

    agent = Agent(AgentSettings("helper", "You help.", ModelSettings("qwen3")), ToolBox([...]))
    result = await agent.run_turn("Summarise notes.n1", on_frame=print)
    await agent.close()
    """

    def __init__(self, settings: AgentSettings, tools: ToolBox | None = None, *, client: Any = None) -> None:
        self.settings = settings
        self.tools = tools or ToolBox()
        self._client = client
        self._own_client = client is None

    async def close(self) -> None:
        if self._client is not None and self._own_client:
            with contextlib.suppress(Exception):
                await self._client.close()
        self._client = None

    def client(self) -> Any:
        if self._client is None:
            self._client = open_client(self.settings.model)  # raises agent.no_endpoint before any turn runs
        return self._client

    def endpoint(self) -> tuple[str, str]:
        """The URL the model is asked at (as it can be printed) and where it was set (``OPENAI_BASE_URL``, the
        manifest's ``base_url``, or the client this agent was given)."""
        if self._own_client:  # as it was set, not as the SDK rewrote it (a trailing slash)
            return shown_url(self.settings.model.endpoint()[0]), endpoint_origin(self.settings)
        given = str(getattr(self.client(), "base_url", "") or "(unknown)").rstrip("/")
        return shown_url(given), "the client this agent was given"

    async def run_turn(
        self,
        prompt: str,
        *,
        on_frame: FrameSink | None = None,
        turn_id: str | None = None,
        answer_check: AnswerCheck | None = None,
        answer_retries: int = 2,
        context: str | None = None,
    ) -> TurnResult:
        """Run one turn on ``prompt`` to its end; never raises for what the model or a tool does (the result's
        ``stop`` says why it ended), only for a missing endpoint (``agent.no_endpoint``) before it starts.

        ``answer_check`` turns the model's final message into the turn's ``value`` or raises a
        :class:`~subhive.errors.SubhiveError` saying why it is refused; a refused answer goes back to the model
        (an ``answer.refused`` frame) up to ``answer_retries`` times, then the turn stops with
        ``answer.invalid``. ``context``: a note the turn gets before its task (what earlier turns came to)."""
        self.client()
        turn = _Turn(self, prompt, turn_id or uuid.uuid4().hex[:12], on_frame)
        turn.answer_check, turn.answer_retries, turn.context = answer_check, answer_retries, context
        return await turn.run()

    async def resume_turn(
        self,
        turn_id: str,
        frames: Sequence[Mapping[str, Any]],
        *,
        on_frame: FrameSink | None = None,
        answer_check: AnswerCheck | None = None,
        answer_retries: int = 2,
    ) -> TurnResult:
        """Go on with a turn that stopped mid-way (its process died) from its kept ``frames`` (``to_dict()``
        form): the conversation is rebuilt exactly, so the next request extends the last one sent; tool calls
        that have a result are not run again; the others run now; frames go on from the last ``seq``.
        Raises ``ValueError`` for frames of a turn that already stopped."""
        self.client()
        started = next((f for f in frames if f.get("kind") == "turn.started"), None)
        if started is None:
            raise ValueError(f"the frames of turn {turn_id} have no turn.started")
        turn = _Turn(self, str(started.get("prompt") or ""), turn_id, on_frame)
        turn.answer_check, turn.answer_retries = answer_check, answer_retries
        return await turn.run(resume=frames)


_NO_ANSWER = object()


class _Turn:
    def __init__(self, agent: Agent, prompt: str, turn_id: str, sink: FrameSink | None) -> None:
        self.agent = agent
        self.settings = agent.settings
        self.budgets = agent.settings.budgets
        self.id = turn_id
        self.sink = sink
        self.conversation = Conversation(agent.settings.instructions)
        self.state = TurnState(prompt)
        self.answer_check: AnswerCheck | None = None
        self.answer_retries = 2
        self.refusals = 0
        self.value: Any = None
        self.context: str | None = None
        self.tools = agent.tools.definitions()
        self.tools_tokens = estimate_tokens(self.tools)
        self.frames: list[Frame] = []
        self.usage: list[RequestUsage] = []
        self.calls: Counter[str] = Counter()
        self.tool_calls = 0
        self.compactions = 0
        self.model_seconds = 0.0
        self.started = time.monotonic()
        # What the model said the last request's size was: a check on the local estimate.
        self.reported: tuple[int, int] | None = None  # (tokens reported, local estimate then)
        self.reported_epoch = -1
        self.last_size: int | None = None
        self.max_growth = 0

    async def emit(self, kind: str, **data: Any) -> None:
        frame = Frame(kind, self.id, len(self.frames) + 1, data, time.time())
        self.frames.append(frame)
        if self.sink is not None:
            outcome = self.sink(frame)
            if outcome is not None:
                await outcome

    async def run(self, resume: Sequence[Mapping[str, Any]] | None = None) -> TurnResult:
        settings = self.settings
        answer: str | None = None
        pending: list[ToolCall] = []
        final: Any = _NO_ANSWER
        if resume is None:
            await self.emit(
                "turn.started",
                agent=settings.name,
                model=settings.model.model,
                prompt=self.state.task,
                tools=[t["function"]["name"] for t in self.tools],
                context=self.context,
            )
            if self.context:
                self.conversation.append({"role": "user", "content": self.context})
            self.conversation.append({"role": "user", "content": self.state.task})
        else:
            pending, final = restore(self, resume)
            await self.emit(
                "turn.resumed",
                after=len(self.frames),
                pending=[c.id for c in pending],
                model_calls=len(self.usage),
                tool_calls=self.tool_calls,
            )
        try:
            answer = await self.loop(pending, final)
            stop = Stop("completed", "the model answered")
        except _Stopped as stopped:
            stop = stopped.stop
        except TurnParked as parked:
            return await self.park(parked)
        seconds = time.monotonic() - self.started
        await self.emit(
            "turn.stopped",
            stop=stop.to_dict(),
            answer=answer,
            model_calls=len(self.usage),
            tool_calls=self.tool_calls,
            tokens=sum(u.prompt_tokens + u.completion_tokens for u in self.usage),
            compactions=self.compactions,
            seconds=round(seconds, 6),
        )
        return TurnResult(
            self.id,
            stop,
            answer,
            self.usage,
            self.frames,
            self.state,
            self.compactions,
            self.tool_calls,
            self.model_seconds,
            seconds,
            self.value,
        )

    async def park(self, parked: TurnParked) -> TurnResult:
        """End this run of the turn without a stop: its call waits for a decision. The frames kept so far are
        its state (the call has no result yet, so a resume runs it again and finds the same approval)."""
        seconds = time.monotonic() - self.started
        await self.emit(
            "turn.parked",
            id=parked.call.id,
            name=parked.call.name,
            approval=parked.approval,
            deadline=round(parked.deadline, 3),
            model_calls=len(self.usage),
            tool_calls=self.tool_calls,
        )
        stop = Stop(
            "parked",
            f"{parked.call.name} waits for approval {parked.approval}",
            {"approval": parked.approval, "deadline": parked.deadline, "call": parked.call.id},
        )
        return TurnResult(
            self.id,
            stop,
            None,
            self.usage,
            self.frames,
            self.state,
            self.compactions,
            self.tool_calls,
            self.model_seconds,
            seconds,
            parked=parked,
        )

    async def loop(self, pending: Sequence[ToolCall] = (), final: Any = _NO_ANSWER) -> str | None:
        """Requests and tool calls until an accepted answer; a restored turn first runs the calls it had not
        finished (``pending``) or judges the answer it had received (``final``)."""
        await self.run_tools(pending)
        if not pending and final is not _NO_ANSWER and await self.accepted(final):
            return final  # type: ignore[no-any-return]
        while True:
            await self.compact_if_needed()
            reply = await self.request(self.conversation.messages())
            message: dict[str, Any] = {"role": "assistant", "content": reply.content}
            if reply.calls:
                message["tool_calls"] = [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                    for c in reply.calls
                ]
            self.conversation.append(message)
            if not reply.calls:
                if reply.finish == "length":
                    raise _Stopped(
                        Stop(
                            "model.length", "the model's answer was cut at its output limit", {"answer": reply.content}
                        )
                    )
                if await self.accepted(reply.content):
                    return reply.content
                continue
            await self.run_tools(reply.calls)

    async def accepted(self, content: str | None) -> bool:
        """Whether the final message passes ``answer_check``; a refusal goes back to the model as a user
        message (a final message has no tool call to answer), a bounded number of times."""
        if self.answer_check is None:
            return True
        try:
            self.value = self.answer_check(content)
            return True
        except SubhiveError as error:
            self.refusals += 1
            final = self.refusals > self.answer_retries
            again = (
                None
                if final
                else (f"Your answer was refused ({error.code}): {error.message}. {error.hint or ''} Answer again.")
            )
            await self.emit(
                "answer.refused", attempt=self.refusals, error=error.code, message=error.message, reply=again
            )
            if again is None:
                raise _Stopped(
                    Stop(
                        "answer.invalid",
                        f"the answer was refused {self.refusals} times, last: {error.message}",
                        {"error": error.code, "attempts": self.refusals},
                    )
                ) from None
            self.conversation.append({"role": "user", "content": again})
            return False

    # -- the model ----------------------------------------------------------------------------------------

    def remaining(self) -> float:
        left = self.budgets.wall_time - (time.monotonic() - self.started)
        if left <= 0:
            raise _Stopped(
                Stop(
                    "budget.wall_time",
                    f"the turn ran out of its {self.budgets.wall_time:g} s",
                    {"limit": self.budgets.wall_time},
                )
            )
        return left

    def estimate(self, extra: int = 0) -> int:
        """The next request's size: the local estimate, or what the model reported plus what was added since,
        whichever is larger (a real tokenizer may count more than the estimate)."""
        local = self.conversation.tokens + self.tools_tokens + extra
        if self.reported is not None and self.conversation.epoch == self.reported_epoch:
            tokens, then = self.reported
            return max(local, tokens + (local - then))
        return local

    async def request(self, messages: list[dict[str, Any]], *, compaction: bool = False) -> _Reply:
        budgets = self.budgets
        if len(self.usage) >= budgets.model_calls:
            raise _Stopped(
                Stop(
                    "budget.model_calls",
                    f"the turn used its {budgets.model_calls} model calls",
                    {"limit": budgets.model_calls},
                )
            )
        used = sum(u.prompt_tokens + u.completion_tokens for u in self.usage)
        if used >= budgets.tokens:
            raise _Stopped(
                Stop(
                    "budget.tokens",
                    f"the turn used {used} tokens of its {budgets.tokens}",
                    {"limit": budgets.tokens, "used": used},
                )
            )
        local = self.conversation.tokens + self.tools_tokens + (estimate_tokens(messages[-1]) if compaction else 0)
        await self.emit(
            "model.request", n=len(self.usage) + 1, messages=len(messages), tokens=local, compaction=compaction
        )
        began = time.monotonic()
        name, model = self.settings.name, self.settings.model.model
        # A span per model call and tool call (while tracing), as OpenTelemetry's GenAI conventions name them.
        attributes = {"gen_ai.operation.name": "chat", "gen_ai.request.model": model, "subhive.agent": name}
        with span(f"chat {model}", "client", attributes) as at:
            try:
                reply = await asyncio.wait_for(self.call_model(messages, compaction), self.remaining())
            except TimeoutError:
                raise _Stopped(
                    Stop(
                        "budget.wall_time",
                        f"the turn ran out of its {budgets.wall_time:g} s waiting for the model",
                        {"limit": budgets.wall_time},
                    )
                ) from None
            finally:
                self.model_seconds += time.monotonic() - began
            at.set("gen_ai.usage.input_tokens", reply.usage.prompt_tokens)
            at.set("gen_ai.usage.output_tokens", reply.usage.completion_tokens)
        record_agent_usage(
            name, model, reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.cached_tokens
        )
        self.usage.append(reply.usage)
        self.reported, self.reported_epoch = (reply.usage.prompt_tokens, local), self.conversation.epoch
        await self.emit(
            "model.reply",
            n=len(self.usage),
            content=reply.content,
            finish=reply.finish,
            tool_calls=[{"id": c.id, "name": c.name, "arguments": c.arguments} for c in reply.calls],
            usage=reply.usage.to_dict(),
            seconds=round(time.monotonic() - began, 6),
        )
        return reply

    async def call_model(self, messages: list[dict[str, Any]], compaction: bool) -> _Reply:
        import openai

        model = self.settings.model
        options: dict[str, Any] = {"model": model.model, "messages": messages}
        if self.tools:
            options["tools"] = self.tools
        if model.temperature is not None:
            options["temperature"] = model.temperature
        client = self.agent.client()
        try:
            if model.stream:
                options["stream"] = True
                options["stream_options"] = {"include_usage": True}
                reply = await _collect(await client.chat.completions.create(**options), messages)
            else:
                reply = _read(await client.chat.completions.create(**options), messages)
        except openai.APITimeoutError:
            url, origin = self.agent.endpoint()
            raise _Stopped(
                Stop(
                    "model.timeout",
                    f"the model at {url} (from {origin}) did not answer within {model.timeout:g} s, "
                    f"{model.max_retries} retries included",
                    {
                        "timeout": model.timeout,
                        "url": url,
                        "from": origin,
                        "hint": f"a slow model needs a longer timeout in [agents.{self.settings.name}.model]; "
                        "a busy server, a retry later",
                    },
                )
            ) from None
        except openai.APIStatusError as exc:
            raise _Stopped(
                Stop(
                    "model.failed",
                    f"the model endpoint answered {exc.status_code}: {_short(exc.message)}",
                    {"status": exc.status_code, "retries": model.max_retries},
                )
            ) from None
        except openai.APIConnectionError as exc:
            url, origin = self.agent.endpoint()
            raise _Stopped(
                Stop(
                    "model.unreachable",
                    f"the model endpoint {url} (from {origin}) cannot be reached: {_short(str(exc))}",
                    {
                        "retries": model.max_retries,
                        "url": url,
                        "from": origin,
                        "hint": "start the model server there, or point the agent at a running one: "
                        f"OPENAI_BASE_URL, or base_url in [agents.{self.settings.name}.model] "
                        "(e.g. http://127.0.0.1:11434/v1 for Ollama)",
                    },
                )
            ) from None
        if compaction:
            reply.usage = RequestUsage(
                reply.usage.prompt_tokens,
                reply.usage.completion_tokens,
                reply.usage.cached_tokens,
                reply.usage.estimated,
                compaction=True,
            )
        return reply

    # -- tools --------------------------------------------------------------------------------------------

    async def run_tools(self, calls: Sequence[ToolCall]) -> None:
        """The calls of one reply: consecutive calls the tool box says may run together (read-only tools, under
        ``allow``) run at once, at most ``parallel_tools`` at a time; any other call runs alone, after everything
        before it and before anything after it. Results join the conversation in the reply's order, whatever
        order they finish in, so the next request is the same bytes (decision 0063)."""
        together: list[ToolCall] = []
        for call in calls:
            if self.agent.tools.concurrent(call.name):
                together.append(call)
                continue
            await self.run_batch(together)
            together = []
            await self.run_batch([call])
        await self.run_batch(together)

    async def run_batch(self, calls: Sequence[ToolCall]) -> None:
        """Admit the calls in order (budgets and repeats counted as if they ran one by one: a call the budget
        stops is not run, those before it are), run them, record each result in order as soon as it and every
        result before it are in."""
        admitted: list[ToolCall] = []
        stopped: _Stopped | None = None
        for call in calls:
            try:
                await self.admit(call)
            except _Stopped as stop:
                stopped = stop
                break
            admitted.append(call)
        if len(admitted) == 1:
            await self.record(admitted[0], await self.execute(admitted[0]))
        elif admitted:
            bound = asyncio.Semaphore(self.settings.parallel_tools)

            async def bounded(call: ToolCall) -> _Outcome:
                async with bound:
                    return await self.execute(call)

            tasks = [asyncio.ensure_future(bounded(call)) for call in admitted]
            try:
                for call, task in zip(admitted, tasks, strict=True):
                    await self.record(call, await task)
            finally:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
        if stopped is not None:
            raise stopped

    async def admit(self, call: ToolCall) -> None:
        """Count the call against the budgets (stopping the turn when one is reached) and say it is made."""
        budgets = self.budgets
        if self.tool_calls >= budgets.tool_calls:
            raise _Stopped(
                Stop(
                    "budget.tool_calls",
                    f"the turn used its {budgets.tool_calls} tool calls",
                    {"limit": budgets.tool_calls},
                )
            )
        key = call.key()
        self.calls[key] += 1
        if self.calls[key] >= budgets.repeat_limit:
            raise _Stopped(
                Stop(
                    "loop.repeated_call",
                    f"{call.name} was called {self.calls[key]} times with the same arguments",
                    {"tool": call.name, "arguments": call.arguments, "limit": budgets.repeat_limit},
                )
            )
        self.tool_calls += 1
        policy = self.agent.tools.policy(call.name)
        await self.emit("tool.call", id=call.id, name=call.name, arguments=call.arguments, policy=policy)

    async def execute(self, call: ToolCall) -> _Outcome:
        """Run one admitted call; a refusal or a tool's failure is its outcome, the wall time a stop."""
        began = time.monotonic()
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.id,
            "subhive.agent": self.settings.name,
        }
        with span(f"execute_tool {call.name}", "internal", attributes) as at:
            try:
                result = await asyncio.wait_for(
                    self.agent.tools.dispatch(call, on_asked=lambda approval: self.waiting(call, approval)),
                    self.remaining(),
                )
            except TimeoutError:
                raise _Stopped(
                    Stop(
                        "budget.wall_time",
                        f"the turn ran out of its {self.budgets.wall_time:g} s in {call.name}",
                        {"limit": self.budgets.wall_time, "tool": call.name},
                    )
                ) from None
            except ToolError as error:
                at.fail(error.code, error.message)
                return _Outcome(error_content(error), error.code, (), (), time.monotonic() - began)
        content = result_content(result, self.settings.max_tool_output)
        return _Outcome(content, None, tuple(result.files_changed), tuple(result.pending), time.monotonic() - began)

    async def waiting(self, call: ToolCall, approval: str | None) -> None:
        """Visible while it waits, and only once someone has been asked (a call refused before that never
        says it waits): the exact arguments, the bound of the wait, the approval's id where it has one."""
        await self.emit(
            "approval.waiting",
            id=call.id,
            name=call.name,
            arguments=call.arguments,
            timeout=self.agent.tools.approval_timeout,
            approval=approval,
        )

    async def record(self, call: ToolCall, outcome: _Outcome) -> None:
        self.note_result(call, outcome.content, outcome.changed, outcome.waiting)
        await self.emit(
            "tool.result",
            id=call.id,
            name=call.name,
            ok=outcome.error is None,
            error=outcome.error,
            content=outcome.content,
            files_changed=list(outcome.changed),
            pending=list(outcome.waiting),
            seconds=round(outcome.seconds, 6),
        )

    def note_result(self, call: ToolCall, content: str, changed: Sequence[str], waiting: Sequence[str]) -> None:
        """A tool's result joins the conversation and the turn's state (live, and when a turn is restored)."""
        self.state.note_files(changed)
        self.state.pending.extend(p for p in waiting if p not in self.state.pending)
        self.state.note_call(call.name, call.arguments, content)
        self.conversation.append({"role": "tool", "tool_call_id": call.id, "content": content})

    # -- compaction ---------------------------------------------------------------------------------------

    async def compact_if_needed(self) -> None:
        """Compact early enough that the summary request itself stays under the threshold: when this request,
        grown by the largest step seen so far, plus the compaction prompt would reach it."""
        model = self.settings.model
        size = self.estimate()
        if self.last_size is not None:
            self.max_growth = max(self.max_growth, size - self.last_size)
        self.last_size = size
        prompt = {"role": "user", "content": COMPACTION_PROMPT}
        if not model.compaction or size + self.max_growth + estimate_tokens(prompt) < model.compact_threshold:
            return
        before = size
        reply = await self.request([*self.conversation.messages(), prompt], compaction=True)
        summary = reply.content or ""
        handoff = handoff_message(self.state, summary)
        self.conversation.replace([handoff])
        self.compactions += 1
        after = self.last_size = self.estimate()
        await self.emit(
            "compaction",
            n=self.compactions,
            tokens_before=before,
            tokens_after=after,
            threshold=model.compact_threshold,
            summary=summary,
            state=self.state.to_dict(),
            handoff=handoff["content"],
        )
        if after >= model.compact_threshold:
            raise _Stopped(
                Stop(
                    "context.exhausted",
                    "even compacted, the conversation does not fit under the "
                    f"compaction threshold ({after} >= {model.compact_threshold} tokens)",
                    {"tokens": after, "threshold": model.compact_threshold},
                )
            )


def _usage(raw: Any, messages: list[dict[str, Any]], completion: Any) -> RequestUsage:
    if raw is None:
        return RequestUsage(estimate_tokens(messages), estimate_tokens(completion), estimated=True)
    details = getattr(raw, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) or 0
    return RequestUsage(int(raw.prompt_tokens or 0), int(raw.completion_tokens or 0), int(cached))


def _read(completion: Any, messages: list[dict[str, Any]]) -> _Reply:
    choice = completion.choices[0] if completion.choices else None
    message = choice.message if choice is not None else None
    content = message.content if message is not None else None
    calls = (
        [
            ToolCall(c.id, c.function.name, c.function.arguments or "")
            for c in (message.tool_calls or [])
            if getattr(c, "function", None) is not None
        ]
        if message
        else []
    )
    return _Reply(
        content,
        calls,
        choice.finish_reason if choice else None,
        _usage(completion.usage, messages, [content, [c.arguments for c in calls]]),
    )


async def _collect(stream: Any, messages: list[dict[str, Any]]) -> _Reply:
    """A streamed reply put back together: text deltas joined, tool calls assembled by index."""
    text: list[str] = []
    calls: dict[int, dict[str, str]] = {}
    finish: str | None = None
    usage: Any = None
    async for chunk in stream:
        if getattr(chunk, "usage", None) is not None:
            usage = chunk.usage
        for choice in chunk.choices or []:
            delta = choice.delta
            if delta.content:
                text.append(delta.content)
            for part in delta.tool_calls or []:
                call = calls.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
                call["id"] = part.id or call["id"]
                if part.function is not None:
                    call["name"] += part.function.name or ""
                    call["arguments"] += part.function.arguments or ""
            finish = choice.finish_reason or finish
    content = "".join(text) if text else None
    made = [ToolCall(c["id"] or f"call_{i}", c["name"], c["arguments"]) for i, c in sorted(calls.items())]
    return _Reply(content, made, finish, _usage(usage, messages, [content, [c.arguments for c in made]]))


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def restore(turn: _Turn, frames: Sequence[Mapping[str, Any]]) -> tuple[list[ToolCall], Any]:
    """Rebuild ``turn`` from its kept frames: conversation, usage, counters, state. Returns the tool calls of
    the last reply that have no result yet, and the last reply's text when it was an answer not yet judged."""
    pending: dict[str, ToolCall] = {}
    final: Any = _NO_ANSWER
    compacting = False
    for f in sorted(frames, key=lambda f: int(f["seq"])):
        kind = f["kind"]
        data = {k: v for k, v in f.items() if k not in ("kind", "turn", "seq", "time")}
        turn.frames.append(Frame(kind, turn.id, int(f["seq"]), data, float(f.get("time") or 0.0)))
        if kind == "turn.started":
            turn.conversation.extend({"role": "user", "content": t} for t in (f.get("context"), turn.state.task) if t)
        elif kind == "model.request":
            compacting = bool(f.get("compaction"))
        elif kind == "model.reply":
            replied = _restore_reply(turn, f, compacting)
            if replied is not None:
                pending, final = replied
        elif kind == "tool.result" and f.get("id") in pending:
            _restore_result(turn, pending.pop(f["id"]), f)
        elif kind == "compaction":
            turn.conversation.replace([{"role": "user", "content": f["handoff"]}])
            turn.compactions = int(f.get("n", turn.compactions + 1))
        elif kind == "answer.refused":
            turn.refusals = int(f.get("attempt", turn.refusals + 1))
            if f.get("reply"):
                turn.conversation.append({"role": "user", "content": f["reply"]})
                final = _NO_ANSWER
        elif kind == "turn.stopped":
            raise ValueError(f"turn {turn.id} already stopped ({(f.get('stop') or {}).get('code')}): nothing to resume")
    return list(pending.values()), final


def _restore_result(turn: _Turn, call: ToolCall, f: Mapping[str, Any]) -> None:
    turn.tool_calls += 1
    turn.calls[call.key()] += 1
    turn.note_result(call, str(f.get("content", "")), f.get("files_changed") or (), f.get("pending") or ())


def _restore_reply(turn: _Turn, f: Mapping[str, Any], compacting: bool) -> tuple[dict[str, ToolCall], Any] | None:
    """A kept reply: its usage counted; unless it was a compaction summary, its message appended as sent.
    Returns its calls (awaiting results) and its text when it was an answer."""
    usage = f.get("usage") or {}
    turn.usage.append(
        RequestUsage(
            int(usage.get("prompt_tokens", 0)),
            int(usage.get("completion_tokens", 0)),
            int(usage.get("cached_tokens", 0)),
            bool(usage.get("estimated")),
            compaction=compacting,
        )
    )
    if compacting:
        return None
    calls = [ToolCall(c["id"], c["name"], c["arguments"]) for c in f.get("tool_calls") or []]
    message: dict[str, Any] = {"role": "assistant", "content": f.get("content")}
    if calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in calls
        ]
    turn.conversation.append(message)
    return {c.id: c for c in calls}, (f.get("content") if not calls else _NO_ANSWER)
