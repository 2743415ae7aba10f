"""The official JSON-Schema-Test-Suite, vendored under tests/data/json-schema-test-suite (see its README), run
through subhive's reading of schemas: each schema translated to draft 2020-12 (subhive/_dialects.py), then
validated by jsonschema-rs as the bus validates (formats asserted, decision 0009; patterns by the linear
engine, decision 0137: ``runtime_validator``).

``python -m tests.contract.json_schema_test_suite`` prints the pass figures per dialect.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema_rs

from subhive._dialects import DRAFT4, DRAFT6, DRAFT7, DRAFT2019, DRAFT2020, translate
from subhive._metaschemas import resources
from subhive._rs_validator import runtime_validator

DATA = Path(__file__).parent.parent / "data" / "json-schema-test-suite"
#: The suite's directory for each dialect.
SUITES = {"draft4": DRAFT4, "draft6": DRAFT6, "draft7": DRAFT7, "draft2019-09": DRAFT2019, "draft2020-12": DRAFT2020}
#: Where the suite's remote references point; served from the vendored remotes/ (subhive never fetches).
REMOTE = "http://localhost:1234/"


@dataclass(frozen=True)
class Outcome:
    """One test of the suite: its id (``file::case::test``), its part (``required``, ``optional`` or ``format``,
    the optional format tests), and the verdict expected and got (None: the schema did not compile, ``error``
    says why)."""

    id: str
    part: str
    expected: bool
    got: bool | None
    error: str | None

    @property
    def passed(self) -> bool:
        return self.got == self.expected


@cache
def _load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(gzip.decompress((DATA / f"{name}.json.gz").read_bytes()))
    return data


def _retriever(dialect: str) -> Any:
    def retrieve(uri: str) -> Any:
        if uri.startswith(REMOTE):
            remote = _load("remotes").get(uri[len(REMOTE) :].split("#", maxsplit=1)[0])
            if remote is not None:
                return translate(remote, dialect).schema
        raise ValueError(f"{uri} is not part of the suite (subhive never fetches schemas)")

    return retrieve


@cache
def _registry(dialect: str) -> jsonschema_rs.Registry:
    # The bundled meta-schemas (subhive/_metaschemas.py), each in its own dialect's meaning, as subhive resolves them.
    # So are the suite's custom meta-schemas: jsonschema-rs asks no retriever for a $schema it lacks.
    metas = [(REMOTE + name, d) for name, d in _load("remotes").items() if isinstance(d, dict) and "$vocabulary" in d]
    return jsonschema_rs.Registry([*resources(), *metas], retriever=_retriever(dialect))


def run(suite: str) -> Iterator[Outcome]:
    """Every test of one dialect's suite, run through the translation and jsonschema-rs."""
    dialect = SUITES[suite]
    for file, cases in sorted(_load(suite).items()):
        part = "format" if file.startswith("optional/format/") else "optional" if "/" in file else "required"
        for case in cases:
            try:
                schema = translate(case["schema"], dialect).schema
                validator = runtime_validator(
                    schema, validate_formats=True, registry=_registry(dialect), retriever=_retriever(dialect)
                )
                error = None
            except Exception as exc:  # any failure to compile is this case's outcome, reported with its reason
                validator, error = None, str(exc).splitlines()[0]
            for test in case["tests"]:
                got = validator.is_valid(test["data"]) if validator is not None else None
                yield Outcome(f"{file}::{case['description']}::{test['description']}", part, test["valid"], got, error)


def figures() -> dict[str, dict[str, tuple[int, int]]]:
    """``{suite: {"required": (passed, total), "optional": ..., "format": ...}}``."""
    out: dict[str, dict[str, tuple[int, int]]] = {}
    for suite in SUITES:
        counts = {"required": [0, 0], "optional": [0, 0], "format": [0, 0]}
        for outcome in run(suite):
            count = counts[outcome.part]
            count[0] += outcome.passed
            count[1] += 1
        out[suite] = {k: (v[0], v[1]) for k, v in counts.items()}
    return out


if __name__ == "__main__":
    for suite, parts in figures().items():
        print(suite, "  ".join(f"{k} {p}/{t}" for k, (p, t) in parts.items()))
    for suite in SUITES:
        for outcome in run(suite):
            if not outcome.passed:
                print(f"  {suite}: {outcome.id}  expected {outcome.expected} got {outcome.got} {outcome.error or ''}")
