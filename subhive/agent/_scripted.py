"""A scripted OpenAI-compatible HTTP server: agents and their tests run without a paid model.

Real HTTP on loopback, one script step per request, every request recorded so tests check what a client sent.
See docs/agents.md#the-scripted-server-agents-without-a-paid-model.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ..errors import InputError, Location

__all__ = ["RecordedRequest", "ScriptedServer", "Step", "ToolCallStep", "estimate_tokens"]

#: What the scripted model calls itself when a request names no model.
DEFAULT_MODEL = "scripted"


def estimate_tokens(value: Any) -> int:
    """A model-free token count: a quarter of the JSON text's length, rounded up (about right for English and
    code; the scripted server reports it as usage, and the agent loop estimates sizes the same way)."""
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return math.ceil(len(text) / 4)


@dataclass(frozen=True)
class ToolCallStep:
    """One tool call the scripted model makes: ``arguments`` is a JSON-able value, or text sent as it is
    (malformed arguments are text that is not JSON)."""

    name: str
    arguments: Any = field(default_factory=dict)
    id: str | None = None

    def arguments_text(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, separators=(",", ":"), sort_keys=True)


@dataclass(frozen=True)
class Step:
    """One scripted answer. Build it with the class methods: :meth:`say`, :meth:`call`, :meth:`fail`."""

    content: str | None = None
    tool_calls: tuple[ToolCallStep, ...] = ()
    status: int = 200
    error: str = ""
    #: Seconds to wait before answering (longer than the client's timeout: the client times out).
    delay: float = 0.0
    #: Seconds a 429/5xx asks the client to wait (``retry-after-ms``); ``None`` sends no header.
    retry_after: float | None = 0.01
    finish_reason: str | None = None
    #: Usage to report instead of the estimate: ``{"prompt_tokens": .., "completion_tokens": ..}``.
    usage: Mapping[str, int] | None = None

    @classmethod
    def say(cls, text: str, *, delay: float = 0.0, usage: Mapping[str, int] | None = None) -> Step:
        """An assistant message: the model is done."""
        return cls(content=text, delay=delay, usage=usage)

    @classmethod
    def call(
        cls,
        *calls: ToolCallStep | tuple[str, Any],
        content: str | None = None,
        delay: float = 0.0,
        usage: Mapping[str, int] | None = None,
    ) -> Step:
        """One or several tool calls in one response: ``Step.call(("read_file", {"path": "a.py"}))``."""
        if not calls:
            raise ValueError("Step.call needs at least one tool call")
        made = tuple(c if isinstance(c, ToolCallStep) else ToolCallStep(c[0], c[1]) for c in calls)
        return cls(content=content, tool_calls=made, delay=delay, usage=usage)

    @classmethod
    def fail(cls, status: int, message: str = "", *, retry_after: float | None = 0.01, delay: float = 0.0) -> Step:
        """An HTTP error: 429 (rate limited), 500/503 (server error), 400 (bad request)..."""
        if status < 400:
            raise ValueError(f"Step.fail needs an error status, not {status}")
        return cls(status=status, error=message or f"scripted error {status}", retry_after=retry_after, delay=delay)

    @classmethod
    def stall(cls, seconds: float, then: Step | None = None) -> Step:
        """Answer only after ``seconds`` (with ``then``, a message by default): a client with a shorter timeout
        gives up, and the SDK retries on the next step."""
        base = then or cls.say("late")
        return cls(
            content=base.content,
            tool_calls=base.tool_calls,
            status=base.status,
            error=base.error,
            delay=seconds,
            retry_after=base.retry_after,
            usage=base.usage,
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, where: str = "") -> Step:
        """A step written as JSON (a script file): ``{"say": ".."}``, ``{"call": [{"name": .., "arguments": ..}]}``,
        ``{"fail": 429}``; ``delay`` and ``usage`` go with any of them."""
        delay = float(data.get("delay", 0.0))
        usage = data.get("usage")
        if "say" in data:
            return cls.say(str(data["say"]), delay=delay, usage=usage)
        if "call" in data:
            calls = [ToolCallStep(str(c["name"]), c.get("arguments", {}), c.get("id")) for c in data["call"]]
            return cls.call(*calls, content=data.get("content"), delay=delay, usage=usage)
        if "fail" in data:
            return cls.fail(int(data["fail"]), str(data.get("message", "")), delay=delay)
        raise InputError(
            f"a scripted step needs one of say, call, fail; got {sorted(data)}",
            code="agent.script_invalid",
            location=Location(file=where or None),
            hint='e.g. {"say": "done"} or {"call": [{"name": "read_file", "arguments": {"path": "a"}}]}',
        )


@dataclass(frozen=True)
class RecordedRequest:
    """What the server received: the path, the headers (lower-cased names), the body as JSON and as bytes."""

    path: str
    headers: Mapping[str, str]
    body: Any
    raw: bytes
    time: float


Responder = Callable[[RecordedRequest], Step]


class ScriptedServer:
    """An OpenAI-compatible chat-completions server that answers from a script. Use it as a context manager
    (sync), or :meth:`start` and :meth:`stop`. ``script`` is a sequence of steps answered in order, or a
    function from the request to its step (for long or reactive scripts); past the end of a list, requests get
    400 ``script_exhausted`` (not retried by clients: a test that runs off its script fails fast)."""

    def __init__(self, script: Sequence[Step] | Responder, *, model: str = DEFAULT_MODEL, chunk_size: int = 8) -> None:
        self._steps: list[Step] | None = None if callable(script) else list(script)
        self._responder: Responder | None = script if callable(script) else None
        self.model = model
        self.chunk_size = max(1, chunk_size)
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._next = 0
        self._closing = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- life ---------------------------------------------------------------------------------------------

    def start(self) -> ScriptedServer:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        server.daemon_threads = True
        self._httpd = server
        self._thread = threading.Thread(target=server.serve_forever, args=(0.05,), name="scripted-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._closing.set()  # stalled answers stop waiting
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the scripted server is not running")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """What ``OPENAI_BASE_URL`` is set to for this server: ``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    # -- script -------------------------------------------------------------------------------------------

    def extend(self, steps: Iterable[Step]) -> None:
        """Add steps at the end of a list script."""
        if self._steps is None:
            raise TypeError("a script given as a function cannot be extended")
        with self._lock:
            self._steps.extend(steps)

    @property
    def remaining(self) -> int:
        """Steps not answered yet (0 for a function script)."""
        with self._lock:
            return 0 if self._steps is None else len(self._steps) - self._next

    def chat_requests(self) -> list[RecordedRequest]:
        """The recorded chat-completions requests, in order."""
        with self._lock:
            return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def _record(self, request: RecordedRequest) -> int:
        with self._lock:
            self.requests.append(request)
            return len(self.requests)

    def _take(self, request: RecordedRequest) -> Step | None:
        with self._lock:
            self.requests.append(request)
            if self._steps is not None:
                if self._next >= len(self._steps):
                    return None
                self._next += 1
                return self._steps[self._next - 1]
            responder = self._responder
        return responder(request) if responder is not None else None

    def _wait(self, seconds: float) -> bool:
        """Wait ``seconds``; False when the server is stopping."""
        return not self._closing.wait(seconds) if seconds > 0 else True


