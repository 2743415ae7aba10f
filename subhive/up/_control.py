"""What the CLI does with a workspace's running tree: start it, follow it, stop it, ask how it is (docs/up.md)."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import Location, Problem, SubhiveError
from ._layout import UpLayout, pid_alive, process_start, read_json, workspace_id, write_json
from ._progress import tail_progress

if TYPE_CHECKING:
    from ..bus import BusEndpoint

__all__ = [
    "DownReport",
    "UpFailed",
    "down",
    "follow",
    "framework_endpoint",
    "lost_supervisor",
    "recorded_processes",
    "running_supervisor",
    "runtime_status",
    "start",
]

#: Events after which ``start`` stops following.
FINAL = frozenset({"ready", "failed", "stopped"})
#: A heartbeat older than this means the hive stopped answering (an idle hive writes one every 5 s).
STALE_AFTER = 15.0


class UpFailed(SubhiveError):
    """``subhive up`` could not bring the workspace up; nothing it started is left running. ``problems``
    lists every problem the supervisor found (every manifest's, at once), or this error's own."""

    default_code = "up.failed"
    exit_code = 1

    def __init__(
        self, message: str, *, code: str | None = None, hint: str | None = None, problems: Iterable[Problem] = ()
    ) -> None:
        super().__init__(message, code=code, hint=hint)
        self._found = tuple(problems)

    @property
    def problems(self) -> tuple[Problem, ...]:
        return self._found or super().problems


def running_supervisor(workspace: Path) -> dict[str, Any] | None:
    """The record of this workspace's live supervisor, or None."""
    record = read_json(UpLayout(workspace).supervisor_file)
    if record and record.get("state") != "stopped" and _ours(record, record.get("pid"), workspace):
        return record
    return None


def start(
    workspace: Path,
    *,
    on_event: Callable[[dict[str, Any]], None],
    root_port: int = 0,
    nats_port: int = 0,
    ready_timeout: float = 120.0,
) -> dict[str, Any]:
    """Start the supervisor in the background and relay its progress until everything is ready.

    Returns the ``ready`` event; raises UpFailed (after the supervisor cleaned up) when start-up failed.
    """
    layout = UpLayout(workspace)
    layout.up_dir.mkdir(parents=True, exist_ok=True)
    layout.logs_dir.mkdir(parents=True, exist_ok=True)
    # One `up` at a time: from the check below until the new supervisor has recorded itself, a concurrent `up`
    # waits here, and then finds it running (without this, both started a tree, on the same progress file).
    with open(layout.up_dir / ".start.lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        record = running_supervisor(workspace)
        if record is not None:
            raise SubhiveError(
                f"this workspace is already up (supervisor pid {record['pid']})",
                code="up.already_running",
                hint="subhive status shows it; subhive down stops it",
            )
        layout.progress_file.unlink(missing_ok=True)
        argv = [
            sys.executable,
            "-m",
            "subhive.up",
            "--workspace",
            str(workspace),
            "--root-port",
            str(root_port),
            "--nats-port",
            str(nats_port),
            "--ready-timeout",
            str(ready_timeout),
        ]
        with open(layout.log_file("supervisor"), "ab") as out:
            process = subprocess.Popen(
                argv,
                cwd=workspace,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            deadline = time.monotonic() + 30
            while (
                process.poll() is None
                and time.monotonic() < deadline
                and (read_json(layout.supervisor_file) or {}).get("pid") != process.pid
            ):
                time.sleep(0.02)
        except KeyboardInterrupt:
            _abandon(workspace, process)
            raise
    try:
        # The supervisor bounds each step itself (the hives by ready_timeout); this only guards against one that
        # hangs. It may work for minutes (thousands of consumers on a cluster) while it reports progress.
        last = follow(workspace, on_event, until=FINAL, alive=lambda: process.poll() is None, quiet=ready_timeout + 120)
    except KeyboardInterrupt:
        _abandon(workspace, process)
        raise
    if last is None or last["event"] != "ready":
        # The supervisor stops what it started before it exits: wait for that, so nothing is left behind.
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(30)
        if last is None:  # it went away without stopping its children (SIGKILL, OOM), or never answered
            down(workspace)
        message = last["message"] if last else f"the supervisor exited with code {process.poll()}"
        failure = UpFailed(
            f"subhive up failed: {message}",
            code=(last or {}).get("code") or "up.failed",
            hint=(last or {}).get("hint") or f"see {layout.log_file('supervisor')}",
            problems=[_problem(p) for p in (last or {}).get("problems") or [] if isinstance(p, dict)],
        )
        code = process.poll()
        # The supervisor's own: 2 for a wrong workspace or option; 2 too if a signal ended it (a negative code
        # is no exit status).
        failure.exit_code = code if code is not None and code > 0 else 2
        raise failure
    return last


def _problem(found: dict[str, Any]) -> Problem:
    """A problem as the supervisor reported it (``Problem.to_dict``), back into a Problem."""
    line = found.get("line")
    return Problem(
        str(found.get("code", "")),
        str(found.get("message", "")),
        Location(file=found.get("file"), line=line if isinstance(line, int) else None, pointer=found.get("pointer")),
        found.get("hint"),
    )


def _abandon(workspace: Path, process: subprocess.Popen[bytes]) -> None:
    """Ctrl-C reached only us: the supervisor has a session of its own. Stop it (it stops what it started)
    before giving up, or the whole tree would go on running with nobody following it."""
    process.terminate()
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(30)
    down(workspace)


def follow(
    workspace: Path,
    on_event: Callable[[dict[str, Any]], None],
    *,
    until: frozenset[str] = FINAL,
    alive: Callable[[], bool] | None = None,
    timeout: float | None = None,
    quiet: float | None = None,
    skip_existing: bool = False,
) -> dict[str, Any] | None:
    """Relay progress events as the supervisor appends them; return the first event in ``until`` (None when
    the supervisor went away first, ``timeout`` passed, or it said nothing for ``quiet`` seconds)."""
    path = UpLayout(workspace).progress_file
    position = path.stat().st_size if skip_existing and path.exists() else 0
    return tail_progress(
        path,
        on_event,
        lambda event: event.get("event") in until,
        position=position,
        alive=alive,
        timeout=timeout,
        quiet=quiet,
    )


@dataclass
class DownReport:
    """What ``down`` stopped: cleanly (``stopped``) or, because it did not stop in time, with SIGKILL."""

    was_running: bool
    stopped: list[str] = field(default_factory=list)
    killed: list[str] = field(default_factory=list)


def down(workspace: Path, *, timeout: float = 30.0) -> DownReport:
    """Stop the supervisor (which stops the hives, the root and NATS in order), then make sure every process
    it ever recorded is gone, killing what is not (a supervisor killed with SIGKILL leaves its children).

    >>> down(workspace).stopped  # doctest: +SKIP
    ['supervisor', 'db', 'root', 'nats']
    """
    layout = UpLayout(workspace)
    record = read_json(layout.supervisor_file)
    if record is None:
        return DownReport(was_running=False)

    def ours(pid: object) -> bool:
        return _ours(record, pid, workspace)

    report = DownReport(was_running=ours(record.get("pid")) and record.get("state") != "stopped")
    processes = _recorded(record)
    pid = record.get("pid")
    if isinstance(pid, int) and ours(pid) and _signal(pid, signal.SIGTERM):
        deadline = time.monotonic() + timeout
        while ours(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
    for name, child in processes:
        if ours(child) and _signal(child, signal.SIGKILL):
            report.killed.append(name)
        else:
            report.stopped.append(name)
    # Killed processes go within milliseconds; once they have, the record says the tree is stopped, so status
    # no longer reports a lost supervisor for a tree that down has cleaned up.
    deadline = time.monotonic() + 5
    while any(ours(child) for _, child in processes) and time.monotonic() < deadline:
        time.sleep(0.02)
    latest = read_json(layout.supervisor_file) or record  # a supervisor that stopped itself wrote its own
    if not any(ours(child) for _, child in processes) and latest.get("state") != "stopped":
        write_json(layout.supervisor_file, {**latest, "state": "stopped"})
    return report


def recorded_processes(workspace: Path) -> dict[str, dict[str, Any]]:
    """Each process the last ``up`` recorded (``supervisor``, ``root``, ``nats``, each hive) with its pid and
    whether it still runs (``alive``); empty when the workspace was never up."""
    record = read_json(UpLayout(workspace).supervisor_file)
    if record is None:
        return {}
    return {name: {"pid": pid, "alive": _ours(record, pid, workspace)} for name, pid in _recorded(record)}


def lost_supervisor(workspace: Path) -> dict[str, Any] | None:
    """What a supervisor that died without stopping its tree (SIGKILL, OOM) left behind, or None: while a
    supervisor runs, and when the last one stopped its tree (and nothing of it runs).

    >>> lost_supervisor(workspace)  # doctest: +SKIP
    {'state': 'supervisor_lost', 'supervisor': 4242, 'running': {'db': 4260, 'nats': 4250, 'root': 4245}, ...}

    ``running`` are the recorded processes still alive, unsupervised: nothing restarts them, and ``subhive
    down`` is what stops them.
    """
    record = read_json(UpLayout(workspace).supervisor_file)
    if record is None or running_supervisor(workspace) is not None:
        return None
    running = {
        name: info["pid"]
        for name, info in recorded_processes(workspace).items()
        if name != "supervisor" and info["alive"]
    }
    if record.get("state") == "stopped" and not running:
        return None
    hint = (
        "subhive down stops them, then subhive up starts the tree again"
        if running
        else "nothing of it runs any more: subhive up starts the tree again"
    )
    return {
        "state": "supervisor_lost",
        "supervisor": record.get("pid"),
        "running": running,
        "root": record.get("root"),
        "nats": record.get("nats"),
        "hint": hint,
    }


def _recorded(record: dict[str, Any]) -> list[tuple[str, int]]:
    found = [
        ("supervisor", record.get("pid")),
        ("root", record.get("root_pid")),
        *(
            [(f"nats-n{i}", pid) for i, pid in enumerate(record["nats_pids"], start=1)]
            if isinstance(record.get("nats_pids"), list) and len(record["nats_pids"]) > 1
            else [("nats", record.get("nats_pid"))]
        ),
        *([("mocks", record["mocks_pid"])] if record.get("mocks_pid") else []),
    ]
    hives = [
        (name, info.get("pid")) for name, info in sorted((record.get("hives") or {}).items()) if isinstance(info, dict)
    ]
    # Processes of several hives each (decision 0117): their hives name the same pid, but one may run none now.
    hosts = record["hosts"] if isinstance(record.get("hosts"), dict) else {}
    found += hives + [(name, pid) for name, pid in sorted(hosts.items()) if pid not in {p for _, p in hives}]
    return [(name, pid) for name, pid in found if isinstance(pid, int) and not isinstance(pid, bool)]


def _ours(record: dict[str, Any], pid: object, workspace: Path) -> bool:
    """Whether ``pid`` is still the process ``record`` names, in this workspace: alive, started when the record
    says (the system may have given a dead child's pid to another program since), and recorded by a run of this
    workspace directory (a copy of a workspace copies its record, which names the original's processes)."""
    if not isinstance(pid, int) or not pid_alive(pid):
        return False
    recorded_at = record.get("workspace_id")
    if recorded_at is not None and recorded_at != workspace_id(workspace):
        return False
    if not os.path.isdir("/proc/self"):
        return recorded_at is not None  # no start times to compare without /proc: trust a record that is ours
    started = (record.get("starts") or {}).get(str(pid))
    return isinstance(started, int) and process_start(pid) == started


def _signal(pid: int, sig: signal.Signals) -> bool:
    """Send ``sig``; False when the process went away meanwhile or is not ours to signal."""
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def runtime_status(workspace: Path) -> dict[str, Any] | None:
    """Each running hive's health, message rates, blackboard size and dead-letter count; None when not up."""
    layout = UpLayout(workspace)
    record = running_supervisor(workspace)
    if record is None:
        return None
    dead, usage = _dead_letters(workspace)
    connected = _connections(record)
    hives: dict[str, Any] = {}
    now = time.time()
    for name, info in sorted((record.get("hives") or {}).items()):
        beat = read_json(layout.status_file(name)) or {}
        pid = info.get("pid")
        if info.get("elsewhere"):  # [up] elsewhere: processes of it run on other machines (its connections say)
            health = "elsewhere"
        elif not _ours(record, pid, workspace):
            # "stopped": it failed the same way on each start, so up stopped restarting it (its record says why).
            health = "stopped" if info.get("failed") else "restarting" if info.get("exits") else "down"
        elif record.get("state") == "starting" and beat.get("state") != "ready":
            health = "starting"
        elif beat.get("pid") != pid or now - _beat_time(layout.status_file(name), beat) > STALE_AFTER:
            health = "unresponsive"
        else:
            health = str(beat.get("state") or "unknown")
        bus = beat.get("bus") or {}
        hives[name] = {
            "health": health,
            "pid": pid,
            "restarts": info.get("restarts", 0),
            "rates": beat.get("rates", {}),
            "bus": bus,
            "blackboard": beat.get("blackboard", {}),
            "dead_letters": dead.get(name, 0),
            "dead_letter_stream": usage.get(name),
            # events it holds unacknowledged because its dead letters are full (decision 0023)
            "dead_letter_blocked": int(bus.get("dead_letter_blocked") or 0),
            "controller": beat.get("controller", {}),
            "endpoints": beat.get("endpoints", []),
            # its Prometheus endpoint (docs/observability.md#metrics)
            "metrics": beat.get("metrics"),
            "flows": beat.get("flows", {}),
            "contracts": beat.get("contracts", []),
            # Every process connected as this hive, wherever it runs: one started by up, and any that joined.
            "connections": connected.get(name, []),
        }
    return {
        "state": record.get("state"),
        "supervisor": record.get("pid"),
        "root": record.get("root"),
        "http": record.get("http") or None,
        "nats": record.get("nats"),
        "hives": hives,
        "dead_letter_warnings": [u["warning"] for _, u in sorted(usage.items()) if u.get("warning")]
        + [
            _blocked_warning(name, info["dead_letter_blocked"])
            for name, info in hives.items()
            if info["dead_letter_blocked"]
        ],
    }


def _beat_time(path: Path, beat: dict[str, Any]) -> float:
    """When the hive last said it is alive: what its heartbeat says, or later, when it touched the file (an idle
    hive touches it rather than write the same again: decision 0118)."""
    try:
        touched = path.stat().st_mtime
    except OSError:
        touched = 0.0
    return max(float(beat.get("updated") or 0), touched)


def _connections(record: dict[str, Any]) -> dict[str, list[str]]:
    """``ip:port`` of each client connection, by account (= hive), from every NATS node's ``/connz``; empty when
    the monitor does not answer (status then shows none rather than failing)."""
    import urllib.request

    found: dict[str, list[str]] = {}
    for url in record.get("nats_monitor") or []:
        try:
            with urllib.request.urlopen(f"{url}/connz?auth=true&limit=100000", timeout=1.0) as answer:
                data = json.loads(answer.read())
        except (OSError, ValueError):
            continue
        for conn in data.get("connections") or []:
            if isinstance(conn, dict) and conn.get("account"):
                found.setdefault(str(conn["account"]), []).append(f"{conn.get('ip')}:{conn.get('port')}")
    return {hive: sorted(addresses) for hive, addresses in found.items()}


def _blocked_warning(hive: str, held: int) -> str:
    from ..bus import EVENT_MAX_ACK_PENDING

    return (
        f"{hive} holds {held} event{'s' if held != 1 else ''} it could not dead-letter (its dead letters are "
        f"full): they come back later, and once {EVENT_MAX_ACK_PENDING} are held it receives no new events; "
        f"make room (`subhive deadletters list --hive {hive}`) or raise [dead_letters] max_bytes"
    )


def framework_endpoint(workspace: Path) -> BusEndpoint | None:
    """The running tree's NATS server with the framework's own credentials, or None when it is not up."""
    from ..bus import ADMIN_USER, BusEndpoint

    record = running_supervisor(workspace)
    seed = UpLayout(workspace).seed_file(ADMIN_USER)
    if record is None or not record.get("nats") or not seed.is_file():
        return None
    urls = [u for u in str(record["nats"]).split(",") if u]  # every node of a cluster
    ca = record.get("nats_ca")  # a cluster up joined whose certificates its own CA signed ([nats] ca)
    return BusEndpoint(urls, nkey_seed=seed, tls_ca=Path(ca) if ca else None)


def _dead_letters(workspace: Path) -> tuple[dict[str, int], dict[str, dict[str, Any]]]:
    """Dead letters per hive, and how full each hive's stream is, read with the framework's credentials."""
    endpoint = framework_endpoint(workspace)
    if endpoint is None:
        return {}, {}

    async def read() -> tuple[dict[str, int], dict[str, dict[str, Any]]]:
        from ..bus import DeadLetters

        nc = await endpoint.connect_once(timeout=3)
        try:
            letters = DeadLetters(nc)
            return await letters.counts(), {u.hive: u.to_dict() for u in await letters.usage()}
        finally:
            await nc.close()

    try:
        return asyncio.run(read())
    except Exception:  # status must still show the tree when NATS is busy or restarting
        return {}, {}
