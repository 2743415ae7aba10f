"""Object keywords: the content model (``properties``, ``patternProperties``, ``additionalProperties``,
``unevaluatedProperties``), ``required``, dependencies, ``propertyNames`` and size bounds.

A property value must satisfy every schema that applies to its name: its ``properties`` entry, every
matching ``patternProperties`` entry, and ``additionalProperties`` when neither applies. Proofs compare
those sets name by name; for names nobody lists, the pattern and additional schemas are compared so that
every name is covered whichever patterns it matches. Pattern matching of listed names is decided by the
runtime validator (ECMA-262 regular expressions).
"""

from __future__ import annotations

from typing import Any

from ._js_docs import Node
from ._js_pair import TRUE_NODE, Facts, Pair, Vacuous
from ._js_scalar import diff_bound, show
from ._js_values import contains_ref, json_equal, runtime_accepts
from ._js_vocab import INPLACE, is_false

__all__ = ["check_unevaluated", "diff_objects"]

_OBJECT_KEYS = frozenset({"properties", "patternProperties", "additionalProperties", "unevaluatedProperties",
                          "propertyNames", "required", "dependentRequired", "dependentSchemas",
                          "maxProperties", "minProperties"})


def _complex(kw: dict[str, Any]) -> bool:
    """unevaluatedProperties that depends on what applicators evaluated: not reducible to additional."""
    return ("unevaluatedProperties" in kw and "additionalProperties" not in kw
            and any(k in kw for k in INPLACE))


class _Side:
    """One side's content model."""

    def __init__(self, p: Pair, node: Node, kw: dict[str, Any]) -> None:
        self.p = p
        self.node = node
        self.props: dict[str, Any] = kw.get("properties", {})
        self.pats: dict[str, Any] = kw.get("patternProperties", {})
        # What governs unlisted names: additionalProperties, or unevaluatedProperties when nothing else
        # evaluates properties (then they mean the same), or nothing.
        self.add_kw: str | None = None
        self.add: Node = TRUE_NODE
        if "additionalProperties" in kw:
            self.add_kw = "additionalProperties"
        elif "unevaluatedProperties" in kw and not _complex(kw):
            self.add_kw = "unevaluatedProperties"
        if self.add_kw is not None:
            self.add = node.child(kw[self.add_kw], self.add_kw)

    def prop(self, name: str) -> Node:
        return self.node.child(self.props[name], "properties", name)

    def pat(self, regex: str) -> Node:
        return self.node.child(self.pats[regex], "patternProperties", regex)

    def matching(self, name: str) -> list[Node]:
        return [self.pat(r) for r in self.pats if _matches(self, r, name)]

    def comps(self, name: str) -> list[Node]:
        """Every schema this side applies to the value of property ``name``."""
        own = [self.prop(name)] if name in self.props else []
        pats = self.matching(name)
        return own + pats if own or pats else [self.add]

    @property
    def closed(self) -> bool:
        return is_false(self.add.value) and not self.pats

    @property
    def model(self) -> str:
        if self.add.value is True or self.add_kw is None:
            return "open"
        return "closed" if is_false(self.add.value) else "partially open"


def _matches(side: _Side, regex: str, name: str) -> bool:
    return runtime_accepts({"pattern": regex}, name, pointer=side.node.path + "/patternProperties")


def diff_objects(p: Pair) -> None:
    if p.keys.isdisjoint(_OBJECT_KEYS):
        return
    so, sn = _Side(p, p.o, p.ok), _Side(p, p.n, p.nk)
    vac = Vacuous(p, "object")
    _diff_properties(p, so, sn, vac)
    _diff_patterns(p, so, sn, vac)
    _diff_additional(p, so, sn, vac)
    _diff_required(p, vac)
    _diff_dependent_required(p, vac)
    _diff_dependent_schemas(p, vac)
    _diff_property_names(p, so, sn, vac)
    diff_bound(p, "minProperties", "min_properties", _holds_count, lower=True, what="objects")
    diff_bound(p, "maxProperties", "max_properties", _holds_count, lower=False, what="objects")


