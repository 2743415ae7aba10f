"""Typed adapters between generated pydantic models and the JSON payloads transports carry, so generated stubs
stay thin instead of repeating the conversions per operation.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeAlias, TypeVar

from pydantic import BaseModel

from ._binding import PayloadInvalid
from ._transport import EventCallback, Handler

__all__ = ["OnEvent", "PinnedAnswer", "to_payload", "typed_callback", "typed_handler"]

M = TypeVar("M", bound=BaseModel)
In = TypeVar("In", bound=BaseModel)
Out = TypeVar("Out", bound=BaseModel)

#: What a mock's ``pin_<operation>`` takes: a fixed answer, or a function of the request.
#: ``PinnedAnswer[Out, In]``: parameters in order of appearance, the answer's model first.
PinnedAnswer: TypeAlias = Out | Callable[[In], Out]
#: A typed event callback: ``OnEvent[models.OrderShipped]``.
OnEvent: TypeAlias = Callable[[M], Awaitable[None]]


def to_payload(model: BaseModel) -> Any:
    """A generated model as its JSON payload: the JSON names, and only the fields that were set; a model that
    cannot be written as JSON raises :class:`PayloadInvalid` (``payload.malformed``), never pydantic's error."""
    try:
        return model.model_dump(mode="json", by_alias=True, exclude_unset=True)
    except (ValueError, TypeError, RecursionError) as exc:  # PydanticSerializationError is a ValueError
        name = type(model).__name__
        raise PayloadInvalid(
            f"a {name} cannot be written as JSON: {type(exc).__name__}: {exc}"[:500],
            contract="",
            schema=name,
            pointer="",
            keyword="",
            moving="outgoing",
            code="payload.malformed",
        ) from None


def typed_handler(method: Callable[[In], Awaitable[BaseModel]], model: type[In]) -> Handler:
    """``method`` (request model in, reply model out) as a payload-level handler.

    >>> handlers = {"get_order": typed_handler(impl.get_order, models.OrderRef)}  # doctest: +SKIP
    """

    async def handle(payload: Any) -> Any:
        return to_payload(await method(model.model_validate(payload)))

    return handle


def typed_callback(callback: OnEvent[M], model: type[M]) -> EventCallback:
    """``callback`` (event model in) as a payload-level event callback."""

    async def deliver(payload: Any) -> None:
        await callback(model.model_validate(payload))

    return deliver
