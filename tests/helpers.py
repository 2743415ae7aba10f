"""Building contract directories on disk for tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml


def write_contract(root: Path, manifest: dict[str, Any], files: dict[str, Any | str]) -> Path:
    """Write ``root/<name>/<version>/`` with ``contract.yaml`` and ``files`` (dicts as JSON, str as text)."""
    directory: Path = root / manifest["contract"] / manifest["version"]
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "contract.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    for name, content in files.items():
        text = content if isinstance(content, str) else json.dumps(content, indent=2)
        (directory / name).write_text(text)
    return directory


def orders_manifest(version: str, **overrides: Any) -> dict[str, Any]:
    manifest: dict[str, Any] = {
        "contract": "orders",
        "version": version,
        "provider": "backend",
        "description": "Orders.",
        "operations": {"place_order": {"description": "Place one.", "input": "in.json", "output": "out.json"}},
        "events": {"order_placed": {"description": "Placed.", "payload": "event.json"}},
    }
    manifest.update(overrides)
    return manifest


def object_schema(properties: dict[str, Any], required: list[str] | None = None, **extra: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    schema.update(extra)
    return schema
