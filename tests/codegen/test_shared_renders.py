"""Codegen renders a contract version's package once per role and run, and writes a new package whole
(decision 0139): what a hive gets must not depend on which other hives were generated in the same run, and an
interrupted write must leave nothing behind that the next run keeps."""

from __future__ import annotations

import shutil
from pathlib import Path

from subhive.codegen import generate_stubs
from subhive.workspace import open_workspace
from tests.kit import copy_shop, rewrite_manifest


def _tree(directory: Path) -> dict[str, bytes]:
    return {
        p.relative_to(directory).as_posix(): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def _two_consumers_of_orders(root: Path) -> Path:
    """The shop where api consumes orders too: api's package of it is rendered before web's in a full run."""
    rewrite_manifest(root, "api", consumes={"db_storage": "^0.1", "orders": "^1.0"})
    shutil.rmtree(root / "stubs")
    return root


def test_a_hives_stubs_are_the_same_bytes_whether_generated_alone_or_with_every_hive(
    shop_template: Path, tmp_path: Path
) -> None:
    together = _two_consumers_of_orders(copy_shop(shop_template, tmp_path / "together"))
    alone = _two_consumers_of_orders(copy_shop(shop_template, tmp_path / "alone"))

    full = generate_stubs(open_workspace(together))
    web_only = generate_stubs(open_workspace(alone), hives=["web"])

    assert not full.problems
    assert not web_only.problems
    assert (together / "stubs/api/orders_v1/client.py").is_file()  # api consumes it: a client, not a handler only
    assert not (together / "stubs/backend/orders_v1/client.py").exists()  # backend provides it, rendered between
    assert _tree(together / "stubs/web") == _tree(alone / "stubs/web")
    # Both consumers' packages of one version hold the same bytes: nothing in them names the hive.
    assert _tree(together / "stubs/api/orders_v1") == _tree(together / "stubs/web/orders_v1")
    # Each file is reported written once, at its place.
    assert len(full.written) == len(set(full.written))
    assert "stubs/web/orders_v1/client.py" in full.written
    assert "stubs/web/orders_v1/client.py" in web_only.written


def test_a_package_left_half_written_by_an_interrupted_run_is_written_whole_again(shop: Path) -> None:
    expected = _tree(shop / "stubs/web/orders_v1")
    shutil.rmtree(shop / "stubs/web/orders_v1")
    # What a run killed while writing the package leaves: its files beside their place, one of them cut short.
    half = shop / "stubs/web/.orders_v1.tmp"
    half.mkdir()
    (half / "models.py").write_bytes(expected["models.py"][:100])
    (half / "stray.py").write_text("left over\n")

    result = generate_stubs(open_workspace(shop))

    assert not result.problems
    assert _tree(shop / "stubs/web/orders_v1") == expected
    assert not half.exists()
    assert sorted(p for p in result.written if "/orders_v1/" in p) == sorted(
        f"stubs/web/orders_v1/{name}" for name in expected
    )
