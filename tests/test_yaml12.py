"""YAML is read as YAML 1.2 (core schema) everywhere, as JSON Schema tools read it (decision 0142).

The oracle below is written from the spec's own table (YAML 1.2.2, 10.3.2 "Tag Resolution"), independent of the
loader; hypothesis draws plain scalars, biased toward the ones YAML 1.1 reads otherwise.
"""

from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from subhive._source import parse_document
from subhive._yaml import dump_yaml
from subhive.bus import render_asyncapi
from subhive.codegen.bundle import bundle_contract
from subhive.contract import lint_paths, load_contract
from subhive.errors import InputError
from subhive.runtime import ContractBinding
from tests.kit import cli

REFUSED = object()  # .inf, .nan, 1e400: no JSON value


def core12(text: str) -> Any:  # noqa: PLR0911 - one return per row of the spec's table
    """What YAML 1.2's core schema makes of the plain scalar ``text`` (REFUSED: a number JSON cannot hold)."""
    if re.fullmatch(r"null|Null|NULL|~|", text):
        return None
    if re.fullmatch(r"true|True|TRUE|false|False|FALSE", text):
        return text.lower() == "true"
    if re.fullmatch(r"[-+]?[0-9]+", text):
        return int(text, 10)
    if re.fullmatch(r"0o[0-7]+", text):
        return int(text[2:], 8)
    if re.fullmatch(r"0x[0-9a-fA-F]+", text):
        return int(text[2:], 16)
    if re.fullmatch(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?", text):
        value = float(text)
        return value if math.isfinite(value) else REFUSED
    if re.fullmatch(r"[-+]?(\.inf|\.Inf|\.INF)|\.nan|\.NaN|\.NAN", text):
        return REFUSED
    return text


# Scalars YAML 1.1 (PyYAML) reads otherwise, and their near misses.
SPECIAL = """
yes Yes YES no No NO on On ON off Off OFF y n Y N true True TRUE tRUE false FALSE fAlse
null Null NULL nULL ~ .inf -.Inf +.INF .nan .NaN .NAN .nAn
010 0755 089 00 007 -010 +0 0o17 0O17 0o8 0x1F 0X1F -0x1F 0xG 0b101 1_000 1:20 190:20:30.15 1__0
1e3 1E-3 1.5e+3 1.0e3 .5 +.5 -1. 1. . - + e 1e 6.8523015e+5 685.230_15e+03 1e400 -1e400
2024-01-01 2001-12-14t21:59:43.10-05:00 2001-12-14 2002-1-1 12:30:00 << = <<x
""".split()  # noqa: SIM905 - a table, one kind a line
PIECES = st.sampled_from([*"0123456789", "0o", "0x", "0b", "_", ":", ".", "e", "E", "+", "-", "-0", "inf", "nan"])
SCALARS = st.one_of(
    st.sampled_from(SPECIAL),
    st.lists(PIECES, min_size=1, max_size=8).map("".join),
    st.integers(-(10**30), 10**30).map(str),
    st.integers(0, 10**12).flatmap(lambda n: st.sampled_from([f"0o{n:o}", f"0x{n:x}", f"0x{n:X}", f"0{n}"])),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.text("abyesnoONFT0123456789.-:", min_size=1, max_size=6),
)


def plain(text: str) -> bool:
    """Whether ``text`` is written as itself as a plain scalar after ``v: `` (else the draw is not a scalar test)."""
    try:
        node = yaml.compose(f"v: {text}\n", Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return False
    if not isinstance(node, yaml.MappingNode) or len(node.value) != 1:
        return False
    value = node.value[0][1]
    return isinstance(value, yaml.ScalarNode) and value.style is None and value.value == text and value.tag[0] != "!"


def read(text: str, *, name: str = "s.yaml", schema: bool = True) -> Any:
    return parse_document(text.encode(), Path(name), schema=schema)


def same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


@settings(max_examples=400, deadline=None)
@given(SCALARS)
def test_a_plain_scalar_reads_as_yaml_12_core_says(text: str) -> None:
    assume(plain(text))
    expected = core12(text)
    for doc in (f"v: {text}\n", f"v: {text}\nv: {text}\n"):  # the second takes the duplicate-key reader
        if expected is REFUSED:
            with pytest.raises(InputError) as caught:
                read(doc)
            assert caught.value.code == "input.value"
        else:
            value = read(doc).data["v"]
            assert same(value, expected), (text, value, expected)


@settings(max_examples=300, deadline=None)
@given(SCALARS | st.text(max_size=12))
def test_what_subhive_writes_reads_back_the_same_by_yaml_11_and_12(text: str) -> None:
    written = dump_yaml({"k": text, "l": [text]})
    assert read(written, schema=False).data == {"k": text, "l": [text]}
    assert yaml.load(written, Loader=yaml.SafeLoader) == {"k": text, "l": [text]}


def test_the_reviewers_scalars(tmp_path: Path) -> None:
    doc = read(
        "properties:\n"
        "  country: {enum: [NO, SE, DK]}\n"
        "  answer: {enum: [yes, no, maybe]}\n"
        "  when: {type: string, default: 2024-01-01}\n"
        "  mode: {const: 0755}\n"
        "  at: {const: 1:20}\n"
        "  switch: {enum: [on, off, true]}\n"
    )
    props = doc.data["properties"]
    assert props["country"]["enum"] == ["NO", "SE", "DK"]
    assert props["answer"]["enum"] == ["yes", "no", "maybe"]
    assert props["when"]["default"] == "2024-01-01"
    assert same(props["mode"]["const"], 755)
    assert props["at"]["const"] == "1:20"
    assert props["switch"]["enum"] == ["on", "off", True]
    warned = {(n.location.line, n.location.pointer) for n in doc.notes}
    assert warned == {
        (2, "/properties/country/enum/0"),
        (3, "/properties/answer/enum/0"),
        (3, "/properties/answer/enum/1"),
        (4, "/properties/when/default"),
        (5, "/properties/mode/const"),
        (6, "/properties/at/const"),
        (7, "/properties/switch/enum/0"),
        (7, "/properties/switch/enum/1"),
    }
    assert {n.code for n in doc.notes} == {"schema.yaml11"}
    [note] = [n for n in doc.notes if n.location.pointer == "/properties/mode/const"]
    assert "the number 755 (YAML 1.2)" in note.message
    assert "493" in note.message
    assert note.hint == 'quote it to be clear: "0755"'


def test_only_schema_documents_carry_the_warning_and_quoted_scalars_none() -> None:
    assert read("a: yes\n", schema=False).notes == ()
    assert read("a: 'yes'\nb: \"2024-01-01\"\nc: true\nd: 12\n").notes == ()
    assert read('{"a": "yes"}', name="s.json").notes == ()


def test_the_schema_diff_no_longer_sees_false_in_an_enum(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "y1.yaml").write_text("type: object\nproperties:\n  country: {enum: [NO, SE, DK]}\n")
    (tmp_path / "y2.yaml").write_text("type: object\nproperties:\n  country: {enum: [SE, DK]}\n")
    _, out, _ = cli(capsys, "schema", "diff", str(tmp_path / "y1.yaml"), str(tmp_path / "y2.yaml"))
    assert 'removed ["NO"]' in out
    assert "false" not in out


def test_a_contracts_yes_is_the_string_the_bus_accepts(tmp_path: Path) -> None:
    directory = tmp_path / "contracts" / "vote" / "1.0.0"
    directory.mkdir(parents=True)
    (directory / "contract.yaml").write_text(
        "contract: vote\nversion: 1.0.0\nprovider: polls\nevents:\n  voted:\n    payload: vote.yaml\n"
    )
    (directory / "vote.yaml").write_text(
        "type: object\nrequired: [answer]\nproperties:\n  answer: {enum: [yes, no, maybe]}\n"
    )
    result = lint_paths([directory])
    assert result.ok, result.problems
    assert [w.code for w in result.warnings] == ["schema.yaml11", "schema.yaml11"]
    schemas = bundle_contract(load_contract(directory)).schemas
    binding = ContractBinding.from_dict(
        {
            "name": "vote",
            "version": "1.0.0",
            "provider": "polls",
            "operations": {},
            "events": {"voted": "events.voted.payload"},
            "schemas": schemas,
        }
    )
    binding.check("events.voted.payload", {"answer": "yes"}, moving="outgoing")  # raises PayloadInvalid if not
    assert not binding.validator("events.voted.payload").is_valid({"answer": True})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("$defs:\n  a: &a {type: string}\n  b: {<<: *a}\n", "merge keys"),
        ("default: !!timestamp 2024-01-01\n", "!!timestamp"),
        ("const: !!binary aGVsbG8=\n", "!!binary"),
        ("const: !!int 1_000\n", "not an integer"),
    ],
)
def test_yaml_11_only_forms_are_refused_with_a_line(text: str, message: str) -> None:
    with pytest.raises(InputError) as caught:
        read(text)
    assert message in caught.value.message
    assert caught.value.location.line == text.count("\n")
    assert caught.value.problems[0].hint


