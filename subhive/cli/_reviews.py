"""What ``subhive approvals show`` adds for an agent's change that went through its hive's review (``[review]``):
the judge's verdict, the strongest objection, the evidence cited and the false-consensus signals, read from the
hive's board where the review keeps them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.markup import escape

from ._output import out_console

__all__ = ["find_review", "print_review", "with_review"]

_REVIEWED = ("propose_diff", "propose_contract")


def find_review(workspace: Path, approval: Any) -> dict[str, Any] | None:
    """The review record of a tool approval's exact call, or None (not a reviewed change, no review kept, or the
    hive's board not reachable: the approval is shown without it)."""
    call = approval.tool_call
    if call is None or call.tool not in _REVIEWED:
        return None
    from ..agent import review_id, review_key
    from ._board import _with_board

    try:
        canonical = json.dumps(json.loads(call.arguments), sort_keys=True)
    except ValueError:
        return None
    key = review_key(call.agent, review_id(call.tool, canonical))

    async def read(board: Any) -> Any:  # the schema checks writes only: the framework's keys read as any
        entry = await board.get(key)
        return entry.value if entry is not None else None

    try:
        found = _with_board(workspace, approval.proposer, read)
    except Exception:  # the review is extra: an approval is still shown when its hive's board cannot be read
        return None
    return found if isinstance(found, dict) else None


def with_review(shown: dict[str, Any], review: dict[str, Any] | None) -> dict[str, Any]:
    """An approval's JSON form, with its review under ``review`` when it has one."""
    return shown if review is None else {**shown, "review": review}


def print_review(review: dict[str, Any] | None) -> None:
    """The verdict, the strongest objection, the evidence (each citation checked) and the signals; nothing for
    an approval without a review."""
    if review is None:
        return
    signals = review.get("signals") or {}
    colour = {"approve": "green", "reject": "red"}.get(str(review.get("verdict")), "yellow")
    out_console.print(
        f"  review: [{colour}]{escape(str(review.get('verdict')))}[/] by judge {escape(str(review.get('judge')))}"
        + (f"  [bold red]{escape(str(review['warning']))}[/]" if review.get("warning") else "")
    )
    if review.get("reasoning"):
        out_console.print(f"    reasoning: {escape(str(review['reasoning']))}")
    out_console.print(f"    strongest objection: {escape(str(review.get('strongest_objection') or '-'))}")
    cited = ", ".join(
        f"{c['citation']}{'' if c.get('valid') else ' (does not exist)'}" for c in review.get("evidence", [])
    )
    out_console.print(f"    evidence: {escape(cited or 'none cited')}")
    flags = ", ".join(signals.get("flags", []))
    out_console.print(
        f"    signals: {escape(flags or 'none')}; {signals.get('valid_citations', 0)} valid citations, "
        f"{len(signals.get('unanswered', []))} objections unanswered"
    )
