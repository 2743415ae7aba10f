"""Agreement with buf's breaking-change test data: every case of a buf checkout, judged like the vendored sample.

    git clone https://github.com/bufbuild/buf ~/buf
    .venv/bin/python benchmarks/bench_buf_agreement.py --buf ~/buf           # a table, then each miss
    .venv/bin/python benchmarks/bench_buf_agreement.py --buf ~/buf --json    # one JSON object

The checkout is not vendored (tests/compat/buf_breaking/ holds a sample of 18 cases). Read from it:
``private/bufpkg/bufcheck/breaking_test.go`` (each ``testBreaking`` call: a case directory and the annotations
buf expects), ``.../bufcheckserver/bufcheckserver.go`` (the categories of each rule in buf.yaml v2) and
``.../bufcheckserverbuild/bufcheckserverbuild.go`` (rule ids). Each annotation is judged under the most
lenient category that holds its rule, as ``tests/compat/buf_agreement.py`` says. Issue #16 targets >= 97%.
Cases whose files subhive refuses to load (the protobuf runtime rejects them) are counted apart with the
error; annotations of rules outside buf's four categories are skipped and counted.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from the repo root without installing

from benchmarks._common import parser, render
from subhive.errors import SubhiveError
from tests.compat.buf_agreement import Annotation, misses

_CATEGORIES = ("WIRE", "WIRE_JSON", "PACKAGE", "FILE")  # most lenient first
_CASE = re.compile(r'testBreaking\(\s*t,\s*"([^"]+)",(.*?)\n\t\)', re.S)
_AT = re.compile(r'NewFileAnnotation\(t, "([^"]+)", (\d+), \d+, \d+, \d+, "(\w+)"\)')
_WHOLE_FILE = re.compile(r'NewFileAnnotationNoLocation\(t, "([^"]+)", "(\w+)"\)')
_ID = re.compile(r'Breaking(\w+)RuleSpecBuilder = &bufcheckserverutil\.RuleSpecBuilder\{\s*ID:\s*"(\w+)"')
_BUILD = re.compile(r"Breaking(\w+)RuleSpecBuilder\.Build\((?:true|false), \[\]string\{([^}]*)\}\)")


def categories(bufcheck: Path) -> dict[str, str]:
    """Rule id -> the most lenient of buf's four categories holding it (buf.yaml v2, the last spec)."""
    build = (bufcheck / "bufcheckserver/internal/bufcheckserverbuild/bufcheckserverbuild.go").read_text()
    ids = dict(_ID.findall(build))
    held: dict[str, list[str]] = {}
    for builder, listed in _BUILD.findall((bufcheck / "bufcheckserver/bufcheckserver.go").read_text()):
        if builder in ids:  # later specs (v1, v2) override earlier ones
            held[ids[builder]] = [c.strip().strip('"') for c in listed.split(",")]
    return {
        rule: next(c for c in _CATEGORIES if c in cats) for rule, cats in held.items() if set(cats) & set(_CATEGORIES)
    }


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--buf", type=Path, required=True, help="a checkout of github.com/bufbuild/buf")
    args = p.parse_args()
    bufcheck = args.buf / "private/bufpkg/bufcheck"
    category = categories(bufcheck)
    judged = flagged = 0
    missed: list[str] = []
    refused: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    for case, body in _CASE.findall((bufcheck / "breaking_test.go").read_text()):
        found = [(f, int(n), r) for f, n, r in _AT.findall(body)] + [(f, None, r) for f, r in _WHOLE_FILE.findall(body)]
        annotations = []
        for file, line, rule in found:
            if rule in category:
                annotations.append(Annotation(file, line, rule, category[rule]))
            else:
                skipped[rule] += 1
        if not annotations:
            continue
        data = bufcheck / "testdata/breaking"
        try:
            missing = misses(data / "previous" / case, data / "current" / case, annotations)
        except SubhiveError as exc:
            refused[f"{case}: {str(exc).splitlines()[0][:160]}"] += len(annotations)
            continue
        judged += len(annotations)
        flagged += len(annotations) - len(missing)
        missed += [f"{case} {a.file}:{a.line} {a.rule} ({a.category})" for a in missing]
    figures = {
        "annotations_judged": judged,
        "annotations_flagged": flagged,
        "agreement": round(flagged / judged, 4) if judged else 0.0,
        "annotations_in_refused_cases": sum(refused.values()),
        "annotations_skipped_no_category": sum(skipped.values()),
    }
    if args.json:
        print(render("buf breaking agreement", {**figures, "refused": dict(refused), "missed": missed}, as_json=True))
        return
    print(render("buf breaking agreement", figures, as_json=False))
    for shown in [*(f"refused  {why} ({n})" for why, n in refused.items()), *(f"missed   {m}" for m in missed)]:
        print(shown)


if __name__ == "__main__":
    main()
