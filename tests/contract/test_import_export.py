"""OpenAPI and AsyncAPI in and out (issue #16, item 5).

``subhive contract import`` turns OpenAPI 3.0/3.1 and AsyncAPI 2.x/3.0 documents (multi-file ``$ref``s followed
from the document's directory) into a contract version that lint accepts; every problem of a broken document is
reported with its file and JSON pointer, and nothing is written. ``subhive contract export --asyncapi`` describes the
workspace's accepted contracts as an AsyncAPI 3.0 document, validated here against the AsyncAPI Initiative's own
JSON Schema (vendored in tests/data/asyncapi).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from subhive._rs_validator import runtime_validator
from subhive.codegen.bundle import bundle, bundle_contract
from subhive.contract import load_contract
from subhive.root_hive import Lock, LockEntry, contract_hash
from tests.kit import REPO, cli, make_workspace

FIXTURES = Path(__file__).parent / "fixtures_import"
ASYNCAPI_SCHEMA = REPO / "tests" / "data" / "asyncapi" / "asyncapi-3.0.0.json"


def accepts(schema: Any, instance: Any) -> bool:
    """What the bus's validator (jsonschema-rs, formats asserted, its patterns as decision 0137 matches them) says of
    ``instance``."""
    return bool(runtime_validator(schema, validate_formats=True).is_valid(instance))


def imported(capsys: pytest.CaptureFixture[str], tmp_path: Path, document: Path, *args: str) -> Path:
    code, _, err = cli(capsys, "contract", "import", str(document), "--out", str(tmp_path / "contracts"), *args)
    assert code == 0, err
    (directory,) = (tmp_path / "contracts").glob("*/*")
    code, _, err = cli(capsys, "contract", "lint", str(directory))
    assert code == 0, err
    return directory


def test_openapi_30_operations_and_the_3_0_schema_object(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    directory = imported(capsys, tmp_path, FIXTURES / "petstore30.yaml", "--provider", "pets")
    contract = load_contract(directory)
    assert (contract.name, str(contract.version), contract.provider) == ("petstore", "1.2.0", "pets")
    assert list(contract.operations) == ["list_pets", "create_pet", "show_pet_by_id", "delete_pets_pet_id"]
    defs = json.loads((directory / "schemas.json").read_text())["$defs"]
    # nullable, example and boolean exclusive bounds, translated as subhive reads OpenAPI 3.0 everywhere
    assert defs["NewPet"]["properties"]["tag"] == {"type": ["string", "null"]}
    assert defs["NewPet"]["properties"]["name"] == {"type": "string", "examples": ["Rex"]}
    assert defs["ListPetsInput"]["properties"]["query"]["properties"]["limit"] == {
        "type": "integer",
        "minimum": 1,
        "exclusiveMaximum": 100,
    }
    assert "Error" in defs  # every component schema is kept, used or not
    ops = contract.operations
    create_in, pet_out = bundle(ops["create_pet"].input), bundle(ops["create_pet"].output)
    assert accepts(create_in, {"body": {"name": "Rex", "tag": None}})
    assert not accepts(create_in, {"body": {"tag": "x"}})  # name is required
    assert not accepts(create_in, {})  # the body is required
    assert accepts(pet_out, {"id": 1, "name": "Rex"})
    assert not accepts(pet_out, {"id": 0, "name": "Rex"})
    show_in = bundle(ops["show_pet_by_id"].input)
    assert accepts(show_in, {"path": {"petId": "rex-1"}})
    assert not accepts(show_in, {"path": {"petId": "Rex 1"}})
    assert not accepts(show_in, {})
    limit = bundle(ops["list_pets"].input)
    assert accepts(limit, {"query": {"limit": 99}})
    assert not accepts(limit, {"query": {"limit": 100}})
    assert bundle(ops["delete_pets_pet_id"].output)["type"] == "null"  # 204: nothing to reply


def test_openapi_31_recursion_headers_and_several_replies(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    directory = imported(capsys, tmp_path, FIXTURES / "petstore31.json")
    contract = load_contract(directory)
    assert (contract.name, contract.provider) == ("petstore-31", "petstore_31")
    get_in = bundle(contract.operations["get_pet"].input)
    assert accepts(get_in, {"path": {"petId": 1}, "header": {"X-Request-Id": "r"}})
    assert not accepts(get_in, {"path": {"petId": 0}})  # 3.1: exclusiveMinimum is a number already
    pet = bundle(contract.operations["get_pet"].output)
    assert accepts(pet, {"id": 1, "name": "a", "owner": {"pets": [{"id": 2, "name": "b", "tag": None}]}})
    assert not accepts(pet, {"id": 1, "name": "a", "owner": {"pets": [{"id": 2}]}})  # recursion holds
    replaced = bundle(contract.operations["replace_pet"].output)  # 200 or 202: either reply
    assert accepts(replaced, {"job": "j1"})
    assert accepts(replaced, {"id": 1, "name": "a"})
    assert not accepts(replaced, {"other": 1})


def test_multi_file_refs_are_followed_from_each_files_directory(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    directory = imported(capsys, tmp_path, FIXTURES / "multi" / "api.yaml")
    contract = load_contract(directory)
    op = contract.operations["place_order"]
    assert op.output.pointer == "/$defs/Order"
    body = bundle(op.input)
    assert accepts(body, {"body": {"lines": [{"sku": "a", "quantity": 1}]}})
    assert not accepts(body, {"body": {"lines": [{"sku": "a", "quantity": 0}]}})  # draft-04 style bound, exclusive
    assert not accepts(body, {"body": {"lines": []}})
    order = bundle(op.output)
    assert accepts(order, {"id": "o", "lines": [], "note": None})  # nullable in a file the document refers to


def test_asyncapi_26_messages_are_events(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    directory = imported(capsys, tmp_path, FIXTURES / "asyncapi26.yaml", "--name", "accounts")
    contract = load_contract(directory)
    # One message used by two channels is one event; a message without a name is named by its component key.
    assert list(contract.events) == ["user_signed_up", "user_deleted"]
    assert contract.events["user_signed_up"].description == "A user signed up."
    user = bundle(contract.events["user_signed_up"].payload)
    ok = {"id": "5a0f1c52-8c6c-4d36-9d4b-0c8b1d9f6a11", "email": "a@b.c", "tags": ["x", 1]}
    assert accepts(user, ok)
    assert not accepts(user, {**ok, "tags": ["x", 1, 2]})  # draft-07 tuple items with additionalItems: false
    assert not accepts(user, {**ok, "age": 150})
    assert not accepts(bundle(contract.events["user_deleted"].payload), {"id": "u", "reason": "bored"})


def test_asyncapi_30_channels_and_multi_format_payloads(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    directory = imported(capsys, tmp_path, FIXTURES / "asyncapi30.yaml")
    contract = load_contract(directory)
    assert (contract.name, str(contract.version)) == ("lights", "0.3.0")
    assert list(contract.events) == ["light_measured", "dimmed"]
    measured = bundle(contract.events["light_measured"].payload)
    assert accepts(measured, {"lumens": 3, "sentAt": "2026-01-01T00:00:00Z"})
    assert not accepts(measured, {"sentAt": "yesterday"})
    assert not accepts(bundle(contract.events["dimmed"].payload), {"percentage": 101})


BROKEN = """openapi: 3.0.3
info: {title: broken, version: 1.0.0}
paths:
  /a:
    post:
      operationId: doIt
      requestBody:
        content:
          application/xml:
            schema: {type: string}
      responses:
        "200": {description: ok}
  /b:
    get:
      operationId: do_it
      responses:
        "200": {description: ok}
    put:
      responses:
        "400": {description: no}
