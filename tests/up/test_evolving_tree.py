"""A running tree that evolves: the notes workspace (examples/notes) with a second consumer, ``archive``, that
stays on notes_api ^1 while ``ui`` moves to ^2. The provider adds major 2 (a breaking proposal, approved),
publishes its event on both majors, and requests and events keep flowing to both: nothing is lost, no dead
letter, and no hive restarts more than once. One ``up`` for the whole story (each costs seconds).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kit import copy_example

from ._tree import events, subhive, tail, tear_down, up, wait_for

WAIT = 60.0


@pytest.fixture
def notes_with_two_consumers(tmp_path: Path) -> Iterator[Path]:
    """examples/notes, plus ``archive``: the ui hive's twin under another name, a second consumer of ^1."""
    workspace = copy_example("notes", tmp_path, accepted=False)
    ui, archive = workspace / "subhives" / "ui", workspace / "subhives" / "archive"
    shutil.copytree(ui, archive)
    (archive / "ui_hive").rename(archive / "archive_hive")
    _edit(
        archive / "subhive.toml",
        ('name = "ui"', 'name = "archive"'),
        ('kind = "ui"', 'kind = "custom"'),
        ("ui_hive.knowledge", "archive_hive.knowledge"),
    )
    _edit(archive / "archive_hive" / "knowledge.py", ("stubs.ui.", "stubs.archive."))
    try:
        yield workspace
    finally:
        tear_down(workspace)


def _edit(path: Path, *replacements: tuple[str, str]) -> None:
    text = path.read_text(encoding="utf-8")
    for old, new in replacements:
        assert old in text, (path, old)
        text = text.replace(old, new)
    path.write_text(text, encoding="utf-8")


def _json(workspace: Path, *args: str) -> Any:
    ran = subhive(workspace, *args, "--format", "json")
    assert ran.code in (0, 1), ran
    return json.loads(ran.out)


def _board(workspace: Path, hive: str, prefix: str) -> dict[str, Any]:
    entries = _json(workspace, "board", "show", hive)["entries"]
    return {e["key"]: e["value"] for e in entries if e["key"].startswith(prefix)}


def _put(workspace: Path, hive: str, key: str, value: dict[str, str]) -> None:
    ran = subhive(workspace, "board", "put", hive, key, json.dumps(value))
    assert ran.code == 0, ran


def _followed(workspace: Path, after: int) -> dict[str, Any] | None:
    """The first ``lock.followed`` after the ``after``-th progress line that restarted a hive, once there is one
    (a proposal that waits for approval is followed too, and restarts nothing)."""
    return next((e for e in events(workspace)[after:] if e["event"] == "lock.followed" and e["restarted"]), None)


def _context(workspace: Path) -> str:
    lines = "\n".join(json.dumps(e) for e in events(workspace)[-25:])
    return (
        lines
        + "\n"
        + "\n".join(tail(workspace / ".subhive" / "logs" / f"{h}.log", 15) for h in ("supervisor", "backend", "ui"))
    )


# The provider publishes note_published on each major it serves, each with that major's stubs (decision 0033).
PUBLISH_BOTH = """
        await NotesApiEvents(ctx.transport).note_published(NotePublished(
            note_id=entry.value["note_id"], text=text, author=note.value["author"], words=len(text.split())))
        await NotesApiEventsV2(ctx.transport).note_published(NotePublishedV2(
            note_id=entry.value["note_id"], text=text, author=note.value["author"], words=len(text.split()),
            title=" ".join(text.split()[:3])))
"""


