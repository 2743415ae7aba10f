"""Import extraction per language, from text alone."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from subhive.decompose import Language, extract, language_of
from subhive.decompose._imports import JvmFile, PyImport, symbols_used


def test_python_forms() -> None:
    text = (
        "import os, sys as system\n"
        "import a.b.c\n"
        "from . import sibling\n"
        "from ..pkg.mod import (\n    One,\n    Two as Deux,\n)\n"
        "from x import *\n"
        "    from inner import thing  # indented imports count too\n"
        "# import commented  (a comment line is not an import)\n"
    )
    found = extract(Language.python, text)
    assert isinstance(found, tuple)
    assert PyImport(0, "os") in found
    assert PyImport(0, "sys") in found
    assert PyImport(0, "a.b.c") in found
    assert PyImport(1, "", ("sibling",)) in found
    assert PyImport(2, "pkg.mod", ("One", "Two")) in found
    assert PyImport(0, "x", ()) in found
    assert PyImport(0, "inner", ("thing",)) in found
    assert not any(i.module == "commented" for i in found if isinstance(i, PyImport))


def test_python_lines_continued_by_a_backslash() -> None:
    text = (
        "from shop.money import Amount, \\\n    Currency, \\\r\n    Rate as R\n"
        "import os, \\\n    json\n"
        "from . import a \\\n\nimport later\n"  # a backslash before an empty line: the statement ends there
        "from shop.tax \\\n    import vat\n"  # not a top-level module "vat"
    )
    found = extract(Language.python, text)
    assert isinstance(found, tuple)
    assert PyImport(0, "shop.money", ("Amount", "Currency", "Rate")) in found
    assert {PyImport(0, "os"), PyImport(0, "json"), PyImport(1, "", ("a",)), PyImport(0, "later")} <= set(found)
    assert PyImport(0, "shop.tax", ("vat",)) in found
    assert PyImport(0, "vat") not in found


def test_javascript_forms() -> None:
    text = (
        "import React from 'react'\n"
        'import { a } from "./a"\n'
        "import './side-effect.css'\n"
        "export * from '../b.js'\n"
        "const c = require('./c')\n"
        "const d = await import('./d')\n"
    )
    assert extract(Language.javascript, text) == ("react", "./a", "./side-effect.css", "../b.js", "./c", "./d")


def test_go_single_and_block_imports() -> None:
    text = 'package main\n\nimport "fmt"\nimport (\n\t"example.com/x/store"\n\tapi "example.com/x/api"\n)\n'
    assert extract(Language.go, text) == ("fmt", "example.com/x/store", "example.com/x/api")


def test_java_package_and_imports() -> None:
    text = (
        "package com.shop;\n\nimport com.shop.model.*;\nimport static com.shop.Util.helper;\nimport java.util.List;\n"
    )
    assert extract(Language.java, text) == JvmFile(
        "com.shop", ("com.shop.model.*", "com.shop.Util.helper", "java.util.List")
    )


def test_languages_by_extension() -> None:
    assert language_of("a/b.py") is Language.python
    assert language_of("a/b.tsx") is Language.typescript
    assert language_of("a/b.jsx") is Language.javascript
    assert language_of("a/b.go") is Language.go
    assert language_of("A.kt") is Language.java
    assert language_of("a.d/README") is None
    assert language_of("notes.md") is None


def test_go_symbols_used_per_import_in_one_pass() -> None:
    text = (
        'package shop\n\nimport (\n\t"fmt"\n\tdb "example.com/shop/store/v2"\n\t"example.com/shop/go-cart"\n'
        '\t_ "example.com/shop/side"\n)\n\n'
        "func F() { db.Get(); db.Put(); db.Get(); cart.Total(); fmt.Println(); x.db.Hidden(); mydb.Not() }\n"
    )
    specs = ("fmt", "example.com/shop/store/v2", "example.com/shop/go-cart", "example.com/shop/side")
    assert symbols_used(Language.go, text, specs) == {
        "fmt": ("Println",),
        "example.com/shop/store/v2": ("Get", "Put", "Hidden"),  # a field named like the alias counts too
        "example.com/shop/go-cart": ("Total",),  # named without its go- prefix
    }


_WORDS = st.sampled_from(["db", "fmt", "cart", "xdb", "Get", "Put", "_a", "db2", "v2"])
_GLUE = st.sampled_from([".", " ", "(", ")", ".\n", "\t", "..", "x."])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_WORDS, _GLUE), max_size=40))
def test_go_symbols_used_agrees_with_a_search_per_alias(pieces: list[tuple[str, str]]) -> None:
    """The single pass over the text finds what one regular expression per import alias found before."""
    header = 'import (\n\t"example.com/m/db"\n\tc "example.com/m/cart"\n\t"fmt"\n)\n'
    body = "".join(word + glue for word, glue in pieces)
    specs = ("example.com/m/db", "example.com/m/cart", "fmt")
    expected: dict[str, tuple[str, ...]] = {}
    for spec, alias in (("example.com/m/db", "db"), ("example.com/m/cart", "c"), ("fmt", "fmt")):
        used = re.findall(rf"\b{alias}\.([A-Z]\w*)", header + body)
        if used:
            expected[spec] = tuple(dict.fromkeys(used))
    assert symbols_used(Language.go, header + body, specs) == expected