components:
  schemas:
    X:
      type: object
      properties:
        remote: {$ref: "https://example.com/x.json"}
        missing: {$ref: "nothere.json#/A"}
        inside: {$ref: "#/components/schemas/Nope"}
"""


def test_a_broken_document_gets_every_problem_with_its_pointer_and_nothing_is_written(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    document = tmp_path / "api.yaml"
    document.write_text(BROKEN)
    out = tmp_path / "contracts"
    code, _out_text, err = cli(capsys, "contract", "import", str(document), "--out", str(out))
    assert code == 2
    assert "Traceback" not in err
    found = {(line.split(" [")[-1].rstrip("]"), line.split()[2].rstrip(":")) for line in err.splitlines() if
             line.startswith("error:")}  # fmt: skip
    assert found == {
        ("import.non_json_body", "/paths/~1a/post/requestBody/content"),
        ("import.name_clash", "/paths/~1b/get"),
        ("import.no_success_response", "/paths/~1b/put/responses"),
        ("import.ref_remote", "/components/schemas/X/properties/remote/$ref"),
        ("import.ref_unresolved", "/components/schemas/X/properties/missing/$ref"),
        ("import.ref_unresolved", "/components/schemas/X/properties/inside/$ref"),
    }
    assert f"error: {document}:8 /paths/~1a/post/requestBody/content:" in err  # file and line too
    assert not out.exists()


def test_a_schema_lint_refuses_is_named_where_the_document_wrote_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    document = tmp_path / "events.yaml"
    document.write_text(
        "asyncapi: 2.6.0\ninfo: {title: ev, version: 1.0.0}\nchannels:\n  a:\n    subscribe:\n      message:\n"
        "        name: happened\n        payload:\n          type: object\n          properties:\n"
        "            code: {type: string, pattern: '('}\n"
    )
    out = tmp_path / "contracts"
    (out / "ev").mkdir(parents=True)  # an existing contract directory is left as it was
    code, _, err = cli(capsys, "contract", "import", str(document), "--out", str(out))
    assert code == 2
    assert f"error: {document}:11 /channels/a/subscribe/message/payload/properties/code/pattern:" in err
    assert list((out / "ev").iterdir()) == []


def test_an_unsupported_payload_format_and_a_non_document(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    avro = tmp_path / "avro.yaml"
    avro.write_text(
        "asyncapi: 2.6.0\ninfo: {title: ev, version: 1.0.0}\nchannels:\n  a:\n    publish:\n      message:\n"
        "        schemaFormat: application/vnd.apache.avro;version=1.9.0\n        payload: {type: record}\n"
    )
    code, _, err = cli(capsys, "contract", "import", str(avro), "--out", str(tmp_path / "c"))
    assert code == 2
    assert "/channels/a/publish/message/schemaFormat" in err
    assert "[import.schema_format]" in err
    whole = tmp_path / "whole.yaml"  # "$ref: '#'" would read the AsyncAPI document itself as a schema
    whole.write_text(
        "asyncapi: 3.0.0\ninfo: {title: w, version: 1.0.0}\nchannels:\n  a:\n    messages:\n      m:\n"
        "        payload: {$ref: '#'}\n"
    )
    code, _, err = cli(capsys, "contract", "import", str(whole), "--out", str(tmp_path / "c"))
    assert code == 2
    assert f"{whole}:7 /channels/a/messages/m/payload/$ref: $ref '#' names a whole OpenAPI/AsyncAPI document" in err
    swagger = tmp_path / "swagger.json"
    swagger.write_text('{"swagger": "2.0", "info": {"title": "s", "version": "1"}, "paths": {}}')
    code, _, err = cli(capsys, "contract", "import", str(swagger), "--out", str(tmp_path / "c"))
    assert code == 2
    assert "[import.not_a_document]" in err
    existing = imported(capsys, tmp_path, FIXTURES / "asyncapi30.yaml")
    code, _, err = cli(
        capsys, "contract", "import", str(FIXTURES / "asyncapi30.yaml"), "--out", str(tmp_path / "contracts")
    )
    assert code == 2
    assert "[import.exists]" in err
    assert (existing / "contract.yaml").exists()


def accept_all(root: Path) -> None:
    """Write contracts.lock accepting every version under contracts/ (what the root hive does on approval)."""
    lock = Lock()
    for directory in sorted((root / "contracts").glob("*/*")):
        contract = load_contract(directory)
        lock.put(LockEntry(contract.name, contract.version, contract_hash(directory), contract.provider))
    lock.save(root)


def exported(capsys: pytest.CaptureFixture[str], root: Path) -> dict[str, Any]:
    target = root / "asyncapi.yaml"
    code, _, err = cli(capsys, "contract", "export", "--asyncapi", "--out", str(target), "-C", str(root))
    assert code == 0, err
    document = yaml.safe_load(target.read_text())
    assert isinstance(document, dict)
    return document


def official_errors(document: dict[str, Any]) -> list[str]:
    schema = json.loads(ASYNCAPI_SCHEMA.read_text())
    return [f"{e.json_path}: {e.message[:200]}" for e in jsonschema.Draft7Validator(schema).iter_errors(document)]


def test_export_is_valid_asyncapi_3_with_the_subjects_and_headers_of_the_bus(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = make_workspace(tmp_path)
    shutil.copytree(REPO / "contracts" / "orders" / "1.1.0", root / "contracts" / "orders" / "1.1.0")
    accept_all(root)
    document = exported(capsys, root)
    assert official_errors(document) == []
    channels = document["channels"]
    assert channels["orders-v1-ev-order_placed"]["address"] == "subhive.orders.v1.ev.order_placed"
    assert channels["orders-v1-op-place_order"]["address"] == "subhive.orders.v1.op.place_order.{sender}"
    event = document["components"]["messages"]["orders-v1-ev-order_placed"]
    headers = event["headers"]
    assert set(headers["properties"]) == {"Subhive-Contract", "Subhive-Sender", "Nats-Msg-Id", "traceparent"}
    assert headers["properties"]["Subhive-Sender"]["const"] == "backend"
    contract = load_contract(root / "contracts" / "orders" / "1.1.0")
    payload = bundle_contract(contract).schemas["events.order_placed.payload"]
    assert event["payload"]["schemaFormat"] == "application/schema+json;version=2020-12"
    # The payload is the bus's schema, its references rebased onto the document (where "#" now points).
    assert json.dumps(event["payload"]["schema"]).count("#/components/messages/orders-v1-ev-order_placed/payload/") \
        == json.dumps(payload).count('"#/$defs/')  # fmt: skip
    # Broken on purpose, the official schema says so: the check is not vacuous.
    document["operations"]["orders-v1-serve-place_order"]["action"] = "answer"
    del document["info"]
    assert len(official_errors(document)) >= 2


def test_import_then_export_then_import_keeps_every_schema(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    root = make_workspace(tmp_path)
    for fixture in ("asyncapi26.yaml", "petstore30.yaml"):
        code, _, err = cli(capsys, "contract", "import", str(FIXTURES / fixture), "--out", str(root / "contracts"))
        assert code == 0, err
    accept_all(root)
    document = exported(capsys, root)
    assert official_errors(document) == []
    again = tmp_path / "again.yaml"
    again.write_text(yaml.safe_dump(document))
    code, _, err = cli(
        capsys, "contract", "import", str(again), "--name", "again", "--version", "1.0.0", "--out", str(tmp_path / "b")
    )
    assert code == 0, err
    back = load_contract(tmp_path / "b" / "again" / "1.0.0")
    originals = {
        **bundle_contract(load_contract(root / "contracts" / "account-service" / "1.0.0")).schemas,
        **bundle_contract(load_contract(root / "contracts" / "petstore" / "1.2.0")).schemas,
    }
    returned = bundle_contract(back).schemas
    assert set(returned) == set(originals)
    for key, schema in originals.items():
        assert _same(returned[key], schema), key


def _same(a: Any, b: Any) -> bool:
    """Equal up to the names of ``$defs`` (both bundles name them, each its own way)."""
    return bool(_shape(a) == _shape(b))


def _shape(schema: Any) -> Any:
    defs = schema.get("$defs", {}) if isinstance(schema, dict) else {}
    order = {
        f"#/$defs/{name}": f"#/$defs/{i}"
        for i, name in enumerate(sorted(defs, key=lambda n: json.dumps(defs[n], sort_keys=True)))
    }

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: order.get(v, v) if k == "$ref" else walk(v) for k, v in node.items() if k != "$defs"}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(schema), sorted(json.dumps(walk(v), sort_keys=True) for v in defs.values())


_LEAF = st.sampled_from(
    [
        {"type": "string"},
        {"type": "string", "maxLength": 8, "pattern": "^[a-z]*$"},
        {"type": "integer", "minimum": 0, "exclusiveMaximum": 10},
        {"type": "number", "multipleOf": 0.5},
        {"type": "boolean"},
        {"type": "null"},
        {"enum": ["a", "b", 3]},
        {"const": "x"},
        {"type": "string", "format": "date-time"},
    ]
)
_SCHEMAS = st.recursive(
    _LEAF,
    lambda inner: st.one_of(
        st.builds(lambda items: {"type": "array", "items": items, "maxItems": 3}, inner),
        st.builds(
            lambda props, req: {
                "type": "object",
                "properties": props,
                "required": sorted(set(req) & set(props)),
                "additionalProperties": False,
            },
            st.dictionaries(st.sampled_from(["id", "name", "at", "tags"]), inner, max_size=3),
            st.lists(st.sampled_from(["id", "name"]), max_size=2),
        ),
        st.builds(lambda options: {"anyOf": options}, st.lists(inner, min_size=1, max_size=3)),
    ),
    max_leaves=6,
)


@settings(max_examples=25, deadline=None)
@given(payloads=st.lists(_SCHEMAS, min_size=1, max_size=3))
def test_every_event_schema_survives_import_export_import(payloads: list[dict[str, Any]]) -> None:
    """For any payload schemas of an AsyncAPI 2.6 document: imported, accepted, exported to AsyncAPI 3.0 and imported
    again, each event validates exactly what it did (the same bundle up to $defs names)."""
    from subhive.bus import export_asyncapi
    from subhive.contract import import_document

    document = {
        "asyncapi": "2.6.0",
        "info": {"title": "prop", "version": "1.0.0"},
        "channels": {
            f"c{i}": {"subscribe": {"message": {"name": f"e{i}", "payload": p}}} for i, p in enumerate(payloads)
        },
    }
    with tempfile.TemporaryDirectory() as tmp:
        root = make_workspace(Path(tmp))
        source = Path(tmp, "in.json")
        source.write_text(json.dumps(document))
        first = import_document(source, out=root / "contracts")
        accept_all(root)
        exported_doc = export_asyncapi(root)
        assert official_errors(exported_doc) == []
        again = Path(tmp, "again.json")
        again.write_text(json.dumps(exported_doc))
        second = import_document(again, out=Path(tmp, "back"), name="again", version="1.0.0")
        before = bundle_contract(load_contract(first.directory)).schemas
        after = bundle_contract(load_contract(second.directory)).schemas
        assert set(before) == set(after) == {f"events.e{i}.payload" for i in range(len(payloads))}
        for key, schema in before.items():
            assert _same(after[key], schema), key
            assert _same(schema, {"$schema": schema["$schema"], **payloads[int(key.split(".")[1][1:])]}), key


def _places(node: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [at]
    if isinstance(node, dict):
        for key, value in node.items():
            out += _places(value, (*at, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out += _places(value, (*at, i))
    return out


_ODD = st.sampled_from(
    [None, 1, "x", [], {}, True, [1], {"$ref": "#/nope"}, {"$ref": "#"}, {"$ref": 3}, {"a": 1}, {"$ref": "../x.json"}]
)


@settings(max_examples=60, deadline=None)
@given(
    fixture=st.sampled_from(["petstore30.yaml", "petstore31.json", "asyncapi26.yaml", "asyncapi30.yaml"]),
    data=st.data(),
)
def test_any_broken_document_ends_in_a_contract_or_problems_never_a_crash(fixture: str, data: st.DataObject) -> None:
    """Whatever value replaces whatever part of a real document, reading it ends in a contract or in problems
    that each name the file and a JSON pointer: never another exception."""
    from subhive.contract import read_document
    from subhive.errors import SubhiveError

    document = yaml.safe_load((FIXTURES / fixture).read_text())
    for _ in range(data.draw(st.integers(1, 3))):
        place = data.draw(st.sampled_from(_places(document)[1:]))
        node = document
        for token in place[:-1]:
            node = node[token]
        node[place[-1]] = json.loads(json.dumps(data.draw(_ODD)))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "doc.json")
        path.write_text(json.dumps(document))
        try:
            read_document(path, version="1.0.0")
        except SubhiveError as exc:
            refused: SubhiveError | None = exc
        else:
            refused = None
    if refused is not None:
        assert refused.problems
        assert all(p.location.file and p.location.pointer is not None for p in refused.problems), refused.problems


def test_export_to_standard_output_as_json_and_an_empty_lock(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = make_workspace(tmp_path)
    code, _, err = cli(capsys, "contract", "export", "--asyncapi", "-C", str(root))
    assert code == 2
    assert "[export.empty]" in err
    code, _, err = cli(capsys, "contract", "export", "-C", str(root))
    assert code == 2
    assert "--asyncapi" in err
    code, _, err = cli(
        capsys, "contract", "import", str(FIXTURES / "asyncapi30.yaml"), "--out", str(root / "contracts")
    )
    assert code == 0, err
    accept_all(root)
    code, out, err = cli(capsys, "contract", "export", "--asyncapi", "-C", str(root))
    assert code == 0, err
    document = yaml.safe_load(out)
    assert sorted(document["channels"]) == ["lights-v0_3-ev-dimmed", "lights-v0_3-ev-light_measured"]
    target = tmp_path / "lights.json"
    code, _, err = cli(capsys, "contract", "export", "--asyncapi", "-C", str(root), "--out", str(target))
    assert code == 0, err
    assert json.loads(target.read_text()) == document
    assert official_errors(document) == []