def test_a_consumer_moves_to_a_new_major_while_both_majors_keep_flowing(notes_with_two_consumers: Path) -> None:
    ws = notes_with_two_consumers
    assert up(ws).code == 0, _context(ws)

    _put(ws, "ui", "drafts.one", {"text": "Before any change", "author": "ada"})
    wait_for(
        lambda: len(_board(ws, "archive", "feed.")) == 1 and len(_board(ws, "ui", "feed.")) == 1,
        "the first note in both feeds",
        WAIT,
        context=lambda: _context(ws),
    )

    # The provider adds major 2: its code publishes on both majors, then the new version is proposed and approved.
    knowledge = ws / "subhives" / "backend" / "backend_hive" / "knowledge.py"
    _edit(
        knowledge,
        (
            "from stubs.backend.notes_api_v1.models import NotePublished\n",
            "from stubs.backend.notes_api_v1.models import NotePublished\n"
            "from stubs.backend.notes_api_v2 import NotesApiEvents as NotesApiEventsV2\n"
            "from stubs.backend.notes_api_v2.models import NotePublished as NotePublishedV2\n",
        ),
        (
            """
        await NotesApiEvents(ctx.transport).note_published(
            NotePublished(
                note_id=entry.value["note_id"], text=text, author=note.value["author"], words=len(text.split())
            )
        )
""",
            PUBLISH_BOTH,
        ),
    )
    mark = len(events(ws))
    shutil.copytree(ws / "changes" / "notes_api" / "2.0.0", ws / "contracts" / "notes_api" / "2.0.0")
    pending = wait_for(
        lambda: [a for a in _json(ws, "approvals", "list")["approvals"] if a["contract"] == "notes_api"],
        "up to propose notes_api 2.0.0",
        WAIT,
        context=lambda: _context(ws),
    )
    assert subhive(ws, "approvals", "approve", pending[0]["id"]).code == 0
    followed = wait_for(
        lambda: _followed(ws, mark), "the tree to follow the approval", WAIT, context=lambda: _context(ws)
    )
    assert followed["restarted"] == ["backend"], followed

    # The consumer moves to ^2: code first, then its manifest; up re-registers it and restarts the ui only.
    _edit(
        ws / "subhives" / "ui" / "ui_hive" / "knowledge.py",
        ("notes_api_v1", "notes_api_v2"),
        ("CreateNoteInput(**entry.value)", "CreateNoteInput(**entry.value, title=entry.value['text'][:20])"),
    )
    mark = len(events(ws))
    _edit(ws / "subhives" / "ui" / "subhive.toml", ('notes_api = "^1"', 'notes_api = "^2"'))
    followed = wait_for(
        lambda: _followed(ws, mark), "the tree to follow the ui's manifest", WAIT, context=lambda: _context(ws)
    )
    assert followed["restarted"] == ["ui"], followed
    assert (ws / "stubs" / "ui" / "notes_api_v2").is_dir()
    assert not (ws / "stubs" / "ui" / "notes_api_v1").exists()  # the lock let it go with the re-registration
    assert (ws / "stubs" / "archive" / "notes_api_v1").is_dir()
    contracts = {
        v["version"]: v["consumers"]
        for c in _json(ws, "contract", "list")["contracts"]
        if c["name"] == "notes_api"
        for v in c["versions"]
    }
    assert set(contracts["1.0.0"]) == {"archive"}, contracts
    assert set(contracts["2.0.0"]) == {"ui"}, contracts

    # Requests on both majors; each note's event reaches the consumers of both majors.
    _put(ws, "ui", "drafts.two", {"text": "Sent over major two", "author": "lin"})
    _put(ws, "archive", "drafts.three", {"text": "Sent over major one", "author": "ada"})
    wait_for(
        lambda: len(_board(ws, "ui", "feed.")) == 3 and len(_board(ws, "archive", "feed.")) == 3,
        "both later notes in both feeds",
        WAIT,
        context=lambda: _context(ws),
    )
    assert set(_board(ws, "ui", "sent.")) == {"sent.one", "sent.two"}
    assert set(_board(ws, "archive", "sent.")) == {"sent.three"}

    status = _json(ws, "status")
    hives = status["runtime"]["hives"]
    assert {name: info["health"] for name, info in hives.items()} == dict.fromkeys(
        ("archive", "backend", "db", "ui"), "ready"
    ), hives
    assert all(info["dead_letters"] == 0 for info in hives.values()), hives
    assert not [w for w in status["warnings"] if w["code"] == "event.no_publisher"], status["warnings"]
    said = events(ws)
    assert not [e for e in said if e["event"] in ("hive.crashed", "hive.stopped", "lock.failed", "tree.refused")], (
        _context(ws)
    )
    reloads = [e["hive"] for e in said if e["event"] == "hive.reloaded"]
    assert sorted(reloads) == ["backend", "ui"], reloads  # each once; archive and db never
