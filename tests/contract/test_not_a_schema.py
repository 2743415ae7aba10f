"""Never "accept anything" by accident (issue #16, item 6).

An OpenAPI or AsyncAPI document, or a package.json, given where a schema is expected is refused with a code
naming what it is; unknown keywords are lint warnings with a JSON pointer, and a change to one is never a
neutral change in a compatibility verdict.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from subhive._dialects import KEYWORDS, looks_like
from subhive.compat.jsonschema import diff_schemas
from subhive.contract import lint_paths, load_contract
from subhive.errors import InputError
from tests.kit import cli

OPENAPI = """openapi: 3.0.3
info: {title: shop, version: "1"}
paths: {}
components:
  schemas:
    Order:
      type: object
      properties:
        id: {type: integer}
"""
MANIFEST = """contract: orders
version: 1.0.0
provider: backend
events:
  order_placed:
    payload: {payload}
"""


def _contract(tmp_path: Path, payload: str, files: dict[str, str]) -> Path:
    root = tmp_path / "orders" / "1.0.0"
    root.mkdir(parents=True)
    (root / "contract.yaml").write_text(MANIFEST.format(payload=payload))
    for name, text in files.items():
        (root / name).write_text(text)
    return root


@pytest.mark.parametrize(
    ("text", "code", "what"),
    [
        (OPENAPI, "schema.openapi_document", "OpenAPI 3.0.3"),
        ('{"swagger": "2.0", "info": {}, "paths": {}}', "schema.openapi_document", "Swagger"),
        ('{"asyncapi": "3.0.0", "info": {}, "channels": {}}', "schema.asyncapi_document", "AsyncAPI 3.0.0"),
        ('{"name": "shop", "version": "1.0.0", "scripts": {"test": "jest"}}', "schema.package_json", "package.json"),
    ],
)
def test_lint_refuses_a_document_that_is_no_schema(tmp_path: Path, text: str, code: str, what: str) -> None:
    path = tmp_path / "api.json"
    path.write_text(json.dumps(json.loads(text)) if text.startswith("{") else text)
    if not text.startswith("{"):
        path = path.rename(tmp_path / "api.yaml")
    result = lint_paths([path])
    assert [p.code for p in result.problems] == [code]
    problem = result.problems[0]
    assert what in problem.message
    assert "not a JSON Schema" in problem.message
    assert problem.location.file == str(path)
    assert problem.hint is not None
    if code != "schema.package_json":
        assert "#/components/schemas/" in problem.hint
        assert "contract import" in problem.hint


def test_a_manifest_naming_a_whole_openapi_document_is_refused_at_the_manifest(tmp_path: Path) -> None:
    root = _contract(tmp_path, "api.yaml", {"api.yaml": OPENAPI})
    result = lint_paths([root])
    assert [(p.code, p.location.pointer) for p in result.problems] == [
        ("schema.openapi_document", "/events/order_placed/payload")
    ]
    assert result.contracts == ()


def test_a_pointer_into_components_is_a_schema_and_its_unknown_keywords_are_warned(tmp_path: Path) -> None:
    # OpenAPI 3.1's schemas are 2020-12, which has no "nullable" (3.0 had it).
    text = OPENAPI.replace("openapi: 3.0.3", "openapi: 3.1.0")
    text = text.replace("      type: object\n", "      type: object\n      nullable: true\n")
    root = _contract(tmp_path, "api.yaml#/components/schemas/Order", {"api.yaml": text})
    result = lint_paths([root])
    assert result.ok, result.problems
    assert [c.name for c in result.contracts] == ["orders"]
    # The document's own keys (openapi, info, paths) are not schema keywords and are not warned about.
    assert [(w.code, w.location.pointer, w.location.line) for w in result.warnings] == [
        ("schema.keyword_unknown", "/components/schemas/Order/nullable", 8)
    ]
    assert '"null"' in (result.warnings[0].hint or "")


def test_a_ref_to_a_whole_openapi_document_is_refused_at_the_ref(tmp_path: Path) -> None:
    root = _contract(tmp_path, "event.json", {"api.yaml": OPENAPI, "event.json": '{"$ref": "api.yaml"}'})
    result = lint_paths([root])
    assert [(p.code, Path(p.location.file or "").name, p.location.pointer) for p in result.problems] == [
        ("schema.openapi_document", "event.json", "/$ref")
    ]


def test_unknown_keywords_are_warnings_with_a_pointer_and_a_suggestion(tmp_path: Path) -> None:
    path = tmp_path / "order.json"
    path.write_text(
        json.dumps(
            {
                "type": "object",
                "x-owner": "team-a",
                "properties": {"id": {"type": "string", "maxLenght": 3}, "maxLenght": {"type": "string"}},
                "$defs": {"n": {"example": 1}},
            },
            indent=1,
        )
    )
    result = lint_paths([path])
    assert result.ok  # warnings never fail lint
    found = {(w.location.pointer, w.hint) for w in result.warnings}
    assert {p for p, _ in found} == {"/properties/id/maxLenght", "/$defs/n/example"}  # a property name is no keyword
    hints = dict(found)
    assert "did you mean 'maxLength'" in (hints["/properties/id/maxLenght"] or "")
    assert '"examples"' in (hints["/$defs/n/example"] or "")


def test_the_lint_command_prints_warnings_and_exits_zero(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "order.json"
    path.write_text('{"type": "string", "nullable": true}')
    code, out, _err = cli(capsys, "contract", "lint", str(path), "--format", "json")
    assert code == 0
    report = json.loads(out)
    assert report["ok"] is True
    assert [(w["code"], w["pointer"]) for w in report["warnings"]] == [("schema.keyword_unknown", "/nullable")]


def test_diff_refuses_a_whole_openapi_document_but_compares_a_component() -> None:
    old = {"openapi": "3.1.0", "components": {"schemas": {"Id": {"type": "integer"}}}}
    new = {"openapi": "3.1.0", "components": {"schemas": {"Id": {"type": "string"}}}}
    with pytest.raises(InputError) as caught:
        diff_schemas(old, new)
    assert caught.value.code == "schema.openapi_document"
    assert "/components/schemas" in (caught.value.hint or "")
    report = diff_schemas(old, new, old_pointer="/components/schemas/Id", new_pointer="/components/schemas/Id")
    assert (report.backward, report.forward) == (False, False)  # integer -> string: the unsound "neutral" is gone


def test_schema_diff_command_exits_2_on_whole_openapi_documents(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text(OPENAPI)
    new.write_text(OPENAPI.replace("{type: integer}", "{type: string}"))
    code, _, err = cli(capsys, "schema", "diff", str(old), str(new), "--require", "full")
    assert code == 2
    assert "schema.openapi_document" in err


def test_adding_openapi_nullable_is_not_neutral() -> None:
    report = diff_schemas({"type": "integer"}, {"type": "integer", "nullable": True})
    assert [(c.code, c.path, c.backward, c.forward) for c in report.changes] == [
        ("keyword.unknown.unprovable", "/nullable", False, False)
    ]


def test_an_extension_keyword_stays_an_annotation() -> None:
    report = diff_schemas({"type": "integer"}, {"type": "integer", "x-owner": "b"})
    assert (report.backward, report.forward) == (True, True)
    assert [c.code for c in report.changes] == ["keyword.unknown.changed"]


_KNOWN = frozenset().union(*KEYWORDS.values())
_UNKNOWN = st.text("abcdefghijklmnopqrstuvwxyzA", min_size=1, max_size=12).filter(
    lambda k: k not in _KNOWN and not k.startswith("x-")
)
_VALUES = st.one_of(st.booleans(), st.integers(-3, 3), st.text(max_size=3), st.lists(st.integers(0, 2), max_size=2))


@settings(max_examples=60, deadline=None)
@given(keyword=_UNKNOWN, before=st.none() | _VALUES, after=st.none() | _VALUES, nested=st.booleans())
def test_a_change_to_an_unknown_keyword_is_never_proven_harmless(
    keyword: str, before: object, after: object, nested: bool
) -> None:
    def schema(value: object) -> dict[str, object]:
        inner: dict[str, object] = {"type": "string"} if value is None else {"type": "string", keyword: value}
        return {"type": "object", "properties": {"a": inner}} if nested else inner

    old, new = schema(before), schema(after)
    report = diff_schemas(old, new)
    if json.dumps(old, sort_keys=True) == json.dumps(new, sort_keys=True):
        assert report.changes == ()
    else:
        assert (report.backward, report.forward) == (False, False)
        assert [c.code for c in report.changes] == ["keyword.unknown.unprovable"]


def test_a_json_schema_is_not_mistaken_for_another_document() -> None:
    # Property names and keyword look-alikes of a real schema do not trigger recognition.
    schema = {"type": "object", "properties": {"openapi": {"type": "string"}, "name": {}, "version": {}}}
    assert looks_like(schema) is None
    assert looks_like({"name": "x", "version": "1", "type": "object"}) is None


# -- OpenAPI 3.0's Schema Object, under #/components/schemas, read as what it means -----------------------------

OPENAPI30 = """openapi: 3.0.3
info: {title: shop, version: "1"}
paths: {}
components:
  schemas:
    Quantity:
      type: integer
      minimum: 0
      exclusiveMinimum: true
      example: 3
    Note:
      type: string
      nullable: true
      enum: [a, b]
