"""hive.toml's ``[schemas]`` table: ``id_roots`` maps ``$id`` URL prefixes to directories (decision 0107);
every mistake is located at its key, and the workspace reader and the schema loader say the same."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from subhive._id_roots import id_roots_for
from subhive.errors import InputError
from subhive.workspace import ManifestInvalid, open_workspace

HEAD = '[workspace]\nname = "shop"\nformat = 1\n\n[schemas]\n'


def _workspace(root: Path, table: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "hive.toml").write_text(HEAD + table, encoding="utf-8")
    (root / "schemas" / "json").mkdir(parents=True)
    (root / "vendor").mkdir()
    (root / "vendor" / "licenses.1.json").write_text("{}")
    return root


def test_a_valid_table_opens_and_maps_prefixes_longest_first(tmp_path: Path) -> None:
    ws = _workspace(
        tmp_path / "ws",
        'id_roots = { "https://json.schemastore.org/" = "schemas/json", "https://json.schemastore.org/v/" = "vendor",'
        ' "https://tools.example.org/spdx/licenses.json" = "vendor/licenses.1.json" }\n',
    )
    assert open_workspace(ws).config.name == "shop"
    roots = id_roots_for(ws / "schemas" / "json")
    places = roots.places("https://json.schemastore.org/v/a/b.json")
    assert [(r.prefix, p) for r, p in places] == [
        ("https://json.schemastore.org/v/", ws / "vendor" / "a" / "b.json"),
        ("https://json.schemastore.org/", ws / "schemas" / "json" / "v" / "a" / "b.json"),
    ]
    [(_, file)] = roots.places("https://tools.example.org/spdx/licenses.json")
    assert file == ws / "vendor" / "licenses.1.json"
    assert roots.places("https://tools.example.org/spdx/other.json") == []
    assert roots.places("https://json.schemastore.org/x.json?raw=1") == []  # a query names no file


@pytest.mark.parametrize(
    ("table", "code", "pointer", "line"),
    [
        ('id_root = { "https://a.example/" = "schemas/json" }\n', "workspace.unknown_key", "/schemas/id_root", 6),
        ('id_roots = ["schemas/json"]\n', "workspace.type", "/schemas/id_roots", 6),
        (
            'id_roots = { "https://a.example/" = "nowhere" }\n',
            "workspace.id_root_missing",
            "/schemas/id_roots/https:~1~1a.example~1",
            6,
        ),
        (
            'id_roots = { "https://a.example/x.json" = "schemas/json" }\n',  # one URL names a file, not a directory
            "workspace.id_root_missing",
            "/schemas/id_roots/https:~1~1a.example~1x.json",
            6,
        ),
        ('id_roots = { "schemas/" = "schemas/json" }\n', "workspace.id_root_invalid", "/schemas/id_roots/schemas~1", 6),
        (
            'id_roots = { "https://a.example/#/x" = "schemas/json" }\n',
            "workspace.id_root_invalid",
            "/schemas/id_roots/https:~1~1a.example~1#~1x",
            6,
        ),
        ('id_roots = { "https://a.example/" = 3 }\n', "workspace.type", "/schemas/id_roots/https:~1~1a.example~1", 6),
    ],
)
def test_mistakes_are_located_by_both_readers(tmp_path: Path, table: str, code: str, pointer: str, line: int) -> None:
    ws = _workspace(tmp_path / "ws", table)
    with pytest.raises(ManifestInvalid) as caught:
        open_workspace(ws)
    first = caught.value.problems[0]
    assert (first.code, first.location.file) == (code, str(ws / "hive.toml"))
    assert first.location.line == line
    assert first.hint
    with pytest.raises(InputError) as raised:  # the schema loader reads the same table the same way
        id_roots_for(ws / "schemas" / "json")
    assert (raised.value.code, raised.value.location.pointer) == (code, pointer)


def test_an_unknown_key_suggests_the_right_one(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws", 'id_root = { "https://a.example/" = "schemas/json" }\n')
    with pytest.raises(InputError) as raised:
        id_roots_for(ws)
    assert raised.value.hint == "did you mean 'id_roots'?"


def test_an_edited_table_is_read_again(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws", 'id_roots = { "https://a.example/" = "schemas/json" }\n')
    assert [r.prefix for r in id_roots_for(ws).roots] == ["https://a.example/"]
    manifest = ws / "hive.toml"
    manifest.write_text(HEAD + 'id_roots = { "https://b.example/" = "vendor" }\n', encoding="utf-8")
    stat = manifest.stat()
    os.utime(manifest, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))  # a new stamp, however fast the test
    assert [r.prefix for r in id_roots_for(ws).roots] == ["https://b.example/"]
