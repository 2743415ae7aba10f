"""Array keywords: ``prefixItems``/``items``/``unevaluatedItems``, ``contains`` with its counts, and bounds."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, NamedTuple

from ._js_docs import Node, Unresolved
from ._js_evaluation import BRANCHING, ITEM_KEYWORDS, branches_evaluate_nothing
from ._js_logic import disjoint
from ._js_pair import TRUE_NODE, Facts, Pair, Vacuous, changes_in
from ._js_scalar import diff_bound, show
from ._js_values import jkey
from ._js_vocab import INPLACE, is_false

if TYPE_CHECKING:
    from ._js_engine import Engine

__all__ = ["check_unevaluated", "diff_arrays", "is_evaluation_neutral"]

_ARRAY_KEYS = frozenset(
    {
        "prefixItems",
        "items",
        "unevaluatedItems",
        "contains",
        "minContains",
        "maxContains",
        "minItems",
        "maxItems",
        "uniqueItems",
    }
)


def diff_arrays(p: Pair) -> None:
    if p.keys.isdisjoint(_ARRAY_KEYS):
        return
    _diff_items(p)
    _diff_contains(p)
    diff_bound(p, "minItems", "min_items", _holds_size, lower=True, what="arrays")
    diff_bound(p, "maxItems", "max_items", _holds_size, lower=False, what="arrays")
    _diff_unique(p)


def _complex(kw: dict[str, Any]) -> bool:
    """unevaluatedItems that depends on what applicators evaluated: not reducible to ``items``."""
    return "unevaluatedItems" in kw and "items" not in kw and ("contains" in kw or any(k in kw for k in INPLACE))


def _scope(eng: Engine, node: Node, kw: dict[str, Any]) -> bool | None:
    """For unevaluatedItems next to applicators: True when the conjuncts (allOf, $ref) evaluate every item
    (unevaluatedItems is moot), False when they evaluate none past ``node``'s own prefixItems (it acts as
    ``items``), None when that depends on the instance (contains, or a branch that evaluates items)."""
    own = len(kw.get("prefixItems", []))
    seen = {(node.doc.uid, node.key)}
    todo = [node]
    while todo:
        current = todo.pop()
        value = current.value
        if "contains" in value or (
            any(k in value for k in BRANCHING) and not branches_evaluate_nothing(eng, current, ITEM_KEYWORDS)
        ):
            return None
        nexts = list(eng.children(current, "allOf"))  # a copy: the engine keeps its own
        if "$ref" in value:
            target = eng.deref(current)
            if isinstance(target, Unresolved):
                return None
            nexts.append(target)
        for member in (eng.follow(n) for n in nexts):
            if not isinstance(member.value, dict) or (member.doc.uid, member.key) in seen:
                continue
            seen.add((member.doc.uid, member.key))
            if "items" in member.value or "unevaluatedItems" in member.value:
                return True
            if len(member.value.get("prefixItems", [])) > own:
                return None
            todo.append(member)
    return False


def _inexact(eng: Engine, node: Node, kw: dict[str, Any]) -> bool:
    """unevaluatedItems whose reach depends on the instance: compared only while nothing else changes."""
    return _complex(kw) and _scope(eng, node, kw) is None


def _effective_items(eng: Engine, node: Node, kw: dict[str, Any]) -> tuple[Node, str | None]:
    if "items" in kw:
        return node.child(kw["items"], "items"), "items"
    if "unevaluatedItems" in kw and (not _complex(kw) or _scope(eng, node, kw) is False):
        return node.child(kw["unevaluatedItems"], "unevaluatedItems"), "unevaluatedItems"
    return TRUE_NODE, None


def _diff_items(p: Pair) -> None:
    """Compare items index by index: index ``i`` is governed by ``prefixItems[i]`` when it exists, else by
    ``items`` (or a plain ``unevaluatedItems``, which means the same when nothing else evaluates items)."""
    eng = p.eng
    po, pn = p.ok.get("prefixItems", []), p.nk.get("prefixItems", [])
    io, io_kw = _effective_items(eng, p.o, p.ok)
    in_, in_kw = _effective_items(eng, p.n, p.nk)
    vac = Vacuous(p, "array")
    max_o, max_n = p.ok.get("maxItems"), p.nk.get("maxItems")
    for i in range(max(len(po), len(pn))):
        co = p.o.child(po[i], "prefixItems", i) if i < len(po) else io
        cn = p.n.child(pn[i], "prefixItems", i) if i < len(pn) else in_
        if i < len(po) and i < len(pn):
            p.values.append(eng.sub(co, cn, guarded=True))
            continue
        back = vac[0] or (max_o is not None and max_o <= i) or eng.subset(co, cn, guarded=True)
        fwd = vac[1] or (max_n is not None and max_n <= i) or eng.subset(cn, co, guarded=True)
        if i >= len(po):
            p.add(
                "prefix_items.added",
                p.new_path("prefixItems", i),
                back,
                fwd,
                f"item {i} gets its own schema (it was governed by {io_kw or 'nothing'})",
            )
        else:
            p.add(
                "prefix_items.removed",
                p.old_path("prefixItems", i),
                back,
                fwd,
                f"item {i} loses its own schema (now governed by {in_kw or 'nothing'})",
            )
    if io_kw is None and in_kw is None:
        return
    tail = max(len(po), len(pn))
    if io_kw and in_kw and isinstance(io.value, dict) and isinstance(in_.value, dict):
        p.values.append(eng.sub(io, in_, guarded=True))
        return
    if eng.same(io.value, in_.value):
        return
    back = vac[0] or (max_o is not None and max_o <= tail) or eng.subset(io, in_, guarded=True)
    fwd = vac[1] or (max_n is not None and max_n <= tail) or eng.subset(in_, io, guarded=True)
    verb = "added" if io_kw is None else "removed" if in_kw is None else "changed"
    keyword = in_kw or io_kw or "items"
    p.add(
        f"items.{verb}",
        p.path(keyword),
        back,
        fwd,
        f"schema for items from index {tail} on {verb} ({keyword}: {show(in_.value if in_kw else io.value)})",
    )


class _Count(NamedTuple):
    """One side's contains group: the schema (None when absent) and its count bounds."""

    schema: Node | None
    low: Any
    high: Any


