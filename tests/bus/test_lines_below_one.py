"""Below 1.0.0 a breaking change starts a new line (0.1.x -> 0.2.0, decision 0003), and the two lines are served
side by side as 1.x and 2.x are (decision 0140): their own stub packages, subjects and validators. Built from a
real workspace, root engine, codegen and nats-server with the grants made from the lock."""

from __future__ import annotations

import json
import secrets
import shutil
from pathlib import Path
from typing import Any

from subhive.bus import ADMIN_USER, AccountsConfig, NatsTransport, bus_plan
from subhive.codegen import check_tree, generate_stubs, plan_stubs
from subhive.root_hive import Lock, RootHive, contract_files
from subhive.runtime import ContractBinding, MockProvider
from subhive.workspace import Kind, new_subhive, open_workspace
from tests.kit import StartServer, make_workspace, rewrite_manifest, run

CONTRACT = "inventory_storage"


def _breaking_0_2(root: Path) -> None:
    """contracts/inventory_storage/0.2.0: 0.1.0 with a new required ``tenant`` in every record address."""
    old, new = root / "contracts" / CONTRACT / "0.1.0", root / "contracts" / CONTRACT / "0.2.0"
    shutil.copytree(old, new)
    manifest = new / "contract.yaml"
    manifest.write_text(manifest.read_text().replace("version: 0.1.0", "version: 0.2.0"))
    schemas = json.loads((new / "schemas.json").read_text())
    address = schemas["$defs"]["RecordAddress"]
    address["required"].append("tenant")
    address["properties"]["tenant"] = {"type": "string"}
    (new / "schemas.json").write_text(json.dumps(schemas, indent=2))


def _two_lines(tmp_path: Path) -> Path:
    """inventory provides inventory_storage 0.1.0 and, approved as breaking, 0.2.0; orders stays on ^0.1 and
    reports moves to ^0.2."""
    root = make_workspace(tmp_path)
    new_subhive("inventory", Kind.db, start=root)
    new_subhive("orders", Kind.backend, start=root)
    new_subhive("reports", Kind.custom, start=root)
    rewrite_manifest(root, "orders", consumes={CONTRACT: "^0.1"})
    rewrite_manifest(root, "reports", consumes={CONTRACT: "^0.2"})
    engine = RootHive.open(root)
    try:
        first = engine.propose("inventory", contract_files(root / "contracts" / CONTRACT / "0.1.0"))
        assert first.status == "accepted", first.message
        _breaking_0_2(root)
        second = engine.propose("inventory", contract_files(root / "contracts" / CONTRACT / "0.2.0"))
        assert (second.status, second.code) == ("pending", "proposal.pending_breaking"), second.message
        approved = engine.approve(second.id, admin_token=engine.admin_token())
        assert approved.status == "accepted", approved.message
    finally:
        engine.close()
    return root


def test_each_0x_line_gets_its_own_stub_package_and_subjects(tmp_path: Path) -> None:
    root = _two_lines(tmp_path)
    ws, lock = open_workspace(root), Lock.load(root)
    plan = plan_stubs(ws, lock)
    assert {s.package: str(s.entry.version) for s in plan.hives["inventory"].contracts} == {
        "inventory_storage_v0_1": "0.1.0",
        "inventory_storage_v0_2": "0.2.0",
    }
    assert [s.package for s in plan.hives["orders"].contracts] == ["inventory_storage_v0_1"]
    assert [s.package for s in plan.hives["reports"].contracts] == ["inventory_storage_v0_2"]
    grants = bus_plan(ws, lock).permissions
    assert "subhive.inventory_storage.v0_1.op.get_record.*" in grants["inventory"].subscribe
    assert "subhive.inventory_storage.v0_2.op.get_record.*" in grants["inventory"].subscribe
    assert "subhive.inventory_storage.v0_1.op.get_record.orders" in grants["orders"].publish
    assert not [s for s in grants["orders"].publish if ".v0_2." in s]  # orders may not send on the 0.2 line
    assert "subhive.inventory_storage.v0_2.op.get_record.reports" in grants["reports"].publish


