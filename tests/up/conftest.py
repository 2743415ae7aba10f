"""Workspaces for the ``subhive up`` tests: one scaffolded template per session, a fresh copy per test."""

from __future__ import annotations

import contextlib
import io
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from subhive.cli import main

from ._tree import HIVES, CopyTemplate, tear_down


@pytest.fixture(scope="session")
def template_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``subhive init`` plus a db, a backend and a ui hive, made once and never run."""
    root = tmp_path_factory.mktemp("template") / "ws"
    kinds = {"db": "db", "backend": "backend", "web": "ui"}
    # The scaffolding commands print what they create: keep that out of the test output.
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["init", str(root)]) == 0
        for name in ("db", "backend", "web"):  # backend consumes db, web consumes backend: in that order
            assert main(["new", name, "--kind", kinds[name], "-C", str(root)]) == 0
    assert sorted(p.name for p in (root / "subhives").iterdir() if p.is_dir()) == sorted(HIVES)
    return root


@pytest.fixture
def scaffolded_workspace(template_workspace: Path, tmp_path: Path) -> Iterator[Path]:
    """A copy of the template this test may run and break; whatever it started is stopped afterwards."""
    workspace = (tmp_path / "ws").resolve()
    shutil.copytree(template_workspace, workspace)
    try:
        yield workspace
    finally:
        tear_down(workspace)


@pytest.fixture(scope="module")
def module_template_copy(template_workspace: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CopyTemplate]:
    """Copies of the template a module's tests share (a tree is up once for several tests: each ``up`` costs
    seconds); every one is torn down when the module is done, even when a test failed."""
    made: list[Path] = []

    def copy(*without: str) -> Path:
        workspace = (tmp_path_factory.mktemp("tree") / "ws").resolve()
        shutil.copytree(template_workspace, workspace, ignore=shutil.ignore_patterns(*without))
        made.append(workspace)
        return workspace

    try:
        yield copy
    finally:
        for workspace in made:
            tear_down(workspace)


@pytest.fixture
def one_hive_workspace(scaffolded_workspace: Path) -> Path:
    """Only the db hive (and its contract): the cheapest tree, for tests about stopping one."""
    for name in ("backend", "web"):
        shutil.rmtree(scaffolded_workspace / "subhives" / name)
    shutil.rmtree(scaffolded_workspace / "contracts" / "backend_api")
    return scaffolded_workspace
