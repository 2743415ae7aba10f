"""What an agent's loop is configured with: the model endpoint, the context window, budgets; validated on
construction, and the OpenAI client they open."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ..errors import InputError, Location

__all__ = ["AgentSettings", "Budgets", "ModelSettings", "NoEndpoint", "endpoint_origin", "open_client", "shown_url"]

#: A key is required by the SDK even where the server ignores it (Ollama, llama.cpp, the scripted server).
PLACEHOLDER_KEY = "unused"


class NoEndpoint(InputError):
    """No OpenAI-compatible endpoint is set: neither the agent's ``base_url`` nor ``OPENAI_BASE_URL``."""

    default_code = "agent.no_endpoint"


@dataclass(frozen=True)
class ModelSettings:
    """How to reach the model. ``base_url`` and ``api_key`` fall back to ``OPENAI_BASE_URL`` and
    ``OPENAI_API_KEY``; ``api_key_env`` names another variable to read the key from (a manifest names the
    variable, never the key). ``max_retries`` and ``timeout`` go to the SDK, which retries 408/409/429/5xx,
    timeouts and lost connections with exponential backoff."""

    model: str
    base_url: str | None = None
    api_key_env: str | None = None
    api_key: str | None = field(default=None, repr=False)
    context_window: int = 128_000
    #: Compact the conversation once a request would reach this share of the context window.
    compact_at: float = 0.8
    compaction: bool = True
    max_retries: int = 3
    timeout: float = 120.0
    stream: bool = False
    temperature: float | None = None

    def __post_init__(self) -> None:
        if not self.model.strip():
            raise ValueError("the model's name is empty")
        if self.context_window < 256:
            raise ValueError(f"context_window must be at least 256 tokens, not {self.context_window}")
        if not 0.1 <= self.compact_at <= 0.95:
            raise ValueError(f"compact_at is a share of the context window between 0.1 and 0.95, not {self.compact_at}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries cannot be negative ({self.max_retries})")
        if self.timeout <= 0:
            raise ValueError(f"timeout must be positive, not {self.timeout}")

    @property
    def compact_threshold(self) -> int:
        """The request size, in tokens, at which the conversation is compacted."""
        return int(self.context_window * self.compact_at)

    def endpoint(self, environ: Mapping[str, str] | None = None, *, where: Location | None = None) -> tuple[str, str]:
        """``(base_url, api_key)`` after the environment fallbacks; :class:`NoEndpoint` when there is no URL."""
        env = os.environ if environ is None else environ
        base_url = self.base_url or env.get("OPENAI_BASE_URL", "").strip()
        if not base_url:
            raise NoEndpoint(
                f"no model endpoint for {self.model!r}: OPENAI_BASE_URL is not set and the agent names no base_url",
                location=where,
                hint="export OPENAI_BASE_URL=http://127.0.0.1:11434/v1 (Ollama; vLLM, llama.cpp and "
                "hosted APIs work the same), or set base_url in the agent's [agents.NAME.model]",
            )
        key = (
            self.api_key
            or (env.get(self.api_key_env, "") if self.api_key_env else "")
            or env.get("OPENAI_API_KEY", "")
            or PLACEHOLDER_KEY
        )
        return base_url, key


@dataclass(frozen=True)
class Budgets:
    """Per-turn limits; reaching one stops the turn with a structured reason (``budget.*``).
    ``repeat_limit``: the same tool call with the same arguments this many times stops it (``loop.repeated_call``)."""

    model_calls: int = 50
    tool_calls: int = 200
    tokens: int = 2_000_000
    wall_time: float = 600.0
    repeat_limit: int = 3

    def __post_init__(self) -> None:
        for name in ("model_calls", "tool_calls", "tokens", "repeat_limit"):
            if getattr(self, name) < 1:
                raise ValueError(f"budget {name} must be at least 1, not {getattr(self, name)}")
        if self.wall_time <= 0:
            raise ValueError(f"budget wall_time must be positive, not {self.wall_time}")


@dataclass(frozen=True)
class AgentSettings:
    """One agent: its name (unique in the hive), instructions, model and budgets. ``max_tool_output``:
    characters of a tool's result the model sees (the rest is cut, and the cut is said). ``parallel_tools``:
    how many calls of one reply run at once when they may (docs/agents.md#the-loop)."""

    name: str
    instructions: str
    model: ModelSettings
    budgets: Budgets = field(default_factory=Budgets)
    max_tool_output: int = 16_000
    #: Calls of one reply that may run together (read-only tools under ``allow``) run at most this many at once.
    parallel_tools: int = 4

    def __post_init__(self) -> None:
        if self.parallel_tools < 1:
            raise ValueError(f"parallel_tools must be at least 1, not {self.parallel_tools}")
        if not self.name or not self.name.replace("_", "a").replace("-", "a").isalnum():
            raise ValueError(f"{self.name!r} is not an agent name (letters, digits, _ and -)")
        if self.max_tool_output < 256:
            raise ValueError(f"max_tool_output must be at least 256 characters, not {self.max_tool_output}")


def open_client(settings: ModelSettings, environ: Mapping[str, str] | None = None) -> Any:
    """An ``openai.AsyncOpenAI`` client for ``settings`` (raises :class:`NoEndpoint` first when none is set)."""
    import openai

    base_url, key = settings.endpoint(environ)
    return openai.AsyncOpenAI(
        base_url=base_url, api_key=key, max_retries=settings.max_retries, timeout=settings.timeout
    )


def endpoint_origin(settings: AgentSettings, environ: Mapping[str, str] | None = None) -> str:
    """Where the agent's model endpoint was set, named as a person changes it (the order
    :meth:`ModelSettings.endpoint` reads them in)."""
    env = os.environ if environ is None else environ
    if settings.model.base_url:
        return f"base_url in [agents.{settings.name}.model]"
    if env.get("OPENAI_BASE_URL", "").strip():
        return "OPENAI_BASE_URL"
    return "the client this agent was given"


def shown_url(url: str) -> str:
    """``url`` fit to print: without a user name or password it may carry."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return url
    if "@" not in parts.netloc:
        return url
    netloc = (f"[{host}]" if ":" in host else host) + (f":{port}" if port else "")
    return urlunsplit(parts._replace(netloc=netloc))
