"""What every route depends on: the running root and the workspace's settings, the admin check, paging."""

from __future__ import annotations

import asyncio
import hmac
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

from fastapi import Depends, Query, Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from ..root_hive import PermissionDenied, Unauthenticated
from ._turns import TurnIndex

if TYPE_CHECKING:
    from ..bus import BusEndpoint
    from ..root_hive import RootHive, RootServer

__all__ = [
    "PAGE_DEFAULT",
    "PAGE_MAX",
    "PREFIX",
    "Admin",
    "ApiSettings",
    "Backend",
    "Cursor",
    "KeyCursor",
    "Limit",
    "Root",
    "page",
    "page_after",
]

T = TypeVar("T")
PREFIX = "/api/v1"
#: Items per page unless ``limit`` says otherwise, and the most ``limit`` may say.
PAGE_DEFAULT = 100
PAGE_MAX = 500


@dataclass
class ApiSettings:
    """What the API serves besides the root: where the bus is and what the running tree says of each hive.

    Both are handed in by the caller (``subhive root``), which knows ``subhive up``'s records.
    """

    workspace: Path
    #: The running tree's NATS server with the framework's credentials, or None when it is not up.
    bus: Callable[[], BusEndpoint | None] = field(default=lambda: None)
    #: ``subhive status``'s runtime view (``{"hives": {name: {...}}}``), or None when the tree is not up.
    runtime: Callable[[], dict[str, Any] | None] = field(default=lambda: None)


@dataclass(frozen=True)
class Backend:
    server: RootServer
    settings: ApiSettings
    #: Server-Sent-Events text of recent frames by seq, made once for every client (bounded: see _events).
    sse: dict[int, bytes] = field(default_factory=dict)
    #: Set when the API stops: every event stream ends at once instead of holding the shutdown up.
    closing: asyncio.Event = field(default_factory=asyncio.Event)
    #: Agents' turns, indexed as frames are committed (filled on first use).
    turns: TurnIndex = field(default_factory=TurnIndex)


def _backend(request: Request) -> Backend:
    backend: Backend = request.app.state.backend
    return backend


Root = Annotated[Backend, Depends(_backend)]
_bearer = HTTPBearer(auto_error=False, description="The admin token (.subhive/root/admin.token).")


async def _admin(backend: Root, credentials: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)]) -> str:
    """Every call that changes state carries the admin token; a hive's token is known but not enough."""
    return await _check_admin(backend, credentials, "this call changes state")


async def _reader(backend: Root, credentials: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)]) -> str:
    """Reading what hives keep (board values, dead letters' bytes) takes the admin token too: the API reads them
    with the framework's own NATS identity, which no other local user may borrow through it."""
    return await _check_admin(backend, credentials, "this call reads what the hives keep")


async def _check_admin(backend: Root, credentials: HTTPAuthorizationCredentials | None, why: str) -> str:
    if credentials is None or not credentials.credentials.strip():
        raise Unauthenticated(
            f"{why}: send 'Authorization: Bearer <admin token>'",
            code="auth.missing",
            hint="the admin token is in .subhive/root/admin.token (owner-only)",
        )
    token = credentials.credentials.strip()
    admin = await backend.server.call(lambda r: r.admin_token())
    if hmac.compare_digest(token.encode(), admin.encode()):
        return token
    if await backend.server.call(lambda r: _is_hive_token(r, token)):
        raise PermissionDenied(
            "a hive's token may not change state here: that is for humans, with the admin token",
            code="auth.not_admin",
            hint="use the admin token from .subhive/root/admin.token",
        )
    raise Unauthenticated("unknown token", code="auth.unauthenticated", hint="use .subhive/root/admin.token")


def _is_hive_token(root: RootHive, token: str) -> bool:
    try:
        root.authenticate(token)
    except Unauthenticated:
        return False
    return True


#: The admin token, checked.
Admin = Annotated[str, Depends(_admin)]
#: The admin token, checked, for reading boards and dead letters.
Reader = Annotated[str, Depends(_reader)]
Limit = Annotated[int, Query(ge=1, le=PAGE_MAX, description="Items per page.")]
Cursor = Annotated[
    str | None,
    Query(pattern=r"^[0-9]{1,9}$", description="The `next_cursor` of the previous page; omit it for the first."),
]


#: The cursor of a list whose items may come and go anywhere (pending approvals, a board's keys): the sort
#: key of the last item shown, so a page never skips or repeats an item when others arrive or leave.
KeyCursor = Annotated[
    str | None,
    Query(
        pattern=r"^k[-/_=.~a-zA-Z0-9]{1,1024}$",
        description="The `next_cursor` of the previous page; omit it for the first.",
    ),
]


def page(items: Sequence[T], limit: int, cursor: str | None) -> tuple[list[T], str | None]:
    """One page of ``items`` and the cursor of the next (None after the last). The cursor is opaque to
    callers: the offset, which a list that grows only at its end keeps stable (decision 0076)."""
    start = int(cursor or 0)
    chunk = list(items[start : start + limit])
    return chunk, str(start + limit) if start + limit < len(items) else None


def page_after(
    items: Sequence[T], key: Callable[[T], str], limit: int, cursor: str | None
) -> tuple[list[T], str | None]:
    """One page of ``items`` in the order of ``key`` after the item the cursor names, and the next page's cursor
    (None after the last). ``key`` gives each item a unique string of the cursor's characters (a board key, a
    zero-padded time and an id) and the cursor is the last shown item's key: items added or removed before it
    do not shift what comes after, so nothing is skipped or shown twice."""
    ordered = sorted(items, key=key)
    if cursor is not None:
        after = cursor[1:]
        ordered = [item for item in ordered if key(item) > after]
    chunk = ordered[:limit]
    return chunk, "k" + key(chunk[-1]) if len(ordered) > limit else None
