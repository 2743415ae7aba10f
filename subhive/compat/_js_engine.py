"""The JSON Schema comparison engine: walks OLD and NEW in parallel and judges every difference per direction.
Memoisation, ``$ref`` handling and why recursion is sound are explained on :class:`Engine`.
"""

from __future__ import annotations

from typing import Any

from . import _js_arrays, _js_logic, _js_objects, _js_scalar
from ._js_docs import SCHEMA_LISTS, SCHEMA_MAPS, SCHEMA_ONE, Library, Node, Unresolved, _escape, _navigate
from ._js_pair import CLEAN, Facts, Item, Pair, Result, finite_values, result_of
from ._js_values import ALL_KINDS, contains_ref, equal_refs_given_eq, json_equal, kind_of, kinds_of_type
from ._js_vocab import ASSERTIONS, is_false, is_pure, is_trivial, unknown_keyword, validation_keys
from ._report import Change

__all__ = ["Engine"]

_NOTHING: frozenset[str] = frozenset()
_NO_PAIR: tuple[Node, Node] = ()  # type: ignore[assignment]  # a site whose targets cannot be the same schema
_SAME_REMOTE: tuple[Node, Node] = (None, None)  # type: ignore[assignment]  # one remote URI on both sides
_EMPTY_KW: dict[str, Any] = {}

_Key = tuple[int, str, int, str]
#: A $ref below a subschema: its number in the walk that found it (``Engine._collect_refs``), its schema
#: resource's pointer below the subschema (None: the subschema's own), and the reference
_Site = tuple[int, str | None, Any]
#: Where a value sits below a subschema, as a chain: None for the subschema itself, else (the chain of the
#: object holding it, keyword, member name / item index / None for a keyword holding one subschema).
_Path = tuple[Any, str, str | int | None] | None
_DYNAMIC_REFS = frozenset({"$dynamicRef", "$recursiveRef"})
_CONJUNCT_DEPTH = 4  # how deep allOf/$ref nesting is searched for hypotheses (more costs, rarely helps)


class _Entry:
    """A provisional result: final only once the assumption it rests on (stack index ``head``) holds.
    ``seq`` numbers provisional results in the order they were made."""

    __slots__ = ("head", "path", "result", "seq")

    def __init__(self, result: Result, head: int, path: str, seq: int) -> None:
        self.result = result
        self.head = head
        self.path = path
        self.seq = seq


class _Frame:
    """One pair being compared: where it sits in the recursion and what its result depends on."""

    __slots__ = ("assumed", "flip", "guard", "low", "mark", "pair", "provisional")

    def __init__(self, guard: int, flip: int, index: int, mark: int, pair: tuple[str, str] = ("", "")) -> None:
        self.pair = pair  # (old key, new key): where each side is, to tell which side a cycle unfolded
        self.guard = guard
        self.flip = flip
        self.low = index  # lowest stack index whose assumption this result depends on
        self.mark = mark  # provisional results made from here on may rest on this frame's assumption
        self.assumed = False  # a descendant met this pair again and assumed it compatible
        self.provisional: list[tuple[_Key, _Entry]] = []


