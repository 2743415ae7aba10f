"""Knowledge sources of sub-hive db: it keeps the notes.

The store itself is a gRPC service (contract notes_store, served through ``GRPC`` below): ``Put`` writes the
note to the blackboard as ``records.<id>`` and announces it with the ``stored`` event. The ``Tally`` expert
keeps ``stats.records`` up to date with a compare-and-set write, so two notes stored at once both count.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import grpc
from stubs.db.notes_store_v1 import NotesStoreEvents
from stubs.db.notes_store_v1.models import StoredEvent
from stubs.db.notes_store_v1.pb import notes_store_pb2 as pb
from stubs.db.notes_store_v1.pb import notes_store_pb2_grpc as pb_grpc

from subhive.hive import Blackboard, Entry, GrpcService, HiveContext, KnowledgeSource, Write


def words_in(text: str) -> int:
    return len(text.split())


class Tally:
    """Counts the stored notes and their words (``stats.records``) whenever a record is written."""

    name = "tally"
    triggers = ("records.*",)
    priority = 5

    async def activate(self, entry: Entry, blackboard: Blackboard) -> Sequence[Write]:
        current = await blackboard.get("stats.records")
        stats = current.value if current else {"count": 0, "words": 0}
        counted = {"count": stats["count"] + 1, "words": stats["words"] + words_in(entry.value["text"])}
        # Compare-and-set: if another activation counted meanwhile, the controller runs this one again.
        return [Write("stats.records", counted, expected_revision=current.revision if current else 0)]


class Store(pb_grpc.NotesStoreServicer):
    """The notes_store gRPC service, kept on this hive's blackboard."""

    def __init__(self, ctx: HiveContext) -> None:
        self.ctx = ctx
        self.events = NotesStoreEvents(ctx.transport)

    async def Put(self, request: pb.Note, context: Any) -> pb.Stored:
        revision = await self.ctx.board.put(
            f"records.{request.id}", {"text": request.text, "author": request.author}, writer="store"
        )
        await self.events.stored(StoredEvent(note_id=request.id, revision=revision))
        return pb.Stored(id=request.id, revision=revision)

    async def Get(self, request: pb.NoteRef, context: Any) -> pb.Note:
        entry = await self.ctx.get(f"records.{request.id}")
        if entry is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"no note {request.id}")
        return pb.Note(id=request.id, **entry.value)

    async def List(self, request: pb.ListRequest, context: Any) -> pb.NoteList:
        records = await self.ctx.board.snapshot()
        ordered = sorted((e for k, e in records.items() if k.startswith("records.")), key=lambda e: e.revision)
        return pb.NoteList(notes=[pb.Note(id=e.key.split(".", 1)[1], **e.value) for e in ordered])


def GRPC(ctx: HiveContext) -> list[GrpcService]:
    return [GrpcService("notes_store", 1, pb_grpc.add_NotesStoreServicer_to_server, Store(ctx))]


#: The knowledge sources the runtime activates (subhive.toml names them: [knowledge] sources).
SOURCES: tuple[KnowledgeSource, ...] = (Tally(),)
