"""``subhive contract propose`` of a path outside the workspace: a clear refusal (exit 2) naming the path and
the workspace's root (the current directory's, or the one given with -C). A path inside a workspace goes to
that workspace's root, wherever the command runs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from subhive.root_hive import RootHive
from subhive.workspace import init_workspace
from tests.kit import cli

ORDERS = Path(__file__).resolve().parents[2] / "contracts" / "orders" / "1.0.0"


@pytest.fixture
def shop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("SUBHIVE_ROOT", raising=False)
    init_workspace(tmp_path / "shop")
    with RootHive.open(tmp_path / "shop") as root:  # the provider of orders
        root.register_hive("backend", kind="backend")
    shutil.copytree(ORDERS, tmp_path / "elsewhere" / "orders" / "1.0.0")
    return tmp_path / "shop"


def test_a_path_outside_the_current_workspace_is_refused_naming_both(
    shop: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = shop.parent / "elsewhere" / "orders" / "1.0.0"
    monkeypatch.chdir(shop)
    code, out, err = cli(capsys, "contract", "propose", str(outside))
    assert (code, out) == (2, "")
    assert f"error: {outside}: this path is outside the workspace {shop} [propose.outside_workspace]" in err
    assert f"copy it to {shop / 'contracts'}/<name>/<version>/" in err
    assert "Traceback" not in err
    assert not (shop / "contracts.lock").exists()  # nothing was proposed


def test_with_dash_c_the_named_workspace_is_the_one_compared(
    shop: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = shop.parent / "elsewhere" / "orders" / "1.0.0"
    monkeypatch.chdir(shop.parent)
    code, _, err = cli(capsys, "contract", "propose", str(outside), "-C", str(shop))
    assert code == 2
    assert f"outside the workspace {shop}" in err


def test_a_path_in_no_workspace_from_no_workspace_says_so(
    shop: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = shop.parent / "elsewhere" / "orders" / "1.0.0"
    monkeypatch.chdir(shop.parent)
    code, _, err = cli(capsys, "contract", "propose", str(outside))
    assert code == 2
    assert f"error: {outside}: this path is in no subhive workspace" in err
    assert "[propose.outside_workspace]" in err


def test_a_path_inside_is_proposed_from_anywhere(
    shop: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    inside = shop / "contracts" / "orders" / "1.0.0"
    shutil.copytree(ORDERS, inside)
    monkeypatch.chdir(shop.parent)  # outside any workspace: the path's own workspace is used
    code, out, err = cli(capsys, "contract", "propose", str(inside))
    assert code == 0, err
    assert "orders 1.0.0: accepted" in out
