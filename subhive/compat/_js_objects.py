"""Object keywords: the content model (``properties``, ``patternProperties``, ``additionalProperties``,
``unevaluatedProperties``), ``required``, dependencies, ``propertyNames`` and size bounds.
"""

from __future__ import annotations

from itertools import chain
from typing import TYPE_CHECKING, Any

from ._js_arrays import is_evaluation_neutral
from ._js_dependencies import always_has, diff_dependencies
from ._js_docs import Node, Unresolved
from ._js_evaluation import BRANCHING, PROPERTY_KEYWORDS, branches_evaluate_nothing
from ._js_pair import TRUE_NODE, Facts, Pair, Vacuous, changes_in
from ._js_scalar import diff_bound, show
from ._js_values import contains_ref, equal_refs_given_eq, json_equal, runtime_accepts
from ._js_vocab import INPLACE, is_false

if TYPE_CHECKING:
    from ._js_engine import Engine

__all__ = ["check_unevaluated", "diff_objects"]

_OBJECT_KEYS = frozenset(
    {
        "properties",
        "patternProperties",
        "additionalProperties",
        "unevaluatedProperties",
        "propertyNames",
        "required",
        "dependentRequired",
        "dependentSchemas",
        "maxProperties",
        "minProperties",
    }
)


def _complex(kw: dict[str, Any]) -> bool:
    """unevaluatedProperties that depends on what applicators evaluated: not reducible to additional."""
    return "unevaluatedProperties" in kw and "additionalProperties" not in kw and any(k in kw for k in INPLACE)


def _evaluators(eng: Engine, node: Node) -> tuple[list[Node], bool] | None:
    """The in-place conjuncts whose annotations unevaluatedProperties at ``node`` sees, when they are
    fixed: ``allOf`` and ``$ref`` lead to them, so each one validates whenever ``node`` does and all of
    their property names count as evaluated; anyOf, oneOf, if, ... on the way are allowed when no branch
    can evaluate a property. Returns (conjuncts, evaluates everything), or None when which names are
    evaluated depends on the instance.
    """
    members: list[Node] = []
    seen = {(node.doc.uid, node.key)}
    todo = [node]
    everything = False
    while todo:
        current = todo.pop()
        value = current.value
        if any(k in value for k in BRANCHING) and not branches_evaluate_nothing(eng, current, PROPERTY_KEYWORDS):
            return None  # which names the branches evaluate depends on the instance
        nexts = list(eng.children(current, "allOf"))  # a copy: the engine keeps its own
        if "$ref" in value:
            target = eng.deref(current)
            if isinstance(target, Unresolved):
                return None
            nexts.append(target)
        for member in (eng.follow(n) for n in nexts):
            # Booleans evaluate nothing; a conjunct met twice (a diamond, or an in-place loop, which the
            # applicator comparison reports as unprovable anyway) adds nothing new.
            if not isinstance(member.value, dict) or (member.doc.uid, member.key) in seen:
                continue
            seen.add((member.doc.uid, member.key))
            members.append(member)
            everything |= "additionalProperties" in member.value or "unevaluatedProperties" in member.value
            todo.append(member)
    return members, everything


