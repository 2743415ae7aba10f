"""What generated stubs run on: contract bindings with compiled validators, transports, mocks, contract tests.
See docs/codegen.md#using-the-stubs.

    >>> from subhive.runtime import LocalTransport
    >>> from stubs.web.orders_v1 import OrdersClient, OrdersMock, serve_orders   # doctest: +SKIP
    >>> transport = LocalTransport()                                            # doctest: +SKIP
    >>> await serve_orders(OrdersMock(seed=1), transport)                       # doctest: +SKIP
    >>> await OrdersClient(transport).place_order(PlaceOrderInput(...))        # doctest: +SKIP
"""

from ._binding import ContractBinding, PayloadInvalid, UnknownOperation
from ._mock import MockProvider
from ._mockdata import InstanceGenerator, Unsatisfiable
from ._transport import EventCallback, Handler, LocalTransport, NotServed, Refusal, Subscription, Transport
from ._typed import OnEvent, PinnedAnswer, to_payload, typed_callback, typed_handler
from ._verify import ContractViolation, VerifyReport, verify_provider

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
