"""The schema diff's shortcuts through a document (decision 0134) must answer what the full walks answer.

* ``_locate`` finds ``/$defs/Name`` without walking the pointer; it must give the value and the schema resource
  the grammar walk gives (``_reference_locate`` below, the rule written out).
* ``_Index`` reads a document's identifiers from its JSON text when only the root has an ``$id`` and nothing an
  anchor; it must hold what walking every schema position finds.
* ``Engine._collect_refs`` numbers reference sites without keeping pointers; ``_collect_placed`` (which keeps
  them) must meet the same sites in the same order, since a failing reference is located by its number.

Documents are drawn from a grammar of schema keywords nested at schema positions, with ``$id``, anchors and
``$ref`` also where they are no identifiers (inside ``enum``, ``default``, under a property *named* ``$id``).
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from subhive.compat._js_docs import SCHEMA_LISTS, SCHEMA_MAPS, SCHEMA_ONE, _Index, _locate
from subhive.compat._js_engine import Engine

_NAMES = st.sampled_from(["a", "b", "$id", "$ref", "x/y", "t~1", "0"])
_IDS = st.sampled_from(["http://x.example/s", "sub", "other.json", "#frag", "", "urn:x"])
_REFS = st.sampled_from(["#/$defs/a", "#/definitions/b", "#a", "other.json#/x", "#", "#/properties/%24id"])
_MEMBER_NAMES = st.one_of(_NAMES, st.just("$anchor"))
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.sampled_from(["", "s", "$ref", '"$id":']))
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_MEMBER_NAMES, inner, max_size=3),
    max_leaves=6,
)


def _schemas() -> st.SearchStrategy[Any]:
    def extend(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        members = st.dictionaries(_NAMES, inner, max_size=3)
        keywords = st.fixed_dictionaries(
            {},
            optional={
                "$id": st.one_of(_IDS, st.integers(0, 1)),
                "$anchor": st.sampled_from(["a", "b"]),
                "$dynamicAnchor": st.just("meta"),
                "$ref": _REFS,
                "$dynamicRef": st.just("#meta"),
                "properties": members,
                "$defs": members,
                "definitions": members,
                "patternProperties": members,
                "dependencies": st.one_of(members, st.dictionaries(_NAMES, st.lists(_NAMES, max_size=2))),
                "items": st.one_of(inner, st.lists(inner, max_size=2)),
                "additionalProperties": inner,
                "not": inner,
                "allOf": st.lists(inner, max_size=3),
                "anyOf": st.lists(inner, max_size=2),
                "enum": st.lists(_JSON, max_size=2),
                "const": _JSON,
                "default": _JSON,
                "type": st.sampled_from(["string", ["object", "null"]]),
                "required": st.lists(_NAMES, max_size=2),
                "description": st.just("d"),
                "x-note": _JSON,
                "unknownKeyword": _JSON,
            },
        )
        return st.one_of(keywords, st.just(3))  # a non-schema where a subschema belongs, now and then

    return st.recursive(st.one_of(st.booleans(), st.just({})), extend, max_leaves=12)


_SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _pointers(value: Any, here: str = "") -> list[str]:
    """Every pointer into ``value``, and one past each object's members."""
    out = [here, here + "/nowhere"]
    if isinstance(value, dict):
        for key, member in value.items():
            out += _pointers(member, here + "/" + key.replace("~", "~0").replace("/", "~1"))
    elif isinstance(value, list):
        for i, member in enumerate(value):
            out += _pointers(member, f"{here}/{i}")
    return out


def _has_inner_id(root: Any) -> bool:
    """Some object below ``root`` (anywhere) has an ``$id`` member."""
    todo = list(root.values()) if isinstance(root, dict) else []
    while todo:
        value = todo.pop()
        if isinstance(value, dict):
            if "$id" in value:
                return True
            todo += value.values()
        elif isinstance(value, list):
            todo += value
    return False


def _reference_locate(root: Any, ptr: str) -> tuple[Any, str] | str:
    """The rule: the value at ``ptr`` and the pointer of the innermost ``$id`` met at a schema position on the
    way (one keyword below a schema, or a member of a map or list of schemas); a string when it fails."""
    value, base, here, state = root, "", "", "schema"
    for raw in ptr[1:].split("/") if ptr else []:
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(value, dict) and token in value:
            value = value[token]
        elif isinstance(value, list) and token.isdigit() and int(token) < len(value):
            value = value[int(token)]
        else:
            return "missing"
        here += "/" + raw
        if state == "lost":
            continue
        if state == "schema" and (token in SCHEMA_MAPS or token in SCHEMA_LISTS):
            state = "member"
            continue
        if state == "schema" and token not in SCHEMA_ONE:
            state = "lost"
            continue
        if isinstance(value, dict) and "$id" in value:
            base = here
        state = "schema"
    return (value, base) if isinstance(value, dict | bool) else "not a schema"


@_SETTINGS
@given(root=_schemas())
def test_locate_finds_what_the_grammar_walk_finds(root: Any) -> None:
    for ptr in _pointers(root):
        expected = _reference_locate(root, ptr)
        try:
            found: tuple[Any, str] | str = _locate(root, ptr)
        except LookupError as exc:
            found = "missing" if "nothing at" in str(exc) else "not a schema"
        if isinstance(expected, str):
            assert found == expected, ptr
        else:
            assert isinstance(found, tuple), ptr
            assert found[0] is expected[0], ptr
            assert found[1] == expected[1], ptr


@_SETTINGS
@given(root=_schemas())
def test_the_index_read_from_the_text_is_the_index_walked(root: Any) -> None:
    shortcut = _Index(root)
    walked = _Index.__new__(_Index)
    walked.ids, walked.anchors, walked.base_uri = {}, {}, {"": ""}
    walked._walk(root, "", "", "")
    assert (shortcut.ids, shortcut.anchors, shortcut.base_uri) == (walked.ids, walked.anchors, walked.base_uri)


@_SETTINGS
@given(root=_schemas())
def test_reference_sites_are_numbered_as_the_placed_walk_meets_them(root: Any) -> None:
    quick: list[Any] = []
    placed: list[Any] = []
    paths: list[Any] = []
    answer = Engine._collect_refs(root, quick)
    placed_answer = Engine._collect_placed(root, placed, paths)
    assert len(paths) == len(placed)
    if answer is None:  # a subschema below has an $id: only the placed walk knows the resources
        assert _has_inner_id(root)
        return
    assert answer == placed_answer
    if answer:
        assert quick == placed  # same numbers, same references, in the same order (resources: the root's)