class _Side:
    """One side's content model: which schemas apply to the value of a property, by name.

    ``names``/``regexes`` are the names and patterns that count as evaluated; ``add`` governs every
    other name (additionalProperties, or unevaluatedProperties). For a plain schema they are its own
    ``properties``/``patternProperties``; with unevaluatedProperties next to allOf/$ref they also include
    those of the conjuncts (``members``). ``exact`` is False when that set is not fixed.
    """

    def __init__(self, p: Pair, node: Node, kw: dict[str, Any], side: int) -> None:
        self.p = p
        self.node = node
        self.side = side
        self.props: dict[str, Any] = kw.get("properties", {})
        self.pats: dict[str, Any] = kw.get("patternProperties", {})
        self.names: set[str] = set(self.props)
        self._props: dict[str, Node] = {}  # see prop
        self.regexes: set[str] = set(self.pats)
        self.members: list[Node] = []
        self.complex = _complex(kw)
        self.exact = True
        self.add_kw: str | None = None
        self.add: Node = TRUE_NODE
        if "additionalProperties" in kw:
            self.add_kw = "additionalProperties"
        elif "unevaluatedProperties" in kw:
            self.add_kw = "unevaluatedProperties"
            if self.complex:
                self._with_evaluators(p.eng)
        if self.add_kw is not None:
            self.add = node.child(kw[self.add_kw], self.add_kw)

    def _with_evaluators(self, eng: Engine) -> None:
        found = _evaluators(eng, self.node)
        if found is None or found[1]:
            self.exact = found is not None  # everything evaluated elsewhere: unevaluated* is vacuous
            self.add_kw = None
            return
        self.members = found[0]
        for member in self.members:
            self.names |= set(member.value.get("properties", {}))
            self.regexes |= set(member.value.get("patternProperties", {}))

    def prop(self, name: str) -> Node:
        found = self._props.get(name)
        if found is None:  # asked up to three times for a name added or removed (its proofs each way)
            found = self._props[name] = self.node.member(self.props[name], "properties", name)
        return found

    def pat(self, regex: str) -> Node:
        return self.node.member(self.pats[regex], "patternProperties", regex)

    def matching(self, name: str) -> list[Node]:
        if not self.pats:  # the common case, asked for every name looked at
            return []
        return [self.pat(r) for r in self.pats if _matches(self, r, name)]

    def governs(self, name: str) -> bool:
        """``add`` applies to property ``name`` (nothing else evaluates it)."""
        if name in self.names:
            return False
        return not self.regexes or not any(_matches(self, r, name) for r in self.regexes)

    def comps(self, name: str) -> list[Node]:
        """The schemas this side's own keywords apply to the value of property ``name``."""
        own = [self.prop(name)] if name in self.props else []
        return own + self.matching(name) + ([self.add] if self.governs(name) else [])

    def hyp(self, name: str) -> list[Node]:
        """Every schema a valid instance's ``name`` value satisfies (own keywords and conjuncts)."""
        out = self.comps(name)
        for member in self.members:
            props, pats = member.value.get("properties", {}), member.value.get("patternProperties", {})
            if name in props:
                out.append(member.member(props[name], "properties", name))
            out += [member.member(pats[r], "patternProperties", r) for r in pats if _matches(self, r, name)]
        return out or [TRUE_NODE]

    @property
    def facts(self) -> Facts:
        return self.p.A if self.side == 0 else self.p.B

    @property
    def allowed(self) -> list[str] | None:
        """The property names the content model allows, when that list is finite."""
        if is_false(self.add.value) and self.add_kw is not None and not self.regexes and self.exact:
            return sorted(self.names)
        return None

    def excluded(self, name: str) -> bool:
        """Proven: no instance has property ``name``: the content model gives it a false schema (or leaves
        it out of a closed model), or a ``propertyNames`` of a conjunct rejects it."""
        eng = self.p.eng
        if any(eng.is_empty(c) for c in self.hyp(name)):
            return True
        facts = self.facts
        if any(is_false(kw.get("properties", {}).get(name)) for kw in facts.conj):
            return True
        return any(_rejects(goal, name) for goal in facts.values("propertyNames"))

    def possible_names(self) -> list[str] | None:
        """Every property name an instance may have, when that list is finite: the closed model's names,
        or a ``propertyNames`` enumeration, less the names excluded anyway."""
        facts = self.facts
        if facts.finite is not None:
            return sorted({k for v in facts.finite if isinstance(v, dict) for k in v})
        if 0 in facts.values("maxProperties"):
            return []
        candidates = self.allowed
        for goal in facts.values("propertyNames"):
            listed = _listed(goal)
            if listed is not None:
                candidates = listed if candidates is None else [n for n in candidates if n in listed]
        if candidates is None:
            return None
        return [name for name in candidates if not self.excluded(name)]

    @property
    def model(self) -> str:
        if self.add.value is True or self.add_kw is None:
            return "open"
        return "closed" if is_false(self.add.value) else "partially open"


# Whether a property-name pattern matches a name, as the runtime validator says: a pure function of the two,
# asked for every name against every pattern of both sides and again by each proof. Shared across diffs,
# bounded (emptied when full), and filled only with answers: a pattern that cannot compile raises each time.
_MATCHED: dict[tuple[str, str], bool] = {}
_MAX_MATCHED = 65_536


def _matches(side: _Side, regex: str, name: str) -> bool:
    key = (regex, name)
    hit = _MATCHED.get(key)
    if hit is None:
        hit = runtime_accepts({"pattern": regex}, name, pointer=side.node.path + "/patternProperties")
        if len(_MATCHED) >= _MAX_MATCHED:
            _MATCHED.clear()
        _MATCHED[key] = hit
    return hit