def _contains_side(node: Node, kw: dict[str, Any]) -> _Count:
    if "contains" not in kw:
        return _Count(None, None, None)
    return _Count(node.child(kw["contains"], "contains"), kw.get("minContains", 1), kw.get("maxContains"))


def _diff_contains(p: Pair) -> None:
    """Judge ``contains`` with its counts as a group: ``minContains`` grows with the ``contains`` schema
    while ``maxContains`` shrinks with it. Each side's items count too: a side whose arrays always hold
    enough matching items (prefixItems and items that imply the other contains, minItems) satisfies it."""
    old, new = _contains_side(p.o, p.ok), _contains_side(p.n, p.nk)
    if old.schema is None and new.schema is None:
        return
    vac = Vacuous(p, "array")
    back = vac[0] or _contains_holds(p, 0, old, new)
    fwd = vac[1] or _contains_holds(p, 1, new, old)
    if old.schema is not None and new.schema is not None and old.high is None and new.high is None:
        # Only lower counts: a wider contains schema can only count more items.
        result = p.eng.sub(old.schema, new.schema, guarded=True)
        simple_back = vac[0] or new.low == 0 or old.low >= new.low
        simple_fwd = vac[1] or old.low == 0 or new.low >= old.low
        if (result.back and simple_back, result.fwd and simple_fwd) == (back, fwd):
            # The schemas' own changes say it best, and the items prove nothing more.
            p.inner.append(result)
            if old.low != new.low:
                verb = "tightened" if new.low > old.low else "relaxed"
                p.add(
                    f"min_contains.{verb}",
                    p.path("minContains"),
                    simple_back,
                    simple_fwd,
                    f"minContains {verb} from {old.low} to {new.low}",
                )
            return
    for keyword, code, index in (
        ("contains", "contains", 0),
        ("minContains", "min_contains", 1),
        ("maxContains", "max_contains", 2),
    ):
        vo = (old.schema.value if old.schema else None, old.low, old.high)[index]
        vn = (new.schema.value if new.schema else None, new.low, new.high)[index]
        if _same_count_part(p, index, (vo, vn), (old, new)):
            continue
        verb = "added" if vo is None else "removed" if vn is None else "changed"
        p.add(
            f"{code}.{verb}",
            p.path(keyword),
            back,
            fwd,
            f"{keyword} {verb} ({show(vn if vn is not None else vo)}); contains and its counts are judged "
            "together, with the items each side guarantees",
        )


