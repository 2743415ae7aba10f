"""``subhive root``, ``approvals``, ``status``, ``watch``, and the root half of ``contract propose|list``.

Every command but ``root`` reaches the root through :class:`~subhive.root_hive.WorkspaceRoot`: the
workspace's running root when one answers, else the same engine in-process (``watch`` needs a running one).
This module parses, calls and prints; finding the root, its tokens and what an outcome means are the library's.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.markup import escape

from ..compat.proto_settings import extra_proto_paths
from ..errors import CheckFailed, InputError, Location, Problem, SubhiveError
from ._output import Format, err_console, fail_check, out_console, print_json, print_problems
from ._reviews import find_review, print_review, with_review
from ._schema import ProtoPathOption

if TYPE_CHECKING:
    from ..root_hive import Approval, ContractInfo, FrameListener, HiveStatus, ProposalOutcome, WorkspaceRoot

__all__ = ["approvals_app", "contract_list", "contract_propose", "root_command", "status_command", "watch_command"]

T = TypeVar("T")

FormatOption = Annotated[Format, typer.Option("--format", "-f", help="Output format.")]
WorkspaceOption = Annotated[Path, typer.Option("--workspace", "-C", help="Look for hive.toml from here upwards.")]
RootOption = Annotated[
    str | None,
    typer.Option(
        "--root",
        help="The root hive's address (default: $SUBHIVE_ROOT, else the workspace's running root).",
        show_default=False,
    ),
]
TOKEN_ENV = "SUBHIVE_TOKEN"


# -- reaching the root ------------------------------------------------------------------------------------------


def _with_root(
    workspace: Path,
    address: str | None,
    act: Callable[[WorkspaceRoot], Awaitable[T]],
    *,
    token: str | None = None,
    running_only: bool = False,
) -> T:
    """Run ``act`` against the root of the workspace at ``workspace`` (running, or opened in-process)."""
    from ..root_hive import WorkspaceRoot

    async def go() -> T:
        async with WorkspaceRoot(
            workspace, address=address, token=token, listener=_codegen, running_only=running_only
        ) as root:
            return await act(root)

    return asyncio.run(go())


def _codegen(workspace: Path) -> FrameListener:
    """In-process, an accepted contract refreshes the stubs that use it (a running root does it itself)."""
    from ..codegen import CodegenTrigger

    return CodegenTrigger(workspace, background=False)


# -- subhive root ----------------------------------------------------------------------------------------------


def root_command(
    *,
    host: Annotated[
        str,
        typer.Option(
            "--host", help="The interface to listen on; other than loopback it needs --tls-cert and --tls-key."
        ),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", "-p", min=0, max=65535, help="The port; 0 picks a free one.")] = 0,
    workspace: WorkspaceOption = Path("."),
    fmt: FormatOption = Format.text,
    codegen: Annotated[
        bool,
        typer.Option("--codegen/--no-codegen", help="Regenerate the stubs of the hives an accepted contract touches."),
    ] = True,
    tls_cert: Annotated[
        Path | None,
        typer.Option(
            "--tls-cert",
            help="Serve TLS with this certificate (PEM); clients verify it with $SUBHIVE_ROOT_CA.",
            show_default=False,
        ),
    ] = None,
    tls_key: Annotated[
        Path | None, typer.Option("--tls-key", help="The certificate's private key (PEM).", show_default=False)
    ] = None,
    advertise: Annotated[
        str | None,
        typer.Option(
            "--advertise",
            help="The host the others dial, when it is not --host (e.g. with --host 0.0.0.0); its address says it.",
            show_default=False,
        ),
    ] = None,
    http: Annotated[
        bool, typer.Option("--http/--no-http", help="Serve the HTTP API and its OpenAPI document (docs/http.md).")
    ] = True,
    http_port: Annotated[
        int, typer.Option("--http-port", min=0, max=65535, help="The HTTP API's port on 127.0.0.1; 0 picks a free one.")
    ] = 0,
) -> None:
    """Serve the root hive: the negotiation service over gRPC, with health checking and reflection.

    Prints its address once it listens (as {"address", "pid", "admin_token_file", "tls"} with --format json)
    and serves until interrupted (Ctrl-C or SIGTERM). State lives in the workspace's .subhive/root/, so a root
    killed and started again carries on where it was. Every call carries a token: on an address other than
    loopback the root serves TLS only, and refuses to start without it (exit 2).

    Example: subhive root --host 0.0.0.0 --port 50051 --tls-cert root.crt --tls-key root.key
    """
    from .._net import check_advertise
    from ..root_hive import ADMIN_TOKEN_FILE, RootServer, ServerTls
    from ..workspace import find_root

    if (tls_cert is None) != (tls_key is None):
        raise InputError(
            "--tls-cert and --tls-key go together",
            code="usage.missing_option",
            hint="give both: the certificate (PEM) and its private key (PEM)",
        )
    tls = ServerTls(tls_cert, tls_key) if tls_cert is not None and tls_key is not None else None
    if advertise is not None:
        check_advertise(
            advertise, host, listen_hint="serve beyond loopback: --host 0.0.0.0 with --tls-cert and --tls-key"
        )
    ws = find_root(workspace)

    async def serve() -> None:
        server = await RootServer.start(ws, host=host, port=port, codegen=codegen, tls=tls, advertise=advertise)
        try:
            api = await _start_http(server, ws, http_port) if http else None
        except BaseException:
            await server.stop()
            raise
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        if fmt is Format.json:
            # One line, so a supervisor reads the address before the stream of nothing that follows.
            sys.stdout.write(
                json.dumps(
                    {
                        "address": server.address,
                        "pid": os.getpid(),
                        "admin_token_file": str(ws / ADMIN_TOKEN_FILE),
                        "tls": server.tls,
                        "http": api.url if api is not None else None,
                    }
                )
                + "\n"
            )
            sys.stdout.flush()
        else:
            sys.stdout.write(f"root hive listening on {server.address}{' (TLS)' if server.tls else ''}\n")
            sys.stdout.flush()
            if api is not None:
                sys.stdout.write(
                    f"HTTP API on {api.url} (OpenAPI: {api.url}/openapi.json; console: {api.url}/console/)\n"
                )
                sys.stdout.flush()
            err_console.print(f"admin token in {escape(str(ws / ADMIN_TOKEN_FILE))}; Ctrl-C stops")
        try:
            await stop.wait()
        finally:
            if api is not None:
                await api.stop()
            await server.stop()

    asyncio.run(serve())


async def _start_http(server: Any, workspace: Path, port: int) -> Any:
    """The HTTP API beside the gRPC service, over the same engine; health, boards and dead letters come from
    the running tree's records (subhive up), which only the CLI knows."""
    from ..http import ApiServer, ApiSettings
    from ..up import framework_endpoint, runtime_status

    settings = ApiSettings(
        workspace, bus=lambda: framework_endpoint(workspace), runtime=lambda: runtime_status(workspace)
    )
    return await ApiServer.start(server, settings, port=port)


