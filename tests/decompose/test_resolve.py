"""Resolving imports to files of the repository, per language."""

from __future__ import annotations

import json

from subhive.decompose import Language, extract
from subhive.decompose._resolve import Resolver


def resolve(
    paths: list[str], importer: str, text: str, side: dict[str, str] | None = None, jvm: dict[str, str] | None = None
) -> list[str]:
    paths = sorted(paths)
    resolver = Resolver(paths, side or {})
    for path, source in (jvm or {}).items():
        found = extract(Language.java, source)
        resolver.add_jvm(paths.index(path), found)  # type: ignore[arg-type]
    language = {"py": Language.python, "ts": Language.typescript, "go": Language.go, "java": Language.java}[
        importer.rpartition(".")[2]
    ]
    extracted = extract(language, text)
    if language is Language.java:
        resolver.add_jvm(paths.index(importer), extracted)  # type: ignore[arg-type]
    return [paths[i] for i in resolver.resolve(paths.index(importer), extracted)]


def test_python_packages_relative_imports_and_submodules() -> None:
    paths = [
        "src/shop/__init__.py",
        "src/shop/api.py",
        "src/shop/models/__init__.py",
        "src/shop/models/user.py",
        "src/shop/cli.py",
    ]
    assert resolve(paths, "src/shop/cli.py", "from shop.models import user\nimport shop.api\n") == [
        "src/shop/models/user.py",
        "src/shop/api.py",
    ]
    assert resolve(paths, "src/shop/models/user.py", "from .. import api\nfrom . import nothing_here\n") == [
        "src/shop/api.py",
        "src/shop/models/__init__.py",
    ]
    assert resolve(paths, "src/shop/cli.py", "from shop.models.user import User\n") == ["src/shop/models/user.py"]
    assert resolve(paths, "src/shop/cli.py", "import src.shop.api\n") == ["src/shop/api.py"]


def test_python_standard_library_names_do_not_land_on_a_stray_script() -> None:
    paths = ["tools/json.py", "tools/run.py", "app/main.py"]
    assert resolve(paths, "app/main.py", "import json\n") == []
    assert resolve(paths, "tools/run.py", "import json\n") == ["tools/json.py"]  # its own directory


def test_typescript_relative_index_and_js_extension() -> None:
    paths = ["web/src/App.tsx", "web/src/api/index.ts", "web/src/api/client.ts", "web/src/util.ts"]
    assert resolve(
        paths, "web/src/util.ts", "import x from './api'\nimport { y } from './api/client.js'\nimport z from 'react'\n"
    ) == ["web/src/api/index.ts", "web/src/api/client.ts"]


def test_typescript_workspace_packages_by_name() -> None:
    paths = [
        "packages/ui/package.json",
        "packages/ui/src/index.ts",
        "packages/ui/src/button.ts",
        "packages/app/main.ts",
    ]
    side = {"packages/ui/package.json": '{"name": "@shop/ui"}'}
    assert resolve(
        paths, "packages/app/main.ts", "import { B } from '@shop/ui'\nimport b from '@shop/ui/src/button'\n", side
    ) == ["packages/ui/src/index.ts", "packages/ui/src/button.ts"]


def test_go_packages_through_go_mod() -> None:
    paths = [
        "svc/go.mod",
        "svc/main.go",
        "svc/internal/store/a.go",
        "svc/internal/store/b.go",
        "svc/internal/store/a_test.go",
    ]
    side = {"svc/go.mod": "module example.com/svc\n\ngo 1.22\n"}
    assert resolve(paths, "svc/main.go", 'import (\n\t"fmt"\n\t"example.com/svc/internal/store"\n)\n', side) == [
        "svc/internal/store/a.go"
    ]


