"""``subhive board show|history|put``: read a running hive's blackboard, or write to it as a human.

The board lives in the workspace's NATS server, so these need ``subhive up``; they connect with the
framework's NKey (``.subhive/up/nkeys/_admin.nk``). A write is validated against the hive's blackboard
schema like any other, attributed to ``--writer`` (default ``human``), and wakes the hive's experts.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.markup import escape

from ..errors import InputError, Location
from ._output import Format, err_console, out_console, print_json

if TYPE_CHECKING:
    from ..hive import BrokenValue, Entry, KvBlackboard

__all__ = ["board_app"]

T = TypeVar("T")
board_app = typer.Typer(help="Read a running hive's blackboard, or write to it.", no_args_is_help=True)
FormatOption = Annotated[Format, typer.Option("--format", "-f", help="Output format.")]
WorkspaceOption = Annotated[Path, typer.Option("--workspace", "-C", help="Look for hive.toml from here upwards.")]
HiveArgument = Annotated[str, typer.Argument(help="The sub-hive whose board to use.", show_default=False)]


def _with_board(workspace: Path, hive: str, action: Callable[[KvBlackboard], Awaitable[T]]) -> T:
    from ..hive import BoardSchema, KvBlackboard
    from ..up import framework_endpoint
    from ..workspace import find_root, open_workspace

    ws = open_workspace(find_root(workspace))
    manifest = ws.hives().hives.get(hive)
    if manifest is None:
        raise InputError(
            f"no sub-hive {hive!r} in this workspace",
            code="board.unknown_hive",
            location=Location(file=str(ws.hives_dir)),
            hint="subhive status lists the hives",
        )
    endpoint = framework_endpoint(ws.root)
    if endpoint is None:
        raise InputError(
            "the workspace is not running, and blackboards live in its NATS server",
            code="board.not_running",
            hint="start it: subhive up --detach",
        )
    schema = BoardSchema.load(ws.hive_dir(hive) / manifest.blackboard_schema, hive=hive)

    async def go() -> T:
        nc = await endpoint.connect_once()
        try:
            return await action(await KvBlackboard.open(nc.jetstream(), hive, schema))
        finally:
            await nc.close()

    return asyncio.run(go())


def _entry_dict(entry: Entry) -> dict[str, Any]:
    return {
        "key": entry.key,
        "value": entry.value,
        "revision": entry.revision,
        "writer": entry.writer,
        "depth": entry.depth,
        "time": entry.time,
    }


def _print_entry(entry: Entry, *, with_key: bool = True) -> None:
    when = datetime.fromtimestamp(entry.time, UTC).strftime("%H:%M:%S") if entry.time else ""
    value = json.dumps(entry.value, ensure_ascii=False, sort_keys=True)
    out_console.print(
        (f"[bold]{escape(entry.key)}[/] " if with_key else "")
        + f"[dim]rev {entry.revision} by {escape(entry.writer or '?')} {when}[/]  {escape(value)}"
    )


@board_app.command("show")
def board_show(hive: HiveArgument, workspace: WorkspaceOption = Path("."), fmt: FormatOption = Format.text) -> None:
    """Show the latest value of every key on a hive's board, with who wrote it.

    Example: subhive board show ui
    """
    entries, broken = _with_board(workspace, hive, _readable_snapshot)
    if fmt is Format.json:
        print_json(
            {"hive": hive, "entries": [_entry_dict(e) for e in entries], "broken": [_broken_dict(b) for b in broken]}
        )
        return
    if not entries and not broken:
        out_console.print(f"the board of {escape(hive)} is empty")
    shown: list[Entry | BrokenValue] = [*entries, *broken]
    for item in sorted(shown, key=lambda item: item.key):
        _print_item(item)
    _hint_broken(hive, broken)


def _print_item(item: Entry | BrokenValue, *, with_key: bool = True) -> None:
    if isinstance(item, Exception):
        what = "no writer" if item.code == "blackboard.unattributed" else "not JSON"
        out_console.print(
            (f"[bold]{escape(item.key)}[/] " if with_key else "")
            + f"[dim]rev {item.revision} by {escape(item.writer or 'an unknown writer')}[/]  "
            f"[bold red]BROKEN[/]: {what} ({escape(item.reason)})"
        )
    else:
        _print_entry(item, with_key=with_key)


def _hint_broken(hive: str, broken: list[BrokenValue]) -> None:
    if broken:
        err_console.print(
            f"[cyan]hint[/]: {len(broken)} revision{'s' if len(broken) != 1 else ''} written past "
            "subhive (not JSON, or without a writer); write the key again: subhive board put "
            f"{escape(hive)} KEY VALUE"
        )


async def _readable_snapshot(board: KvBlackboard) -> tuple[list[Entry], list[BrokenValue]]:
    """The latest entry of every key, and apart the keys whose latest value is not JSON."""
    snapshot = await board.snapshot()
    return list(snapshot.values()), snapshot.broken


def _broken_dict(broken: BrokenValue) -> dict[str, Any]:
    return {
        "key": broken.key,
        "revision": broken.revision,
        "writer": broken.writer or None,
        "code": broken.code,
        "reason": broken.reason,
    }


@board_app.command("history")
def board_history(
    hive: HiveArgument,
    key: Annotated[str, typer.Argument(help="The key.", show_default=False)],
    workspace: WorkspaceOption = Path("."),
    fmt: FormatOption = Format.text,
) -> None:
    """Show every revision of one key, oldest first, each with its writer.

    Example: subhive board history backend notes.n-1a2b3c4d
    """
    from ..hive import Entry

    history = _with_board(workspace, hive, lambda board: board.revisions(key))
    broken = [r for r in history if not isinstance(r, Entry)]
    if fmt is Format.json:
        print_json(
            {
                "hive": hive,
                "key": key,
                "revisions": [_entry_dict(e) for e in history if isinstance(e, Entry)],
                "broken": [_broken_dict(b) for b in broken],
            }
        )
        return
    if not history:
        out_console.print(f"{escape(key)} was never written on the board of {escape(hive)}")
    for item in history:
        _print_item(item, with_key=False)
    _hint_broken(hive, broken)


@board_app.command("put")
def board_put(
    hive: HiveArgument,
    key: Annotated[str, typer.Argument(help="The key.", show_default=False)],
    value: Annotated[str, typer.Argument(help="The value, as JSON.", show_default=False)],
    *,
    writer: Annotated[str, typer.Option("--writer", help="Who the history names as the writer.")] = "human",
    workspace: WorkspaceOption = Path("."),
    fmt: FormatOption = Format.text,
) -> None:
    """Write one value to a hive's board (validated against its schema); the hive's experts react to it.

    Example: subhive board put ui drafts.hello '{"text": "Hello, hive", "author": "ada"}'
    """
    try:
        data = json.loads(value)
    except ValueError as exc:
        raise InputError(
            f"the value is not JSON: {exc}",
            code="board.not_json",
            location=Location(subject=key),
            hint='quote it for the shell: \'{"text": "hi"}\'',
        ) from None
    revision = _with_board(workspace, hive, lambda board: board.put(key, data, writer=writer))
    if fmt is Format.json:
        print_json({"hive": hive, "key": key, "revision": revision})
    else:
        out_console.print(f"{escape(hive)}: {escape(key)} is at revision {revision}")
