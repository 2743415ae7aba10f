"""``subhive agent run HIVE [--agent NAME] "PROMPT"``: run one turn of a hive's agent and stream its steps.

With the tree up (``subhive up``), the turn's tools reach the hive's board and consumed contracts and its
frames are kept on the hive's board; without it, only the file tools work. Exit 0 when the model answered,
1 when the turn stopped for another reason (a budget, a loop, the endpoint; that stop is also escalated to the
root as a repair, decision 0055), 2 for bad input.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from ..errors import InputError, UsageError
from ._output import Format, err_console, out_console

if TYPE_CHECKING:
    from ..agent import Approval, Frame, ToolCall, TurnResult

__all__ = ["agent_app"]

agent_app = typer.Typer(help="Run a hive's language-model agents.", no_args_is_help=True)


@agent_app.command("run")
def agent_run(
    hive: Annotated[str, typer.Argument(help="The sub-hive whose agent runs.", show_default=False)],
    prompt: Annotated[
        str, typer.Argument(help="What the agent is asked to do (not with --resume).", show_default=False)
    ] = "",
    *,
    agent: Annotated[str | None, typer.Option("--agent", "-a", help="The agent, when the hive has several.")] = None,
    resume: Annotated[
        str | None,
        typer.Option(
            "--resume",
            help="Go on with this turn (its process died): from "
            "its frames on the hive's board, without re-running its tools.",
            show_default=False,
        ),
    ] = None,
    repair: Annotated[
        str | None,
        typer.Option(
            "--repair",
            help="Hand this repair proposal (r-N) to the agent: "
            "it answers with a diff a person approves; once applied, the "
            "repair is acknowledged and the hive restarted.",
            show_default=False,
        ),
    ] = None,
    workspace: Annotated[Path, typer.Option("--workspace", "-C", help="Look for hive.toml from here upwards.")] = Path(
        "."
    ),
    fmt: Annotated[
        Format, typer.Option("--format", "-f", help="text, or json: one JSON frame per line.")
    ] = Format.text,
) -> None:
    """Run one turn of a hive's agent and stream its steps (the model is reached at OPENAI_BASE_URL, or the
    base_url of the agent's manifest).

    Example: subhive agent run notes "Summarise tasks.t1" --format json
    """
    from ..agent import repair_turn, run_hive_turn
    from ..up import framework_endpoint, request_restart
    from ..workspace import find_root

    if not prompt.strip() and resume is None and repair is None:
        raise UsageError(
            "a turn needs a prompt",
            code="usage.missing_argument",
            hint='subhive agent run HIVE "what to do", or --resume TURN, or --repair r-N',
        )
    root = find_root(workspace)
    endpoint = framework_endpoint(root)
    if endpoint is None and fmt is Format.text:
        err_console.print("[dim]the tree is not up: file tools only, and the transcript is not kept[/]")
    show = _print_json if fmt is Format.json else _print_text
    # A person at a terminal answers the agent's `ask` calls; without one, a running root holds them as
    # approvals (`subhive approvals`); without either they are refused, and the model is told.
    approver = _ask_at_terminal if sys.stdin.isatty() else None

    async def go() -> TurnResult:
        client = None if approver is not None and repair is None else await _root_client(root)
        try:
            result = await turn(client)
            if not result.stop.normal:
                await _escalate(root, hive, result, client)
            return result
        finally:
            if client is not None:
                await client.close()

    async def turn(client: Any) -> TurnResult:
        if repair is not None:
            if client is None:
                raise InputError(
                    "repairs are kept by the root, which is not running",
                    code="agent.no_root",
                    hint="start the tree: subhive up --detach",
                )
            return await repair_turn(
                root, hive, repair, root=client, agent=agent, endpoint=endpoint, on_frame=show, approver=approver
            )
        return await run_hive_turn(
            root,
            hive,
            prompt,
            agent=agent,
            endpoint=endpoint,
            on_frame=show,
            approver=approver,
            root=client,
            resume=resume,
        )

    result = asyncio.run(go())
    if not result.stop.normal:
        raise typer.Exit(1)
    if repair is not None and result.state.files_changed and endpoint is not None:
        # The fix is on disk: the hive runs it from now on. Whether it held shows if the error comes back.
        request_restart(root, hive, on_event=lambda _event: None)
        err_console.print(f"[green]repair {escape(repair)} applied and acknowledged; {escape(hive)} restarted[/]")


@agent_app.command("serve")
def agent_serve(
    workspace: Annotated[Path, typer.Option("--workspace", "-C", help="Look for hive.toml from here upwards.")] = Path(
        "."
    ),
    listen: Annotated[
        str | None,
        typer.Option(
            "--listen",
            help="Serve WebSocket on ws://HOST:PORT (loopback only; port 0 picks one) instead of stdin/stdout.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Serve the agents' app server: JSON-RPC 2.0 on stdin/stdout, one message per line, or with --listen on
    WebSocket, one message per text frame. A client starts turns (turn/start), receives their frames
    (turn/frame) and answers approvals (approval/request).

    With --listen it prints the URL it listens on and serves until interrupted (Ctrl-C or SIGTERM); a client
    sends "Authorization: Bearer TOKEN", the token in the workspace's .subhive/app-server.json (0600).

    Example: subhive agent serve -C shop --listen ws://127.0.0.1:0
    """
    from ..agent import AppServer, parse_listen
    from ..up import framework_endpoint
    from ..workspace import find_root

    root = find_root(workspace)
    if listen is not None:
        host, port = parse_listen(listen)  # before anything starts: a bad address is exit 2, nothing to undo
        asyncio.run(_serve_websocket(root, host, port))
        return

    async def serve() -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)

        async def send(message: str) -> None:
            sys.stdout.buffer.write(message.encode("utf-8") + b"\n")
            sys.stdout.buffer.flush()

        client = await _root_client(root)
        try:
            await AppServer(root, endpoint=framework_endpoint(root), root=client).serve(reader, send)
        finally:
            if client is not None:
                await client.close()

    asyncio.run(serve())


