"""``subhive deadletters list|show|replay``: the messages hives refused or failed to handle, bytes intact.

Letters are named ``HIVE:SEQ``; see docs/bus.md#dead-letters for naming, credentials and replay rules.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.markup import escape

from ..errors import SubhiveError, UsageError
from ._output import Format, err_console, out_console, print_json

if TYPE_CHECKING:
    from ..bus import BusEndpoint, ReplayRules

__all__ = ["deadletters_app"]

T = TypeVar("T")

deadletters_app = typer.Typer(
    help="Messages hives refused or failed to handle: list, show, replay.", no_args_is_help=True
)

ServerOption = Annotated[
    str | None,
    typer.Option(
        "--server",
        "-s",
        envvar="SUBHIVE_NATS_URL",
        help="The NATS server, e.g. nats://127.0.0.1:4222.",
        show_default=False,
    ),
]
SeqArgument = Annotated[
    str,
    typer.Argument(
        metavar="ID",
        help="The dead letter, as `list` shows it: HIVE:SEQ "
        "(e.g. backend:12), SEQ when only one hive has that number, or the "
        "id a refused sender was told (dlq-backend-...).",
    ),
]
FormatOption = Annotated[Format, typer.Option("--format", "-f", help="Output format.")]
WorkspaceOption = Annotated[
    Path,
    typer.Option(
        "--workspace",
        "-C",
        help="The workspace whose running bus to read (from here upwards), when --server is not given.",
    ),
]


def _with_letters(server: str | None, work: Callable[[Any], Awaitable[T]], workspace: Path = Path(".")) -> T:
    """Connect to the bus as the framework, run ``work(DeadLetters)``, close."""
    import nats

    from ..bus import BusError, DeadLetters

    endpoint = _endpoint(server, workspace)

    async def session() -> T:
        nc = await endpoint.connect_once()
        try:
            return await work(DeadLetters(nc))
        except nats.js.errors.NotFoundError:
            raise BusError(
                "this server has no dead-letter streams (SUBHIVE_DLQ_<hive>)",
                code="deadletter.no_stream",
                hint="the framework creates them when hives start; nothing was dead-lettered",
            ) from None
        finally:
            await nc.close()

    return asyncio.run(session())


def _endpoint(server: str | None, workspace: Path) -> BusEndpoint:
    """``--server`` (with the credentials in the environment), else the running workspace's own bus."""
    from ..bus import BusEndpoint
    from ..up import framework_endpoint
    from ..workspace import find_root

    if server:  # with SUBHIVE_NATS_NKEY, or SUBHIVE_NATS_USER and SUBHIVE_NATS_PASSWORD, from the environment
        return BusEndpoint.from_env(os.environ, servers=[u for u in server.split(",") if u])
    with contextlib.suppress(SubhiveError):  # outside a workspace: say what to pass, below
        endpoint = framework_endpoint(find_root(workspace))
        if endpoint is not None:
            return endpoint
    raise UsageError(
        "which NATS server? run this in a workspace that is up (subhive up), or pass --server "
        "nats://HOST:PORT or set SUBHIVE_NATS_URL",
        code="bus.server_unknown",
    )


@deadletters_app.command("list")
def deadletters_list(
    hive: Annotated[str | None, typer.Option("--hive", help="Only this hive's dead letters.")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="At most this many, oldest first.")] = 100,
    server: ServerOption = None,
    workspace: WorkspaceOption = Path("."),
    fmt: FormatOption = Format.text,
) -> None:
    """List dead letters, oldest first: id (HIVE:SEQ), subject, reason, and whether it was replayed.

    Example: subhive deadletters list --hive backend
    """
    letters = _with_letters(server, lambda dl: dl.list(hive, limit=limit), workspace)
    if fmt is Format.json:
        print_json({"dead_letters": [d.to_dict() for d in letters]})
        return
    if not letters:
        err_console.print("no dead letters")
    for d in letters:
        where = f" at {d.pointer}" if d.pointer else ""
        replayed = f"  [green]{escape(_replayed(d))}[/]" if d.replays else ""
        out_console.print(
            f"{escape(d.id):>14}  {escape(d.subject)}  [bold]{escape(d.code)}[/]{where}"
            f"  [dim]{escape(d.message)}[/]{replayed}"
        )


