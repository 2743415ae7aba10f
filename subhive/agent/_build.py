"""From a manifest's ``[agents.NAME]`` to a running :class:`Agent`: its instructions read, its tools built over
the hive's files, board and consumed contracts, each with the policy the manifest gives it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from ..hive import KvBlackboard
from ..runtime import ContractBinding, Transport
from ..workspace import AgentSpec
from ._contracts import contract_tool
from ._diffs import diff_tool
from ._files import FileSlice, file_tools
from ._grpc_tools import ChannelOpener, GrpcContract, grpc_tools
from ._hive_tools import board_tools, contract_tools
from ._loop import Agent
from ._plan import plan_tool
from ._settings import AgentSettings, Budgets, ModelSettings
from ._tools import Approver, Tool, ToolBox

if TYPE_CHECKING:
    from ._review import Review

__all__ = ["build_agent", "settings_from_spec"]


def settings_from_spec(spec: AgentSpec, hive_dir: Path) -> AgentSettings:
    """The loop's settings for ``spec``; its instructions file is read now (``agent.instructions_missing``)."""
    path = Path(hive_dir) / spec.instructions
    where = spec.locations.get("instructions") or spec.locations.get("")
    real, root = path.resolve(), Path(hive_dir).resolve()
    if root not in real.parents or not real.is_file():
        raise InputError(
            f"agent {spec.name}: its instructions file {spec.instructions} does not exist in the hive",
            code="agent.instructions_missing",
            location=where,
            hint=f"write the agent's instructions in {path} (plain text or Markdown)",
        )
    model = spec.model
    return AgentSettings(
        spec.name,
        real.read_text(encoding="utf-8", errors="replace"),
        ModelSettings(
            model.name,
            base_url=model.base_url,
            api_key_env=model.api_key_env,
            context_window=model.context_window,
            compact_at=model.compact_at,
            compaction=model.compaction,
            max_retries=model.max_retries,
            timeout=model.timeout,
            stream=model.stream,
            temperature=model.temperature,
        ),
        Budgets(
            spec.budgets.model_calls,
            spec.budgets.tool_calls,
            spec.budgets.tokens,
            spec.budgets.wall_time,
            spec.budgets.repeat_limit,
        ),
    )


def build_agent(
    spec: AgentSpec,
    *,
    hive: str,
    hive_dir: Path,
    board: KvBlackboard | None = None,
    transport: Transport | None = None,
    bindings: Sequence[ContractBinding] = (),
    approver: Approver | None = None,
    client: Any = None,
    root: Any = None,
    root_is_admin: bool = False,
    records: KvBlackboard | None = None,
    services: Sequence[GrpcContract] = (),
    channel: ChannelOpener | None = None,
    critical: Sequence[str] = (),
    review: Review | None = None,
    quorum: Tool | None = None,
) -> Agent:
    """The agent ``spec`` declares in ``hive``. A tool the manifest names that this hive does not have (an
    operation its contracts lack, the board without a board) is ``agent.tool_unknown`` at its line. ``root``:
    a ``RootClient`` for ``propose_contract`` (the hive's token; the admin's with ``root_is_admin``).
    ``records``: the hive's bucket without its schema, for the framework's own keys (the ``plan``).
    ``services``: the gRPC services the hive consumes, called through ``channel`` (``HiveContext.channel``: the
    hive's own keys), one tool per unary or server-streaming RPC. ``critical``: the board key patterns only a
    quorum writes (``[quorum]``); ``board_write`` refuses them. ``review``: the hive's debate that the changes it
    covers (``propose_diff``, ``propose_contract``) go through before a person is asked. ``quorum``: the
    ``propose_critical`` tool (a round of the hive's voters on a critical key)."""
    files = FileSlice(hive_dir)
    available: dict[str, Tool] = {
        t.name: t for t in [*file_tools(files), diff_tool(files), plan_tool(records, spec.name)]
    }
    if board is not None:
        available.update((t.name, t) for t in board_tools(board, f"agent:{spec.name}", critical=critical))
    if transport is not None:
        available.update((t.name, t) for t in contract_tools(bindings, transport, hive=hive))
    if channel is not None:
        for tool in grpc_tools(services, channel):
            if tool.name in available and tool.name in spec.tools:
                raise InputError(
                    f"agent {spec.name}: the gRPC tool {tool.name} has the name of another tool of this hive",
                    code="agent.tool_clash",
                    location=spec.locations.get(f"tools.{tool.name}"),
                    hint="a contract's RPC and operation (or two RPCs) map to one name; rename one in a new "
                    "version of the contract",
                )
            available.setdefault(tool.name, tool)
    if quorum is not None:
        available[quorum.name] = quorum
    if root is not None:
        proposer = contract_tool(root, hive=hive if root_is_admin else None)
        available[proposer.name] = proposer
    for name in spec.tools:
        if name not in available:
            raise InputError(
                f"agent {spec.name}: this hive has no tool {name!r} to give it",
                code="agent.tool_unknown",
                location=spec.locations.get(f"tools.{name}"),
                hint="the tools here are: " + ", ".join(sorted(available)) + " (contract tools come "
                "from the contracts in the lock: run subhive codegen; client- and bidi-streaming RPCs are not tools)",
            )
    tools = ToolBox(
        [review.wrap(available[name]) if review is not None else available[name] for name in spec.tools],
        dict(spec.tools),  # type: ignore[arg-type]
        approver=approver,
        approval_timeout=spec.approval_timeout,
    )
    return Agent(settings_from_spec(spec, hive_dir), tools, client=client)
