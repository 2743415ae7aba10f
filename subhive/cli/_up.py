"""``subhive up``, ``down`` and ``logs``: run the whole workspace, stop it, read what it said.

``status`` (in :mod:`subhive.cli._root`) adds each running hive's health to the tree the root knows.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.markup import escape

from ..errors import InputError, Location, SubhiveError
from ._output import Format, err_console, out_console, print_json

if TYPE_CHECKING:
    from ..up import DownReport

__all__ = ["creds_command", "down_command", "join_command", "logs_command", "restart_command", "up_command"]

FormatOption = Annotated[Format, typer.Option("--format", "-f", help="Output format.")]
WorkspaceOption = Annotated[Path, typer.Option("--workspace", "-C", help="Look for hive.toml from here upwards.")]
PortOption = typer.Option(min=0, max=65535)
_STYLE = {
    "ready": "bold green",
    "failed": "bold red",
    "hive.crashed": "red",
    "root.crashed": "red",
    "nats.crashed": "red",
    "contract.pending": "yellow",
    "contract.refused": "red",
    "stopped": "bold",
    "deadletters.near_full": "yellow",
    "deadletters.full": "bold red",
}


def _print_event(event: dict[str, Any]) -> None:
    """One line of up's progress; a problem it reports (a refused change, a warning) also says where, its code
    and, on a line of its own, what to do. A final failure's hint is printed with the error up then raises."""
    name = str(event.get("event"))
    style = _STYLE.get(name, "")
    message = escape(str(event.get("message", "")))
    where, code, hint = event.get("where"), event.get("code"), event.get("hint")
    if isinstance(where, str) and where and where not in str(event.get("message", "")):
        message = f"{escape(where)}: {message}"
    if isinstance(code, str) and "." in code:  # an error code (some events carry an exit code there)
        message += f" [{escape(code)}]"
    err_console.print(
        f"[dim]{time.strftime('%H:%M:%S', time.localtime(event.get('t', 0)))}[/] "
        + (f"[{style}]{message}[/]" if style else message)
    )
    if isinstance(hint, str) and hint and name != "failed":
        err_console.print(f"         hint: {escape(hint)}")


def up_command(
    workspace: WorkspaceOption = Path("."),
    *,
    detach: Annotated[
        bool,
        typer.Option(
            "--detach", "-d", help="Return once every hive is ready; the tree keeps running until `subhive down`."
        ),
    ] = False,
    root_port: Annotated[
        int, typer.Option("--root-port", min=0, max=65535, help="The root hive's gRPC port; 0 picks a free one.")
    ] = 0,
    nats_port: Annotated[
        int, typer.Option("--nats-port", min=0, max=65535, help="The NATS port; 0 picks a free one.")
    ] = 0,
    ready_timeout: Annotated[
        float, typer.Option("--ready-timeout", min=1.0, help="Seconds every hive gets to become ready.")
    ] = 120.0,
    creds_dir: Annotated[
        Path | None,
        typer.Option(
            "--creds-dir",
            help="Once ready, write the credentials of each [up] elsewhere hive to DIR/HIVE/HIVE.creds "
            "(for `subhive join` on other machines or containers).",
            show_default=False,
        ),
    ] = None,
    fmt: FormatOption = Format.text,
) -> None:
    """Start the workspace: NATS, the root hive and every sub-hive, each its own process.

    Negotiates the contracts under contracts/ that the lock does not hold yet, generates stubs, starts NATS
    with per-hive permissions from the lock, then every sub-hive, and shows progress as it goes. A hive that
    crashes is reported and restarted with backoff. Without --detach it stays in the foreground and Ctrl-C
    stops everything; with --detach it returns once all hives are ready (stop them with `subhive down`).

    Example: subhive up --detach
    """
    from ..up import UpLayout, follow, pid_alive, running_supervisor, start
    from ..workspace import find_root
    from ._manifests import check_manifests

    ws = find_root(workspace)
    check_manifests(ws)  # every problem of every manifest, before anything starts (the supervisor would say one)
    try:
        ready = start(
            ws,
            on_event=_print_event if fmt is Format.text else lambda _: None,
            root_port=root_port,
            nats_port=nats_port,
            ready_timeout=ready_timeout,
        )
    except KeyboardInterrupt:
        _interrupted_start(ws)
    if creds_dir is not None:
        from ..up import write_elsewhere_credentials

        for path in write_elsewhere_credentials(ws, creds_dir):
            if fmt is Format.text:
                err_console.print(
                    f"wrote {escape(str(path))} (0600); where the hive runs, in a checkout of the workspace: "
                    f"subhive join --creds {escape(str(path))}"
                )
    if fmt is Format.json:
        print_json({"ready": True, "seconds": ready.get("seconds"), "hives": ready.get("hives", [])})
    if detach:
        if fmt is Format.text:
            err_console.print("running in the background: subhive status, subhive logs HIVE, subhive down")
        return
    supervisor = (running_supervisor(ws) or {}).get("pid")
    stopped: dict[str, Any] | None = {}
    try:
        # Inside the try: a Ctrl-C right after this line (the user's cue) must still stop the tree.
        err_console.print("Ctrl-C stops every hive, the root and NATS")
        # Until the tree stops, or the supervisor dies without saying so (then down kills what it left).
        stopped = follow(
            ws,
            _print_event if fmt is Format.text else lambda _: None,
            until=frozenset({"stopped"}),
            alive=lambda: pid_alive(supervisor),
            skip_existing=True,
        )
    except KeyboardInterrupt:
        pass
    finally:
        report = _down_despite_ctrl_c(ws)
        if fmt is Format.text and report.was_running:
            err_console.print(f"stopped: {', '.join(report.stopped)}")
    if stopped is None:
        raise SubhiveError(
            f"the supervisor (pid {supervisor}) exited without stopping the tree; down stopped what it left",
            code="up.supervisor_lost",
            hint=f"see {UpLayout(ws).log_file('supervisor')}",
        )


