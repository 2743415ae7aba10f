"""How subhive reads a real collection of schemas: SchemaStore's catalog, every dialect as it is written.

    .venv/bin/python benchmarks/corpus_schemastore.py --src ~/schemastore/src          # a table
    .venv/bin/python benchmarks/corpus_schemastore.py --src ~/schemastore/src --json   # one JSON object

``--src`` is the ``src/`` directory of a checkout of https://github.com/SchemaStore/schemastore (not vendored:
tens of megabytes). Each schema of ``schemas/json`` is linted alone, as ``subhive contract lint FILE`` would;
the figures are how many are accepted as they are, and per problem code how many files it refuses (issue #16
targets >= 99% accepted). For the accepted schemas, each positive (``test/<name>/``) and negative
(``negative_test/<name>/``) document is validated the way the bus validates (the bundled draft 2020-12
translation, jsonschema-rs, formats not asserted here so that the comparison is about dialects), and compared
with python-jsonschema's validator of the schema's own dialect on the schema as written: ``agreement`` is the
share of documents both judge alike (the translation is meant to make it 1.0). Last, consecutive versions of
one schema in the catalog (``foo-1.2.json`` then ``foo-1.3.json``) are compared with ``schema diff``'s
engine: ``version_pairs_diffed`` counts the pairs compared without an error (issue #16 targets >= 99%).
"""

from __future__ import annotations

import collections
import itertools
import json
import re
import sys
import tomllib
from pathlib import Path
from typing import Any

import jsonschema_rs
import yaml
from _common import parser, render
from jsonschema.validators import validator_for

from subhive.codegen.bundle import bundle
from subhive.compat import diff_files
from subhive.contract import lint_paths, load_schema_file
from subhive.errors import SubhiveError

_VERSIONED = re.compile(r"(.+?)[-_.]?v?(\d+(?:\.\d+)*)(?:\.x)?(-preview)?$")


def _document(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        return json.loads(text)
    if path.suffix in (".yaml", ".yml"):
        return yaml.safe_load(text)
    if path.suffix == ".toml":
        return tomllib.loads(text)
    raise ValueError(path.suffix)


def _agreement(src: Path, schema: Path, counts: collections.Counter[str]) -> None:
    original = json.loads(schema.read_text(encoding="utf-8"))
    ours = jsonschema_rs.validator_for(bundle(load_schema_file(schema)), validate_formats=False)
    reference = validator_for(original)(original)
    for folder in (src / "test" / schema.stem, src / "negative_test" / schema.stem):
        for path in sorted(folder.iterdir()) if folder.is_dir() else ():
            try:
                data = _document(path)
                agree = ours.is_valid(data) == reference.is_valid(data)
            except Exception:  # an unreadable test document, or one a validator cannot take
                counts["documents_skipped"] += 1
                continue
            counts["documents"] += 1
            counts["documents_agreeing"] += agree


def _version_pairs(schemas: list[Path]) -> list[tuple[Path, Path]]:
    families: dict[str, list[tuple[tuple[int, ...], Path]]] = collections.defaultdict(list)
    for schema in schemas:
        match = _VERSIONED.match(schema.stem)
        if match:
            families[match.group(1)].append((tuple(int(n) for n in match.group(2).split(".")), schema))
    pairs: list[tuple[Path, Path]] = []
    for versions in families.values():
        versions.sort()
        pairs += [(old, new) for (_, old), (_, new) in itertools.pairwise(versions)]
    return pairs


def main(argv: list[str] | None = None) -> int:
    args_parser = parser(__doc__.splitlines()[0])
    args_parser.add_argument("--src", type=Path, required=True, help="SchemaStore's src/ directory")
    args = args_parser.parse_args(argv)
    schemas = sorted((args.src / "schemas" / "json").glob("*.json"))
    refused: collections.Counter[str] = collections.Counter()
    counts: collections.Counter[str] = collections.Counter()
    for schema in schemas:
        result = lint_paths([schema])
        refused.update({p.code for p in result.problems})
        if result.ok:
            counts["accepted"] += 1
            _agreement(args.src, schema, counts)
    pairs = _version_pairs(schemas)
    for old, new in pairs:
        try:
            diff_files(old, new)
        except SubhiveError:
            continue
        counts["version_pairs_diffed"] += 1
    figures: dict[str, Any] = {
        "schemas": len(schemas),
        "accepted": counts["accepted"],
        "accepted_share": counts["accepted"] / max(1, len(schemas)),
        **{f"refused_by {code}": n for code, n in refused.most_common()},
        "test_documents": counts["documents"],
        "agreement": counts["documents_agreeing"] / max(1, counts["documents"]),
        "documents_skipped": counts["documents_skipped"],
        "version_pairs": len(pairs),
        "version_pairs_diffed": counts["version_pairs_diffed"],
    }
    print(render("SchemaStore catalog", figures, as_json=args.json))
    return 0


if __name__ == "__main__":
    sys.exit(main())
