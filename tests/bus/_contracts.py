"""Contract bindings for the bus tests.

``orders`` v1: ``place_order`` takes ``{sku: "A-<digits>", qty: 1..100}`` and answers ``{order_id}``;
event ``order_placed`` carries ``{order_id}``. ``orders`` v2 renames the reply field to ``id``, so a reply
from the wrong major fails validation. Schemas are written here by hand, independent of codegen.
"""

from __future__ import annotations

from typing import Any

from subhive.runtime import ContractBinding

ORDER_IN: dict[str, Any] = {
    "type": "object",
    "required": ["sku", "qty"],
    "additionalProperties": False,
    "properties": {
        "sku": {"type": "string", "pattern": "^A-[0-9]+$"},
        "qty": {"type": "integer", "minimum": 1, "maximum": 100},
    },
}
ORDER_REF: dict[str, Any] = {
    "type": "object",
    "required": ["order_id"],
    "additionalProperties": False,
    "properties": {"order_id": {"type": "string", "minLength": 1}},
}
ORDER_REF_V2: dict[str, Any] = {
    "type": "object",
    "required": ["id"],
    "additionalProperties": False,
    "properties": {"id": {"type": "string", "minLength": 1}},
}


def orders(major: int = 1) -> ContractBinding:
    reply = ORDER_REF if major == 1 else ORDER_REF_V2
    return ContractBinding.from_dict(
        {
            "name": "orders",
            "version": f"{major}.0.0",
            "provider": "backend",
            "operations": {"place_order": {"input": "in", "output": "out"}},
            "events": {"order_placed": "out"},
            "schemas": {"in": ORDER_IN, "out": reply},
        }
    )