def _interrupted_start(ws: Path) -> NoReturn:
    """Ctrl-C while up was starting: ``start`` stopped the supervisor; make sure (a second Ctrl-C may have cut
    that short), say what was stopped, and exit 130 as an interrupted command does."""
    import json

    from ..up import UpLayout

    report = _down_despite_ctrl_c(ws)
    started: list[str] = []
    with contextlib.suppress(OSError):  # what the supervisor said it started, in order
        for line in UpLayout(ws).progress_file.read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(ValueError, AttributeError):
                event = json.loads(line)
                name = {"root.started": "root", "nats.started": "nats"}.get(event.get("event"))
                name = event.get("hive") if event.get("event") == "hive.starting" else name
                if name and name not in started:
                    started.append(str(name))
    what = ", ".join(["supervisor", *started]) if report.stopped else "nothing had started"
    killed = f" (killed: {', '.join(report.killed)})" if report.killed else ""
    err_console.print(
        f"[yellow]interrupted[/] while starting: stopped {escape(what + killed)}; nothing is left running"
    )
    raise typer.Exit(130)


def _down_despite_ctrl_c(ws: Path) -> DownReport:
    """``down``, run to its end: another Ctrl-C while the tree stops must not leave half of it running."""
    from ..up import down

    while True:
        try:
            return down(ws)
        except KeyboardInterrupt:
            err_console.print("[yellow]still stopping[/]: every process is stopped before up exits")


def down_command(
    workspace: WorkspaceOption = Path("."),
    timeout: Annotated[
        float, typer.Option("--timeout", min=1.0, help="Seconds to wait for a clean stop before killing what is left.")
    ] = 30.0,
    fmt: FormatOption = Format.text,
) -> None:
    """Stop everything `subhive up` started: every sub-hive, then the root, then NATS; no process is left.

    Data stays: blackboards, event streams and dead letters are on disk under .subhive/ for the next `up`.

    Example: subhive down
    """
    from ..up import down
    from ..workspace import find_root

    report = down(find_root(workspace), timeout=timeout)
    if fmt is Format.json:
        print_json({"was_running": report.was_running, "stopped": report.stopped, "killed": report.killed})
        return
    if not report.was_running and not report.killed:
        from ..root_hive import served_root

        served = served_root(find_root(workspace))
        if served is not None:  # not up's to stop: a person started it, and may be using it
            out_console.print(
                f"nothing `subhive up` started is running; a root started with `subhive root` serves this "
                f"workspace on {escape(served[0])} (pid {served[1]}): stop it where it runs (Ctrl-C), or kill "
                f"{served[1]}"
            )
            return
        out_console.print("nothing is running in this workspace")
        return
    out_console.print(
        f"stopped {len(report.stopped)} processes" + (f": {', '.join(report.stopped)}" if report.stopped else "")
    )
    if report.killed:
        err_console.print(f"[yellow]killed (did not stop in time)[/]: {', '.join(report.killed)}")


