"""What the keyword families share: the pair being compared, facts about a subschema, results.

Kept apart from the engine so that the families (``_js_scalar``, ``_js_arrays``, ``_js_objects``,
``_js_logic``) and the engine can import it without a cycle.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

from ._js_docs import Doc, Node
from ._js_values import jkey, kind_of
from ._report import Change

if TYPE_CHECKING:
    from ._js_engine import Engine

__all__ = ["CLEAN", "FALSE_NODE", "TRUE_NODE", "Facts", "Pair", "Result", "finite_values", "result_of"]

_TRUE_DOC = Doc(True, uid=0)
TRUE_NODE = Node(_TRUE_DOC, "", "true", True, "")
FALSE_NODE = Node(_TRUE_DOC, "", "false", False, "")



class Result(NamedTuple):
    """Changes between two subschemas and the proven verdicts (conjunction of the change flags)."""

    changes: tuple[Change, ...]
    back: bool
    fwd: bool


CLEAN = Result((), True, True)


def result_of(changes: Iterable[Change]) -> Result:
    changes = tuple(changes)
    if not changes:
        return CLEAN
    return Result(changes, all(c.backward for c in changes), all(c.forward for c in changes))


class Facts:
    """What a subschema guarantees about its instances, used as the hypothesis in proofs.

    ``types`` are the instance kinds it can accept (from ``type``, ``enum``/``const`` and applicators);
    ``finite`` lists every value it can accept when that set is finite (enum, const, null/boolean), else None.
    """

    __slots__ = ("finite", "kw", "types")

    def __init__(self, kw: dict[str, Any], types: frozenset[str], finite: list[Any] | None) -> None:
        self.kw = kw
        self.types = types
        self.finite = finite



def finite_values(kw: dict[str, Any], types: frozenset[str]) -> list[Any] | None:
    if "const" in kw:
        values = [kw["const"]]
        if "enum" in kw:
            values = [v for v in values if jkey(v) in {jkey(e) for e in kw["enum"]}]
    elif "enum" in kw:
        values = list({jkey(v): v for v in kw["enum"]}.values())
    elif types <= {"null", "boolean"}:
        values = ([None] if "null" in types else []) + ([False, True] if "boolean" in types else [])
    else:
        return None
    return [v for v in values if kind_of(v) in types]


class Pair:
    """One (old, new) pair being compared, with the changes found so far.

    ``own`` holds changes of this node's keywords, ``inner`` changes found inside in-place subschemas
    (applicators, dependentSchemas ...), ``values`` changes inside the schemas of named properties and
    prefix items (they cannot change which properties or items count as evaluated).
    """

    __slots__ = ("A", "B", "eng", "inner", "n", "nk", "o", "ok", "own", "values")

    def __init__(self, eng: Engine, o: Node, n: Node, ok: dict[str, Any], nk: dict[str, Any]) -> None:
        self.eng = eng
        self.o = o
        self.n = n
        self.ok = ok
        self.nk = nk
        self.A = eng.facts(o)
        self.B = eng.facts(n)
        self.own: list[Change] = []
        self.inner: list[Change] = []
        self.values: list[Change] = []

    def new_path(self, *tokens: str | int) -> str:
        return self.n.path + "".join("/" + str(t).replace("~", "~0").replace("/", "~1") for t in tokens)

    def old_path(self, *tokens: str | int) -> str:
        return self.o.path + "".join("/" + str(t).replace("~", "~0").replace("/", "~1") for t in tokens)

    def path(self, keyword: str, *tokens: str | int) -> str:
        """The NEW location of ``keyword`` when NEW has it, else the OLD one (removals)."""
        if keyword in self.nk or keyword not in self.ok:
            return self.new_path(keyword, *tokens)
        return self.old_path(keyword, *tokens)

    def add(self, code: str, path: str, backward: bool, forward: bool, message: str) -> None:
        self.own.append(Change(code, path, backward, forward, message))

    def old_child(self, keyword: str, *tokens: str | int) -> Node | None:
        return _child(self.o, self.ok, keyword, tokens)

    def new_child(self, keyword: str, *tokens: str | int) -> Node | None:
        return _child(self.n, self.nk, keyword, tokens)

    def result(self) -> Result:
        return result_of([*self.own, *self.inner, *self.values])


def _child(node: Node, kw: dict[str, Any], keyword: str, tokens: tuple[str | int, ...]) -> Node | None:
    if keyword not in kw:
        return None
    value: Any = kw[keyword]
    for token in tokens:
        value = value[token]
    return node.child(value, keyword, *tokens)