# -- subhive contract propose | list ---------------------------------------------------------------------------


def contract_propose(
    path: Annotated[
        Path, typer.Argument(help="The proposed version's directory (holding contract.yaml).", show_default=False)
    ],
    *,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            help=f"The provider hive's token (default: ${TOKEN_ENV}, "
            "else .subhive/tokens/<provider>.token, else the admin token, "
            "proposing for the contract's provider).",
            show_default=False,
        ),
    ] = None,
    announcement: Annotated[
        str | None, typer.Option("--announcement", help="The open need this proposal bids on.", show_default=False)
    ] = None,
    workspace: Annotated[
        Path | None,
        typer.Option(
            "--workspace",
            "-C",
            help="The workspace it belongs to (default: the one holding PATH, else the current directory's).",
            show_default=False,
        ),
    ] = None,
    root: RootOption = None,
    fmt: FormatOption = Format.text,
    proto_path: ProtoPathOption = None,
) -> None:
    """Propose a contract version to the root: accepted, pending a human's approval, or refused.

    The contract is linted here first. A compatible version that keeps every consumer satisfied is accepted
    and published; a breaking one waits for approval (exit 1, see `subhive approvals`); a dishonest semver
    bump is refused with the offending changes (exit 1); an invalid contract exits 2.
    Talks to the running root, or runs the same engine on the workspace when none runs. -I paths serve the
    local lint and an in-process root; a running root resolves imports with the workspace's proto_paths.

    Example: subhive contract propose contracts/orders/1.2.0
    """
    from ..contract import load_contract
    from ..root_hive import contract_files

    ws = _proposal_workspace(path, workspace)  # a path outside the workspace: say so, naming both
    with extra_proto_paths(proto_path or ()):
        contract = load_contract(path)  # every lint problem, located in the user's own files
        directory = path if path.is_dir() else path.parent
        files = contract_files(directory)
        try:
            outcome: ProposalOutcome = _with_root(
                ws,
                root,
                lambda r: r.propose(files, provider=contract.provider, announcement_id=announcement),
                token=token or os.environ.get(TOKEN_ENV),
            )
        except SubhiveError as exc:
            if exc.code in ("proposal.semver", "proposal.version_order"):
                # A check ran and said no, as `subhive contract check` says it: exit 1, not "bad input".
                raise CheckFailed(exc.message, code=exc.code, location=exc.location, hint=exc.hint) from exc
            if exc.code == "lock.inconsistent":
                exc.exit_code = 2  # the root refused it (a race with the check above): the same refusal
            raise
    _print_outcome(outcome, fmt)
    if outcome.status == "pending":
        # Waiting for a person is an expected state, not an error: the outcome above says why; say what comes
        # next. Still exit 1 (docs/cli.md, decision 0004): a script learns the version is not accepted yet.
        err_console.print(f"next: a person decides: subhive approvals show {escape(outcome.id)}")  # stderr: JSON too
        raise typer.Exit(1)


