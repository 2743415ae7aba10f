"""Roles from paths: one table of known files, and the order in which rules win."""

from __future__ import annotations

import pytest

from subhive.decompose import Role, classify
from subhive.decompose._roles import dominant_role


@pytest.mark.parametrize(
    ("path", "role"),
    [
        ("web/src/components/Cart.tsx", Role.ui),
        ("frontend/app.js", Role.ui),
        ("templates/base.html", Role.ui),
        ("shop/api/routes.py", Role.backend),
        ("server/api/handler.ts", Role.backend),
        ("cmd/server/main.go", Role.backend),
        ("db/migrations/001_init.sql", Role.db),
        ("schema.sql", Role.db),
        ("deploy/k8s/service.yaml", Role.infra),
        ("Dockerfile", Role.infra),
        ("scripts/release.sh", Role.infra),
        ("docs/guide/index.md", Role.docs),
        ("README.md", Role.docs),
        ("LICENSE", Role.docs),
        ("tests/test_api.py", Role.tests),
        ("shop/api/routes_test.go", Role.tests),
        ("web/src/Cart.test.tsx", Role.tests),
        ("src/test/java/com/shop/OrderTest.java", Role.tests),
        ("pyproject.toml", Role.config),
        (".gitignore", Role.config),
        ("logo.svg", Role.assets),
        ("data.bin", Role.other),
    ],
)
def test_each_kind_of_file_gets_its_role(path: str, role: Role) -> None:
    assert classify(path) is role


def test_tests_win_over_every_other_rule() -> None:
    assert classify("docs/tests/example.md") is Role.tests
    assert classify("web/tests/App.tsx") is Role.tests


def test_the_dominant_role_breaks_ties_in_role_order() -> None:
    assert dominant_role({Role.tests: 2, Role.ui: 2}) is Role.ui
    assert dominant_role({Role.docs: 1, Role.db: 3}) is Role.db
    assert dominant_role({}) is Role.other
