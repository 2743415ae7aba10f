"""What the keyword families share: the pair being compared, facts about a subschema, results.

Kept apart from the engine so that the families (``_js_scalar``, ``_js_arrays``, ``_js_objects``,
``_js_logic``) and the engine can import it without a cycle.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, TypeAlias

from ._js_docs import Doc, Node
from ._js_values import jkey, kind_of
from ._report import Change

if TYPE_CHECKING:
    from ._js_engine import Engine

__all__ = [
    "CLEAN",
    "FALSE_NODE",
    "TRUE_NODE",
    "Facts",
    "Item",
    "Pair",
    "Result",
    "Reversed",
    "Vacuous",
    "changes_in",
    "finite_values",
    "result_of",
]

_TRUE_DOC = Doc(True, uid=0)
TRUE_NODE = Node(_TRUE_DOC, "", "true", True, "")
FALSE_NODE = Node(_TRUE_DOC, "", "false", False, "")


class Result:
    """Changes between two subschemas and the proven verdicts (conjunction of the change flags).

    ``items`` are this pair's own changes and the results of the pairs compared inside it, in the order
    they were found. Inner results are linked, never copied: a definition reached through many references
    (or many paths through a graph of mutually recursive definitions) is compared once, and every pair that
    reaches it shares its result. The results form a DAG whose number of paths can grow exponentially with
    its size, so nothing may walk it path by path; :attr:`changes` visits each result once.
    """

    __slots__ = ("back", "fwd", "items")

    def __init__(self, items: tuple[Item, ...], back: bool, fwd: bool) -> None:
        self.items = items
        self.back = back
        self.fwd = fwd

    def __repr__(self) -> str:
        return f"Result(back={self.back}, fwd={self.fwd}, items={len(self.items)})"

    @property
    def clean(self) -> bool:
        """No change at all, inside either (results with no change are never linked)."""
        return not self.items

    @property
    def changes(self) -> tuple[Change, ...]:
        """Every change in this result and the results it links, each result visited once."""
        return tuple(changes_in(self.items))


class Reversed:
    """An inner result seen from outside a ``not``: widening the subschema narrows the schema, so each of
    its changes counts with its directions swapped (and says so). Linked like a result, never copied."""

    __slots__ = ("back", "fwd", "result")

    SUFFIX = " (inside not: effect reversed)"

    def __init__(self, result: Result) -> None:
        self.result = result
        self.back = result.fwd
        self.fwd = result.back


Item: TypeAlias = "Change | Result | Reversed"

CLEAN = Result((), True, True)


def result_of(items: Iterable[Item]) -> Result:
    """A result made of changes and inner results (clean inner results are dropped)."""
    kept: list[Item] = []
    back = fwd = True
    for item in items:
        if isinstance(item, Change):
            back = back and item.backward
            fwd = fwd and item.forward
        else:
            if not (item.result if isinstance(item, Reversed) else item).items:
                continue
            back = back and item.back
            fwd = fwd and item.fwd
        kept.append(item)
    if not kept:
        return CLEAN
    return Result(tuple(kept), back, fwd)


def changes_in(items: Iterable[Item]) -> Iterator[Change]:
    """The changes of ``items`` depth first, in the order they were found, visiting each result once
    (iteratively: a chain of references can nest results thousands deep). Inside ``n`` levels of
    :class:`Reversed`, a change has its directions swapped ``n`` times and the suffix ``n`` times."""
    seen: set[tuple[int, int]] = set()
    stack: list[tuple[Iterator[Item], int]] = [(iter(items), 0)]
    while stack:
        todo, flips = stack[-1]
        for item in todo:
            if isinstance(item, Change):
                yield _reversed(item, flips) if flips else item
                continue
            depth = flips + 1 if isinstance(item, Reversed) else flips
            inner = item.result if isinstance(item, Reversed) else item
            if (id(inner), depth) not in seen:  # results stay alive while linked, so their ids are stable
                seen.add((id(inner), depth))
                stack.append((iter(inner.items), depth))
                break
        else:
            stack.pop()


def _reversed(change: Change, flips: int) -> Change:
    back, fwd = (change.forward, change.backward) if flips % 2 else (change.backward, change.forward)
    return Change(change.code, change.path, back, fwd, change.message + Reversed.SUFFIX * flips)


class Facts:
    """What a subschema guarantees about its instances, used as the hypothesis in proofs.

    ``types`` are the instance kinds it can accept (from ``type``, ``enum``/``const`` and applicators);
    ``finite`` lists every value it can accept when that set is finite (enum, const, null/boolean), else None.
    ``conj`` holds the keyword dicts of the subschema and of everything it is a conjunction with (``allOf``
    branches, a ``$ref`` target, recursively): every instance satisfies each of them, so a keyword found in
    any one of them is a valid hypothesis.
    """

    __slots__ = ("conj", "finite", "kw", "types")

    def __init__(
        self, kw: dict[str, Any], types: frozenset[str], finite: list[Any] | None, conj: list[dict[str, Any]]
    ) -> None:
        self.kw = kw
        self.types = types
        self.finite = finite
        self.conj = conj

    def values(self, keyword: str) -> list[Any]:
        """Every value ``keyword`` has in the conjuncts: ``facts.values("maxLength") == [10, 4]``."""
        return [kw[keyword] for kw in self.conj if keyword in kw]


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

    ``own`` holds changes of this node's keywords, ``inner`` the results of in-place subschemas
    (applicators, dependentSchemas ...), ``values`` the results of the schemas of named properties and
    prefix items (they cannot change which properties or items count as evaluated). Inner results are
    linked as they are (see :class:`Result`); :func:`changes_in` lists their changes.
    """

    __slots__ = (
        "_facts_new",
        "_facts_old",
        "eng",
        "exact_unevaluated",
        "inner",
        "keys",
        "n",
        "nk",
        "o",
        "ok",
        "own",
        "values",
    )

    def __init__(self, eng: Engine, o: Node, n: Node, ok: dict[str, Any], nk: dict[str, Any]) -> None:
        self.eng = eng
        self.o = o
        self.n = n
        self.ok = ok
        self.nk = nk
        self.keys = ok.keys() | nk.keys()  # lets each keyword family skip itself cheaply
        self._facts_old: Facts | None = None
        self._facts_new: Facts | None = None
        self.exact_unevaluated = False  # unevaluatedProperties compared exactly (see _js_objects)
        self.own: list[Change] = []
        self.inner: list[Item] = []
        self.values: list[Item] = []

    @property
    def A(self) -> Facts:
        """Facts about OLD (computed on first use: many pairs never need them)."""
        if self._facts_old is None:
            self._facts_old = self.eng.facts(self.o)
        return self._facts_old

    @property
    def B(self) -> Facts:
        """Facts about NEW."""
        if self._facts_new is None:
            self._facts_new = self.eng.facts(self.n)
        return self._facts_new

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


class Vacuous:
    """``vac[0]``: OLD accepts no instance of ``kind`` (so every ``kind`` keyword of NEW holds for it);
    ``vac[1]`` the same for NEW. Computed on first use."""

    __slots__ = ("_kind", "_pair")

    def __init__(self, pair: Pair, kind: str) -> None:
        self._pair = pair
        self._kind = kind

    def __getitem__(self, side: int) -> bool:
        facts = self._pair.A if side == 0 else self._pair.B
        return self._kind not in facts.types


def _child(node: Node, kw: dict[str, Any], keyword: str, tokens: tuple[str | int, ...]) -> Node | None:
    if keyword not in kw:
        return None
    value: Any = kw[keyword]
    for token in tokens:
        value = value[token]
    return node.child(value, keyword, *tokens)
