"""``dependentRequired`` and ``dependentSchemas`` (draft-07 ``dependencies`` arrives translated into them).

A dependency on ``key`` only constrains objects that have ``key``, so it holds vacuously on a side whose
instances can never have ``key`` (its content model or ``propertyNames`` leaves it out); ``absent`` says so
per side. A ``dependentSchemas`` entry that only lists ``required`` names means the same as the
``dependentRequired`` entry with those names, and each proves the other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._js_docs import Node
from ._js_pair import Facts, Pair, Vacuous
from ._js_scalar import show
from ._js_vocab import validation_keys

__all__ = ["always_has", "diff_dependencies"]

#: ``absent[side](name)``: proven, no instance of that side (0 OLD, 1 NEW) has property ``name``.
Absent = tuple[Callable[[str], bool], Callable[[str], bool]]


def always_has(facts: Facts, name: str) -> bool:
    """Proven: every object of this side has property ``name``."""
    if "object" not in facts.types:
        return True
    if facts.finite is not None:
        return all(name in v for v in facts.finite if isinstance(v, dict))
    return any(name in required for required in facts.values("required"))


def _required_only(schema: Any) -> list[str] | None:
    """The names of a dependent schema that only says ``required`` (else None)."""
    if isinstance(schema, dict) and validation_keys(schema) == {"required"}:
        return list(schema["required"])
    return None


def _dependents(facts: Facts, key: str) -> set[str]:
    """Names every object of this side that has ``key`` also has, by a dependency on ``key``."""
    names = {name for dependent in facts.values("dependentRequired") for name in dependent.get(key, ())}
    for dependent in facts.values("dependentSchemas"):
        names |= set(_required_only(dependent.get(key)) or ())
    return names


def _has_with(facts: Facts, absent: Callable[[str], bool], key: str, name: str) -> bool:
    """Proven: every object of this side with ``key`` also has ``name``."""
    if "object" not in facts.types or key == name or absent(key) or always_has(facts, name):
        return True
    if facts.finite is not None:
        return all(name in v for v in facts.finite if isinstance(v, dict) and key in v)
    return name in _dependents(facts, key)


def diff_dependencies(p: Pair, vac: Vacuous, absent: Absent) -> None:
    if "dependentRequired" in p.keys:
        _diff_dependent_required(p, vac, absent)
    if "dependentSchemas" in p.keys:
        _diff_dependent_schemas(p, vac, absent)


def _diff_dependent_required(p: Pair, vac: Vacuous, absent: Absent) -> None:
    do, dn = p.ok.get("dependentRequired", {}), p.nk.get("dependentRequired", {})
    if do == dn:
        return
    for key in dn:
        for name in dn[key]:
            if name not in do.get(key, ()):
                p.add(
                    "dependent_required.added",
                    p.new_path("dependentRequired", key),
                    vac[0] or _has_with(p.A, absent[0], key, name),
                    True,
                    f"objects with {key!r} must now also have {name!r}",
                )
    for key in do:
        for name in do[key]:
            if name not in dn.get(key, ()):
                p.add(
                    "dependent_required.removed",
                    p.old_path("dependentRequired", key),
                    True,
                    vac[1] or _has_with(p.B, absent[1], key, name),
                    f"objects with {key!r} no longer need {name!r}",
                )


def _diff_dependent_schemas(p: Pair, vac: Vacuous, absent: Absent) -> None:
    do, dn = p.ok.get("dependentSchemas", {}), p.nk.get("dependentSchemas", {})
    eng = p.eng
    for key in do:
        old = p.o.child(do[key], "dependentSchemas", key)
        if key in dn:
            new = p.n.child(dn[key], "dependentSchemas", key)
            result = eng.sub(old, new)
            back = result.back or vac[0] or _holds(p, 0, absent, key, new)
            fwd = result.fwd or vac[1] or _holds(p, 1, absent, key, old)
            if (back, fwd) == (result.back, result.fwd):
                p.inner.append(result)
            else:
                p.add(
                    "dependent_schema.changed",
                    p.new_path("dependentSchemas", key),
                    back,
                    fwd,
                    f"the schema objects with {key!r} must match changed; where the two schemas alone prove "
                    f"nothing, the rest of the schema does (no {key!r} there, or its other keywords imply it)",
                )
        else:
            p.add(
                "dependent_schema.removed",
                p.old_path("dependentSchemas", key),
                True,
                vac[1] or _holds(p, 1, absent, key, old),
                f"objects with {key!r} no longer need to match a schema",
            )
    for key in dn:
        if key not in do:
            new = p.n.child(dn[key], "dependentSchemas", key)
            p.add(
                "dependent_schema.added",
                p.new_path("dependentSchemas", key),
                vac[0] or _holds(p, 0, absent, key, new),
                True,
                f"objects with {key!r} must now match {show(dn[key])}",
            )


def _holds(p: Pair, side: int, absent: Absent, key: str, goal: Node) -> bool:
    """Proven: every instance of ``side`` (0 OLD, 1 NEW) that has ``key`` satisfies the dependent schema
    ``goal``: it never has ``key``, ``goal`` only requires names that come with ``key`` there, or the side's
    schema implies ``goal`` outright."""
    facts, node = (p.A, p.o) if side == 0 else (p.B, p.n)
    if absent[side](key):
        return True
    names = _required_only(goal.value)
    if names is not None and all(_has_with(facts, absent[side], key, name) for name in names):
        return True
    return p.eng.subset(node, goal)