def _same_count_part(p: Pair, index: int, values: tuple[Any, Any], sides: tuple[_Count, _Count]) -> bool:
    (vo, vn), (old, new) = values, sides
    if vo is None or vn is None:
        return vo is None and vn is None
    if index:
        return p.eng.same(vo, vn)
    if old.schema is None or new.schema is None:
        return False
    return p.eng.sub(old.schema, new.schema, guarded=True).clean


def _contains_holds(p: Pair, side: int, a: _Count, b: _Count) -> bool:
    """Proven: every array of ``side`` (whose own contains group is ``a``) satisfies the group ``b``."""
    if b.schema is None or (b.low == 0 and b.high is None):
        return True
    lower = b.low == 0 or _at_least(p, side, a, b.schema) >= b.low
    upper = b.high is None or _at_most(p, side, a, b.schema) <= b.high
    return lower and upper


def _at_least(p: Pair, side: int, a: _Count, goal: Node) -> int:
    """How many items matching ``goal`` every array of ``side`` is proven to hold."""
    eng = p.eng
    facts, node, kw = (p.A, p.o, p.ok) if side == 0 else (p.B, p.n, p.nk)
    best = a.low if a.schema is not None and eng.subset(a.schema, goal, guarded=True) else 0
    length = max([*facts.values("minItems"), a.low if a.schema is not None else 0])
    prefix = kw.get("prefixItems", [])
    count = sum(
        eng.subset(node.child(prefix[i], "prefixItems", i), goal, guarded=True) for i in range(min(length, len(prefix)))
    )
    if length > len(prefix):
        rest, rest_kw = _effective_items(eng, node, kw)
        if rest_kw is not None and eng.subset(rest, goal, guarded=True):
            count += length - len(prefix)
    return max(best, count)


def _at_most(p: Pair, side: int, a: _Count, goal: Node) -> float:
    """How many items matching ``goal`` an array of ``side`` can hold at most (infinity: unbounded)."""
    eng = p.eng
    facts, node, kw = (p.A, p.o, p.ok) if side == 0 else (p.B, p.n, p.nk)
    bounds: list[float] = [*facts.values("maxItems")]
    if a.schema is not None and a.high is not None and eng.subset(goal, a.schema, guarded=True, flipped=True):
        bounds.append(a.high)
    # Items that cannot match do not count: with a tail that never matches, only the prefix can.
    rest, rest_kw = _effective_items(eng, node, kw)
    if rest_kw is not None and (eng.is_empty(rest) or disjoint(eng, rest, goal)):
        prefix = kw.get("prefixItems", [])
        bounds.append(sum(not disjoint(eng, node.child(s, "prefixItems", i), goal) for i, s in enumerate(prefix)))
    return min(bounds, default=math.inf)


def _holds_size(p: Pair, facts: Facts, keyword: str, bound: Any) -> bool:
    if "array" not in facts.types:
        return True
    if facts.finite is not None:
        return all(
            len(v) >= bound if keyword == "minItems" else len(v) <= bound for v in facts.finite if isinstance(v, list)
        )
    return any(_size_implied(kw, keyword, bound) for kw in facts.conj)


