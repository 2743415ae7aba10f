"""``subhive up`` on bad input: each a clear error (docs/up.md: an ``error:`` line with its stable code and a
hint, exit code 2, no traceback), and whatever the supervisor had started before it failed is stopped: no
process of the workspace is left."""

from __future__ import annotations

import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from subhive.up import UpLayout

from ._tree import assert_clean_error, events, processes_of, up


@pytest.fixture
def held_port() -> Iterator[int]:
    """A port another program listens on (a plain socket: no SO_REUSEPORT, so nobody else can bind it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


@pytest.fixture
def workspace_without_hives(scaffolded_workspace: Path) -> Path:
    for hive in (scaffolded_workspace / "subhives").iterdir():
        if hive.is_dir():
            shutil.rmtree(hive)
    return scaffolded_workspace


@pytest.fixture
def workspace_with_a_parent_cycle(scaffolded_workspace: Path) -> Path:
    """backend's parent is web and web's parent is backend."""
    for hive, parent in (("backend", "web"), ("web", "backend")):
        manifest = scaffolded_workspace / "subhives" / hive / "subhive.toml"
        text = manifest.read_text()
        assert 'parent = "root"' in text
        manifest.write_text(text.replace('parent = "root"', f'parent = "{parent}"'))
    return scaffolded_workspace


@pytest.fixture
def workspace_whose_knowledge_fails_to_import(scaffolded_workspace: Path) -> Path:
    """backend's knowledge module raises on import; db and web are fine (and get started first or alongside)."""
    module = scaffolded_workspace / "subhives" / "backend" / "backend_hive" / "knowledge.py"
    module.write_text(module.read_text() + "\nraise RuntimeError('the knowledge module is broken')\n")
    return scaffolded_workspace


def _assert_nothing_left(workspace: Path) -> None:
    assert processes_of(workspace) == {}
    assert [e["event"] for e in events(workspace)][-2:] == ["failed", "stopped"]


def test_a_workspace_without_hives_is_refused(workspace_without_hives: Path) -> None:
    ran = up(workspace_without_hives)
    assert_clean_error(ran, 2, "up.no_hives")
    assert "has no sub-hives to run" in ran.err
    assert "subhive new" in ran.err  # the hint
    _assert_nothing_left(workspace_without_hives)


def test_a_cycle_in_the_hives_parents_is_refused_at_the_manifest(workspace_with_a_parent_cycle: Path) -> None:
    ran = up(workspace_with_a_parent_cycle)
    assert_clean_error(ran, 2, "hive.parent_cycle")
    assert "is its own ancestor" in ran.err
    assert str(workspace_with_a_parent_cycle / "subhives") in ran.err  # the manifest it is in
    assert "/parent" in ran.err
    # The manifests are checked before anything starts: no supervisor, no process, no progress.
    assert processes_of(workspace_with_a_parent_cycle) == {}
    assert events(workspace_with_a_parent_cycle) == []


def test_a_root_port_in_use_is_refused_naming_the_port(one_hive_workspace: Path, held_port: int) -> None:
    ran = up(one_hive_workspace, "--root-port", str(held_port))
    assert_clean_error(ran, 2, "up.root_failed")
    assert f"cannot listen on 127.0.0.1:{held_port}" in ran.err
    _assert_nothing_left(one_hive_workspace)


def test_a_nats_port_in_use_is_refused_and_the_started_root_stopped(one_hive_workspace: Path, held_port: int) -> None:
    ran = up(one_hive_workspace, "--nats-port", str(held_port))
    assert_clean_error(ran, 2, "bus.server_failed")
    assert f"{held_port}" in ran.err
    assert "address already in use" in ran.err
    assert "root.started" in [e["event"] for e in events(one_hive_workspace)]  # the root ran, and was stopped
    _assert_nothing_left(one_hive_workspace)


def test_a_knowledge_module_that_fails_to_import_names_the_hive_and_its_log(
    workspace_whose_knowledge_fails_to_import: Path,
) -> None:
    workspace = workspace_whose_knowledge_fails_to_import
    ran = up(workspace)
    assert_clean_error(ran, 2, "up.hive_failed")
    log = UpLayout(workspace).log_file("backend")
    assert "sub-hive backend exited with code 2 while starting" in ran.err
    assert str(log) in ran.err
    assert "the knowledge module is broken" in ran.err  # the cause, from the log's tail
    assert "ks.import_failed" in log.read_text()
    # The whole stack is in the hive's own log, for a human; the error line that `up` quotes comes last.
    text = log.read_text()
    assert "Traceback" in text
    assert text.rindex("ks.import_failed") > text.rindex("Traceback")
    started = {e["hive"] for e in events(workspace) if e["event"] == "hive.starting"}
    assert "db" in started  # a healthy hive was started, and stopped again
    _assert_nothing_left(workspace)