def _replayed(letter: Any) -> str:
    """``replayed 2x, last 2026-11-25 17:03:04Z by alice``."""
    last = letter.replays[-1]
    when = last.time.strftime("%Y-%m-%d %H:%M:%SZ") if last.time else "?"
    count = f" {len(letter.replays)}x" if len(letter.replays) > 1 else ""
    return f"replayed{count}, last {when}" + (f" by {last.by}" if last.by else "")


@deadletters_app.command("show")
def deadletters_show(
    seq: SeqArgument,
    server: ServerOption = None,
    workspace: WorkspaceOption = Path("."),
    fmt: FormatOption = Format.text,
) -> None:
    """Show one dead letter: the reason, the original headers and the exact payload.

    Example: subhive deadletters show backend:42
    """
    letter = _with_letters(server, lambda dl: dl.get(seq), workspace)
    if fmt is Format.json:
        print_json(letter.to_dict(with_data=True))
        return
    out_console.print(f"[bold]{escape(letter.id)}[/]  {escape(letter.hive)}  {escape(letter.subject)}")
    out_console.print(f"  reason   {escape(letter.code)}: {escape(letter.message)}")
    if letter.pointer or letter.keyword:
        out_console.print(f"  where    {escape(letter.pointer or '/')} (keyword {escape(letter.keyword or '-')})")
    for key, value in sorted(letter.headers.items()):
        out_console.print(f"  header   {escape(key)}: {escape(value)}")
    if letter.time:
        out_console.print(
            f"  kept     {letter.time.strftime('%Y-%m-%d %H:%M:%SZ')}"
            + (f" (message id {escape(letter.msg_id)})" if letter.msg_id else "")
        )
    for replay in letter.replays:
        when = replay.time.strftime("%Y-%m-%d %H:%M:%SZ") if replay.time else "?"
        out_console.print(
            f"  replayed {when}" + (f" by {escape(replay.by)}" if replay.by else "") + f": {escape(replay.result)}"
        )
    if not letter.replays:
        out_console.print("  replayed never")
    out_console.print(f"  payload  {len(letter.data)} bytes")
    out_console.print(escape(letter.data.decode("utf-8", "replace")), markup=False)


@deadletters_app.command("replay")
def deadletters_replay(
    seq: SeqArgument,
    server: ServerOption = None,
    workspace: WorkspaceOption = Path("."),
    fmt: FormatOption = Format.text,
) -> None:
    """Send a dead letter again, exact bytes, with headers made anew, to the hive that kept it: a request to
    its operation subject, an event to that hive alone (never to the other consumers). The workspace's lock
    must let the hive receive it. The replay is recorded (when, by whom) and shown by list and show.

    Example: subhive deadletters replay backend:42
    """
    rules = _replay_rules(workspace)
    said = _with_letters(server, lambda dl: dl.replay(seq, rules=rules, by=_who()), workspace)
    if fmt is Format.json:
        print_json({"id": seq, "result": said})
        return
    out_console.print(said)


def _replay_rules(workspace: Path) -> ReplayRules:
    """What the workspace's lock lets each hive receive: a letter's stored subject and headers were written
    by its hive, so they are checked against these before the framework sends anything (decision 0046)."""
    from ..bus import ReplayRules
    from ..root_hive import Lock
    from ..workspace import find_root

    try:
        root = find_root(workspace)
    except SubhiveError:
        raise UsageError(
            "replaying needs the workspace's contracts.lock, to check where a letter may go: run "
            "this in the workspace, or pass --workspace PATH",
            code="deadletter.no_lock",
        ) from None
    return ReplayRules.from_lock(Lock.load(root), root)


def _who() -> str:
    """Who replays: the login name, when the system knows it."""
    try:
        return getpass.getuser()
    except Exception:  # no user name in the environment or the password database
        return ""
