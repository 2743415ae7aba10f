"""The endpoint registry of the engine: who may register and look up, what is checked, what survives."""

from __future__ import annotations

from pathlib import Path

import pytest

from subhive.errors import InputError
from subhive.root_hive import NotFound, PermissionDenied, RootHive

from ._fixtures import inventory_files, orders_files

SERVICE = "shop.inventory.v1.Inventory"


@pytest.fixture
def root(workspace: Path) -> RootHive:
    """``db`` provides inventory 1.0.0 (a gRPC service); ``web`` consumes it; ``ops`` does neither."""
    hive = RootHive.open(workspace)
    for name in ("db", "web", "ops", "backend"):
        hive.register_hive(name)
    assert hive.propose("db", inventory_files()).status == "accepted"
    hive.declare_requirement("web", "inventory", "^1.0")
    return hive


def test_the_provider_registers_and_consumers_find_it(root: RootHive) -> None:
    registered = root.register_endpoint("db", "inventory", 1, "127.0.0.1:40123", services=[SERVICE])
    assert (registered.provider, registered.service, registered.address) == ("db", SERVICE, "127.0.0.1:40123")
    for who in ("web", "db", None):  # a consumer, the provider, the admin
        assert root.endpoint("inventory", 1, hive=who) == registered
    frame = root.frames_since(0)[-1]
    assert (frame.kind, frame.data["address"], frame.data["replaced"]) == (
        "endpoint_registered",
        "127.0.0.1:40123",
        None,
    )


def test_the_admin_registers_for_the_provider(root: RootHive) -> None:
    assert root.register_endpoint(None, "inventory", 1, "localhost:5000").provider == "db"


def test_only_the_provider_may_register(root: RootHive) -> None:
    with pytest.raises(PermissionDenied) as caught:
        root.register_endpoint("web", "inventory", 1, "127.0.0.1:40123")
    assert caught.value.code == "auth.not_provider"
    assert root.endpoints() == []


def test_a_hive_that_neither_consumes_nor_provides_may_not_look_up(root: RootHive) -> None:
    with pytest.raises(PermissionDenied) as before:
        root.endpoint("inventory", 1, hive="ops")
    root.register_endpoint("db", "inventory", 1, "127.0.0.1:40123")
    with pytest.raises(PermissionDenied) as after:  # the same answer whether or not it is registered
        root.endpoint("inventory", 1, hive="ops")
    assert before.value.code == after.value.code == "auth.not_consumer"
    assert "declare a requirement" in (after.value.hint or "")


def test_nothing_registered_is_not_found_naming_the_provider(root: RootHive) -> None:
    with pytest.raises(NotFound) as caught:
        root.endpoint("inventory", 1, hive="web")
    assert caught.value.code == "endpoint.none"
    assert "inventory v1" in caught.value.message
    assert "'db'" in (caught.value.hint or "")


def test_an_unaccepted_major_or_a_contract_without_grpc_cannot_be_registered(root: RootHive) -> None:
    with pytest.raises(NotFound) as no_major:
        root.register_endpoint("db", "inventory", 2, "127.0.0.1:40123")
    assert no_major.value.code == "endpoint.no_contract"
    root.propose("backend", orders_files("1.0.0"))
    with pytest.raises(InputError) as no_service:
        root.register_endpoint("backend", "orders", 1, "127.0.0.1:40123")
    assert no_service.value.code == "endpoint.no_service"


@pytest.mark.parametrize(
    ("major", "address", "code"),
    [
        (1, "nowhere", "endpoint.address"),
        (1, "127.0.0.1:0", "endpoint.address"),
        (1, "127.0.0.1:70000", "endpoint.address"),
        (1, "host name:80", "endpoint.address"),
        (-1, "127.0.0.1:80", "endpoint.major"),
        (True, "127.0.0.1:80", "endpoint.major"),
    ],
)
def test_bad_addresses_and_majors_are_input_errors(root: RootHive, major: int, address: str, code: str) -> None:
    with pytest.raises(InputError) as caught:
        root.register_endpoint("db", "inventory", major, address)
    assert caught.value.code == code


def test_an_ipv6_address_is_accepted(root: RootHive) -> None:
    assert root.register_endpoint("db", "inventory", 1, "[::1]:40123").address == "[::1]:40123"


def test_a_server_that_does_not_answer_the_contracts_service_is_refused(root: RootHive) -> None:
    with pytest.raises(InputError) as caught:
        root.register_endpoint("db", "inventory", 1, "127.0.0.1:40123", services=["shop.other.v1.Other"])
    assert caught.value.code == "endpoint.service_missing"
    assert SERVICE in caught.value.message


def test_a_new_registration_replaces_the_old_and_the_same_one_is_quiet(root: RootHive) -> None:
    root.register_endpoint("db", "inventory", 1, "127.0.0.1:40123")
    seq = root.last_seq
    root.register_endpoint("db", "inventory", 1, "127.0.0.1:40123")
    assert root.last_seq == seq
    root.register_endpoint("db", "inventory", 1, "127.0.0.1:40999")
    assert root.frames_since(seq)[-1].data["replaced"] == "127.0.0.1:40123"
    assert root.endpoint("inventory", 1, hive="web").address == "127.0.0.1:40999"


def test_removal_takes_only_the_registered_address_and_only_by_its_provider(root: RootHive) -> None:
    root.register_endpoint("db", "inventory", 1, "127.0.0.1:40999")
    assert root.remove_endpoint("db", "inventory", 1, "127.0.0.1:40123") is False  # an older instance stopping
    with pytest.raises(PermissionDenied):
        root.remove_endpoint("web", "inventory", 1, "127.0.0.1:40999")
    assert root.remove_endpoint("db", "inventory", 1, "127.0.0.1:40999") is True
    assert root.frames_since(0)[-1].kind == "endpoint_removed"
    assert root.endpoints() == []
    assert root.remove_endpoint("db", "inventory", 1, "127.0.0.1:40999") is False


def test_endpoints_survive_reopening_and_show_in_status(workspace: Path, root: RootHive) -> None:
    root.register_endpoint("db", "inventory", 1, "127.0.0.1:40123")
    before = root.endpoints()
    root.close()
    again = RootHive.open(workspace)
    assert again.endpoints() == before
    tree = {h.name: h for h in again.status()}
    assert [e.address for e in tree["db"].endpoints] == ["127.0.0.1:40123"]
    assert tree["db"].to_dict()["endpoints"][0]["service"] == SERVICE
    assert tree["web"].endpoints == []