def _rejects(goal: Any, name: str) -> bool:
    """Proven: the ``propertyNames`` schema ``goal`` rejects ``name``."""
    if isinstance(goal, bool):
        return not goal
    return isinstance(goal, dict) and not contains_ref(goal) and not runtime_accepts(goal, name)


def _listed(goal: Any) -> list[str] | None:
    """The names a ``propertyNames`` schema enumerates (``enum``/``const``), when it does."""
    if goal is False:
        return []
    if not isinstance(goal, dict):
        return None
    values = [goal["const"]] if "const" in goal else goal.get("enum")
    if not isinstance(values, list):
        return None
    return [v for v in values if isinstance(v, str) and not _rejects(goal, v)]


def _model_covered(p: Pair, have: _Side, goal: _Side) -> bool:
    """Proven by enumeration: ``have`` allows finitely many names, and for each one, whatever ``have``
    allows for its value satisfies every schema ``goal``'s content model applies to it."""
    names = have.possible_names()
    return names is not None and all(_covers(p, have.hyp(name), goal.comps(name)) for name in names)


def diff_objects(p: Pair) -> None:
    """Compare the content models: a property value must satisfy every schema that applies to its name (its
    ``properties`` entry, every matching ``patternProperties`` entry, ``additionalProperties`` when neither
    applies). Listed names are compared name by name; for names nobody lists, the pattern and additional
    schemas are compared so that every name is covered whichever patterns it matches."""
    if p.keys.isdisjoint(_OBJECT_KEYS):
        return
    so, sn = _Side(p, p.o, p.ok, 0), _Side(p, p.n, p.nk, 1)
    if (so.complex or sn.complex) and not (so.exact and sn.exact and so.regexes == sn.regexes):
        # Which names unevaluatedProperties covers is not fixed (or the patterns differ): compare the
        # rest as if it were absent; check_unevaluated then decides what is still provable.
        for side in (so, sn):
            if side.complex:
                side.add, side.add_kw, side.names, side.regexes, side.members = (
                    TRUE_NODE,
                    None,
                    set(side.props),
                    set(side.pats),
                    [],
                )
    else:
        p.exact_unevaluated = True
    vac = Vacuous(p, "object")
    _diff_properties(p, so, sn, vac)
    _diff_patterns(p, so, sn, vac)
    _diff_additional(p, so, sn, vac)
    _diff_required(p, vac)
    diff_dependencies(p, vac, (so.excluded, sn.excluded))
    _diff_property_names(p, so, sn, vac)
    diff_bound(p, "minProperties", "min_properties", _holds_count, lower=True, what="objects")
    diff_bound(p, "maxProperties", "max_properties", _holds_count, lower=False, what="objects")


def _covers(p: Pair, hyps: list[Node], goals: list[Node]) -> bool:
    """Proven: a value satisfying every hypothesis satisfies every goal."""
    return all(any(p.eng.subset(h, g, guarded=True) for h in hyps) for g in goals)


def _diff_properties(p: Pair, so: _Side, sn: _Side, vac: Vacuous) -> None:
    eng = p.eng
    for name, value in so.props.items():
        if name not in sn.props:
            continue
        other = sn.props[name]
        if value.__class__ is dict and other.__class__ is dict and value == other:
            same, refs = equal_refs_given_eq(value, other)
            if same and not refs:
                continue  # the same schema, and nothing in it refers elsewhere
            if same:
                eng.known_equal(value, other)  # compared through its references: one pair of texts is enough
        elif json_equal(value, other, allow_refs=False):
            continue
        p.values.append(eng.sub(so.prop(name), sn.prop(name), guarded=True))
    # The names on one side only, in the order: OLD's, NEW's, then the conjuncts' (sorted); those on both
    # were compared above.
    extra = (so.names | sn.names).difference(so.props, sn.props)
    names = [n for n in so.props if n not in sn.props] + [n for n in sn.props if n not in so.props]
    for name in names + sorted(extra) if extra else names:
        in_o, in_n = name in so.props, name in sn.props
        if not in_o and not in_n and so.governs(name) == sn.governs(name):
            continue  # an applicator's property whose treatment did not change
        back = vac[0] or so.excluded(name) or _covers(p, so.hyp(name), sn.comps(name))
        fwd = vac[1] or sn.excluded(name) or _covers(p, sn.hyp(name), so.comps(name))
        if in_n:
            p.add(
                "property.added",
                p.new_path("properties", name),
                back,
                fwd,
                f"property {name!r} added to a {so.model} model; old values of it were governed by "
                f"{_governed(so, name)}",
            )
        elif in_o:
            p.add(
                "property.removed",
                p.old_path("properties", name),
                back,
                fwd,
                f"property {name!r} removed; in the {sn.model} new model its values are governed by "
                f"{_governed(sn, name)}",
            )
        else:
            p.add(
                "unevaluated_properties.scope_changed",
                p.path("unevaluatedProperties"),
                back,
                fwd,
                f"property {name!r} is {'no longer' if sn.governs(name) else 'now'} evaluated by an "
                "applicator, so unevaluatedProperties "
                + ("now" if sn.governs(name) else "no longer")
                + " applies to it",
            )


