"""What a failing hive leaves for a human: its traceback and file:line in its own log, and failure reports
(``up.hive_failed``, ``hive.crashed``) that quote the latest run's last lines, never an older run's."""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path

from subhive.up import UpLayout

from ._tree import assert_clean_error, events, subhive, tail, up, wait_for

#: A knowledge source that raises on every task, on a line the test can find.
RAISING_SOURCE = """

class Exploding:
    name = "exploding"
    triggers = ("tasks.*",)
    priority = 1

    async def activate(self, entry, blackboard):
        raise ValueError("no plan for " + entry.key)  # EXPLODES HERE


SOURCES = (*SOURCES, Exploding())
"""


def test_a_start_failure_quotes_the_latest_run_not_an_older_one(one_hive_workspace: Path) -> None:
    workspace = one_hive_workspace
    log = UpLayout(workspace).log_file("db")
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("".join(f"OLD RUN line {i}\n" for i in range(20)))  # what an earlier run left
    # A run that says little (an error line and a hint): an older run's lines must not fill the tail.
    (workspace / "subhives" / "db" / "blackboard.schema.json").write_text("{ not json")

    ran = up(workspace)

    assert_clean_error(ran, 2, "up.hive_failed")
    assert "blackboard.schema.json" in ran.err
    assert "OLD RUN" not in ran.err


def test_a_knowledge_module_that_fails_to_import_leaves_its_traceback_in_the_log(one_hive_workspace: Path) -> None:
    workspace = one_hive_workspace
    module = workspace / "subhives" / "db" / "db_hive" / "knowledge.py"
    module.write_text(module.read_text() + "\nraise RuntimeError('broken in this run')\n")

    ran = up(workspace)

    assert_clean_error(ran, 2, "up.hive_failed")
    assert "broken in this run" in ran.err
    text = UpLayout(workspace).log_file("db").read_text()
    line = next(i for i, t in enumerate(module.read_text().splitlines(), 1) if "broken in this run" in t)
    assert "Traceback (most recent call last)" in text
    assert f'File "{module}", line {line}' in text


def test_a_knowledge_source_that_raises_is_logged_with_traceback_and_file_line(one_hive_workspace: Path) -> None:
    workspace = one_hive_workspace
    module = workspace / "subhives" / "db" / "db_hive" / "knowledge.py"
    module.write_text(module.read_text() + RAISING_SOURCE)
    line = next(i for i, t in enumerate(module.read_text().splitlines(), 1) if "EXPLODES HERE" in t)
    ran = up(workspace)
    assert ran.code == 0, ran

    put = subhive(workspace, "board", "put", "db", "tasks.t1", json.dumps({"title": "Ship", "status": "open"}))
    assert put.code == 0, put

    log = UpLayout(workspace).log_file("db")
    text = wait_for(
        lambda: t if "EXPLODES HERE" in (t := log.read_text()) else None,
        "the failure in the hive's log",
        context=lambda: tail(log),
    )
    assert re.search(
        rf"knowledge source exploding failed on tasks\.t1 at {re.escape(str(module))}:{line}: "
        r"ValueError: no plan for tasks\.t1",
        text,
    ), text
    assert "Traceback (most recent call last)" in text


def test_a_crash_report_quotes_the_run_that_crashed(one_hive_workspace: Path) -> None:
    workspace = one_hive_workspace
    ran = up(workspace)
    assert ran.code == 0, ran
    log = UpLayout(workspace).log_file("db")
    with log.open("a") as handle:  # as if the hive said this last before it died
        handle.write("LAST WORDS of the crashed run\n")
    pid = json.loads(UpLayout(workspace).supervisor_file.read_text())["hives"]["db"]["pid"]
    os.kill(pid, signal.SIGKILL)
    crashed = wait_for(
        lambda: next((e for e in events(workspace) if e["event"] == "hive.crashed"), None), "the crash report"
    )
    assert "LAST WORDS of the crashed run" in crashed["message"]
    assert "LAST WORDS" in crashed["tail"]