def _proposal_workspace(path: Path, explicit: Path | None) -> Path:
    """The workspace a proposal goes to: the one holding ``path``. A path in no workspace, or outside the one
    named with -C, is refused naming the path and the workspace, rather than failing on a missing hive.toml."""
    from ..workspace import find_root

    where = Path(os.path.abspath(path))
    directory = where if where.is_dir() else where.parent
    try:
        holder: Path | None = find_root(directory)
    except SubhiveError:
        holder = None
        if not where.exists():
            raise InputError(
                "no such file or directory",
                code="input.not_found",
                location=Location(file=str(where)),
                hint="check the path; it is resolved from the current directory",
            ) from None
    try:
        current: Path | None = find_root(explicit if explicit is not None else Path("."))
    except SubhiveError:
        if explicit is not None:
            raise
        current = None
    if current is not None and holder != current and (holder is None or explicit is not None):
        raise InputError(
            f"this path is outside the workspace {current}",
            code="propose.outside_workspace",
            location=Location(file=str(where)),
            hint=f"copy it to {current / 'contracts'}/<name>/<version>/ and propose that copy, or run "
            "the command from the workspace it belongs to",
        )
    if holder is None:
        raise InputError(
            "this path is in no subhive workspace (no hive.toml in it or above it)",
            code="propose.outside_workspace",
            location=Location(file=str(where)),
            hint="a proposal goes to a workspace's root hive: put the version under that workspace's contracts/",
        )
    return holder


def _print_outcome(outcome: ProposalOutcome, fmt: Format) -> None:
    if fmt is Format.json:
        print_json(outcome.to_dict())
        return
    colour = {"accepted": "green", "pending": "yellow"}.get(outcome.status, "red")
    version = outcome.version
    what = f"repair {escape(outcome.id)}" if version is None else f"{escape(outcome.contract)} {version}"
    out_console.print(
        f"[bold]{what}[/]: [{colour}]{outcome.status}[/] "
        f"[dim]({escape(outcome.code)}, proposal {escape(outcome.id)})[/]"
    )
    if outcome.message:
        out_console.print(f"  {escape(outcome.message)}")
    print_problems(list(outcome.problems), console=out_console)