def _governed(side: _Side, name: str) -> str:
    if side.matching(name):
        return "patternProperties"
    if not side.governs(name):
        return "an applicator's properties"
    if side.add_kw is None:
        return "nothing (any value was allowed)"
    if is_false(side.add.value):
        return f"{side.add_kw}: false (the property was not allowed)"
    return side.add_kw


def _diff_patterns(p: Pair, so: _Side, sn: _Side, vac: Vacuous) -> None:
    eng = p.eng
    for regex in so.pats:
        if regex in sn.pats:
            p.values.append(eng.sub(so.pat(regex), sn.pat(regex), guarded=True))
    for regex in sn.pats:
        if regex not in so.pats:
            new = sn.pat(regex)
            back = vac[0] or _pattern_covered(so, regex, new) or _model_covered(p, so, sn)
            fwd = vac[1] or eng.subset(new, so.add, guarded=True) or _model_covered(p, sn, so)
            p.add(
                "pattern_property.added",
                p.new_path("patternProperties", regex),
                back,
                fwd,
                f"patternProperties {regex!r} added: matching property names must now satisfy it",
            )
    for regex in so.pats:
        if regex not in sn.pats:
            old = so.pat(regex)
            back = vac[0] or eng.subset(old, sn.add, guarded=True) or _model_covered(p, so, sn)
            fwd = vac[1] or _pattern_covered(sn, regex, old) or _model_covered(p, sn, so)
            p.add(
                "pattern_property.removed",
                p.old_path("patternProperties", regex),
                back,
                fwd,
                f"patternProperties {regex!r} removed: matching names fall back to {sn.add_kw or 'no constraint'}",
            )


def _pattern_covered(have: _Side, regex: str, goal: Node) -> bool:
    """Proven: whatever ``have`` allows for any name matching ``regex`` satisfies ``goal``."""
    eng = have.p.eng
    for name in sorted(have.names):
        if _matches(have, regex, name) and not any(eng.subset(a, goal, guarded=True) for a in have.hyp(name)):
            return False
    # Names nobody lists: whichever of the add schema and the patterns applies must imply the goal.
    others = [have.add, *(have.pat(r) for r in have.pats)]
    for member in have.members:
        pats = member.value.get("patternProperties", {})
        others += [member.child(pats[r], "patternProperties", r) for r in pats]
    return all(eng.subset(a, goal, guarded=True) for a in others)


def _diff_additional(p: Pair, so: _Side, sn: _Side, vac: Vacuous) -> None:
    if so.add_kw is None and sn.add_kw is None:
        return
    eng = p.eng
    if so.add_kw and sn.add_kw and isinstance(so.add.value, dict) and isinstance(sn.add.value, dict):
        result = eng.sub(so.add, sn.add, guarded=True)
        back = result.back or vac[0] or _model_covered(p, so, sn)
        fwd = result.fwd or vac[1] or _model_covered(p, sn, so)
        if (back, fwd) == (result.back, result.fwd):
            p.values.append(result)  # the two schemas' own changes say it best
            return
    elif eng.same(so.add.value, sn.add.value):
        return
    else:
        back = vac[0] or eng.subset(so.add, sn.add, guarded=True) or _model_covered(p, so, sn)
        fwd = vac[1] or eng.subset(sn.add, so.add, guarded=True) or _model_covered(p, sn, so)
    verb = "added" if so.add_kw is None else "removed" if sn.add_kw is None else "changed"
    keyword = sn.add_kw or so.add_kw or "additionalProperties"
    p.add(
        f"additional_properties.{verb}",
        p.path(keyword),
        back,
        fwd,
        f"properties not listed: the model goes from {so.model} to {sn.model}",
    )