class Engine:
    """Compares subschemas of two documents; one engine per diff (memo tables are per diff).

    ``compare(old, new)`` returns the changes between two subschemas and two verdicts, ``back`` and ``fwd``.
    A schema is a conjunction of keywords, so it is enough to prove, for each constraint of NEW, that OLD (as a
    whole, used as the hypothesis) implies it; each keyword family does that in its own module (``_js_scalar``,
    ``_js_arrays``, ``_js_objects``, ``_js_logic``). Recursion and soundness:

    * Results are memoised per (old node, new node) pair, so a ``$defs`` entry is compared once however many
      times it is referenced, and its changes are reported once, at the definition. A result links the results
      of the pairs inside it instead of copying their changes (see ``_js_pair.Result``): in a graph of
      definitions that reference each other, copying along every path would be exponential.
    * A ``$ref`` followed on one side only compares the definition with the inline schema, and what differs is
      reported at the reference, where the schema changed, not inside the definition (which may be unchanged
      and used elsewhere).
    * Recursive schemas terminate by a co-inductive assumption: a pair met again while it is being compared is
      assumed compatible. That is sound for finite instances only when the cycle went through a property or an
      item (a strictly smaller instance) and through no negation (``not``, ``if``, overlapping ``oneOf``,
      ``maxContains``), so other cycles are reported as unprovable. Results computed under an assumption stay
      provisional until the assumed pair is settled: they become final if it turns out compatible both ways,
      lose the directions it failed otherwise (without negation, a backward proof only ever uses backward
      facts, and the forward one forward facts), and are discarded with it if it was their last assumption.
    """

    def __init__(self, library: Library) -> None:
        self.library = library
        self._memo: dict[_Key, Result] = {}
        self._prov: dict[_Key, _Entry] = {}
        # The provisional results still proven backward (forward), in the order they were made: the ones
        # a failed assumption can weaken (see _weaken).
        self._open: tuple[dict[_Key, _Entry], dict[_Key, _Entry]] = ({}, {})
        self._prov_made = 0  # provisional results made so far (the next one's seq)
        self._active: dict[_Key, int] = {}
        self._stack: list[_Frame] = []
        self._facts: dict[tuple[int, str], Facts] = {}
        self._kinds: dict[tuple[int, str], frozenset[str]] = {}
        self._cut = 0  # how many times _types stopped at a cycle (results computed past one are partial)
        self._targets: dict[tuple[int, str, str], Node | Unresolved] = {}
        self._not_same: set[_Key] = set()  # pairs _equivalent refuted
        self._not_graph: set[_Key] = set()  # pairs _same_graph refuted
        self._within: dict[tuple[int, str], tuple[Any, list[_Site] | None]] = {}  # see _refs_within
        self._known: tuple[Any, Any] = (None, None)  # see known_equal
        #: (old uid, old resource, new uid, new resource) -> reference -> its targets (see _targets_within)
        self._site_pairs: dict[tuple[int, str, int, str], dict[Any, tuple[Node, Node]]] = {}
        self._children: dict[tuple[int, str, str | None, str], tuple[Any, list[Node]]] = {}  # see children
        #: answers of _js_logic.disjoint: a pure function of its nodes' keys, asked again and again by oneOf
        self.disjoint_memo: dict[tuple[Any, ...], bool] = {}
        self._guard = 0
        self._flip = 0
        #: (how many pairs were being compared, NEW pointer of the innermost) when recursion ran out
        self.overflow: tuple[int, str] | None = None

    # -- entry points -----------------------------------------------------------------------------------

    def sub(self, old: Node, new: Node, *, guarded: bool = False, flipped: bool = False) -> Result:
        """Compare two subschemas one level down; ``guarded`` when the instance gets smaller (a property
        or an item), ``flipped`` when the result is used with directions swapped (under ``not``)."""
        self._guard += guarded
        self._flip += flipped
        try:
            return self.compare(old, new)
        finally:
            self._guard -= guarded
            self._flip -= flipped

    def subset(self, x: Node, y: Node, *, guarded: bool = False, flipped: bool = False) -> bool:
        """Proven: every instance valid under ``x`` is valid under ``y``."""
        if self.is_empty(x) or is_trivial(y.value):
            return True
        if is_false(y.value):
            return False
        if is_trivial(x.value) and self.facts(y).types != ALL_KINDS:
            # Every instance is valid under x, and y rejects every instance of some kind (its kinds are an
            # over-approximation): not a subset, as the full comparison would find (an added property's schema
            # against an open model's nothing, the commonest case, compared keyword by keyword for nothing).
            return False
        reverse = self._memo.get((y.doc.uid, y.key, x.doc.uid, x.key))
        if reverse is not None:
            return reverse.fwd
        return self.sub(x, y, guarded=guarded, flipped=flipped).back

    def compare(self, old: Node, new: Node) -> Result:
        key = (old.doc.uid, old.key, new.doc.uid, new.key)
        hit = self._memo.get(key) or self._provisional(key, old, new)
        if hit is not None:
            return hit
        index = self._active.get(key)
        if index is not None:
            return self._revisit(index, old, new)
        if (old.shown is not None or new.shown is not None) and old.own_path == new.own_path:
            # Reached through a reference on one side only, yet the same place in both documents (a
            # definition met again): what differs there is reported there, as when the walk is parallel.
            old, new = old.shown_at(None), new.shown_at(None)
        quick = self._quick(old, new)
        if quick is not None:
            return quick
        return self._compute(key, old, new)

    # -- memo and co-induction --------------------------------------------------------------------------

    def _provisional(self, key: _Key, old: Node, new: Node) -> Result | None:
        entry = self._prov.get(key)
        if entry is None:
            return None
        if self._flip != self._stack[entry.head].flip:
            if self._equivalent(old, new):
                return CLEAN  # the same schema on both sides: equal under negation too
            # Used with directions swapped relative to the assumption it rests on: keeping the two
            # directions apart (what _weaken relies on) would no longer hold.
            return result_of(
                [
                    Change(
                        "ref.cycle.unprovable",
                        new.own_path,
                        False,
                        False,
                        "a recursive comparison is used under not/if/oneOf while it is still "
                        "open; recursion under negation cannot be proven",
                    )
                ]
            )
        top = self._stack[-1]
        top.low = min(top.low, entry.head)
        return entry.result

    def _revisit(self, index: int, old: Node, new: Node) -> Result:
        frame = self._stack[index]
        if self._flip != frame.flip:
            if self._equivalent(old, new):
                return CLEAN  # the same schema on both sides: equal under negation too
            return result_of(
                [
                    Change(
                        "ref.cycle.unprovable",
                        new.own_path,
                        False,
                        False,
                        "a recursive reference loops through not/if/oneOf: recursion under negation cannot be proven",
                    )
                ]
            )
        if self._guard > frame.guard:
            frame.assumed = True
            top = self._stack[-1]
            top.low = min(top.low, index)
            return CLEAN  # the co-inductive assumption, confirmed or dropped when the frame completes
        unguarded = self._unguarded(index, new)
        if unguarded is not None:
            return unguarded
        return result_of(
            [
                Change(
                    "ref.cycle.unprovable",
                    new.own_path,
                    False,
                    False,
                    "a reference loops back to itself without going through a property "
                    "or an item, so no instance can settle it",
                )
            ]
        )

    def _unguarded(self, index: int, new: Node) -> Result | None:
        """The co-inductive assumption for a cycle that stays on the same instance (through allOf, anyOf,
        then/else, dependentSchemas or $ref only), in the directions where it is sound; None for none.

        The runtime validator reads such a cycle as its greatest fixed point (a subschema met again on the same
        instance holds), and for greatest fixed points assuming OLD within NEW on a revisit is sound when NEW
        unfolded at least once on the way (every use of the assumption is then under a step of NEW's own
        definition), and when nothing on the way is non-monotone (not and if flip, and are refused before;
        oneOf is checked here). Backward needs NEW to have moved, forward OLD. Decision 0098.
        """
        frames = self._stack[index:]
        if any("/oneOf/" in side + "/" for f in frames for side in f.pair):
            return None
        start_old, start_new = frames[0].pair
        back = any(f.pair[1] != start_new for f in frames[1:])
        fwd = any(f.pair[0] != start_old for f in frames[1:])
        if not (back or fwd):
            return None
        frames[0].assumed = True
        top = self._stack[-1]
        top.low = min(top.low, index)
        if back and fwd:
            return CLEAN
        unfolded, still = ("NEW", "OLD") if back else ("OLD", "NEW")
        return result_of(
            [
                Change(
                    "ref.cycle.unprovable",
                    new.own_path,
                    back,
                    fwd,
                    f"a reference loops back on the same instance and only {unfolded} unfolded on the way; "
                    f"{still} meeting itself proves nothing in that direction",
                )
            ]
        )

    def _compute(self, key: _Key, old: Node, new: Node) -> Result:
        index = len(self._stack)
        frame = _Frame(self._guard, self._flip, index, self._prov_made, (old.key, new.key))
        self._stack.append(frame)
        self._active[key] = index
        try:
            result = self._compare_nodes(old, new)
        except RecursionError:
            if self.overflow is None:  # the innermost pair is the first to see it
                self.overflow = (index + 1, new.path)
            raise
        finally:
            self._stack.pop()
            del self._active[key]
        if frame.assumed and not (result.back and result.fwd):
            self._weaken(frame.mark, result, new.own_path)
        if frame.low >= index:
            self._settle(frame, key, result)
            return result
        entry = _Entry(result, frame.low, new.own_path, self._prov_made)
        self._prov_made += 1
        self._prov[key] = entry
        for proven, opened in zip((result.back, result.fwd), self._open, strict=True):
            if proven:
                opened[key] = entry  # a pair is never recomputed while provisional: seq order holds
        head = self._stack[frame.low]
        for k, moved in [*frame.provisional, (key, entry)]:
            moved.head = frame.low
            head.provisional.append((k, moved))
        parent = self._stack[-1]
        parent.low = min(parent.low, frame.low)
        return result

    def _weaken(self, mark: int, failed: Result, where: str) -> None:
        """An assumed pair turned out incompatible in some direction: results derived while it was open
        may have leaned on that direction, so they lose it.

        Directions stay apart: an assumption is only ever used at the negation level where it was made
        (see ``_revisit`` and ``_provisional``), and without negation a backward proof only uses
        backward facts. The results are weakened rather than dropped: recomputing them is exponential
        on mutually recursive schemas.
        """
        hit: dict[_Key, _Entry] = {}
        for held, opened in zip((failed.back, failed.fwd), self._open, strict=True):
            while opened and not held:  # newest first, down to the ones made before the assumption
                key, entry = opened.popitem()
                if entry.seq < mark:
                    opened[key] = entry  # it was the last one: putting it back keeps the order
                    break
                hit[key] = entry
        for entry in hit.values():
            entry.result = result_of(
                [
                    entry.result,
                    Change(
                        "ref.cycle.unprovable",
                        entry.path,
                        failed.back,
                        failed.fwd,
                        f"this comparison assumed the recursive comparison at {where or '/'} compatible, "
                        "which it is not in every direction",
                    ),
                ]
            )

    def _settle(self, frame: _Frame, key: _Key, result: Result) -> None:
        self._memo[key] = result
        confirmed = result.back and result.fwd
        for k, entry in frame.provisional:
            self._prov.pop(k, None)
            for opened in self._open:
                opened.pop(k, None)
            if confirmed:
                self._memo[k] = entry.result

    def _quick(self, old: Node, new: Node) -> Result | None:
        ov, nv = old.value, new.value
        if ov is nv and old.doc is new.doc and old.base == new.base:
            return CLEAN
        if isinstance(ov, dict) and isinstance(nv, dict):
            if self._known[0] is ov and self._known[1] is nv:
                same, refs = True, True  # told by known_equal
            elif ov != nv:  # once: along a changed path every level would walk to the change again
                return None
            else:
                same, refs = equal_refs_given_eq(ov, nv)
            if not same:
                return None
            # Equal JSON: the same schema without references, or when the references reach the same schemas.
            # The graph first: a subschema with references (the common case) is walked for them once, there.
            if not refs or self._same_graph(old, new) or not contains_ref(ov):
                return CLEAN
        elif ov is nv:  # both the same boolean
            return CLEAN
        return None

    def known_equal(self, ov: dict[str, Any], nv: dict[str, Any]) -> None:
        """Tell the engine that ``ov`` and ``nv`` are equal JSON (``equal_refs_given_eq``) about to be compared:
        the caller has made their texts already. (True of these objects for the whole diff, whenever used.)"""
        self._known = (ov, nv)

    def _equivalent(self, old: Node, new: Node) -> bool:
        """``old`` and ``new`` accept the same instances because they are the same schema: the same
        assertions, and every pair of subschemas their references reach is the same too, however the rest of
        the two documents changed (annotations may differ; :meth:`_same_graph` is the check for equal JSON).

        Recursion reasoning is incomplete by design (a cycle through ``not`` is unprovable); this check comes
        first so that an unchanged recursive definition never reads as a breaking change.
        """
        start = (old.doc.uid, old.key, new.doc.uid, new.key)
        if start in self._not_same:
            return False
        seen: dict[_Key, None] = {}
        # Depth first, keeping the way down: when a pair differs, every pair on the way reaches it and is
        # refuted too, so walks that start inside a long chain (or a graph) of references stop at once.
        way: list[_Key] = []
        todo: list[list[tuple[Node, Node]]] = [[(old, new)]]  # todo[i + 1]: what is left below way[i]
        while todo:
            if not todo[-1]:
                todo.pop()
                if way:
                    way.pop()
                continue
            o, n = todo[-1].pop()
            key = (o.doc.uid, o.key, n.doc.uid, n.key)
            if key in seen or self._memo.get(key) is CLEAN:
                continue
            seen[key] = None
            below: list[tuple[Node, Node]] = []
            if key in self._not_same or not self._same_assertions(o, n, below):
                self._not_same.update(way)
                self._not_same.add(start)
                return False
            way.append(key)
            todo.append(below)
        return True

    def _same_graph(self, old: Node, new: Node) -> bool:
        """Whether two subschemas already known to be equal JSON are the same schema, walking
        only the pairs of ``$ref`` targets: below an equal pair every nested subschema is equal JSON too, so
        the ones worth a look are the references (found once per subschema, see ``_refs_within``).

        The pairs met are a greatest fixed point as in ``_equivalent``: each one's targets are equal JSON
        whose own references pair up again, so on success every pair met is the same schema and is memoised
        clean; on failure the pairs on the way to the difference are refuted.
        """
        start = (old.doc.uid, old.key, new.doc.uid, new.key)
        refuted, memo = self._not_graph, self._memo
        if start in refuted:
            return False
        if memo.get(start) is CLEAN:
            return True
        seen = {start: None}
        way: list[_Key] = [start]
        below = self._targets_within(old, new)  # the first pair is known to be equal JSON (the caller checked)
        if below is None:
            refuted.add(start)
            return False
        todo: list[list[tuple[Node, Node]]] = [below]  # todo[i]: what is left below way[i]
        while todo:
            if not todo[-1]:
                todo.pop()
                way.pop()
                continue
            o, n = todo[-1].pop()
            key = (o.doc.uid, o.key, n.doc.uid, n.key)
            if key in seen or memo.get(key) is CLEAN:
                continue
            seen[key] = None
            below = None if key in refuted else self._targets_if_equal(o, n)
            if below is None:
                refuted.update(way)
                return False
            way.append(key)
            todo.append(below)
        active = self._active
        for key in seen:
            if key not in active:
                memo[key] = CLEAN
        return True

    def _targets_if_equal(self, old: Node, new: Node) -> list[tuple[Node, Node]] | None:
        """``_targets_within`` for two subschemas that are equal JSON, else None."""
        ov, nv = old.value, new.value
        if ov.__class__ is dict and nv.__class__ is dict:
            if ov != nv:
                return None
            same, refs = equal_refs_given_eq(ov, nv)
            if not same:
                return None
            # Equal JSON with no reference is the same schema, as _quick finds it: no walk for sites.
            return self._targets_within(old, new) if refs else []
        return self._targets_within(old, new) if json_equal(ov, nv) else None

    def _targets_within(self, old: Node, new: Node) -> list[tuple[Node, Node]] | None:
        """For two equal-JSON subschemas, the pairs of targets of the references at the same places in both
        (None when one of them cannot be the same schema, as ``_same_keyword`` would find). The places are
        found on OLD's side and looked up at the same pointers in NEW, the same JSON (so they pair up by place,
        whatever order either side lists object members in)."""
        sites = self._refs_within(old)
        if sites is None:
            return None
        pairs = []
        groups = self._site_pairs
        o_uid, n_uid = old.doc.uid, new.doc.uid
        own: dict[Any, tuple[Node, Node]] | None = None  # the group of the sites in old's and new's own resources
        for index, resource, ref in sites:
            # The same text in the same resources on both sides means the same pair of targets (_deref_at).
            if resource is None:
                if own is None:
                    own = groups.setdefault((o_uid, old.base, n_uid, new.base), {})
                known = own
            else:
                known = groups.setdefault((o_uid, old.ptr + resource, n_uid, new.ptr + resource), {})
            pair = known.get(ref)
            if pair is None:
                o_target = self._deref_at(old, index, resource, ref)
                n_target = self._deref_at(new, index, resource, ref)
                if self.same_remote(o_target, n_target):
                    pair = known[ref] = _SAME_REMOTE
                elif (
                    isinstance(o_target, Unresolved)
                    or isinstance(n_target, Unresolved)
                    or (is_pure(o_target.value, "$ref") and is_pure(self.follow(o_target).value, "$ref"))
                ):  # a loop of bare references (follow() only moves from a bare reference)
                    pair = known[ref] = _NO_PAIR
                else:
                    pair = known[ref] = (o_target, n_target)
            if pair is _NO_PAIR:
                return None
            if pair is not _SAME_REMOTE:
                pairs.append(pair)
        return pairs

    def _deref_at(self, node: Node, index: int, resource: str | None, ref: str) -> Node | Unresolved:
        """The target of the reference ``ref`` at site ``index`` below ``node`` (see ``_refs_within``), by the
        same text in the same schema resource (as ``Library.resolve_at`` keys it): the node where it is written
        is made only if it does not resolve."""
        base = node.base if resource is None else node.ptr + resource
        return self.library.resolve_at(node.doc, base, ref, lambda: _site(node, index, resource))

    def _refs_within(self, node: Node) -> list[_Site] | None:
        """The ``$ref``s at or below ``node`` (see ``_Site``), where ``_same_assertions`` would descend
        (assertion keywords only); None when something there is never the same schema to itself (a dynamic
        reference, a reference inside a keyword value that is not a subschema, a non-schema value where a
        subschema belongs). Memoised per subschema: the walks of one diff keep meeting the same definitions."""
        cache_key = (node.doc.uid, node.key)
        hit = self._within.get(cache_key)
        if hit is not None and hit[0] is node.value:
            return hit[1]
        sites: list[_Site] = []
        found = self._collect_refs(node.value, sites)
        if found is None:  # a schema resource inside: the walk that keeps track of where each site is
            sites = []
            found = self._collect_placed(node.value, sites, [])
        self._within[cache_key] = (node.value, sites if found else None)
        return sites if found else None

    @staticmethod
    def _collect_refs(root: Any, sites: list[_Site]) -> bool | None:  # noqa: C901, PLR0912 - one branch per role
        """Append to ``sites`` the reference sites in ``root``; False as soon as one part cannot be the same
        schema (see ``_refs_within``), None when a subschema below has an ``$id`` (``_collect_placed`` then).
        A plain walk over the values, each member dispatched by its keyword's role (``_role``): every unchanged
        definition that a changed schema reaches passes here. It keeps no pointers: a site is numbered, and
        ``_collect_placed``, which meets the sites in the same order, tells where it is when that is asked."""
        todo = [root]
        roles = _ROLES
        while todo:
            value = todo.pop()
            if value.__class__ is not dict:
                if value is True or value is False:  # equal booleans are the same; anything else is not
                    continue
                return False
            if "$id" in value and value is not root:
                return None
            for k, a in value.items():
                role = roles.get(k)
                if role is None:
                    role = _role(k)
                if role == _R_OTHER:  # annotations compare as JSON
                    continue
                if role == _R_REF:
                    sites.append((len(sites), None, a))
                    continue
                cls = a.__class__
                if role in (_R_ASSERTION, _R_UNKNOWN):  # compared as JSON: must hold no reference
                    if cls is list:  # mostly lists of strings ("required", "type", "enum"): no walk for them
                        for x in a:
                            if (x.__class__ is dict or x.__class__ is list) and contains_ref(x):
                                return False
                    elif cls is dict and contains_ref(a):
                        return False
                    continue
                if role == _R_MAP:
                    if cls is dict:
                        todo.extend(a.values())
                        continue
                elif role == _R_LIST:
                    if cls is list:
                        todo.extend(a)
                        continue
                elif role == _R_ONE or (role == _R_DEPENDENCIES and isinstance(a, dict | bool)):
                    todo.append(a)
                    continue
                if role == _R_DYNAMIC or ((cls is dict or cls is list) and contains_ref(a)):
                    return False  # never proven the same: a dynamic reference, a reference inside a keyword value
        return True

    @staticmethod
    def _collect_placed(root: Any, sites: list[_Site], paths: list[_Path]) -> bool:  # noqa: C901, PLR0912
        """``_collect_refs``, keeping where each site is (``paths``, in the same order as ``sites``) and under
        which schema resource below ``root`` (a ``_Site``'s second part)."""
        todo: list[tuple[Any, _Path, _Path]] = [(root, None, None)]  # value, where below root, its resource
        roles = _ROLES
        while todo:
            value, path, base = todo.pop()
            if value.__class__ is not dict:
                if value is True or value is False:
                    continue
                return False
            if path is not None and "$id" in value:
                base = path
            for k, a in value.items():
                role = roles.get(k)
                if role is None:
                    role = _role(k)
                if role == _R_OTHER:
                    continue
                container = a.__class__ is dict or a.__class__ is list
                if role in (_R_ASSERTION, _R_UNKNOWN):
                    if container and contains_ref(a):
                        return False
                    continue
                if role == _R_REF:
                    sites.append((len(sites), None if base is None else _suffix(base), a))
                    paths.append(path)
                    continue
                if role == _R_MAP and a.__class__ is dict:
                    todo += [(x, (path, k, m), base) for m, x in a.items()]
                elif role == _R_LIST and a.__class__ is list:
                    todo += [(x, (path, k, i), base) for i, x in enumerate(a)]
                elif role == _R_ONE or (role == _R_DEPENDENCIES and isinstance(a, dict | bool)):
                    todo.append((a, (path, k, None), base))
                elif role == _R_DYNAMIC or (container and contains_ref(a)):
                    return False
        return True

    def _same_assertions(self, old: Node, new: Node, todo: list[tuple[Node, Node]]) -> bool:
        """The assertions of ``old`` and ``new`` are equal JSON except at subschema positions, whose pairs
        (and the pairs of ``$ref`` targets) go on ``todo``."""
        ov, nv = old.value, new.value
        if not (isinstance(ov, dict) and isinstance(nv, dict)):
            return ov is nv  # both true or both false (a dict never equals a bool here)
        keys = ov.keys() & ASSERTIONS
        if keys != nv.keys() & ASSERTIONS or "$dynamicRef" in keys or "$recursiveRef" in keys:
            return False
        # Unknown keywords too: a change to one is reported as unprovable, so it must not pass for "the same".
        unknown = {k for k in ov if unknown_keyword(k)}
        if unknown != {k for k in nv if unknown_keyword(k)} or any(
            not json_equal(ov[k], nv[k], allow_refs=False) for k in unknown
        ):
            return False
        return all(self._same_keyword(old, new, k, todo) for k in keys)

    def _same_keyword(self, old: Node, new: Node, k: str, todo: list[tuple[Node, Node]]) -> bool:
        a, b = old.value[k], new.value[k]
        if k == "$ref":
            o_target, n_target = self.deref(old), self.deref(new)
            if self.same_remote(o_target, n_target):
                return True
            if (
                isinstance(o_target, Unresolved)
                or isinstance(n_target, Unresolved)
                or is_pure(self.follow(o_target).value, "$ref")
            ):  # a loop of bare references
                return False
            todo.append((o_target, n_target))
        elif k in SCHEMA_MAPS and isinstance(a, dict) and isinstance(b, dict):
            if a.keys() != b.keys():
                return False
            todo += [(old.member(a[m], k, m), new.member(b[m], k, m)) for m in a]
        elif k in SCHEMA_LISTS and isinstance(a, list) and isinstance(b, list):
            if len(a) != len(b):
                return False
            todo += [(old.child(x, k, i), new.child(y, k, i)) for i, (x, y) in enumerate(zip(a, b, strict=True))]
        elif k in SCHEMA_ONE or (k == "dependencies" and isinstance(a, dict | bool) and isinstance(b, dict | bool)):
            todo.append((old.child(a, k), new.child(b, k)))
        else:
            return json_equal(a, b, allow_refs=False)
        return True

    # -- one pair ---------------------------------------------------------------------------------------

    def _compare_nodes(self, old: Node, new: Node) -> Result:
        ov = {} if old.value is True else old.value
        nv = {} if new.value is True else new.value
        o_false, n_false = is_false(ov), is_false(nv)
        if o_false or n_false:
            return self._boolean(old, new, o_false, n_false)
        o_ref, n_ref = is_pure(ov, "$ref"), is_pure(nv, "$ref")
        # Follow a plain $ref unless the other side also has a $ref (with siblings): then the two refs
        # pair up as conjuncts and the siblings compare with nothing, e.g. {$ref} -> {$ref, required}.
        if (o_ref and n_ref) or (o_ref and "$ref" not in nv) or (n_ref and "$ref" not in ov):
            return self._through_refs(old, new, ov, nv)
        pair = Pair(self, old, new, ov, nv)
        if _js_logic.virtual_branches(pair):
            return pair.result()
        _js_scalar.diff_annotations(pair)
        _js_scalar.diff_values(pair)
        _js_scalar.diff_numbers(pair)
        _js_scalar.diff_strings(pair)
        _js_arrays.diff_arrays(pair)
        _js_objects.diff_objects(pair)
        _js_logic.diff_applicators(pair)
        _js_objects.check_unevaluated(pair)
        _js_arrays.check_unevaluated(pair)
        return pair.result()

    def _boolean(self, old: Node, new: Node, o_false: bool, n_false: bool) -> Result:
        if o_false and n_false:
            return CLEAN
        if o_false:
            return result_of(
                [
                    Change(
                        "schema.false.removed",
                        new.path,
                        True,
                        self.is_empty(new),
                        "the schema rejected every instance and now accepts some",
                    )
                ]
            )
        return result_of(
            [Change("schema.false.added", new.path, self.is_empty(old), True, "the schema now rejects every instance")]
        )

    def _through_refs(self, old: Node, new: Node, ov: dict[str, Any], nv: dict[str, Any]) -> Result:
        """Compare through plain ``$ref``s. When both sides are references, their targets are compared
        where they are defined (so a changed definition is reported once, at the definition, however many
        references reach it). When only one side is, its target stands in for the reference: what differs
        is reported at the reference's pointer (with the target's inner tokens appended), because that is
        where the schema changed; the definition itself may be unchanged and used elsewhere."""
        items: list[Item] = []
        both = is_pure(ov, "$ref") and is_pure(nv, "$ref")
        if both:
            items += _js_scalar.annotation_changes(old, new, ov, nv)
        if both:
            o_remote, n_remote = self.deref(old), self.deref(new)
            if self.same_remote(o_remote, n_remote):
                return result_of(items)
            if isinstance(o_remote, Unresolved) and isinstance(n_remote, Unresolved) and o_remote.uri and n_remote.uri:
                message = f"$ref names the remote {o_remote.uri} in OLD and {n_remote.uri} in NEW, never fetched"
                return result_of([*items, Change("ref.remote.unprovable", new.path + "/$ref", False, False, message)])
        targets = []
        for node, value in ((old, ov), (new, nv)):
            target = self.deref(node) if is_pure(value, "$ref") else node
            if isinstance(target, Unresolved):
                items.append(Change(target.code, node.path + "/$ref", False, False, target.message))
            elif target is not node and not both:
                target = target.shown_at(node.path)
            targets.append(target)
        if isinstance(targets[0], Node) and isinstance(targets[1], Node):
            items.append(self.sub(targets[0], targets[1]))
        return result_of(items)

    def same_remote(self, old: Node | Unresolved, new: Node | Unresolved) -> bool:
        """Both targets are the same remote URI: never fetched, one document, so the same schema (decision 0141;
        jsonschema.diff_schemas takes it back when a dynamic anchor could make it mean otherwise)."""
        if isinstance(old, Unresolved) and isinstance(new, Unresolved) and old.uri is not None and old.uri == new.uri:
            self.library.remote_same.add(old.uri)
            return True
        return False

    # -- facts about one subschema ----------------------------------------------------------------------

    def deref(self, node: Node, keyword: str = "$ref") -> Node | Unresolved:
        """The target of ``node``'s ``$ref`` (memoised)."""
        ref = node.value[keyword]
        key = (node.doc.uid, node.key, ref)
        target = self._targets.get(key)
        if target is None:
            target = self.library.resolve(node, ref)
            self._targets[key] = target
        return target

    def follow(self, node: Node) -> Node:
        """``node`` with plain ``$ref`` chains followed (as far as they resolve and do not loop)."""
        if not is_pure(node.value, "$ref"):
            return node  # the common case, without a set
        seen = set()
        while is_pure(node.value, "$ref") and node.key not in seen:
            seen.add(node.key)
            target = self.deref(node)
            if isinstance(target, Unresolved):
                break
            node = target
        return node

    def facts(self, node: Node) -> Facts:
        key = (node.doc.uid, node.key)
        facts = self._facts.get(key)
        if facts is None:
            value = node.value
            kw = value if isinstance(value, dict) else _EMPTY_KW
            types = self._types(node, set())
            facts = Facts(kw, types, finite_values(kw, types), self._conjuncts(node))
            _js_scalar.sharpen(facts)  # ranges read as the values they list, enums as filtered by bounds
            self._facts[key] = facts
        return facts

    def _conjuncts(self, node: Node) -> list[dict[str, Any]]:
        """The keyword dicts an instance of ``node`` satisfies: its own, its allOf branches', its $ref
        target's (recursively, a few levels deep)."""
        out: list[dict[str, Any]] = []
        seen: set[tuple[int, str]] = set()
        todo = [(node, 0)]
        while todo:
            current, depth = todo.pop()
            current = self.follow(current)
            value = current.value
            if not isinstance(value, dict) or (current.doc.uid, current.key) in seen:
                continue
            seen.add((current.doc.uid, current.key))
            out.append(value)
            if depth >= _CONJUNCT_DEPTH:
                continue
            todo += [(branch, depth + 1) for branch in self.children(current, "allOf")]
            if "$ref" in value:
                target = self.deref(current)
                if isinstance(target, Node):
                    todo.append((target, depth + 1))
        return out

    def is_empty(self, node: Node) -> bool:
        """Proven: no instance is valid under ``node``."""
        if is_false(node.value):
            return True
        facts = self.facts(node)
        return not facts.types or facts.finite == []

    def _types(self, node: Node, visiting: set[tuple[int, str]]) -> frozenset[str]:
        value = node.value
        if is_false(value):
            return _NOTHING
        if not isinstance(value, dict):
            return ALL_KINDS
        kinds = kinds_of_type(value.get("type")) or ALL_KINDS
        if "const" in value:
            kinds &= {kind_of(value["const"])}
        if "enum" in value:
            kinds &= {kind_of(v) for v in value["enum"]}
        key = (node.doc.uid, node.key)
        known = self._kinds.get(key)
        if known is not None:
            return known
        if not kinds:
            return kinds
        if key in visiting:
            self._cut += 1
            return kinds  # an over-approximation: the cycle adds no information
        visiting.add(key)
        cuts = self._cut
        kinds &= self._applied_types(node, value, visiting)
        visiting.discard(key)
        if cuts == self._cut:  # complete (no cycle cut below): reusable anywhere
            self._kinds[key] = kinds
        return kinds

    def _applied_types(self, node: Node, value: dict[str, Any], visiting: set[tuple[int, str]]) -> frozenset[str]:
        """Kinds allowed by the applicators of ``node`` (allOf, anyOf, oneOf, $ref, not {type})."""
        kinds = ALL_KINDS
        for branch in self.children(node, "allOf"):
            kinds &= self._types(branch, visiting)
        for keyword in ("anyOf", "oneOf"):
            if keyword in value:
                union: frozenset[str] = _NOTHING
                for branch in self.children(node, keyword):
                    union |= self._types(branch, visiting)
                kinds &= union
        if "$ref" in value:
            target = self.deref(node)
            if isinstance(target, Node):
                kinds &= self._types(target, visiting)
        inner = value.get("not")
        if isinstance(inner, dict) and validation_keys(inner) == {"type"}:
            kinds -= kinds_of_type(inner["type"]) or _NOTHING
        return kinds

    def children(self, node: Node, keyword: str) -> list[Node]:
        """The subschemas in a list-valued keyword (``allOf``, ``anyOf``, ``oneOf``, ``prefixItems``); the same
        list each time it is asked for (its callers only read it): facts, kinds and pairing all ask."""
        value = node.value
        if not isinstance(value, dict) or keyword not in value:
            return []
        key = (node.doc.uid, node.key, node.shown, keyword)
        hit = self._children.get(key)
        if hit is None or hit[0] is not value:
            hit = self._children[key] = (value, [node.child(v, keyword, i) for i, v in enumerate(value[keyword])])
        return hit[1]

    def same(self, a: Any, b: Any) -> bool:
        """Equal JSON (JSON Schema equality), without references inside."""
        return json_equal(a, b, allow_refs=False)


