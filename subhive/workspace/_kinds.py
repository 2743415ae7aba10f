"""What each kind of sub-hive starts with: description, what it provides and consumes, a contract draft.
See docs/workspace.md#kinds-and-their-defaults.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ._manifest import Kind, SubhiveManifest

__all__ = ["KIND_DEFAULTS", "KindDefaults", "contract_draft", "default_consumes", "provided_contract"]

DRAFT_VERSION = "0.1.0"
#: The range a default requirement accepts: every 0.1.x (below 1.0.0 a minor bump may break).
DEFAULT_RANGE = "^0.1"
_DIALECT = "https://json-schema.org/draft/2020-12/schema"


@dataclass(frozen=True, slots=True)
class KindDefaults:
    description: str
    #: The provided contract is ``<hive>_<suffix>``; None: the kind provides nothing by default.
    provides_suffix: str | None = None
    #: The kind of sibling whose contracts this kind consumes by default.
    consumes_kind: Kind | None = None


KIND_DEFAULTS: dict[Kind, KindDefaults] = {
    Kind.ui: KindDefaults(
        "User interface: screens and client state, built against the backend's API.", consumes_kind=Kind.backend
    ),
    Kind.backend: KindDefaults(
        "Backend: serves the API and keeps the business rules; stores through the db hive.",
        provides_suffix="api",
        consumes_kind=Kind.db,
    ),
    Kind.db: KindDefaults(
        "Storage: keeps records and serves put, get and delete to the hives that need them.", provides_suffix="storage"
    ),
    Kind.custom: KindDefaults("A custom sub-hive."),
}


def provided_contract(name: str, kind: Kind) -> str | None:
    """The contract a new hive of ``kind`` provides: ``provided_contract("db", Kind.db)`` is 'db_storage'."""
    suffix = KIND_DEFAULTS[kind].provides_suffix
    return f"{name}_{suffix}" if suffix else None


def default_consumes(kind: Kind, parent: str, hives: dict[str, SubhiveManifest]) -> list[str]:
    """The contracts a new hive of ``kind`` under ``parent`` consumes: its siblings' of the consumed kind."""
    wanted = KIND_DEFAULTS[kind].consumes_kind
    if wanted is None:
        return []
    found = sorted(c for h in hives.values() if h.kind is wanted and h.parent == parent for c in h.provides)
    if found:
        return found
    fallback = provided_contract(wanted.value, wanted)
    return [fallback] if fallback else []


def contract_draft(contract: str, provider: str, kind: Kind) -> dict[str, str]:
    """The files of a starter contract draft (name -> text) for a providing kind; empty for the others."""
    if kind is Kind.db:
        return _storage_draft(contract, provider)
    if kind is Kind.backend:
        return _api_draft(contract, provider)
    return {}


def _header(contract: str, provider: str) -> str:
    return (
        f"# Draft {DRAFT_VERSION} of contract {contract!r}, served by sub-hive {provider!r} (docs/contracts.md).\n"
        "# Shape it freely until a version is accepted: accepted versions are immutable, and every later\n"
        "# change is a new version directory, checked with `subhive contract check`.\n"
    )


def _schemas(defs: dict[str, Any]) -> str:
    document = {
        "$schema": _DIALECT,
        "$comment": "Inputs are closed (additionalProperties: false) so later versions may accept more; outputs "
        "and events stay open so later versions may send more fields without breaking old consumers.",
        "$defs": defs,
    }
    return json.dumps(document, indent=2) + "\n"


def _closed(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {**_open(properties, required), "additionalProperties": False}


def _open(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def _storage_draft(contract: str, provider: str) -> dict[str, str]:
    manifest = _header(contract, provider) + (
        f"contract: {contract}\n"
        f"version: {DRAFT_VERSION}\n"
        f"provider: {provider}\n"
        f"description: Records kept by sub-hive {provider}, addressed by collection and id.\n"
        "\n"
        "operations:\n"
        "  put_record:\n"
        "    description: Create or replace a record; with expected_revision, only if it is still at that revision.\n"
        "    input: schemas.json#/$defs/PutRecordInput\n"
        "    output: schemas.json#/$defs/PutRecordOutput\n"
        "  get_record:\n"
        "    description: Read a record by collection and id.\n"
        "    input: schemas.json#/$defs/RecordAddress\n"
        "    output: schemas.json#/$defs/GetRecordOutput\n"
        "  delete_record:\n"
        "    description: Delete a record; with expected_revision, only if it is still at that revision.\n"
        "    input: schemas.json#/$defs/DeleteRecordInput\n"
        "    output: schemas.json#/$defs/DeleteRecordOutput\n"
        "\n"
        "events:\n"
        "  record_changed:\n"
        "    description: A record was written or deleted.\n"
        "    payload: schemas.json#/$defs/RecordChanged\n"
    )
    collection = {
        "type": "string",
        "pattern": "^[a-z][a-z0-9_]*$",
        "maxLength": 63,
        "description": "A group of records of one shape, e.g. 'orders'.",
    }
    record_id = {"type": "string", "minLength": 1, "maxLength": 128}
    revision = {"type": "integer", "minimum": 1, "description": "Grows by one with every write of the record."}
    expected = {
        "type": "integer",
        "minimum": 0,
        "description": "Compare-and-set: write only if the record is at this revision (0: does not exist).",
    }
    address = {"collection": {"$ref": "#/$defs/Collection"}, "id": {"$ref": "#/$defs/RecordId"}}
    defs = {
        "Collection": collection,
        "RecordId": record_id,
        "Revision": revision,
        "Record": _open(
            {**address, "data": {"type": "object"}, "revision": {"$ref": "#/$defs/Revision"}},
            ["collection", "id", "data", "revision"],
        ),
        "RecordAddress": _closed(address, ["collection", "id"]),
        "PutRecordInput": _closed(
            {**address, "data": {"type": "object"}, "expected_revision": expected}, ["collection", "id", "data"]
        ),
        "PutRecordOutput": _open({"revision": {"$ref": "#/$defs/Revision"}}, ["revision"]),
        "GetRecordOutput": _open({"found": {"type": "boolean"}, "record": {"$ref": "#/$defs/Record"}}, ["found"]),
        "DeleteRecordInput": _closed({**address, "expected_revision": expected}, ["collection", "id"]),
        "DeleteRecordOutput": _open({"deleted": {"type": "boolean"}}, ["deleted"]),
        "RecordChanged": _open(
            {**address, "change": {"enum": ["put", "delete"]}, "revision": {"$ref": "#/$defs/Revision"}},
            ["collection", "id", "change", "revision"],
        ),
    }
    return {"contract.yaml": manifest, "schemas.json": _schemas(defs)}


def _api_draft(contract: str, provider: str) -> dict[str, str]:
    manifest = _header(contract, provider) + (
        f"contract: {contract}\n"
        f"version: {DRAFT_VERSION}\n"
        f"provider: {provider}\n"
        f"description: The API of sub-hive {provider}. Add the operations its consumers need.\n"
        "\n"
        "operations:\n"
        "  get_status:\n"
        "    description: Whether the service is up, and which build it runs.\n"
        "    input: schemas.json#/$defs/GetStatusInput\n"
        "    output: schemas.json#/$defs/GetStatusOutput\n"
    )
    defs = {
        "GetStatusInput": _closed({}, []),
        "GetStatusOutput": _open({"status": {"enum": ["ok", "degraded"]}, "build": {"type": "string"}}, ["status"]),
    }
    return {"contract.yaml": manifest, "schemas.json": _schemas(defs)}