def _diff_required(p: Pair, vac: Vacuous) -> None:
    ro, rn = p.ok.get("required", []), p.nk.get("required", [])
    if ro == rn:
        return
    so, sn = set(ro), set(rn)
    props = p.nk.get("properties", {})
    for i, name in enumerate(rn):
        if name in so:
            continue
        back = vac[0] or always_has(p.A, name)
        if isinstance(props.get(name), dict) and "default" in props[name]:
            p.add(
                "required.added_with_default",
                p.new_path("required", i),
                back,
                True,
                f"property {name!r} is now required; it has a default, but validators do not insert "
                "defaults, so an old instance without it is rejected",
            )
        else:
            p.add("required.added", p.new_path("required", i), back, True, f"property {name!r} is now required")
    for i, name in enumerate(ro):
        if name not in sn:
            p.add(
                "required.removed",
                p.old_path("required", i),
                True,
                vac[1] or always_has(p.B, name),
                f"property {name!r} is no longer required",
            )
    if so == sn:
        p.add("required.reordered", p.path("required"), True, True, "required names reordered; same set")


def _names_hold(p: Pair, side: _Side, mine: Node | None, goal: Node | None) -> bool:
    """Proven: every property name an instance of ``side`` can have satisfies ``goal``: ``side``'s own
    ``propertyNames`` implies it, or the names are limited anyway (a closed model, an enumeration) and each
    one, or each pattern a closed model admits, satisfies it."""
    if goal is None or p.eng.subset(mine or TRUE_NODE, goal, guarded=True):
        return True
    names = side.possible_names()
    if names is not None:
        return _names_accepted(p, names, goal)
    if not (is_false(side.add.value) and side.add_kw is not None and side.exact):
        return False
    # A closed model with patterns: its names are the listed ones and those matching a pattern.
    listed = [name for name in sorted(side.names) if not side.excluded(name)]
    return _names_accepted(p, listed, goal) and all(
        p.eng.subset(side.node.variant({"type": "string", "pattern": r}, f"name:{r}"), goal, guarded=True)
        for r in sorted(side.regexes)
    )


def _names_accepted(p: Pair, names: list[str], goal: Node) -> bool:
    if not isinstance(goal.value, dict):
        return goal.value is True or not names
    if contains_ref(goal.value):
        return False  # references inside: the tiny validator could not follow them
    return all(runtime_accepts(goal.value, name, pointer=goal.path) for name in names)


def _diff_property_names(p: Pair, so: _Side, sn: _Side, vac: Vacuous) -> None:
    """propertyNames, judged against the names each side can have at all: narrowing it is compatible
    when every name the old model allows (a closed model, an enumeration) still passes."""
    no, nn = p.old_child("propertyNames"), p.new_child("propertyNames")
    if no is None and nn is None:
        return
    if no is not None and nn is not None:
        if isinstance(no.value, dict) and isinstance(nn.value, dict):
            result = p.eng.sub(no, nn, guarded=True)
            back = result.back or vac[0] or _names_hold(p, so, no, nn)
            fwd = result.fwd or vac[1] or _names_hold(p, sn, nn, no)
            if (back, fwd) == (result.back, result.fwd):
                p.inner.append(result)  # the two schemas' own changes say it best
                return
            p.add(
                "property_names.changed",
                p.path("propertyNames"),
                back,
                fwd,
                f"propertyNames changed to {show(nn.value)}; every name the "
                f"{'old' if back and not result.back else 'new'} model allows passes both",
            )
            return
        if no.value is nn.value:
            return
    back = vac[0] or _names_hold(p, so, no, nn)
    fwd = vac[1] or _names_hold(p, sn, nn, no)
    verb = "added" if no is None else "removed" if nn is None else "changed"
    shown = show(nn.value) if nn is not None else show(no.value) if no is not None else ""
    p.add(
        f"property_names.{verb}",
        p.path("propertyNames"),
        back,
        fwd,
        f"propertyNames {verb}: property names must match {shown}",
    )


