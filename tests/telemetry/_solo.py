"""A one-hive workspace whose knowledge source marks each open task done: a task write wakes it twice (the task,
then its own mark), with one write in between."""

from __future__ import annotations

import textwrap
from pathlib import Path

from subhive.workspace import Kind, init_workspace, new_subhive

MARKS = '''
from subhive.hive import Write


class Marks:
    """Marks each open task done."""

    name = "marks"
    triggers = ("tasks.*",)
    priority = 1

    async def activate(self, entry, blackboard):
        if entry.value.get("status") == "done":
            return []
        return [Write(entry.key, {**entry.value, "status": "done"})]


SOURCES = (Marks(),)
'''


def solo_workspace(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    init_workspace(workspace)
    new_subhive("solo", Kind.custom, start=workspace)
    (workspace / "subhives" / "solo" / "solo_hive" / "knowledge.py").write_text(textwrap.dedent(MARKS))
    return workspace
