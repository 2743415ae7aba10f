"""Small repositories with known seams, written into a test's ``tmp_path``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path


def write_tree(root: Path, files: Mapping[str, str | bytes]) -> Path:
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def polyglot_shop(root: Path) -> Path:
    """Four seams: a Python backend (api + models), a TypeScript UI, a Go service, a Java billing module,
    plus SQL, docs and tests. Imports stay inside each seam except a few named ones."""
    return write_tree(
        root,
        {
            # Python backend: api -> models
            "backend/shop/__init__.py": "",
            "backend/shop/api/__init__.py": "from .routes import router\n",
            "backend/shop/api/routes.py": "from .handlers import handle\nfrom shop.models.order import Order\n",
            "backend/shop/api/handlers.py": "from . import routes\nfrom ..models import user\n",
            "backend/shop/models/__init__.py": "",
            "backend/shop/models/order.py": "from .user import User\nimport os\n",
            "backend/shop/models/user.py": "import json\n\nclass User: ...\n",
            "backend/tests/test_api.py": "from shop.api.routes import router\nimport pytest\n",
            # TypeScript UI: App -> Cart -> client
            "web/package.json": json.dumps({"name": "@shop/web", "private": True}),
            "web/src/App.tsx": "import { Cart } from './components/Cart'\nimport React from 'react'\n",
            "web/src/components/Cart.tsx": "import { fetchCart } from '../api/client.js'\n",
            "web/src/api/client.ts": "export async function fetchCart() { return fetch('/cart') }\n",
            "web/src/api/index.ts": "export * from './client'\n",
            # Go service: main -> api -> store
            "inventory/go.mod": "module example.com/inventory\n\ngo 1.22\n",
            "inventory/cmd/server/main.go": (
                'package main\n\nimport (\n\t"fmt"\n\t"example.com/inventory/internal/api"\n)\n'
            ),
            "inventory/internal/api/api.go": 'package api\n\nimport "example.com/inventory/internal/store"\n',
            "inventory/internal/store/store.go": "package store\n",
            "inventory/internal/store/sql.go": 'package store\n\nimport "database/sql"\n',
            # Java billing: service -> invoice (explicit and wildcard)
            "billing/src/main/java/com/shop/billing/Invoice.java": (
                "package com.shop.billing;\n\npublic class Invoice {}\n"
            ),
            "billing/src/main/java/com/shop/billing/BillingService.java": (
                "package com.shop.billing;\n\nimport com.shop.billing.model.*;\nimport java.util.List;\n"
            ),
            "billing/src/main/java/com/shop/billing/model/Line.java": (
                "package com.shop.billing.model;\n\nimport com.shop.billing.Invoice;\n"
            ),
            # the rest
            "db/migrations/001_init.sql": "create table orders (id int);\n",
            "docs/index.md": "# Shop\n",
            "Dockerfile": "FROM python:3.11\n",
        },
    )


#: Two clusters of modules in one flat package, with names that interleave in path order, so a cut in
#: path order splits both clusters and only the import graph finds the seam.
CLUSTER_A = ("alpha", "charlie", "echo", "golf")
CLUSTER_B = ("bravo", "delta", "foxtrot", "hotel")


def interleaved_clusters(root: Path) -> Path:
    files: dict[str, str | bytes] = {"pkg/__init__.py": ""}
    for cluster in (CLUSTER_A, CLUSTER_B):
        for name in cluster:
            others = [other for other in cluster if other != name]
            files[f"pkg/{name}.py"] = "".join(f"from . import {other}\n" for other in others)
    del files["pkg/__init__.py"]  # keep the package out of both clusters' way: namespace package
    return write_tree(root, files)
