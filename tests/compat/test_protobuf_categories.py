"""buf's rule categories: which protobuf changes count as breaking under FILE, PACKAGE, RUNTIME, WIRE_JSON, WIRE.

A table of real changes with the verdict each category must give, the same rules checked to be monotone over
the whole corpus, and the workspace's category deciding ``subhive contract check``.
"""

from __future__ import annotations

import tempfile
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from subhive.compat.protobuf import RULES, BreakingRules, diff_protos
from subhive.errors import UsageError
from tests.compat.test_protobuf_corpus import CASES, CORPUS
from tests.kit import cli

FILE, PACKAGE, RUNTIME, WIRE_JSON, WIRE = (
    BreakingRules.FILE,
    BreakingRules.PACKAGE,
    BreakingRules.RUNTIME,
    BreakingRules.WIRE_JSON,
    BreakingRules.WIRE,
)
STRICTEST_FIRST = (FILE, PACKAGE, RUNTIME, WIRE_JSON, WIRE)
HEAD = 'syntax = "proto3";\npackage shop.v1;\n'
BOTH, NEITHER, BACKWARD = (True, True), (False, False), (True, False)
Files = dict[str, str]


def verdicts(both: tuple[bool, bool], **by_category: tuple[bool, bool]) -> dict[BreakingRules, tuple[bool, bool]]:
    """``both`` for every category not named."""
    return {c: by_category.get(c.value, both) for c in BreakingRules}


#: name -> (old files, new files, verdict per category); "m.proto" is the file compared.
TABLE: dict[str, tuple[Files, Files, dict[BreakingRules, tuple[bool, bool]]]] = {
    "field renamed: JSON keys change, bytes do not": (
        {"m.proto": HEAD + "message M { int32 count = 1; }\n"},
        {"m.proto": HEAD + "message M { int32 total = 1; }\n"},
        verdicts(NEITHER, WIRE=BOTH),
    ),
    "message moved to another file of the package": (
        {"m.proto": HEAD + "message M { int32 a = 1; }\nmessage N { string s = 1; }\n"},
        {
            "m.proto": HEAD + 'import "n.proto";\nmessage M { int32 a = 1; }\n',
            "n.proto": HEAD + "message N { string s = 1; }\n",
        },
        verdicts(BOTH, FILE=NEITHER),
    ),
    "RPC removed": (
        {"m.proto": HEAD + "message M {}\nservice S { rpc A(M) returns (M); rpc B(M) returns (M); }\n"},
        {"m.proto": HEAD + "message M {}\nservice S { rpc A(M) returns (M); }\n"},
        verdicts(NEITHER, WIRE=BOTH, WIRE_JSON=BOTH),
    ),
    "unused message removed": (
        {"m.proto": HEAD + "message M { int32 a = 1; }\nmessage Unused { int32 b = 1; }\n"},
        {"m.proto": HEAD + "message M { int32 a = 1; }\n"},
        verdicts(NEITHER, WIRE=BOTH, WIRE_JSON=BOTH),
    ),
    "int32 widened to int64": (
        {"m.proto": HEAD + "message M { int32 a = 1; }\n"},
        {"m.proto": HEAD + "message M { int64 a = 1; }\n"},
        verdicts(BACKWARD, PACKAGE=NEITHER, FILE=NEITHER),
    ),
    # Binary: every string is valid bytes, but bytes read as a string may be rejected as invalid UTF-8.
    "string became bytes: ProtoJSON differs, binary only one way": (
        {"m.proto": HEAD + "message M { string a = 1; }\n"},
        {"m.proto": HEAD + "message M { bytes a = 1; }\n"},
        verdicts(NEITHER, WIRE=BACKWARD),
    ),
    "int32 became uint32: values reinterpreted": (
        {"m.proto": HEAD + "message M { int32 a = 1; }\n"},
        {"m.proto": HEAD + "message M { uint32 a = 1; }\n"},
        verdicts(NEITHER),
    ),
    "value added to an open enum": (
        {"m.proto": HEAD + "enum E { E_UNSPECIFIED = 0; }\n"},
        {"m.proto": HEAD + "enum E { E_UNSPECIFIED = 0; E_A = 1; }\n"},
        verdicts(BACKWARD, WIRE=BOTH),
    ),
    "enum value renamed": (
        {"m.proto": HEAD + "enum E { E_UNSPECIFIED = 0; E_A = 1; }\n"},
        {"m.proto": HEAD + "enum E { E_UNSPECIFIED = 0; E_B = 1; }\n"},
        verdicts(NEITHER, WIRE=BOTH),
    ),
    "go_package changed": (
        {"m.proto": HEAD + 'option go_package = "example.com/shop/v1";\nmessage M {}\n'},
        {"m.proto": HEAD + 'option go_package = "example.com/shop/v1;shoppb";\nmessage M {}\n'},
        verdicts(BOTH, PACKAGE=NEITHER, FILE=NEITHER),
    ),
    "field removed, number and name reserved": (
        {"m.proto": HEAD + "message M { int32 a = 1; int32 b = 2; }\n"},
        {"m.proto": HEAD + 'message M { reserved 2; reserved "b"; int32 a = 1; }\n'},
        verdicts(BOTH, PACKAGE=NEITHER, FILE=NEITHER),
    ),
    "field removed, only its number reserved": (
        {"m.proto": HEAD + "message M { int32 a = 1; int32 b = 2; }\n"},
        {"m.proto": HEAD + "message M { reserved 2; int32 a = 1; }\n"},
        verdicts(NEITHER, WIRE=BOTH),
    ),
    "field removed, nothing reserved": (
        {"m.proto": HEAD + "message M { int32 a = 1; int32 b = 2; }\n"},
        {"m.proto": HEAD + "message M { int32 a = 1; }\n"},
        verdicts(NEITHER),
    ),
    "package changed": (
        {"m.proto": HEAD + "message M { int32 a = 1; }\n"},
        {"m.proto": HEAD.replace("shop.v1", "shop.v2") + "message M { int32 a = 1; }\n"},
        verdicts(NEITHER),
    ),
    "request type replaced by a structurally equal one": (
        {"m.proto": HEAD + "message M { int32 a = 1; }\nservice S { rpc A(M) returns (M); }\n"},
        {
            "m.proto": HEAD
            + "message M { int32 a = 1; }\nmessage M2 { int32 a = 1; }\nservice S { rpc A(M2) returns (M); }\n"
        },
        verdicts(BOTH, PACKAGE=NEITHER, FILE=NEITHER),
    ),
    "jstype changed: JavaScript code only": (
        {"m.proto": HEAD + "message M { int64 a = 1; }\n"},
        {"m.proto": HEAD + "message M { int64 a = 1 [jstype = JS_STRING]; }\n"},
        verdicts(BOTH, PACKAGE=NEITHER, FILE=NEITHER),
    ),
    "idempotency_level changed: gRPC ignores it": (
        {"m.proto": HEAD + "message M {}\nservice S { rpc A(M) returns (M); }\n"},
        {
            "m.proto": HEAD
            + "message M {}\nservice S { rpc A(M) returns (M) { option idempotency_level = NO_SIDE_EFFECTS; } }\n"
        },
        verdicts(BOTH, PACKAGE=NEITHER, FILE=NEITHER),
    ),
    "an imported file of the same name changed package": (
        {
            "m.proto": HEAD + 'import "n.proto";\nmessage M { shop.v1.N n = 1; }\n',
            "n.proto": HEAD + "message N { int32 a = 1; }\n",
        },
        {
            "m.proto": HEAD + 'import "n.proto";\nmessage M { shop.v2.N n = 1; }\n',
            "n.proto": HEAD.replace("shop.v1", "shop.v2") + "message N { int32 a = 1; }\n",
        },
        verdicts(NEITHER),
    ),
    "a field added": (
        {"m.proto": HEAD + "message M { int32 a = 1; }\n"},
        {"m.proto": HEAD + "message M { int32 a = 1; string b = 2; }\n"},
        verdicts(BOTH),
    ),
}


