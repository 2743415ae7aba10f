"""Reading TOML with lines: the pointer -> line map that error messages rely on, and the string writer."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from subhive.errors import InputError
from subhive.workspace import TomlDocument, read_toml
from subhive.workspace._toml import toml_key, toml_string

TRICKY = '''\
# a comment with name = "not a key"
name = "db"
notes = """
kind = "inside a multi-line string"
"""
provides = [
  "a",   # ] a bracket in a comment
  "b]",
]
consumes = { orders = "^1", "audit log" = "~2" }
a.b.c = 1

[budgets]
max_files = 3

[[history]]
when = 1

[[history]]
when = 2

["quoted table"]
'x y' = 1
'''


@pytest.mark.parametrize(
    ("pointer", "line"),
    [
        ("/name", 2),
        ("/notes", 3),
        ("/provides", 6),
        ("/provides/1", 6),  # array items: the line of their key
        ("/consumes", 10),
        ("/consumes/orders", 10),
        ("/consumes/audit log", 10),
        ("/a/b/c", 11),
        ("/budgets", 13),
        ("/budgets/max_files", 14),
        ("/history/0/when", 17),
        ("/history/1/when", 20),
        ("/quoted table/x y", 23),
    ],
)
def test_every_key_is_placed_on_its_line(tmp_path: Path, pointer: str, line: int) -> None:
    path = tmp_path / "x.toml"
    path.write_text(TRICKY)
    document = read_toml(path)
    assert document.data["notes"].startswith('kind = "inside')  # the fixture is the TOML it claims to be
    assert document.line_of(pointer) == line
    assert document.line_of("/kind") is None  # "kind =" appears only inside the multi-line string


@pytest.mark.parametrize(
    ("raw", "code", "line"),
    [
        (b'name = "db"\nkind = \n', "input.toml", 2),
        (b'name = "db"\nname = "x"\n', "input.toml", 2),  # TOML forbids a duplicate key
        (b'name = "\xff"\n', "input.encoding", 1),
    ],
)
def test_unreadable_toml_is_a_located_input_error(tmp_path: Path, raw: bytes, code: str, line: int) -> None:
    path = tmp_path / "x.toml"
    path.write_bytes(raw)
    with pytest.raises(InputError) as caught:
        read_toml(path)
    assert (caught.value.code, caught.value.location.file, caught.value.location.line) == (code, str(path), line)


@given(st.text())
def test_strings_are_written_so_tomllib_reads_them_back(text: str) -> None:
    assert tomllib.loads(f"{toml_key(text)} = {toml_string(text)}\n") == {text: text}


def test_a_document_remembers_where_it_came_from() -> None:
    document = TomlDocument(Path("hive.toml"), "a = 1\n", {"a": 1})
    assert document.location("/a").to_dict() == {"file": "hive.toml", "line": 1, "pointer": "/a"}
