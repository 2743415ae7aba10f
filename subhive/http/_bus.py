"""Routes over the running tree's NATS server, with the framework's credentials: boards and dead letters
(what ``subhive board`` and ``subhive deadletters`` do)."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

from fastapi import APIRouter, Body, Query
from fastapi import Path as PathParam
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field

from ..errors import SubhiveError
from ..root_hive import NotFound
from ._deps import PAGE_DEFAULT, PREFIX, Admin, Backend, Cursor, KeyCursor, Limit, Reader, Root, page, page_after
from ._models import (
    BoardEntry,
    BoardHistory,
    BoardOut,
    BrokenEntry,
    DeadLetterDetail,
    DeadLetterOut,
    Page,
    ReplayOut,
)
from ._openapi import errors

if TYPE_CHECKING:
    from nats.aio.client import Client

    from ..bus import DeadLetters
    from ..hive import KvBlackboard

__all__ = ["router"]

T = TypeVar("T")
router = APIRouter(prefix=PREFIX)
#: A hive's name as the bus allows it in subjects.
HIVE_PATTERN = r"^[a-z][a-z0-9_-]{0,62}$"
#: A blackboard key: tokens of letters, digits, "-", "_", "/", "=" separated by ".".
KEY_PATTERN = r"^[-/_=A-Za-z0-9]+(\.[-/_=A-Za-z0-9]+)*$"
LetterId = Annotated[
    str,
    PathParam(
        pattern=r"^((([a-z][a-z0-9_-]{0,62}|SUBHIVE_DLQ):)?[1-9][0-9]{0,17}|dlq-[a-z][a-z0-9_-]{0,62}-[!-~]{1,128})$",
        description="HIVE:SEQ as listed (backend:12), SEQ when one hive has it, or the dlq-HIVE-ID a sender got.",
    ),
]
HivePath = Annotated[str, PathParam(pattern=HIVE_PATTERN, description="The hive.")]


class ReplayIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    by: str = Field(default="", max_length=128, description="Who replays; recorded with the replay.")


async def _on_bus(backend: Backend, work: Callable[[Client], Awaitable[T]], *, code: str) -> T:
    """Connect as the framework, run ``work``, close; ``code`` (503) when the tree is not up."""
    endpoint = await asyncio.to_thread(backend.settings.bus)
    if endpoint is None:
        raise SubhiveError(
            "the workspace is not running, and boards and dead letters live in its NATS server",
            code=code,
            hint="start it: subhive up --detach",
        )
    nc = await endpoint.connect_once()
    try:
        return await work(nc)
    finally:
        await nc.close()


async def _board(backend: Backend, nc: Client, hive: str) -> KvBlackboard:
    from ..hive import BoardSchema, KvBlackboard
    from ..workspace import open_workspace

    ws = await asyncio.to_thread(open_workspace, backend.settings.workspace)
    manifest = ws.hives().hives.get(hive)
    if manifest is None:
        raise NotFound(f"no sub-hive {hive!r} in this workspace", code="board.unknown_hive", hint="GET /api/v1/hives")
    schema = BoardSchema.load(ws.hive_dir(hive) / manifest.blackboard_schema, hive=hive)
    return await KvBlackboard.open(nc.jetstream(), hive, schema)


def _entry(entry: Any) -> BoardEntry:
    return BoardEntry(
        key=entry.key,
        value=entry.value,
        revision=entry.revision,
        writer=entry.writer,
        depth=entry.depth,
        time=entry.time,
    )


def _broken(broken: Any) -> BrokenEntry:
    return BrokenEntry(
        key=broken.key, revision=broken.revision, writer=broken.writer or None, code=broken.code, reason=broken.reason
    )


@router.get("/boards/{hive}", tags=["boards"], responses=errors(401, 403, 404, 422, 503))
async def board(
    backend: Root, hive: HivePath, token: Reader, limit: Limit = PAGE_DEFAULT, cursor: KeyCursor = None
) -> BoardOut:
    """A running hive's blackboard: the latest value of each key (by key), with who wrote it. A page starts
    after the previous page's last key, so keys written or deleted meanwhile shift nothing."""
    from ..hive import BrokenValue

    async def read(nc: Client) -> BoardOut:
        kv = await _board(backend, nc, hive)
        keys, next_cursor = page_after(await kv.keys(), str, limit, cursor)
        entries, broken = [], []
        for key in keys:
            try:
                entry = await kv.get(key)
            except BrokenValue as exc:
                broken.append(_broken(exc))
                continue
            if entry is not None:
                entries.append(_entry(entry))
        return BoardOut(hive=hive, entries=Page[BoardEntry](items=entries, next_cursor=next_cursor), broken=broken)

    return await _on_bus(backend, read, code="board.not_running")


