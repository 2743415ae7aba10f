"""Files without imports go with the code that owns them; tests go with the code they test, and their edges
never become contracts."""

from __future__ import annotations

from pathlib import Path

from subhive.decompose import Budget, decompose
from tests.decompose._fixtures import write_tree


def app(name: str, other: str) -> dict[str, str]:
    return {
        f"shop/{name}/__init__.py": "",
        f"shop/{name}/views.py": f"from . import models\nfrom shop.{other} import models as m\n",
        f"shop/{name}/models.py": "import json\n",
        f"shop/{name}/templates/{name}/list.html": "<ul></ul>\n",
        f"shop/{name}/templates/{name}/item.html": "<li></li>\n",
        f"shop/{name}/templates/{name}/base.html": "<html></html>\n",
        f"shop/{name}/locale/de/LC_MESSAGES/django.po": 'msgid "x"\n',
    }


def test_templates_and_translations_stay_with_their_app(tmp_path: Path) -> None:
    repo = write_tree(tmp_path / "repo", {"shop/__init__.py": "", **app("cart", "users"), **app("users", "cart")})
    plan = decompose(repo, Budget(max_files=6))  # an app is 7 files: it must be split, its files kept near
    owner = plan.leaf_of()
    for name in ("cart", "users"):
        # their owner is the entry file of the nearest directory holding code (the refinement may send the
        # app's modules where their imports pull them: here both apps' code fits one leaf, cutting nothing)
        entry = owner[f"shop/{name}/__init__.py"]
        for template in ("list", "item", "base"):
            assert owner[f"shop/{name}/templates/{name}/{template}.html"] == entry
        assert owner[f"shop/{name}/locale/de/LC_MESSAGES/django.po"] == entry
        # never a bucket of every app's templates or translations
        assert (
            owner[f"shop/{name}/templates/{name}/list.html"]
            != owner[f"shop/{_other(name)}/templates/{_other(name)}/list.html"]
        )
    assert all(leaf.file_count <= 6 for leaf in plan.leaves())


def _other(name: str) -> str:
    return "users" if name == "cart" else "cart"


def test_a_test_joins_what_it_tests_and_its_edges_are_never_contracts(tmp_path: Path) -> None:
    files = {
        "shop/__init__.py": "",
        **{f"shop/cart/m{n}.py": "from shop.cart import m0\n" for n in range(4)},
        "shop/cart/__init__.py": "",
        **{f"shop/users/m{n}.py": "from shop.users import m0\n" for n in range(4)},
        "shop/users/__init__.py": "",
        # the test uses cart most, and users once: it belongs with cart, and glues nothing
        "tests/test_cart.py": "from shop.cart import m1, m2, m3\nfrom shop.users import m1\n",
        "tests/test_users.py": "from shop.users import m2, m3\n",
    }
    repo = write_tree(tmp_path / "repo", files)
    # 7 files a leaf: room for shop/__init__.py beside users, which may not go into a leaf of tests instead
    plan = decompose(repo, Budget(max_files=7))
    owner = plan.leaf_of()
    assert owner["tests/test_cart.py"] == owner["shop/cart/m1.py"]
    assert owner["tests/test_users.py"] == owner["shop/users/m2.py"]
    assert owner["shop/cart/m1.py"] != owner["shop/users/m1.py"]
    assert not any(source.startswith("tests/") for c in plan.crossings for source, _ in c.edges)
    assert plan.stats.test_edges == 6
    assert plan.stats.test_edges_cut == 1  # test_cart -> users/m1, counted apart
    assert plan.stats.edges_cut == sum(len(c.edges) for c in plan.crossings)


def test_a_file_named_by_path_in_code_goes_with_that_code(tmp_path: Path) -> None:
    # top-level templates/ and sql/ directories hold no code: the views and the store naming them own them,
    # not manage.py at the root (the nearest directory holding code)
    files: dict[str, str | bytes] = {
        "manage.py": "import os\n",
        "settings.py": "DEBUG = True\n",
        "shop/__init__.py": "",
        "shop/views.py": "def page():\n    return render('cart/list.html'), render(\"cart/item.html\")\n",
        "shop/models.py": "",
        "store/__init__.py": "",
        "store/db.py": "SCHEMA = open('sql/schema.sql').read()\n",
        "store/pool.py": "",
        "templates/cart/list.html": "<ul></ul>\n",
        "templates/cart/item.html": "<li></li>\n",
        "sql/schema.sql": "create table t (id int);\n",
        "README.md": "# shop\n",
    }
    plan = decompose(write_tree(tmp_path / "repo", files), Budget(max_files=5))
    owner = plan.leaf_of()
    assert owner["templates/cart/list.html"] == owner["templates/cart/item.html"] == owner["shop/views.py"]
    assert owner["sql/schema.sql"] == owner["store/db.py"]
    assert owner["shop/views.py"] != owner["store/db.py"]


def test_go_tests_join_the_file_they_are_named_after(tmp_path: Path) -> None:
    # one Go package too big for a leaf, whose tests import nothing from it (same package): in path order
    # y_test.go would sit with y_util.go; its name says it tests y.go
    files: dict[str, str | bytes] = {"go.mod": "module example.com/shop\n"}
    for name in ("x", "x_util", "y", "y_util", "x_test", "y_test"):
        files[f"shop/{name}.go"] = "package shop\n"
    plan = decompose(write_tree(tmp_path / "repo", files), Budget(max_files=2))
    owner = plan.leaf_of()
    assert owner["shop/x_test.go"] == owner["shop/x.go"]
    assert owner["shop/y_test.go"] == owner["shop/y.go"]