"""


def test_openapi_30_components_lint_clean_with_their_own_keywords(tmp_path: Path) -> None:
    root = _contract(tmp_path, "api.yaml#/components/schemas/Quantity", {"api.yaml": OPENAPI30})
    result = lint_paths([root])
    assert result.ok, result.problems  # boolean exclusiveMinimum is OpenAPI 3.0, not an error
    assert result.warnings == ()  # nullable and example are OpenAPI 3.0 keywords


def test_openapi_30_nullable_and_boolean_bounds_mean_what_openapi_says() -> None:
    doc = yaml.safe_load(OPENAPI30)
    at = "/components/schemas/Quantity"
    nullable = {**doc["components"]["schemas"]["Quantity"], "nullable": True}
    wider = {**doc, "components": {"schemas": {**doc["components"]["schemas"], "Quantity": nullable}}}
    report = diff_schemas(doc, wider, old_pointer=at, new_pointer=at)
    # null is accepted now: a widening (an old reader of new data breaks), reported as such, not as neutral
    assert (report.backward, report.forward) == (True, False)
    assert [c.code for c in report.changes] == ["type.widened"]
    inclusive = {**doc["components"]["schemas"]["Quantity"], "exclusiveMinimum": False}
    looser = {**doc, "components": {"schemas": {**doc["components"]["schemas"], "Quantity": inclusive}}}
    report = diff_schemas(doc, looser, old_pointer=at, new_pointer=at)
    assert (report.backward, report.forward) == (True, False)  # 0 is accepted now


def test_openapi_30_nullable_does_not_override_an_enum(tmp_path: Path) -> None:
    root = _contract(tmp_path, "api.yaml#/components/schemas/Note", {"api.yaml": OPENAPI30})
    schema = load_contract(root).events["order_placed"].payload.schema
    assert schema == {"type": ["string", "null"], "enum": ["a", "b"]}  # null still refused by the enum (3.0.3)


def test_schema_diff_compares_one_component_of_two_openapi_documents(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    old, new = tmp_path / "v1.yaml", tmp_path / "v2.yaml"
    old.write_text(OPENAPI30)
    new.write_text(OPENAPI30.replace("      minimum: 0\n", "      nullable: true\n      minimum: 0\n", 1))
    args = ["schema", "diff", f"{old}#/components/schemas/Quantity", f"{new}#/components/schemas/Quantity"]
    code, out, _ = cli(capsys, *args, "--format", "json")
    assert code == 0
    report = json.loads(out)
    assert (report["backward"], report["forward"]) == (True, False)
    assert [c["code"] for c in report["changes"]] == ["type.widened"]
    code, _, err = cli(capsys, *args, "--require", "full")
    assert code == 1
    assert "check.incompatible" in err
    # The unchanged component of the same two documents is unchanged.
    code, out, _ = cli(
        capsys,
        "schema",
        "diff",
        f"{old}#/components/schemas/Note",
        f"{new}#/components/schemas/Note",
        "--format",
        "json",
    )
    assert (code, json.loads(out)["changes"]) == (0, [])


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("api.yaml#components/schemas/X", "input.pointer_invalid"),
        ("api.yaml#/components/schemas/Nope", "manifest.pointer_unresolved"),
    ],
)
def test_schema_diff_refuses_a_bad_pointer(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, code: str
) -> None:
    (tmp_path / "api.yaml").write_text(OPENAPI30)
    exit_code, _, err = cli(capsys, "schema", "diff", str(tmp_path / name), str(tmp_path / name))
    assert exit_code == 2
    assert code in err


def test_a_schema_that_carries_name_version_and_license_annotations_is_still_a_schema() -> None:
    """Real schemas sometimes annotate their root with name, version and license: they are no package.json."""
    from subhive._dialects import looks_like

    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "name": "config",
        "version": "2.1.0",
        "license": "MIT",
        "type": "object",
        "properties": {"port": {"type": "integer"}},
    }
    assert looks_like(schema) is None
    assert looks_like({k: v for k, v in schema.items() if k != "$schema"}) is None  # the keywords say so too
    assert looks_like({"name": "shop", "version": "1.0.0", "license": "MIT"}) is not None  # a manifest's shape
