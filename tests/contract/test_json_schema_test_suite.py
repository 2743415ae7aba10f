"""The official JSON-Schema-Test-Suite of every dialect subhive reads, through its translation and validator.

Pass figures (``python -m tests.contract.json_schema_test_suite``) are in docs/contracts.md#dialects; every test
not passed is listed with its reason in tests/data/json-schema-test-suite/known.json.
"""

from __future__ import annotations

import json

import pytest

from tests.contract.json_schema_test_suite import DATA, SUITES, run

KNOWN: dict[str, dict[str, str]] = json.loads((DATA / "known.json").read_text())


@pytest.mark.parametrize("suite", list(SUITES))
def test_every_test_of_the_suite_passes_or_is_listed_with_its_reason(suite: str) -> None:
    outcomes = list(run(suite))
    failed = {o.id for o in outcomes if not o.passed}
    known = KNOWN.get(suite, {})
    assert sorted(failed - set(known)) == [], "failing and not listed in known.json"
    assert sorted(set(known) - failed) == [], "listed in known.json but passing now: remove them"
    assert all(reason.strip() for reason in known.values())
    # The suite is really there and really run: thousands of tests, nearly all passing.
    required = [o for o in outcomes if o.part == "required"]
    assert len(required) > 600
    assert sum(o.passed for o in required) / len(required) > 0.98
