"""A key repeated in a schema document: a warning when the repeat cannot change what the schema accepts, an error
otherwise, and always an error in any other document (decision 0136, docs/lint.md#reading-files).

The fixtures in tests/data/schemastore/ are excerpts of SchemaStore's files, their repeated members verbatim.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from subhive._source import parse_document
from subhive.compat import diff_files, diff_schemas
from subhive.contract import lint_paths
from subhive.errors import InputError

DATA = Path(__file__).parents[1] / "data" / "schemastore"


def read(tmp_path: Path, name: str, text: str, *, schema: bool = True) -> Any:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return parse_document(path.read_bytes(), path, schema=schema)


def test_pnpm_workspace_repeat_differing_in_description_is_a_warning() -> None:
    # pnpm-workspace.json at SchemaStore 61ef5c60e: properties/trustLockfile twice, each its own description.
    path = DATA / "pnpm-workspace.json"
    result = lint_paths([path])
    assert result.problems == ()
    [note] = [w for w in result.warnings if w.code == "schema.duplicate_key"]
    assert (note.location.file, note.location.line, note.location.pointer) == (
        str(path),
        16,
        "/properties/trustLockfile",
    )
    assert "lines 9 and 16" in note.message
    assert "annotations (description)" in note.message
    assert "the last one is used" in note.message
    # The last one is what every reader of the schema sees, as JSON.parse would.
    data = json.loads(path.read_text(encoding="utf-8"))
    doc = parse_document(path.read_bytes(), path, schema=True)
    assert doc.data["properties"]["trustLockfile"] == data["properties"]["trustLockfile"]
    assert doc.data["properties"]["trustLockfile"]["description"].startswith("A new trustLockfile setting")
    same = diff_files(path, path)
    assert (same.backward, same.forward) == (True, True)


def test_web_manifest_repeat_meaning_two_things_is_an_error() -> None:
    # web-manifest.json at SchemaStore f5797ba57: name_localized once a $ref, once an inline object.
    path = DATA / "web-manifest.json"
    result = lint_paths([path])
    [problem] = result.problems
    assert problem.code == "input.duplicate_key"
    assert (problem.location.line, problem.location.pointer) == (14, "/properties/name_localized")
    assert "lines 10 and 14" in problem.message
    assert "differ in more than annotations" in problem.message
    with pytest.raises(InputError) as caught:
        diff_files(path, path)
    assert caught.value.code in ("input.duplicate_key", "contract.invalid")


HARMLESS = [
    ("equal values", '{"type": "string", "type": "string"}', "/type"),
    ("equal values as data", '{"const": {"a": 1, "a": 1.0}}', "/const/a"),
    ("an annotation", '{"type": "string", "description": "a", "description": "b"}', "/description"),
    ("an extension", '{"type": "string", "x-note": 1, "x-note": [2]}', "/x-note"),
    (
        "a $defs member's title",
        '{"$defs": {"d": {"title": "A", "type": "string"}, "d": {"type": "string"}}}',
        "/$defs/d",
    ),
    (
        "annotations deep down",
        '{"allOf": [{"items": {"description": "a", "minimum": 1}}],'
        ' "allOf": [{"items": {"minimum": 1, "examples": [2]}}]}',
        "/allOf",
    ),
    (
        "a property of a property",
        '{"properties": {"a": {"properties": {"b": {"deprecated": true}}}, "a": {"properties": {"b": {}}}}}',
        "/properties/a",
    ),
]

HARMFUL = [
    ("another type", '{"properties": {"a": {"type": "string"}, "a": {"type": "integer"}}}', "/properties/a"),
    ("a default", '{"properties": {"a": {"default": 1}, "a": {"default": 2}}}', "/properties/a"),
    ("a format", '{"type": "string", "format": "date", "format": "email"}', "/format"),
    (
        "a $ref and its target inline",
        '{"$defs": {"s": {"type": "string"}}, "not": {"$ref": "#/$defs/s"}, "not": {"type": "string"}}',
        "/not",
    ),
    ("an annotation's name as data", '{"const": {"description": 1, "description": 2}}', "/const/description"),
    (
        "a property named description",
        '{"properties": {"description": {"type": "string"}, "description": {}}}',
        "/properties/description",
    ),
    ("true is no number", '{"enum": [1], "enum": [true]}', "/enum"),
    ("one annotation more, one item fewer", '{"anyOf": [{}, {}], "anyOf": [{"title": "x"}]}', "/anyOf"),
]


@pytest.mark.parametrize(("case", "text", "pointer"), HARMLESS)
def test_a_repeat_that_cannot_change_what_is_accepted_keeps_the_last_with_a_note(
    tmp_path: Path, case: str, text: str, pointer: str
) -> None:
    doc = read(tmp_path, "s.json", text)
    assert doc.data == json.loads(text), case  # json.loads keeps the last value too
    [note] = doc.notes
    assert (note.code, note.location.pointer, note.location.line) == ("schema.duplicate_key", pointer, 1)


@pytest.mark.parametrize(("case", "text", "pointer"), HARMFUL)
def test_a_repeat_that_may_change_the_schema_is_an_error(tmp_path: Path, case: str, text: str, pointer: str) -> None:
    with pytest.raises(InputError) as caught:
        read(tmp_path, "s.json", text)
    assert (caught.value.code, caught.value.location.pointer) == ("input.duplicate_key", pointer), case


def test_yaml_repeats_are_judged_the_same_way_with_both_lines(tmp_path: Path) -> None:
    harmless = "type: object\nproperties:\n  a: {type: string, title: A}\n  b: {}\n  a:\n    type: string\n"
    doc = read(tmp_path, "s.yaml", harmless)
    assert doc.data == {"type": "object", "properties": {"a": {"type": "string"}, "b": {}}}
    [note] = doc.notes
    assert (note.location.line, note.location.pointer) == (5, "/properties/a")
    assert "lines 3 and 5" in note.message
    assert "annotations (title)" in note.message
    harmful = harmless.replace("    type: string\n", "    type: integer\n")
    with pytest.raises(InputError) as caught:
        read(tmp_path, "s.yaml", harmful)
    assert (caught.value.code, caught.value.location.line) == ("input.duplicate_key", 5)
    assert "lines 3 and 5" in caught.value.message
    with pytest.raises(InputError) as caught:  # a non-string key after the repeat is still refused as one
        read(tmp_path, "s.yaml", harmless + "true: 1\n")
    assert caught.value.code == "input.key"


@pytest.mark.parametrize(("name", "text"), [("m.json", '{"a": 1, "a": 1}'), ("m.yaml", "a: 1\nb: 2\na: 1\n")])
def test_a_document_that_is_not_a_schema_refuses_even_an_equal_repeat(tmp_path: Path, name: str, text: str) -> None:
    with pytest.raises(InputError) as caught:
        read(tmp_path, name, text, schema=False)
    assert caught.value.code == "input.duplicate_key"
    assert "would silently replace the first" in caught.value.message


def test_a_manifest_stays_strict_while_its_schemas_may_repeat_harmlessly(tmp_path: Path) -> None:
    (tmp_path / "in.json").write_text('{"type": "string", "title": "In", "title": "Input"}')
    (tmp_path / "out.json").write_text('{"type": "string"}')
    manifest = "contract: orders\nversion: 1.0.0\nprovider: backend\noperations:\n  place:\n    input: in.json\n"
    (tmp_path / "contract.yaml").write_text(manifest + "    output: out.json\n")
    result = lint_paths([tmp_path])
    assert result.problems == ()
    assert [(w.code, Path(w.location.file or "").name) for w in result.warnings] == [
        ("schema.duplicate_key", "in.json")
    ]
    (tmp_path / "contract.yaml").write_text(manifest + "    output: out.json\n    output: out.json\n")
    [problem] = lint_paths([tmp_path]).problems
    assert (problem.code, Path(problem.location.file or "").name) == ("input.duplicate_key", "contract.yaml")


def test_a_repeat_in_a_document_too_deep_or_too_expanded_is_refused_not_a_crash(tmp_path: Path) -> None:
    deep = '{"a":' * 2000 + '{"b": 1, "b": 1}' + "}" * 2000
    with pytest.raises(InputError) as caught:
        read(tmp_path, "deep.json", deep)
    assert (caught.value.code, caught.value.location.file) == ("input.json", str(tmp_path / "deep.json"))
    # A "billion laughs" with one repeat: the judging walk would expand the aliases the strict reader shares.
    laughs = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 10)
    )
    with pytest.raises(InputError) as caught:
        read(tmp_path, "laughs.yaml", laughs + "type: string\ntype: string\n")
    assert (caught.value.code, caught.value.location.file) == ("input.yaml", str(tmp_path / "laughs.yaml"))
    assert "aliases expand" in caught.value.message


# --- the rule, for all inputs ------------------------------------------------------------------------------

_TEXT = st.text(st.characters(codec="ascii", categories=["L", "N", "Zs"]), max_size=8)
_ANNOTATION = st.fixed_dictionaries(
    {},
    optional={
        "title": _TEXT,
        "description": _TEXT,
        "$comment": _TEXT,
        "examples": st.lists(st.one_of(_TEXT, st.integers(-5, 5)), max_size=2),
        "deprecated": st.booleans(),
        "readOnly": st.booleans(),
        "x-tag": st.one_of(_TEXT, st.booleans(), st.lists(st.integers(-5, 5), max_size=2)),
    },
)
_LEAVES = st.sampled_from(
    [
        {"type": "string"},
        {"type": "string", "maxLength": 3},
        {"type": "integer", "minimum": 0},
        {"enum": [1, "a", None]},
        {"type": "boolean"},
        {},
    ]
)
_SHAPES = st.recursive(
    _LEAVES,
    lambda inner: st.one_of(
        st.builds(
            lambda props, req: {"type": "object", "properties": props, "required": sorted(set(req) & set(props))},
            st.dictionaries(st.sampled_from("abc"), inner, max_size=3),
            st.lists(st.sampled_from("abc"), max_size=2),
        ),
        st.builds(lambda item: {"type": "array", "items": item}, inner),
        st.builds(lambda a, b: {"anyOf": [a, b]}, inner, inner),
        st.builds(lambda a: {"not": a}, inner),
    ),
    max_leaves=6,
)


@st.composite
def _annotated(draw: st.DrawFn, shape: Any) -> Any:
    """``shape`` with annotations drawn afresh at every schema in it."""
    out: dict[str, Any] = {**shape, **draw(_ANNOTATION)}
    if "properties" in shape:
        out["properties"] = {k: draw(_annotated(v)) for k, v in shape["properties"].items()}
    for key in ("items", "not"):
        if key in shape:
            out[key] = draw(_annotated(shape[key]))
    if "anyOf" in shape:
        out["anyOf"] = [draw(_annotated(v)) for v in shape["anyOf"]]
    return out


def _with_repeat(first: Any, last: Any) -> str:
    return '{"type": "object", "properties": {"p": ' + json.dumps(first) + ', "p": ' + json.dumps(last) + "}}"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_SHAPES.flatmap(lambda shape: st.tuples(_annotated(shape), _annotated(shape))))
def test_a_repeat_differing_only_in_annotations_never_changes_what_schema_diff_finds(pair: tuple[Any, Any]) -> None:
    first, last = pair
    with tempfile.TemporaryDirectory() as tmp:
        doc = read(Path(tmp), "s.json", _with_repeat(first, last))
    assert doc.data == {"type": "object", "properties": {"p": last}}
    assert [n.code for n in doc.notes] == ["schema.duplicate_key"]
    first_wins = {"type": "object", "properties": {"p": first}}
    report = diff_schemas(first_wins, doc.data)
    # Whichever one a reader keeps, the schema accepts the same.
    assert (report.backward, report.forward) == (True, True)


@settings(max_examples=40, deadline=None)
@given(_SHAPES, _LEAVES.filter(bool), _ANNOTATION)
def test_a_repeat_differing_in_anything_else_is_refused(shape: Any, other: Any, notes: dict[str, Any]) -> None:
    assume({**shape, **other} != shape)  # a change beyond annotations
    changed = {**shape, **other, **notes}
    with tempfile.TemporaryDirectory() as tmp, pytest.raises(InputError) as caught:
        read(Path(tmp), "s.json", _with_repeat(shape, changed))
    assert caught.value.code == "input.duplicate_key"
