"""Knowledge sources of sub-hive ui: people write drafts; the experts turn them into published notes.

``Submitter`` wakes on ``drafts.<name>`` and sends it to the backend (contract notes_api, the generated
client over NATS), noting the answer as ``sent.<name>``. ``Feed`` wakes on the backend's ``note_published``
event and keeps the note as ``feed.<note id>``.
"""

from __future__ import annotations

from collections.abc import Sequence

from stubs.ui.notes_api_v1 import NotesApiClient
from stubs.ui.notes_api_v1.models import CreateNoteInput

from subhive.hive import Entry, HiveContext, KnowledgeSource, Write


class Submitter:
    name = "submitter"
    triggers = ("drafts.*",)
    priority = 10

    async def activate(self, entry: Entry, ctx: HiveContext) -> Sequence[Write]:
        accepted = await NotesApiClient(ctx.transport).create_note(CreateNoteInput(**entry.value))
        answer = accepted.model_dump(mode="json")
        return [Write(f"sent.{entry.key.split('.', 1)[1]}", {"note_id": answer["note_id"]})]


class Feed:
    name = "feed"
    events = ("notes_api.note_published",)
    priority = 5

    async def activate(self, entry: Entry, ctx: HiveContext) -> Sequence[Write]:
        note = entry.value
        return [
            Write(f"feed.{note['note_id']}", {"text": note["text"], "author": note["author"], "words": note["words"]})
        ]


#: The knowledge sources the runtime activates (subhive.toml names them: [knowledge] sources).
SOURCES: tuple[KnowledgeSource, ...] = (Submitter(), Feed())
