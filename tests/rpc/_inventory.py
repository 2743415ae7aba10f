"""The example ``inventory`` contract's gRPC modules, generated into a temporary package, and a servicer."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import grpc

from subhive.codegen.protos import generate_protos
from subhive.errors import InputError
from subhive.root_hive import Conflict, NotFound
from subhive.root_hive._client import RootClient
from subhive.rpc import GrpcKeys, connect_grpc, current_traceparent

REPO = Path(__file__).resolve().parents[2]
CONTRACT = REPO / "contracts" / "inventory" / "1.0.0"
SERVICE = "shop.inventory.v1.Inventory"
PACKAGE = "subhive_tests_inventory_pb"


def generated_modules(tmp: Path) -> tuple[ModuleType, ModuleType]:
    """``inventory_pb2`` and ``inventory_pb2_grpc``, compiled from the contract's .proto into ``tmp``."""
    out = tmp / PACKAGE
    generate_protos([CONTRACT / "inventory.proto"], proto_root=CONTRACT, out_dir=out, header="# test\n")
    (out / "__init__.py").write_text("", encoding="utf-8")
    sys.path.insert(0, str(tmp))
    try:
        return (
            importlib.import_module(f"{PACKAGE}.inventory_pb2"),
            importlib.import_module(f"{PACKAGE}.inventory_pb2_grpc"),
        )
    finally:
        sys.path.remove(str(tmp))


def inventory_servicer(pb: ModuleType, pb_grpc: ModuleType) -> Any:
    """A servicer that records what trace each call ran in, and fails on purpose for some SKUs."""

    class Inventory(pb_grpc.InventoryServicer):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            #: (the traceparent metadata received, the current traceparent in the handler) per call
            self.seen: list[tuple[str | None, str | None]] = []
            #: set by a test: the provider's own root client and gRPC keys, for calls it makes onward
            self.onward: tuple[RootClient, GrpcKeys] | None = None

        def _record(self, context: grpc.aio.ServicerContext[Any, Any]) -> None:
            metadata = dict(context.invocation_metadata() or ())
            received = metadata.get("traceparent")
            self.seen.append((received if isinstance(received, str) else None, current_traceparent()))

        async def GetStock(self, request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            self._record(context)
            return await self._answer(request.sku)

        async def WatchStock(self, request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
            self._record(context)
            for on_hand in (3, 2):
                yield pb.Stock(sku=request.sku, on_hand=on_hand)
            if request.sku == "bug":
                raise KeyError("secret internals")

        async def _answer(self, sku: str) -> Any:
            if sku.startswith("relay:") and self.onward is not None:
                # A provider calling onward (here: itself, through the root) keeps the caller's trace.
                root, keys = self.onward
                async with await connect_grpc(root, "inventory", 1, keys=keys) as channel:
                    return await pb_grpc.InventoryStub(channel).GetStock(pb.GetStockRequest(sku=sku[6:]))
            fail(sku)
            return pb.Stock(sku=sku, on_hand=7, reserved=1)

    return Inventory()


def fail(sku: str) -> None:
    """Raise what the provider raises for the SKUs that fail on purpose."""
    if not sku:
        raise InputError("a sku is required", code="stock.sku", hint="send the SKU to look up")
    if sku == "gone":
        raise NotFound("no sku 'gone'", code="stock.unknown")
    if sku == "locked":
        raise Conflict("sku 'locked' is being counted", code="stock.counting")
    if sku == "bug":
        raise KeyError("secret internals")
