"""Tools an agent may call, each with a policy (allow, ask, deny), and the one place a call is dispatched:
arguments parsed and validated against the tool's JSON Schema before the tool runs, every failure turned into a
tool error the model reads (never an exception out of the loop)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal

from .._rs_validator import runtime_validator
from ..errors import SubhiveError

__all__ = [
    "POLICIES",
    "Approval",
    "Approver",
    "Policy",
    "Tool",
    "ToolBox",
    "ToolCall",
    "ToolError",
    "ToolResult",
    "announcing",
    "approval_asked",
    "schema_object",
]

log = logging.getLogger("subhive.agent")
Policy = Literal["allow", "ask", "deny"]
POLICIES: tuple[Policy, ...] = ("allow", "ask", "deny")


class ToolError(SubhiveError):
    """A tool could not do what the model asked; the model reads the code, message and hint as the tool's result."""

    default_code = "tool.failed"


@dataclass(frozen=True)
class ToolCall:
    """A call the model made: ``arguments`` is its text as sent (it may not be JSON)."""

    id: str
    name: str
    arguments: str

    def key(self) -> str:
        """The call's identity for loop detection: its name and its arguments, canonical when they are JSON."""
        try:
            canonical = json.dumps(json.loads(self.arguments), sort_keys=True, separators=(",", ":"))
        except ValueError:
            canonical = self.arguments
        return f"{self.name}:{canonical}"


@dataclass(frozen=True)
class ToolResult:
    """What a tool returns: ``value`` (JSON-able, or text) for the model; ``files_changed`` and ``pending`` are
    what the loop carries across a compaction (the files the turn touched, what waits on someone)."""

    value: Any
    files_changed: tuple[str, ...] = ()
    pending: tuple[str, ...] = ()


@dataclass(frozen=True)
class Tool:
    """One tool: ``parameters`` is a JSON Schema object; ``run`` receives the validated arguments."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    run: Callable[[dict[str, Any]], Awaitable[Any]]
    #: Runs before a person is asked (``ask``): a call that cannot work is refused without bothering anyone.
    check: Callable[[dict[str, Any]], Awaitable[None]] | None = None
    #: Safe to run beside other calls of the same reply (it changes nothing here: a read, a consumed
    #: contract's operation); the loop runs such calls together when their policy is ``allow`` (decision 0063).
    concurrent: bool = False

    def definition(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": dict(self.parameters)},
        }


@dataclass(frozen=True)
class Approval:
    """A person's answer to an ``ask`` call: ``approved``, and why (shown to the model when refused)."""

    approved: bool
    reason: str = ""


#: Asked before an ``ask`` tool runs; may wait for a person (the loop bounds the wait by the turn's budget).
Approver = Callable[[ToolCall], Awaitable[Approval]]
#: Told once a person has been asked about a call: the approval's id where it has one (at the root, the client).
Asked = Callable[[str | None], Awaitable[None]]

#: Set by the tool box around one approver's call: how that approver says the person has been asked.
_asked: ContextVar[Asked | None] = ContextVar("subhive_approval_asked", default=None)
#: The attribute :func:`announcing` sets on an approver that calls :func:`approval_asked` itself.
_ANNOUNCES = "subhive_announces_approval"


async def approval_asked(approval: str | None = None) -> None:
    """Called by an approver (one wrapped in :func:`announcing`) once the person has been asked, that is once
    the approval exists: the turn says its call waits (an ``approval.waiting`` frame, with ``approval``) only
    then, never for a call refused before anyone is asked. Outside an approver's call it does nothing."""
    asked = _asked.get()
    if asked is not None:
        await asked(approval)


def announcing(approver: Approver) -> Approver:
    """``approver``, marked as one that calls :func:`approval_asked` itself once its approval exists (a record at
    the root, a request to a client). Any other approver is taken to ask as soon as it is called."""

    async def approve(call: ToolCall) -> Approval:
        return await approver(call)

    setattr(approve, _ANNOUNCES, True)
    return approve


@dataclass
class _Entry:
    tool: Tool
    policy: Policy
    validator: Any = field(default=None)


