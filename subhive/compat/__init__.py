"""Compatibility analysis: per-direction diffs of JSON Schema and protobuf, and contract-level checks.
See docs/compat-codes.md and docs/contracts.md#compatibility-per-direction.

    >>> from subhive.compat import diff_schemas
    >>> report = diff_schemas({"type": "integer"}, {"type": "number"})
    >>> report.backward, report.forward
    (True, False)
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from ._report import Change, DiffReport, Direction

if TYPE_CHECKING:
    from .files import diff_files
    from .jsonschema import diff_schemas
    from .protobuf import diff_protos

__all__ = ["Change", "DiffReport", "Direction", "diff_files", "diff_protos", "diff_schemas"]

# The engines load lazily: protoc and the validators are heavy, and most commands need only one of them.
_LAZY = {"diff_files": ".files", "diff_schemas": ".jsonschema", "diff_protos": ".protobuf"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