def _diff_properties(p: Pair, so: _Side, sn: _Side, vac: Vacuous) -> None:
    eng = p.eng
    for name, value in so.props.items():
        if name in sn.props:
            if not json_equal(value, sn.props[name], allow_refs=False):  # unchanged values cost nothing
                p.values.extend(eng.sub(so.prop(name), sn.prop(name), guarded=True).changes)
            continue
        old = so.prop(name)
        back = vac[0] or bool(sn.matching(name)) or any(
            eng.subset(a, sn.add, guarded=True) for a in [old, *so.matching(name)])
        fwd = vac[1] or any(eng.subset(b, old, guarded=True) for b in sn.comps(name))
        p.add("property.removed", p.old_path("properties", name), back, fwd,
              f"property {name!r} removed; in the {sn.model} new model its values are governed by "
              f"{_governed(sn, name)}")
    for name in sn.props:
        if name in so.props:
            continue
        new = sn.prop(name)
        back = vac[0] or any(eng.subset(a, new, guarded=True) for a in so.comps(name))
        fwd = vac[1] or bool(so.matching(name)) or any(
            eng.subset(b, so.add, guarded=True) for b in [new, *sn.matching(name)])
        p.add("property.added", p.new_path("properties", name), back, fwd,
              f"property {name!r} added to a {so.model} model; old values of it were governed by "
              f"{_governed(so, name)}")


def _governed(side: _Side, name: str) -> str:
    if side.matching(name):
        return "patternProperties"
    if side.add_kw is None:
        return "nothing (any value was allowed)"
    if is_false(side.add.value):
        return f"{side.add_kw}: false (the property was not allowed)"
    return side.add_kw


def _diff_patterns(p: Pair, so: _Side, sn: _Side, vac: Vacuous) -> None:
    eng = p.eng
    for regex in so.pats:
        if regex in sn.pats:
            p.values.extend(eng.sub(so.pat(regex), sn.pat(regex), guarded=True).changes)
    for regex in sn.pats:
        if regex not in so.pats:
            new = sn.pat(regex)
            back = vac[0] or _pattern_covered(so, regex, new)
            fwd = vac[1] or eng.subset(new, so.add, guarded=True)
            p.add("pattern_property.added", p.new_path("patternProperties", regex), back, fwd,
                  f"patternProperties {regex!r} added: matching property names must now satisfy it")
    for regex in so.pats:
        if regex not in sn.pats:
            old = so.pat(regex)
            back = vac[0] or eng.subset(old, sn.add, guarded=True)
            fwd = vac[1] or _pattern_covered(sn, regex, old)
            p.add("pattern_property.removed", p.old_path("patternProperties", regex), back, fwd,
                  f"patternProperties {regex!r} removed: matching names fall back to "
                  f"{sn.add_kw or 'no constraint'}")


def _pattern_covered(have: _Side, regex: str, goal: Node) -> bool:
    """Proven: whatever ``have`` allows for any name matching ``regex`` satisfies ``goal``."""
    eng = have.p.eng
    for name in have.props:
        if _matches(have, regex, name) and not any(eng.subset(a, goal, guarded=True)
                                                    for a in have.comps(name)):
            return False
    others = [have.add, *(have.pat(r) for r in have.pats)]
    return all(eng.subset(a, goal, guarded=True) for a in others)


def _diff_additional(p: Pair, so: _Side, sn: _Side, vac: Vacuous) -> None:
    if so.add_kw is None and sn.add_kw is None:
        return
    eng = p.eng
    if so.add_kw and sn.add_kw and isinstance(so.add.value, dict) and isinstance(sn.add.value, dict):
        p.values.extend(eng.sub(so.add, sn.add, guarded=True).changes)
        return
    if eng.same(so.add.value, sn.add.value):
        return
    back = vac[0] or eng.subset(so.add, sn.add, guarded=True)
    fwd = vac[1] or eng.subset(sn.add, so.add, guarded=True)
    verb = "added" if so.add_kw is None else "removed" if sn.add_kw is None else "changed"
    keyword = sn.add_kw or so.add_kw or "additionalProperties"
    p.add(f"additional_properties.{verb}", p.path(keyword), back, fwd,
          f"properties not listed: the model goes from {so.model} to {sn.model}")


def _always_has(facts: Facts, name: str) -> bool:
    if "object" not in facts.types:
        return True
    if facts.finite is not None:
        return all(name in v for v in facts.finite if isinstance(v, dict))
    return any(name in required for required in facts.values("required"))