async def _serve_websocket(root: Path, host: str, port: int) -> None:
    """The app server on WebSocket until SIGINT or SIGTERM: one session per connection, sharing the root client."""
    import signal

    from ..agent import AppServer, WebSocketAppServer
    from ..up import framework_endpoint

    client = await _root_client(root)
    try:
        server = await WebSocketAppServer.start(
            root,
            host=host,
            port=port,
            session=lambda: AppServer(root, endpoint=framework_endpoint(root), root=client),
        )
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        # The URL first and alone on stdout, so whatever started the server reads it before anything else.
        sys.stdout.write(f"app server listening on {server.url}\n")
        sys.stdout.flush()
        err_console.print(f"token in {escape(str(server.token_file))}; Ctrl-C stops")
        try:
            await stop.wait()
        finally:
            await server.stop()
    finally:
        if client is not None:
            await client.close()


async def _escalate(workspace: Path, hive: str, result: TurnResult, client: Any) -> None:
    """Report the turn's abnormal stop to the root as a repair (decision 0055), with the client the turn used or
    one made for it; where no root answers, say so once on stderr. The exit code stays the turn's."""
    from ..agent import escalate_stop

    reporter = client if client is not None else await _root_client(workspace)
    where = f"turn {result.turn} stopped ({result.stop.code})"
    if reporter is None:
        err_console.print(f"[yellow]{escape(where)}; the root is not reachable, so it is not escalated[/]")
        return
    try:
        repair = await escalate_stop(reporter, hive, result)
    except Exception as exc:  # the root went away mid-way: the turn's own stop is what the caller must see
        err_console.print(f"[yellow]{escape(where)}; the root did not take the repair: {escape(str(exc))}[/]")
    else:
        err_console.print(f"[dim]{escape(where)}: escalated to the root as repair {escape(repair.id)}[/]")
    finally:
        if reporter is not client:
            await reporter.close()


async def _root_client(workspace: Path) -> Any:
    """The running root with the admin's token, or None when no root answers."""
    from ..errors import SubhiveError
    from ..root_hive import RootClient, admin_token_of, root_ca_of, running_root_address

    address = running_root_address(workspace)
    if address is None:
        return None
    try:
        client = RootClient(address, admin_token_of(workspace), ca_file=root_ca_of(workspace))
    except SubhiveError:
        return None
    if await client.healthy():
        return client
    await client.close()
    return None


