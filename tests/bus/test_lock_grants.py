"""Bus configuration from a real lock: the workspace of tests/codegen (web, api, db, backend hives with
accepted contracts). Expected subjects are written out by hand from the contracts' manifests."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import pytest

from subhive.bus import (
    ADMIN_USER,
    AccountsConfig,
    NatsTransport,
    PermissionViolation,
    bus_plan,
)
from subhive.root_hive import Lock
from subhive.runtime import ContractBinding
from subhive.workspace import open_workspace
from tests.kit import StartServer, make_shop, rewrite_manifest, run


def test_each_hive_gets_exactly_the_subjects_of_what_it_touches(shop: Path) -> None:
    plan = bus_plan(open_workspace(shop), Lock.load(shop))
    web = plan.permissions["web"]
    requests = {s for s in web.publish if ".op." in s}
    assert requests == {
        "subhive.api_api.v0_1.op.get_status.web",
        "subhive.orders.v1.op.get_order.web",
        "subhive.orders.v1.op.place_order.web",
        "subhive.inventory.v1.op.reserve_stock.web",
    }
    assert {s for s in web.subscribe if ".ev." in s} == {
        "subhive.orders.v1.ev.order_placed",
        "subhive.orders.v1.ev.order_shipped",
    }
    assert not web.allow_responses  # it provides nothing
    backend = plan.permissions["backend"]
    assert {s for s in backend.subscribe if ".op." in s} == {
        "subhive.orders.v1.op.get_order.*",
        "subhive.orders.v1.op.place_order.*",
    }
    assert {s for s in backend.publish if ".ev." in s} == {
        "subhive.orders.v1.ev.order_placed",
        "subhive.orders.v1.ev.order_shipped",
    }
    assert not [s for s in backend.publish + backend.subscribe if "db_storage" in s or "api_api" in s]
    assert plan.streams == [("db_storage", "0.1"), ("orders", "1")]
    assert plan.senders[("orders", "1")] == {"web"}
    assert plan.senders[("db_storage", "0.1")] == {"api"}
    # The durable consumers the framework creates: one per consuming hive and event, named as the grants name it.
    assert {(c.hive, c.stream, c.name, c.filter_subject, c.deliver_subject) for c in plan.consumers} >= {
        (
            "web",
            "SUBHIVE_EV_orders_v1",
            "web__orders__v1__order_placed",
            "subhive.orders.v1.ev.order_placed",
            "_INBOX_web.deliver.web__orders__v1__order_placed",
        )
    }
    for consumer in plan.consumers:
        assert f"$JS.ACK.{consumer.stream}.{consumer.name}.>" in plan.permissions[consumer.hive].publish
        assert not [c for c in plan.consumers if c.hive == "backend" and c.stream == "SUBHIVE_EV_orders_v1"]


def test_a_requirement_the_lock_cannot_meet_grants_nothing_and_is_named_not_a_silent_gap(tmp_path: Path) -> None:
    root = make_shop(tmp_path)
    rewrite_manifest(root, "web", consumes={"orders": "^3.0"})
    plan = bus_plan(open_workspace(root), Lock.load(root))  # the rest of the tree still gets its grants
    assert [(p.code, p.location.pointer) for p in plan.unmet] == [("codegen.not_in_lock", "/consumes/orders")]
    assert "web" in plan.unmet[0].message
    assert plan.permissions["backend"].subscribe  # the provider keeps its grants


def test_the_server_enforces_the_grants_made_from_the_lock(shop: Path, start_nats: StartServer) -> None:
    plan = bus_plan(open_workspace(shop), Lock.load(shop))
    passwords = {hive: secrets.token_urlsafe(24) for hive in [*plan.permissions, ADMIN_USER]}
    users = {hive: (passwords[hive], grants) for hive, grants in plan.permissions.items()}
    server = start_nats(accounts=AccountsConfig(users, passwords[ADMIN_USER]))
    api_api = ContractBinding.load(_binding(shop, "api", "api_api_v0_1"))
    db_storage = ContractBinding.load(_binding(shop, "api", "db_storage_v0_1"))

    async def status(payload: Any) -> Any:
        return {"status": "ok", "build": "b-1"}

    async def scenario() -> tuple[Any, PermissionViolation]:
        api = await NatsTransport.connect(server.endpoint("api", passwords["api"]), "api")
        web = await NatsTransport.connect(server.endpoint("web", passwords["web"]), "web")
        try:
            await api.serve(api_api, {"get_status": status})
            answer = await web.request(api_api, "get_status", {})
            with pytest.raises(PermissionViolation) as caught:  # web does not consume db_storage
                await web.request(db_storage, "get_record", {"collection": "orders", "id": "o-1"})
            return answer, caught.value
        finally:
            await web.close()
            await api.close()

    answer, refused = run(scenario())
    assert answer == {"status": "ok", "build": "b-1"}
    assert refused.location.subject == "subhive.db_storage.v0_1.op.get_record.web"


def _binding(shop: Path, hive: str, package: str) -> Path:
    """The contract.json codegen would write: generated here so the test needs no stubs/ on disk."""
    from subhive.codegen import generate_stubs

    path = shop / "stubs" / hive / package / "contract.json"
    if not path.exists():
        assert not generate_stubs(open_workspace(shop), hives=[hive]).problems
    return path