# What _collect_refs does with a member, by its keyword: a reference, a map, list or single subschema (walked), a
# dynamic reference (never the same), another assertion (compared as JSON, holding no reference), an unknown
# keyword (holding no reference) or anything else (an annotation: compared as JSON).
_R_REF, _R_MAP, _R_LIST, _R_ONE, _R_DEPENDENCIES, _R_DYNAMIC, _R_ASSERTION, _R_UNKNOWN, _R_OTHER = range(9)
_ROLES: dict[str, int] = {}
_MAX_ROLES = 4096  # keywords met in documents; bounded, as documents may hold any names


def _role(k: str) -> int:
    """The role of keyword ``k`` in ``Engine._collect_refs`` (remembered)."""
    if k == "$ref":
        role = _R_REF
    elif k not in ASSERTIONS:
        role = _R_UNKNOWN if unknown_keyword(k) else _R_OTHER
    elif k in SCHEMA_MAPS:
        role = _R_MAP
    elif k in SCHEMA_LISTS:
        role = _R_LIST
    elif k in SCHEMA_ONE:
        role = _R_ONE
    elif k == "dependencies":
        role = _R_DEPENDENCIES
    elif k in _DYNAMIC_REFS:
        role = _R_DYNAMIC
    else:
        role = _R_ASSERTION
    if len(_ROLES) < _MAX_ROLES:
        _ROLES[k] = role
    return role


def _site(node: Node, index: int, resource: str | None) -> Node:
    """The subschema holding the reference site numbered ``index`` below ``node`` (in the schema resource at
    ``resource`` below it, None: ``node``'s), as ``child()`` would make it: found again by the walk that keeps
    where each site is (asked only to say where a reference fails)."""
    paths: list[_Path] = []
    Engine._collect_placed(node.value, [], paths)
    where = paths[index]
    if where is None:
        return node
    suffix = _suffix(where)
    ptr = node.ptr + suffix
    base = node.base if resource is None else node.ptr + resource
    shown = None if node.shown is None else node.shown + suffix
    return Node(node.doc, ptr, ptr, _navigate(node.value, suffix), base, shown=shown)


def _suffix(where: _Path) -> str:
    """The JSON pointer below a subschema that a ``_Path`` chain spells."""
    tokens: list[str] = []
    while where is not None:
        where, keyword, member = where
        if member is not None:
            tokens.append(member if member.__class__ is str else str(member))
        tokens.append(keyword)
    return "".join("/" + _escape(t) for t in reversed(tokens))
