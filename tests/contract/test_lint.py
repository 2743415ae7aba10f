"""Lint: every bad input gets a short, located problem with a stable code and a hint, never a traceback.

Expected problems are read off the fixtures and the rules in docs/contracts.md and docs/lint.md: the
fixture directory says which rule it breaks, the table says where (file, line, JSON pointer).
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import jsonschema_rs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from subhive.contract import lint_paths
from subhive.contract.lint import _ecma
from subhive.errors import Problem

FIXTURES = Path(__file__).parent / "fixtures"
GOOD = '{"type": "object", "properties": {"id": {"type": "string"}}}'
MANIFEST = """contract: orders
version: 1.0.0
provider: backend
operations:
  place_order:
    input: in.json
    output: out.json
"""

# fixture -> every problem expected: (code, file name, line, JSON pointer or None)
EXPECTED: dict[str, list[tuple[str, str, int | None, str | None]]] = {
    "missing_version": [("manifest.missing_key", "contract.yaml", 1, "")],
    "version_not_semver": [("manifest.version_invalid", "contract.yaml", 2, "/version")],
    "version_mismatch/2.0.0": [("manifest.version_mismatch", "contract.yaml", 2, "/version")],
    "manifest_is_list": [("manifest.not_mapping", "contract.yaml", 1, "")],
    "unknown_key": [("manifest.unknown_key", "contract.yaml", 8, "/event")],
    "name_with_dot": [("manifest.name_invalid", "contract.yaml", 1, "/contract")],
    "operation_name_uppercase": [("manifest.name_invalid", "contract.yaml", 5, "/operations/PlaceOrder")],
    "duplicate_name": [("manifest.duplicate_name", "contract.yaml", 9, "/events/place_order")],
    "no_operations": [("manifest.empty", "contract.yaml", 1, "")],
    "wrong_types": [
        ("manifest.type", "contract.yaml", 3, "/provider"),
        ("manifest.type", "contract.yaml", 4, "/description"),
        ("manifest.type", "contract.yaml", 5, "/operations"),
    ],
    "schema_missing": [("manifest.file_missing", "contract.yaml", 6, "/operations/place_order/input")],
    "path_escape": [("manifest.path_escape", "contract.yaml", 6, "/operations/place_order/input")],
    "absolute_path": [("manifest.path_escape", "contract.yaml", 6, "/operations/place_order/input")],
    "schema_url_in_manifest": [("manifest.path_remote", "contract.yaml", 6, "/operations/place_order/input")],
    "pointer_unresolved": [("manifest.pointer_unresolved", "contract.yaml", 6, "/operations/place_order/input")],
    "invalid_yaml_manifest": [("input.yaml", "contract.yaml", 4, None)],
    "invalid_json": [("input.json", "in.json", 3, None)],
    "binary_schema": [("input.binary", "in.json", None, None)],
    "meta_schema_violation": [
        ("schema.meta", "in.json", 4, "/properties/id/type"),
        ("schema.meta", "in.json", 5, "/properties/name/minLength"),
    ],
    "pattern_not_a_regex": [("schema.meta", "in.json", 4, "/properties/id/pattern")],
    "dialect_draft3": [("schema.dialect", "in.json", 2, "/$schema")],
    # An older dialect is checked as written: its own meta-schema, its own lines (a draft-04 boolean bound is fine).
    "dialect_draft7_meta": [("schema.meta", "in.json", 10, "/properties/total/minimum")],
    "ref_to_network": [("schema.ref_remote", "in.json", 4, "/properties/id/$ref")],
    "ref_urn_undefined": [("schema.ref_remote", "in.json", 4, "/properties/id/$ref")],
    "ref_file_uri": [("schema.ref_remote", "in.json", 4, "/properties/id/$ref")],
    "ref_escape": [("schema.ref_escape", "in.json", 4, "/properties/id/$ref")],
    "ref_missing_file": [("schema.ref_unresolved", "in.json", 4, "/properties/id/$ref")],
    "ref_missing_pointer": [("schema.ref_unresolved", "in.json", 4, "/properties/id/$ref")],
    "ref_missing_anchor": [("schema.ref_unresolved", "in.json", 4, "/properties/id/$ref")],
    "ref_cycle_self": [("schema.ref_cycle", "in.json", 3, "/$ref")],
    # in.json#/$defs/A -allOf-> b.json -anyOf-> in.json#/$defs/A: reported at the first $ref by file name
    "ref_cycle_across_files": [("schema.ref_cycle", "b.json", 4, "/oneOf/1/$ref")],
    "runtime_rejects_id": [("schema.runtime_rejects", "in.json", 1, "")],
    "no_manifest": [("contract.no_manifest", "no_manifest", None, None)],
    "proto_does_not_compile": [("proto.compile", "orders.proto", 4, None)],
    "grpc_service_missing": [("grpc.service_missing", "contract.yaml", 6, "/grpc/service")],
}


def summary(problems: tuple[Problem, ...]) -> list[tuple[str, str, int | None, str | None]]:
    return [(p.code, Path(p.location.file or "").name, p.location.line, p.location.pointer) for p in problems]


def write_contract(root: Path, files: dict[str, str], manifest: str = MANIFEST) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "contract.yaml").write_text(manifest)
    for name, text in {"in.json": GOOD, "out.json": GOOD, **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.mark.parametrize("fixture", sorted(EXPECTED))
def test_each_bad_fixture_gets_exactly_its_located_problem(fixture: str) -> None:
    result = lint_paths([FIXTURES / fixture])
    assert summary(result.problems) == EXPECTED[fixture]
    assert not result.ok
    assert result.contracts == ()
    for problem in result.problems:
        assert problem.hint, f"{problem.code} has no hint"
        assert problem.location.file
        assert "Traceback" not in problem.message


def test_every_fixture_directory_is_covered() -> None:
    names = {p.name for p in FIXTURES.iterdir() if p.is_dir()} - {"valid", "valid_grpc"}
    assert names == {name.split("/")[0] for name in EXPECTED}


@pytest.mark.parametrize("fixture", ["valid", "valid_grpc/1.0.0"])
def test_valid_fixtures_lint_clean(fixture: str) -> None:
    result = lint_paths([FIXTURES / fixture])
    assert result.problems == ()
    assert result.ok
    assert [c.name for c in result.contracts] == ["orders"]


def test_messages_say_what_is_wrong() -> None:
    problems = {
        p.location.pointer if p.code == "schema.meta" else p.code: p
        for p in lint_paths(
            [FIXTURES / "unknown_key", FIXTURES / "version_not_semver", FIXTURES / "meta_schema_violation"]
        ).problems
    }
    assert problems["manifest.unknown_key"].hint == "did you mean 'events'?"
    assert "1.0" in problems["manifest.version_invalid"].message
    assert "MAJOR.MINOR.PATCH" in (problems["manifest.version_invalid"].hint or "")
    # the meta-schema's anyOf for "type" is explained by its enum of allowed names
    assert "'strin' is not one of" in problems["/properties/id/type"].message
    assert problems["/properties/name/minLength"].message == "-1 is less than the minimum of 0"


def test_name_hint_explains_subject_tokens() -> None:
    (problem,) = lint_paths([FIXTURES / "name_with_dot"]).problems
    assert "subject token" in (problem.hint or "")
    assert "'.'" in (problem.hint or "")


def test_all_problems_of_one_contract_are_collected(tmp_path: Path) -> None:
    manifest = """contract: Orders
