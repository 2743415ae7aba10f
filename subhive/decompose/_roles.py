"""What a file is for: its role (ui, backend, db, ...) from its path alone, never its content, so it is cheap for
100,000 files and the same on every machine. The rules: docs/decompose.md#roles.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from enum import StrEnum
from functools import lru_cache

__all__ = ["Role", "classify", "dominant_role"]


class Role(StrEnum):
    ui = "ui"
    backend = "backend"
    db = "db"
    infra = "infra"
    docs = "docs"
    tests = "tests"
    config = "config"
    assets = "assets"
    other = "other"


_TEST_DIRS = frozenset(
    {
        "test",
        "tests",
        "__tests__",
        "spec",
        "specs",
        "testing",
        "e2e",
        "testdata",
        "fixtures",
        "__mocks__",
        "cypress",
        "playwright",
    }
)
_TEST_NAME = re.compile(
    r"(^test_.*\.py$|^.*_test\.(py|go)$|^conftest\.py$|\.(test|spec)\.[cm]?[jt]sx?$"
    r"|^.*Tests?\.(java|kt)$|^.*_spec\.rb$)"
)
_DOC_DIRS = frozenset({"doc", "docs", "documentation", "man", "manual"})
_DOC_EXT = frozenset({".md", ".rst", ".adoc", ".txt", ".markdown", ".tex", ".org"})
_INFRA_DIRS = frozenset(
    {
        "infra",
        "infrastructure",
        "deploy",
        "deployment",
        "deployments",
        "k8s",
        "kubernetes",
        "helm",
        "charts",
        "terraform",
        "ansible",
        ".github",
        ".gitlab",
        ".circleci",
        "docker",
        "ops",
        "ci",
        ".ci",
        "scripts",
        "tools",
    }
)
_INFRA_NAME = re.compile(
    r"(^Dockerfile.*|^docker-compose.*|^Makefile$|^Jenkinsfile$|^Procfile$|^Vagrantfile$"
    r"|^\.gitlab-ci\.ya?ml$|^.*\.(tf|tfvars|hcl|sh|bash|ps1|nix)$)"
)
_DB_DIRS = frozenset(
    {
        "db",
        "database",
        "databases",
        "migrations",
        "migration",
        "migrate",
        "alembic",
        "sql",
        "schema",
        "schemas",
        "prisma",
        "persistence",
        "repositories",
        "repository",
        "dao",
        "storage",
    }
)
_DB_EXT = frozenset({".sql", ".prisma", ".ddl"})
_UI_DIRS = frozenset(
    {
        "ui",
        "frontend",
        "front-end",
        "web",
        "webapp",
        "client",
        "clients",
        "components",
        "pages",
        "views",
        "templates",
        "static",
        "public",
        "assets",
        "styles",
        "css",
        "layouts",
        "widgets",
        "screens",
        "app-ui",
        "www",
    }
)
_UI_EXT = frozenset(
    {
        ".tsx",
        ".jsx",
        ".vue",
        ".svelte",
        ".html",
        ".htm",
        ".css",
        ".scss",
        ".sass",
        ".less",
        ".astro",
        ".hbs",
        ".ejs",
        ".jinja",
        ".jinja2",
        ".j2",
    }
)
_SCRIPT_EXT = frozenset({".js", ".mjs", ".cjs", ".ts", ".mts", ".cts"})
_CONFIG_EXT = frozenset(
    {
        ".json",
        ".yaml",
        ".yml",
        ".toml",
        ".ini",
        ".cfg",
        ".conf",
        ".env",
        ".properties",
        ".xml",
        ".lock",
        ".editorconfig",
        ".gitignore",
        ".gitattributes",
        ".dockerignore",
    }
)
_ASSET_EXT = frozenset(
    {
        ".png",
        ".jpg",
        ".jpeg",
        ".gif",
        ".svg",
        ".ico",
        ".webp",
        ".woff",
        ".woff2",
        ".ttf",
        ".otf",
        ".eot",
        ".mp3",
        ".mp4",
        ".wav",
        ".pdf",
    }
)
_CODE_EXT = frozenset(
    {
        ".py",
        ".pyi",
        ".pyx",
        ".go",
        ".java",
        ".kt",
        ".kts",
        ".scala",
        ".rb",
        ".php",
        ".rs",
        ".c",
        ".h",
        ".cc",
        ".cpp",
        ".hpp",
        ".cs",
        ".swift",
        ".m",
        ".ex",
        ".exs",
        ".erl",
        ".clj",
        ".lua",
        ".pl",
        ".r",
        ".jl",
        ".dart",
        ".zig",
        ".hs",
        ".ml",
        ".fs",
    }
)
_BACKEND_HINTS = frozenset({"server", "api", "backend", "services", "service", "handlers", "controllers", "cmd"})
_ORDER = {role: index for index, role in enumerate(Role)}


def classify(path: str) -> Role:
    """The role of the file at ``path`` (relative, '/'-separated); the first rule that matches wins, in this
    order: tests, docs, infra, db, ui, config, assets, backend (source code), other.

    >>> classify("web/src/components/Cart.tsx")
    <Role.ui: 'ui'>
    >>> classify("services/orders/orders_test.go")
    <Role.tests: 'tests'>
    """
    directory, _, name = path.rpartition("/")
    return _classify(_directory_parts(directory), name)


@lru_cache(maxsize=65536)
def _directory_parts(directory: str) -> frozenset[str]:
    return frozenset(part.lower() for part in directory.split("/")) if directory else frozenset()


def _classify(parts: frozenset[str], name: str) -> Role:  # noqa: PLR0911 - one return per rule reads best
    dot = name.rfind(".")
    ext = name[dot:].lower() if dot > 0 else ""
    if parts & _TEST_DIRS or _TEST_NAME.search(name):
        return Role.tests
    if (
        ext in _DOC_EXT
        or (parts & _DOC_DIRS and ext not in _CODE_EXT)
        or name.upper().startswith(("README", "CHANGELOG", "LICENSE"))
    ):
        return Role.docs
    if _INFRA_NAME.match(name) or parts & _INFRA_DIRS:
        return Role.infra
    if ext in _DB_EXT or parts & _DB_DIRS:
        return Role.db
    if ext in _UI_EXT or (ext in _SCRIPT_EXT and parts & _UI_DIRS and not parts & _BACKEND_HINTS):
        return Role.ui
    if ext in _CONFIG_EXT or name.startswith("."):
        return Role.config
    if ext in _ASSET_EXT:
        return Role.assets
    if ext in _CODE_EXT or ext in _SCRIPT_EXT:
        return Role.backend
    return Role.other


def dominant_role(counts: Mapping[Role, int] | Iterable[tuple[Role, int]]) -> Role:
    """The role with the most files; ties go to the earlier role in :class:`Role`; no files: ``other``.
    ``tests`` only when more than half of the files are tests: a hive called a test hive holds mostly tests.

    >>> dominant_role({Role.tests: 3, Role.backend: 3})
    <Role.backend: 'backend'>
    >>> dominant_role({Role.tests: 4, Role.backend: 3, Role.config: 2})
    <Role.backend: 'backend'>
    """
    items = list(counts.items() if isinstance(counts, Mapping) else counts)
    total = sum(count for _, count in items if count > 0)
    best: tuple[int, int] | None = None
    chosen = Role.other
    for role, count in items:
        if count <= 0 or (role is Role.tests and count * 2 <= total):
            continue
        key = (-count, _ORDER[role])
        if best is None or key < best:
            best, chosen = key, role
    return chosen