def contract_list(
    name: Annotated[str | None, typer.Argument(help="Only this contract.", show_default=False)] = None,
    workspace: WorkspaceOption = Path("."),
    root: RootOption = None,
    fmt: FormatOption = Format.text,
) -> None:
    """List the accepted contracts and versions: hash, provider, state, and each consumer's range.

    A version is active while it serves a consumer, superseded when a newer one of its major line does,
    retired when an old major no consumer needs any more.

    Example: subhive contract list orders --format json
    """
    infos: list[ContractInfo] = _with_root(workspace, root, lambda r: r.contracts(name))
    if fmt is Format.json:
        print_json({"contracts": [c.to_dict() for c in infos]})
        return
    if not infos:
        err_console.print("no accepted contracts yet")
    for info in infos:
        out_console.print(f"[bold]{escape(info.name)}[/]")
        for v in info.versions:
            consumers = ", ".join(f"{h} {r}" for h, r in sorted(v.consumers.items())) or "no consumers"
            damaged = "" if v.intact else " [bold red]TAMPERED[/]"
            out_console.print(
                f"  {v.version!s:<12} {v.status:<10} provider {escape(v.provider)}  "
                f"{escape(consumers)}  [dim]{v.hash[:19]}[/]{damaged}"
            )


# -- subhive approvals -----------------------------------------------------------------------------------------

approvals_app = typer.Typer(
    help="Breaking proposals waiting for a human: list, show, approve, reject.", no_args_is_help=True
)


class ApprovalStatus(StrEnum):
    pending = "pending"
    approved = "approved"
    rejected = "rejected"
    all = "all"


@approvals_app.command("list")
def approvals_list(
    status: Annotated[ApprovalStatus, typer.Option("--status", help="Which approvals.")] = ApprovalStatus.pending,
    workspace: WorkspaceOption = Path("."),
    root: RootOption = None,
    fmt: FormatOption = Format.text,
) -> None:
    """List approvals (pending ones by default).

    Example: subhive approvals list --status all
    """
    items: list[Approval] = _with_root(workspace, root, lambda r: r.approvals(status.value))
    if fmt is Format.json:
        print_json({"approvals": [a.to_dict() for a in items]})
        return
    if not items:
        err_console.print(f"no {status.value} approvals" if status is not ApprovalStatus.all else "no approvals")
    for a in items:
        out_console.print(
            f"{escape(a.id)}  {_subject_of(a)}  [bold]{a.status}[/]  "
            f"from {escape(a.proposer)}  {_when(a.created)}  [dim]{escape(a.reason)}[/]"
        )


def _subject_of(a: Approval) -> str:
    """What an approval is about, in one phrase: a contract version, a repair's failure and where, or the tool an
    agent asks to run."""
    if a.tool_call is not None:
        return f"tool {escape(a.tool_call.tool)} for agent {escape(a.tool_call.agent)}"
    if a.repair is None:
        return f"{escape(a.contract)} {a.version}"
    r = a.repair
    where = "/".join(escape(x) for x in (a.contract, r.operation) if x) or escape(r.subject) or "-"
    return f"repair {escape(r.code)} x{r.count} at {where}"


