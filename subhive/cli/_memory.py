"""``subhive memory show HIVE``: what a running hive's agents remember (``agent-memory.<agent>.*`` on its board),
each entry with its confidence, whether it was pruned, and the history of how its confidence moved."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from ._board import FormatOption, HiveArgument, WorkspaceOption, _with_board
from ._output import Format, err_console, out_console, print_json

__all__ = ["memory_app"]

memory_app = typer.Typer(help="Read what a running hive's agents remember.", no_args_is_help=True)


async def _entries(board: Any, agent: str | None) -> list[dict[str, Any]]:
    from ..agent import MEMORY_PREFIX

    found = []
    for key in sorted(await board.keys(f"{MEMORY_PREFIX}.{agent or '*'}.*")):
        entry = await board.get(key)
        if entry is not None and isinstance(entry.value, dict) and "text" in entry.value:
            found.append({"key": key, "agent": key.split(".")[1], **entry.value})
    return found


@memory_app.command("show")
def memory_show(
    hive: HiveArgument,
    agent: Annotated[str | None, typer.Option("--agent", help="Only this agent's memory.")] = None,
    workspace: WorkspaceOption = Path("."),
    fmt: FormatOption = Format.text,
) -> None:
    """Show every remembered entry of a hive's agents, pruned ones marked, with their confidence history.

    Example: subhive memory show notes --agent helper
    """
    entries = _with_board(workspace, hive, lambda board: _entries(board, agent))
    if fmt is Format.json:
        print_json({"hive": hive, "entries": entries})
        return
    if not entries:
        err_console.print(f"the agents of {escape(hive)} remember nothing yet")
    for entry in entries:
        confidence = entry.get("confidence")
        state = "[red]pruned[/]" if entry.get("pruned") else "[green]kept[/]"
        shown = f"{float(confidence):.2f}" if confidence is not None else "-"
        out_console.print(f"[bold]{escape(entry['agent'])}[/] {state} confidence {shown}  {escape(str(entry['text']))}")
        steps = [
            f"{_when(h.get('time'))} {escape(str(h.get('event')))} {float(h.get('confidence', 0)):.2f}"
            for h in entry.get("history", [])
        ]
        if steps:
            out_console.print(f"  [dim]{' → '.join(steps)}[/]")


def _when(stamp: Any) -> str:
    return datetime.fromtimestamp(float(stamp), UTC).strftime("%H:%M:%S") if stamp else "?"
