"""Routes: agents' turns and their frames, and the live event stream (Server-Sent Events, resumable)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Depends, Header, Query
from fastapi.responses import StreamingResponse

from ..root_hive import Conflict, NotFound
from ._deps import PAGE_DEFAULT, PREFIX, Backend, Cursor, Limit, Root, page
from ._models import FrameOut, Page, TurnOut
from ._openapi import errors

__all__ = ["router"]

router = APIRouter(prefix=PREFIX)


@router.get("/turns", tags=["agents"], responses=errors(422))
async def list_turns(
    backend: Root, hive: str | None = None, limit: Limit = PAGE_DEFAULT, cursor: Cursor = None
) -> Page[TurnOut]:
    """Agents' turns in the order they started, from their steps on the event stream."""
    turns = (await backend.turns.attach(backend.server)).turns(hive)
    items, next_cursor = page(turns, limit, cursor)
    return Page[TurnOut](items=items, next_cursor=next_cursor)


@router.get("/turns/frames", tags=["agents"], responses=errors(404, 422))
async def turn_frames(
    backend: Root,
    hive: Annotated[str, Query(description="The agent's hive.")],
    turn: Annotated[str, Query(description="The turn's id.")],
    limit: Limit = PAGE_DEFAULT,
    cursor: Cursor = None,
) -> Page[FrameOut]:
    """One turn's steps in order: model replies, tool calls and their results, approvals asked."""
    frames = (await backend.turns.attach(backend.server)).frames(hive, turn)
    if not frames:
        raise NotFound(f"no turn {turn!r} of hive {hive!r}", code="turn.unknown", hint="GET /api/v1/turns")
    items, next_cursor = page(frames, limit, cursor)
    return Page[FrameOut](items=items, next_cursor=next_cursor)


async def _resume_at(
    backend: Root,
    after: Annotated[int, Query(ge=0, le=2**53, description="Resume after this seq (0: from the start).")] = 0,
    last_event_id: Annotated[
        str | None,
        Header(pattern=r"^[0-9]{1,15}$", description="Sent by EventSource when it reconnects: wins over after."),
    ] = None,
) -> tuple[int, int]:
    """Where the stream starts and the newest frame now; checked before the stream opens, so a bad resume
    token is a 409, not a broken stream."""
    cursor = int(last_event_id) if last_event_id is not None else after
    last = await backend.server.call(lambda r: r.last_seq)
    if cursor > last:
        raise Conflict(
            f"resume token {cursor} is ahead of the log (last frame {last}): this root has a different history",
            code="frames.token_ahead",
            hint="resume from 0",
        )
    return cursor, last


#: Frames whose SSE text is kept for the next clients: a burst reaches every follower from this cache.
SSE_CACHE = 8192
#: The schema of one event, as OpenAPI 3.2 describes SSE items (FastAPI's, for the document).
_EVENT = {
    "type": "object",
    "properties": {"data": {"type": "string"}, "id": {"type": "string"}},
    "description": "`id`: the frame's seq; `data`: the frame as JSON {seq, kind, time, data}.",
}


@router.get(
    "/events",
    tags=["events"],
    response_class=StreamingResponse,
    responses={
        **errors(409, 422),
        200: {
            "description": "Frames as events: `id` the seq, `data` the frame as JSON (its `kind` inside).",
            "content": {"text/event-stream": {"itemSchema": _EVENT}},
        },
    },
)
async def events(
    backend: Root,
    resume: Annotated[tuple[int, int], Depends(_resume_at)],
    follow: Annotated[bool, Query(description="Keep streaming live frames (false: the backlog, then end).")] = True,
) -> StreamingResponse:
    """The root's frames over Server-Sent Events; a reconnecting EventSource resumes from Last-Event-ID."""
    cursor, last = resume
    return StreamingResponse(
        _stream(backend, cursor, None if follow else last),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


async def _stream(backend: Backend, cursor: int, until: int | None) -> AsyncIterator[bytes]:
    """Each run of frames as one write; each frame's text made once for all clients (``backend.sse``). Ends
    when the root stops, at ``until``, or when the API stops (``backend.closing``)."""
    if until is not None and cursor >= until:
        return
    runs = backend.server.follow(cursor)
    closing = asyncio.ensure_future(backend.closing.wait())
    following: asyncio.Future[list[tuple[int, bytes]]] | None = None
    try:
        while True:
            following = asyncio.ensure_future(anext(runs))
            await asyncio.wait((following, closing), return_when=asyncio.FIRST_COMPLETED)
            if not following.done():
                return  # the API stops
            try:
                run = following.result()
            except StopAsyncIteration:
                return
            chunk = _texts(backend, run, until)
            if chunk:
                yield b"".join(chunk)
            if until is not None and run and run[-1][0] >= until:
                return
    finally:  # also when the client went away (the server cancels this generator)
        closing.cancel()
        if following is not None and not following.done():
            following.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await following  # the generator must be idle before it is closed
        await runs.aclose()


def _texts(backend: Backend, run: list[tuple[int, bytes]], until: int | None) -> list[bytes]:
    cache = backend.sse
    chunk = []
    for seq, body in run:
        if until is not None and seq > until:
            break
        text = cache.get(seq)
        if text is None:
            frame = backend.server.frame_of(body)
            data = json.dumps(frame.to_dict(), separators=(",", ":"), ensure_ascii=False)
            text = cache[seq] = f"id: {seq}\ndata: {data}\n\n".encode()
            if len(cache) > SSE_CACHE:  # oldest first: frames arrive in seq order
                for old in list(cache)[: len(cache) - SSE_CACHE]:
                    del cache[old]
        chunk.append(text)
    return chunk