@approvals_app.command("show")
def approvals_show(
    approval_id: Annotated[str, typer.Argument(metavar="ID", help="The approval's id.", show_default=False)],
    workspace: WorkspaceOption = Path("."),
    root: RootOption = None,
    fmt: FormatOption = Format.text,
) -> None:
    """Show one approval with the compatibility check that made it wait.

    Example: subhive approvals show p-000042
    """
    a: Approval = _with_root(workspace, root, lambda r: r.approval(approval_id))
    review = find_review(workspace, a)  # the debate an agent's change went through ([review]), if any
    if fmt is Format.json:
        print_json(with_review(a.to_dict(), review))
        return
    out_console.print(
        f"[bold]{_subject_of(a)}[/]  {a.status}  {escape(a.id)} from {escape(a.proposer)}, {_when(a.created)}"
    )
    if a.message:
        out_console.print(f"  {escape(a.message)}")
    _print_decision(a)
    if a.tool_call is not None:  # exactly what will run if approved
        out_console.print(
            f"  turn {escape(a.tool_call.turn or '-')}, call {escape(a.tool_call.call_id or '-')}; arguments:"
        )
        out_console.print(f"    {a.tool_call.arguments}", markup=False)
    print_review(review)
    if a.repair is not None:
        if a.repair.subject:
            out_console.print(f"  subject: {escape(a.repair.subject)}")
        lines = a.repair.sample.decode("utf-8", "replace").splitlines()
        if lines:
            out_console.print("  sample (the message that failed):")
            for line in lines[:10]:
                out_console.print(f"    {line[:200]}", markup=False)
    for part in (a.check or {}).get("parts", []):
        for change in part.get("changes", []):
            if change.get("backward") and change.get("forward"):
                continue
            out_console.print(
                f"  {escape(str(part.get('part', '')))} {escape(str(change.get('path') or '/'))}  "
                f"{escape(str(change.get('message', '')))} [dim]\\[{escape(str(change.get('code')))}][/]"
            )


@approvals_app.command("approve")
def approvals_approve(
    approval_id: Annotated[str, typer.Argument(metavar="ID", help="The approval's id.", show_default=False)],
    *,
    note: Annotated[str, typer.Option("--note", help="Why it is approved (kept with the decision).")] = "",
    by: Annotated[str | None, typer.Option("--by", help="Who approves (default: your login name).")] = None,
    workspace: WorkspaceOption = Path("."),
    root: RootOption = None,
    fmt: FormatOption = Format.text,
) -> None:
    """Approve a pending proposal: its new major is published beside the old one, which stays while needed.

    Uses the workspace's admin token: approval is for humans, never for a hive. Approving what is already
    approved changes nothing and exits 0; approving what was rejected exits 1 (approval.decided).

    Example: subhive approvals approve p-000042 --note "consumers migrate by June"
    """
    from ..root_hive import AlreadyDecided

    decided = _with_root(workspace, root, lambda r: r.approve(approval_id, note=note, by=_who(by)))
    if isinstance(decided, AlreadyDecided):
        _print_already(decided.approval, fmt)
        return
    if fmt is Format.json:
        print_json(decided.to_dict())
        return
    what = (
        f"{escape(decided.contract)} {decided.version}"
        if decided.version is not None
        else "the tool call"
        if decided.kind == "tool"
        else "the repair"
    )
    colour = "green" if decided.status == "accepted" else "yellow"
    out_console.print(
        f"{escape(approval_id)}: [green]approved[/]: {what} [{colour}]{escape(decided.status)}[/] "
        f"[dim]({escape(decided.code)})[/]"
    )
    if decided.message:
        out_console.print(f"  {escape(decided.message)}")
    print_problems(list(decided.problems), console=out_console)


@approvals_app.command("reject")
def approvals_reject(
    approval_id: Annotated[str, typer.Argument(metavar="ID", help="The approval's id.", show_default=False)],
    *,
    reason: Annotated[str, typer.Option("--reason", help="Why (the proposer sees it).", show_default=False)],
    by: Annotated[str | None, typer.Option("--by", help="Who rejects (default: your login name).")] = None,
    workspace: WorkspaceOption = Path("."),
    root: RootOption = None,
    fmt: FormatOption = Format.text,
) -> None:
    """Reject a pending proposal; nothing is published and the decision stays on record.

    Rejecting what is already rejected changes nothing and exits 0; rejecting what was approved exits 1
    (approval.decided).

    Example: subhive approvals reject p-000042 --reason "keep the field; deprecate it first"
    """
    from ..root_hive import AlreadyDecided

    decided = _with_root(workspace, root, lambda r: r.reject(approval_id, reason=reason, by=_who(by)))
    if isinstance(decided, AlreadyDecided):
        _print_already(decided.approval, fmt)
        return
    if fmt is Format.json:
        print_json(decided.to_dict())
    else:
        out_console.print(f"{escape(decided.id)}: [red]rejected[/]: {_subject_of(decided)}; nothing was published")
        if decided.decision:
            out_console.print(f"  reason: {escape(decided.decision)}")


