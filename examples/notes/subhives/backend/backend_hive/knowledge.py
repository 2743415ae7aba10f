"""Knowledge sources of sub-hive backend: the notes API.

``Intake`` answers ``notes_api.create_note``: it puts the note on the blackboard as received and replies at
once. ``Keeper`` wakes on that entry and stores the note in the db hive over gRPC (contract notes_store).
``Announcer`` wakes on the db hive's ``stored`` event and publishes ``note_published`` to every consumer.
``Lister`` answers ``notes_api.list_notes`` from the db hive's store.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence

from stubs.backend.notes_api_v1 import NotesApiEvents
from stubs.backend.notes_api_v1.models import NotePublished
from stubs.backend.notes_store_v1.pb import notes_store_pb2 as pb
from stubs.backend.notes_store_v1.pb import notes_store_pb2_grpc as pb_grpc

from subhive.hive import Entry, HiveContext, KnowledgeSource, Reply, Write


class Intake:
    name = "intake"
    operations = ("notes_api.create_note",)
    priority = 10  # a waiting caller comes before background work

    async def activate(self, entry: Entry, ctx: HiveContext) -> Sequence[Write | Reply]:
        note_id = f"n-{secrets.token_hex(4)}"
        note = {"text": entry.value["text"], "author": entry.value["author"], "status": "received"}
        return [Write(f"notes.{note_id}", note), Reply({"note_id": note_id})]


class Keeper:
    name = "keeper"
    triggers = ("notes.*",)
    priority = 5

    async def activate(self, entry: Entry, ctx: HiveContext) -> Sequence[Write]:
        if entry.value["status"] != "received":
            return []
        store = pb_grpc.NotesStoreStub(await ctx.channel("notes_store", 1))
        stored = await store.Put(
            pb.Note(id=entry.key.split(".", 1)[1], text=entry.value["text"], author=entry.value["author"])
        )
        return [
            Write(
                entry.key,
                {**entry.value, "status": "stored", "revision": stored.revision},
                expected_revision=entry.revision,
            )
        ]


class Announcer:
    name = "announcer"
    events = ("notes_store.stored",)
    priority = 5

    async def activate(self, entry: Entry, ctx: HiveContext) -> Sequence[Write]:
        key = f"notes.{entry.value['note_id']}"
        note = await ctx.get(key)
        if note is None:
            raise LookupError(f"the db stored {key}, which this hive never received")
        text = note.value["text"]
        await NotesApiEvents(ctx.transport).note_published(
            NotePublished(
                note_id=entry.value["note_id"], text=text, author=note.value["author"], words=len(text.split())
            )
        )
        return []


class Lister:
    name = "lister"
    operations = ("notes_api.list_notes",)
    priority = 10

    async def activate(self, entry: Entry, ctx: HiveContext) -> Sequence[Reply]:
        store = pb_grpc.NotesStoreStub(await ctx.channel("notes_store", 1))
        listed = await store.List(pb.ListRequest())
        return [Reply({"notes": [{"note_id": n.id, "text": n.text, "author": n.author} for n in listed.notes]})]


#: The knowledge sources the runtime activates (subhive.toml names them: [knowledge] sources).
SOURCES: tuple[KnowledgeSource, ...] = (Intake(), Keeper(), Announcer(), Lister())