def _size_implied(kw: dict[str, Any], keyword: str, bound: Any) -> bool:
    if keyword == "minItems":
        mine = kw.get("minItems")
        return (mine is not None and mine >= bound) or ("contains" in kw and kw.get("minContains", 1) >= bound)
    mine = kw.get("maxItems")
    if mine is not None and mine <= bound:
        return True
    rest = (
        kw["items"]
        if "items" in kw
        else (kw["unevaluatedItems"] if "unevaluatedItems" in kw and not _complex(kw) else None)
    )
    return is_false(rest) and len(kw.get("prefixItems", [])) <= bound


def _holds_unique(facts: Facts) -> bool:
    if "array" not in facts.types:
        return True
    if facts.finite is not None:
        return all(len({jkey(x) for x in v}) == len(v) for v in facts.finite if isinstance(v, list))
    return True in facts.values("uniqueItems") or any(m <= 1 for m in facts.values("maxItems"))


def _diff_unique(p: Pair) -> None:
    uo, un = p.ok.get("uniqueItems") is True, p.nk.get("uniqueItems") is True
    if uo == un:
        return
    back = not un or _holds_unique(p.A)
    fwd = not uo or _holds_unique(p.B)
    verb = "added" if un else "removed"
    p.add(f"unique_items.{verb}", p.path("uniqueItems"), back, fwd, f"uniqueItems {verb}")


def is_evaluation_neutral(code: str) -> bool:
    """Changes that cannot alter which properties/items count as evaluated (annotations, reordering)."""
    return code.startswith(("annotation.", "default.", "identifier.", "definition.", "keyword.")) or (
        code.endswith(".reordered") or code == "type.rewritten"
    )


def _live(eng: Engine, node: Node, kw: dict[str, Any]) -> bool:
    """unevaluatedItems can reject something here: next to items, or to a conjunct that evaluates every
    item, it is moot (as good as absent)."""
    if "unevaluatedItems" not in kw or "items" in kw:
        return False
    return not (_complex(kw) and _scope(eng, node, kw) is True)


def check_unevaluated(p: Pair) -> None:
    """unevaluatedItems next to applicators or contains: sound only when nothing else changed."""
    if "unevaluatedItems" not in p.keys:
        return
    co, cn = _inexact(p.eng, p.o, p.ok), _inexact(p.eng, p.n, p.nk)
    in_o, in_n = "unevaluatedItems" in p.ok, "unevaluatedItems" in p.nk
    live_o, live_n = _live(p.eng, p.o, p.ok), _live(p.eng, p.n, p.nk)
    if not (co or cn):
        if (
            in_o
            and in_n
            and "items" in p.ok
            and "items" in p.nk
            and not p.eng.same(p.ok["unevaluatedItems"], p.nk["unevaluatedItems"])
        ):
            p.add(
                "keyword.ignored.changed",
                p.path("unevaluatedItems"),
                True,
                True,
                "unevaluatedItems changed, but items already evaluates every item here",
            )
        return
    if co and not live_n:
        p.add(
            "unevaluated_items.removed",
            p.old_path("unevaluatedItems"),
            True,
            False,
            "unevaluatedItems removed; which items it rejected depends on other keywords, so "
            "narrowing back is not proven",
        )
        return
    if cn and not live_o:
        p.add(
            "unevaluated_items.added",
            p.new_path("unevaluatedItems"),
            False,
            True,
            "unevaluatedItems added next to applicators or contains; which old arrays it now rejects cannot be proven",
        )
        return
    relevant = next((c for c in changes_in([*p.own, *p.inner]) if not is_evaluation_neutral(c.code)), None)
    uo, un = (
        p.o.child(p.ok["unevaluatedItems"], "unevaluatedItems"),
        p.n.child(p.nk["unevaluatedItems"], "unevaluatedItems"),
    )
    if relevant is not None:
        p.add(
            "unevaluated_items.unprovable",
            p.path("unevaluatedItems"),
            False,
            False,
            "unevaluatedItems depends on which items other keywords evaluate, and those changed "
            f"({relevant.code} at {relevant.path or '/'})",
        )
        return
    p.inner.append(p.eng.sub(uo, un, guarded=True))