def _holds_count(p: Pair, facts: Facts, keyword: str, bound: Any) -> bool:
    if "object" not in facts.types:
        return True
    if facts.finite is not None:
        return all(
            len(v) >= bound if keyword == "minProperties" else len(v) <= bound
            for v in facts.finite
            if isinstance(v, dict)
        )
    if keyword == "minProperties":
        required = {name for names in facts.values("required") for name in names}
        return any(mine >= bound for mine in facts.values(keyword)) or len(required) >= bound
    return any(_at_most(kw, bound) for kw in facts.conj)


def _at_most(kw: dict[str, Any], bound: Any) -> bool:
    """This keyword dict alone allows at most ``bound`` properties."""
    if kw.get("maxProperties", bound + 1) <= bound:
        return True
    listed = _listed(kw.get("propertyNames"))
    if listed is not None and len(listed) <= bound:
        return True  # propertyNames enumerates the names an object may have
    rest = kw.get("additionalProperties", kw.get("unevaluatedProperties") if not _complex(kw) else None)
    closed = is_false(rest) and not kw.get("patternProperties")
    return closed and len(kw.get("properties", {})) <= bound


_VALIDITY_ONLY = (
    "type.",
    "enum.",
    "const.",
    "minimum.",
    "maximum.",
    "exclusive_",
    "multiple_of.",
    "min_length.",
    "max_length.",
    "pattern.",
    "format.",
    "required.",
    "dependent_required.",
    "property_names.",
    "min_properties.",
    "max_properties.",
    "min_items.",
    "max_items.",
    "unique_items.",
    "prefix_items.",
    "items.",
    "contains.",
    "min_contains.",
    "max_contains.",
    "unevaluated_items.",
)


def _live(eng: Engine, node: Node, kw: dict[str, Any]) -> bool:
    """unevaluatedProperties can reject something here: next to additionalProperties, or to a conjunct
    that evaluates every property, it is moot (as good as absent)."""
    if "unevaluatedProperties" not in kw or "additionalProperties" in kw:
        return False
    found = _evaluators(eng, node) if _complex(kw) else None
    return found is None or not found[1]


def check_unevaluated(p: Pair) -> None:
    """unevaluatedProperties next to applicators: sound only when nothing that evaluates changed."""
    if "unevaluatedProperties" not in p.keys or p.exact_unevaluated:
        return  # absent, or already compared exactly by diff_objects
    co, cn = _complex(p.ok), _complex(p.nk)
    in_o, in_n = "unevaluatedProperties" in p.ok, "unevaluatedProperties" in p.nk
    live_o, live_n = _live(p.eng, p.o, p.ok), _live(p.eng, p.n, p.nk)
    if not (co or cn):
        if (
            in_o
            and in_n
            and "additionalProperties" in p.ok
            and "additionalProperties" in p.nk
            and not p.eng.same(p.ok["unevaluatedProperties"], p.nk["unevaluatedProperties"])
        ):
            p.add(
                "keyword.ignored.changed",
                p.path("unevaluatedProperties"),
                True,
                True,
                "unevaluatedProperties changed, but additionalProperties already evaluates every property here",
            )
        return
    if co and not live_n:
        p.add(
            "unevaluated_properties.removed",
            p.old_path("unevaluatedProperties"),
            True,
            False,
            "unevaluatedProperties removed; which properties it rejected depends on the applicators, so "
            "narrowing back is not proven",
        )
        return
    if cn and not live_o:
        p.add(
            "unevaluated_properties.added",
            p.new_path("unevaluatedProperties"),
            False,
            True,
            "unevaluatedProperties added next to applicators; which old objects it now rejects cannot be proven",
        )
        return
    relevant = next(
        chain(
            (c for c in p.own if not (is_evaluation_neutral(c.code) or c.code.startswith(_VALIDITY_ONLY))),
            (c for c in changes_in(p.inner) if not is_evaluation_neutral(c.code)),
        ),
        None,
    )
    if relevant is not None:
        p.add(
            "unevaluated_properties.unprovable",
            p.path("unevaluatedProperties"),
            False,
            False,
            "unevaluatedProperties depends on which properties the applicators evaluate, and those "
            f"changed ({relevant.code} at {relevant.path or '/'})",
        )
        return
    old = p.o.child(p.ok["unevaluatedProperties"], "unevaluatedProperties")
    new = p.n.child(p.nk["unevaluatedProperties"], "unevaluatedProperties")
    p.inner.append(p.eng.sub(old, new, guarded=True))