def test_json_dumps_never_meets_a_date_in_an_import(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "api.yaml").write_text(
        "openapi: 3.0.3\ninfo: {title: Pet Store API, version: 1.2.0}\npaths:\n  /pets:\n    get:\n"
        "      responses:\n        '200':\n          description: ok\n          content:\n"
        "            application/json:\n              schema: {$ref: '#/components/schemas/Pet'}\n"
        "components:\n  schemas:\n    Pet:\n      type: object\n"
        "      properties:\n        born: {type: string, format: date, example: 2020-01-01, default: 2024-01-01}\n"
    )
    code, _, err = cli(capsys, "contract", "import", str(tmp_path / "api.yaml"), "--out", str(tmp_path / "c"))
    assert code == 0, err
    defs = json.loads((tmp_path / "c" / "pet-store-api" / "1.2.0" / "schemas.json").read_text())["$defs"]
    assert defs["Pet"]["properties"]["born"] == {
        "type": "string",
        "format": "date",
        "default": "2024-01-01",
        "examples": ["2020-01-01"],
    }


def test_the_warning_walks_an_alias_once() -> None:
    """A "billion laughs" schema with an ambiguous scalar: finding its pointer must not expand the aliases."""
    rows = ["a: yes", "b: &b0 [x, x, x, x, x, x, x, x, x, x]"]
    rows += [f"b{i}: &b{i} [{', '.join([f'*b{i - 1}'] * 10)}]" for i in range(1, 9)]
    started = time.perf_counter()
    doc = read("\n".join(rows) + "\n")
    assert time.perf_counter() - started < 5  # 10**9 values expanded would take hours
    assert [(n.code, n.location.pointer) for n in doc.notes] == [("schema.yaml11", "/a")]
    assert doc.line_of("/b8/9/9/9/9/9/9/9/9/0") == 2  # so must a line lookup (the x is written on line 2)
    assert time.perf_counter() - started < 5


def test_the_asyncapi_export_reads_back_the_same_by_a_yaml_12_reader() -> None:
    """AsyncAPI's tools read YAML 1.2: a string enum value ``1e3`` written plain would come back as 1000.0."""
    document = {"components": {"schemas": {"Code": {"enum": ["1e3", "0o17", "yes", "2024-01-01", "plain"]}}}}
    text = render_asyncapi(document)
    assert read(text, schema=False).data == document
    assert yaml.load(text, Loader=yaml.SafeLoader) == document
