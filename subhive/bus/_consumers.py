"""How a hive's durable event consumers are configured: one place for whoever creates them (the framework's
admin connection or, where allowed, the hive) and for the transport that counts attempts against them.

Delivery accounting (docs/decisions/0022-delivery-accounting.md): the server redelivers without limit
(``max_deliver=-1``), because its ``num_delivered`` also counts deliveries interrupted by a crash; the
transport counts real handler failures itself and, after :data:`HANDLER_ATTEMPTS`, dead-letters the event
and then terminates it. A handler that runs long is kept alive with ``in_progress`` every ``ack_wait / 3``
seconds, so a slow handler is never mistaken for a crashed one; a crashed consumer's events come back
after ``ack_wait``.
"""

from __future__ import annotations

from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

__all__ = ["EVENT_ACK_WAIT", "HANDLER_ATTEMPTS", "event_consumer_config"]

#: A handler is called at most this many times for one event (the first try and one retry) unless the
#: consumer crashed meanwhile: interrupted deliveries do not count.
HANDLER_ATTEMPTS = 2
#: Seconds before an unacknowledged event goes back to the consumer (a crashed hive's events come back then).
EVENT_ACK_WAIT = 30.0


def event_consumer_config(*, ack_wait: float = EVENT_ACK_WAIT, durable: str | None = None) -> ConsumerConfig:
    """The configuration of a hive's durable consumer of one event: explicit acks, everything from the start,
    redelivered without limit (the transport, not the server, decides when an event is dead)."""
    return ConsumerConfig(durable_name=durable, ack_policy=AckPolicy.EXPLICIT, deliver_policy=DeliverPolicy.ALL,
                          max_deliver=-1, ack_wait=ack_wait)
