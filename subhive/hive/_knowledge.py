"""Knowledge sources, blackboard entries and writes, and NATS-style key patterns."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from ..errors import InputError

__all__ = ["Blackboard", "Entry", "KnowledgeSource", "Reply", "Write", "check_key", "check_key_pattern", "key_matches"]

#: One token of a NATS key-value key: the characters JetStream KV allows, without the "." separator.
_TOKEN = re.compile(r"[-/_=A-Za-z0-9]+\Z")
#: Keys become subjects; keep them well below the server's subject size limits.
_MAX_KEY = 512


@dataclass(frozen=True, slots=True)
class Entry:
    """A value on a blackboard: ``Entry("tasks.t1", {"title": "Add login"}, revision=3)``.

    ``revision`` is the key-value store's revision of this value (0 when it was never stored); ``writer``
    who wrote it (a knowledge source's name, ``human``, ...); ``depth`` how many knowledge-source activations
    led to it (0 for a write from outside the hive's experts); ``time`` when it was stored (epoch seconds).
    """

    key: str
    value: Any
    revision: int = 0
    writer: str = ""
    depth: int = 0
    time: float | None = None


@dataclass(frozen=True, slots=True)
class Write:
    """A value a knowledge source wants on the blackboard: ``Write("plans.t1", {...})``.

    ``expected_revision`` makes it a compare-and-set: ``None`` writes unconditionally, ``0`` only if the
    key does not exist yet, ``n`` only if the key is still at revision ``n`` (no lost updates).
    ``on_conflict`` says what the controller does when the set loses: ``"retry"`` activates the source again
    on fresh data (it decides anew, as a counter must), ``"skip"`` drops the write and counts it ("create only
    once": someone else already did).
    """

    key: str
    value: Any
    expected_revision: int | None = None
    on_conflict: Literal["retry", "skip"] = "retry"


@dataclass(frozen=True, slots=True)
class Reply:
    """The answer of a knowledge source activated by a contract operation: ``Reply({"note_id": "n1"})``.

    Return it among the writes; the runtime applies the writes first, then sends the reply, which the
    transport validates against the operation's output schema.
    """

    payload: Any


class Blackboard(Protocol):
    """What a knowledge source may read from its own hive's blackboard while it is activated."""

    async def get(self, key: str) -> Entry | None:
        """The current entry at ``key``, or ``None``."""
        ...


@runtime_checkable
class KnowledgeSource(Protocol):
    """An expert of a sub-hive. The runtime activates it for every entry whose key matches a trigger.

    Example (the starter a scaffolded sub-hive gets)::

        class Intake:
            name = "intake"
            triggers = ("tasks.*",)
            priority = 10

            def writes_for(self, entry: Entry) -> list[Write]:  # pure: what tests call
                return [Write("plans." + entry.key.split(".", 1)[1], {...}, expected_revision=0, on_conflict="skip")]

            async def activate(self, entry: Entry, blackboard: Blackboard) -> Sequence[Write]:
                return self.writes_for(entry)
    """

    @property
    def name(self) -> str:
        """Unique within its hive: ``[a-z][a-z0-9_]*``."""
        ...

    @property
    def triggers(self) -> Sequence[str]:
        """Key patterns that activate it: ``*`` matches one token, a final ``>`` one or more."""
        ...

    @property
    def priority(self) -> int:
        """Higher runs first when several activations wait."""
        ...

    # Optional (read with getattr, default ()): ``operations = ("notes_api.create_note",)`` makes the source
    # answer that operation of a contract its hive provides (``entry.key`` is ``op.<contract>.<operation>``,
    # ``entry.value`` the request; return a :class:`Reply`), and ``events = ("notes_store.stored",)`` wakes it
    # on an event of a contract its hive consumes (``entry.key`` is ``ev.<contract>.<event>``).

    async def activate(self, entry: Entry, blackboard: Blackboard) -> Sequence[Write | Reply]:
        """React to ``entry``; return the writes to apply (the runtime validates them against the schema) and,
        for an operation, one :class:`Reply`."""
        ...


def check_key(key: str) -> None:
    """Raise ``InputError`` (``blackboard.key_invalid``) unless ``key`` is a blackboard key: ``tasks.t1``."""
    if isinstance(key, str) and len(key) <= _MAX_KEY and all(_TOKEN.match(t) for t in key.split(".")):
        return
    raise InputError(
        f"{key!r} is not a blackboard key",
        code="blackboard.key_invalid",
        hint="tokens of letters, digits, '-', '_', '/', '=' separated by '.', e.g. tasks.t1",
    )


def check_key_pattern(pattern: str) -> None:
    """Raise ``ValueError`` unless ``pattern`` is a valid key pattern: ``check_key_pattern("tasks.*")``."""
    tokens = pattern.split(".") if isinstance(pattern, str) else [""]
    for index, token in enumerate(tokens):
        if token == ">" and index == len(tokens) - 1:
            continue
        if token == "*" or _TOKEN.match(token):
            continue
        why = "'>' may only be the last token" if token == ">" else f"token {token!r} is not allowed"
        raise ValueError(
            f"{pattern!r} is not a key pattern: {why} (tokens of letters, digits, '-', '_', '/', "
            "'=' separated by '.', '*' for one token, a final '>' for the rest)"
        )


def key_matches(pattern: str, key: str) -> bool:
    """Whether ``key`` matches ``pattern`` by NATS rules: ``key_matches("tasks.>", "tasks.t1.notes")`` is True."""
    want = pattern.split(".")
    have = key.split(".")
    for index, token in enumerate(want):
        if token == ">":
            return index < len(have) and index == len(want) - 1
        if index >= len(have) or (token != "*" and token != have[index]):
            return False
    return len(want) == len(have)
