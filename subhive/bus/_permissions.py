"""Subjects and per-hive NATS credentials, derived from the lock: pure data that :mod:`subhive.bus._server` writes
into the server's configuration. Subjects: docs/bus.md#subjects-and-headers; what a hive may do and why:
docs/bus.md#isolation and :func:`hive_permissions`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from subhive.errors import UsageError
from subhive.semver import line_token

__all__ = [
    "ADMIN_USER",
    "DLQ_STREAM",
    "Line",
    "Permissions",
    "deliver_subject",
    "dlq_subject",
    "durable_name",
    "event_stream",
    "event_subject",
    "hive_permissions",
    "inbox_prefix",
    "kv_bucket",
    "line_name",
    "op_subject",
    "replay_subject",
    "sender_of",
]

#: A contract's compatibility line: ``Version.line`` ("1", "0.2", "0.0.3"); an int is a major (decision 0140).
Line = str | int
# The operation or event names of each (contract, line); a table may key its lines as str or int.
_Members = (
    Mapping[tuple[str, str], Sequence[str]]
    | Mapping[tuple[str, int], Sequence[str]]
    | Mapping[tuple[str, Line], Sequence[str]]
)

#: The prefix of each hive's dead-letter stream (``SUBHIVE_DLQ_<hive>``), and the name of the one shared stream
#: of older releases (docs/decisions/0023-dead-letter-limits.md).
DLQ_STREAM = "SUBHIVE_DLQ"
# Hive names start with a letter, so this user can never collide with a hive's user.
ADMIN_USER = "_admin"
_JS_API = "$JS.API"

# The same shapes the manifests enforce; checked again here because a name becomes a subject token, a KV
# bucket name and a user name, and a stray "." or ">" would widen a grant silently.
_HIVE = re.compile(r"[a-z][a-z0-9_-]{0,62}")
_CONTRACT = re.compile(r"[a-z][a-z0-9_-]{0,62}")
_MEMBER = re.compile(r"[a-z][a-z0-9_]{0,62}")
_DURABLE = re.compile(r"[a-z][a-z0-9_-]{0,254}")
# Passwords are written into the server's configuration file inside double quotes: keep them to characters
# that need no escaping there (the caller makes them with ``secrets.token_urlsafe``).
_PASSWORD = re.compile(r"[A-Za-z0-9_\-.~+/=]{8,256}")


def _check(pattern: re.Pattern[str], value: str, what: str) -> str:
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise UsageError(
            f"{what} {value!r} cannot be used in a NATS subject (expected {pattern.pattern})", code="bus.name_invalid"
        )
    return value


def check_hive(value: str) -> str:
    """``value`` if it is a hive name fit for a subject, a user and an account; else ``bus.name_invalid``."""
    return _check(_HIVE, value, "hive")


def check_password(value: str, whose: str) -> None:
    # The value is never echoed: an error message must not leak a secret into logs.
    if not isinstance(value, str) or not _PASSWORD.fullmatch(value):
        raise UsageError(
            f"the {whose} password must be 8 to 256 letters, digits or any of _-.~+/=",
            code="bus.password_invalid",
            hint="make it with secrets.token_urlsafe(24)",
        )


def op_subject(contract: str, line: Line, operation: str, sender: str = "*") -> str:
    """The subject ``sender`` sends requests for one operation to; by default the wildcard a provider serves.
    ``line`` is the contract's compatibility line (``Version.line``: a major, or below 1.0.0 "0.2", "0.0.3").

    >>> op_subject("orders", 1, "place_order", "web")
    'subhive.orders.v1.op.place_order.web'
    >>> op_subject("orders", "0.2", "place_order")
    'subhive.orders.v0_2.op.place_order.*'
    """
    token = sender if sender == "*" else _check(_HIVE, sender, "sender")
    return f"subhive.{_contract_prefix(contract, line)}.op.{_check(_MEMBER, operation, 'operation')}.{token}"


def sender_of(subject: str) -> str | None:
    """The sender a request subject names (the server let only that hive publish on it), or None.

    >>> sender_of("subhive.orders.v1.op.place_order.web"), sender_of("subhive.orders.v1.ev.order_placed")
    ('web', None)
    """
    parts = subject.split(".")
    if len(parts) == 6 and parts[0] == "subhive" and parts[3] == "op" and _HIVE.fullmatch(parts[5]):
        return parts[5]
    return None


def event_subject(contract: str, line: Line, event: str) -> str:
    """The subject of one event.

    >>> event_subject("orders", 2, "order_placed")
    'subhive.orders.v2.ev.order_placed'
    """
    return f"subhive.{_contract_prefix(contract, line)}.ev.{_check(_MEMBER, event, 'event')}"


def event_stream(contract: str, line: Line) -> str:
    """The JetStream stream storing the events of a contract's line.

    >>> event_stream("orders", 1), event_stream("orders", "0.2")
    ('SUBHIVE_EV_orders_v1', 'SUBHIVE_EV_orders_v0_2')
    """
    return f"SUBHIVE_EV_{_contract_prefix(contract, line).replace('.', '_')}"


def durable_name(hive: str, contract: str, line: Line, event: str) -> str:
    """The durable consumer through which ``hive`` reads one event of one contract line.

    >>> durable_name("web", "orders", 1, "order_placed")
    'web__orders__v1__order_placed'
    """
    return (
        f"{_check(_HIVE, hive, 'hive')}__{_contract_prefix(contract, line).replace('.', '__')}"
        f"__{_check(_MEMBER, event, 'event')}"
    )


def kv_bucket(hive: str) -> str:
    """The JetStream KV bucket holding a hive's blackboard.

    >>> kv_bucket("backend")
    'bb_backend'
    """
    return f"bb_{_check(_HIVE, hive, 'hive')}"


def dlq_subject(hive: str, *tokens: str) -> str:
    """A subject under the hive's dead-letter prefix; without tokens, the wildcard covering all of them.

    >>> dlq_subject("backend", "orders", "v1")
    'subhive.dlq.backend.orders.v1'
    >>> dlq_subject("backend")
    'subhive.dlq.backend.>'
    """
    for token in tokens:
        if not token or any(c in token for c in ".*> \t\r\n"):
            raise UsageError(
                f"dead-letter subject token {token!r} is not a plain subject token", code="bus.name_invalid"
            )
    return f"subhive.dlq.{_check(_HIVE, hive, 'hive')}." + (".".join(tokens) if tokens else ">")


def deliver_subject(hive: str, consumer: str) -> str:
    """Where one of ``hive``'s durable consumers delivers: inside its inboxes, which only it may subscribe to.

    >>> deliver_subject("web", "controller")
    '_INBOX_web.deliver.controller'
    """
    return f"{inbox_prefix(hive)}.deliver.{_check(_DURABLE, consumer, 'consumer')}"


def replay_subject(hive: str, contract: str, line: Line, event: str) -> str:
    """Where the framework re-sends one of ``hive``'s dead-lettered events: inside its inboxes, which only it may
    subscribe to and no hive's publish grant covers, so the replay reaches that hive alone (decision 0047).

    >>> replay_subject("web", "orders", 1, "order_placed")
    '_INBOX_web.replay.orders.v1.order_placed'
    """
    return f"{inbox_prefix(hive)}.replay.{_contract_prefix(contract, line)}.{_check(_MEMBER, event, 'event')}"


def inbox_prefix(hive: str) -> str:
    """The inbox prefix a hive passes to ``nats.connect(inbox_prefix=...)``.

    >>> inbox_prefix("backend")
    '_INBOX_backend'
    """
    return f"_INBOX_{_check(_HIVE, hive, 'hive')}"


def line_name(line: Line) -> str:
    """``v`` and the line's token, as subjects, streams, queue groups and dead letters name a contract line.

    >>> line_name(1), line_name("0.2"), line_name("0.0.3")
    ('v1', 'v0_2', 'v0_0_3')
    """
    try:
        return f"v{line_token(line)}"
    except ValueError as exc:
        raise UsageError(str(exc), code="bus.name_invalid") from None


def _contract_prefix(contract: str, line: Line) -> str:
    return f"{_check(_CONTRACT, contract, 'contract')}.{line_name(line)}"


def _valid_subject(subject: str) -> bool:
    tokens = subject.split(".")
    if any(not t or any(c.isspace() for c in t) for t in tokens):
        return False
    # ">" matches the rest, so only as the last token; "*" only as a whole token.
    return all(t != ">" or i == len(tokens) - 1 for i, t in enumerate(tokens)) and all(
        t in {"*", ">"} or ("*" not in t and ">" not in t) for t in tokens
    )


@dataclass(frozen=True)
class Permissions:
    """Publish and subscribe allow lists of one NATS user; everything not listed is refused.

    Lists are kept sorted and without duplicates, so two equal grants compare equal.

    >>> Permissions(publish=("b", "a", "a")).publish
    ('a', 'b')
    """

    publish: tuple[str, ...] = ()
    subscribe: tuple[str, ...] = ()
    # Lets the user publish one reply to the reply subject of each request it received.
    allow_responses: bool = False

    def __post_init__(self) -> None:
        for name in ("publish", "subscribe"):
            subjects = getattr(self, name)
            if isinstance(subjects, str):
                raise UsageError(
                    f"Permissions.{name} takes a sequence of subjects, not one string", code="bus.permissions_invalid"
                )
            bad = [s for s in subjects if not isinstance(s, str) or not _valid_subject(s)]
            if bad:
                raise UsageError(f"Permissions.{name} holds invalid subjects: {bad}", code="bus.permissions_invalid")
            object.__setattr__(self, name, tuple(sorted(set(subjects))))

    def union(self, other: Permissions) -> Permissions:
        """Both grants together.

        >>> Permissions(publish=("a",)).union(Permissions(subscribe=("b",))).subscribe
        ('b',)
        """
        return Permissions(
            publish=self.publish + other.publish,
            subscribe=self.subscribe + other.subscribe,
            allow_responses=self.allow_responses or other.allow_responses,
        )

    def to_config(self) -> dict[str, object]:
        """The ``permissions`` map of a user in the server's configuration.

        An empty allow list would mean "allow everything" to nats-server, so it is written as a deny of all.

        >>> Permissions(publish=("a.b",)).to_config()
        {'publish': {'allow': ['a.b']}, 'subscribe': {'deny': ['>']}}
        """
        out: dict[str, object] = {}
        for name, subjects in (("publish", self.publish), ("subscribe", self.subscribe)):
            out[name] = {"allow": list(subjects)} if subjects else {"deny": [">"]}
        if self.allow_responses:
            out["allow_responses"] = True
        return out


def hive_permissions(
    hive: str,
    provides: Mapping[str, Sequence[Line]],
    consumes: Mapping[str, Sequence[Line]],
    operations: _Members,
    events: _Members,
) -> Permissions:
    """The grants of one hive: its contracts' subjects as provider or consumer, its blackboard, inboxes, DLQ.

    ``provides``/``consumes`` map a contract to the lines the hive serves/uses (``Version.line``: "1", "0.2";
    an int is a major); ``operations``/``events`` map ``(contract, line)`` to the operation/event names of that
    line (from the lock).

    The hive may publish exactly: the op subjects it consumes (with its own sender token, so a provider reads
    the sender from the subject, never from a header), the event subjects it provides, its own blackboard
    (``$KV.bb_<hive>.>``) and dead-letter subjects, and the JetStream API subjects of :func:`_kv_grants` and
    :func:`_consumer_grants`; it may subscribe exactly: the op subjects it provides, the event subjects it
    consumes and its own inboxes (``_INBOX_<hive>.>``: durable deliveries and :func:`replay_subject` included).
    It may create, change or delete no stream and no consumer. A provider answers through ``allow_responses``
    (one reply per request), never through a grant on other hives' inboxes.

    >>> ops = {("orders", 1): ["place_order"]}
    >>> evs = {("orders", 1): ["order_placed"]}
    >>> p = hive_permissions("web", {}, {"orders": [1]}, ops, evs)
    >>> "subhive.orders.v1.op.place_order.web" in p.publish, "subhive.orders.v1.ev.order_placed" in p.subscribe
    (True, True)
    """
    publish: list[str] = [*_kv_grants(hive), dlq_subject(hive)]
    # Its inboxes: replies to its requests, and its durable consumers' deliveries (_INBOX_<hive>.deliver.*).
    subscribe: list[str] = [f"{inbox_prefix(hive)}.>"]
    for contract, line in _pairs(provides):
        subscribe += [op_subject(contract, line, op) for op in _members(operations, contract, line)]
        publish += [event_subject(contract, line, ev) for ev in _members(events, contract, line)]
    for contract, line in _pairs(consumes):
        publish += [op_subject(contract, line, op, hive) for op in _members(operations, contract, line)]
        for ev in _members(events, contract, line):
            subscribe.append(event_subject(contract, line, ev))
            publish += _consumer_grants(hive, contract, line, ev)
    return Permissions(publish=tuple(publish), subscribe=tuple(subscribe), allow_responses=bool(provides))


def _pairs(contracts: Mapping[str, Sequence[Line]]) -> Iterable[tuple[str, Line]]:
    for contract, lines in contracts.items():
        for line in lines:
            yield contract, line


def _members(table: _Members, contract: str, line: Line) -> Sequence[str]:
    # A line without operations or events is normal (a gRPC-only contract has neither): it grants nothing.
    # Lines are matched by their spelling in names, so 1 and "1" are the same line.
    name = line_name(line)
    members = next((m for (c, k), m in table.items() if c == contract and line_name(k) == name), ())
    if isinstance(members, str):
        raise UsageError(
            f"the members of {contract} v{line} must be a list of names, not one string", code="bus.name_invalid"
        )
    return members


# What a hive may ask of JetStream, and why it is safe. Every JetStream API request is answered on the reply
# subject the requester chose, which no grant can restrict (the hive's own account keeps the answer from
# reaching other hives: subhive.bus._accounts); still, a hive gets only requests whose answer is the server's
# own JSON (or nothing) about the hive's own stream or consumer. Left out on purpose:
#   STREAM.CREATE/UPDATE/DELETE/PURGE   a stream config can capture any subject, mirror or source any stream,
#                                       republish anywhere; deleting or purging is the framework's decision;
#   CONSUMER.CREATE/DELETE              a push consumer delivers to any subject it names (the server checks no
#                                       right on it), and the config is not in the subject a grant sees;
#   CONSUMER.MSG.NEXT                   a pull request is answered with stored messages, bytes and headers,
#                                       on its reply subject: anywhere;
#   DIRECT.GET                          the same: a stored message, headers and all, on the reply subject.
# Consumers are push consumers the framework creates (subhive.bus._consumers), delivering into the hive's inbox.


def _consumer_grants(hive: str, contract: str, line: Line, event: str) -> list[str]:
    """What reading one event through the hive's own durable consumer needs (the framework created it)."""
    stream, durable = event_stream(contract, line), durable_name(hive, contract, line, event)
    return [
        # Its own consumer's state: the transport checks it exists before it subscribes to its deliveries.
        f"{_JS_API}.CONSUMER.INFO.{stream}.{durable}",
        # Acknowledging (+ACK, -NAK, +WPI, +TERM) its own consumer's deliveries: the ack subject names the
        # stream and the consumer, so another hive's consumer is out of reach.
        f"$JS.ACK.{stream}.{durable}.>",
    ]


def _kv_grants(hive: str) -> list[str]:
    """What the blackboard (:mod:`subhive.hive._blackboard`) and its controller need for the hive's bucket."""
    bucket = kv_bucket(hive)
    stream = f"KV_{bucket}"
    board = "controller"  # subhive.bus._consumers.BOARD_CONSUMER (not imported: that module imports this one)
    return [
        # Writes: JetStream publishes to its own keys, which only its own stream captures.
        f"$KV.{bucket}.>",
        # That the bucket exists, and its keys (``subjects_filter``) and size: the stream's own state.
        f"{_JS_API}.STREAM.INFO.{stream}",
        # Reads: a key's last revision (``last_by_subj``) and history (``next_by_subj``), answered as the
        # server's JSON with the message inside, never as a stored message: it cannot pose as one elsewhere.
        f"{_JS_API}.STREAM.MSG.GET.{stream}",
        # The controller's consumer of the board's writes: its state, and acks of its deliveries.
        f"{_JS_API}.CONSUMER.INFO.{stream}.{board}",
        f"$JS.ACK.{stream}.{board}.>",
    ]