version: 1.0.0
provider: backend
colour: blue
operations:
  place_order:
    input: in.json
    output: missing.json
events:
  order_placed:
    payload: bad.json
"""
    root = write_contract(
        tmp_path / "c", {"in.json": '{"$ref": "https://example.com/x.json"}', "bad.json": '{"type": 12}'}, manifest
    )
    result = lint_paths([root])
    assert sorted(p.code for p in result.problems) == sorted(
        ["manifest.name_invalid", "manifest.unknown_key", "manifest.file_missing", "schema.ref_remote", "schema.meta"]
    )


def test_symlink_leaving_the_contract_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside.json"
    outside.write_text(GOOD)
    root = write_contract(tmp_path / "c", {"out.json": GOOD})
    (root / "in.json").unlink()
    (root / "in.json").symlink_to(outside)
    assert summary(lint_paths([root]).problems) == [
        ("manifest.path_escape", "contract.yaml", 6, "/operations/place_order/input")
    ]


def test_ref_through_symlink_leaving_the_contract_is_refused(tmp_path: Path) -> None:
    (tmp_path / "outside.json").write_text(GOOD)
    root = write_contract(tmp_path / "c", {"in.json": '{\n  "$ref": "link.json"\n}'})
    (root / "link.json").symlink_to(tmp_path / "outside.json")
    assert summary(lint_paths([root]).problems) == [("schema.ref_escape", "in.json", 2, "/$ref")]


def test_a_50_mb_schema_is_refused_without_reading_it(tmp_path: Path) -> None:
    root = write_contract(tmp_path / "c", {})
    with (root / "in.json").open("wb") as handle:
        handle.truncate(50 * 1024 * 1024)  # sparse: the size check must not read it
    assert summary(lint_paths([root]).problems) == [("input.too_large", "in.json", None, None)]


def test_deeply_nested_schemas_get_problems_not_tracebacks(tmp_path: Path) -> None:
    deep_bad = tmp_path / "deep_bad.json"
    deep_bad.write_text('{"properties": {"a": ' * 300 + '{"type": 5}' + "}}" * 300)
    (problem,) = lint_paths([deep_bad]).problems  # python-jsonschema would recurse too deep: jsonschema-rs tells
    assert problem.code == "schema.meta"
    assert problem.location.pointer == "/properties/a" * 300 + "/type"
    deep_ok = tmp_path / "deep_ok.json"
    deep_ok.write_text('{"items": ' * 900 + '{"type": "string"}' + "}" * 900)
    for problem in lint_paths([deep_ok]).problems:  # whatever is said, it is said as a located problem
        assert problem.location.file == str(deep_ok)
        assert problem.hint


def test_yaml_aliases_that_explode_are_refused(tmp_path: Path) -> None:
    lines = ["a0: &a0 {type: string}"] + [
        f"a{i}: &a{i} {{allOf: [*a{i - 1}, *a{i - 1}, *a{i - 1}]}}" for i in range(1, 20)
    ]  # 3**19 subschemas once expanded
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("$defs:\n" + "".join(f"  {line}\n" for line in lines))
    assert [p.code for p in lint_paths([bomb]).problems] == ["schema.alias_expansion"]
    modest = tmp_path / "modest.yaml"  # a few aliases stay within the document's size: fine
    modest.write_text("$defs:\n  s: &s {type: string}\nproperties:\n  a: *s\n  b: *s\n")
    assert lint_paths([modest]).ok


def test_a_directory_named_like_a_version_must_match_it(tmp_path: Path) -> None:
    root = write_contract(tmp_path / "orders" / "1.0", {})
    (problem,) = lint_paths([root]).problems
    assert problem.code == "manifest.version_mismatch"
    ok = write_contract(tmp_path / "orders" / "1.0.0", {})
    assert lint_paths([ok]).ok


@pytest.mark.parametrize(
    ("edit", "code", "pointer"),
    [
        (("version: 1.0.0", "version: v1.0.0"), "manifest.version_invalid", "/version"),
        (("version: 1.0.0", "version: '1.0'"), "manifest.version_invalid", "/version"),
        (("contract: orders", "contract: " + "o" * 64), "manifest.name_invalid", "/contract"),
        (("provider: backend", "provider: back end"), "manifest.name_invalid", "/provider"),
        (("place_order:", "place-order:"), "manifest.name_invalid", "/operations/place-order"),
        (("    output: out.json\n", ""), "manifest.missing_key", "/operations/place_order"),
        (
            ("    output: out.json", "    output: out.json\n    outptu: x.json"),
            "manifest.unknown_key",
            "/operations/place_order/outptu",
        ),
        (("    input: in.json", "    input: in.json#Order"), "manifest.ref_invalid", "/operations/place_order/input"),
        (("    input: in.json", "    input: '#/$defs/A'"), "manifest.ref_invalid", "/operations/place_order/input"),
        (("    input: in.json", "    input: in.txt"), "manifest.file_type", "/operations/place_order/input"),
        (("    input: in.json", "    input: [in.json]"), "manifest.type", "/operations/place_order/input"),
        (
            ("operations:\n  place_order:\n    input: in.json\n    output: out.json\n", "operations: {}\n"),
            "manifest.empty",
            "",
        ),
    ],
)
def test_manifest_rules(tmp_path: Path, edit: tuple[str, str], code: str, pointer: str) -> None:
    before, after = edit
    assert before in MANIFEST
    root = write_contract(tmp_path / "c", {}, MANIFEST.replace(before, after))
    problems = lint_paths([root]).problems
    assert [(p.code, p.location.pointer) for p in problems] == [(code, pointer)]


def test_the_longest_name_allowed_is_63_characters(tmp_path: Path) -> None:
    root = write_contract(tmp_path / "c", {}, MANIFEST.replace("contract: orders", "contract: " + "o" * 63))
    assert lint_paths([root]).ok


def test_grpc_section_rules(tmp_path: Path) -> None:
    manifest = "contract: orders\nversion: 1.0.0\nprovider: backend\ngrpc:\n  proto: orders.proto\n"
    root = write_contract(tmp_path / "c", {"orders.proto": 'syntax = "proto3";\n'}, manifest)
    assert [(p.code, p.location.pointer) for p in lint_paths([root]).problems] == [("manifest.missing_key", "/grpc")]
    bad_service = manifest + "  service: shop..Orders\n"
    root = write_contract(tmp_path / "d", {"orders.proto": 'syntax = "proto3";\n'}, bad_service)
    assert [(p.code, p.location.pointer) for p in lint_paths([root]).problems] == [
        ("manifest.name_invalid", "/grpc/service")
    ]


def test_rpc_names_are_checked_and_the_service_found(tmp_path: Path) -> None:
    proto = (
        'syntax = "proto3";\npackage shop.v1;\nmessage M { string a = 1; }\n'
        "service Orders {\n  rpc Place(M) returns (M);\n  rpc _Hidden(M) returns (M);\n}\n"
    )
    manifest = (
        "contract: orders\nversion: 1.0.0\nprovider: backend\ngrpc:\n  proto: o.proto\n  service: shop.v1.Orders\n"
    )
    root = write_contract(tmp_path / "c", {"o.proto": proto}, manifest)
    assert summary(lint_paths([root]).problems) == [("grpc.rpc_name_invalid", "o.proto", 6, None)]


# --- schema rules --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        # recursion under a property or an item consumes part of the instance: fine
        ({"properties": {"next": {"$ref": "#"}}}, []),
        ({"items": {"$ref": "#/$defs/A"}, "$defs": {"A": {"anyOf": [{"type": "null"}, {"$ref": "#"}]}}}, []),
        ({"$defs": {"T": {"type": "object", "additionalProperties": {"$ref": "#/$defs/T"}}}, "$ref": "#/$defs/T"}, []),
        # cycles on the same instance with no meaning: only $refs, or through not, if or oneOf
        ({"$ref": "#"}, [("schema.ref_cycle", "/$ref")]),
        (
            {"$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"oneOf": [{"$ref": "#/$defs/A"}]}}},
            [("schema.ref_cycle", "/$defs/A/$ref")],
        ),  # reported at the cycle's first $ref in the document
        ({"not": {"$ref": "#"}}, [("schema.ref_cycle", "/not/$ref")]),
        ({"if": {"$ref": "#"}, "then": {"type": "string"}}, [("schema.ref_cycle", "/if/$ref")]),
        # through allOf, anyOf, then, else, dependentSchemas: read as the runtime does (a lint warning, tested in
        # tests/compat/test_jsonschema_recursive.py)
        ({"if": {"type": "string"}, "then": {"$ref": "#"}}, []),
        ({"dependentSchemas": {"a": {"$ref": "#"}}}, []),
        (
            {"$dynamicAnchor": "node", "oneOf": [{"$dynamicRef": "#node"}]},
            [("schema.ref_cycle", "/oneOf/0/$dynamicRef")],
        ),
        # resolvable references of every kind
        ({"$defs": {"A": {"$anchor": "a", "type": "string"}}, "properties": {"x": {"$ref": "#a"}}}, []),
        ({"definitions": {"A": {"type": "string"}}, "properties": {"x": {"$ref": "#/definitions/A"}}}, []),
        (
            {
                "$defs": {
                    "M": {
                        "$id": "urn:x:m",
                        "$defs": {"C": {"type": "string"}},
                        "properties": {"c": {"$ref": "#/$defs/C"}},
                    }
                },
                "properties": {"m": {"$ref": "urn:x:m"}},
            },
            [],
        ),
        ({"$defs": {"a b": {"type": "string"}}, "properties": {"x": {"$ref": "#/$defs/a%20b"}}}, []),
        ({"$schema": "https://json-schema.org/draft/2020-12/schema#"}, []),
        # an $id declared in another document is not resolved: files are named by path
        ({"properties": {"m": {"$ref": "urn:shop:money"}}}, [("schema.ref_remote", "/properties/m/$ref")]),
        # a nested $id changes what a relative reference means
        (
            {"$defs": {"M": {"$id": "https://example.com/m.json", "properties": {"c": {"$ref": "c.json"}}}}},
            [("schema.ref_remote", "/$defs/M/properties/c/$ref")],
        ),
        # a reference into a plain container still gets its target checked against the meta-schema
        (
            {"x-library": {"Bad": {"minimum": "one"}}, "properties": {"x": {"$ref": "#/x-library/Bad"}}},
            [("schema.meta", "/x-library/Bad/minimum")],
        ),
        (
            {"properties": {"x": {"$ref": "#/required"}}, "required": ["x"]},
            [("schema.ref_unresolved", "/properties/x/$ref")],
        ),
        ({"$schema": "http://json-schema.org/draft-03/schema#"}, [("schema.dialect", "/$schema")]),
        ({"pattern": "\\p{L}+"}, [("schema.meta", "/pattern")]),  # Python's re refuses it, as check_schema does
        ({"patternProperties": {"((": {}}}, [("schema.meta", "/patternProperties")]),
    ],
)
def test_schema_rules(tmp_path: Path, schema: object, expected: list[tuple[str, str]]) -> None:
    money = '{"$id": "urn:shop:money", "type": "integer"}'
    root = write_contract(tmp_path / "c", {"in.json": json.dumps(schema, indent=2), "out.json": money})
    problems = lint_paths([root]).problems
    assert [(p.code, p.location.pointer) for p in problems] == expected
    assert all(Path(p.location.file or "").name == "in.json" for p in problems)


def test_references_in_other_files_are_checked_too(tmp_path: Path) -> None:
    root = write_contract(
        tmp_path / "c",
        {
            "in.json": '{"properties": {"a": {"$ref": "defs/common.json#/$defs/A"}}}',
            "defs/common.json": (
                '{\n  "$defs": {\n    "A": {"$ref": "../../elsewhere.json"},\n    "B": {"type": 1}\n  }\n}'
            ),
        },
    )
    assert summary(lint_paths([root]).problems) == [
        ("schema.ref_escape", "common.json", 3, "/$defs/A/$ref"),
        ("schema.meta", "common.json", 4, "/$defs/B/type"),
    ]


def test_references_inside_a_referenced_container_are_checked(tmp_path: Path) -> None:
    # "x-library" is no keyword: what sits below it is a schema only because a $ref points there
    library = '{\n  "x-library": {\n    "A": {"$ref": "nowhere.json"},\n    "B": {"$ref": "#/x-library/B"}\n  }\n}'
    root = write_contract(
        tmp_path / "c",
        {
            "in.json": '{"properties": {"a": {"$ref": "lib.json#/x-library/A"}, "b": {"$ref": "#/x-library/C"}},'
            ' "x-library": {"C": {"$ref": "lib.json#/x-library/B"}}}',
            "out.json": '{"$ref": "lib.json"}',
            "lib.json": library,
        },
    )
    assert summary(lint_paths([root]).problems) == [
        ("schema.ref_unresolved", "lib.json", 3, "/x-library/A/$ref"),
        ("schema.ref_cycle", "lib.json", 4, "/x-library/B/$ref"),
    ]


def test_a_broken_file_reached_by_several_refs_is_reported_once(tmp_path: Path) -> None:
    root = write_contract(
        tmp_path / "c",
        {
            "in.json": '{"properties": {"a": {"$ref": "bad.json"}, "b": {"$ref": "bad.json#/x"}}}',
            "out.json": '{"$ref": "bad.json"}',
            "bad.json": "{oops",
        },
    )
    codes = [p.code for p in lint_paths([root]).problems]
    assert codes.count("input.json") == 1
    assert codes.count("schema.ref_unresolved") == 3  # each $ref says it cannot be followed


# --- what lint_paths accepts ---------------------------------------------------------------------------


def test_a_tree_is_searched_sorted_skipping_hidden_and_runtime_dirs(tmp_path: Path) -> None:
    for name in ("b", "a", ".git/x", ".subhive/y", "deep/er/c"):
        write_contract(tmp_path / "contracts" / name, {}, MANIFEST.replace("orders", name.rsplit("/", 1)[-1]))
    write_contract(tmp_path / "contracts" / ".hidden", {"in.json": "{broken"})
    result = lint_paths([tmp_path / "contracts"])
    assert result.ok
    assert [c.name for c in result.contracts] == ["a", "b", "c"]


def test_the_same_contract_twice_is_linted_once(tmp_path: Path) -> None:
    root = write_contract(tmp_path / "c", {"in.json": '{"type": 1}'})
    result = lint_paths([root, root / "contract.yaml", tmp_path])
    assert [p.code for p in result.problems] == ["schema.meta"]


@pytest.mark.parametrize(
    ("make", "code"),
    [
        (lambda d: d / "missing", "input.not_found"),
        (lambda d: d, "lint.nothing_found"),
        (lambda d: (d / "notes.txt").write_text("hi") and d / "notes.txt", "lint.unsupported_file"),
    ],
)
def test_paths_with_nothing_to_lint_are_problems(tmp_path: Path, make: object, code: str) -> None:
    path = make(tmp_path)  # type: ignore[operator]
    result = lint_paths([path])
    assert [p.code for p in result.problems] == [code]
    assert not result.ok


def test_single_schema_and_proto_files(tmp_path: Path) -> None:
    ok = FIXTURES / "valid" / "schemas" / "get_order.yaml"  # its ../ reference stays inside its contract
    assert lint_paths([ok, FIXTURES / "valid_grpc" / "1.0.0" / "orders.proto"]).ok
    bad = tmp_path / "s.yaml"
    bad.write_text("type: object\nproperties:\n  a:\n    $ref: https://example.com/a.json\n")
    assert summary(lint_paths([bad]).problems) == [("schema.ref_remote", "s.yaml", 4, "/properties/a/$ref")]
    proto = FIXTURES / "proto_does_not_compile" / "orders.proto"
    assert [p.code for p in lint_paths([proto]).problems] == ["proto.compile"]


@pytest.fixture
def http_server() -> Iterator[tuple[str, list[str]]]:
    """A real HTTP server on a free port that serves a schema and records every request it gets."""
    requests: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            requests.append(self.path)
            body = b'{"type": "object"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/schema+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", requests
    finally:
        server.shutdown()
        server.server_close()


def test_lint_fetches_nothing_from_the_network(tmp_path: Path, http_server: tuple[str, list[str]]) -> None:
    url, requests = http_server
    root = write_contract(
        tmp_path / "c",
        {
            "in.json": json.dumps({"$schema": f"{url}/meta", "type": "object"}),  # jsonschema-rs would fetch it
            "out.json": json.dumps({"properties": {"a": {"$ref": f"{url}/a.json"}}}),
            "other.yaml": f"$schema: {url}/other\ntype: [1]\n",
        },
    )
    problems = lint_paths([root, root / "other.yaml"]).problems
    assert requests == []
    assert sorted(p.code for p in problems) == ["schema.dialect", "schema.dialect", "schema.meta", "schema.ref_remote"]


# --- the fast meta-schema path agrees with python-jsonschema --------------------------------------------

_KEYWORDS = [
    "type",
    "minimum",
    "maxLength",
    "minItems",
    "required",
    "enum",
    "pattern",
    "properties",
    "items",
    "additionalProperties",
    "allOf",
    "anyOf",
    "not",
    "const",
    "format",
    "uniqueItems",
    "minProperties",
    "$anchor",
    "$comment",
    "title",
    "multipleOf",
    "dependentRequired",
    "prefixItems",
    "contains",
]
_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 5)
    | st.floats(-2, 2, allow_nan=False)
    | st.sampled_from(["string", "object", "strin", "^a+$", "((", "x", "", "integer", "date"]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "b", *_KEYWORDS]), inner, max_size=3)
    ),
    max_leaves=8,
)
_regex = st.sampled_from(["^a+$", "((", "[", "\\p{L}", "a{2,1}", "(?<n>a)\\k<n>", "x*", "\\d{3}"])
_targeted = st.fixed_dictionaries(
    {},
    optional={  # the places where the two validators differ most
        "pattern": _regex,
        "patternProperties": st.dictionaries(_regex, st.just({}), max_size=2),
        "type": st.sampled_from(["string", "strin", ["string", "null"]]),
        "properties": st.dictionaries(
            st.sampled_from(["a", "b"]),
            st.fixed_dictionaries(
                {},
                optional={
                    "pattern": _regex,
                    "minimum": st.sampled_from([1, "1"]),
                    "format": st.sampled_from(["date", 1]),
                },
            ),
            max_size=2,
        ),
    },
)
_schemas = st.one_of(st.dictionaries(st.sampled_from(_KEYWORDS), _values, max_size=4), _targeted)
# python-jsonschema's meta-schema check with "regex" meaning ECMA-262 (not Python's re), as lint reads it.
_META = Draft202012Validator(
    Draft202012Validator.META_SCHEMA, format_checker=_ecma(Draft202012Validator.FORMAT_CHECKER)
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_schemas)
def test_lint_reports_every_schema_python_jsonschema_refuses(schema: dict[str, object]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.json"
        path.write_text(json.dumps(schema))
        codes = {p.code for p in lint_paths([path]).problems}
    refused = any(True for _ in _META.iter_errors(schema))
    if refused:  # the fast path (jsonschema-rs first) must never hide what python-jsonschema refuses
        assert "schema.meta" in codes
    else:  # and it reports more only when the runtime validator's own meta-schema check disagrees
        assert "schema.meta" not in codes or not jsonschema_rs.meta.is_valid(schema)
    assert codes <= {"schema.meta", "schema.runtime_rejects"}


def test_fixtures_are_not_modified_by_lint(tmp_path: Path) -> None:
    copy = tmp_path / "valid"
    shutil.copytree(FIXTURES / "valid", copy)
    before = {p: p.read_bytes() for p in copy.rglob("*") if p.is_file()}
    assert lint_paths([copy]).ok
    assert {p: p.read_bytes() for p in copy.rglob("*") if p.is_file()} == before
    assert not any(name.startswith(".") for name in os.listdir(copy))


# --- no input makes lint raise ---------------------------------------------------------------------------

_refs = st.sampled_from(
    [
        "#",
        "#/",
        "#/$defs/a",
        "#/$defs/~2",
        "#a",
        "#%zz",
        "x.json",
        "x.json#/b",
        "../x.json",
        "http://[bad",
        "urn:",
        "",
        "?q",
        "//host/x.json",
        "#/properties/0",
        "sub/",
        "%2e%2e/x.json",
        "#/$defs/a/items",
        "\x00",
        "C:\\\\x.json",
        "x.json#a",
    ]
)
_schema_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 3) | st.text(max_size=3) | _refs,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "$ref",
                    "$defs",
                    "$id",
                    "$anchor",
                    "$dynamicRef",
                    "$dynamicAnchor",
                    "$schema",
                    "items",
                    "allOf",
                    "properties",
                    "a",
                    "not",
                    "pattern",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)
_manifest_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-2, 3)
    | st.floats(0, 2, allow_nan=False)
    | st.sampled_from(["orders", "in.json", "x.json#/a", "1.0.0", "Bad Name", "../x.json", "a.proto", "pkg.Svc"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "contract",
                    "version",
                    "provider",
                    "description",
                    "operations",
                    "events",
                    "grpc",
                    "place_order",
                    "input",
                    "output",
                    "payload",
                    "proto",
                    "service",
                    "x",
                ]
            ),
            inner,
            max_size=5,
        )
    ),
    max_leaves=15,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(manifest=_manifest_values, schema=_schema_values)
def test_any_manifest_and_schema_give_problems_never_exceptions(manifest: object, schema: object) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "c"
        root.mkdir()
        (root / "contract.yaml").write_text(json.dumps(manifest))  # JSON is YAML
        (root / "in.json").write_text(json.dumps(schema))
        (root / "x.json").write_text(json.dumps({"$defs": {"a": schema}}))
        result = lint_paths([root, root / "in.json"])
    for problem in result.problems:
        assert problem.code
        assert problem.message
        assert problem.location.file
    assert result.ok == (not result.problems)


def _alive(type_name: str) -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if type(o).__name__ == type_name)


def test_a_lint_leaves_nothing_of_what_it_read_alive(tmp_path: Path) -> None:
    # jsonschema-rs objects hide what they hold from Python's cycle collector: a registry holding a method of the
    # object holding the registry kept every document a process ever linted alive (the root hive runs for days).
    (tmp_path / "a.json").write_text(json.dumps({"properties": {"b": {"$ref": "b.json"}}}))
    (tmp_path / "b.json").write_text(json.dumps({"type": "string", "pattern": "^x"}))
    before = _alive("SchemaDocuments"), _alive("SourceDocument")
    for _ in range(3):
        assert lint_paths([tmp_path / "a.json"]).ok
    assert (_alive("SchemaDocuments"), _alive("SourceDocument")) == before