def _print_decision(a: Approval) -> None:
    if a.decision:
        out_console.print(f"  decision: {escape(a.decision)}")
    if a.decided_by:
        out_console.print(f"  decided by {escape(a.decided_by)} {_when(a.decided or 0.0)}")


def _who(by: str | None) -> str:
    """Who decides, as recorded with the decision: ``--by``, else the login name (never a secret)."""
    if by is not None:
        return by.strip()
    import getpass

    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no login name in this environment
        return ""


def _print_already(a: Approval, fmt: Format) -> None:
    if fmt is Format.json:
        print_json({**a.to_dict(), "unchanged": True})
        return
    out_console.print(
        f"{escape(a.id)}: already {a.status}"
        + (f" on {_when(a.decided)}" if a.decided else "")
        + f": {_subject_of(a)}; nothing changed"
    )


# -- subhive status | watch ------------------------------------------------------------------------------------


def status_command(
    workspace: WorkspaceOption = Path("."),
    root: RootOption = None,
    fmt: FormatOption = Format.text,
) -> None:
    """Show the hive tree the root knows: what each hive provides and consumes and, while the workspace is
    up, each hive's health, message rates, blackboard size and dead letters.

    Example: subhive status --format json
    """
    from ..decompose import summarise_tree
    from ..up import lost_supervisor, recorded_processes, runtime_status
    from ..workspace import find_root, open_workspace
    from ._tree_once import read_once

    async def read(r: WorkspaceRoot) -> tuple[list[HiveStatus], list[Problem]]:
        return await r.status(), await r.lock_problems()  # shown here; nothing rewrites the lock to hide them

    tree, lock_problems = _with_root(workspace, root, read)
    ws = find_root(workspace)
    running = runtime_status(ws)
    lost = None if running is not None else lost_supervisor(ws)  # a supervisor killed: what it left running
    live = (running or {}).get("hives", {})
    # Each parent's synthesis of what is below it (counts, roles, health, open contracts, failures).
    opened = read_once(open_workspace(ws))  # read by the summary, the problems and the warnings below
    summary = summarise_tree(opened, {name: _synthesis_input(info) for name, info in live.items()})
    broken = opened.hives().error()  # a hive whose manifest is broken is missing above: say why (exit 2)
    warnings = _tree_warnings(opened)
    if fmt is Format.json:
        print_json(
            {
                "hives": [h.to_dict() for h in tree],
                "runtime": running if running is not None else lost,
                "summary": summary.to_dict(),
                "warnings": [p.to_dict() for p in warnings],
                "problems": [p.to_dict() for p in broken.problems] if broken else [],
                "lock": {"ok": not lock_problems, "problems": [p.to_dict() for p in lock_problems]},
            }
        )
        if broken:
            fail_check(broken, fmt)
        return
    _print_root_line(running, lost, recorded_processes(ws), ws)
    _print_lock_problems(lock_problems)
    if tree:
        out_console.print(f"[dim]│ {escape(summary.root.line())}[/]")
    else:
        err_console.print("no hives registered yet")
    lines = {name: s.line() for name, s in summary.hives.items() if s.children}
    for i, node in enumerate(tree):
        _print_node(node, "", last=i == len(tree) - 1, live=live, summaries=lines)
    for w in warnings:
        out_console.print(f"[yellow]warning[/]: {escape(w.message)} [dim]\\[{w.code}][/]")
        if w.hint:
            out_console.print(f"  [cyan]fix[/]: {escape(w.hint)}")
    if broken:
        raise broken


def _tree_warnings(workspace: Any) -> list[Problem]:
    """Requirements no version meets and events no one publishes (the lock's own problems are shown above)."""
    from ..codegen import check_tree

    try:
        return [p for p in check_tree(workspace) if not p.code.startswith("lock.")]
    except SubhiveError:  # an unreadable lock: reported above
        return []


