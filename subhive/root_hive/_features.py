"""What a consumer uses of a contract: operations/events by name, and fields as ``member.property.path``.

A version that no longer declares a field a consumer reads leaves that consumer unsatisfied.
See docs/root-hive.md#the-engine-rules-of-negotiation ("Requirements and Contract Net").
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ..contract import Contract, SchemaRef, resolve_pointer
from ..errors import InputError

__all__ = ["check_feature_names", "missing_features"]

_MAX_DEPTH = 64


def check_feature_names(operations: Sequence[str], fields: Sequence[str]) -> None:
    """Raise :class:`InputError` for an empty name or a field without a property part."""
    for op in operations:
        if not isinstance(op, str) or not op or "." in op:
            raise InputError(
                f"{op!r} is not an operation or event name",
                code="requirement.operation",
                hint="name an operation or event of the contract, e.g. place_order",
            )
    for name in fields:
        if not isinstance(name, str) or name.count(".") < 1 or "" in name.split("."):
            raise InputError(
                f"{name!r} is not a field",
                code="requirement.field",
                hint="write MEMBER.PROPERTY[.PROPERTY...], e.g. place_order.customer_id",
            )


def missing_features(contract: Contract, operations: Sequence[str], fields: Sequence[str]) -> list[str]:
    """The operations and fields (as written) that ``contract`` does not offer.

    A field is found when its property path exists in the member's schemas (an operation's input or output, an
    event's payload), following ``properties``, ``$ref`` within the contract and ``allOf``/``anyOf``/``oneOf``.
    """
    members = {
        **{n: (op.input, op.output) for n, op in contract.operations.items()},
        **{n: (ev.payload,) for n, ev in contract.events.items()},
    }
    missing = [op for op in operations if op not in members]
    for name in fields:
        member, *path = name.split(".")
        refs = members.get(member, ())
        if not any(_has_path(ref, path) for ref in refs):
            missing.append(name)
    return missing


def _has_path(ref: SchemaRef, path: list[str]) -> bool:
    try:
        start = resolve_pointer(ref.document.data, ref.pointer)
    except (LookupError, InputError):
        return False
    return _find(ref, ref.file, start, path, 0)


def _find(ref: SchemaRef, file: Path, schema: Any, path: list[str], depth: int) -> bool:
    if not path:
        return True
    if depth > _MAX_DEPTH or not isinstance(schema, dict):
        return False
    for where, sub in _branches(ref, file, schema):
        if _find(ref, where, sub, path, depth + 1):
            return True
    props = schema.get("properties")
    return isinstance(props, dict) and path[0] in props and _find(ref, file, props[path[0]], path[1:], depth + 1)


def _branches(ref: SchemaRef, file: Path, schema: dict[str, Any]) -> Iterator[tuple[Path, Any]]:
    for key in ("allOf", "anyOf", "oneOf"):
        subs = schema.get(key)
        if isinstance(subs, list):
            yield from ((file, s) for s in subs)
    target = schema.get("$ref")
    if isinstance(target, str):
        resolved = _follow(ref, file, target)
        if resolved is not None:
            yield resolved


def _follow(ref: SchemaRef, file: Path, target: str) -> tuple[Path, Any] | None:
    # Lint has already checked every $ref resolves inside the contract; absolute $id URIs are not followed
    # (a field behind one counts as missing: the consumer is told, never silently assumed satisfied).
    path_part, _, fragment = target.partition("#")
    if ":" in path_part:
        return None
    docs = ref.documents
    if docs is None:
        return None
    try:
        where = (file.parent / path_part) if path_part else file
        document = docs.load(where)
        return where, resolve_pointer(document.data, fragment)
    except (LookupError, InputError, OSError):
        return None
