"""What generated stubs run on: contract bindings with compiled validators, transports, mocks, contract tests.
See docs/codegen.md#using-the-stubs.

    >>> from subhive.runtime import LocalTransport
    >>> from stubs.web.orders_v1 import OrdersClient, OrdersMock, serve_orders   # doctest: +SKIP
    >>> transport = LocalTransport()                                            # doctest: +SKIP
    >>> await serve_orders(OrdersMock(seed=1), transport)                       # doctest: +SKIP
    >>> await OrdersClient(transport).place_order(PlaceOrderInput(...))        # doctest: +SKIP
"""

from typing import TYPE_CHECKING, Any

from ._binding import ContractBinding, PayloadInvalid, UnknownOperation
from ._transport import EventCallback, Handler, LocalTransport, NotServed, Refusal, Subscription, Transport
from ._typed import OnEvent, PinnedAnswer, to_payload, typed_callback, typed_handler

if TYPE_CHECKING:
    from ._mock import MockProvider
    from ._mockdata import InstanceGenerator, Unsatisfiable
    from ._verify import ContractViolation, VerifyReport, verify_provider

# Mocks and contract tests need the contract loader (and jsonschema); a running hive needs neither, and every
# hive process imports this package: they load on first use (memory per idle hive, issue #17).
_LAZY = {
    "MockProvider": "._mock",
    "InstanceGenerator": "._mockdata",
    "Unsatisfiable": "._mockdata",
    "ContractViolation": "._verify",
    "VerifyReport": "._verify",
    "verify_provider": "._verify",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "ContractBinding",
    "ContractViolation",
    "EventCallback",
    "Handler",
    "InstanceGenerator",
    "LocalTransport",
    "MockProvider",
    "NotServed",
    "OnEvent",
    "PayloadInvalid",
    "PinnedAnswer",
    "Refusal",
    "Subscription",
    "Transport",
    "UnknownOperation",
    "Unsatisfiable",
    "VerifyReport",
    "to_payload",
    "typed_callback",
    "typed_handler",
    "verify_provider",
]