async def _ask_at_terminal(call: ToolCall) -> Approval:
    """Show the exact call and read y/N from the terminal. The read runs on a daemon thread, so a wait the
    turn gave up on (the approval timeout) never keeps the command from exiting."""
    from ..agent import Approval

    err_console.print(
        f"[bold yellow]approve[/] {escape(call.name)} {escape(call.arguments)} ? {escape('[y/N]')} ", end=""
    )
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[str] = loop.create_future()

    def deliver(line: str) -> None:
        if not answer.done():
            answer.set_result(line)

    def read() -> None:
        loop.call_soon_threadsafe(deliver, sys.stdin.readline())

    threading.Thread(target=read, name="approval", daemon=True).start()
    yes = (await answer).strip().lower() in ("y", "yes")
    return Approval(yes, "" if yes else "refused at the terminal by the person running the turn")


def _print_json(frame: Frame) -> None:
    sys.stdout.write(json.dumps(frame.to_dict(), ensure_ascii=False, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def _print_text(frame: Frame) -> None:
    data: dict[str, Any] = frame.data
    kind = frame.kind
    if kind == "turn.started":
        line = f"[bold]turn {frame.turn}[/] agent {escape(data['agent'])} on {escape(data['model'])}"
    elif kind == "model.request":
        what = "compaction request" if data.get("compaction") else "request"
        line = f"[dim]→ model {what} {data['n']}: {data['messages']} messages, ~{data['tokens']} tokens[/]"
    elif kind == "model.reply":
        calls = ", ".join(c["name"] for c in data["tool_calls"])
        line = (
            f"[dim]← model: {'calls ' + calls if calls else 'answers'} ({data['usage']['prompt_tokens']}+"
            f"{data['usage']['completion_tokens']} tokens)[/]"
        )
    elif kind == "tool.call":
        line = f"  [cyan]{escape(data['name'])}[/] {escape(data['arguments'][:200])} [dim]({data['policy']})[/]"
    elif kind == "tool.result":
        line = (
            f"  {'[green]ok[/]' if data['ok'] else '[red]' + escape(data['error'] or '') + '[/]'} "
            f"[dim]{escape(data['content'][:160])}[/]"
        )
    elif kind == "approval.waiting":
        line = _waiting_line(data)
    elif kind == "compaction":
        line = f"[yellow]compacted[/] {data['tokens_before']} → {data['tokens_after']} tokens"
    elif kind == "answer.refused":
        line = f"[yellow]answer refused[/] ({escape(str(data.get('error')))}): {escape(str(data.get('message')))}"
    elif kind == "turn.resumed":
        line = (
            f"[bold]turn {frame.turn}[/] resumed after {data.get('after')} frames, "
            f"{len(data.get('pending') or [])} calls to run"
        )
    elif kind != "turn.stopped":
        line = f"[dim]{escape(kind)}[/]"  # a kind this version does not know: shown, never a crash
    else:
        if data.get("answer"):
            out_console.print(escape(data["answer"]))
        line = _stopped_line(data)
    err_console.print(line)  # steps are progress (stderr); the answer alone is the command's output (stdout)


def _waiting_line(data: dict[str, Any]) -> str:
    """Shown once someone was asked: at the terminal (its prompt follows; no id), or as an approval at the root."""
    approval = data.get("approval")
    if not approval:
        return f"  [yellow]waiting for approval[/] (at most {data['timeout']:g} s)"
    shown = escape(str(approval))
    return (
        f"  [yellow]waiting for approval {shown}[/] (at most {data['timeout']:g} s; "
        f"decide it: subhive approvals show {shown})"
    )


def _stopped_line(data: dict[str, Any]) -> str:
    """How the turn ended, its counts, and the stop's hint when it has one (what to change or check)."""
    stop = data["stop"]
    colour = "green" if stop["code"] == "completed" else "red"
    line = (
        f"[{colour}]{stop['code']}[/]: {escape(stop['message'])} [dim]({data['model_calls']} model calls, "
        f"{data['tool_calls']} tool calls, {data['tokens']} tokens, {data['seconds']:.2f} s)[/]"
    )
    hint = (stop.get("detail") or {}).get("hint")
    return f"{line}\n  hint: {escape(str(hint))}" if hint else line
