"""Meta-schemas of every dialect are bundled and resolved by URL, never fetched (decision 0095)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from subhive._dialects import DIALECTS, META_URIS
from subhive._metaschemas import is_bundled, metaschema, translated_metaschema, uris
from subhive.codegen.bundle import bundle_contract
from subhive.compat.jsonschema import diff_schemas
from subhive.contract import lint_paths, load_contract
from subhive.contract._refs import RefSite, SchemaDocuments
from subhive.runtime import ContractBinding

MANIFEST = """contract: orders
version: 1.0.0
provider: backend
events:
  order_placed:
    payload: order.json
"""


@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_dialect_meta_schema_is_bundled_under_every_spelling_of_its_url(dialect: str) -> None:
    uri = META_URIS[dialect]
    bare = uri.rstrip("#")
    other_scheme = ("https" if bare.startswith("http:") else "http") + bare[bare.index(":") :]
    for spelling in (uri, bare, bare + "#", other_scheme):
        assert is_bundled(spelling), spelling
        assert metaschema(spelling) is metaschema(uri)
    assert not is_bundled("https://example.com/draft-07/schema")
    # The published document, not a copy of something else: python-jsonschema's own checker agrees it is a schema.
    jsonschema.validators.validator_for(metaschema(uri)).check_schema(metaschema(uri))


def test_vocabulary_meta_schemas_come_along() -> None:
    assert "https://json-schema.org/draft/2020-12/meta/validation" in uris()
    assert "https://json-schema.org/draft/2019-09/meta/core" in uris()


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_ref_to_a_meta_schema_resolves_in_a_contract_directory(tmp_path: Path, dialect: str) -> None:
    (tmp_path / "a.json").write_text(json.dumps({"$ref": META_URIS[dialect]}))
    documents = SchemaDocuments(tmp_path)
    doc = documents.load(tmp_path / "a.json")
    target = documents.resolve(doc, RefSite("", "$ref", META_URIS[dialect], documents.index(doc).root_base))
    assert target.pointer == ""
    assert target.document.path.parent.name == "metaschemas"
    # The meta-schema is read in its own dialect's meaning: its translation is what resolves.
    assert target.schema == translated_metaschema(META_URIS[dialect])
    assert target.document not in documents.documents()  # not linted as part of the contract


def test_a_pointer_into_a_meta_schema_is_compared_by_meaning() -> None:
    d7 = META_URIS["draft-07"]
    old = {"$schema": d7, "properties": {"n": {"$ref": d7 + "/definitions/nonNegativeInteger"}}}
    narrower = {"$schema": d7, "properties": {"n": {"type": "integer", "minimum": 1}}}
    report = diff_schemas(old, narrower)
    assert (report.backward, report.forward) == (False, True)
    assert [c.code for c in report.changes] == ["minimum.tightened"]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_schema_embedding_a_meta_schema_is_compatible_with_itself(dialect: str) -> None:
    schema = {"type": "object", "properties": {"schema": {"$ref": META_URIS[dialect]}}}
    report = diff_schemas(schema, schema)
    assert (report.backward, report.forward) == (True, True), [c.code for c in report.changes]


def test_a_contract_holding_a_schema_lints_clean_and_validates_it_by_the_meta_schema(tmp_path: Path) -> None:
    root = tmp_path / "orders" / "1.0.0"
    root.mkdir(parents=True)
    (root / "contract.yaml").write_text(MANIFEST)
    d4 = META_URIS["draft-04"]
    order: dict[str, Any] = {"type": "object", "required": ["shape"], "properties": {"shape": {"$ref": d4}}}
    (root / "order.json").write_text(json.dumps(order))
    result = lint_paths([root])
    assert result.ok, result.problems
    bundle = bundle_contract(load_contract(root))
    binding = ContractBinding.from_dict(
        {"name": "orders", "version": "1.0.0", "provider": "backend", "operations": {},
         "events": {"order_placed": "events.order_placed.payload"}, "schemas": bundle.schemas}
    )  # fmt: skip
    validator = binding.validator("events.order_placed.payload")
    assert validator.is_valid({"shape": {"type": "string", "maximum": 3, "exclusiveMaximum": True}})
    # draft-04 wants at least one name in "required", and a boolean exclusiveMaximum
    assert not validator.is_valid({"shape": {"required": []}})
    assert not validator.is_valid({"shape": {"exclusiveMaximum": 3}})


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_schema_referring_to_any_meta_schema_lints_clean(tmp_path: Path, dialect: str) -> None:
    path = tmp_path / "a.json"
    path.write_text(json.dumps({"type": "object", "properties": {"schema": {"$ref": META_URIS[dialect]}}}))
    result = lint_paths([path])
    assert result.ok, result.problems
