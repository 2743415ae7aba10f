"""Shared by the hive tests: a fresh blackboard bucket per test on the module's nats-server (``conftest.py``)."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import AsyncIterator
from typing import Any

import nats
from nats.aio.client import Client
from nats.js.errors import NotFoundError

from subhive.bus import EmbeddedServer
from subhive.hive import BoardSchema, KvBlackboard, board_stream, ensure_blackboard

_names = itertools.count()

#: The schema `subhive new` scaffolds, plus counters and free-form notes for the tests.
SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "patternProperties": {
        "^tasks\\.[^.]+$": {
            "type": "object",
            "required": ["title", "status"],
            "properties": {"title": {"type": "string", "minLength": 1}, "status": {"enum": ["open", "done"]}},
        },
        "^plans\\.[^.]+$": {
            "type": "object",
            "required": ["task", "steps"],
            "properties": {
                "task": {"type": "string"},
                "steps": {"type": "array", "minItems": 1, "items": {"type": "string"}},
            },
        },
        "^counters\\.[^.]+$": {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}},
        "^notes\\..+$": {},
    },
}


def fresh_hive() -> str:
    """A hive name no other test used: each test gets its own bucket on the shared server."""
    return f"h{next(_names)}"


@contextlib.asynccontextmanager
async def board(
    server: EmbeddedServer, hive: str | None = None, schema: dict[str, Any] | None = SCHEMA
) -> AsyncIterator[tuple[Client, KvBlackboard]]:
    hive = hive or fresh_hive()
    nc = await nats.connect(server.url)
    js = nc.jetstream()
    with contextlib.suppress(NotFoundError):
        await js.delete_stream(board_stream(hive))
    await ensure_blackboard(js, hive)
    try:
        yield nc, await KvBlackboard.open(js, hive, BoardSchema(schema, hive=hive) if schema else None)
    finally:
        await nc.close()
