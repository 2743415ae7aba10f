"""The JSON Schema compatibility engine against a corpus of pairs whose verdicts come from the rules.

Two kinds of tests per case:

* ``test_corpus_case_is_right``: the corpus proves itself with real instances (jsonschema-rs, draft 2020-12,
  formats asserted): every ``False`` has a witness (or a rule that says "unprovable"), and no instance in a
  pool drawn from the schemas' edges contradicts a ``True``.
* ``test_engine_verdict``: the engine agrees. Saying ``True`` where the corpus says ``False`` is unsound
  (the worst bug); saying ``False`` where the corpus says ``True`` is a completeness gap, tolerated only for
  cases marked ``sound_only``.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import jsonschema
import pytest

from tests.compat.jsonschema_corpus import CASES, NO_WITNESS, Case, instance_pool, make_validator

_GROUPS = {"neutral", "boolean", "type", "enum", "numeric", "string", "array", "object", "compose", "ref", "realistic"}


def test_corpus_is_large_unique_and_covers_every_group() -> None:
    ids = Counter(case.id for case in CASES)
    assert len(CASES) >= 150
    assert [i for i, n in ids.items() if n > 1] == []
    assert {case.group for case in CASES} == _GROUPS
    # sound_only is an escape hatch for completeness gaps; it must stay rare.
    assert sum(case.sound_only for case in CASES) <= len(CASES) // 10


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_corpus_case_is_right(case: Case) -> None:
    for schema in (case.old, case.new):
        jsonschema.Draft202012Validator.check_schema(schema)
    old = make_validator(case.old, case.remote)
    new = make_validator(case.new, case.remote)

    for direction, expected, witness, (src, dst) in (
        ("backward", case.backward, case.witness_backward, (old, new)),
        ("forward", case.forward, case.witness_forward, (new, old)),
    ):
        if expected:
            assert witness is NO_WITNESS, f"{direction} is True, so it cannot have a witness"
            assert direction not in case.unprovable
            contradictions = [x for x in instance_pool(case) if src(x) and not dst(x)]
            assert contradictions == [], f"{direction}: instances contradict the expected True"
        elif witness is not NO_WITNESS:
            assert src(witness), f"{direction} witness {witness!r} must be valid under the source side"
            assert not dst(witness), f"{direction} witness {witness!r} must be invalid under the target side"
        else:
            assert case.unprovable.get(direction), f"{direction} is False without witness or reason"
    assert set(case.unprovable) <= {"backward", "forward"}
    assert not case.sound_only or case.backward or case.forward, "sound_only needs a True direction"


def _engine() -> tuple[Any, dict[str, str]]:
    from subhive.compat.jsonschema import CODES, diff_schemas

    return diff_schemas, CODES


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_engine_verdict(case: Case) -> None:
    diff_schemas, codes = _engine()
    report = diff_schemas(case.old, case.new)
    emitted = [change.code for change in report.changes]
    detail = [change.to_dict() for change in report.changes]

    assert [c for c in emitted if c not in codes] == [], "every emitted code must be documented in CODES"
    # Unsound answers first: they are the worst bug, whatever else is wrong.
    for direction, expected, claimed in (
        ("backward", case.backward, report.backward),
        ("forward", case.forward, report.forward),
    ):
        if not expected and direction not in case.unprovable:
            assert claimed is False, f"UNSOUND {direction} (a witness refutes it): {case.why}; changes={detail}"
        elif not expected:
            # No instance refutes this direction; the rules say the engine must not claim it all the same.
            assert claimed is False, f"{direction}: the rules call this unprovable: {case.unprovable[direction]}"
    if not case.sound_only:
        assert (report.backward, report.forward) == (case.backward, case.forward), (
            f"incomplete: {case.why}; changes={detail}"
        )
    assert set(case.codes_include) <= set(emitted), detail
    if case.paths_under:
        # Changes inside a shared definition are reported once, where the definition is, not once per use.
        assert report.changes, detail
        assert all(c.path.startswith(case.paths_under) for c in report.changes), detail
    if case.backward and case.forward and not case.sound_only:
        # A neutral diff may still list annotation changes, but each must be neutral in both directions.
        assert all(change.backward and change.forward for change in report.changes), detail
    # Python's == says True == 1; JSON Schema does not, so compare the documents as JSON text.
    if json.dumps(case.old, sort_keys=True) == json.dumps(case.new, sort_keys=True):
        assert report.changes == (), "identical schemas must give zero changes"
