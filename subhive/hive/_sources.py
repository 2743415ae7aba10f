"""Loading a hive's knowledge module (``[knowledge] sources = "pkg.module:SOURCES"``, and its optional ``GRPC``)
and checking that what its sources declare matches the contracts the hive provides and consumes.
"""

from __future__ import annotations

import importlib
import logging
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError, Location
from ..runtime import ContractBinding
from ._knowledge import KnowledgeSource

__all__ = ["GrpcService", "LoadedKnowledge", "check_members", "load_bindings", "load_knowledge"]

log = logging.getLogger("subhive.hive")


@dataclass(frozen=True)
class GrpcService:
    """One gRPC service a hive serves: ``GrpcService("notes_store", 0, add_NotesStoreServicer_to_server, Store())``."""

    contract: str
    major: int
    add_to_server: Callable[[Any, Any], None]
    servicer: object


@dataclass(frozen=True)
class LoadedKnowledge:
    sources: tuple[KnowledgeSource, ...]
    grpc: Callable[[Any], Sequence[GrpcService]] | None


def load_knowledge(spec: str, *, hive_dir: Path, workspace: Path, manifest: Path) -> LoadedKnowledge:
    """Import ``module:attribute`` with the hive's directory and the workspace root (for ``stubs``) importable."""
    where = Location(file=str(manifest), pointer="/knowledge/sources")
    if not spec:
        return LoadedKnowledge((), None)
    module_name, _, attribute = spec.partition(":")
    for path in (str(workspace), str(hive_dir)):  # the hive's own directory ends up first
        if path in sys.path:
            sys.path.remove(path)
        sys.path.insert(0, path)
    _forget_other(module_name.split(".")[0], hive_dir)
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        # The whole traceback goes to the hive's log; the error (what `up` shows) names the file and line.
        log.error("cannot import the knowledge module %s", module_name, exc_info=exc)
        last = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
        at = f" ({last.filename}:{last.lineno})" if last else ""
        raise InputError(
            f"cannot import {module_name}: {type(exc).__name__}: {exc}{at}",
            code="ks.import_failed",
            location=where,
            hint="fix the module, or the sources entry in subhive.toml",
        ) from None
    sources = getattr(module, attribute, None)
    if sources is None:
        raise InputError(
            f"{module_name} has no attribute {attribute!r}",
            code="ks.import_failed",
            location=where,
            hint="define it: a sequence of knowledge sources",
        )
    if isinstance(sources, str | bytes) or not isinstance(sources, Sequence):
        raise InputError(
            f"{spec} is a {type(sources).__name__}, not a sequence of knowledge sources",
            code="ks.invalid",
            location=where,
        )
    grpc = getattr(module, "GRPC", None)
    if grpc is not None and not callable(grpc):
        raise InputError(
            f"{module_name}.GRPC must be a function of the hive context", code="ks.invalid", location=where
        )
    return LoadedKnowledge(tuple(sources), grpc)


def _forget_other(package: str, hive_dir: Path) -> None:
    """Drop an already imported ``package`` that is not this hive's (several hives loaded in one process)."""
    mine = hive_dir.resolve()
    for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
        origin = getattr(sys.modules[name], "__file__", None)
        if origin is None or not Path(origin).resolve().is_relative_to(mine):
            del sys.modules[name]
    importlib.invalidate_caches()


def load_bindings(stubs_dir: Path) -> list[ContractBinding]:
    """The contract versions codegen gave this hive (``stubs/<hive>/*/contract.json``), sorted."""
    bindings = [ContractBinding.load(path) for path in sorted(stubs_dir.glob("*/contract.json"))]
    return sorted(bindings, key=lambda b: (b.name, b.version))


def check_members(sources: Sequence[KnowledgeSource], hive: str, bindings: Sequence[ContractBinding]) -> None:
    """Every ``operations`` entry names an operation of a contract the hive provides, every ``events`` entry
    an event of one it consumes; otherwise an InputError naming the source and the member."""
    provided = {(b.name, op) for b in bindings if b.provider == hive for op in b.operations}
    consumed = {(b.name, ev) for b in bindings if b.provider != hive for ev in b.events}
    for source in sources:
        for member in getattr(source, "operations", ()):
            if tuple(str(member).split(".", 1)) not in provided:
                raise InputError(
                    f"{source.name} answers {member!r}, which is not an operation of a contract {hive} provides",
                    code="ks.unknown_member",
                    hint="contract.operation of a provided contract in the lock (run subhive codegen)",
                )
        for member in getattr(source, "events", ()):
            if tuple(str(member).split(".", 1)) not in consumed:
                raise InputError(
                    f"{source.name} reacts to {member!r}, which is not an event of a contract {hive} consumes",
                    code="ks.unknown_member",
                    hint="contract.event of a consumed contract in the lock (run subhive codegen)",
                )
