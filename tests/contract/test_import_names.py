"""``contract import`` names: the contract's from info.title, the provider's a hive that ``subhive new`` accepts."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from subhive.contract import load_contract
from subhive.contract._import import _contract_name, hive_name, valid_hive_name
from subhive.errors import InputError
from subhive.workspace import check_hive_name
from tests.kit import cli

API = (
    "openapi: 3.0.3\ninfo: {{title: {title}, version: 1.2.0}}\npaths:\n  /pets:\n    get:\n"
    "      operationId: listPets\n"
    "      responses:\n        '204': {{description: none}}\n"
)


def accepted(name: str) -> bool:
    """What ``subhive new`` (the workspace's rule) says of ``name``."""
    try:
        check_hive_name(name)
    except InputError:
        return False
    return True


@given(st.text(max_size=80) | st.sampled_from(["Pet Store API", "import", "Root", "3D Models", "---", "class-def"]))
def test_the_default_provider_is_a_hive_name_subhive_new_accepts(title: str) -> None:
    contract = _contract_name(title, Path("api.yaml"))
    provider = hive_name(contract)
    assert accepted(provider), (title, contract, provider)


@given(st.text(alphabet="abcz_-019AZ. ", max_size=40) | st.sampled_from(["if", "root", "a" * 32, "a" * 33, "r2_d2"]))
def test_the_import_rule_is_the_workspace_rule(name: str) -> None:
    assert valid_hive_name(name) == accepted(name)


def test_pet_store_api_is_served_by_pet_store_api(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "api.yaml").write_text(API.format(title="Pet Store API"))
    code, _, err = cli(capsys, "contract", "import", str(tmp_path / "api.yaml"), "--out", str(tmp_path / "c"))
    assert code == 0, err
    contract = load_contract(tmp_path / "c" / "pet-store-api" / "1.2.0")
    assert (contract.name, contract.provider) == ("pet-store-api", "pet_store_api")


def test_a_provider_no_hive_can_have_is_refused_before_writing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "api.yaml").write_text(API.format(title="Pet Store API"))
    argv = ("contract", "import", str(tmp_path / "api.yaml"), "--out", str(tmp_path / "c"), "--provider", "pet-store")
    code, _, err = cli(capsys, *argv)
    assert code == 2
    assert "import.provider_invalid" in err
    assert "'pet_store'" in err
    assert not (tmp_path / "c").exists()


def test_a_title_of_no_letters_falls_back_to_the_file_name(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "orders.yaml").write_text(API.format(title="'2024'"))
    code, _, err = cli(capsys, "contract", "import", str(tmp_path / "orders.yaml"), "--out", str(tmp_path / "c"))
    assert code == 0, err
    assert load_contract(tmp_path / "c" / "orders" / "1.2.0").provider == "orders"
