"""Contract file maps for root hive tests (the workspace itself comes from ``tests/conftest.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml


def orders_files(
    version: str,
    *,
    provider: str = "backend",
    note: bool = False,
    required: tuple[str, ...] = (),
    open_input: bool = False,
    broken: bool = False,
    description: str = "Orders.",
) -> dict[str, bytes]:
    """An ``orders`` contract: ``place_order`` takes ``{id, note?}`` and answers ``{ok}``.

    ``note`` declares the optional ``note`` property; ``required`` lists required input properties;
    ``open_input`` drops ``additionalProperties: false``; ``broken`` points the output at a missing file.
    """
    properties: dict[str, Any] = {"id": {"type": "string"}}
    if note:
        properties["note"] = {"type": "string"}
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if not open_input:
        schema["additionalProperties"] = False
    if required:
        schema["required"] = list(required)
    manifest = {
        "contract": "orders",
        "version": version,
        "provider": provider,
        "description": description,
        "operations": {
            "place_order": {
                "description": "Place one.",
                "input": "in.json",
                "output": "missing.json" if broken else "out.json",
            }
        },
    }
    out = {
        "type": "object",
        "properties": {"ok": {"type": "boolean"}},
        "required": ["ok"],
        "additionalProperties": False,
    }
    return {
        "contract.yaml": yaml.safe_dump(manifest, sort_keys=False).encode(),
        "in.json": json.dumps(schema, indent=2).encode(),
        "out.json": json.dumps(out, indent=2).encode(),
    }


def simple_files(name: str, version: str, provider: str) -> dict[str, bytes]:
    """A one-event contract ``name`` (for load tests)."""
    manifest = {
        "contract": name,
        "version": version,
        "provider": provider,
        "events": {"changed": {"payload": "event.json"}},
    }
    event = {"type": "object", "properties": {"at": {"type": "string"}}, "additionalProperties": False}
    return {"contract.yaml": yaml.safe_dump(manifest).encode(), "event.json": json.dumps(event).encode()}


REPO = Path(__file__).resolve().parents[2]
INVENTORY = REPO / "contracts" / "inventory" / "1.0.0"


def inventory_files(*, provider: str = "db") -> dict[str, bytes]:
    """The example ``inventory`` 1.0.0 contract (a gRPC service ``shop.inventory.v1.Inventory``)."""
    files = {p.relative_to(INVENTORY).as_posix(): p.read_bytes() for p in sorted(INVENTORY.rglob("*")) if p.is_file()}
    files["contract.yaml"] = files["contract.yaml"].replace(b"provider: db", f"provider: {provider}".encode())
    return files
