"""Where a dead letter may be replayed, and with which headers: never where its stored headers say.

The hive wrote those headers and the admin connection replays, so the target is rebuilt from the letter's DLQ
subject and the lock (docs/decisions/0046-replay-only-what-the-hive-receives.md); an event goes back to its
hive alone (docs/decisions/0047-replayed-events-reach-their-hive-alone.md). See docs/bus.md#dead-letters.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import Location, SubhiveError
from ..semver import line_from_token
from ._permissions import Line, event_subject, op_subject, replay_subject, sender_of
from ._wire import H_CONTRACT, H_MSG_ID, H_SENDER, BusError, message_id

if TYPE_CHECKING:  # the lock and the contract loader are heavy imports a running hive never needs
    from ..root_hive import Lock

__all__ = ["ReplayRules", "ReplayTarget"]

#: (hive, contract, line, member); the line as ``Version.line`` spells it ("1", "0.2"), an int a major
_Key = tuple[str, str, Line, str]


@dataclass(frozen=True)
class ReplayTarget:
    """Where a replay goes and what it carries: ``kind`` is ``op`` (a request to the provider that kept it) or
    ``ev`` (an event, to the consumer that kept it alone, on its replay subject); ``hive`` is that hive."""

    kind: str
    subject: str
    headers: dict[str, str]
    hive: str = ""


@dataclass(frozen=True)
class ReplayRules:
    """What each hive receives, by the lock: ``operations`` maps (hive, contract, line, operation) it provides
    to the hives that may send it; ``events`` maps (hive, contract, line, event) it consumes to the hive that
    provides it; ``versions`` maps (contract, line) to the version a replay is sent as (default the line's
    first version, ``1.0.0`` or ``0.2.0``). A line is ``Version.line`` ("1", "0.2"); an int is a major.

    >>> rules = ReplayRules(events={("web", "orders", 1, "order_placed"): "backend"})
    >>> rules.target("subhive.dlq.web.orders.v1.ev.order_placed", "subhive.orders.v1.ev.order_placed",
    ...              {"Subhive-Sender": "backend"}, "web:1").subject
    '_INBOX_web.replay.orders.v1.order_placed'
    """

    operations: Mapping[_Key, frozenset[str]] = field(default_factory=dict)
    events: Mapping[_Key, str] = field(default_factory=dict)
    versions: Mapping[tuple[str, Line], str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # One spelling per line, so a key built from a subject finds a key given as an int.
        object.__setattr__(self, "operations", {(h, c, str(n), m): v for (h, c, n, m), v in self.operations.items()})
        object.__setattr__(self, "events", {(h, c, str(n), m): v for (h, c, n, m), v in self.events.items()})
        object.__setattr__(self, "versions", {(c, str(n)): v for (c, n), v in self.versions.items()})

    @classmethod
    def from_lock(cls, lock: Lock, root: Path) -> ReplayRules:
        """The rules of workspace ``root``'s lock; each locked version's members are read from its contract
        directory (raises :class:`subhive.errors.ContractInvalid` when one no longer loads)."""
        from ..contract import load_contract

        operations: dict[_Key, set[str]] = {}
        events: dict[_Key, str] = {}
        versions: dict[tuple[str, Line], str] = {}
        for entry in lock:  # sorted by name and version: the newest of a line names the version last
            contract = load_contract(entry.directory(root))
            line = entry.version.line
            versions[(entry.name, line)] = str(entry.version)
            for operation in contract.operations:
                operations.setdefault((entry.provider, entry.name, line, operation), set()).update(entry.consumers)
            for event in contract.events:
                for consumer in entry.consumers:
                    events[(consumer, entry.name, line, event)] = entry.provider
        return cls({key: frozenset(senders) for key, senders in operations.items()}, events, versions)

    def target(self, kept_on: str, stored_subject: str, stored_headers: Mapping[str, str], letter: str) -> ReplayTarget:
        """The replay of the letter named ``letter``, kept on ``kept_on``, whose hive says it arrived on
        ``stored_subject`` with ``stored_headers``; raises :class:`BusError` ``deadletter.replay_refused`` when
        the letter asks for anything the lock does not let its hive receive."""

        def refuse(why: str) -> BusError:
            return BusError(
                f"dead letter {letter} was not replayed: {why}",
                code="deadletter.replay_refused",
                location=Location(subject=kept_on),
                hint=f"see it with `subhive deadletters show {letter}`; a letter only goes back to what "
                "its hive receives by contracts.lock, as its provider or its consumer",
            )

        parts = kept_on.split(".")
        line = _line(parts[4]) if len(parts) == 7 else None
        if line is None or parts[:2] != ["subhive", "dlq"]:
            raise refuse(f"it was kept on {kept_on!r}, not subhive.dlq.<hive>.<contract>.v<line>.<kind>.<member>")
        if stored_subject.startswith("$"):
            raise refuse(f"it names {stored_subject!r}, a server API subject")
        key: _Key = (parts[2], parts[3], line, parts[6])
        claimed = stored_headers.get(H_SENDER, "")
        try:
            if parts[5] == "op":
                sender, subject = self._op(key, stored_subject, claimed, refuse)
            elif parts[5] == "ev":
                sender, subject = self._event(key, claimed, refuse)
            else:  # a reply (kind "reply") went to one caller's inbox, which waits for it no more
                raise refuse(f"a {parts[5]!r} letter cannot be sent again (only requests and events can)")
        except BusError:
            raise
        except SubhiveError as exc:  # op_subject/event_subject refused a token
            raise refuse(f"its subject does not name a contract member ({exc.message})") from None
        if stored_subject != subject:
            raise refuse(f"it says it arrived on {stored_subject!r}, but it was kept as {subject!r}")
        if parts[5] == "ev":  # to the hive that kept it, never to the event's subject (every consumer)
            subject = replay_subject(key[0], key[1], key[2], key[3])
        version = self.versions.get((key[1], key[2]), _first_of(line))
        return ReplayTarget(
            parts[5], subject, {H_CONTRACT: f"{key[1]}@{version}", H_SENDER: sender, H_MSG_ID: message_id()}, key[0]
        )

    def _op(self, key: _Key, stored_subject: str, claimed: str, refuse: Callable[[str], BusError]) -> tuple[str, str]:
        """A request goes back from the sender its subject names (the server let only that hive send on it), which
        must be a consumer of the contract, to the hive that provides the operation: the one that kept it."""
        hive, contract, line, operation = key
        senders = self.operations.get(key)
        if senders is None:
            raise refuse(f"{hive} does not provide {contract} v{line} operation {operation!r}")
        sender = sender_of(stored_subject) or ""
        if not sender or claimed != sender:
            raise refuse(f"its sender is unclear (subject {stored_subject!r}, {H_SENDER} {claimed!r})")
        if sender not in senders:
            raise refuse(f"{sender} is not a consumer of {contract} v{line}")
        return sender, op_subject(contract, line, operation, sender)

    def _event(self, key: _Key, claimed: str, refuse: Callable[[str], BusError]) -> tuple[str, str]:
        """An event goes back as its provider's, to the hive alone: only one the hive consumes, from its provider."""
        hive, contract, line, event = key
        provider = self.events.get(key)
        if provider is None:
            raise refuse(f"{hive} does not consume {contract} v{line} event {event!r}")
        if claimed != provider:
            raise refuse(f"{H_SENDER} says {claimed or 'nothing'}, but {provider} provides {contract} v{line}")
        return provider, event_subject(contract, line, event)


def _line(token: str) -> str | None:
    """The line a DLQ subject's ``v<line>`` token names ("v0_2" -> "0.2"), or None."""
    try:
        return line_from_token(token[1:]) if token[:1] == "v" else None
    except ValueError:
        return None


def _first_of(line: str) -> str:
    """The first version of a line: "1" -> 1.0.0, "0.2" -> 0.2.0, "0.0.3" -> 0.0.3."""
    parts = line.split(".")
    return ".".join([*parts, "0", "0"][:3])
