"""Listing and reading a tree: git or walk, ignore files, links, and every kind of bad file counted."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from subhive.decompose._discover import discover, read_file
from tests.decompose._fixtures import write_tree


def test_a_walk_honours_ignore_files_at_every_level(tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            ".gitignore": "*.log\n!keep.log\nbuild/\n",
            "a.py": "",
            "debug.log": "",
            "keep.log": "",
            "build/out.js": "",
            "sub/.gitignore": "local.txt\n",
            "sub/local.txt": "",
            "sub/b.py": "",
            "other/local.txt": "",
            "sub/.ignore": "*.tmp\n",
            "sub/x.tmp": "",
            "node_modules/dep/index.js": "",
            "__pycache__/a.cpython-311.pyc": "",
        },
    )
    listing = discover(tmp_path)
    assert listing.source == "walk"
    assert listing.paths == [
        ".gitignore",
        "a.py",
        "keep.log",
        "other/local.txt",
        "sub/.gitignore",
        "sub/.ignore",
        "sub/b.py",
    ]


def test_extra_exclude_patterns(tmp_path: Path) -> None:
    write_tree(tmp_path, {"a.py": "", "vendor/x.py": "", "lib/site-packages/y.py": ""})
    assert discover(tmp_path, ["vendor/", "site-packages/"]).paths == ["a.py"]


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_a_git_checkout_lists_tracked_files_only(tmp_path: Path) -> None:
    write_tree(tmp_path, {"tracked.py": "", "dir/also.py": "", "untracked.py": ""})
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True, env=env)
    subprocess.run(["git", "add", "tracked.py", "dir/also.py"], cwd=tmp_path, check=True, env=env)
    listing = discover(tmp_path)
    assert listing.source == "git"
    assert listing.paths == ["dir/also.py", "tracked.py"]
    assert discover(tmp_path, ["dir/"]).paths == ["tracked.py"]


def test_links_are_never_followed(tmp_path: Path) -> None:
    outside = write_tree(tmp_path / "outside", {"secret.py": "x = 1\n", "dir/more.py": ""})
    repo = write_tree(tmp_path / "repo", {"real.py": "", "sub/inner.py": ""})
    (repo / "to_secret.py").symlink_to(outside / "secret.py")
    (repo / "to_dir").symlink_to(outside / "dir", target_is_directory=True)
    (repo / "to_real.py").symlink_to(repo / "real.py")
    (repo / "to_sub").symlink_to(repo / "sub", target_is_directory=True)
    (repo / "dangling.py").symlink_to(tmp_path / "nowhere.py")
    listing = discover(repo)
    assert listing.paths == ["real.py", "sub/inner.py"]
    assert listing.skipped == {"symlink_outside": 3, "symlink": 2}


def test_a_tree_that_is_itself_reached_through_a_link_still_counts_inner_links_as_inside(tmp_path: Path) -> None:
    repo = write_tree(tmp_path / "repo", {"real.py": ""})
    (repo / "again.py").symlink_to(repo / "real.py")
    (tmp_path / "alias").symlink_to(repo, target_is_directory=True)
    assert discover(Path(os.path.realpath(tmp_path / "alias"))).skipped == {"symlink": 1}


def test_bad_files_are_skipped_with_their_reason(tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            "text.py": "print('ok')\n",
            "image.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
            "latin1.py": "caf\xe9 = 1\n".encode("latin-1"),
            "big.py": "x = 1\n" * 2000,
            "empty.py": "",
        },
    )
    assert read_file(tmp_path / "text.py", limit=1000, want_text=True).text == "print('ok')\n"
    assert read_file(tmp_path / "image.png", limit=1000, want_text=False).skipped == "binary"
    assert read_file(tmp_path / "latin1.py", limit=1000, want_text=True).skipped == "invalid_encoding"
    assert read_file(tmp_path / "latin1.py", limit=1000, want_text=False).skipped == "invalid_encoding"
    assert read_file(tmp_path / "big.py", limit=1000, want_text=True).skipped == "too_large"
    assert read_file(tmp_path / "empty.py", limit=1000, want_text=True).text == ""
    assert read_file(tmp_path / "missing.py", limit=1000, want_text=True).skipped == "unreadable"


def test_a_utf8_character_cut_by_the_sniff_window_is_not_an_encoding_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("a" * 8191 + "é" + "b" * 100, encoding="utf-8")
    assert read_file(path, limit=100_000, want_text=False).skipped is None


def test_a_fifo_is_skipped_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    write_tree(tmp_path, {"a.py": ""})
    listing = discover(tmp_path)
    assert listing.paths == ["a.py"]
    assert listing.skipped == {"special": 1}


def _unprivileged(check: Callable[[], dict[str, object]]) -> dict[str, object]:
    """Run ``check`` where file permissions apply: as is, or (root reads through chmod 000) in a forked
    child that gave up root for the unprivileged user ``nobody``."""
    if os.geteuid() != 0:
        return check()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop root, run, report, and leave without running pytest's teardown
        status = 1
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            os.write(write, json.dumps(check()).encode())
            status = 0
        finally:
            os._exit(status)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    assert status == 0, "the unprivileged check failed"
    result: dict[str, object] = json.loads(data)
    return result


def test_unreadable_files_and_directories_are_counted() -> None:
    base = Path(tempfile.mkdtemp(prefix="subhive-decompose-"))  # outside pytest's 0700 tree: nobody may enter
    try:
        base.chmod(0o755)
        write_tree(base, {"ok.py": "", "locked/inner.py": "", "secret.py": "x\n"})
        for path in (base, base / "ok.py"):
            path.chmod(0o755)
        (base / "locked").chmod(0)
        (base / "secret.py").chmod(0)

        def check() -> dict[str, object]:
            listing = discover(base)
            return {
                "paths": listing.paths,
                "skipped": dict(listing.skipped),
                "secret": read_file(base / "secret.py", limit=100, want_text=True).skipped,
            }

        result = _unprivileged(check)
        assert result["skipped"] == {"unreadable_dir": 1}
        assert result["secret"] == "unreadable"
        assert "locked/inner.py" not in result["paths"]  # type: ignore[operator]
    finally:
        (base / "locked").chmod(0o755)
        (base / "secret.py").chmod(0o644)
        shutil.rmtree(base)


def test_an_enormous_file_is_never_read_whatever_the_budget(tmp_path: Path) -> None:
    path = tmp_path / "dump.sql"
    with open(path, "wb") as handle:  # sparse: 17 MiB on paper, nothing on disk
        handle.truncate(17 * 1024 * 1024)
    assert read_file(path, limit=10**12, want_text=True).skipped == "too_large"
