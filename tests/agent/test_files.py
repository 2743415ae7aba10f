"""The file tools stay inside the hive's directory: no escape by '..', absolute paths or symlinks, for any path."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from subhive.agent import FileSlice, ToolBox, ToolCall, ToolError, file_tools

SECRET = "TOP-SECRET-OUTSIDE"


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``outside/secret.txt`` beside ``hive/``; inside, files, a nested dir, and symlinks in and out."""
    base = tmp_path_factory.mktemp("slice")
    (base / "outside").mkdir()
    (base / "outside" / "secret.txt").write_text(SECRET)
    (base / "hive_sibling").mkdir()
    (base / "hive_sibling" / "x.txt").write_text(SECRET)
    hive = base / "hive"
    (hive / "src" / "deep").mkdir(parents=True)
    (hive / "src" / "app.py").write_text("def main():\n    return 'needle'\n")
    (hive / "src" / "deep" / "notes.md").write_text("a needle here\nand there\n")
    (hive / "blob.bin").write_bytes(b"\x00\x01needle")
    (hive / "link_out").symlink_to(base / "outside")
    (hive / "link_file_out").symlink_to(base / "outside" / "secret.txt")
    (hive / "src" / "link_up").symlink_to("../..")
    (hive / "link_in").symlink_to("src")
    (hive / "link_abs").symlink_to("/etc")
    return hive


def call(tree: Path, name: str, **arguments: Any) -> Any:
    import json

    box = ToolBox(file_tools(FileSlice(tree)))
    return asyncio.run(box.dispatch(ToolCall("c1", name, json.dumps(arguments)))).value


def refused(tree: Path, name: str, **arguments: Any) -> str:
    with pytest.raises(ToolError) as caught:
        call(tree, name, **arguments)
    return caught.value.code


def test_listing_shows_the_hive_files_and_follows_no_link_out(tree: Path) -> None:
    files = call(tree, "list_files")["files"]
    assert "src/app.py" in files
    assert "src/deep/notes.md" in files
    assert not any("secret" in f or f.startswith("link_out") or f == "link_file_out" for f in files)
    assert call(tree, "list_files", path="link_in")["files"] == ["src/app.py", "src/deep/notes.md"]


def test_reading_and_searching_inside(tree: Path) -> None:
    read = call(tree, "read_file", path="src/app.py", start_line=2)
    assert read["text"] == "    return 'needle'"
    assert read["lines"] == 2
    matches = call(tree, "search", query="needle")["matches"]
    assert matches == ["src/app.py:2: return 'needle'", "src/deep/notes.md:1: a needle here"]
    assert refused(tree, "read_file", path="blob.bin") == "file.binary"
    assert refused(tree, "read_file", path="src/missing.py") == "file.not_found"
    assert refused(tree, "search", query="(", regex=True) == "file.bad_pattern"


@pytest.mark.parametrize(
    "path",
    [
        "../outside/secret.txt",
        "/etc/passwd",
        "link_out/secret.txt",
        "link_file_out",
        "src/link_up/outside/secret.txt",
        "link_abs/hostname",
        "src/../../outside",
        "..",
        "C:/Windows",
        "..\\outside\\secret.txt",
        "a\x00b",
    ],
)
def test_every_way_out_is_refused(tree: Path, path: str) -> None:
    assert refused(tree, "read_file", path=path) == "file.outside_slice"
    assert refused(tree, "list_files", path=path) == "file.outside_slice"
    assert refused(tree, "search", query="SECRET", path=path) == "file.outside_slice"


PARTS = st.sampled_from(
    [
        "..",
        ".",
        "src",
        "deep",
        "link_out",
        "link_in",
        "link_up",
        "link_abs",
        "link_file_out",
        "outside",
        "secret.txt",
        "app.py",
        "",
        "hive",
        "hive_sibling",
        "x.txt",
        "etc",
    ]
)


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(PARTS, min_size=1, max_size=6), absolute=st.booleans(), sep=st.sampled_from(["/", "\\"]))
def test_for_any_path_what_resolves_is_inside_and_nothing_outside_is_read(
    tree: Path, parts: list[str], absolute: bool, sep: str
) -> None:
    path = ("/" if absolute else "") + sep.join(parts)
    files = FileSlice(tree)
    root = Path(os.path.realpath(tree))
    outcome = _attempt(lambda: files.resolve(path))
    if isinstance(outcome, ToolError):
        assert outcome.code == "file.outside_slice"
    else:
        assert outcome == root or root in outcome.parents
    for name, arguments in (
        ("read_file", {"path": path}),
        ("search", {"query": "SECRET", "path": path}),
        ("list_files", {"path": path}),
    ):
        value = _attempt(lambda name=name, arguments=arguments: call(tree, name, **arguments))
        if isinstance(value, ToolError):
            assert value.code in {"file.outside_slice", "file.not_found", "file.binary"}
        else:
            assert SECRET not in str(value)
            assert "x.txt" not in str(value)


def _attempt(action: Any) -> Any:
    """What ``action()`` returns, or the ToolError it raised."""
    try:
        return action()
    except ToolError as error:
        return error
