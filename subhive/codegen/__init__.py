"""Codegen: typed stubs and mocks for every sub-hive, from the lock (docs/codegen.md).
The orchestration is imported on first use: importing the package costs nothing until stubs are made.

    >>> from subhive.codegen import generate_stubs
    >>> generate_stubs(open_workspace("shop")).written      # doctest: +SKIP
    ['stubs/web/orders_v1/client.py', ...]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._generate import GENERATOR_VERSION, CodegenResult, generate_stubs
    from ._plan import ContractStub, HiveStubs, StubPlan, plan_stubs
    from ._tree_check import check_tree
    from ._trigger import CodegenTrigger

__all__ = [
    "GENERATOR_VERSION",
    "CodegenResult",
    "CodegenTrigger",
    "ContractStub",
    "HiveStubs",
    "StubPlan",
    "check_tree",
    "generate_stubs",
    "plan_stubs",
]


def __getattr__(name: str) -> Any:
    if name in ("GENERATOR_VERSION", "CodegenResult", "generate_stubs"):
        from . import _generate

        return getattr(_generate, name)
    if name in ("ContractStub", "HiveStubs", "StubPlan", "plan_stubs"):
        from . import _plan

        return getattr(_plan, name)
    if name == "CodegenTrigger":
        from ._trigger import CodegenTrigger

        return CodegenTrigger
    if name == "check_tree":
        from ._tree_check import check_tree

        return check_tree
    raise AttributeError(f"module 'subhive.codegen' has no attribute {name!r}")