@router.get("/boards/{hive}/history", tags=["boards"], responses=errors(401, 403, 404, 422, 503))
async def board_history(
    backend: Root,
    hive: HivePath,
    *,
    token: Reader,
    key: Annotated[str, Query(pattern=KEY_PATTERN, max_length=512, description="The key, e.g. tasks.t1.")],
    limit: Limit = PAGE_DEFAULT,
    cursor: Cursor = None,
) -> BoardHistory:
    """Every revision of one key, oldest first, each with its writer."""
    from ..hive import Entry

    async def read(nc: Client) -> BoardHistory:
        kv = await _board(backend, nc, hive)
        history = await kv.revisions(key)  # a key that is no board key: blackboard.key_invalid (400)
        entries = [_entry(e) for e in history if isinstance(e, Entry)]
        items, next_cursor = page(entries, limit, cursor)
        return BoardHistory(
            hive=hive,
            key=key,
            revisions=Page[BoardEntry](items=items, next_cursor=next_cursor),
            broken=[_broken(b) for b in history if not isinstance(b, Entry)],
        )

    return await _on_bus(backend, read, code="board.not_running")


async def _letters(backend: Backend, work: Callable[[DeadLetters], Awaitable[T]]) -> T:
    import nats

    from ..bus import DeadLetters

    async def run(nc: Client) -> T:
        try:
            return await work(DeadLetters(nc))
        except nats.js.errors.NotFoundError:
            raise NotFound(
                "this server has no dead-letter streams",
                code="deadletter.unknown",
                hint="the framework creates them when hives start; nothing was dead-lettered",
            ) from None

    return await _on_bus(backend, run, code="deadletter.not_running")


#: Where each dead-letter stream's page ended: ``k`` then ``STREAM.SEQ`` pairs joined by ``~``. Reading
#: resumes there in every stream, so the last page of 10,000 letters costs what the first does.
LetterCursor = Annotated[
    str | None,
    Query(
        pattern=r"^k[A-Za-z0-9_-]+\.[0-9]{1,18}(~[A-Za-z0-9_-]+\.[0-9]{1,18})*$",  # a stream seq is below 2**63
        max_length=4000,
        description="The `next_cursor` of the previous page; omit it for the first.",
    ),
]


def _positions(cursor: str | None) -> dict[str, int]:
    if cursor is None:
        return {}
    return {stream: int(seq) for stream, seq in (part.rsplit(".", 1) for part in cursor[1:].split("~"))}


def _letter_cursor(positions: dict[str, int]) -> str:
    return "k" + "~".join(f"{stream}.{seq}" for stream, seq in sorted(positions.items()))


@router.get("/deadletters", tags=["dead letters"], responses=errors(401, 403, 422, 503))
async def list_dead_letters(
    backend: Root,
    token: Reader,
    hive: Annotated[str | None, Query(pattern=HIVE_PATTERN, description="Only this hive's.")] = None,
    limit: Limit = PAGE_DEFAULT,
    cursor: LetterCursor = None,
) -> Page[DeadLetterOut]:
    """Messages hives refused or failed to handle, oldest first (without their bytes)."""
    from ..bus import DeadLetters

    after = _positions(cursor)
    found = await _letters(backend, lambda dl: dl.list(hive, limit=limit + 1, after=after))
    shown = found[:limit]
    return Page[DeadLetterOut](
        items=[DeadLetterOut.model_validate(d.to_dict()) for d in shown],
        next_cursor=_letter_cursor(DeadLetters.positions(shown, after)) if len(found) > limit else None,
    )


@router.get("/deadletters/{letter_id}", tags=["dead letters"], responses=errors(401, 403, 404, 409, 422, 503))
async def get_dead_letter(backend: Root, letter_id: LetterId, token: Reader) -> DeadLetterDetail:
    """One dead letter: why it was refused, its original headers, and its exact bytes."""
    letter = await _letters(backend, lambda dl: dl.get(letter_id))
    return DeadLetterDetail.model_validate(
        {
            **letter.to_dict(),
            "data_base64": base64.b64encode(letter.data).decode(),
            "data_text": letter.data.decode("utf-8", "replace"),
        }
    )


@router.get(
    "/deadletters/{letter_id}/payload",
    tags=["dead letters"],
    response_class=Response,
    responses={
        **errors(401, 403, 404, 409, 422, 503),
        200: {"content": {"application/octet-stream": {}}, "description": "The exact bytes."},
    },
)
async def dead_letter_payload(backend: Root, letter_id: LetterId, token: Reader) -> Response:
    """The refused message's bytes, exactly as they were sent."""
    letter = await _letters(backend, lambda dl: dl.get(letter_id))
    return Response(letter.data, media_type="application/octet-stream")


@router.post("/deadletters/{letter_id}/replay", tags=["dead letters"], responses=errors(401, 403, 404, 409, 422, 503))
async def replay_dead_letter(
    backend: Root, letter_id: LetterId, token: Admin, request: Annotated[ReplayIn | None, Body()] = None
) -> ReplayOut:
    """Send it again, exact bytes, to the hive that kept it (where the lock lets it go); the replay is recorded."""
    from ..bus import ReplayRules
    from ..root_hive import Lock

    workspace = backend.settings.workspace
    rules = await asyncio.to_thread(lambda: ReplayRules.from_lock(Lock.load(workspace), workspace))
    by = (request.by if request is not None else "") or "admin"
    said = await _letters(backend, lambda dl: dl.replay(letter_id, rules=rules, by=by))
    return ReplayOut(id=letter_id, result=said, by=by)