def write_side(directory: Path, files: Files) -> Path:
    directory.mkdir(parents=True)
    for name, text in files.items():
        (directory / name).write_text(text)
    return directory / "m.proto"


@pytest.mark.parametrize("case", sorted(TABLE))
def test_each_category_gives_its_verdict(tmp_path: Path, case: str) -> None:
    old_files, new_files, expected = TABLE[case]
    old, new = write_side(tmp_path / "old", old_files), write_side(tmp_path / "new", new_files)
    found = {}
    for category in BreakingRules:
        report = diff_protos(old, new, rules=category)
        found[category] = (report.backward, report.forward)
    assert found == expected, case
    assert diff_protos(old, new).changes == diff_protos(old, new, rules=RUNTIME).changes  # the default


def test_a_relaxed_or_tightened_change_says_why(tmp_path: Path) -> None:
    old_files, new_files, _ = TABLE["field renamed: JSON keys change, bytes do not"]
    old, new = write_side(tmp_path / "old", old_files), write_side(tmp_path / "new", new_files)
    (change,) = diff_protos(old, new, rules="WIRE").changes
    assert (change.code, change.backward, change.forward) == ("field.renamed", True, True)
    assert change.message.endswith("(WIRE judges the binary encoding only)")
    old_files, new_files, _ = TABLE["int32 widened to int64"]
    old, new = write_side(tmp_path / "old2", old_files), write_side(tmp_path / "new2", new_files)
    (change,) = diff_protos(old, new, rules="PACKAGE").changes
    assert change.message.endswith("(breaking under PACKAGE: the package's generated code changes)")


def test_an_unknown_category_is_a_usage_error(tmp_path: Path) -> None:
    path = write_side(tmp_path / "a", {"m.proto": HEAD})
    with pytest.raises(UsageError) as caught:
        diff_protos(path, path, rules="SOURCE")
    assert caught.value.code == "usage.breaking_unknown"
    assert "WIRE_JSON" in (caught.value.hint or "")


def test_every_code_answers_to_a_category_rule() -> None:
    from subhive.compat.protobuf import CODES

    assert RULES.keys() == CODES.keys()
    for code, rule in RULES.items():
        # Only removals of names a running peer looks up are left to RUNTIME; nothing is ever looser than WIRE.
        assert rule.scope != "runtime" or code.endswith(".removed"), code


