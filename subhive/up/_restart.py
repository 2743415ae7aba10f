"""``subhive restart HIVE``: one hive of a running tree restarted by its supervisor, on request. The request is
a file, not a signal: it names the hive, survives a busy supervisor, and needs no port.
See docs/up.md#subhive-restart-hive.
"""

from __future__ import annotations

import contextlib
import difflib
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._files import read_json, write_json
from ..errors import InputError, Location, SubhiveError
from ._control import running_supervisor
from ._layout import UpLayout, pid_alive
from ._progress import tail_progress

__all__ = ["RestartFailed", "request_restart", "take_requests"]

#: What the supervisor reports about a request, once.
ANSWERS = frozenset({"hive.ready", "hive.restart_failed"})


class RestartFailed(SubhiveError):
    """The hive was restarted but did not come back ready (its log's last lines say why)."""

    default_code = "restart.failed"
    exit_code = 1


def requests_dir(workspace: Path) -> Path:
    """Where the CLI drops request files; the supervisor's watch loop takes them (:func:`take_requests`),
    restarts the hive (SIGTERM, then a fresh process on the same credentials) and reports one of
    :data:`ANSWERS` with the request's id in ``progress.jsonl``, which the CLI follows."""
    return UpLayout(workspace).up_dir / "requests"


def request_restart(
    workspace: Path, hive: str, *, on_event: Callable[[dict[str, Any]], None], timeout: float = 120.0
) -> dict[str, Any]:
    """Ask the running supervisor to restart ``hive`` and wait until it is ready again; return that event.

    Raises :class:`InputError` when the workspace is not up (``restart.not_up``), still starting
    (``restart.starting``) or has no such hive (``restart.unknown_hive``), and :class:`RestartFailed` when
    the hive does not come back (``restart.failed``, with its log's last lines).
    """
    layout = UpLayout(workspace)
    record = running_supervisor(workspace)
    if record is None:
        raise InputError(
            f"the workspace {workspace} is not up",
            code="restart.not_up",
            hint="subhive up starts it; restart acts on a running tree",
        )
    hives = sorted(record.get("hives") or {})
    if hive not in hives:
        close = difflib.get_close_matches(hive, hives, n=1)
        raise InputError(
            f"no hive {hive!r} runs in this workspace",
            code="restart.unknown_hive",
            location=Location(file=str(layout.supervisor_file)),
            hint=(f"did you mean {close[0]!r}? " if close else "") + f"running hives: {', '.join(hives) or 'none'}",
        )
    if record.get("state") != "ready":
        raise InputError(
            f"the tree is still {record.get('state') or 'starting'}",
            code="restart.starting",
            hint="wait until subhive up says ready, then restart",
        )
    request = f"{hive}-{secrets.token_hex(4)}"
    progress = layout.progress_file
    position = progress.stat().st_size if progress.exists() else 0
    write_json(requests_dir(workspace) / f"{request}.json", {"action": "restart", "hive": hive, "id": request})

    supervisor = record.get("pid")
    answer = _answer(
        layout.progress_file, position, hive, request, on_event, alive=lambda: pid_alive(supervisor), timeout=timeout
    )
    if answer is None:
        with contextlib.suppress(OSError):
            (requests_dir(workspace) / f"{request}.json").unlink()
        raise RestartFailed(
            f"no answer from the supervisor about {hive} within {timeout:g} s",
            code="restart.timeout",
            hint=f"see {layout.log_file('supervisor')} and subhive logs {hive}",
        )
    if answer["event"] != "hive.ready":
        raise RestartFailed(
            str(answer.get("message", f"{hive} did not come back")),
            location=Location(file=str(layout.log_file(hive))),
            hint=f"fix what its log says (subhive logs {hive}); the supervisor keeps restarting it",
        )
    return answer


def _answer(
    progress: Path,
    position: int,
    hive: str,
    request: str,
    on_event: Callable[[dict[str, Any]], None],
    *,
    alive: Callable[[], bool],
    timeout: float,
) -> dict[str, Any] | None:
    """The supervisor's answer to ``request`` (None when it went away or ``timeout`` passed), relaying the
    hive's events written after ``position``."""

    def relay(event: dict[str, Any]) -> None:
        if event.get("hive") == hive:
            on_event(event)

    def answered(event: dict[str, Any]) -> bool:
        return event.get("event") == "stopped" or (event.get("request") == request and event.get("event") in ANSWERS)

    answer = tail_progress(progress, relay, answered, position=position, alive=alive, timeout=timeout)
    if answer is not None and answer.get("event") == "stopped":
        return {"event": "hive.restart_failed", "message": "the tree was stopped before the hive was back"}
    return answer


def take_requests(workspace: Path) -> list[dict[str, Any]]:
    """The pending requests, oldest first, removed from disk (the supervisor's side)."""
    directory = requests_dir(workspace)
    if not directory.is_dir():
        return []
    taken: list[dict[str, Any]] = []
    for path in sorted(directory.glob("*.json"), key=lambda p: p.stat().st_mtime_ns):
        request = read_json(path)
        with contextlib.suppress(OSError):
            path.unlink()
        if request is not None:
            taken.append(request)
    return taken
