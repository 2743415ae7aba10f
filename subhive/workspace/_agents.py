"""The agents a hive declares: ``[agents.NAME]`` tables in its ``subhive.toml``, read key by key so every
mistake is one located problem among the manifest's. The agent package turns an :class:`AgentSpec` into a loop.
See docs/agents.md#declaring-an-agent-agentsname-in-subhivetoml.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from .._source import join_pointer
from ..errors import Location
from ._toml import toml_key, toml_string

__all__ = ["AGENT_TOOLS", "AgentBudgets", "AgentModel", "AgentSpec", "AgentTrigger", "read_agents"]

#: The tools every agent may be given, besides one ``call_<contract>_<operation>`` per consumed operation.
AGENT_TOOLS = (
    "board_read",
    "board_write",
    "list_files",
    "plan",
    "propose_contract",
    "propose_critical",
    "propose_diff",
    "read_file",
    "search",
)
POLICY_VALUES = ("allow", "ask", "deny")
_AGENT_KEYS = (
    "instructions",
    "model",
    "tools",
    "budgets",
    "trigger",
    "description",
    "approval_timeout",
    "memory_tokens",
    "repairs",
)
_MODEL_KEYS = (
    "name",
    "base_url",
    "api_key_env",
    "context_window",
    "compact_at",
    "compaction",
    "max_retries",
    "timeout",
    "stream",
    "temperature",
)
_BUDGET_KEYS = ("model_calls", "tool_calls", "tokens", "wall_time", "repeat_limit")
_TRIGGER_KEYS = ("keys", "operation")
_AGENT_NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}\Z")
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_KEY_TOKEN = re.compile(r"[A-Za-z0-9_\-/=]+\Z")

Report = Callable[[str, str, str, str], None]
Locate = Callable[[str], Location]


@dataclass(frozen=True, slots=True)
class AgentModel:
    """``[agents.NAME.model]`` (or ``model = "name"``): the model and how to reach it; the key is read from
    the environment variable ``api_key_env`` names (never written in a manifest)."""

    name: str
    base_url: str | None = None
    api_key_env: str | None = None
    context_window: int = 128_000
    compact_at: float = 0.8
    compaction: bool = True
    max_retries: int = 3
    timeout: float = 120.0
    stream: bool = False
    temperature: float | None = None


@dataclass(frozen=True, slots=True)
class AgentBudgets:
    """``[agents.NAME.budgets]``: per-turn limits."""

    model_calls: int = 50
    tool_calls: int = 200
    tokens: int = 2_000_000
    wall_time: float = 600.0
    repeat_limit: int = 3


@dataclass(frozen=True, slots=True)
class AgentTrigger:
    """``[agents.NAME.trigger]``: board key patterns that start a turn, or the contract operation it serves."""

    keys: tuple[str, ...] = ()
    operation: str | None = None


@dataclass(frozen=True)
class AgentSpec:
    """One declared agent. ``tools`` maps each tool it is given to its policy, in the manifest's order; a tool
    not listed is not given. ``locations`` holds where each part was written (``"tools.read_file"``, ``""`` for
    the table), so later checks (an operation the contract lacks) can point at the line."""

    name: str
    instructions: str
    model: AgentModel
    tools: Mapping[str, str] = field(default_factory=dict)
    budgets: AgentBudgets = field(default_factory=AgentBudgets)
    trigger: AgentTrigger = field(default_factory=AgentTrigger)
    description: str = ""
    #: Seconds an ``ask`` tool call waits for a person's answer before it is refused.
    approval_timeout: float = 300.0
    #: Tokens of the hive's memory of outcomes a turn is given before its task (0: none).
    memory_tokens: int = 800
    #: The runtime hands this hive's new repair proposals to this agent (one agent per hive; decision 0053).
    repairs: bool = False
    locations: Mapping[str, Location] = field(default_factory=dict, compare=False, repr=False)

    def to_toml(self) -> str:
        lines = [f"[agents.{toml_key(self.name)}]"]
        if self.description:
            lines.append(f"description = {toml_string(self.description)}")
        lines.append(f"instructions = {toml_string(self.instructions)}")
        if self.approval_timeout != 300.0:
            lines.append(f"approval_timeout = {self.approval_timeout!r}")
        if self.memory_tokens != 800:
            lines.append(f"memory_tokens = {self.memory_tokens}")
        if self.repairs:
            lines.append("repairs = true")
        lines += ["", f"[agents.{toml_key(self.name)}.model]", f"name = {toml_string(self.model.name)}"]
        defaults = AgentModel(self.model.name)
        for key in _MODEL_KEYS[1:]:
            value = getattr(self.model, key)
            if value != getattr(defaults, key):
                lines.append(f"{key} = {_toml_value(value)}")
        if self.tools:
            lines += ["", f"[agents.{toml_key(self.name)}.tools]"]
            lines += [f"{toml_key(tool)} = {toml_string(policy)}" for tool, policy in self.tools.items()]
        if self.budgets != AgentBudgets():
            lines += ["", f"[agents.{toml_key(self.name)}.budgets]"]
            lines += [f"{key} = {_toml_value(getattr(self.budgets, key))}" for key in _BUDGET_KEYS]
        if self.trigger != AgentTrigger():
            lines += ["", f"[agents.{toml_key(self.name)}.trigger]"]
            if self.trigger.keys:
                lines.append("keys = [" + ", ".join(toml_string(k) for k in self.trigger.keys) + "]")
            if self.trigger.operation:
                lines.append(f"operation = {toml_string(self.trigger.operation)}")
        return "\n".join(lines) + "\n"


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return toml_string(value)
    return repr(value)


def read_agents(
    value: Any, report: Report, locate: Locate, *, consumes: tuple[str, ...] = (), provides: tuple[str, ...] = ()
) -> tuple[AgentSpec, ...]:
    """Read the ``agents`` table: one :class:`AgentSpec` per valid ``[agents.NAME]``; every problem goes to
    ``report(pointer, code, message, hint)``. ``consumes`` and ``provides`` name the hive's contracts (the
    contract tools and the served operation must be of those)."""
    if not isinstance(value, dict):
        report(
            "/agents",
            "agent.type",
            "'agents' must be a table of agents",
            "write one [agents.NAME] section per agent (docs/agents.md)",
        )
        return ()
    found: list[AgentSpec] = []
    for name, table in value.items():
        pointer = join_pointer("/agents", name)
        if not isinstance(name, str) or not _AGENT_NAME.match(name):
            report(
                pointer,
                "agent.name_invalid",
                f"{name!r} is not an agent name",
                "lower-case letters, digits, '_' and '-', starting with a letter, at most 32 characters",
            )
            continue
        if not isinstance(table, dict):
            report(pointer, "agent.type", f"agent {name!r} must be a table", f"write it as [agents.{name}]")
            continue
        spec = _AgentReader(name, pointer, report, locate, consumes=consumes, provides=provides).read(table)
        if spec is not None:
            found.append(spec)
    takers = [spec.name for spec in found if spec.repairs]
    for extra in takers[1:]:
        report(
            join_pointer(join_pointer("/agents", extra), "repairs"),
            "agent.repairs_twice",
            f"agent {extra}: {takers[0]} already takes this hive's repairs",
            "one agent per hive takes its repairs: keep repairs = true on one of them",
        )
    return tuple(found)


class _AgentReader:
    def __init__(
        self,
        name: str,
        pointer: str,
        report: Report,
        locate: Locate,
        *,
        consumes: tuple[str, ...],
        provides: tuple[str, ...],
    ) -> None:
        self.name, self.pointer, self.report, self.locate = name, pointer, report, locate
        self.consumes, self.provides = consumes, provides
        self.failed = False
        self.locations: dict[str, Location] = {"": locate(pointer)}

    def problem(self, pointer: str, code: str, message: str, hint: str) -> None:
        self.failed = True
        self.report(pointer, code, f"agent {self.name}: {message}", hint)

    def read(self, table: dict[str, Any]) -> AgentSpec | None:
        self.unknown(table, self.pointer, _AGENT_KEYS)
        instructions = self.instructions(table)
        model = self.model(table.get("model"))
        tools = self.tools(table.get("tools", {}))
        budgets = self.budgets(table.get("budgets", {}))
        trigger = self.trigger(table.get("trigger", {}))
        description = table.get("description", "")
        if not isinstance(description, str):
            self.problem(
                join_pointer(self.pointer, "description"),
                "agent.type",
                "'description' must be a string",
                "put it in double quotes",
            )
        wait = self.number(table, self.pointer, "approval_timeout", 300.0, low=1.0)
        memory = self.number(table, self.pointer, "memory_tokens", 800, integer=True, low=0, high=100_000)
        repairs = self.flag(table, self.pointer, "repairs", False)
        if repairs and tools.get("propose_diff") != "ask":
            self.problem(
                join_pointer(self.pointer, "repairs"),
                "agent.repair_needs_diff",
                "an agent that takes repairs must be able to propose a diff",
                f'give it propose_diff = "ask" in [agents.{self.name}.tools]',
            )
        if "repairs" in table:
            self.locations["repairs"] = self.locate(join_pointer(self.pointer, "repairs"))
        if self.failed or instructions is None or model is None:
            return None
        return AgentSpec(
            self.name,
            instructions,
            model,
            tools,
            budgets,
            trigger,
            str(description),
            wait,
            memory,
            repairs,
            self.locations,
        )

    def unknown(self, table: dict[str, Any], pointer: str, known: tuple[str, ...]) -> None:
        for key in table:
            if key not in known:
                close = difflib.get_close_matches(str(key), known, n=1)
                self.problem(
                    join_pointer(pointer, key),
                    "agent.unknown_key",
                    f"unknown key {key!r}",
                    f"did you mean {close[0]!r}?" if close else f"the keys allowed here are: {', '.join(known)}",
                )

    def instructions(self, table: dict[str, Any]) -> str | None:
        pointer = join_pointer(self.pointer, "instructions")
        value = table.get("instructions")
        if value is None:
            self.problem(
                self.pointer,
                "agent.missing_key",
                "no 'instructions'",
                f'add instructions = "agents/{self.name}.md" (a file in the hive\'s directory)',
            )
            return None
        relative = PurePosixPath(value) if isinstance(value, str) else None
        if relative is None or not value or relative.is_absolute() or ".." in relative.parts or "\\" in value:
            self.problem(
                pointer,
                "agent.path_escape",
                f"instructions {value!r} is not a path inside the hive",
                f"name a file relative to the hive's directory, e.g. agents/{self.name}.md",
            )
            return None
        self.locations["instructions"] = self.locate(pointer)
        return str(value)

    def model(self, value: Any) -> AgentModel | None:
        pointer = join_pointer(self.pointer, "model")
        if isinstance(value, str):
            value = {"name": value}
        if not isinstance(value, dict):
            self.problem(
                pointer if value is not None else self.pointer,
                "agent.missing_key" if value is None else "agent.type",
                "no 'model'" if value is None else "'model' must be a name or a table",
                'add model = "qwen3", or a [agents.NAME.model] table with name = "..."',
            )
            return None
        self.unknown(value, pointer, _MODEL_KEYS)
        name = value.get("name")
        if not isinstance(name, str) or not name.strip():
            self.problem(
                join_pointer(pointer, "name"),
                "agent.model_invalid",
                "the model needs a name",
                'name = "qwen3" (what the endpoint calls the model)',
            )
            return None
        base_url = value.get("base_url")
        if base_url is not None and (not isinstance(base_url, str) or not re.match(r"https?://", base_url)):
            self.problem(
                join_pointer(pointer, "base_url"),
                "agent.model_invalid",
                f"base_url {base_url!r} is not an http(s) URL",
                'e.g. base_url = "http://127.0.0.1:11434/v1"',
            )
            base_url = None
        key_env = value.get("api_key_env")
        if key_env is not None and (not isinstance(key_env, str) or not _ENV_NAME.match(key_env)):
            self.problem(
                join_pointer(pointer, "api_key_env"),
                "agent.model_invalid",
                f"api_key_env {key_env!r} is not an environment variable's name",
                'name the variable holding the key, e.g. api_key_env = "OLLAMA_KEY"; never the key',
            )
            key_env = None
        numbers = {
            "context_window": self.number(value, pointer, "context_window", 128_000, integer=True, low=256),
            "compact_at": self.number(value, pointer, "compact_at", 0.8, low=0.1, high=0.95),
            "max_retries": self.number(value, pointer, "max_retries", 3, integer=True, low=0, high=20),
            "timeout": self.number(value, pointer, "timeout", 120.0, low=0.1),
        }
        temperature = value.get("temperature")
        if temperature is not None:
            temperature = self.number(value, pointer, "temperature", 0.0, low=0.0, high=2.0)
        flags = {
            key: self.flag(value, pointer, key, default) for key, default in (("compaction", True), ("stream", False))
        }
        return AgentModel(name, base_url, key_env, temperature=temperature, **numbers, **flags)

    def number(
        self,
        table: dict[str, Any],
        pointer: str,
        key: str,
        default: float,
        *,
        integer: bool = False,
        low: float | None = None,
        high: float | None = None,
    ) -> Any:
        value = table.get(key, default)
        good = (
            not isinstance(value, bool)
            and isinstance(value, int if integer else int | float)
            and math.isfinite(value)
            and (low is None or value >= low)
            and (high is None or value <= high)
        )
        if not good:
            span = (
                f" between {low:g} and {high:g}"
                if low is not None and high is not None
                else f" of at least {low:g}"
                if low is not None
                else ""
            )
            self.problem(
                join_pointer(pointer, key),
                "agent.value_invalid",
                f"{key} must be {'an integer' if integer else 'a number'}{span}, not {value!r}",
                f"e.g. {key} = {default!r}",
            )
            return default
        return value if integer else float(value)

    def flag(self, table: dict[str, Any], pointer: str, key: str, default: bool) -> bool:
        value = table.get(key, default)
        if not isinstance(value, bool):
            self.problem(
                join_pointer(pointer, key),
                "agent.value_invalid",
                f"{key} must be true or false",
                f"e.g. {key} = {'true' if default else 'false'}",
            )
            return default
        return value

    def tools(self, value: Any) -> dict[str, str]:
        pointer = join_pointer(self.pointer, "tools")
        if not isinstance(value, dict):
            self.problem(
                pointer,
                "agent.type",
                "'tools' must be a table of tool = policy",
                f'write [agents.{self.name}.tools] with lines like read_file = "allow"',
            )
            return {}
        found: dict[str, str] = {}
        for tool, policy in value.items():
            where = join_pointer(pointer, tool)
            if not _TOOL_NAME.match(str(tool)) or not self.known_tool(str(tool)):
                contracts = ", ".join(f"call_{c}_<operation>" for c in self.consumes) or "none: it consumes nothing"
                self.problem(
                    where,
                    "agent.tool_unknown",
                    f"there is no tool {tool!r} for this hive",
                    f"the tools are {', '.join(AGENT_TOOLS)}; contract tools: {contracts}",
                )
                continue
            if policy not in POLICY_VALUES:
                self.problem(
                    where,
                    "agent.policy_invalid",
                    f"{policy!r} is not a policy for {tool}",
                    'use "allow", "ask" (a person approves each call) or "deny"',
                )
                continue
            if tool == "propose_diff" and policy == "allow":
                self.problem(
                    where,
                    "agent.policy_invalid",
                    "propose_diff always waits for a person",
                    'file changes are never applied without approval: use "ask" (or "deny")',
                )
                continue
            found[str(tool)] = str(policy)
            self.locations[f"tools.{tool}"] = self.locate(where)
        return found

    def known_tool(self, tool: str) -> bool:
        return tool in AGENT_TOOLS or any(
            tool.startswith(f"call_{c}_") and len(tool) > len(c) + 6 for c in self.consumes
        )

    def budgets(self, value: Any) -> AgentBudgets:
        pointer = join_pointer(self.pointer, "budgets")
        if not isinstance(value, dict):
            self.problem(pointer, "agent.type", "'budgets' must be a table", f"write [agents.{self.name}.budgets]")
            return AgentBudgets()
        self.unknown(value, pointer, _BUDGET_KEYS)
        defaults = AgentBudgets()
        return AgentBudgets(
            **{
                key: self.number(
                    value,
                    pointer,
                    key,
                    getattr(defaults, key),
                    integer=key != "wall_time",
                    low=1 if key != "wall_time" else 0.1,
                )
                for key in _BUDGET_KEYS
            }
        )

    def trigger(self, value: Any) -> AgentTrigger:
        pointer = join_pointer(self.pointer, "trigger")
        if not isinstance(value, dict):
            self.problem(pointer, "agent.type", "'trigger' must be a table", f"write [agents.{self.name}.trigger]")
            return AgentTrigger()
        self.unknown(value, pointer, _TRIGGER_KEYS)
        keys = value.get("keys", [])
        good: list[str] = []
        if not isinstance(keys, list):
            self.problem(
                join_pointer(pointer, "keys"),
                "agent.type",
                "'keys' must be an array of key patterns",
                'e.g. keys = ["tasks.*"]',
            )
        else:
            for index, pattern in enumerate(keys):
                if isinstance(pattern, str) and _is_key_pattern(pattern):
                    good.append(pattern)
                else:
                    self.problem(
                        join_pointer(join_pointer(pointer, "keys"), index),
                        "agent.trigger_invalid",
                        f"{pattern!r} is not a blackboard key pattern",
                        "tokens of letters, digits, '-', '_', '/', '=' separated by '.', '*' for one "
                        "token, a final '>' for the rest",
                    )
        operation = value.get("operation")
        if operation is not None:
            contract, _, member = str(operation).partition(".")
            if not isinstance(operation, str) or not member or contract not in self.provides:
                self.problem(
                    join_pointer(pointer, "operation"),
                    "agent.trigger_invalid",
                    f"{operation!r} is not an operation of a contract this hive provides",
                    f"contract.operation of one of: {', '.join(self.provides) or 'none (provides is empty)'}",
                )
                operation = None
        if good and operation:
            self.problem(
                pointer,
                "agent.trigger_invalid",
                "a trigger has keys or an operation, not both",
                "declare a second agent for the other",
            )
        return AgentTrigger(tuple(good), operation)


def _is_key_pattern(pattern: str) -> bool:
    tokens = pattern.split(".")
    return all(t == "*" or _KEY_TOKEN.match(t) or (t == ">" and i == len(tokens) - 1) for i, t in enumerate(tokens))