@pytest.mark.parametrize("case", CASES)
def test_categories_are_ordered_from_strictest_to_most_lenient(case: str) -> None:
    """On every corpus pair: a direction kept under a category is kept under every more lenient one, and the
    categories change verdicts only, never which changes are found."""
    old, new = CORPUS / case / "old.proto", CORPUS / case / "new.proto"
    reports = [diff_protos(old, new, rules=c) for c in STRICTEST_FIRST]
    for stricter, looser in pairwise(reports):
        assert stricter.backward <= looser.backward, case
        assert stricter.forward <= looser.forward, case
        assert [(c.code, c.path) for c in stricter.changes] == [(c.code, c.path) for c in looser.changes]
        for a, b in zip(stricter.changes, looser.changes, strict=True):
            assert (a.backward <= b.backward, a.forward <= b.forward) == (True, True), (case, a.code)


def test_the_workspace_category_decides_contract_check(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    root = tmp_path / "shop"
    root.mkdir()
    service = "service S { rpc Get(M) returns (M); }\n"
    for version, field in (("1.0.0", "count"), ("1.0.1", "total")):
        directory = root / "contracts/things" / version
        directory.mkdir(parents=True)
        (directory / "m.proto").write_text(HEAD + f"message M {{ int32 {field} = 1; }}\n" + service)
        (directory / "contract.yaml").write_text(
            f"contract: things\nversion: {version}\nprovider: db\ndescription: Things.\n"
            "grpc:\n  proto: m.proto\n  service: shop.v1.S\n"
        )
    new, old = root / "contracts/things/1.0.1", root / "contracts/things/1.0.0"
    hive = '[workspace]\nname = "shop"\nformat = 1\n'
    (root / "hive.toml").write_text(hive)
    code, _, err = cli(capsys, "contract", "check", str(new), "--against", str(old))
    assert code == 1
    assert "semver.bump_too_small" in err
    (root / "hive.toml").write_text(hive + '\n[protobuf]\nbreaking = "WIRE"\n')
    code, out, err = cli(capsys, "contract", "check", str(new), "--against", str(old))
    assert code == 0, err
    assert "field.renamed" in out


# -- the ordering holds for generated changes too ---------------------------------------------------------------

SCALARS = ("int32", "int64", "uint32", "sint32", "bool", "string", "bytes", "double", "E")
ENUM = "enum E { E_UNSPECIFIED = 0; E_A = 1; E_B = 2; }\n"


@st.composite
def message_pairs(draw: st.DrawFn) -> tuple[str, str]:
    """An old and a new version of one message: fields renamed, retyped, removed (reserved or not), added,
    moved into a oneof, or repeated."""
    count = draw(st.integers(1, 4))
    old_fields = [(f"f{i}", draw(st.sampled_from(SCALARS)), i + 1) for i in range(count)]
    new_fields: list[str] = []
    reserved: list[str] = []
    for name, kind, number in old_fields:
        change = draw(st.sampled_from(["keep", "rename", "retype", "remove", "reserve", "repeat", "oneof"]))
        if change == "keep":
            new_fields.append(f"{kind} {name} = {number};")
        elif change == "rename":
            new_fields.append(f"{kind} {name}_x = {number};")
        elif change == "retype":
            new_fields.append(f"{draw(st.sampled_from(SCALARS))} {name} = {number};")
        elif change == "repeat":
            new_fields.append(f"repeated {kind} {name} = {number};")
        elif change == "oneof":
            new_fields.append(f"oneof o_{name} {{ {kind} {name} = {number}; }}")
        elif change == "reserve":
            reserved.append(f'reserved {number}; reserved "{name}";' if draw(st.booleans()) else f"reserved {number};")
    if draw(st.booleans()):
        new_fields.append(f"string added = {count + 1};")
    old = " ".join(f"{kind} {name} = {number};" for name, kind, number in old_fields)
    new = " ".join(reserved + new_fields)
    return f"{HEAD}{ENUM}message M {{ {old} }}\n", f"{HEAD}{ENUM}message M {{ {new} }}\n"


@settings(max_examples=40, deadline=None)
@given(message_pairs())
def test_generated_changes_keep_the_categories_ordered(pair: tuple[str, str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        old, new = Path(tmp, "old", "m.proto"), Path(tmp, "new", "m.proto")
        for path, text in ((old, pair[0]), (new, pair[1])):
            path.parent.mkdir()
            path.write_text(text)
        reports = [diff_protos(old, new, rules=c) for c in STRICTEST_FIRST]
        assert diff_protos(old, new).changes == reports[STRICTEST_FIRST.index(RUNTIME)].changes  # the default
    for stricter, looser in pairwise(reports):
        assert [(c.code, c.path) for c in stricter.changes] == [(c.code, c.path) for c in looser.changes]
        for a, b in zip(stricter.changes, looser.changes, strict=True):
            assert a.backward <= b.backward, (a.code, pair)
            assert a.forward <= b.forward, (a.code, pair)
