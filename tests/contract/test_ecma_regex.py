"""ECMA-262 patterns translated to Python ``re`` match what the runtime validator matches (decisions 0097, 0137)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from subhive._ecma_regex import EcmaRegexError, to_python
from subhive._rs_validator import defuse_pattern, runtime_validator
from subhive.compat.jsonschema import diff_schemas
from subhive.contract import lint_paths
from subhive.runtime import ContractBinding, PayloadInvalid
from subhive.runtime._mockdata import InstanceGenerator
from subhive.semver import Version

# One construct each that Python's re lacks or reads differently, and plain ones around them.
ATOMS = [
    "a", "b", "0", "\\d", "\\D", "\\w", "\\W", "\\s", "\\S", ".", "[\\s\\S]", "[^\\d]", "[a\\d]",
    "[^a\\W]", "[\\S0]", "\\cJ", "\\ci", "\\u00e9", "\\u{e9}", "\\u{1F600}", "\\x41", "\\/",
    "\\b", "\\B", "[a-c]", "\\-", "\\.",
]  # fmt: skip
QUANTIFIERS = ["", "", "*", "+", "?", "{1,2}"]
ALPHABET = [
    "a", "b", "c", "A", "0", "9", "_", " ", "\n", "\r", "\t", "\x08", "\x00", "é", "\u0661", "\ufeff", "\x1c", "\x85",
    "\u00a0", "\u2028", "\u2029", "/", "-", ".", "😀", "K", "\u212a", "i", "\x09",
]  # fmt: skip
# jsonschema-rs's "." also matches \r, \u2028 and \u2029, which ECMA-262's does not: there the translation (ECMA)
# matches less, never more (mock data made from it still validates).
_RS_DOT_DIFFERS = frozenset("\r\u2028\u2029")


@st.composite
def patterns(draw: st.DrawFn) -> str:
    parts = [draw(st.sampled_from(ATOMS)) + draw(st.sampled_from(QUANTIFIERS)) for _ in range(draw(st.integers(1, 4)))]
    if draw(st.booleans()):
        # A back-reference by number: jsonschema-rs refuses \k<g> (tested apart, below).
        parts = ["(?<g>", *parts, ")", draw(st.sampled_from(["", "\\1"]))]
    return draw(st.sampled_from(["", "^"])) + "".join(parts) + draw(st.sampled_from(["", "$"]))


def _bus(schema: dict[str, Any]) -> ContractBinding:
    return ContractBinding("regex", Version.parse("1.0.0"), "test", {}, {"s": "s"}, {"s": schema})


def _rs(pattern: str) -> Any:
    """The validator the bus checks a ``{"pattern": pattern}`` payload with."""
    return _bus({"pattern": pattern}).validator("s")


def _plain(pattern: str) -> re.Pattern[str] | None:
    """Python's ``re`` (ASCII classes) on the pattern itself where it means the same as in ECMA-262: no escape, ``.``,
    or ``$`` Python reads differently or not at all (its ``\\B`` never matches ""; ``\\b*`` is an error there),
    and the named group spelled as Python spells it."""
    escaped = set(re.findall(r"\\(.)", pattern))
    rest = re.sub(r"\\.", "", pattern)
    if not escaped.isdisjoint("sScuB") or any(token in rest for token in (".", "$")):
        return None
    try:
        return re.compile(pattern.replace("(?<g>", "(?P<g>"), re.ASCII)
    except re.error:
        return None


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(patterns(), st.lists(st.text(alphabet=st.sampled_from(ALPHABET), max_size=6), min_size=1, max_size=8))
@example("a+a*a+", ["a", "0a", "ba", "aa"])  # jsonschema-rs 0.60's default engine matches "a": decision 0137
@example("a\\D+a*\\D+", ["aA", "aAb"])  # the same bug: it matched "aA"
@example("(?<g>a+b?a+)\\1", ["aa", "abaab", "aaaa"])  # a back-reference: fancy-regex on the defused pattern
def test_the_translation_matches_what_the_runtime_validator_matches(pattern: str, texts: list[str]) -> None:
    runtime = _rs(pattern)
    python = re.compile(to_python(pattern))
    # Where the pattern has no ECMA-only syntax, Python's re reads the pattern itself as ECMA-262 does: an oracle
    # that owes nothing to the translation.
    exact = _plain(pattern)
    for text in texts:
        got, want = python.search(text) is not None, runtime.is_valid(text)
        if ("\\b" in pattern or "\\B" in pattern) and any(ch.isalnum() and not ch.isascii() for ch in text):
            continue  # jsonschema-rs's \b is Unicode-aware; ECMA-262's (and the translation's) is ASCII
        if exact is not None:
            truth = exact.search(text) is not None
            assert (want, got) == (truth, truth), (pattern, text, to_python(pattern))
        elif "." in pattern.replace("\\.", "") and not _RS_DOT_DIFFERS.isdisjoint(text):
            assert want or not got, (pattern, text)
        else:
            assert got == want, (pattern, text, to_python(pattern))


@settings(max_examples=200, deadline=None)
@given(patterns(), st.lists(st.text(alphabet=st.sampled_from(ALPHABET), max_size=6), min_size=1, max_size=6))
def test_a_defused_pattern_matches_what_the_pattern_matches(pattern: str, texts: list[str]) -> None:
    # What the bus hands fancy-regex when a schema needs it (a back-reference somewhere): the same language, and
    # fancy-regex then matches it exactly.
    defused = defuse_pattern(pattern)
    assert defused.replace("(?:|)", "") == pattern
    original, rewritten = re.compile(to_python(pattern)), re.compile(to_python(defused))
    assert [original.search(t) is not None for t in texts] == [rewritten.search(t) is not None for t in texts]
    exact = _plain(pattern)
    if exact is not None and "\\b" not in pattern:
        fancy = jsonschema_rs.validator_for({"pattern": defused}, pattern_options=jsonschema_rs.FancyRegexOptions())
        # A back-reference makes fancy-regex run the pattern itself, reading \d and \w as Unicode classes (why a
        # `pattern` is not left to it): ASCII texts only there.
        ascii_only = [t for t in texts if t.isascii() or "\\1" not in pattern]
        assert [fancy.is_valid(t) for t in ascii_only] == [exact.search(t) is not None for t in ascii_only], defused


@pytest.mark.parametrize(
    ("pattern", "refused", "accepted"),
    [
        ("a+a*a+", "a", "aa"),
        ("^\\d+-?\\d+$", "1", "12"),
        ("^(?:a+b?a*)+$", "abb", "abab"),  # fancy-regex also let two b's follow each other here
        ("^(\\d)\\1$", "\u0661\u0661", "11"),  # fancy-regex runs it itself, where its \d is Unicode
    ],
)
@pytest.mark.parametrize("beside", [None, "^(x)\\1$"], ids=["linear", "backreference"])
def test_the_bus_refuses_a_payload_its_pattern_does_not_match(
    pattern: str, refused: str, accepted: str, beside: str | None
) -> None:
    # A back-reference beside it makes the schema one only fancy-regex compiles: the other engine path.
    properties: dict[str, Any] = {"p": {"type": "string", "pattern": pattern}}
    if beside is not None:
        properties["q"] = {"type": "string", "pattern": beside}
    bus = _bus({"type": "object", "properties": properties})
    bus.check("s", {"p": accepted, "q": "xx"}, moving="outgoing")
    with pytest.raises(PayloadInvalid) as refusal:
        bus.check("s", {"p": refused}, moving="incoming")
    assert (refusal.value.code, refusal.value.pointer, refusal.value.keyword) == ("payload.invalid", "/p", "pattern")
    if beside is not None:
        with pytest.raises(PayloadInvalid) as refusal:
            bus.check("s", {"p": accepted, "q": "xy"}, moving="incoming")  # the back-reference still holds
        assert refusal.value.pointer == "/q"


def test_pattern_property_keys_are_matched_right_and_data_is_left_alone() -> None:
    pattern_map = {"^a+b?a+$": {"type": "integer"}}
    schema = {
        "type": "object",
        "patternProperties": pattern_map,
        "properties": {"q": {"pattern": "^(x)\\1$"}, "c": {"const": {"patternProperties": pattern_map}}},
    }
    bus = _bus(schema)
    bus.check(
        "s",
        {"a": "not an integer: the key has one a", "aa": 1, "c": {"patternProperties": pattern_map}},
        moving="outgoing",
    )
    with pytest.raises(PayloadInvalid) as refusal:
        bus.check("s", {"aba": "text"}, moving="incoming")
    assert (refusal.value.pointer, refusal.value.keyword) == ("/aba", "type")
    with pytest.raises(PayloadInvalid) as refusal:
        bus.check(
            "s", {"c": {"patternProperties": {"^a+(?:|)b?(?:|)a+(?:|)$": {"type": "integer"}}}}, moving="incoming"
        )
    assert refusal.value.keyword == "const"
    assert list(schema["patternProperties"]) == ["^a+b?a+$"]  # the caller's schema, as given


def test_a_pattern_the_translation_cannot_read_is_left_to_fancy_regex_beside_a_back_reference() -> None:
    validator = runtime_validator({"properties": {"a": {"pattern": "^\\p{Lu}$"}, "b": {"pattern": "^(x)\\1$"}}})
    assert [validator.is_valid({"a": a}) for a in ("\u00c9", "e")] == [True, False]
    assert [validator.is_valid({"b": b}) for b in ("xx", "xy")] == [True, False]


@pytest.mark.parametrize("schema", [{"pattern": "\\k<x>"}, {"pattern": "a("}, {"type": 5}])
def test_a_schema_jsonschema_rs_refuses_fails_as_it_did(schema: dict[str, Any]) -> None:
    with pytest.raises(jsonschema_rs.ValidationError) as ours:
        runtime_validator(schema)
    with pytest.raises(jsonschema_rs.ValidationError) as theirs:
        jsonschema_rs.validator_for(schema)
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize(
    ("pattern", "text", "matches"),
    [
        ("^\\d+$", "\u0661\u0662", False),  # ECMA \d is ASCII; Python's would match Arabic-Indic digits
        ("^a$", "a\n", False),  # $ is the end of the input; Python's also matches before a final newline
        ("^.$", "\r", False),  # . stops at every line terminator
        ("^\\s$", "\ufeff", True),  # ECMA \s has the BOM, not \x1c
        ("^\\s$", "\x1c", False),
        ("\\bé", "é", False),  # \b is next to ASCII word characters only
        ("^(?<y>\\d{4})-\\k<y>$", "2024-2024", True),
        ("^\\cJ$", "\n", True),
        ("^[^]$", "\n", True),
        ("[]", "anything", False),
    ],
)
def test_ecma_meanings_python_reads_differently(pattern: str, text: str, matches: bool) -> None:
    assert (re.search(to_python(pattern), text) is not None) is matches


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("\\p{L}", "Unicode property classes"),
        ("\\A", "\\A is no ECMA-262 escape"),
        ("\\c1", "\\c must be followed by a letter"),
        ("(?<1>a)", "a group name must be an identifier"),
        ("[a", "a character class is not closed"),
        ("a\\", "lone backslash"),
        ("\\u{110000}", "code point"),
    ],
)
def test_what_has_no_exact_python_reading_is_refused_with_the_reason(pattern: str, reason: str) -> None:
    with pytest.raises(EcmaRegexError) as raised:
        to_python(pattern)
    assert reason in raised.value.reason


def test_named_groups_and_control_escapes_lint_clean_and_compare(tmp_path: Path) -> None:
    schema = {"type": "string", "pattern": "^(?<year>\\d{4})-\\cJ$"}
    path = tmp_path / "date.json"
    path.write_text(json.dumps(schema))
    result = lint_paths([path])
    assert result.ok, result.problems
    report = diff_schemas(schema, schema)
    assert (report.backward, report.forward) == (True, True)


def test_a_pattern_lint_refuses_names_why(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text(json.dumps({"type": "string", "pattern": "^\\p{Lu}\\A"}))
    result = lint_paths([path])
    assert [(p.code, p.location.pointer) for p in result.problems] == [("schema.meta", "/pattern")]


@pytest.mark.parametrize("pattern", ["^(?<y>\\d{4})-\\cJ$", "^[\\s\\S]{2}x$", "^\\u{1F600}.$"])
def test_mock_data_samples_ecma_patterns_by_their_translation(pattern: str) -> None:
    schema = {"type": "string", "pattern": pattern}
    runtime = _rs(pattern)
    instances = InstanceGenerator(schema).instances(20, seed=3)
    assert len(set(instances)) > 1
    assert all(runtime.is_valid(x) and re.search(to_python(pattern), x) for x in instances), instances


@pytest.mark.parametrize(
    ("old", "new", "same"),
    [
        ("^\\d+$", "^[0-9]+$", True),  # \d is ASCII in ECMA-262: the same pattern
        ("a\\/b", "a/b", True),
        ("^\\d+$", "^\\w+$", False),
        ("^a.$", "^a[^\\n\\r\\u2028\\u2029]$", False),  # the same in ECMA-262, not in jsonschema-rs (its . has \r)
    ],
)
def test_patterns_that_read_the_same_are_no_change_and_others_stay_breaking(old: str, new: str, same: bool) -> None:
    report = diff_schemas({"type": "string", "pattern": old}, {"type": "string", "pattern": new})
    assert (report.backward, report.forward) == (same, same)
    assert [c.code for c in report.changes] == ([] if same else ["pattern.changed.unprovable"])
