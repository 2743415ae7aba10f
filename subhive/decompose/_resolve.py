"""Resolving extracted imports to files of the repository: the edges of the import graph.
What names nothing in the repository (standard library, third-party) is counted as unresolved and ignored.
Per-language rules are on :class:`Resolver`; the summary is in docs/decompose.md#the-import-graph.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Mapping, Sequence

from ._imports import Extracted, JvmFile, PyImport
from ._resolve_more import MoreResolver

__all__ = ["Resolver"]

_MORE = (".rs", ".c", ".h", ".cc", ".cpp", ".cxx", ".hh", ".hpp", ".hxx", ".rb", ".php")
_JS_EXTENSIONS = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts", ".vue", ".svelte", ".json")
_JS_STRIP = re.compile(r"\.(m|c)?js$")
_ROOT_DIRS = frozenset({"", "src", "lib", "Lib"})
# An unclosed comment runs to the end once (not again from every later "/*": quadratic on hostile input).
_JSON_COMMENTS = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?(?:\*/|\Z)', re.S)
_GO_MODULE = re.compile(r"^module[ \t]+\"?([^\s\"]+)", re.M)
#: ``replace a/b => ./b`` (alone or inside a ``replace ( ... )`` block): a module served from a directory here
_GO_REPLACE = re.compile(r"^[ \t]*(?:replace[ \t]+)?([^\s()]+)(?:[ \t]+v[^\s]+)?[ \t]+=>[ \t]+(\.{1,2}/[^\s]*)", re.M)


def _keep_strings(match: re.Match[str]) -> str:
    text = match.group(0)
    return text if text.startswith('"') else ""


def _exports(value: object) -> dict[str, str]:
    """package.json ``exports`` as subpath -> file: a string is ``"."``; conditions (``import``, ``require``,
    ``default``...) take the first string found, in the order written."""

    def first(target: object) -> str | None:
        if isinstance(target, str):
            return target
        if isinstance(target, dict):
            for inner in target.values():
                found = first(inner)
                if found is not None:
                    return found
        return None

    if isinstance(value, str):
        return {".": value}
    if not isinstance(value, dict):
        return {}
    if not any(isinstance(k, str) and k.startswith(".") for k in value):
        target = first(value)  # conditions at the top: the package's own entry
        return {".": target} if target else {}
    out: dict[str, str] = {}
    for key, target in value.items():
        resolved = first(target)
        if isinstance(key, str) and resolved is not None:
            out[key] = resolved
    return out


def _exported(exports: Mapping[str, str], subpath: str) -> str | None:
    """The file ``subpath`` (``.``, ``./x``) of a package maps to through its exports, or None."""
    if subpath in exports:
        return exports[subpath]
    for pattern, target in exports.items():
        prefix, star, suffix = pattern.partition("*")
        if star and subpath.startswith(prefix) and subpath.endswith(suffix) and len(subpath) >= len(prefix + suffix):
            return target.replace("*", subpath[len(prefix) : len(subpath) - len(suffix)])
    return None


def _dirname(path: str) -> str:
    return path.rpartition("/")[0]


def _stem(path: str) -> str:
    name = path.rpartition("/")[2]
    dot = name.rfind(".")
    return name[:dot] if dot > 0 else name


class Resolver:
    """Indexes of the repository's files by module name, path, Go package and JVM class.

    ``paths`` are the repository's files (sorted, '/'-separated); ``side_files`` maps a path to the text
    of the few files that say how imports resolve (``go.mod``, ``package.json``).

    Per language (the summary is in docs/decompose.md#the-import-graph):

    * **Python**: a module's dotted name comes from its path below the topmost directory holding an
      ``__init__.py`` (``src/shop/db.py`` in package ``shop`` is ``shop.db``), and also from every longer
      path suffix (``src.shop.db``) so namespace packages and source roots resolve too. A top-level module
      outside any package (``tools/helper.py`` is ``helper``) is found only from its own directory or when it
      sits in the repository's root, a ``src`` or a ``lib`` directory: ``import json`` must not land on some
      ``scripts/json.py``. Relative imports resolve by path. ``from a import b`` is an edge to ``a/b.py`` when
      ``b`` is a submodule, else to ``a``. When a name has several files, the one closest to the importer wins.
    * **JavaScript/TypeScript**: relative specifiers, with the usual extensions and ``index`` files (and
      ``./x.js`` naming ``x.ts``); bare specifiers that name a package of the repository (a ``package.json``
      with a ``name``, as in a monorepo), with an optional sub-path.
    * **Go**: import paths below a ``go.mod``'s module path name a package directory; the edge goes to the
      package's anchor (its first non-test file), and the files of one package are tied to that anchor, since
      Go needs no import between them.
    * **Java/Kotlin**: ``a.b.C`` is the file declaring ``package a.b`` named ``C.java`` (``C.kt``); nested and
      static imports fall back to the enclosing class; ``a.b.*`` goes to the package's anchor. Files of one
      package are tied to the anchor as in Go.
    """

    def __init__(self, paths: Sequence[str], side_files: Mapping[str, str], root: str = "") -> None:
        self.paths = paths
        self.index = {path: i for i, path in enumerate(paths)}
        self.unresolved = 0
        self._python_index()
        self._js_packages(side_files)
        self._go_index(side_files)
        self._more = MoreResolver(paths, self.index, side_files, root)
        self._jvm_anchor: dict[str, int] = {}
        self._jvm_class: dict[str, int] = {}

    # --- indexes ------------------------------------------------------------------------------------------

    def _python_index(self) -> None:
        package_dirs = {_dirname(p) for p in self.paths if p.rpartition("/")[2] in ("__init__.py", "__init__.pyi")}
        names: dict[str, list[int]] = {}
        local: dict[str, list[int]] = {}
        for i, path in enumerate(self.paths):
            if not path.endswith((".py", ".pyi")):
                continue
            parts = path.split("/")
            parts[-1] = _stem(path)
            package = parts[-1] == "__init__"
            if package:
                parts.pop()
                if not parts:
                    continue
            # the topmost directory of the package chain: every directory below it holds an __init__.py
            top = len(parts) - 1
            while top > 0 and "/".join(parts[:top]) in package_dirs:
                top -= 1
            lone = not package and top == len(parts) - 1 and parts[top - 1] not in _ROOT_DIRS if top else False
            for length in range(len(parts) - top, len(parts) + 1):
                name = ".".join(parts[len(parts) - length :])
                # a module outside any package is importable only where its directory is on the path
                (local if lone and length == 1 else names).setdefault(name, []).append(i)
        self._py_names = names
        self._py_local = local

    def _js_packages(self, side_files: Mapping[str, str]) -> None:
        self._js_package_dirs: dict[str, str] = {}
        #: package name -> its package.json "exports": subpath ("." or "./x", maybe with one "*") -> target
        self._js_exports: dict[str, dict[str, str]] = {}
        #: tsconfig.json aliases: (directory of the tsconfig, pattern prefix, pattern suffix, target patterns)
        self._ts_paths: list[tuple[str, str, str, list[str]]] = []
        self._ts_base_urls: list[str] = []
        for path, text in sorted(side_files.items()):
            if path.rpartition("/")[2] == "tsconfig.json":
                self._tsconfig(_dirname(path), text)
            if path.rpartition("/")[2] != "package.json":
                continue
            try:
                manifest = json.loads(text)
                name = manifest.get("name")
            except (ValueError, AttributeError):
                continue
            if isinstance(name, str) and name and name not in self._js_package_dirs:
                self._js_package_dirs[name] = _dirname(path)
                self._js_exports[name] = _exports(manifest.get("exports"))

    def _tsconfig(self, directory: str, text: str) -> None:
        """``compilerOptions.baseUrl`` and ``paths`` of a tsconfig.json (JSON with comments, read leniently)."""
        try:
            options = json.loads(_JSON_COMMENTS.sub(_keep_strings, text)).get("compilerOptions") or {}
        except (ValueError, AttributeError):
            return
        if not isinstance(options, dict):
            return
        base = options.get("baseUrl")
        base_dir = posixpath.normpath(posixpath.join(directory, base)) if isinstance(base, str) else directory
        base_dir = "" if base_dir == "." else base_dir
        if isinstance(base, str):
            self._ts_base_urls.append(base_dir)
        paths = options.get("paths")
        if isinstance(paths, dict):
            for pattern, targets in sorted(paths.items()):
                if isinstance(pattern, str) and isinstance(targets, list):
                    prefix, star, suffix = pattern.partition("*")
                    resolved = [posixpath.normpath(posixpath.join(base_dir, t)) for t in targets if isinstance(t, str)]
                    self._ts_paths.append((base_dir, prefix, suffix if star else "\0", resolved))

    def _go_index(self, side_files: Mapping[str, str]) -> None:
        modules: list[tuple[str, str]] = []
        for path, text in side_files.items():
            if path.rpartition("/")[2] == "go.mod":
                match = _GO_MODULE.search(text)
                if match:
                    modules.append((match.group(1), _dirname(path)))
                for replaced, local in _GO_REPLACE.findall(text):
                    target = posixpath.normpath(posixpath.join(_dirname(path), local))
                    if not target.startswith(".."):
                        modules.append((replaced, "" if target == "." else target))
        self._go_modules = sorted(modules, key=lambda m: (-len(m[0]), m))
        self._go_anchor: dict[str, int] = {}
        for i, path in enumerate(self.paths):
            if path.endswith(".go") and not path.endswith("_test.go"):
                self._go_anchor.setdefault(_dirname(path), i)

    def add_jvm(self, i: int, unit: JvmFile) -> None:
        """Record the package of file ``i`` (call for every Java/Kotlin file before resolving any)."""
        qualified = f"{unit.package}.{_stem(self.paths[i])}" if unit.package else _stem(self.paths[i])
        self._jvm_class.setdefault(qualified, i)
        self._jvm_anchor.setdefault(unit.package, i)

    # --- resolution ---------------------------------------------------------------------------------------

    def resolve(self, i: int, extracted: Extracted, hints: Mapping[str, tuple[str, ...]] | None = None) -> list[int]:
        """The files that file ``i`` imports (deduplicated, never ``i`` itself). Afterwards :attr:`symbols`
        maps each of them to the names file ``i`` uses from it, where known (``from a import B``, an
        ``import { b }``, ``pkg.Func`` in Go via ``hints``: specifier -> names, a Java class).

        >>> resolver = Resolver(["app/__init__.py", "app/models.py", "app/views.py"], {})
        >>> resolver.resolve(2, (PyImport(1, "models", ("User",)),)), resolver.symbols
        ([1], {1: ('User',)})
        """
        found = self._found(self.paths[i], extracted, hints or {})
        out: list[int] = []
        self.symbols: dict[int, tuple[str, ...]] = {}
        for target, names in found:
            if target is None:
                self.unresolved += 1
            elif target != i:
                if target not in self.symbols:
                    out.append(target)
                self.symbols[target] = tuple(dict.fromkeys((*self.symbols.get(target, ()), *names)))
        return out

    def _found(
        self, path: str, extracted: Extracted, hints: Mapping[str, tuple[str, ...]]
    ) -> list[tuple[int | None, tuple[str, ...]]]:
        """Each import's target (None: nothing here) with the names used from it, by the file's language."""
        found: list[tuple[int | None, tuple[str, ...]]] = []
        if isinstance(extracted, JvmFile):
            for name in extracted.imports:
                found.append((self._jvm(name), () if name.endswith("*") else (name.rpartition(".")[2],)))
        elif path.endswith(".go"):
            found = [(self._go(spec), hints.get(spec, ())) for spec in extracted if isinstance(spec, str)]
        elif path.endswith(_MORE):
            found = [(self._more.resolve(path, spec), ()) for spec in extracted if isinstance(spec, str)]
        elif path.endswith((".py", ".pyi")):
            for spec in extracted:
                if isinstance(spec, PyImport):
                    for target in self._python(path, spec):
                        stem = _stem(self.paths[target]) if target is not None else ""
                        found.append((target, tuple(n for n in spec.names if n != stem)))
        else:
            found = [(self._js(path, spec), hints.get(spec, ())) for spec in extracted if isinstance(spec, str)]
        return found

    def cohesion(self, i: int, extracted: Extracted) -> int | None:
        """The anchor that file ``i`` is tied to without an import (same Go or JVM package), or None."""
        path = self.paths[i]
        if isinstance(extracted, JvmFile):
            anchor = self._jvm_anchor.get(extracted.package)
        elif path.endswith(".go"):
            anchor = self._go_anchor.get(_dirname(path))
        else:
            return None
        return anchor if anchor is not None and anchor != i else None

    def _python(self, path: str, spec: PyImport) -> list[int | None]:
        if spec.level:
            base = _dirname(path)
            for _ in range(spec.level - 1):
                base = _dirname(base)
            module = "/".join(filter(None, (base, *spec.module.split(".")))) if spec.module else base
            return self._python_relative(module, spec.names)
        found: list[int | None] = []
        attributes = not spec.names
        for name in spec.names:
            submodule = self._python_exact(path, f"{spec.module}.{name}")
            if submodule is None:
                attributes = True
            else:
                found.append(submodule)
        if attributes:
            found.append(self._python_name(path, spec.module))
        return found

    def _python_relative(self, module: str, names: tuple[str, ...]) -> list[int | None]:
        found: list[int | None] = []
        for name in names:
            target = self._python_file(f"{module}/{name}" if module else name)
            if target is not None:
                found.append(target)
        return found or [self._python_file(module)]

    def _python_file(self, base: str) -> int | None:
        for candidate in (f"{base}.py", f"{base}/__init__.py", f"{base}.pyi", f"{base}/__init__.pyi"):
            target = self.index.get(candidate.lstrip("/"))
            if target is not None:
                return target
        return None

    def _python_exact(self, path: str, name: str) -> int | None:
        candidates = self._py_names.get(name)
        if candidates is None and "." not in name:
            local = self._py_local.get(name)
            here = _dirname(path)
            candidates = [c for c in local if _dirname(self.paths[c]) == here] if local else None
        if not candidates:
            return None
        return candidates[0] if len(candidates) == 1 else self._closest(path, candidates)

    def _python_name(self, path: str, dotted: str) -> int | None:
        """The file of ``dotted`` or of its closest enclosing package (``import a.b.c`` loads ``a.b``)."""
        name = dotted
        while name:
            target = self._python_exact(path, name)
            if target is not None:
                return target
            name = name.rpartition(".")[0]
        return None

    def _closest(self, path: str, candidates: list[int]) -> int:
        def shared(candidate: int) -> tuple[int, str]:
            return (-len(posixpath.commonprefix([path, self.paths[candidate]])), self.paths[candidate])

        return min(candidates, key=shared)

    def _js(self, path: str, spec: str) -> int | None:
        if spec.startswith(("./", "../")) or spec in (".", ".."):
            return self._js_file(posixpath.normpath(posixpath.join(_dirname(path), spec)))
        if spec.startswith("/") or ":" in spec:
            return None
        aliased = self._ts_alias(spec)
        if aliased is not None:
            return aliased
        parts = spec.split("/")
        width = 2 if spec.startswith("@") else 1
        package = "/".join(parts[:width])
        directory = self._js_package_dirs.get(package)
        if directory is None:
            return None
        exported = _exported(self._js_exports.get(package, {}), "/".join([".", *parts[width:]]))
        if exported is not None:
            found = self._js_file(posixpath.normpath(posixpath.join(directory or ".", exported)))
            if found is not None:
                return found
        return self._js_file("/".join(filter(None, (directory, *parts[width:]))) or ".", package=True)

    def _ts_alias(self, spec: str) -> int | None:
        """A bare specifier through tsconfig ``paths`` (``@app/*`` -> ``src/app/*``), then ``baseUrl``."""
        for _, prefix, suffix, targets in self._ts_paths:
            if suffix == "\0":
                if spec != prefix:
                    continue
                middle = ""
            elif spec.startswith(prefix) and spec.endswith(suffix) and len(spec) >= len(prefix) + len(suffix):
                middle = spec[len(prefix) : len(spec) - len(suffix)]
            else:
                continue
            for target in targets:
                found = self._js_file(target.replace("*", middle, 1))
                if found is not None:
                    return found
        for base in self._ts_base_urls:
            found = self._js_file(f"{base}/{spec}" if base else spec)
            if found is not None:
                return found
        return None

    def _js_file(self, base: str, *, package: bool = False) -> int | None:
        if base.startswith("../") or base == "..":
            return None
        base = "" if base == "." else base
        exact = self.index.get(base)
        if exact is not None:
            return exact
        stripped = _JS_STRIP.sub("", base)
        for candidate in (stripped, base):
            for ext in _JS_EXTENSIONS:
                target = self.index.get(candidate + ext)
                if target is not None:
                    return target
        roots = [base, f"{base}/src"] if package else [base]
        for root in roots:
            for ext in _JS_EXTENSIONS:
                target = self.index.get(f"{root}/index{ext}".lstrip("/"))
                if target is not None:
                    return target
        return None

    def _go(self, spec: str) -> int | None:
        for module, directory in self._go_modules:
            if spec == module or spec.startswith(module + "/"):
                rest = spec[len(module) + 1 :]
                return self._go_anchor.get("/".join(filter(None, (directory, rest))))
        return None

    def infer_go_modules(self, specs: list[str]) -> None:
        """Without a ``go.mod`` (a GOPATH checkout, Debian's Go sources) the module path is guessed: the
        prefix most import paths share before a tail that names a package directory here
        (``github.com/docker/docker`` + ``api/types``). Only prefixes at least half as common as the best
        count, so ``github.com/pkg/errors`` does not land on some ``errors/`` of the repository."""
        if self._go_modules:
            return
        hits: dict[str, int] = {}
        for spec in specs:
            parts = spec.split("/")
            if "." not in parts[0]:
                continue  # the standard library
            for start in range(1, len(parts)):
                if "/".join(parts[start:]) in self._go_anchor:
                    prefix = "/".join(parts[:start])
                    hits[prefix] = hits.get(prefix, 0) + 1
                    break
        if hits:
            best = max(hits.values())
            chosen = [prefix for prefix, count in hits.items() if count >= max(2, best / 2)]
            self._go_modules = sorted(((prefix, "") for prefix in chosen), key=lambda m: (-len(m[0]), m))

    def _jvm(self, spec: str) -> int | None:
        if spec in self._jvm_anchor and spec not in self._jvm_class:  # a C# namespace, a Java package
            return self._jvm_anchor[spec]
        if spec.endswith(".*"):
            package = spec[:-2]
            anchor = self._jvm_anchor.get(package)
            return anchor if anchor is not None else self._jvm_class.get(package)
        name = spec
        while "." in name:
            target = self._jvm_class.get(name)
            if target is not None:
                return target
            name = name.rpartition(".")[0]
        return None