def test_java_classes_nested_classes_and_wildcards() -> None:
    paths = [
        "src/com/shop/Order.java",
        "src/com/shop/model/Line.java",
        "src/com/shop/model/Tax.java",
        "src/com/shop/App.java",
    ]
    jvm = {
        "src/com/shop/Order.java": "package com.shop;\n",
        "src/com/shop/model/Line.java": "package com.shop.model;\n",
        "src/com/shop/model/Tax.java": "package com.shop.model;\n",
    }
    text = "package com.shop;\nimport com.shop.Order.Status;\nimport com.shop.model.*;\nimport java.util.List;\n"
    assert resolve(paths, "src/com/shop/App.java", text, jvm=jvm) == [
        "src/com/shop/Order.java",
        "src/com/shop/model/Line.java",
    ]


def test_unresolved_imports_are_counted() -> None:
    resolver = Resolver(["a.py"], {})
    assert resolver.resolve(0, extract(Language.python, "import requests\nimport os\n")) == []
    assert resolver.unresolved == 2


def test_go_imports_resolve_through_replace_and_without_a_go_mod() -> None:
    paths = ["api/types/t.go", "go.mod", "lib/x/x.go", "server/s.go"]
    mod = "module example.com/app\n\nreplace example.com/lib => ./lib\n"
    resolver = Resolver(paths, {"go.mod": mod})
    assert resolver.resolve(3, ("example.com/lib/x", "fmt")) == [2]
    # no go.mod: the import path's longest tail naming a package directory here
    bare = Resolver([*(p for p in paths if p != "go.mod"), "errors/e.go"], {})
    specs = ["github.com/docker/docker/api/types", "github.com/docker/docker/lib/x", "github.com/pkg/errors"]
    bare.infer_go_modules([*specs, "net/http"])
    assert bare.resolve(2, (*specs, "net/http")) == [0, 1]  # not errors/e.go: github.com/pkg is not this module
    assert bare.unresolved == 2


def test_typescript_aliases_from_tsconfig_paths_and_base_url() -> None:
    paths = ["app/tsconfig.json", "app/src/core/log.ts", "app/src/ui/page.tsx", "app/src/util/index.ts"]
    tsconfig = """{
      // comments are allowed in a tsconfig
      "compilerOptions": {"baseUrl": "src", "paths": {"@core/*": ["core/*"], "~util": ["util"]}} /* and here */
    }"""
    text = "import { log } from '@core/log'\nimport u from '~util'\nimport p from 'ui/page'\nimport r from 'react'\n"
    resolver = Resolver(sorted(paths), {"app/tsconfig.json": tsconfig})
    importer = sorted(paths).index("app/src/ui/page.tsx")
    targets = resolver.resolve(importer, extract(Language.typescript, text))
    assert [sorted(paths)[t] for t in targets] == ["app/src/core/log.ts", "app/src/util/index.ts"]
    assert resolver.unresolved == 1  # react; 'ui/page' is found through baseUrl: the importer itself, no edge


def targets(
    paths: list[str], importer: str, language: Language, text: str, side: dict[str, str], *, root: str = ""
) -> list[str]:
    paths = sorted(paths)
    resolver = Resolver(paths, side, root)
    extracted = extract(language, text)
    if language is Language.csharp:
        for path in paths:
            if path.endswith(".cs") and path != importer:
                namespace = "Shop.Models" if "/Models/" in path else "Shop.Api"
                resolver.add_jvm(paths.index(path), extract(Language.csharp, f"namespace {namespace};\n"))  # type: ignore[arg-type]
        resolver.add_jvm(paths.index(importer), extracted)  # type: ignore[arg-type]
    return [paths[t] for t in resolver.resolve(paths.index(importer), extracted)]