def restart_command(
    hive: Annotated[str, typer.Argument(help="The running sub-hive to restart.", show_default=False)],
    timeout: Annotated[
        float, typer.Option("--timeout", min=1.0, help="Seconds to wait for it to be ready again.")
    ] = 120.0,
    workspace: WorkspaceOption = Path("."),
    fmt: FormatOption = Format.text,
) -> None:
    """Restart one sub-hive of the running tree (after changing its code); returns once it is ready again.

    The supervisor stops the hive (SIGTERM, then SIGKILL after 5 s) and starts it again with the same
    credentials; the other hives, the root and NATS run on. Exits 2 when the workspace is not up or runs no
    such hive, 1 when the hive does not come back (with its log's last lines).

    Example: subhive restart backend
    """
    from ..up import request_restart
    from ..workspace import find_root

    ready = request_restart(
        find_root(workspace), hive, on_event=_print_event if fmt is Format.text else lambda _: None, timeout=timeout
    )
    if fmt is Format.json:
        print_json({"hive": hive, "ready": True, "pid": ready.get("pid")})


def logs_command(
    name: Annotated[
        str | None, typer.Argument(help="A sub-hive, or root, nats, supervisor; all when omitted.", show_default=False)
    ] = None,
    lines: Annotated[int, typer.Option("--lines", "-n", min=0, help="How many of the last lines to show.")] = 40,
    follow_: Annotated[bool, typer.Option("--follow", "-f", help="Keep printing what is appended.")] = False,
    workspace: WorkspaceOption = Path("."),
) -> None:
    """Show what the supervisor, NATS, the root and the sub-hives wrote to their logs (.subhive/logs/, and
    NATS's own in .subhive/nats/).

    Example: subhive logs backend -n 100 --follow
    """
    from ..workspace import find_root

    root = find_root(workspace)
    logs = _log_files(root)
    if name is not None:
        logs = {name: _one_log(root, name, logs)}
    files = list(logs.items())
    prefix = name is None
    positions: dict[Path, int] = {}
    for label, path in files:
        text = path.read_bytes()
        positions[path] = len(text)
        for line in text.decode("utf-8", errors="replace").splitlines()[-lines:] if lines else []:
            out_console.print((f"[dim]{escape(label)}[/] | " if prefix else "") + escape(line))
    while follow_:
        time.sleep(0.2)
        for label, path in sorted(_log_files(root).items()) if name is None else files:
            size = path.stat().st_size if path.exists() else 0
            start = positions.get(path, 0)
            if size > start:
                with open(path, "rb") as handle:
                    handle.seek(start)
                    chunk = handle.read()
                positions[path] = start + len(chunk)
                for line in chunk.decode("utf-8", errors="replace").splitlines():
                    out_console.print((f"[dim]{escape(label)}[/] | " if prefix else "") + escape(line))


def _log_files(root: Path) -> dict[str, Path]:
    """Every log that exists, by the name `subhive logs` takes: supervisor, root, nats and each hive."""
    from ..up import UpLayout

    layout = UpLayout(root)
    found = {p.stem: p for p in sorted(layout.logs_dir.glob("*.log"))} if layout.logs_dir.is_dir() else {}
    nats = layout.nats_dir / "nats-server.log"  # EmbeddedServer.log_file: the server writes it in its store
    if nats.is_file():
        found["nats"] = nats
    for node in sorted(layout.nats_dir.glob("n*/nats-server.log")) if layout.nats_dir.is_dir() else []:
        found[f"nats-{node.parent.name}"] = node  # the nodes of a cluster (docs/cluster.md)
    return dict(sorted(found.items()))


def _one_log(root: Path, name: str, logs: dict[str, Path]) -> Path:
    """The log of ``name``, or an error naming the valid names (exit 2)."""
    import difflib

    from ..workspace import open_workspace

    if name in logs:
        return logs[name]
    try:
        hives = set(open_workspace(root).hives().directories)
    except SubhiveError:
        hives = set()
    valid = sorted({"supervisor", "root", "nats"} | hives | set(logs))
    if name in valid:
        raise InputError(
            f"nothing logged for {name!r} yet",
            code="logs.none_yet",
            hint="subhive up starts the tree; its logs are written from then on",
        )
    close = difflib.get_close_matches(name, valid, n=1)
    raise InputError(
        f"no log for {name!r}",
        code="logs.unknown",
        hint=(f"did you mean {close[0]!r}? " if close else "") + f"valid names: {', '.join(valid)}",
    )


