"""--write: the plan becomes a workspace that the workspace and contract tools accept."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from subhive.contract import lint_paths
from subhive.decompose import Budget, decompose, plan_workspace, write_workspace
from subhive.errors import InputError
from subhive.workspace import init_workspace, open_workspace
from tests.decompose._fixtures import polyglot_shop, write_tree


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    return polyglot_shop(tmp_path / "shop")


def test_a_new_workspace_with_nested_hives_and_lint_clean_drafts(shop: Path, tmp_path: Path) -> None:
    plan = decompose(shop, Budget(max_files=3))
    assert plan.crossings
    written = write_workspace(plan, tmp_path / "ws")
    workspace = open_workspace(tmp_path / "ws")
    tree = workspace.hives()
    assert not tree.problems
    assert {name: m.parent for name, m in tree.hives.items()} == {h.name: h.parent for h in plan.hives}
    assert any(m.parent != "root" for m in tree.hives.values())  # nested, not flat
    for hive in plan.hives:
        manifest = tree.hives[hive.name]
        assert (manifest.budgets.max_files, manifest.budgets.max_bytes) == (3, plan.budget.max_bytes)
        scope = json.loads((workspace.hive_dir(hive.name) / "scope.json").read_text())
        assert scope["files" if hive.leaf else "children"] == list(hive.files or hive.children)
    for crossing in plan.crossings:
        assert crossing.contract in tree.hives[crossing.provider].provides
        assert tree.hives[crossing.consumer].requirement(crossing.contract) is not None
        assert (workspace.contracts_dir / crossing.contract / "0.1.0" / "contract.yaml").is_file()
    result = lint_paths([workspace.contracts_dir])
    assert result.ok, [str(p) for p in result.problems]
    assert str(written.files[-1].path) == "hive.toml"


def test_hives_are_added_to_an_existing_workspace_and_a_second_run_changes_nothing(shop: Path, tmp_path: Path) -> None:
    init_workspace(tmp_path / "ws")
    plan = decompose(shop, Budget(max_files=3))
    write_workspace(plan, tmp_path / "ws")
    before = sorted(p.relative_to(tmp_path) for p in (tmp_path / "ws").rglob("*"))
    with pytest.raises(InputError) as raised:
        write_workspace(plan, tmp_path / "ws")
    assert raised.value.problems[0].code == "hive.exists"
    assert sorted(p.relative_to(tmp_path) for p in (tmp_path / "ws").rglob("*")) == before


def test_the_repository_itself_becomes_the_workspace_by_default(shop: Path) -> None:
    plan = decompose(shop, Budget(max_files=6))
    planned = plan_workspace(plan, shop)
    assert not (shop / "hive.toml").exists()  # planning writes nothing
    write_workspace(plan, shop)
    scope = json.loads((shop / "subhives" / plan.hives[0].name / "scope.json").read_text())
    assert scope["repository"] == "."
    assert len(planned.files) > len(plan.hives)


def test_contract_operations_are_named_from_the_symbols_used_across_the_boundary(tmp_path: Path) -> None:
    repo = write_tree(
        tmp_path / "repo",
        {
            # Python: from ... import names
            "py/store/__init__.py": "",
            "py/store/db.py": "def get_user(): ...\n",
            "py/store/extra.py": "",
            "py/app/__init__.py": "",
            "py/app/views.py": "from store.db import get_user, SaveOrder\nimport store.extra\n",
            # TypeScript: named and default imports
            "ts/lib/cart.ts": "export default class Cart {}\nexport function cartTotal() {}\n",
            "ts/ui/page.ts": "import Cart, { cartTotal } from '../lib/cart'\n",
            # Go: pkg.Func calls
            "go/go.mod": "module example.com/shop\n",
            "go/billing/invoice.go": "package billing\n\nfunc NewInvoice() {}\n",
            "go/api/handler.go": (
                'package api\n\nimport "example.com/shop/billing"\n\nfunc h() { billing.NewInvoice(); billing.Pay() }\n'
            ),
        },
    )
    plan = decompose(repo, Budget(max_files=1))  # every file its own leaf: every import crosses
    used = {(c.consumer, name) for c in plan.crossings for name, _, _ in c.symbols}
    names = {name for _, name in used}
    assert {"get_user", "SaveOrder", "default", "cartTotal", "NewInvoice", "Pay"} <= names
    write_workspace(plan, tmp_path / "ws")
    operations: set[str] = set()
    for contract in (tmp_path / "ws" / "contracts").iterdir():
        if contract.is_dir():
            text = (contract / "0.1.0" / "contract.yaml").read_text()
            operations |= {
                line.strip().rstrip(":")
                for line in text.splitlines()
                if line.startswith("  ") and line.strip().endswith(":") and not line.startswith("    ")
            }
    assert {"get_user", "save_order", "cart", "cart_total", "new_invoice", "pay", "use_py_store_extra"} <= operations
    assert lint_paths([tmp_path / "ws" / "contracts"]).ok