def _handler_for(server: ScriptedServer) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        scripted = server

    return Handler


class _Handler(BaseHTTPRequestHandler):
    scripted: ScriptedServer
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes: without this, Nagle's algorithm and the client's delayed ACK
    # hold the body back ~40 ms on every request.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        return  # quiet: tests read the recorded requests instead

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._json(
                200,
                {
                    "object": "list",
                    "data": [{"id": self.scripted.model, "object": "model", "created": 0, "owned_by": "subhive"}],
                },
            )
        else:
            self._json(404, _error(f"no route GET {self.path}", "not_found"))

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = None
        record = RecordedRequest(self.path, {k.lower(): v for k, v in self.headers.items()}, body, raw, time.time())
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self.scripted._record(record)
            self._json(404, _error(f"no route POST {self.path}", "not_found"))
            return
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            self.scripted._record(record)
            self._json(400, _error("the body must be a JSON object with messages", "invalid_request"), retry=False)
            return
        try:
            step = self.scripted._take(record)
        except Exception as exc:  # a bug in a function script: the test fails at once, saying where
            self._json(
                400, _error(f"the script function raised {type(exc).__name__}: {exc}", "script_error"), retry=False
            )
            return
        if step is None:
            self._json(400, _error("the scripted server's script is exhausted", "script_exhausted"), retry=False)
            return
        if not self.scripted._wait(step.delay):
            return
        try:
            self._answer(step, body)
        except (BrokenPipeError, ConnectionResetError):
            return  # the client gave up (timed out) while we were answering

    def _answer(self, step: Step, body: dict[str, Any]) -> None:
        if step.status >= 400:
            headers = {} if step.retry_after is None else {"retry-after-ms": str(int(step.retry_after * 1000))}
            kind = "rate_limit_exceeded" if step.status == 429 else "server_error"
            self._json(step.status, _error(step.error, kind), headers=headers)
            return
        model = str(body.get("model") or self.scripted.model)
        prompt = estimate_tokens({"messages": body["messages"], "tools": body.get("tools", [])})
        number = len(self.scripted.requests)
        calls = [
            {
                "id": c.id or f"call_{number}_{i}",
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments_text()},
            }
            for i, c in enumerate(step.tool_calls)
        ]
        completion = estimate_tokens({"content": step.content, "tool_calls": calls})
        usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
        if step.usage:
            usage.update(step.usage)
            usage["total_tokens"] = usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)
        finish = step.finish_reason or ("tool_calls" if calls else "stop")
        ident = f"chatcmpl-{number}"
        if body.get("stream"):
            self._stream(step, body, ident=ident, model=model, calls=calls, finish=finish, usage=usage)
            return
        message: dict[str, Any] = {"role": "assistant", "content": step.content}
        if calls:
            message["tool_calls"] = calls
        self._json(
            200,
            {
                "id": ident,
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
                "usage": usage,
            },
        )

    def _stream(
        self,
        step: Step,
        body: dict[str, Any],
        *,
        ident: str,
        model: str,
        calls: list[dict[str, Any]],
        finish: str,
        usage: dict[str, int],
    ) -> None:
        size = self.scripted.chunk_size
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True

        def chunk(delta: dict[str, Any], finish_reason: str | None = None, **extra: Any) -> None:
            data = {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}],
                **extra,
            }
            self.wfile.write(b"data: " + json.dumps(data).encode() + b"\n\n")
            self.wfile.flush()

        chunk({"role": "assistant", "content": ""})
        text = step.content or ""
        for start in range(0, len(text), size):
            chunk({"content": text[start : start + size]})
        for index, call in enumerate(calls):
            arguments = call["function"]["arguments"]
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call["id"],
                            "type": "function",
                            "function": {"name": call["function"]["name"], "arguments": ""},
                        }
                    ]
                }
            )
            for start in range(0, len(arguments), size):
                chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[start : start + size]}}]})
        chunk({}, finish)
        if (body.get("stream_options") or {}).get("include_usage"):
            data = {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [],
                "usage": usage,
            }
            self.wfile.write(b"data: " + json.dumps(data).encode() + b"\n\n")
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()

    def _json(
        self, status: int, payload: Any, *, headers: Mapping[str, str] | None = None, retry: bool | None = None
    ) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if retry is not None:
            self.send_header("x-should-retry", "true" if retry else "false")
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()


def _error(message: str, code: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": code, "code": code, "param": None}}