def test_a_consumer_on_each_line_is_answered_by_that_line(tmp_path: Path, start_nats: StartServer) -> None:
    """The reviewer's case: after a breaking 0.2.0 is approved, a ^0.1 consumer's request without ``tenant`` is
    answered by the provider's 0.1 line, not refused by 0.2.0's validation; a ^0.2 consumer reaches 0.2.0."""
    root = _two_lines(tmp_path)
    ws = open_workspace(root)
    assert not generate_stubs(ws).problems
    plan = bus_plan(ws, Lock.load(root))
    passwords = {hive: secrets.token_urlsafe(24) for hive in [*plan.permissions, ADMIN_USER]}
    users = {hive: (passwords[hive], grants) for hive, grants in plan.permissions.items()}
    server = start_nats(accounts=AccountsConfig(users, passwords[ADMIN_USER]))
    # What the hive runtime serves: every contract.json in the provider's stubs, one per line it provides.
    served = sorted(
        (ContractBinding.load(path) for path in (root / "stubs" / "inventory").glob("*/contract.json")),
        key=lambda b: b.version,
    )
    assert [str(b.version) for b in served] == ["0.1.0", "0.2.0"]
    on_v1 = ContractBinding.load(root / "stubs" / "orders" / "inventory_storage_v0_1" / "contract.json")
    on_v2 = ContractBinding.load(root / "stubs" / "reports" / "inventory_storage_v0_2" / "contract.json")
    reached: list[tuple[str, Any]] = []

    def handler(binding: ContractBinding) -> Any:
        mock = MockProvider(binding, seed=0)

        async def get_record(payload: Any) -> Any:
            reached.append((str(binding.version), payload))
            return mock.answer("get_record", payload)

        return get_record

    async def scenario() -> tuple[Any, Any]:
        def connect(hive: str, **options: Any) -> Any:
            return NatsTransport.connect(server.endpoint(hive, passwords[hive]), hive, **options)

        inventory = await connect("inventory", allowed_senders=plan.senders)
        orders, reports = await connect("orders"), await connect("reports")
        try:
            for binding in served:
                await inventory.serve(binding, {"get_record": handler(binding)})
            old = await orders.request(on_v1, "get_record", {"collection": "pets", "id": "1"})
            new = await reports.request(on_v2, "get_record", {"collection": "pets", "id": "1", "tenant": "t"})
            return old, new
        finally:
            for transport in (orders, reports, inventory):
                await transport.close()

    old, new = run(scenario())
    assert reached == [
        ("0.1.0", {"collection": "pets", "id": "1"}),
        ("0.2.0", {"collection": "pets", "id": "1", "tenant": "t"}),
    ]
    on_v1.check(on_v1.operation("get_record")[1], old, moving="incoming")
    on_v2.check(on_v2.operation("get_record")[1], new, moving="incoming")


def test_the_tree_check_finds_a_0x_line_whose_events_are_never_published(tmp_path: Path) -> None:
    """The provider publishes record_changed with the 0.1 line's stubs only: reports, on ^0.2, would wait in
    silence. Before, both lines were "v0" and the check could not tell them apart (it said ok)."""
    root = _two_lines(tmp_path)
    knowledge = root / "subhives" / "inventory" / "inventory_hive" / "publisher.py"
    knowledge.write_text("from stubs.inventory.inventory_storage_v0_1 import InventoryStorageEvents\n")
    problems = [p for p in check_tree(open_workspace(root)) if p.code == "event.no_publisher"]
    assert len(problems) == 1, problems
    assert "reports consumes inventory_storage v0.2" in problems[0].message
    assert "uses the stubs of inventory_storage v0.1 only" in problems[0].message
    assert "stubs.inventory.inventory_storage_v0_2" in (problems[0].hint or "")
    knowledge.write_text(
        knowledge.read_text() + "from stubs.inventory.inventory_storage_v0_2 import InventoryStorageEvents\n"
    )
    assert not [p for p in check_tree(open_workspace(root)) if p.code == "event.no_publisher"]


def test_code_importing_a_0x_package_by_its_old_name_is_named_with_the_new_one(tmp_path: Path) -> None:
    """A workspace made before 0.x lines had names of their own imports ``inventory_storage_v0``: after codegen
    that package is ``inventory_storage_v0_1``, and the tree check says so instead of an ImportError at run time."""
    root = _two_lines(tmp_path)
    knowledge = root / "subhives" / "orders" / "orders_hive" / "asker.py"
    knowledge.write_text("\n\nfrom stubs.orders.inventory_storage_v0 import InventoryStorageClient\n")
    problems = [p for p in check_tree(open_workspace(root)) if p.code == "codegen.unknown_package"]
    assert [(p.location.file, p.location.line) for p in problems] == [(str(knowledge), 3)]
    assert "orders imports stubs.orders.inventory_storage_v0," in problems[0].message
    assert "import stubs.orders.inventory_storage_v0_1 instead" in (problems[0].hint or "")
    knowledge.write_text("from stubs.orders.inventory_storage_v0_1 import InventoryStorageClient\n")
    assert not [p for p in check_tree(open_workspace(root)) if p.code == "codegen.unknown_package"]