def _print_root_line(
    running: dict[str, Any] | None, lost: dict[str, Any] | None, processes: dict[str, dict[str, Any]], ws: Path
) -> None:
    """Up; up with the root process down; a supervisor lost, with what it left running unsupervised; a root a
    person started with `subhive root`; or not up."""
    from ..root_hive import served_root

    if running:
        console = f", console {escape(str(running['http']))}/console/" if running.get("http") else ""
        where = f"[dim](NATS {escape(str(running.get('nats')))}, root {escape(str(running.get('root')))}{console})[/]"
        if running.get("state") != "starting" and not processes.get("root", {}).get("alive"):
            out_console.print(
                f"[bold]root[/]  [red]up, but the root process is down[/] {where} [dim](the supervisor restarts it)[/]"
            )
        else:
            out_console.print(f"[bold]root[/]  [green]up[/] {where}")
    elif lost:
        order = sorted(lost["running"].items(), key=lambda item: (item[0] not in ("nats", "root"), item[0]))
        left = ", ".join(f"{escape(name)} pid {pid}" for name, pid in order)
        out_console.print(
            f"[bold]root[/]  [bold red]supervisor lost[/]: pid {lost['supervisor']} died without "
            "stopping its tree" + (f"; still running unsupervised: {left}" if left else "")
        )
        out_console.print(f"  [cyan]fix[/]: {escape(lost['hint'])}")
    elif (served := served_root(ws)) is not None:
        address, pid = served
        out_console.print(
            f"[bold]root[/]  [green]serving[/] on {escape(address)} [dim](pid {pid}, started by `subhive root`, "
            "not by `subhive up`: stop it where it runs before `subhive up`)[/]"
        )
    else:
        out_console.print("[bold]root[/]  [dim]not running (subhive up starts it)[/]")


def _print_lock_problems(problems: list[Problem]) -> None:
    """What is wrong with contracts.lock, each with its fix: status shows it, nothing repairs it silently."""
    if not problems:
        return
    out_console.print(
        f"[bold red]contracts.lock disagrees with the accepted contracts[/] ({len(problems)} "
        f"problem{'s' if len(problems) != 1 else ''}; propose refuses until it is fixed)"
    )
    for p in problems:
        out_console.print(f"  [red]✗[/] {escape(str(p.location))}: {escape(p.message)} [dim]\\[{p.code}][/]")
        if p.hint:
            out_console.print(f"    [cyan]fix[/]: {escape(p.hint)}")


def _synthesis_input(info: dict[str, Any]) -> dict[str, Any]:
    controller = info.get("controller") or {}
    failures = int(controller.get("failures", 0) or 0) + int(info.get("dead_letters", 0) or 0)
    return {"health": info.get("health"), "failures": failures}


_HEALTH = {"ready": "green", "starting": "yellow", "restarting": "red", "down": "red", "unresponsive": "red"}


def _runtime_line(info: dict[str, Any]) -> str:
    health = str(info.get("health", "?"))
    rates = info.get("rates") or {}
    board = info.get("blackboard") or {}
    parts = [f"[{_HEALTH.get(health, 'dim')}]{escape(health)}[/]"]
    if info.get("restarts"):
        parts.append(f"{info['restarts']} restarts")
    connections = info.get("connections") or []
    if len(connections) > 1:  # another process of it joined (subhive join), or a replica
        parts.append(f"{len(connections)} connections")
    parts.append(f"{rates.get('sent_per_s', 0):g} sent/s, {rates.get('received_per_s', 0):g} received/s")
    parts.append(f"board {board.get('keys', 0)} keys, {board.get('revisions', 0)} revisions")
    parts += _dead_letter_parts(info)
    if info.get("metrics"):
        parts.append(f"metrics {escape(str(info['metrics']))}")
    return " · ".join(parts)


