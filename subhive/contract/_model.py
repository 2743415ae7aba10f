"""The contract model: what a loaded ``contract.yaml`` says, with its schemas reachable by reference."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..semver import Version

if TYPE_CHECKING:
    from .._source import SourceDocument
    from ..errors import Location
    from ._refs import RefResolver, SchemaDocuments

__all__ = ["Contract", "Event", "GrpcSpec", "Operation", "SchemaRef"]


@dataclass(frozen=True, slots=True)
class SchemaRef:
    """A schema named by a manifest: a file plus a JSON pointer into it (``""`` for the whole document).

    ``SchemaRef(Path("c/1.0.0/schemas.json"), "/$defs/Order").schema`` is the ``Order`` subschema.
    Documents are read once and shared by every reference of the same contract.
    """

    file: Path
    pointer: str = ""
    documents: SchemaDocuments | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.documents is None:
            from ._refs import SchemaDocuments

            # A free-standing reference resolves its $refs inside its own directory.
            object.__setattr__(self, "documents", SchemaDocuments(self.file.parent))

    @property
    def _docs(self) -> SchemaDocuments:
        assert self.documents is not None  # set in __post_init__
        return self.documents

    @property
    def document(self) -> SourceDocument:
        """The parsed file (read on first use, then cached)."""
        return self._docs.load(self.file)

    @property
    def data_pointer(self) -> str:
        """``pointer`` in ``document.data``: the same, unless the file is in an older dialect whose draft 2020-12
        translation moved a keyword on the way (``/items/0`` -> ``/prefixItems/0``)."""
        from ._refs import translated_pointer

        return translated_pointer(self.document, self.pointer)

    @property
    def schema(self) -> dict[str, Any] | bool:
        """The subschema at ``pointer`` (as draft 2020-12); raises :class:`~subhive.errors.InputError` if it does
        not resolve."""
        return self._docs.subschema(self.document, self.data_pointer)

    @property
    def resolver(self) -> RefResolver:
        """Resolves this document's cross-file ``$ref``s (for ``diff_schemas(old_resolver=...)``)."""
        return self._docs.resolver(self.document)

    @property
    def location(self) -> Location:
        from ._refs import locate

        return locate(self.document, self.data_pointer)

    def __str__(self) -> str:
        return f"{self.file}#{self.pointer}" if self.pointer else str(self.file)


@dataclass(frozen=True, slots=True)
class Operation:
    """A request/reply operation: the consumer sends ``input``, the provider answers with ``output``.
    ``idempotent``: the provider promises that handling one request twice does what handling it once does, so
    the framework may send it again when the connection drops before the answer (docs/contracts.md)."""

    name: str
    description: str
    input: SchemaRef
    output: SchemaRef
    idempotent: bool = False


@dataclass(frozen=True, slots=True)
class Event:
    """A fire-and-forget notification the provider emits."""

    name: str
    description: str
    payload: SchemaRef


@dataclass(frozen=True, slots=True)
class GrpcSpec:
    """A protobuf service the provider serves over gRPC: ``GrpcSpec(Path("c/1.0.0/orders.proto"), "shop.Orders")``."""

    proto: Path
    service: str


@dataclass(frozen=True, slots=True)
class Contract:
    """One version of one contract, fully checked.

    Code that holds one can trust it: every :class:`SchemaRef` resolves, every ``$ref`` inside it resolves
    inside the contract directory, and the gRPC service exists in its compiled ``.proto``.

    >>> contract = load_contract("contracts/orders/1.1.0")  # doctest: +SKIP
    >>> contract.operations["place_order"].input.schema["type"]  # doctest: +SKIP
    'object'
    """

    name: str
    version: Version
    provider: str
    description: str
    directory: Path
    operations: dict[str, Operation] = field(default_factory=dict)
    events: dict[str, Event] = field(default_factory=dict)
    grpc: GrpcSpec | None = None
    manifest: SourceDocument | None = field(default=None, repr=False, compare=False)

    def __hash__(self) -> int:  # the dict fields are not hashable; a contract version is named by these
        return hash((self.name, self.version, str(self.directory)))

    @property
    def schemas(self) -> dict[str, SchemaRef]:
        """Every schema of the contract by its manifest path: ``{"operations.place_order.input": ...}``."""
        out: dict[str, SchemaRef] = {}
        for op in self.operations.values():
            out[f"operations.{op.name}.input"] = op.input
            out[f"operations.{op.name}.output"] = op.output
        for event in self.events.values():
            out[f"events.{event.name}.payload"] = event.payload
        return out
