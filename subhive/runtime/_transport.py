"""How generated clients and handlers reach each other: the :class:`Transport` protocol, which validates every
payload when sent and when received. :class:`LocalTransport` connects hives in one process; the NATS
transport (docs/bus.md) connects them across processes.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from ..errors import SubhiveError
from ._binding import ContractBinding, PayloadInvalid

__all__ = ["EventCallback", "Handler", "LocalTransport", "NotServed", "Refusal", "Subscription", "Transport"]

#: Serves one operation: receives the validated request payload, returns the reply payload.
Handler = Callable[[Any], Awaitable[Any]]
#: Receives one validated event payload.
EventCallback = Callable[[Any], Awaitable[None]]


class NotServed(SubhiveError):
    """Nobody serves the operation a client called."""

    default_code = "bus.not_served"


class Refusal(SubhiveError):
    """A handler's deliberate "no": raise it (or a subclass) with your own stable ``code`` and the caller gets
    that code and message. Any other exception a handler raises is a failure: the caller gets
    ``handler.failed`` and the request is dead-lettered (docs/decisions/0021-handler-refusals.md)."""

    default_code = "handler.refused"


class Subscription(Protocol):
    async def stop(self) -> None: ...


class Transport(Protocol):
    async def request(self, contract: ContractBinding, operation: str, payload: Any) -> Any:
        """Send a request and return the provider's validated reply."""
        ...

    async def serve(self, contract: ContractBinding, handlers: Mapping[str, Handler]) -> Subscription:
        """Answer requests for ``handlers``' operations until the returned subscription is stopped."""
        ...

    async def publish(self, contract: ContractBinding, event: str, payload: Any) -> None:
        """Emit an event of a provided contract."""
        ...

    async def subscribe(self, contract: ContractBinding, event: str, callback: EventCallback) -> Subscription:
        """Call ``callback`` with every event ``event`` from now on, until stopped."""
        ...


def _travelled(contract: ContractBinding, schema: str, payload: Any) -> Any:
    """``payload`` as the other end reads it: through UTF-8 JSON text, as on the bus (a lone surrogate, NaN or a
    set cannot travel: :class:`PayloadInvalid`, as the NATS transport says)."""
    try:
        return json.loads(json.dumps(payload, ensure_ascii=False, allow_nan=False).encode("utf-8"))
    except (TypeError, ValueError, RecursionError) as exc:
        code = (
            "payload.bad_unicode"
            if isinstance(exc, UnicodeError)
            else "payload.too_deep"
            if isinstance(exc, RecursionError)
            else "payload.malformed"
        )
        raise PayloadInvalid(
            f"outgoing {contract.id} {schema} payload cannot be sent as JSON: {type(exc).__name__}",
            contract=contract.id,
            schema=schema,
            pointer="",
            keyword="",
            moving="outgoing",
            code=code,
        ) from None


class _Registration:
    def __init__(self, table: dict[Any, Any], key: Any, value: Any) -> None:
        self._table, self._key, self._value = table, key, value

    async def stop(self) -> None:
        entries = self._table.get(self._key)
        if isinstance(entries, list):
            if self._value in entries:
                entries.remove(self._value)
        elif entries is self._value:
            del self._table[self._key]


class LocalTransport:
    """Hives in one process: requests call the served handler directly, events call every subscriber.

    Payloads still travel as JSON text (so nothing is shared by reference) and are validated on both
    ends, exactly as on the bus.
    """

    def __init__(self) -> None:
        self._served: dict[tuple[str, str, str], Handler] = {}
        self._subscribers: dict[tuple[str, str, str], list[EventCallback]] = {}

    async def request(self, contract: ContractBinding, operation: str, payload: Any) -> Any:
        input_schema, output_schema = contract.operation(operation)
        contract.check(input_schema, payload, moving="outgoing")
        handler = self._served.get((contract.name, contract.line, operation))
        if handler is None:
            raise NotServed(
                f"nobody serves {contract.name} v{contract.line} operation {operation!r} here",
                hint="serve the provider's handler (or its generated mock) on this transport first",
            )
        received = _travelled(contract, input_schema, payload)
        contract.check(input_schema, received, moving="incoming")
        reply = await handler(received)
        contract.check(output_schema, reply, moving="outgoing")
        answer = _travelled(contract, output_schema, reply)
        contract.check(output_schema, answer, moving="incoming")
        return answer

    async def serve(self, contract: ContractBinding, handlers: Mapping[str, Handler]) -> Subscription:
        keys = []
        for operation, handler in handlers.items():
            contract.operation(operation)  # an unknown operation is refused now, not at the first call
            key = (contract.name, contract.line, operation)
            self._served[key] = handler
            keys.append(_Registration(self._served, key, handler))
        return _Group(keys)

    async def publish(self, contract: ContractBinding, event: str, payload: Any) -> None:
        schema = contract.event(event)
        contract.check(schema, payload, moving="outgoing")
        for callback in list(self._subscribers.get((contract.name, contract.line, event), ())):
            received = _travelled(contract, schema, payload)
            contract.check(schema, received, moving="incoming")
            await callback(received)

    async def subscribe(self, contract: ContractBinding, event: str, callback: EventCallback) -> Subscription:
        contract.event(event)
        key = (contract.name, contract.line, event)
        self._subscribers.setdefault(key, []).append(callback)
        return _Registration(self._subscribers, key, callback)


class _Group:
    def __init__(self, parts: list[_Registration]) -> None:
        self._parts = parts

    async def stop(self) -> None:
        for part in self._parts:
            await part.stop()
