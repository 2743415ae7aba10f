"""Contracts: the ``contract.yaml`` format, loading, and lint (docs/contracts.md, codes in docs/lint.md).

>>> from subhive.contract import load_contract, lint_paths
>>> contract = load_contract("contracts/orders/1.1.0")  # doctest: +SKIP
>>> contract.name, str(contract.version), sorted(contract.operations)  # doctest: +SKIP
('orders', '1.1.0', ['place_order'])
>>> lint_paths(["contracts/"]).ok  # doctest: +SKIP
True
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from ._model import Contract, Event, GrpcSpec, Operation, SchemaRef
from ._refs import (
    SUBSCHEMA_KEYWORDS,
    SUBSCHEMA_LIST_KEYWORDS,
    RefResolver,
    RefSite,
    SchemaDocuments,
    Target,
    resolve_pointer,
)
from .lint import LintResult, lint_contract, lint_paths, load_contract, load_contract_files, load_schema_file

if TYPE_CHECKING:
    from ._import import import_document, read_document

__all__ = [
    "SUBSCHEMA_KEYWORDS",
    "SUBSCHEMA_LIST_KEYWORDS",
    "Contract",
    "Event",
    "GrpcSpec",
    "LintResult",
    "Operation",
    "RefResolver",
    "RefSite",
    "SchemaDocuments",
    "SchemaRef",
    "Target",
    "import_document",
    "lint_contract",
    "lint_paths",
    "load_contract",
    "load_contract_files",
    "load_schema_file",
    "read_document",
    "resolve_pointer",
]

# The OpenAPI/AsyncAPI importers load when asked for: ``schema diff`` and ``contract lint`` never need them.
_LAZY = {"import_document": "._import", "read_document": "._import"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
