"""Applicators: ``allOf``, ``anyOf``, ``oneOf``, ``not``, ``if``/``then``/``else``, ``$ref`` beside other
keywords, ``$dynamicRef`` and the legacy ``dependencies``. Rules: docs/compat-codes.md#json-schema.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable
from typing import TYPE_CHECKING, Any

import orjson

from ._js_docs import Node, Unresolved
from ._js_pair import TRUE_NODE, Item, Pair, Result, Reversed
from ._js_scalar import admitter, bounds_disjoint, show
from ._js_values import NUMBER, canonical_text, contains_ref, jkey
from ._js_vocab import is_pure
from ._report import Change

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
    try:  # orjson's sorted text (C) where it is exact; it writes NaN and the infinities as null, hence the look
        text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # an integer beyond 64 bits, or not JSON at all
        text = b"null"
    return ("json", canonical_text(value)) if b"null" in text else ("orjson", text)


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
    # directions, so recursion through it must count as negation. Each side's branches are judged on the
    # instances _exclusivity proves things about: the new ones on old instances, the old ones on new ones.
    mixed = keyword == "oneOf" and not (pairwise_disjoint(eng, news, p.o) and pairwise_disjoint(eng, olds, p.n))
    for i, j in pairs:
        result = eng.sub(olds[i], news[j], flipped=mixed)
        results.append(result)
        p.inner += (
            [result] if keyword == "allOf" else _covered_anyway(eng, result, olds[i], news[j], olds=olds, news=news)
        )
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
        _exclusivity(p, olds, news, pairs, results, removed=bool(removed), added=bool(added))


def _covered_anyway(
    eng: Engine, result: Result, old: Node, new: Node, *, olds: list[Node], news: list[Node]
) -> list[Item]:
    """A paired anyOf/oneOf branch result, with the directions the other side's branches cover anyway.

    Pairing is only a way to explain a change: ``anyOf [integer, string]`` against ``anyOf [integer|string,
    string]`` pairs integer with integer|string, which is not contained backward, yet every integer matches a
    new branch. What the union proves is proven; the pair's changes are then listed with that direction set
    (copied, not linked: it happens only where a branch was merged or split). oneOf's exclusivity is judged
    apart, on the pair results as they are. Branches with references keep their pair result: comparing them
    across would recurse into every pair of definitions.
    """
    if (result.back and result.fwd) or contains_ref(old.value) or contains_ref(new.value):
        return [result]  # through references the cross comparisons would recurse into every definition pair
    back = not result.back and covered(eng, old, news)
    fwd = not result.fwd and covered(eng, new, olds)
    if not (back or fwd):
        return [result]
    why = " (the branch is still covered by the other side's branches)"
    return [Change(c.code, c.path, c.backward or back, c.forward or fwd, c.message + why) for c in result.changes]


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
            back = covered(eng, p.o, news) and (keyword == "anyOf" or _one_of_each(eng, p.o, news))
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
            fwd = covered(eng, p.n, olds) and (keyword == "anyOf" or _one_of_each(eng, p.n, olds))
        p.add(f"{code}.removed", p.old_path(keyword), True, fwd, f"{keyword} removed")


def _how(keyword: str) -> str:
    return {"allOf": "all", "anyOf": "at least one", "oneOf": "exactly one"}[keyword]


def _exclusivity(
    p: Pair,
    olds: list[Node],
    news: list[Node],
    pairs: list[tuple[int, int]],
    results: list[Result],
    *,
    removed: bool,
    added: bool,
) -> None:
    eng = p.eng
    # Backward needs every old instance to match exactly one new branch: the new branches are disjoint,
    # or no branch was added and every paired new branch lies inside its old one, or each old branch
    # lands in one new branch and stays clear of the others (_partitioned).
    back = (
        (not added and all(r.fwd for r in results))
        or pairwise_disjoint(eng, news, p.o)
        or _partitioned(eng, p.o, olds, news, {i: (j, r.back, r.fwd) for (i, j), r in zip(pairs, results, strict=True)})
    )
    fwd = (
        (not removed and all(r.back for r in results))
        or pairwise_disjoint(eng, olds, p.n)
        or _partitioned(eng, p.n, news, olds, {j: (i, r.fwd, r.back) for (i, j), r in zip(pairs, results, strict=True)})
    )
    if not (back and fwd):
        p.add(
            "one_of.exclusivity.unprovable",
            p.path("oneOf"),
            back,
            fwd,
            "oneOf accepts an instance only if exactly one branch matches; the changed branches are not "
            "provably disjoint, so an instance may now match none or two",
        )


def _partitioned(
    eng: Engine, ctx: Node, srcs: list[Node], dsts: list[Node], paired: dict[int, tuple[int, bool, bool]]
) -> bool:
    """Proven: an instance of ``ctx`` matching exactly one of ``srcs`` matches exactly one of ``dsts``.

    ``paired[i] = (j, inside, outside)``: source branch i was compared with destination branch j, ``inside``
    proves srcs[i] within dsts[j], ``outside`` dsts[j] within srcs[i]. Each source branch must lie inside
    some destination branch and meet no other one: either the two are disjoint, or the other one lies inside
    a different source branch, which an instance of srcs[i] does not match (oneOf is exclusive). The
    subsets read oneOf's exclusivity negatively, so they are computed as under negation (decision 0100).
    """
    if len(srcs) * len(dsts) > _MAX_DISJOINT_BRANCHES:
        return False
    within = {paired[i][0]: i for i in paired if paired[i][2]}  # destination j lies inside source i
    for i, src in enumerate(srcs):
        home = paired.get(i)
        homes = [home[0]] if home is not None and home[1] else []
        homes = homes or [j for j, dst in enumerate(dsts) if eng.subset(src, dst, flipped=True)][:1]
        if not homes:
            return False
        j = homes[0]
        for k, other in enumerate(dsts):
            if k == j or (k in within and within[k] != i):
                continue
            if not disjoint(eng, src, other, ctx=ctx):
                return False
    return True


def covered(eng: Engine, x: Node, ys: list[Node], depth: int = 0) -> bool:
    """Proven: every instance of ``x`` matches some schema in ``ys`` (splitting ``x`` by its own anyOf/oneOf
    branches or by type if needed)."""
    if len(ys) > 1:
        # Among several candidates, one that x is provably disjoint from is skipped without comparing (a oneOf
        # of large objects told apart by a discriminator: comparing x with each would walk every property).
        # Exact but for an x with no instances that no check proves empty: then "not covered" errs safely.
        if eng.is_empty(x) or any(not disjoint(eng, x, y) and eng.subset(x, y) for y in ys):
            return True
    elif any(eng.subset(x, y) for y in ys):
        return True
    x = eng.follow(x)
    if not isinstance(x.value, dict | bool):
        return False
    for keyword in ("anyOf", "oneOf") if depth < 2 else ():  # every instance of x matches one of its branches
        branches = eng.children(x, keyword)
        if branches and all(covered(eng, branch, ys, depth + 1) for branch in branches):
            return True
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


def pairwise_disjoint(eng: Engine, nodes: list[Node], ctx: Node | None = None) -> bool:
    """Proven: no instance (of ``ctx``, when given) is valid under two of ``nodes``."""
    if len(nodes) > 2 and _tagged_apart(eng, nodes, ctx):
        return True
    if len(nodes) > _MAX_DISJOINT_BRANCHES:
        return False
    return all(disjoint(eng, nodes[i], nodes[j], ctx=ctx) for i in range(len(nodes)) for j in range(i + 1, len(nodes)))


def _tagged_apart(eng: Engine, nodes: list[Node], ctx: Node | None) -> bool:
    """Proven at once, the way a tagged union is read: every node accepts only objects, requires one same
    property, and allows it only values that no other node allows (a oneOf of 65 sinks told apart by
    ``"type": {"const": ...}``). Pair by pair, ``_discriminated`` finds the same; this is one pass, not n^2/2."""
    around = [eng.follow(ctx)] if ctx is not None else []
    tags = []
    for node in nodes:
        tag = _tag(eng, [eng.follow(node), *around])
        if not tag:
            return False
        tags.append(tag)
    for name in set.intersection(*(set(t) for t in tags)):
        taken: set[Hashable] = set()
        for tag in tags:
            if not taken.isdisjoint(tag[name]):
                break
            taken |= tag[name]
        else:
            return True
    return False


def _tag(eng: Engine, parts: list[Node]) -> dict[str, frozenset[Hashable]] | None:
    """For an instance of every one of ``parts`` (a node and the schema around it), each of them accepting only
    objects: every value each property it requires may take, for the ones with finitely many (None: not an object
    schema)."""
    kinds = eng.facts(parts[0]).types
    for part in parts[1:]:
        kinds = kinds & eng.facts(part).types
    if kinds != {"object"}:
        return None
    required = {
        n for part in parts for kw in eng.facts(part).conj for n in kw.get("required", ()) if isinstance(n, str)
    }
    values: dict[str, frozenset[Hashable]] = {}
    for part in parts:
        for name, schemas in _property_schemas(eng, part, required).items():
            for schema in schemas:
                finite = eng.facts(eng.follow(schema)).finite
                if finite is not None:  # every value the property may take here
                    allowed = frozenset(jkey(v) for v in finite)
                    values[name] = allowed & values[name] if name in values else allowed
    return values


def _one_of_each(eng: Engine, x: Node, ys: list[Node]) -> bool:
    """Proven, given every instance of ``x`` matches some of ``ys``: it matches only one."""
    x = eng.follow(x)
    return pairwise_disjoint(eng, ys, x) or all(
        _partitioned(eng, x, [x.variant(value, name) if name else x], ys, {}) for name, value in _by_type(eng, x)
    )


def _by_type(eng: Engine, x: Node) -> list[tuple[str, dict[str, Any]]]:
    """``x`` split by instance type (as :func:`covered` splits it), or ``x`` whole."""
    x = eng.follow(x)
    names = _type_names(eng.facts(x).types)
    if len(names) < 2 or not isinstance(x.value, dict | bool):
        return [("", {})]
    base = x.value if isinstance(x.value, dict) else {}
    return [(name, {**base, "type": name}) for name in names]


def disjoint(eng: Engine, x: Node, y: Node, depth: int = 0, *, ctx: Node | None = None) -> bool:
    """Proven: no instance (of ``ctx``, when given: the schema around x and y) is valid under both."""
    # Memoised per diff: a oneOf's branches are checked pair by pair for each direction and each proof that
    # needs them (nodes' keys identify their values, so the answer is a function of the keys).
    key = (x.doc.uid, x.key, y.doc.uid, y.key, depth, None if ctx is None else (ctx.doc.uid, ctx.key))
    known = eng.disjoint_memo.get(key)
    if known is None:
        known = eng.disjoint_memo[key] = _disjoint(eng, x, y, depth, ctx)
    return known


def _disjoint(eng: Engine, x: Node, y: Node, depth: int, ctx: Node | None) -> bool:
    x, y = eng.follow(x), eng.follow(y)
    if eng.is_empty(x) or eng.is_empty(y):
        return True
    fx, fy = eng.facts(x), eng.facts(y)
    kinds = fx.types & fy.types & (eng.facts(eng.follow(ctx)).types if ctx is not None else fx.types)
    if not kinds or bounds_disjoint(fx, fy):
        return True
    # A finite side whose every value the other side's own keywords refuse (an enum member outside a range,
    # a const failing a pattern): checked by the runtime validator, value by value.
    for finite, other in ((fx, fy), (fy, fx)):
        if finite.finite is not None:
            admits = admitter(other)
            if not any(admits(v) for v in finite.finite):
                return True
    if depth >= 2:
        return False
    return (
        _discriminated(eng, x, y, depth, ctx)
        or _discriminated(eng, y, x, depth, ctx)
        or any(disjoint(eng, b, y, depth + 1, ctx=ctx) for b in eng.children(x, "allOf"))
        or any(disjoint(eng, x, b, depth + 1, ctx=ctx) for b in eng.children(y, "allOf"))
        or _every_branch_disjoint(eng, x, y, depth, ctx)
        or _every_branch_disjoint(eng, y, x, depth, ctx)
    )


def _every_branch_disjoint(eng: Engine, x: Node, y: Node, depth: int, ctx: Node | None) -> bool:
    """An instance of x matches some anyOf/oneOf branch of x; none of them meets y."""
    for keyword in ("anyOf", "oneOf"):
        branches = eng.children(x, keyword)
        if branches and all(disjoint(eng, b, y, depth + 1, ctx=ctx) for b in branches):
            return True
    return False


def _discriminated(eng: Engine, x: Node, y: Node, depth: int, ctx: Node | None) -> bool:
    """Every instance of both x and y is an object, x requires a property, and x's schema for it is
    disjoint from y's.

    ``type``, ``required`` and ``properties`` may come from any conjunct (an allOf branch, a $ref base) or
    from ``ctx`` (the schema around a oneOf, when both x and y are its branches): each one holds of every
    instance in question."""
    parts = [x] if ctx is None else [x, eng.follow(ctx)]
    kinds = eng.facts(y).types  # an instance of both x and y: an object if either side says so
    for part in parts:
        kinds = kinds & eng.facts(part).types
    if kinds != {"object"}:
        return False
    required = {
        n for part in parts for kw in eng.facts(part).conj for n in kw.get("required", ()) if isinstance(n, str)
    }
    if not required:
        return False
    xp: dict[str, list[Node]] = {}
    for part in parts:
        for name, schemas in _property_schemas(eng, part, required).items():
            xp.setdefault(name, []).extend(schemas)
    yp = _property_schemas(eng, y, xp.keys())
    return any(
        disjoint(eng, a, b, depth + 1)
        for name in sorted(required & xp.keys() & yp.keys())
        for a in xp[name]
        for b in yp[name]
    )


def _property_schemas(eng: Engine, node: Node, names: Collection[str]) -> dict[str, list[Node]]:
    """The schemas each property of ``names`` must match, from every conjunct of ``node`` that says (only the
    names asked for: a oneOf of large objects would make a node for every property of every pair of branches)."""
    out: dict[str, list[Node]] = {}
    for part in _conjunct_nodes(eng, node):
        props = part.value.get("properties") if isinstance(part.value, dict) else None
        if isinstance(props, dict):
            for name in names:
                if name in props:
                    out.setdefault(name, []).append(part.child(props[name], "properties", name))
    return out


def _conjunct_nodes(eng: Engine, node: Node, depth: int = 0) -> list[Node]:
    node = eng.follow(node)
    out = [node]
    if depth < 2:
        for branch in eng.children(node, "allOf"):
            out += _conjunct_nodes(eng, branch, depth + 1)
    return out


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
        _condition_changed(p, po, pn)
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


def _condition_changed(p: Pair, po: dict[str, Node | None], pn: dict[str, Node | None]) -> None:
    """A changed ``if``: each side is (if and then) or (not if and else); prove it case by case."""
    back = _implies(p.eng, po, pn, p.ok.get("type"))
    fwd = _implies(p.eng, pn, po, p.nk.get("type"))
    p.add(
        "conditional.changed" if back or fwd else "conditional.changed.unprovable",
        p.path("if"),
        back,
        fwd,
        _CONDITION_CHANGED[(back, fwd)],
    )


_CONDITION_CHANGED = {
    (True, True): "the if condition changed, but each instance lands in a branch that accepts it alike",
    (True, False): "the if condition changed; every instance valid before stays valid (proven case by case), "
    "but which of then/else applies may change and admit new ones",
    (False, True): "the if condition changed; every instance valid now was valid before (proven case by case), "
    "but which of then/else applies may change and reject old ones",
    (False, False): "the if condition changed; which of then/else applies to an instance may change, so neither "
    "direction is proven",
}


def _implies(eng: Engine, a: dict[str, Node | None], b: dict[str, Node | None], kinds: Any) -> bool:
    """Proven: an instance satisfying conditional ``a`` satisfies conditional ``b`` (decision 0101).

    An instance matching a's if satisfies a's then, and b accepts it when that then lies inside both of b's
    branches, or inside b's then while a's if lies inside b's, or inside b's else while the two ifs are
    disjoint. One failing a's if satisfies a's else, and b accepts it when that else lies inside both of b's
    branches, or inside b's else while b's if lies inside a's (so b's if fails too). Absent then/else accept
    everything. The ifs are read positively and negatively, so they are compared as under negation, and
    only on instances of the schema around them: ``kinds`` is its ``type``, which the instance in question
    (valid under a's schema) has.
    """
    a_if, b_if = _typed(a["if"] or TRUE_NODE, kinds), _typed(b["if"] or TRUE_NODE, kinds)
    a_then, a_else = a["then"] or TRUE_NODE, a["else"] or TRUE_NODE
    b_then, b_else = b["then"] or TRUE_NODE, b["else"] or TRUE_NODE
    then_case = (
        (eng.subset(a_then, b_then) and eng.subset(a_then, b_else))
        or (eng.subset(a_then, b_then) and eng.subset(a_if, b_if, flipped=True))
        or (eng.subset(a_then, b_else) and disjoint(eng, a_if, b_if))
    )
    return then_case and (
        (eng.subset(a_else, b_then) and eng.subset(a_else, b_else))
        or (eng.subset(a_else, b_else) and eng.subset(b_if, a_if, flipped=True))
    )


def _typed(node: Node, kinds: Any) -> Node:
    """``node`` restricted to the instance types ``kinds`` (a ``type`` value), when it has no type itself."""
    if kinds is None or not isinstance(node.value, dict) or "type" in node.value or "$ref" in node.value:
        return node
    return node.variant({**node.value, "type": kinds}, "type=" + canonical_text(kinds))


def _conditional_added_or_removed(p: Pair, po: dict[str, Node | None], pn: dict[str, Node | None]) -> None:
    eng = p.eng
    if pn["if"] is not None:
        p.add("conditional.added", p.new_path("if"), _entails(eng, p.o, pn), True, "if/then/else added")
    else:
        p.add("conditional.removed", p.old_path("if"), True, _entails(eng, p.n, po), "if/then/else removed")


def _entails(eng: Engine, x: Node, cond: dict[str, Node | None]) -> bool:
    """Proven: every instance of ``x`` satisfies the conditional ``cond``. When x's instances all match the
    if (or none does), only then (else) must hold: a discriminator the if tests settles which."""
    cond_if = cond["if"] or TRUE_NODE
    then, otherwise = cond["then"], cond["else"]
    then_ok = then is None or eng.subset(x, then)
    else_ok = otherwise is None or eng.subset(x, otherwise)
    if then_ok and else_ok:
        return True
    if then_ok and eng.subset(x, cond_if, flipped=True):
        return True
    return else_ok and disjoint(eng, x, cond_if)


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