def _diff_required(p: Pair, vac: Vacuous) -> None:
    ro, rn = p.ok.get("required", []), p.nk.get("required", [])
    if ro == rn:
        return
    so, sn = set(ro), set(rn)
    props = p.nk.get("properties", {})
    for i, name in enumerate(rn):
        if name in so:
            continue
        back = vac[0] or _always_has(p.A, name)
        if isinstance(props.get(name), dict) and "default" in props[name]:
            p.add("required.added_with_default", p.new_path("required", i), back, True,
                  f"property {name!r} is now required; it has a default, but validators do not insert "
                  "defaults, so an old instance without it is rejected")
        else:
            p.add("required.added", p.new_path("required", i), back, True,
                  f"property {name!r} is now required")
    for i, name in enumerate(ro):
        if name not in sn:
            p.add("required.removed", p.old_path("required", i), True, vac[1] or _always_has(p.B, name),
                  f"property {name!r} is no longer required")
    if so == sn:
        p.add("required.reordered", p.path("required"), True, True, "required names reordered; same set")


def _has_with(facts: Facts, key: str, name: str) -> bool:
    """Proven: every object with ``key`` also has ``name``."""
    if "object" not in facts.types or key == name or _always_has(facts, name):
        return True
    if facts.finite is not None:
        return all(name in v for v in facts.finite if isinstance(v, dict) and key in v)
    return any(name in dependent.get(key, ()) for dependent in facts.values("dependentRequired"))


def _diff_dependent_required(p: Pair, vac: Vacuous) -> None:
    do, dn = p.ok.get("dependentRequired", {}), p.nk.get("dependentRequired", {})
    if do == dn:
        return
    for key in dn:
        for name in dn[key]:
            if name not in do.get(key, ()):
                p.add("dependent_required.added", p.new_path("dependentRequired", key),
                      vac[0] or _has_with(p.A, key, name), True,
                      f"objects with {key!r} must now also have {name!r}")
    for key in do:
        for name in do[key]:
            if name not in dn.get(key, ()):
                p.add("dependent_required.removed", p.old_path("dependentRequired", key), True,
                      vac[1] or _has_with(p.B, key, name), f"objects with {key!r} no longer need {name!r}")


def _diff_dependent_schemas(p: Pair, vac: Vacuous) -> None:
    do, dn = p.ok.get("dependentSchemas", {}), p.nk.get("dependentSchemas", {})
    eng = p.eng
    for key in do:
        old = p.o.child(do[key], "dependentSchemas", key)
        if key in dn:
            p.inner.extend(eng.sub(old, p.n.child(dn[key], "dependentSchemas", key)).changes)
        else:
            p.add("dependent_schema.removed", p.old_path("dependentSchemas", key), True,
                  vac[1] or eng.subset(p.n, old), f"objects with {key!r} no longer need to match a schema")
    for key in dn:
        if key not in do:
            new = p.n.child(dn[key], "dependentSchemas", key)
            p.add("dependent_schema.added", p.new_path("dependentSchemas", key), vac[0] or eng.subset(p.o, new),
                  True, f"objects with {key!r} must now match {show(dn[key])}")


def _names_hold(p: Pair, side: _Side, facts: Facts, mine: Node | None, goal: Node | None) -> bool:
    """Proven: every property name an instance of ``side`` can have satisfies ``goal``."""
    if goal is None or p.eng.subset(mine or TRUE_NODE, goal, guarded=True):
        return True
    names: list[str] | None = None
    if facts.finite is not None:
        names = [k for v in facts.finite if isinstance(v, dict) for k in v]
    elif side.closed:
        names = list(side.props)
    return names is not None and _names_accepted(p, names, goal)


def _names_accepted(p: Pair, names: list[str], goal: Node) -> bool:
    if not isinstance(goal.value, dict):
        return goal.value is True or not names
    if contains_ref(goal.value):
        return False  # references inside: the tiny validator could not follow them
    return all(runtime_accepts(goal.value, name, pointer=goal.path) for name in names)


