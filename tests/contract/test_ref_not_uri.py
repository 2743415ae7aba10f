"""References holding characters a URI may not (``#/definitions/TopLevel<Spec>``, as schema generators write
them) are read as their percent-encoded form: a lint warning, not a refusal, and the same meaning everywhere."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from subhive._rs_validator import runtime_validator
from subhive.codegen.bundle import bundle
from subhive.compat.files import diff_files
from subhive.contract import lint_paths, load_schema_file


def _schema(minimum: int) -> dict[str, Any]:
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "definitions": {
            "Spec<Unit>": {"type": "integer", "minimum": minimum},
            "Top<Spec<Unit>>": {"type": "object", "properties": {"n": {"$ref": "#/definitions/Spec<Unit>"}}},
        },
        "$ref": "#/definitions/Top<Spec<Unit>>",
    }


def test_lint_warns_and_validation_follows_the_reference(tmp_path: Path) -> None:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(_schema(1), indent=2))
    result = lint_paths([path])
    assert result.ok, result.problems
    [warning] = [w for w in result.warnings if w.code == "schema.ref_not_uri"]
    assert warning.location.pointer == "/$ref"
    assert "(and 1 more references)" in warning.message
    assert "'#/definitions/Top%3CSpec%3CUnit%3E%3E'" in (warning.hint or "")
    validator = runtime_validator(bundle(load_schema_file(path)))
    assert validator.is_valid({"n": 1})
    assert not validator.is_valid({"n": 0})  # Spec<Unit>'s minimum, reached through Top<Spec<Unit>>


def test_diff_reads_the_same_references(tmp_path: Path) -> None:
    (tmp_path / "v1.json").write_text(json.dumps(_schema(1)))
    (tmp_path / "v2.json").write_text(json.dumps(_schema(3)))
    same = diff_files(tmp_path / "v1.json", tmp_path / "v1.json")
    assert (same.backward, same.forward) == (True, True)
    report = diff_files(tmp_path / "v1.json", tmp_path / "v2.json")
    assert (report.backward, report.forward) == (False, True)
    assert [c.code for c in report.changes] == ["minimum.tightened"]