def creds_command(
    hive: Annotated[str, typer.Argument(help="The running sub-hive whose credentials to export.", show_default=False)],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Where to write them (owner-only, 0600).", show_default=False)
    ],
    workspace: WorkspaceOption = Path("."),
    fmt: FormatOption = Format.text,
) -> None:
    """Export what one hive needs to run elsewhere: the NATS URLs, its NATS user, its root token and its gRPC
    keys, in one owner-only file for `subhive join` (docs/up.md). Keep it like a password.

    Example: subhive creds backend --out backend.creds
    """
    from ..up import export_credentials
    from ..workspace import find_root

    credentials = export_credentials(find_root(workspace), hive)
    credentials.write(out)
    if fmt is Format.json:
        print_json({"hive": hive, "file": str(out), "nats": list(credentials.nats), "root": credentials.root})
    else:
        err_console.print(
            f"wrote {escape(str(out))} (0600); where the hive runs, in a checkout of the workspace: "
            f"subhive join --creds {escape(str(out))}"
        )


def join_command(
    *,
    creds: Annotated[
        Path, typer.Option("--creds", help="A file from `subhive creds HIVE --out FILE`.", show_default=False)
    ],
    nats_ca: Annotated[
        Path | None,
        typer.Option(
            "--nats-ca", help="The CA of NATS servers that speak TLS (else SUBHIVE_NATS_CA).", show_default=False
        ),
    ] = None,
    root: Annotated[
        str | None,
        typer.Option("--root", help="The root's address, instead of the one the credentials name.", show_default=False),
    ] = None,
    root_ca: Annotated[
        Path | None,
        typer.Option(
            "--root-ca",
            help="The CA of a root (and providers) that serve TLS, instead of the one the credentials bring.",
            show_default=False,
        ),
    ] = None,
    advertise: Annotated[
        str | None,
        typer.Option(
            "--advertise",
            help="The host others dial for this hive's gRPC servers (with [grpc] listen on every interface).",
            show_default=False,
        ),
    ] = None,
    workspace: WorkspaceOption = Path("."),
) -> None:
    """Run one hive here, in the foreground, joining a tree that runs elsewhere: it connects to the NATS
    servers and the root the credentials name, and shares the hive's requests and events with any other
    process of it. SIGTERM stops it cleanly (exit 0); Ctrl-C too (exit 130).

    Example: subhive join --creds backend.creds --advertise backend
    """
    import asyncio
    import os
    import signal

    from .._net import check_advertise
    from ..up import HiveCredentials, join
    from ..workspace import find_root, open_workspace

    credentials = HiveCredentials.read(creds)
    ws = find_root(workspace)
    err_console.print(f"joining as {escape(credentials.hive)} on {escape(', '.join(credentials.nats))}")
    grpc = open_workspace(ws).config.grpc
    if advertise is not None:
        check_advertise(
            advertise, grpc.listen, listen_hint="listen beyond loopback: [grpc] listen with tls_cert, tls_key and ca"
        )
    if grpc.is_set:  # say where its gRPC servers will be dialled: a wrong host registers an address no one reaches
        err_console.print(
            f"its gRPC servers: on {escape(grpc.listen)}, dialled as {escape(advertise or grpc.host)}"
            + (" (TLS)" if grpc.tls else "")
            + ("" if advertise else "; --advertise HOST names this machine")
        )
    ca = nats_ca or (Path(os.environ["SUBHIVE_NATS_CA"]) if os.environ.get("SUBHIVE_NATS_CA") else None)
    if root_ca is not None and not root_ca.is_file():
        raise InputError(
            f"no CA file at {root_ca}",
            code="up.creds_missing",
            location=Location(file=str(root_ca)),
            hint="give the PEM certificate that signed the root's (or leave --root-ca out: the credentials bring it)",
        )
    stopped_by = asyncio.run(join(ws, credentials, tls_ca=ca, root=root, root_ca=root_ca, advertise=advertise))
    err_console.print(f"{escape(credentials.hive)} left the tree")
    if stopped_by == signal.SIGINT:
        raise typer.Exit(130)
