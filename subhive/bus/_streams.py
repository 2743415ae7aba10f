"""JetStream streams the framework provisions from the lock: one per contract line for its events,
deduplicating by ``Nats-Msg-Id`` so a retried publish stores the event once. Hives may not create streams.
See docs/bus.md#durable-events.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from nats.js import JetStreamContext
from nats.js.api import StorageType, StreamConfig
from nats.js.errors import NotFoundError

from ..workspace import DeadLetterLimits
from ._deadletter import ensure_dead_letter_streams
from ._permissions import Line, event_stream, event_subject

__all__ = ["DUPLICATE_WINDOW", "ensure_event_streams"]

DUPLICATE_WINDOW = 120.0  # seconds


async def ensure_event_streams(
    js: JetStreamContext,
    contracts: Iterable[tuple[str, Line]],
    *,
    hives: Mapping[str, DeadLetterLimits] | Iterable[str] = (),
    replicas: int = 1,
) -> list[str]:
    """Create the event stream of each (contract, line) that has none and, for each of ``hives`` (names,
    or names with their dead-letter limits), its dead-letter stream; returns the names created.
    ``replicas``: copies on as many nodes of a cluster (docs/cluster.md).

    >>> await ensure_event_streams(js, [("orders", 1)], hives=["backend", "web"])  # doctest: +SKIP
    ['SUBHIVE_EV_orders_v1', 'SUBHIVE_DLQ_backend', 'SUBHIVE_DLQ_web', 'SUBHIVE_DLQ_REPLAYS']
    """
    created: list[str] = []
    for contract, line in sorted({(c, str(n)) for c, n in contracts}):
        name = event_stream(contract, line)
        try:
            await js.stream_info(name)
        except NotFoundError:
            subjects = [event_subject(contract, line, "x").rsplit(".", 1)[0] + ".>"]
            await js.add_stream(
                StreamConfig(
                    name=name,
                    subjects=subjects,
                    storage=StorageType.FILE,
                    duplicate_window=DUPLICATE_WINDOW,
                    num_replicas=replicas,
                )
            )
            created.append(name)
    hives = hives if isinstance(hives, Mapping) else list(hives)
    if hives:
        created += await ensure_dead_letter_streams(js, hives, replicas=replicas)
    return created