def _diff_property_names(p: Pair, so: _Side, sn: _Side, vac: Vacuous) -> None:
    no, nn = p.old_child("propertyNames"), p.new_child("propertyNames")
    if no is None and nn is None:
        return
    if no is not None and nn is not None:
        if isinstance(no.value, dict) and isinstance(nn.value, dict):
            p.inner.extend(p.eng.sub(no, nn, guarded=True).changes)
            return
        if no.value is nn.value:
            return
    back = vac[0] or _names_hold(p, so, p.A, no, nn)
    fwd = vac[1] or _names_hold(p, sn, p.B, nn, no)
    verb = "added" if no is None else "removed" if nn is None else "changed"
    shown = show(nn.value) if nn is not None else show(no.value) if no is not None else ""
    p.add(f"property_names.{verb}", p.path("propertyNames"), back, fwd,
          f"propertyNames {verb}: property names must match {shown}")


def _holds_count(p: Pair, facts: Facts, keyword: str, bound: Any) -> bool:
    if "object" not in facts.types:
        return True
    if facts.finite is not None:
        return all(len(v) >= bound if keyword == "minProperties" else len(v) <= bound
                   for v in facts.finite if isinstance(v, dict))
    if keyword == "minProperties":
        required = {name for names in facts.values("required") for name in names}
        return any(mine >= bound for mine in facts.values(keyword)) or len(required) >= bound
    return any(_at_most(kw, bound) for kw in facts.conj)


def _at_most(kw: dict[str, Any], bound: Any) -> bool:
    """This keyword dict alone allows at most ``bound`` properties."""
    if kw.get("maxProperties", bound + 1) <= bound:
        return True
    rest = kw.get("additionalProperties", kw.get("unevaluatedProperties") if not _complex(kw) else None)
    closed = is_false(rest) and not kw.get("patternProperties")
    return closed and len(kw.get("properties", {})) <= bound


_VALIDITY_ONLY = ("type.", "enum.", "const.", "minimum.", "maximum.", "exclusive_", "multiple_of.",
                  "min_length.", "max_length.", "pattern.", "format.", "required.", "dependent_required.",
                  "min_properties.", "max_properties.", "min_items.", "max_items.", "unique_items.",
                  "prefix_items.", "items.", "contains.", "min_contains.", "max_contains.",
                  "unevaluated_items.")


def check_unevaluated(p: Pair) -> None:
    """unevaluatedProperties next to applicators: sound only when nothing that evaluates changed."""
    from ._js_arrays import is_evaluation_neutral

    if "unevaluatedProperties" not in p.keys:
        return
    co, cn = _complex(p.ok), _complex(p.nk)
    in_o, in_n = "unevaluatedProperties" in p.ok, "unevaluatedProperties" in p.nk
    if not (co or cn):
        if in_o and in_n and "additionalProperties" in p.ok and "additionalProperties" in p.nk and not \
                p.eng.same(p.ok["unevaluatedProperties"], p.nk["unevaluatedProperties"]):
            p.add("keyword.ignored.changed", p.path("unevaluatedProperties"), True, True,
                  "unevaluatedProperties changed, but additionalProperties already evaluates every "
                  "property here")
        return
    if co and not in_n:
        p.add("unevaluated_properties.removed", p.old_path("unevaluatedProperties"), True, False,
              "unevaluatedProperties removed; which properties it rejected depends on the applicators, so "
              "narrowing back is not proven")
        return
    if cn and not in_o:
        p.add("unevaluated_properties.added", p.new_path("unevaluatedProperties"), False, True,
              "unevaluatedProperties added next to applicators; which old objects it now rejects cannot "
              "be proven")
        return
    relevant = [c for c in p.own if not (is_evaluation_neutral(c.code) or c.code.startswith(_VALIDITY_ONLY))]
    relevant += [c for c in p.inner if not is_evaluation_neutral(c.code)]
    if relevant:
        p.add("unevaluated_properties.unprovable", p.path("unevaluatedProperties"), False, False,
              "unevaluatedProperties depends on which properties the applicators evaluate, and those "
              f"changed ({relevant[0].code} at {relevant[0].path or '/'})")
        return
    old = p.o.child(p.ok["unevaluatedProperties"], "unevaluatedProperties")
    new = p.n.child(p.nk["unevaluatedProperties"], "unevaluatedProperties")
    p.inner.extend(p.eng.sub(old, new, guarded=True).changes)