def test_rust_modules_crate_paths_and_workspace_crates() -> None:
    paths = [
        "Cargo.toml",
        "core/Cargo.toml",
        "core/src/lib.rs",
        "core/src/net.rs",
        "core/src/net/tcp.rs",
        "core/src/util/mod.rs",
        "app/Cargo.toml",
        "app/src/main.rs",
    ]
    side = {
        "core/Cargo.toml": '[package]\nname = "shop-core"\n',
        "app/Cargo.toml": '[package]\nname = "app"\n',
        "Cargo.toml": "[workspace]\n",
    }
    assert targets(paths, "core/src/lib.rs", Language.rust, "mod net;\npub mod util;\n", side) == [
        "core/src/net.rs",
        "core/src/util/mod.rs",
    ]
    assert targets(paths, "core/src/net.rs", Language.rust, "mod tcp;\nuse crate::util::helper;\n", side) == [
        "core/src/net/tcp.rs",
        "core/src/util/mod.rs",
    ]
    assert targets(paths, "core/src/net/tcp.rs", Language.rust, "use super::super::util;\nuse std::io;\n", side) == [
        "core/src/util/mod.rs"
    ]
    assert targets(paths, "app/src/main.rs", Language.rust, "use shop_core::net::tcp::Stream;\n", side) == [
        "core/src/net/tcp.rs"
    ]


def test_c_includes_beside_the_file_through_compile_commands_and_by_unique_suffix() -> None:
    paths = ["src/main.c", "src/local.h", "include/shop/api.h", "third/x/config.h", "third/y/config.h"]
    commands = '[{"directory": "/repo/build", "command": "cc -I../include/shop -Isrc -c ../src/main.c"}]'
    text = '#include "local.h"\n#include <api.h>\n#include "config.h"\n#include <stdio.h>\n'
    found = targets(paths, "src/main.c", Language.c, text, {"compile_commands.json": commands}, root="/repo")
    assert found == ["src/local.h", "include/shop/api.h"]  # config.h is ambiguous, stdio.h is the system's
    assert targets(paths, "src/main.c", Language.c, "#include <api.h>\n", {}) == []  # no -I, no guess
    assert targets(paths, "src/main.c", Language.c, '#include "x/config.h"\n', {}) == ["third/x/config.h"]


def test_ruby_php_and_csharp() -> None:
    ruby = ["lib/shop/cart.rb", "lib/shop.rb", "app/run.rb"]
    assert targets(
        ruby, "app/run.rb", Language.ruby, "require 'shop/cart'\nrequire 'json'\nrequire_relative '../lib/shop'\n", {}
    ) == [
        "lib/shop/cart.rb",
        "lib/shop.rb",
    ]
    php = ["src/Models/User.php", "src/Http/Controller.php", "src/helpers.php"]
    text = "<?php\nuse App\\Models\\User;\nuse Psr\\Log\\LoggerInterface;\nrequire_once __DIR__ . '/../helpers.php';\n"
    assert targets(php, "src/Http/Controller.php", Language.php, text, {}) == ["src/Models/User.php", "src/helpers.php"]
    cs = ["Shop/Api/OrdersController.cs", "Shop/Models/Order.cs"]
    text = "using System;\nusing Shop.Models;\nnamespace Shop.Api;\n"
    assert targets(cs, "Shop/Api/OrdersController.cs", Language.csharp, text, {}) == ["Shop/Models/Order.cs"]


def test_workspace_packages_resolve_through_their_exports() -> None:
    paths = [
        "packages/ui/package.json",
        "packages/ui/dist/x.js",
        "packages/ui/src/index.ts",
        "packages/ui/src/button/index.ts",
        "apps/web/main.ts",
    ]
    manifest = json.dumps(
        {
            "name": "@shop/ui",
            "exports": {".": {"types": "./src/index.ts", "default": "./dist/x.js"}, "./*": "./src/*/index.ts"},
        }
    )
    text = "import { ui } from '@shop/ui'\nimport { Button } from '@shop/ui/button'\n"
    found = targets(paths, "apps/web/main.ts", Language.typescript, text, {"packages/ui/package.json": manifest})
    assert found == ["packages/ui/src/index.ts", "packages/ui/src/button/index.ts"]