def _dead_letter_parts(info: dict[str, Any]) -> list[str]:
    """How many dead letters, how full their stream is, how many could not be kept (it was full), and how many
    events wait for room there."""
    dead = info.get("dead_letters", 0)
    usage = info.get("dead_letter_stream") or {}
    level, used = usage.get("level", "ok"), usage.get("used")
    text = f"{dead} dead letters" + (f" ({round(used * 100)}% full)" if level != "ok" and used is not None else "")
    style = {"full": "bold red", "near_full": "yellow"}.get(level, "red" if dead else "")
    parts = [f"[{style}]{text}[/]" if style else text]
    not_kept = (info.get("bus") or {}).get("not_kept", 0)
    if not_kept:
        parts.append(f"[bold red]{not_kept} not kept[/]")
    blocked = info.get("dead_letter_blocked", 0)
    if blocked:  # events waiting, unacknowledged, for room in the dead letters: consumption may stall
        parts.append(f"[bold red]dead_letter_blocked: {blocked} events held[/]")
    return parts


def _print_node(node: HiveStatus, prefix: str, *, last: bool, live: dict[str, Any], summaries: dict[str, str]) -> None:
    branch = "└── " if last else "├── "
    needs = ", ".join(
        f"{c.get('contract')} {c.get('versions')}" + ("" if c.get("satisfied_by") else " (unmet)")
        for c in node.consumes
    )
    out_console.print(
        f"{prefix}{branch}[bold]{escape(node.name)}[/] [dim]{escape(node.kind)}[/]"
        + (f"  provides {escape(', '.join(node.provides))}" if node.provides else "")
        + (f"  consumes {escape(needs)}" if needs else "")
        + "".join(f"  serves {escape(e.contract)} v{e.major} at {escape(e.address)}" for e in node.endpoints)
    )
    below = prefix + ("    " if last else "│   ")
    if node.name in live:
        out_console.print(f"{below}[dim]└[/] {_runtime_line(live[node.name])}")
        warning = (live[node.name].get("dead_letter_stream") or {}).get("warning")
        if warning:
            out_console.print(f"{below}[dim]└[/] [yellow]warning[/]: {escape(warning)}")
    if node.name in summaries:
        out_console.print(f"{below}[dim]└ below: {escape(summaries[node.name])}[/]")
    for i, child in enumerate(node.children):
        _print_node(child, below, last=i == len(node.children) - 1, live=live, summaries=summaries)


def watch_command(
    after: Annotated[
        int, typer.Option("--after", min=0, help="Resume token: the seq of the last frame seen (0 replays everything).")
    ] = 0,
    count: Annotated[
        int | None, typer.Option("--count", "-n", help="Stop after this many frames.", show_default=False)
    ] = None,
    workspace: WorkspaceOption = Path("."),
    root: RootOption = None,
    fmt: FormatOption = Format.text,
) -> None:
    """Follow the root's events live: registrations, proposals, verdicts, pending approvals, contracts ready.

    Each frame carries its seq; pass the last one seen to --after to resume without a gap. With
    --format json each frame is one JSON object per line. Needs a running root.

    Example: subhive watch --after 120 --format json
    """
    if count is not None and count < 1:
        raise InputError("--count must be at least 1", code="usage.invalid_value")

    async def follow(r: WorkspaceRoot) -> None:
        seen = 0
        async for frame in r.watch(after):
            _print_frame(frame.seq, frame.kind, frame.data, frame.time, fmt)
            seen += 1
            if count is not None and seen >= count:
                return

    _with_root(workspace, root, follow, running_only=True)


def _print_frame(seq: int, kind: str, data: dict[str, Any], time: float, fmt: Format) -> None:
    if fmt is Format.json:
        sys.stdout.write(json.dumps({"seq": seq, "kind": kind, "time": time, "data": data}, sort_keys=True) + "\n")
        sys.stdout.flush()
        return
    summary = " ".join(f"{k}={v}" for k, v in sorted(data.items()) if isinstance(v, str | int | float | bool))
    out_console.print(f"[dim]{seq:>6}[/] {_when(time)} [bold]{escape(kind)}[/] {escape(summary)}")


def _when(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%SZ")
