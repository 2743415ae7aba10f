"""Agreement of the JSON Schema compatibility engine with two public corpora, per direction.

    mkdir -p ~/corpora && cd ~/corpora
    git clone --depth 1 https://github.com/ostrowr/jsoncompat
    git clone --depth 1 --filter=blob:none --sparse https://github.com/confluentinc/schema-registry
    git -C schema-registry sparse-checkout set json-schema-provider/src/test/resources
    .venv/bin/python benchmarks/bench_compat_corpora.py ~/corpora            # a table, then each disagreement
    .venv/bin/python benchmarks/bench_compat_corpora.py ~/corpora --json     # one JSON object

Neither corpus is vendored: the directory holds the two checkouts (either may be missing; it is then skipped).

* **jsoncompat** (``tests/fixtures/backcompat/*/``): ``old.json``, ``new.json`` and ``expect.json`` with a
  verdict per role. ``deserializer`` (the new reader accepts what old writers emitted) is subhive's backward,
  ``serializer`` (old readers accept what the new writer emits) its forward. ``examples.json`` lists instances
  valid under one side only: one that refutes the fixture's own ``true`` marks the fixture wrong there.
* **Confluent Schema Registry** (``json-schema-provider/src/test/resources/diff-*.json``): cases with
  ``original_schema``, ``update_schema`` and ``compatible``, Confluent's backward check. The files are read as
  ``org.json`` reads them (trailing commas allowed); a case without ``$schema`` in the files not named
  ``2020-12`` is draft-07, Confluent's default.

A disagreement is **unsound** when the engine says compatible where the fixture says not (the worst bug),
**cautious** the reverse, **refused** when the engine raised an error. Verdicts where the fixture itself is
not the set-semantics answer are counted apart with the reason and left out of ``agreement``: Confluent's
policy differences (``_POLICY``), jsoncompat fixtures that their own ``examples.json`` refutes, and those
listed in ``_FIXTURE_APART`` (jsoncompat answering ``false`` for want of support; ``format``, which subhive
asserts). Each listed entry is checked here: its witness must refute the fixture (jsonschema-rs, formats
asserted as subhive validates), or the fixture's own examples must not refute the engine.
Issue #16 targets >= 95% per corpus and direction, and 0 unsound.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from the repo root without installing

import jsonschema_rs

from benchmarks._common import parser, render
from subhive.compat.jsonschema import diff_schemas
from subhive.errors import SubhiveError

_DRAFT_07 = "http://json-schema.org/draft-07/schema#"
_NO_WITNESS: Any = object()

#: Confluent verdicts that differ from set semantics by design: (file, description) -> (reason, witness).
#: A witness is an instance valid under the original schema and invalid under the update.
_POLICY: dict[tuple[str, str], tuple[str, Any]] = {
    ("diff-schema-examples.json", "Detect required array to be changed"): (
        "Confluent judges required only for names both versions declare in properties; bar is required "
        "now, so old data without it is rejected",
        {"foo": "x"},
    ),
    ("diff-schema-examples-2020-12.json", "Detect required array to be changed"): (
        "Confluent judges required only for names both versions declare in properties; bar is required "
        "now, so old data without it is rejected",
        {"foo": "x"},
    ),
    ("diff-schema-examples.json", "Detect removed boolean additional items"): (
        "draft-07 ignores additionalItems unless items is an array; Confluent compares it as written",
        _NO_WITNESS,
    ),
    ("diff-schema-examples.json", "Detect changes to additional items schema"): (
        "draft-07 ignores additionalItems unless items is an array; Confluent compares it as written",
        _NO_WITNESS,
    ),
}

#: jsoncompat verdicts that are not subhive's set-semantics answer: (case, direction) -> (reason, witness).
#: A witness refutes the fixture's true (valid under the source side, invalid under the target).
_FIXTURE_APART: dict[tuple[str, str], tuple[str, Any]] = {
    ("unsupported_subset_pattern_properties_additional_fallback", "forward"): (
        "fixture cautious: NEW is closed to every name but U+0003 (the ECMA-262 pattern ^\\cC$), so its objects "
        "never have x and OLD accepts each of them; jsoncompat answers false as it does not support \\c",
        _NO_WITNESS,
    ),
    ("format_annotation_changed", "backward"): (
        "policy: subhive's runtime asserts format (jsonschema-rs, validate_formats=True); jsoncompat reads it "
        "as an annotation",
        "a@example.com",
    ),
    ("format_annotation_changed", "forward"): (
        "policy: subhive's runtime asserts format (jsonschema-rs, validate_formats=True); jsoncompat reads it "
        "as an annotation",
        "123e4567-e89b-12d3-a456-426614174000",
    ),
}


@dataclass
class _Tally:
    """One corpus and direction: how each verdict compared with the fixture."""

    cases: int = 0
    agree: int = 0
    unsound: list[str] = field(default_factory=list)
    cautious: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    apart: list[str] = field(default_factory=list)  # the fixture is not the set-semantics answer

    def figures(self) -> dict[str, Any]:
        judged = self.cases - len(self.apart)
        return {
            "cases": self.cases,
            "agree": self.agree,
            "agreement": round(self.agree / judged, 4) if judged else 0.0,
            "agreement_raw": round(self.agree / self.cases, 4) if self.cases else 0.0,
            "unsound": len(self.unsound),
            "cautious": len(self.cautious),
            "refused": len(self.refused),
            "counted_apart": len(self.apart),
        }


def _valid(schema: Any, instance: Any) -> bool:
    """Valid the way subhive validates at run time (formats asserted)."""
    return bool(jsonschema_rs.validator_for(schema, validate_formats=True).is_valid(instance))


def _refutes(witness: Any, source: Any, target: Any) -> bool:
    return _valid(source, witness) and not _valid(target, witness)


def _verdicts(old: Any, new: Any) -> tuple[bool, bool] | str:
    try:
        report = diff_schemas(old, new)
    except SubhiveError as exc:
        return str(exc).splitlines()[0][:160]
    return report.backward, report.forward


def _judge(tally: _Tally, name: str, expected: bool, got: bool | str, apart: str | None) -> None:
    tally.cases += 1
    if apart is not None:
        tally.apart.append(f"{name}: {apart}")
    elif isinstance(got, str):
        tally.refused.append(f"{name}: {got}")
    elif got == expected:
        tally.agree += 1
    elif got:
        tally.unsound.append(name)
    else:
        tally.cautious.append(name)


def _jsoncompat(root: Path) -> dict[str, _Tally]:
    tallies = {"backward": _Tally(), "forward": _Tally()}
    for case in sorted(p for p in root.iterdir() if (p / "expect.json").is_file()):
        old, new = (json.loads((case / f"{side}.json").read_text(encoding="utf-8")) for side in ("old", "new"))
        expect = json.loads((case / "expect.json").read_text(encoding="utf-8"))
        examples_path = case / "examples.json"
        examples = json.loads(examples_path.read_text(encoding="utf-8")) if examples_path.is_file() else {}
        got = _verdicts(old, new)
        for index, (direction, role, witnesses, (src, dst)) in enumerate(
            (
                ("backward", "deserializer", examples.get("old_only", []), (old, new)),
                ("forward", "serializer", examples.get("new_only", []), (new, old)),
            )
        ):
            expected = bool(expect[role])
            apart = None
            listed = _FIXTURE_APART.get((case.name, direction))
            refuting = [w for w in witnesses if _refutes(w, src, dst)]
            if expected and refuting:
                apart = (
                    f"fixture refuted: it says {role} true, but its own example {json.dumps(refuting[0])} refutes it"
                )
            elif listed is not None and not (refuting and not expected):
                # A listed entry must still hold: its witness refutes the fixture's true, and a fixture false
                # listed as cautious has no counterexample among its own examples.
                reason, witness = listed
                if witness is _NO_WITNESS or (expected and _refutes(witness, src, dst)):
                    apart = reason
            _judge(
                tallies[direction],
                case.name,
                expected,
                got if isinstance(got, str) else got[index],
                apart,
            )
    return tallies


def _lenient_json(text: str) -> Any:
    """JSON with trailing commas before ``}``/``]`` (as org.json accepts), outside strings."""
    out: list[str] = []
    in_string = escaped = False
    for i, char in enumerate(text):
        if in_string:
            in_string = escaped or char != '"'
            escaped = not escaped and char == "\\"
        elif char == '"':
            in_string = True
        elif char == "," and text[i + 1 :].lstrip()[:1] in ("}", "]"):
            continue
        out.append(char)
    return json.loads("".join(out))


def _confluent_cases(root: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    for path in sorted(root.glob("diff-*.json")):
        for case in _lenient_json(path.read_text(encoding="utf-8")):
            if "2020-12" not in path.name:
                for key in ("original_schema", "update_schema"):
                    if isinstance(case[key], dict) and "$schema" not in case[key]:
                        case[key] = {"$schema": _DRAFT_07, **case[key]}
            yield path.name, case


def _confluent(root: Path) -> dict[str, _Tally]:
    tally = _Tally()
    for file, case in _confluent_cases(root):
        old, new = case["original_schema"], case["update_schema"]
        name = f"{file}: {case['description']}"
        got = _verdicts(old, new)
        apart = None
        policy = _POLICY.get((file, case["description"]))
        if policy is not None:
            reason, witness = policy
            # A listed difference must still be one: the engine agrees with set semantics there, and the
            # witness (when there is one) refutes Confluent's verdict.
            if witness is _NO_WITNESS or _refutes(witness, old, new):
                apart = f"policy: {reason}"
        _judge(tally, name, bool(case["compatible"]), got if isinstance(got, str) else got[0], apart)
    return {"backward": tally}


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("corpora", type=Path, help="the directory holding the jsoncompat and schema-registry checkouts")
    args = p.parse_args()
    sources = {
        "jsoncompat": (args.corpora / "jsoncompat" / "tests" / "fixtures" / "backcompat", _jsoncompat),
        "confluent": (
            args.corpora / "schema-registry" / "json-schema-provider" / "src" / "test" / "resources",
            _confluent,
        ),
    }
    results: dict[str, dict[str, _Tally]] = {}
    skipped = []
    for corpus, (root, run) in sources.items():
        if root.is_dir():
            results[corpus] = run(root)
        else:
            skipped.append(f"{corpus}: {root} not found")
    figures = {
        f"{corpus} {direction}": tally.figures()
        for corpus, tallies in results.items()
        for direction, tally in tallies.items()
    }
    details = {
        f"{corpus} {direction}": {
            kind: getattr(tally, kind) for kind in ("unsound", "cautious", "refused", "apart") if getattr(tally, kind)
        }
        for corpus, tallies in results.items()
        for direction, tally in tallies.items()
    }
    if args.json:
        print(
            render(
                "JSON Schema compatibility corpora",
                {**figures, "disagreements": details, "skipped": skipped},
                as_json=True,
            )
        )
        return
    for title, numbers in figures.items():
        print(render(title, numbers, as_json=False))
        for kind, names in details[title].items():
            for shown in names:
                print(f"  {kind:9} {shown}")
        print()
    for shown in skipped:
        print(f"skipped  {shown}")


if __name__ == "__main__":
    main()
