"""Self-repair by agents: a repair proposal the framework made (the same error twice in a hive) handed to an
agent of that hive, which answers with a diff a person approves; whether the fix held is judged by whether
the error comes back. See docs/agents.md#self-repair-subhive-agent-run-hive---repair-r-n.
"""

from __future__ import annotations

from typing import Any

from ..errors import InputError, Location
from ..workspace import open_workspace
from ._hive_turn import pick_agent, run_hive_turn
from ._loop import FrameSink, TurnResult
from ._tools import Approver

__all__ = ["FIXED_BY", "repair_prompt", "repair_turn"]

#: How an acknowledged repair's note starts when an agent's applied diff fixed it.
FIXED_BY = "fixed by agent"


def _where(approval: Any) -> str:
    repair = approval.repair
    parts = [p for p in (approval.contract, repair.operation) if p]
    return "/".join(parts) or repair.subject or "the hive"


def _key(approval: Any) -> tuple[str, str, str, str, str]:
    repair = approval.repair
    return (approval.proposer, repair.code, approval.contract, repair.operation, repair.subject)


def repair_prompt(approval: Any, failed_fixes: list[Any]) -> str:
    """What the agent is asked: the error, where, how often, its sample, and earlier fixes that did not hold."""
    repair = approval.repair
    sample = repair.sample.decode("utf-8", "replace").strip()
    lines = [
        f"Repair {approval.id}: {repair.code} at {_where(approval)}, seen {repair.count} times.",
        f"What the framework saw: {approval.message}",
    ]
    if repair.subject:
        lines.append(f"Subject: {repair.subject}")
    if sample:
        lines.append("Sample (what failed):\n" + "\n".join(sample.splitlines()[:20]))
    for earlier in failed_fixes:
        lines.append(
            f"An earlier fix of this same error did not hold, since the error came back: {earlier.id}, "
            f"{earlier.decision}."
        )
    lines.append(
        "Find the cause in this hive's files and propose a fix with propose_diff; a person approves it. "
        "Then say in one or two sentences what was wrong and what the fix changes."
    )
    return "\n".join(lines)


async def repair_turn(
    workspace: Any,
    hive: str,
    repair_id: str,
    *,
    root: Any,
    agent: str | None = None,
    endpoint: Any = None,
    on_frame: FrameSink | None = None,
    approver: Approver | None = None,
    client: Any = None,
) -> TurnResult:
    """Hand repair ``repair_id`` (pending, proposed by ``hive``) to ``hive``'s agent, which must have
    ``propose_diff``; acknowledge the repair at ``root`` (the admin's client) once its diff is applied."""
    approval = await root.approval(repair_id)
    if approval.kind != "repair" or approval.repair is None:
        raise InputError(
            f"{repair_id} is not a repair proposal (it is a {approval.kind} approval)",
            code="agent.not_a_repair",
            hint="subhive approvals list shows the repairs (r-N)",
        )
    if approval.proposer != hive:
        raise InputError(
            f"repair {repair_id} is {approval.proposer}'s, not {hive}'s",
            code="agent.repair_other_hive",
            hint=f"run it with that hive's agent: subhive agent run {approval.proposer} --repair {repair_id}",
        )
    if approval.status != "pending":
        raise InputError(
            f"repair {repair_id} was already {approval.status}",
            code="agent.repair_decided",
            hint="a repair that comes back is proposed again under a new id",
        )
    ws = open_workspace(workspace)
    manifest = ws.hives().hives.get(hive)
    if manifest is not None:
        spec = pick_agent(manifest, agent, where=Location(file=str(ws.hive_dir(hive) / "subhive.toml")))
        if "propose_diff" not in spec.tools or spec.tools["propose_diff"] == "deny":
            raise InputError(
                f"agent {spec.name} cannot propose a diff, so it cannot repair anything",
                code="agent.repair_needs_diff",
                location=spec.locations.get(""),
                hint=f'give it propose_diff = "ask" in [agents.{spec.name}.tools]',
            )
    failed = [
        a
        for a in await root.approvals("all", kind="repair")
        if a.id != approval.id
        and a.repair is not None
        and a.status == "approved"
        and a.decision.startswith(FIXED_BY)
        and _key(a) == _key(approval)
    ]
    result = await run_hive_turn(
        workspace,
        hive,
        repair_prompt(approval, failed),
        agent=agent,
        endpoint=endpoint,
        on_frame=on_frame,
        approver=approver,
        root=root,
        client=client,
    )
    if result.stop.normal and result.state.files_changed:
        name = result.frames[0].data.get("agent", agent or "")
        await root.approve(
            approval.id, note=f"{FIXED_BY} {name} in turn {result.turn}: {', '.join(result.state.files_changed)}"
        )
    return result