class ToolBox:
    """The tools of one agent and their policies. The model is shown the allowed and asked tools, sorted by
    name, the same list for the whole conversation (a changed list would break the prompt prefix); a denied
    tool is not shown, and a call to it is refused with ``tool.denied``."""

    def __init__(
        self,
        tools: Iterable[Tool] = (),
        policies: Mapping[str, Policy] | None = None,
        *,
        default: Policy = "allow",
        approver: Approver | None = None,
        approval_timeout: float = 300.0,
    ) -> None:
        if approval_timeout <= 0:
            raise ValueError(f"approval_timeout must be positive, not {approval_timeout}")
        self._entries: dict[str, _Entry] = {}
        self.approver = approver
        #: Seconds an ``ask`` call waits for its answer; then it is refused (``tool.approval_timeout``).
        self.approval_timeout = approval_timeout
        wanted = dict(policies or {})
        for tool in tools:
            if tool.name in self._entries:
                raise ValueError(f"two tools are named {tool.name!r}")
            policy = wanted.pop(tool.name, default)
            if policy not in POLICIES:
                raise ValueError(f"{policy!r} is not a tool policy (allow, ask, deny)")
            self._entries[tool.name] = _Entry(tool, policy)
        if wanted:
            raise ValueError(f"policies name tools that do not exist: {', '.join(sorted(wanted))}")

    def names(self) -> list[str]:
        return sorted(self._entries)

    def policy(self, name: str) -> Policy | None:
        entry = self._entries.get(name)
        return entry.policy if entry else None

    def concurrent(self, name: str) -> bool:
        """Whether a call to ``name`` may run beside others: the tool says so and its policy is ``allow``."""
        entry = self._entries.get(name)
        return entry is not None and entry.policy == "allow" and entry.tool.concurrent

    def definitions(self) -> list[dict[str, Any]]:
        """The tool list sent with every request: fixed content, fixed order."""
        return [
            self._entries[name].tool.definition()
            for name in sorted(self._entries)
            if self._entries[name].policy != "deny"
        ]

    async def dispatch(self, call: ToolCall, *, on_asked: Asked | None = None) -> ToolResult:
        """Run ``call`` under its policy; every refusal or failure is raised as :class:`ToolError`. ``on_asked``
        is told, once, when a person has been asked about an ``ask`` call (after every check that can refuse
        it without asking anyone)."""
        entry = self._entries.get(call.name)
        if entry is None:
            raise ToolError(
                f"there is no tool {call.name!r}",
                code="tool.unknown",
                hint=f"the tools are: {', '.join(n for n in self.names() if self.policy(n) != 'deny')}",
            )
        if entry.policy == "deny":
            raise ToolError(
                f"{call.name} is denied to this agent by its hive's manifest",
                code="tool.denied",
                hint="do without it, or ask the hive's owner to change the policy",
            )
        arguments = _parse_arguments(call)
        _validate(entry, arguments, call.name)
        if entry.tool.check is not None:
            await _guarded(call, entry.tool.check(arguments))
        if entry.policy == "ask":
            await self._ask(call, on_asked)
        value = await _guarded(call, entry.tool.run(arguments))
        return value if isinstance(value, ToolResult) else ToolResult(value)

    async def _ask(self, call: ToolCall, on_asked: Asked | None) -> None:
        """Wait for a person's yes (bounded); any other outcome is the tool error the model reads."""
        approver = self.approver
        if approver is None:
            raise ToolError(
                f"{call.name} needs a person's approval and no one can be asked in this run",
                code="tool.approval_unavailable",
                hint="the hive's manifest asks for approval of this tool; do without it",
            )
        told = False

        async def asked(approval: str | None) -> None:
            nonlocal told
            if not told and on_asked is not None:
                told = True
                await on_asked(approval)

        token = _asked.set(asked)
        try:
            if not getattr(approver, _ANNOUNCES, False):
                await asked(None)
            answer = await asyncio.wait_for(approver(call), self.approval_timeout)
        except TimeoutError:
            raise ToolError(
                f"no one answered the approval of {call.name} within {self.approval_timeout:g} s",
                code="tool.approval_timeout",
                hint="the call did not run; go on without it or try again later",
            ) from None
        finally:
            _asked.reset(token)
        if not answer.approved:
            raise ToolError(
                f"{call.name} was refused by a person: {answer.reason or 'no reason given'}",
                code="tool.rejected",
                hint="take the reason into account; do not repeat the call",
            )


async def _guarded(call: ToolCall, work: Awaitable[Any]) -> Any:
    """``work``'s value; a subhive error becomes the tool error the model reads, and a bug in a tool too
    (the log gets the traceback, the model only the class: never a repr or a trace)."""
    try:
        return await work
    except ToolError:
        raise
    except SubhiveError as exc:
        raise ToolError(exc.message, code=exc.code, location=exc.location, hint=exc.hint) from exc
    except Exception as exc:
        log.exception("tool %s failed", call.name)
        raise ToolError(
            f"{call.name} failed: {type(exc).__name__}",
            code="tool.crashed",
            hint="the hive's log has the details; try another way",
        ) from exc


def _parse_arguments(call: ToolCall) -> dict[str, Any]:
    text = call.arguments.strip() or "{}"
    try:
        arguments = json.loads(text)
    except ValueError as exc:
        raise ToolError(
            f"the arguments of {call.name} are not JSON: {exc}",
            code="tool.arguments_malformed",
            hint="send the arguments as one JSON object matching the tool's parameters",
        ) from None
    if not isinstance(arguments, dict):
        raise ToolError(
            f"the arguments of {call.name} must be a JSON object, not {type(arguments).__name__}",
            code="tool.arguments_malformed",
            hint="send one JSON object",
        )
    return arguments


def _validate(entry: _Entry, arguments: dict[str, Any], name: str) -> None:
    if entry.validator is None:
        entry.validator = runtime_validator(dict(entry.tool.parameters))
    if entry.validator.is_valid(arguments):
        return
    error = next(iter(entry.validator.iter_errors(arguments)))
    pointer = "".join("/" + str(p) for p in error.instance_path) or "/"
    raise ToolError(
        f"the arguments of {name} are invalid at {pointer}: {error.message}",
        code="tool.arguments_invalid",
        hint="match the tool's parameters schema",
    )


def error_content(error: ToolError) -> str:
    """The tool message a refusal or failure becomes: JSON with the stable code, the message and the hint."""
    body: dict[str, Any] = {"error": error.code, "message": error.message}
    if error.hint:
        body["hint"] = error.hint
    return json.dumps(body, ensure_ascii=False)


def result_content(result: ToolResult, limit: int) -> str:
    """A tool's value as the text the model reads, cut at ``limit`` characters (saying so)."""
    value = result.value
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    if len(text) > limit:
        text = text[:limit] + f"\n[cut: {len(text) - limit} more characters; ask for less]"
    return text


def schema_object(properties: Mapping[str, Any], required: Sequence[str] = ()) -> dict[str, Any]:
    """A closed JSON Schema object for a tool's parameters."""
    return {"type": "object", "properties": dict(properties), "required": list(required), "additionalProperties": False}
