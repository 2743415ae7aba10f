"""How subhive reads a real collection of schemas: SchemaStore's catalog, every dialect as it is written.

    .venv/bin/python benchmarks/corpus_schemastore.py --src ~/schemastore/src                 # a table
    .venv/bin/python benchmarks/corpus_schemastore.py --src ~/schemastore/src --json          # one JSON object
    .venv/bin/python benchmarks/corpus_schemastore.py --src ~/schemastore/src --git ~/schemastore/.git --list

``--src`` is the ``src/`` directory of a checkout of https://github.com/SchemaStore/schemastore (not vendored:
tens of megabytes). The catalog is read the way SchemaStore lays it out, through id roots (decision 0107): both
of its hosts (``json.`` and ``www.schemastore.org``) name ``schemas/json``, and a schema whose ``$id`` is on
another host is found at its file (SchemaStore's own tests register every schema by its ``$id``).

Each schema of ``schemas/json`` is linted alone, as ``subhive contract lint FILE`` would. The figures: how many
are accepted as they are (issue #16 targets >= 99%), over the whole catalog and over the schemas SchemaStore's
own tests read (its ``skiptest`` list names the ones that only ``$ref`` a schema kept on another site, which
nobody can read offline); per problem code how many files it refuses; how many accepted schemas are compatible
with themselves (``schema diff`` of a file against itself). Each positive (``test/<name>/``) and negative
(``negative_test/<name>/``) document is validated as the bus validates (the bundle, jsonschema-rs, formats
asserted): ``positives_valid`` and ``negatives_invalid`` count the ones judged as the test expects, and each
other case is listed (``--list``) with its reason: a format the bus asserts, the schema as written judging it
so too (python-jsonschema, the schema's own dialect), or the 2020-12 reading differing. ``agreement`` compares
the bus's validation without formats with python-jsonschema's on every document (the translation is meant to
make it 1.0). Last, version pairs are compared with ``schema diff``'s engine: consecutive versions kept side by
side in the catalog (``foo-1.2.json`` then ``foo-1.3.json``) and, with ``--git``, consecutive versions of the
most-changed schemas from SchemaStore's git history, each read beside the catalog as it was at the commit that
wrote it (the neighbours it refers to, transitively, as they were then; the others as they are now);
``*_diffed`` counts the pairs compared without an error (issue #16 targets >= 99%), and
``history_pairs_with_a_refused_version`` those where a version, so read, does not lint on its own.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import jsonschema_rs
import yaml
from _common import parser, render
from jsonschema.validators import validator_for

from subhive._id_roots import extra_id_roots
from subhive.codegen.bundle import bundle
from subhive.compat import diff_files
from subhive.contract import lint_paths, load_schema_file
from subhive.errors import SubhiveError

_VERSIONED = re.compile(r"(.+?)[-_.]?v?(\d+(?:\.\d+)*)(?:\.x)?(-preview)?$")
HOSTS = ("https://json.schemastore.org/", "https://www.schemastore.org/")


class _Yaml12(yaml.SafeLoader):
    """YAML 1.2's core schema, as SchemaStore's tests read YAML: only true and false are booleans (not YAML 1.1's
    yes, no, on, off) and dates stay text."""


_Yaml12.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in ("tag:yaml.org,2002:bool", "tag:yaml.org,2002:timestamp")]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Yaml12.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


def _document(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        return json.loads(text)
    if path.suffix in (".yaml", ".yml"):
        return yaml.load(text, Loader=_Yaml12)  # a SafeLoader, with YAML 1.2's booleans
    if path.suffix == ".toml":
        return tomllib.loads(text)
    raise ValueError(path.suffix)


def id_roots(directory: Path) -> dict[str, Path]:
    """SchemaStore's layout as id roots: both hosts name the directory; an ``$id`` elsewhere names its file."""
    roots: dict[str, Path] = dict.fromkeys(HOSTS, directory)
    for path in sorted(directory.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            continue
        ident = data.get("$id", data.get("id")) if isinstance(data, dict) else None
        if not isinstance(ident, str) or not ident.startswith(("http://", "https://")):
            continue
        url = ident.split("#", 1)[0]
        if url and not url.startswith(HOSTS) and "json-schema.org/" not in url and not url.endswith("/"):
            roots.setdefault(url, path)  # the first file (by name) claiming an $id keeps it
    return roots


def _skiptest(src: Path) -> set[str]:
    """The schemas SchemaStore's own tests skip: those that only refer to a schema kept on another site."""
    path = src / "schema-validation.jsonc"
    if not path.is_file():
        return set()
    text = re.sub(r"(?m)(^|\s)//[^\n]*", r"\1", path.read_text(encoding="utf-8"))  # "https://" keeps its //
    return set(json.loads(text).get("skiptest", []))


def _reason(bus_plain: bool, reference: bool, expected: bool) -> str:
    if bus_plain == expected:
        return "format asserted by the bus (decision 0009)"
    if reference != expected:
        return "the schema as written judges it so too (python-jsonschema, its own dialect)"
    return "the 2020-12 reading differs from the schema's own dialect"


def _documents(src: Path, schema: Path, counts: collections.Counter[str], cases: list[dict[str, Any]]) -> None:
    original = json.loads(schema.read_text(encoding="utf-8"))
    bundled = bundle(load_schema_file(schema))
    bus = jsonschema_rs.validator_for(bundled, validate_formats=True)
    plain = jsonschema_rs.validator_for(bundled, validate_formats=False)
    reference = validator_for(original)(original)
    for kind, folder in (("positive", src / "test" / schema.stem), ("negative", src / "negative_test" / schema.stem)):
        for path in sorted(folder.iterdir()) if folder.is_dir() else ():
            try:
                data = _document(path)
                verdict, bus_plain, ref_verdict = bus.is_valid(data), plain.is_valid(data), reference.is_valid(data)
            except Exception:  # an unreadable test document, or one a validator cannot take
                counts["documents_skipped"] += 1
                continue
            expected = kind == "positive"
            counts["documents"] += 1
            counts["documents_agreeing"] += bus_plain == ref_verdict
            counts[f"{kind}s"] += 1
            counts["positives_valid" if expected else "negatives_invalid"] += verdict == expected
            if verdict != expected:
                reason = _reason(bus_plain, ref_verdict, expected)
                counts[f"{kind}_cases: {reason}"] += 1
                where = f"{path.parent.parent.name}/{path.parent.name}/{path.name}"
                shown = "valid" if expected else "invalid"
                cases.append({"schema": schema.name, "document": where, "expected": shown, "reason": reason})


def _catalog_pairs(schemas: list[Path]) -> list[tuple[Path, Path]]:
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


def _git(git: Path, *args: str) -> str:
    return subprocess.run(["git", "--git-dir", str(git), *args], capture_output=True, text=True, check=True).stdout


class _Objects:
    """One ``git cat-file --batch`` for every read: a subprocess per blob would cost more than some diffs."""

    def __init__(self, git: Path) -> None:
        self._process = subprocess.Popen(
            ["git", "--git-dir", str(git), "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )

    def read(self, name: str) -> bytes | None:
        """The blob ``name`` (a sha, or ``commit:path``), or None when there is none (or a partial clone lacks it)."""
        stdin, stdout = self._process.stdin, self._process.stdout
        if stdin is None or stdout is None:  # never: both are pipes
            raise RuntimeError("git cat-file has no pipes")
        stdin.write(name.encode() + b"\n")
        stdin.flush()
        header = stdout.readline().split()
        if len(header) != 3:  # "<name> missing", "<name> ambiguous"
            return None
        content = stdout.read(int(header[2]) + 1)[:-1]  # and its trailing newline
        return content if header[1] == b"blob" else None

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        self._process.wait()


def _neighbours(objects: _Objects, commit: str, name: str, content: bytes, others: dict[str, str]) -> dict[str, bytes]:
    """The catalog files ``content`` (file ``name``) refers to, transitively, each as it was at ``commit``:
    ``$ref``s to either host, relative ones, and URLs an ``$id`` on another host places (``others``)."""
    found: dict[str, bytes] = {}
    todo = [(name, content)]
    while todo:
        here, text = todo.pop()
        try:
            data = json.loads(text)
        except ValueError:
            continue
        ident = data.get("$id", data.get("id")) if isinstance(data, dict) else None
        base = ident if isinstance(ident, str) and ident.startswith(("http://", "https://")) else HOSTS[0] + here
        for ref in _refs(data):
            url = urljoin(base, ref.split("#", 1)[0])
            host = next((h for h in HOSTS if url.startswith(h)), None)
            target = others.get(url) or (url[len(host) :] if host else None)
            if not target or "/" in target or target == name or target in found:
                continue
            target = target if target.endswith(".json") else target + ".json"  # ".../feed-1" is feed-1.json
            blob = objects.read(f"{commit}:src/schemas/json/{target}")
            if blob is not None:  # else it did not exist then: the newest stays
                found[target] = blob
                todo.append((target, blob))
    return found


def _refs(data: Any) -> Iterator[str]:
    todo = [data]
    while todo:
        value = todo.pop()
        if isinstance(value, dict):
            ref = value.get("$ref")
            if isinstance(ref, str) and not ref.startswith("#"):
                yield ref
            todo.extend(value.values())
        elif isinstance(value, list):
            todo.extend(value)


def history(git: Path, names: set[str], schemas: int, versions: int) -> Iterator[tuple[str, list[tuple[str, str]]]]:
    """(file name, its last ``versions`` distinct blobs, oldest first, each with the commit that wrote it) for the
    ``schemas`` most-changed files."""
    changed = collections.Counter(
        line for line in _git(git, "log", "--format=", "--name-only", "--", "src/schemas/json").splitlines() if line
    )
    chosen = [p for p, _ in changed.most_common() if p.rsplit("/", 1)[-1] in names][:schemas]
    for path in chosen:
        raw = _git(
            git, "log", "--format=%H", "--raw", "--no-abbrev", "--no-renames", "-n", str(versions * 4), "--", path
        )
        blobs: list[tuple[str, str]] = []
        commit = ""
        for line in raw.splitlines():
            fields = line.split()
            if len(fields) == 1:  # "%H": the commit whose changes follow
                commit = fields[0]
            # ":100644 100644 <old blob> <new blob> M\tpath": the new blob, unless deleted or the same as the last
            # (then the older commit, which wrote it)
            elif len(fields) >= 5 and not fields[4].startswith("D") and fields[3] != "0" * 40:
                if blobs and blobs[-1][0] == fields[3]:
                    blobs[-1] = (fields[3], commit)
                else:
                    blobs.append((fields[3], commit))
        yield path.rsplit("/", 1)[-1], list(reversed(blobs[:versions]))


def _history_pairs(
    git: Path,
    directory: Path,
    *,
    skipped: set[str],
    count: int,
    versions: int,
    counts: collections.Counter[str],
    cases: list[dict[str, Any]],
) -> list[tuple[float, str]]:
    """Diff consecutive versions from git history, of the schemas SchemaStore's tests read (not those that only
    refer to another site). Each version is written beside the catalog as it was at the commit that wrote it: hard
    links to the newest catalog, over which the files the version refers to (transitively) are written as they
    were then; its own ``hive.toml`` maps the catalog's id roots to that directory, so a URL finds them too.
    Returns the CPU seconds each pair took (the machine may be shared: the clock would count other work), with
    the pair's name."""
    seconds: list[tuple[float, str]] = []
    names = {p.name for p in directory.glob("*.json")}
    others = {url: path.name for url, path in id_roots(directory).items() if url not in HOSTS}
    table = "[schemas.id_roots]\n" + "".join(
        f"{json.dumps(url)} = {json.dumps(target)}\n" for url, target in {**dict.fromkeys(HOSTS, "."), **others}.items()
    )
    objects = _Objects(git)
    # The sides' hive.toml replaces the id roots main() set for the newest catalog.
    with tempfile.TemporaryDirectory() as tmp, extra_id_roots({}):
        sides = [Path(tmp) / "old", Path(tmp) / "new"]
        for side in sides:
            side.mkdir()
            (side / "hive.toml").write_text(table, encoding="utf-8")
            for name in names:
                os.link(directory / name, side / name)
        for name, blobs in history(git, names - skipped, count, versions):
            contents = [objects.read(sha) for sha, _ in blobs]
            for index, (old, new) in enumerate(itertools.pairwise(contents)):
                counts["history_pairs"] += 1
                if old is None or new is None:
                    counts["history_pairs_unavailable"] += 1
                    continue
                written: list[set[str]] = []
                for side, content, (_, commit) in zip(sides, (old, new), blobs[index : index + 2], strict=True):
                    then = {name: content, **_neighbours(objects, commit, name, content, others)}
                    for file, data in then.items():
                        (side / file).unlink(missing_ok=True)
                        (side / file).write_bytes(data)
                    written.append(set(then))
                start = time.process_time()
                try:
                    diff_files(sides[0] / name, sides[1] / name)
                except SubhiveError as exc:
                    # Is it the engine, or is a version refused on its own (a $ref to a list, a duplicate key)?
                    alone = [lint_paths([side / name]).problems for side in sides]
                    refused = [p[0].code for p in alone if p]
                    counts["history_pairs_with_a_refused_version"] += bool(refused)
                    message = exc.message[:200]
                    # The first problem of a refused version, with the file it is in (often a neighbour).
                    first = next((f"{Path(p[0].location.file or '').name}: {p[0]}"[:300] for p in alone if p), None)
                    cases.append({"pair": f"{name} (git history)", "code": exc.code, "message": message,
                                  "refused_alone": refused, "first_problem": first})  # fmt: skip
                    continue
                finally:
                    shas = f"{blobs[index][0][:10]}..{blobs[index + 1][0][:10]}"
                    seconds.append((time.process_time() - start, f"{name} {shas}"))
                    for side, files in zip(sides, written, strict=True):  # back to the newest catalog
                        for file in files:
                            (side / file).unlink()
                            if file in names:
                                os.link(directory / file, side / file)
                counts["history_pairs_diffed"] += 1
    objects.close()
    return seconds


def _catalog_schema(
    src: Path,
    schema: Path,
    *,
    skipped: set[str],
    refused: collections.Counter[str],
    counts: collections.Counter[str],
    cases: list[dict[str, Any]],
) -> None:
    """Lint one catalog schema as it is, diff it with itself, and check its test documents."""
    result = lint_paths([schema])
    refused.update({p.code for p in result.problems})
    if not result.ok:
        first = result.problems[0]
        cases.append({"refused": schema.name, "code": first.code, "message": first.message[:200],
                      "skiptest": schema.name in skipped})  # fmt: skip
        # schema diff reads what a contract may not hold: a remote $ref, compared by its URI (decision 0141)
        with contextlib.suppress(SubhiveError):
            same = diff_files(schema, schema)
            counts["diff_reads_as_is"] += same.backward and same.forward
        return
    counts["accepted"] += 1
    counts["accepted_read_by_schemastore"] += schema.name not in skipped
    try:
        same = diff_files(schema, schema)
        counts["self_compatible"] += same.backward and same.forward
        counts["diff_reads_as_is"] += same.backward and same.forward
        if not (same.backward and same.forward):
            codes = sorted({c.code for c in same.changes})
            cases.append({"not_self_compatible": schema.name, "codes": codes})
    except SubhiveError as exc:
        cases.append({"not_self_compatible": schema.name, "codes": [exc.code]})
    _documents(src, schema, counts, cases)


def main(argv: list[str] | None = None) -> int:
    args_parser = parser(__doc__.splitlines()[0])
    args_parser.add_argument("--src", type=Path, required=True, help="SchemaStore's src/ directory")
    args_parser.add_argument("--git", type=Path, help="SchemaStore's git directory: version pairs from its history")
    args_parser.add_argument("--history", type=int, default=30, help="how many of the most-changed schemas (30)")
    args_parser.add_argument("--versions", type=int, default=11, help="how many versions of each (11)")
    args_parser.add_argument("--list", action="store_true", help="also list every case not as expected")
    args = args_parser.parse_args(argv)
    directory = args.src / "schemas" / "json"
    schemas = sorted(directory.glob("*.json"))
    skipped = _skiptest(args.src)
    refused: collections.Counter[str] = collections.Counter()
    counts: collections.Counter[str] = collections.Counter()
    cases: list[dict[str, Any]] = []
    with extra_id_roots(id_roots(directory)):
        for schema in schemas:
            _catalog_schema(args.src, schema, skipped=skipped, refused=refused, counts=counts, cases=cases)
        pairs = _catalog_pairs(schemas)
        for old, new in pairs:
            try:
                diff_files(old, new)
            except SubhiveError as exc:
                cases.append({"pair": f"{old.name} -> {new.name}", "code": exc.code, "message": exc.message[:200]})
                continue
            counts["version_pairs_diffed"] += 1
        seconds = (
            _history_pairs(
                args.git,
                directory,
                skipped=skipped,
                count=args.history,
                versions=args.versions,
                counts=counts,
                cases=cases,
            )
            if args.git
            else []
        )
    read = len([s for s in schemas if s.name not in skipped])
    figures: dict[str, Any] = {
        "schemas": len(schemas),
        "accepted": counts["accepted"],
        "accepted_share": counts["accepted"] / max(1, len(schemas)),
        "schemas_schemastore_tests_read": read,
        "accepted_of_those": counts["accepted_read_by_schemastore"],
        "accepted_share_of_those": counts["accepted_read_by_schemastore"] / max(1, read),
        **{f"refused_by {code}": n for code, n in refused.most_common()},
        "self_compatible": counts["self_compatible"],
        "schema_diff_reads_as_is": counts["diff_reads_as_is"],
        "schema_diff_reads_as_is_share": round(counts["diff_reads_as_is"] / max(1, len(schemas)), 3),
        "test_documents": counts["documents"],
        "positives_valid": f"{counts['positives_valid']} / {counts['positives']}",
        "negatives_invalid": f"{counts['negatives_invalid']} / {counts['negatives']}",
        **{key: n for key, n in sorted(counts.items()) if "_cases: " in key},
        "agreement": counts["documents_agreeing"] / max(1, counts["documents"]),
        "documents_skipped": counts["documents_skipped"],
        "version_pairs": len(pairs),
        "version_pairs_diffed": counts["version_pairs_diffed"],
    }
    if args.git:
        available = counts["history_pairs"] - counts["history_pairs_unavailable"]
        figures |= {
            "history_pairs": counts["history_pairs"],
            "history_pairs_unavailable": counts["history_pairs_unavailable"],
            "history_pairs_diffed": counts["history_pairs_diffed"],
            "history_diffed_share": counts["history_pairs_diffed"] / max(1, available),
            "history_pairs_with_a_refused_version": counts["history_pairs_with_a_refused_version"],
            "history_diffed_share_of_valid_pairs": counts["history_pairs_diffed"]
            / max(1, available - counts["history_pairs_with_a_refused_version"]),
            "history_slowest_cpu_s": round(max(seconds, default=(0.0, ""))[0], 3),
            "history_slowest_pair": max(seconds, default=(0.0, ""))[1],
        }
    if args.list:
        figures["cases"] = cases if args.json else "\n  " + "\n  ".join(json.dumps(c) for c in cases)
    print(render("SchemaStore catalog", figures, as_json=args.json))
    return 0


if __name__ == "__main__":
    sys.exit(main())
