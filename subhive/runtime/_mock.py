"""Mock providers: answer every operation of a contract with schema-valid data, deterministic by seed, so a
consumer can be built and tested before its provider exists. See docs/codegen.md#using-the-stubs (Mocks).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

from ._binding import ContractBinding
from ._mockdata import InstanceGenerator
from ._typed import PinnedAnswer, to_payload

__all__ = ["MockProvider"]

_PayloadAnswer = Callable[[Any], Any]
In = TypeVar("In", bound=BaseModel)
Out = TypeVar("Out", bound=BaseModel)


class MockProvider:
    """Schema-valid answers for every operation of ``contract``; the n-th answer depends only on the seed.

    Every answer, generated or pinned, is validated against the operation's output schema before it is served.

    >>> mock = MockProvider(CONTRACT, seed=7)  # doctest: +SKIP
    >>> mock.answer("place_order", {"sku": "A-1"})  # doctest: +SKIP
    >>> mock.pin("place_order", {"id": "o-1", "status": "placed"})  # doctest: +SKIP
    """

    def __init__(self, contract: ContractBinding, *, seed: int = 0) -> None:
        self.contract = contract
        self.seed = seed
        self._generators: dict[str, InstanceGenerator] = {}
        self._pinned: dict[str, _PayloadAnswer] = {}
        self._calls: dict[str, int] = {}

    def pin(self, operation: str, answer: Any) -> None:
        """Answer ``operation`` with ``answer`` from now on: a payload, or a function of the request payload."""
        _, output = self.contract.operation(operation)
        if callable(answer):
            self._pinned[operation] = answer
        else:
            self.contract.check(output, answer, moving="outgoing")  # a bad pin fails here, not at the call
            self._pinned[operation] = lambda _request: answer

    def pin_model(self, operation: str, answer: PinnedAnswer[Out, In], request_model: type[In]) -> None:
        """:meth:`pin` for typed stubs: a reply model, or a function from the request model to one."""
        if isinstance(answer, BaseModel):
            self.pin(operation, to_payload(answer))
            return
        make = answer
        self.pin(operation, lambda payload: to_payload(make(request_model.model_validate(payload))))

    def unpin(self, operation: str) -> None:
        self._pinned.pop(operation, None)

    def answer(self, operation: str, request: Any) -> Any:
        """The next answer to ``operation``: the pinned one, else the next generated instance."""
        _, output = self.contract.operation(operation)
        pinned = self._pinned.get(operation)
        if pinned is not None:
            value = pinned(request)
        else:
            n = self._calls.get(operation, 0)
            self._calls[operation] = n + 1
            value = self.instance(output, n)
        self.contract.check(output, value, moving="outgoing")
        return value

    def answer_model(self, operation: str, request: BaseModel, reply_model: type[Out]) -> Out:
        """:meth:`answer` for typed stubs: request and reply as models."""
        return reply_model.model_validate(self.answer(operation, to_payload(request)))

    def event_model(self, event: str, n: int, model: type[Out]) -> Out:
        """:meth:`event` for typed stubs: the n-th payload of ``event`` as a model."""
        return model.model_validate(self.event(event, n))

    def event(self, event: str, n: int = 0) -> Any:
        """The n-th generated payload of ``event`` (for tests that emit events from the mock)."""
        return self.instance(self.contract.event(event), n)

    def instance(self, schema: str, n: int) -> Any:
        generator = self._generators.get(schema)
        if generator is None:
            generator = InstanceGenerator(self.contract.schemas[schema], label=f"{self.contract.id} {schema}")
            self._generators[schema] = generator
        return generator.instance(seed=zlib.crc32(f"{self.seed}:{schema}:{n}".encode()))
