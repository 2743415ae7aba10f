"""Applicators: ``allOf``, ``anyOf``, ``oneOf``, ``not``, ``if``/``then``/``else``, ``$ref`` beside other
keywords, ``$dynamicRef`` and the legacy ``dependencies``. Rules: docs/compat-codes.md#json-schema.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from ._js_docs import Node, Unresolved
from ._js_pair import TRUE_NODE, Pair, Result, Reversed
from ._js_scalar import show
from ._js_values import NUMBER, canonical_text, jkey
from ._js_vocab import is_pure

if TYPE_CHECKING:
    from ._js_engine import Engine

__all__ = ["covered", "diff_applicators", "disjoint", "virtual_branches"]

_CODE = {"allOf": "all_of", "anyOf": "any_of", "oneOf": "one_of"}
_MAX_DISJOINT_BRANCHES = 64


_APPLICATORS = frozenset(
    {"allOf", "anyOf", "oneOf", "not", "if", "$ref", "$dynamicRef", "$recursiveRef", "dependencies"}
)


def diff_applicators(p: Pair) -> None:
    if p.keys.isdisjoint(_APPLICATORS):
        return
    for keyword in ("allOf", "anyOf", "oneOf"):
        if keyword in p.ok or keyword in p.nk:
            _diff_branches(
                p,
                keyword,
                p.eng.children(p.o, keyword) if keyword in p.ok else None,
                p.eng.children(p.n, keyword) if keyword in p.nk else None,
            )
    if "not" in p.ok or "not" in p.nk:
        _diff_not(p)
    if "if" in p.ok or "if" in p.nk:
        _diff_conditional(p)
    if "$ref" in p.ok or "$ref" in p.nk:
        _diff_sibling_ref(p)
    for keyword in ("$dynamicRef", "$recursiveRef"):
        if keyword in p.ok or keyword in p.nk:
            p.add(
                "dynamic_ref.unprovable",
                p.path(keyword),
                False,
                False,
                f"{keyword} resolves through the dynamic scope, which this engine does not follow",
            )
    if "dependencies" in p.ok or "dependencies" in p.nk:
        _diff_dependencies(p)


def virtual_branches(p: Pair) -> bool:
    """``X`` against ``{"anyOf": [..., X', ...]}``: compare X as a one-branch anyOf (and the reverse).

    Wrapping a schema in anyOf/oneOf (to make it nullable, say) then reads as "branch added" instead of
    "every keyword removed".
    """
    if p.keys.isdisjoint(("anyOf", "oneOf")):
        return False
    for keyword in ("anyOf", "oneOf"):
        if any(k in p.ok or k in p.nk for k in ("anyOf", "oneOf") if k != keyword):
            continue
        if is_pure(p.nk, keyword) and keyword not in p.ok:
            _diff_branches(p, keyword, [p.o], p.eng.children(p.n, keyword), virtual="old")
            return True
        if is_pure(p.ok, keyword) and keyword not in p.nk:
            _diff_branches(p, keyword, p.eng.children(p.o, keyword), [p.n], virtual="new")
            return True
    return False


# -- branch lists ---------------------------------------------------------------------------------------


def _branch_key(eng: Engine, node: Node) -> Hashable:
    value = node.value
    if is_pure(value, "$ref"):
        return ("ref", value["$ref"])
    return ("json", canonical_text(value))


def _pair(eng: Engine, olds: list[Node], news: list[Node]) -> tuple[list[tuple[int, int]], list[int], list[int]]:
    """Pair branches: identical ones first, then by position when the counts agree, then by kinds.

    Paired branches are compared pairwise; unpaired ones are judged against the whole other side.
    """
    left, right = list(range(len(olds))), list(range(len(news)))
    pairs: list[tuple[int, int]] = []
    new_keys = {j: _branch_key(eng, news[j]) for j in right}
    for i in list(left):
        key = _branch_key(eng, olds[i])
        j = next((j for j in right if new_keys[j] == key), None)
        if j is not None:
            pairs.append((i, j))
            left.remove(i)
            right.remove(j)
    if len(left) == len(right):
        pairs += list(zip(left, right, strict=True))
        return pairs, [], []
    for i in list(left):
        kinds = eng.facts(eng.follow(olds[i])).types
        j = next((j for j in right if eng.facts(eng.follow(news[j])).types == kinds), None)
        if j is not None:
            pairs.append((i, j))
            left.remove(i)
            right.remove(j)
    return pairs, left, right


def _diff_branches(
    p: Pair, keyword: str, olds: list[Node] | None, news: list[Node] | None, virtual: str | None = None
) -> None:
    code = _CODE[keyword]
    if olds is None or news is None:
        _whole_added_or_removed(p, keyword, olds, news)
        return
    eng = p.eng
    pairs, removed, added = _pair(eng, olds, news)
    results: list[Result] = []
    # Unless its branches are disjoint on both sides, oneOf exclusivity reads each pair in both
    # directions, so recursion through it must count as negation.
    mixed = keyword == "oneOf" and not (pairwise_disjoint(eng, olds) and pairwise_disjoint(eng, news))
    for i, j in pairs:
        result = eng.sub(olds[i], news[j], flipped=mixed)
        results.append(result)
        p.inner.append(result)
    if keyword == "allOf":
        _conjuncts(p, olds, news, removed, added)
    else:
        for i in removed:
            p.add(
                f"{code}.branch_removed",
                olds[i].path,
                covered(eng, olds[i], news),
                True,
                f"{keyword} branch {show(olds[i].value)} removed",
            )
        for j in added:
            p.add(
                f"{code}.branch_added",
                news[j].path,
                True,
                covered(eng, news[j], olds),
                f"{keyword} branch {show(news[j].value)} added",
            )
    if any(i != j for i, j in pairs) and not removed and not added and virtual is None:
        p.add(f"{code}.reordered", p.path(keyword), True, True, f"{keyword} branches reordered")
    if keyword == "oneOf" and (removed or added or not all(r.back and r.fwd for r in results)):
        _exclusivity(p, olds, news, results, removed=bool(removed), added=bool(added))


def _conjuncts(p: Pair, olds: list[Node], news: list[Node], removed: list[int], added: list[int]) -> None:
    eng = p.eng
    for j in added:
        p.add(
            "all_of.branch_added",
            news[j].path,
            eng.subset(p.o, news[j]),
            True,
            f"allOf branch {show(news[j].value)} added: instances must now also match it",
        )
    for i in removed:
        p.add(
            "all_of.branch_removed",
            olds[i].path,
            True,
            eng.subset(p.n, olds[i]),
            f"allOf branch {show(olds[i].value)} removed",
        )


def _whole_added_or_removed(p: Pair, keyword: str, olds: list[Node] | None, news: list[Node] | None) -> None:
    eng, code = p.eng, _CODE[keyword]
    if olds is None and news is not None:
        if keyword == "allOf":
            back = all(eng.subset(p.o, b) for b in news)
        else:
            back = covered(eng, p.o, news) and (keyword == "anyOf" or pairwise_disjoint(eng, news))
        p.add(
            f"{code}.added",
            p.new_path(keyword),
            back,
            True,
            f"{keyword} added: instances must now match {_how(keyword)} of {len(news)} schema(s)",
        )
    elif olds is not None:
        if keyword == "allOf":
            fwd = all(eng.subset(p.n, a) for a in olds)
        else:
            fwd = covered(eng, p.n, olds) and (keyword == "anyOf" or pairwise_disjoint(eng, olds))
        p.add(f"{code}.removed", p.old_path(keyword), True, fwd, f"{keyword} removed")


def _how(keyword: str) -> str:
    return {"allOf": "all", "anyOf": "at least one", "oneOf": "exactly one"}[keyword]


def _exclusivity(
    p: Pair, olds: list[Node], news: list[Node], results: list[Result], *, removed: bool, added: bool
) -> None:
    eng = p.eng
    # Backward needs every old instance to match exactly one new branch: the new branches are disjoint,
    # or no branch was added and every paired new branch lies inside its old one.
    back = (not added and all(r.fwd for r in results)) or pairwise_disjoint(eng, news)
    fwd = (not removed and all(r.back for r in results)) or pairwise_disjoint(eng, olds)
    if not (back and fwd):
        p.add(
            "one_of.exclusivity.unprovable",
            p.path("oneOf"),
            back,
            fwd,
            "oneOf accepts an instance only if exactly one branch matches; the changed branches are not "
            "provably disjoint, so an instance may now match none or two",
        )


def covered(eng: Engine, x: Node, ys: list[Node]) -> bool:
    """Proven: every instance of ``x`` matches some schema in ``ys`` (splitting ``x`` by type if needed)."""
    if any(eng.subset(x, y) for y in ys):
        return True
    x = eng.follow(x)
    if not isinstance(x.value, dict | bool):
        return False
    names = _type_names(eng.facts(x).types)
    if len(names) < 2:
        return False
    base = x.value if isinstance(x.value, dict) else {}
    return all(any(eng.subset(x.variant({**base, "type": name}, name), y) for y in ys) for name in names)


def _type_names(kinds: frozenset[str]) -> list[str]:
    names = sorted(k for k in kinds if k not in NUMBER)
    if kinds & NUMBER:
        names.append("integer" if kinds & NUMBER == {"int"} else "number")
    return names


# -- disjointness ---------------------------------------------------------------------------------------


def pairwise_disjoint(eng: Engine, nodes: list[Node]) -> bool:
    if len(nodes) > _MAX_DISJOINT_BRANCHES:
        return False
    return all(disjoint(eng, nodes[i], nodes[j]) for i in range(len(nodes)) for j in range(i + 1, len(nodes)))


def disjoint(eng: Engine, x: Node, y: Node, depth: int = 0) -> bool:
    """Proven: no instance is valid under both ``x`` and ``y``."""
    x, y = eng.follow(x), eng.follow(y)
    if eng.is_empty(x) or eng.is_empty(y):
        return True
    fx, fy = eng.facts(x), eng.facts(y)
    if not fx.types & fy.types:
        return True
    if (
        fx.finite is not None
        and fy.finite is not None
        and not ({jkey(v) for v in fx.finite} & {jkey(v) for v in fy.finite})
    ):
        return True
    if depth >= 2:
        return False
    return (
        _discriminated(eng, x, y, depth)
        or _discriminated(eng, y, x, depth)
        or any(disjoint(eng, b, y, depth + 1) for b in eng.children(x, "allOf"))
        or any(disjoint(eng, x, b, depth + 1) for b in eng.children(y, "allOf"))
    )


def _discriminated(eng: Engine, x: Node, y: Node, depth: int) -> bool:
    """x only accepts objects with a required property whose schema is disjoint from y's for it."""
    if not isinstance(x.value, dict) or not isinstance(y.value, dict) or eng.facts(x).types != {"object"}:
        return False
    xp, yp = x.value.get("properties", {}), y.value.get("properties", {})
    for name in x.value.get("required", ()):
        if (
            name in xp
            and name in yp
            and disjoint(eng, x.child(xp[name], "properties", name), y.child(yp[name], "properties", name), depth + 1)
        ):
            return True
    return False


# -- not, if/then/else, $ref beside other keywords, legacy dependencies ---------------------------------


def _diff_not(p: Pair) -> None:
    eng = p.eng
    old, new = p.old_child("not"), p.new_child("not")
    if old is not None and new is not None:
        # Inside not, widening the subschema narrows the schema: the inner result counts reversed.
        p.inner.append(Reversed(eng.sub(old, new, flipped=True)))
    elif new is not None:
        p.add(
            "not.added",
            p.new_path("not"),
            disjoint(eng, p.o, new),
            True,
            f"not added: instances must not match {show(new.value)}",
        )
    elif old is not None:
        p.add(
            "not.removed",
            p.old_path("not"),
            True,
            disjoint(eng, p.n, old),
            f"not removed: instances matching {show(old.value)} are no longer rejected",
        )


def _conditional_parts(p: Pair, old: bool) -> dict[str, Node | None]:
    get = p.old_child if old else p.new_child
    return {k: get(k) for k in ("if", "then", "else")}


def _diff_conditional(p: Pair) -> None:
    eng = p.eng
    po, pn = _conditional_parts(p, True), _conditional_parts(p, False)
    if po["if"] is None or pn["if"] is None:
        _conditional_added_or_removed(p, po, pn)
        return
    cond = eng.sub(po["if"], pn["if"], flipped=True)
    if not (cond.back and cond.fwd):
        p.add(
            "conditional.changed.unprovable",
            p.path("if"),
            False,
            False,
            "the if condition changed; which of then/else applies to an instance may change, so neither "
            "direction is proven",
        )
        return
    p.inner.append(cond)
    for part in ("then", "else"):
        old, new = po[part], pn[part]
        if old is not None and new is not None:
            p.inner.append(eng.sub(old, new))
        elif old is not None or new is not None:
            a, b = old or TRUE_NODE, new or TRUE_NODE
            verb = "added" if old is None else "removed"
            p.add(
                f"conditional.{part}.{verb}",
                p.path(part),
                eng.subset(a, b),
                eng.subset(b, a),
                f"{part} {verb} under an unchanged if",
            )


def _conditional_added_or_removed(p: Pair, po: dict[str, Node | None], pn: dict[str, Node | None]) -> None:
    eng = p.eng
    if pn["if"] is not None:
        back = all(eng.subset(p.o, branch) for branch in (pn["then"], pn["else"]) if branch is not None)
        p.add("conditional.added", p.new_path("if"), back, True, "if/then/else added")
    else:
        fwd = all(eng.subset(p.n, branch) for branch in (po["then"], po["else"]) if branch is not None)
        p.add("conditional.removed", p.old_path("if"), True, fwd, "if/then/else removed")


def _target(p: Pair, node: Node, side: str) -> Node | None:
    target = p.eng.deref(node)
    if isinstance(target, Unresolved):
        p.add(target.code, node.path + "/$ref", False, False, f"{side} {target.message}")
        return None
    return target


def _diff_sibling_ref(p: Pair) -> None:
    eng = p.eng
    old = _target(p, p.o, "old") if "$ref" in p.ok else None
    new = _target(p, p.n, "new") if "$ref" in p.nk else None
    if "$ref" in p.ok and "$ref" in p.nk:
        if old is not None and new is not None:
            p.inner.append(eng.sub(old, new))
    elif new is not None:
        p.add(
            "ref.added",
            p.new_path("$ref"),
            eng.subset(p.o, new),
            True,
            f"$ref {p.nk['$ref']!r} added: instances must now also match it",
        )
    elif old is not None:
        p.add("ref.removed", p.old_path("$ref"), True, eng.subset(p.n, old), f"$ref {p.ok['$ref']!r} removed")


def _diff_dependencies(p: Pair) -> None:
    vo: Any = p.ok.get("dependencies")
    vn: Any = p.nk.get("dependencies")
    if vo is not None and vn is not None and p.eng.same(vo, vn):
        return
    verb = "added" if vo is None else "removed" if vn is None else "changed"
    p.add(
        f"dependencies.{verb}",
        p.path("dependencies"),
        verb == "removed",
        verb == "added",
        f"legacy keyword dependencies {verb}; it is not part of draft 2020-12 but jsonschema-rs still "
        "enforces it, so only the obvious direction is proven (use dependentRequired/dependentSchemas)",
    )
