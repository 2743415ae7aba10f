"""``decompose(path)``: the I/O shell around the pure parts. It lists and reads files (``_discover``), builds the
import graph (``_roles``, ``_imports``, ``_resolve``), cuts it (``_split``) and names the hives (``_naming``).
See docs/decompose.md.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError, Location
from ..workspace import ROOT_HIVE
from ._cycles import leaf_cycles, merge_mutual
from ._discover import discover, read_file
from ._imports import Extracted, JvmFile, Language, extract, language_of, paths_named, symbols_used
from ._model import Budget, Crossing, Cycle, DecompositionPlan, HivePlan, PlanStats
from ._naming import HiveNames, contract_for, dominant_directory
from ._refine import CYCLE_MARGIN
from ._resolve import Resolver
from ._roles import Role, classify, dominant_role
from ._split import Graph, Node, Strategy, split
from ._units import Unit, find_units, split_units

__all__ = ["decompose"]

Progress = Callable[[str], None]
Reading = Callable[[int, int], None]
_SIDE_FILES = frozenset({"go.mod", "package.json", "tsconfig.json", "Cargo.toml", "compile_commands.json"})
_PROGRESS_EVERY = 20_000
_READING_EVERY = 500
#: Languages whose import lines alone do not say which names are used: read from the text (symbols_used).
_HINTED = frozenset({Language.javascript, Language.typescript, Language.go})
#: The share of a leaf's files (percent) its directory must hold; the text output counts the rest.
MOSTLY = 80


def decompose(
    path: str | Path,
    budget: Budget | None = None,
    *,
    exclude: Sequence[str] = (),
    strategy: Strategy | str = Strategy.graph,
    progress: Progress | None = None,
    reading: Reading | None = None,
) -> DecompositionPlan:
    """Plan the sub-hives of the repository at ``path`` so that every leaf fits ``budget``.

    Raises :class:`InputError` when ``path`` does not exist (``decompose.not_found``), is not a directory
    (``decompose.not_a_directory``), cannot be listed (``decompose.unreadable``) or holds no file to plan
    (``decompose.empty``). Files it cannot use are skipped and counted, never fatal. ``progress`` hears what
    is done, a line at a time; ``reading(done, total)`` how many files were read so far, for a progress bar.

    >>> plan = decompose("shop", Budget(max_files=50))  # doctest: +SKIP
    >>> plan.stats.edges_total, plan.stats.edges_cut  # doctest: +SKIP
    (412, 37)
    """
    budget = budget or Budget()
    strategy = Strategy(strategy)
    say = progress or (lambda _message: None)
    root = _check_root(path)
    listing = discover(root, exclude)
    say(f"listed {len(listing.paths):,} files ({listing.source})")
    graph, extracted, side_files, skipped, languages, linking = _read(
        root, listing.paths, budget, say, reading or (lambda _done, _total: None)
    )
    skipped.update(listing.skipped)
    if not graph.paths:
        shown = ", ".join(f"{count} {reason}" for reason, count in sorted(skipped.items()))
        raise InputError(
            f"nothing to decompose in {root}: no readable file" + (f" ({shown} skipped)" if shown else ""),
            code="decompose.empty",
            location=Location(file=str(root)),
            hint="point at a repository with files; in a git checkout only tracked files count",
        )
    edges, unresolved, symbols = _link(graph, extracted, side_files, linking, str(root))
    graph.imports = [(i, j) for i, j in edges if graph.roles[i] is not Role.tests]
    say(f"import graph: {len(graph.paths):,} files, {len(edges):,} edges")
    tree = split(graph, budget, strategy)
    production = graph.imports
    if strategy is Strategy.graph:
        merge_mutual(tree, graph, production, budget)
    say("split done")
    hives = _hives(tree, graph, root)
    crossings, cut, test_cut = _crossings(hives, graph, edges, symbols)
    cycles = _cycles(hives, crossings, graph, production)
    leaf_of = {path: index for index, hive in enumerate(hives) if hive.leaf for path in hive.files}
    units = find_units(graph.paths)
    placed = [leaf_of[p] for p in graph.paths]
    broken = split_units(units, placed, graph.sizes, budget.max_files, budget.max_bytes)
    big = _big_units(units, graph.paths, placed, graph.sizes, budget)
    pairs = {(c.consumer, c.provider) for c in crossings}
    made = _cycles_made(tree, graph, hives, leaf_of, pairs)
    stats = PlanStats(
        files=len(graph.paths),
        bytes=sum(graph.sizes),
        edges_total=len(edges),
        edges_cut=cut,
        unresolved=unresolved,
        languages=languages,
        skipped=dict(skipped),
        test_edges=sum(1 for i, _ in edges if graph.roles[i] is Role.tests),
        test_edges_cut=test_cut,
        units=len(units),
        units_split=len(broken),
        one_file_leaves=sum(1 for hive in hives if hive.leaf and hive.file_count == 1),
        mutual_pairs=sum(1 for a, b in pairs if a < b and (b, a) in pairs),
        units_too_big=len(big),
    )
    return DecompositionPlan(
        str(root),
        listing.source,
        budget,
        strategy.value,
        tuple(hives),
        tuple(crossings),
        stats,
        tuple(cycles),
        tuple(
            _warnings(tree, graph, budget)
            + _big_warning(big, hives, graph, budget)
            + _tests_warning(hives, graph)
            + _made_warning(made)
        ),
        tuple(made),
    )


def _cycles(
    hives: list[HivePlan], crossings: list[Crossing], graph: Graph, production: list[tuple[int, int]]
) -> list[Cycle]:
    leaves = [hive for hive in hives if hive.leaf]
    index = {path: i for i, path in enumerate(graph.paths)}
    groups = leaf_cycles([[index[p] for p in hive.files] for hive in leaves], production, len(graph.paths))
    counts = {(c.consumer, c.provider): len(c.edges) for c in crossings}
    out: list[Cycle] = []
    for group in groups:
        names = sorted(leaves[k].name for k in group)
        inside = set(names)
        links = tuple((a, b, n) for (a, b), n in sorted(counts.items()) if a in inside and b in inside)
        out.append(Cycle(tuple(names), links))
    return out


def _warnings(tree: Node, graph: Graph, budget: Budget) -> list[str]:
    """A byte budget that split nodes the file budget alone would have kept whole."""
    bound = 0

    def visit(node: Node) -> None:
        nonlocal bound
        if node.leaf:
            return
        files = list(node.all_files())
        if len(files) <= budget.max_files and sum(graph.sizes[f] for f in files) > budget.max_bytes:
            bound += 1
        for child in node.children:
            visit(child)

    visit(tree)
    if not bound:
        return []
    return [
        f"the byte budget ({budget.max_bytes:,} bytes) binds before the file budget ({budget.max_files:,} files): "
        f"{bound:,} hive(s) within the file budget were split for their bytes; raise --max-bytes if that is not "
        "what you meant"
    ]


#: How many pairs, units or files a warning names.
_PAIRS_NAMED = 5
_KINDS = {
    "python": "Python package",
    "javascript": "package",
    "rust": "crate",
    "rust_module": "Rust module",
    "go_module": "Go module",
    "go": "Go package",
    "java": "Java/Kotlin package",
}


def _big_units(
    units: Sequence[Unit], paths: Sequence[str], placed: Sequence[int], sizes: Sequence[int], budget: Budget
) -> list[tuple[Unit, list[int]]]:
    """The units too big for one leaf whose own files (those directly in its directory: all of a Go or Java
    package) the plan had to put in several leaves, with those files. A package is split along its
    subpackages first (decision 0078), which is no news; its own files cut apart are."""
    out: list[tuple[Unit, list[int]]] = []
    for unit in units:
        if len(unit.files) <= budget.max_files and sum(sizes[f] for f in unit.files) <= budget.max_bytes:
            continue
        own = [f for f in unit.files if paths[f].rpartition("/")[0] == unit.directory]
        if len({placed[f] for f in own}) > 1:
            out.append((unit, own))
    return out


def _big_warning(
    big: Sequence[tuple[Unit, list[int]]], hives: Sequence[HivePlan], graph: Graph, budget: Budget
) -> list[str]:
    """Units whose own files were cut apart because the unit exceeds the budget, with the hives they lie in;
    a Go or JVM package split so is the worst case: its files use each other without imports, references
    the cut does not count."""
    if not big:
        return []
    owner = {path: hive.name for hive in hives if hive.leaf for path in hive.files}
    shown = []
    for unit, own in sorted(big, key=lambda item: (-len(item[1]), item[0].directory))[:_PAIRS_NAMED]:
        names = sorted({owner[graph.paths[f]] for f in own})
        size = sum(graph.sizes[f] for f in unit.files)
        shown.append(
            f"{_KINDS.get(unit.kind, unit.kind)} {unit.directory or '.'}/ ({len(unit.files):,} files, "
            + (f"{size / 1e6:.1f} MB" if size >= 100_000 else f"{size:,} bytes")
            + ("" if len(own) == len(unit.files) else f"; {len(own):,} of them directly in it")
            + f") over {len(names)} hives: "
            + ", ".join(names[:4])
            + (", ..." if len(names) > 4 else "")
        )
    more = f"; and {len(big) - _PAIRS_NAMED} more" if len(big) > _PAIRS_NAMED else ""
    package = any(unit.kind in ("go", "java") for unit, _ in big)
    return [
        f"{len(big):,} unit(s) too big for one leaf ({budget.max_files:,} files, {budget.max_bytes:,} bytes) had "
        f"their files cut apart: {'; '.join(shown)}{more}"
        + (
            "; the files of a Go or Java package use each other without imports: the cut does not count those "
            "references"
            if package
            else ""
        )
    ]


def _tests_warning(hives: Sequence[HivePlan], graph: Graph) -> list[str]:
    """Leaves of tests that hold files that are not tests: the split keeps a package with more tests than code
    whole (refinement never moves code in, decision 0144), and a person should know before handing it out."""
    role = {path: graph.roles[k] for k, path in enumerate(graph.paths)}
    found: list[tuple[str, list[str]]] = []
    for hive in hives:
        if hive.leaf and hive.role is Role.tests:
            others = [path for path in hive.files if role[path] is not Role.tests]
            if others:
                found.append((hive.name, others))
    if not found:
        return []
    shown = "; ".join(
        f"{name} ({len(others):,}: {', '.join(others[:3])}{', ...' if len(others) > 3 else ''})"
        for name, others in found[:_PAIRS_NAMED]
    )
    more = f"; and {len(found) - _PAIRS_NAMED} more" if len(found) > _PAIRS_NAMED else ""
    return [f"{len(found):,} hive(s) of tests also hold files that are not tests: {shown}{more}"]


def _cycles_made(
    tree: Node, graph: Graph, hives: list[HivePlan], leaf_of: Mapping[str, int], pairs: set[tuple[str, str]]
) -> list[tuple[str, str]]:
    """The pairs of leaves (names, sorted) importing each other both ways because a refinement move was worth
    it (decision 0125), so a person sees which cycles were a choice."""
    made: set[tuple[str, str]] = set()
    for a, b in tree.made_mutual:
        if a.files and b.files:  # neither merged away since
            x, y = (hives[leaf_of[graph.paths[leaf.files[0]]]].name for leaf in (a, b))
            if x != y and (x, y) in pairs and (y, x) in pairs:
                made.add((min(x, y), max(x, y)))
    return sorted(made)


def _made_warning(made: list[tuple[str, str]]) -> list[str]:
    if not made:
        return []
    named = ", ".join(f"{x} <-> {y}" for x, y in made[:_PAIRS_NAMED])
    more = f" and {len(made) - _PAIRS_NAMED:,} more" if len(made) > _PAIRS_NAMED else ""
    return [
        f"refinement made {len(made):,} pair(s) of hives import each other both ways, where moving code cut at "
        f"least {CYCLE_MARGIN} import edges more than keeping them one-way would: {named}{more} (listed in cycles; "
        "cut by hand the ones not worth a cyclic contract)"
    ]


@dataclass(frozen=True, slots=True)
class Linking:
    """What reading the files found besides imports: per file, the names used from each import specifier
    (JS/TS, Go) and the file paths named in its strings (for owners)."""

    hints: dict[int, dict[str, tuple[str, ...]]]
    references: dict[int, tuple[str, ...]]


def _check_root(path: str | Path) -> Path:
    root = Path(os.path.abspath(path))
    if not os.path.lexists(root):
        raise InputError(
            f"{root} does not exist",
            code="decompose.not_found",
            location=Location(file=str(root)),
            hint="name the repository's directory, e.g. subhive decompose .",
        )
    if not root.is_dir():
        raise InputError(
            f"{root} is not a directory",
            code="decompose.not_a_directory",
            location=Location(file=str(root)),
            hint="name the repository's directory, not a file in it",
        )
    if not os.access(root, os.R_OK | os.X_OK):
        raise InputError(
            f"{root} cannot be read",
            code="decompose.unreadable",
            location=Location(file=str(root)),
            hint="check its permissions",
        )
    return Path(os.path.realpath(root))


def _read(
    root: Path, paths: list[str], budget: Budget, say: Progress, reading: Reading
) -> tuple[Graph, list[Extracted | None], dict[str, str], Counter[str], dict[str, int], Linking]:
    kept: list[str] = []
    sizes: list[int] = []
    roles: list[Role] = []
    extracted: list[Extracted | None] = []
    side_files: dict[str, str] = {}
    skipped: Counter[str] = Counter()
    languages: Counter[str] = Counter()
    hints: dict[int, dict[str, tuple[str, ...]]] = {}
    references: dict[int, tuple[str, ...]] = {}
    for count, path in enumerate(paths, 1):
        if count % _PROGRESS_EVERY == 0:
            say(f"read {count:,}/{len(paths):,} files")
        if count % _READING_EVERY == 0 or count == len(paths):
            reading(count, len(paths))
        language = language_of(path)
        side = path.rpartition("/")[2] in _SIDE_FILES
        result = read_file(root / path, limit=budget.max_bytes, want_text=language is not None or side)
        if result.skipped is not None:
            skipped[result.skipped] += 1
            continue
        kept.append(path)
        sizes.append(result.size)
        roles.append(classify(path))
        if side and result.text is not None:
            side_files[path] = result.text
        if language is not None and result.text is not None:
            found = extract(language, result.text)
            extracted.append(found)
            named = paths_named(result.text)
            if named:
                references[len(kept) - 1] = named
            if language in _HINTED and found and isinstance(found, tuple):
                used = symbols_used(language, result.text, tuple(f for f in found if isinstance(f, str)))
                if used:
                    hints[len(kept) - 1] = used
            languages[language.value] += 1
        else:
            extracted.append(None)
    graph = Graph(kept, sizes, roles, [{} for _ in kept])
    return graph, extracted, side_files, skipped, dict(languages), Linking(hints, references)


def _link(
    graph: Graph,
    extracted: list[Extracted | None],
    side_files: dict[str, str],
    linking: Linking,
    root: str = "",
) -> tuple[list[tuple[int, int]], int, dict[tuple[int, int], tuple[str, ...]]]:
    """Resolve every file's imports; fill ``graph.adjacency``; return the directed import edges.

    The adjacency the split works on is the import graph with three changes: a test file is tied only to the
    code it tests (its targets in the directory it imports most), so a test importing two packages never
    glues them together; files of one Go or JVM package are tied to its anchor; and a file without imports
    (a template, a translation, a config) is tied to the code that owns it (:func:`_owners`)."""
    resolver = Resolver(graph.paths, side_files, root)
    go_specs: list[str] = []
    for i, found in enumerate(extracted):
        if isinstance(found, JvmFile):
            resolver.add_jvm(i, found)
        elif found and graph.paths[i].endswith(".go"):
            go_specs.extend(spec for spec in found if isinstance(spec, str))
    resolver.infer_go_modules(go_specs)
    adjacency = graph.adjacency

    def tie(i: int, j: int) -> None:
        adjacency[i][j] = adjacency[i].get(j, 0) + 1
        adjacency[j][i] = adjacency[j].get(i, 0) + 1

    edges: list[tuple[int, int]] = []
    symbols: dict[tuple[int, int], tuple[str, ...]] = {}
    for i, found in enumerate(extracted):
        if not found:
            continue
        targets = resolver.resolve(i, found, linking.hints.get(i))
        edges.extend((i, j) for j in targets)
        for j, names in resolver.symbols.items():
            if names:
                symbols[(i, j)] = names
        for j in _subjects(graph, targets) if graph.roles[i] is Role.tests else targets:
            tie(i, j)
        anchor = resolver.cohesion(i, found)
        if anchor is not None:  # files of one Go or JVM package belong together without importing each other
            tie(i, anchor)
    for i, other in (*_owners(graph.paths, linking.references), *_namesakes(graph), *_namesakes(graph)):
        tie(i, other)  # a namesake twice: the name says more than one import
    return edges, resolver.unresolved, symbols


_TEST_AFFIXES = re.compile(r"^(?:test_(?P<a>.+)|(?P<b>.+?)(?:_test|\.test|\.spec|_spec|Tests?|Spec))$")


def _namesakes(graph: Graph) -> list[tuple[int, int]]:
    """A test file and the source it is named after, beside it (``cart_test.go`` and ``cart.go``,
    ``Cart.test.ts`` and ``Cart.ts``, ``CartTest.java`` and ``Cart.java``, ``test_cart.py`` and ``cart.py``):
    Go and Java tests import nothing from their own package, so only the name says what they test."""
    by_stem: dict[tuple[str, str], int] = {}
    for i, path in enumerate(graph.paths):
        if graph.roles[i] is not Role.tests:
            directory, _, name = path.rpartition("/")
            stem, dot, ext = name.rpartition(".")
            if dot:
                by_stem.setdefault((directory, stem + "." + ext), i)
    out: list[tuple[int, int]] = []
    for i, path in enumerate(graph.paths):
        if graph.roles[i] is not Role.tests:
            continue
        directory, _, name = path.rpartition("/")
        stem, dot, ext = name.rpartition(".")
        match = _TEST_AFFIXES.match(stem) if dot else None
        if match is None:
            continue
        subject = by_stem.get((directory, (match.group("a") or match.group("b")) + "." + ext))
        if subject is not None:
            out.append((i, subject))
    return out


def _subjects(graph: Graph, targets: list[int]) -> list[int]:
    """What a test file tests: its targets that are not tests themselves, in the directory it imports most."""
    code = [j for j in targets if graph.roles[j] is not Role.tests] or targets
    directories = Counter(graph.paths[j].rpartition("/")[0] for j in code)
    if not directories:
        return []
    best = min(directories, key=lambda d: (-directories[d], d))
    return [j for j in code if graph.paths[j].rpartition("/")[0] == best]


_ENTRY_STEMS = ("__init__", "index", "mod", "lib", "main", "package-info", "doc")


def _owners(paths: Sequence[str], references: Mapping[int, tuple[str, ...]]) -> list[tuple[int, int]]:
    """Each file whose imports are not read (templates, translations, fixtures, configs, docs, assets) and
    the code that owns it: the code files naming it by path in a string (``render("cart/list.html")``), when
    any does and the path names one file only; else the entry file of the nearest directory at or above it
    holding code."""
    referenced = _referenced(paths, references)
    anchors: dict[str, int] = {}
    for i, path in enumerate(paths):
        if language_of(path) is None:
            continue
        directory, _, name = path.rpartition("/")
        best = anchors.get(directory)
        if best is None or (name.partition(".")[0] in _ENTRY_STEMS and _entry_rank(paths[best]) > _entry_rank(path)):
            anchors[directory] = i
    out: list[tuple[int, int]] = []
    for i, path in enumerate(paths):
        if language_of(path) is not None:
            continue
        if i in referenced:
            out.extend((i, code) for code in referenced[i])
            continue
        directory = path.rpartition("/")[0]
        while True:
            owner = anchors.get(directory)
            if owner is not None:
                out.append((i, owner))
                break
            if not directory:
                break
            directory = directory.rpartition("/")[0]
    return out


def _referenced(paths: Sequence[str], references: Mapping[int, tuple[str, ...]]) -> dict[int, list[int]]:
    """Non-code file -> the code files whose strings name it: a string matches the one non-code file whose
    path ends with it (up to its last three segments); a string naming several files names none."""
    if not references:
        return {}
    by_suffix: dict[str, list[int]] = {}
    for i, path in enumerate(paths):
        if language_of(path) is None:
            parts = path.split("/")
            for depth in range(1, min(3, len(parts)) + 1):
                by_suffix.setdefault("/".join(parts[-depth:]), []).append(i)
    out: dict[int, list[int]] = {}
    for code, strings in sorted(references.items()):
        for text in strings:
            key = "/".join(text.removeprefix("./").split("/")[-3:])
            found = by_suffix.get(key)
            if found is not None and len(found) == 1 and code not in out.get(found[0], []):
                out.setdefault(found[0], []).append(code)
    return out


def _entry_rank(path: str) -> int:
    stem = path.rpartition("/")[2].partition(".")[0]
    return _ENTRY_STEMS.index(stem) if stem in _ENTRY_STEMS else len(_ENTRY_STEMS)


def _hives(tree: Node, graph: Graph, root: Path) -> list[HivePlan]:
    """Name the nodes of the split (names: :func:`_wanted`) and describe them, parents before children."""
    names = HiveNames()
    out: list[HivePlan | None] = []
    repository = root.name or "repo"

    def where(node: Node, paths: list[str]) -> str:
        """A leaf's directory, from its files, never from where the split started it (refinement may have
        emptied the repository's top-level leaf and filled it from ``server/``): the deepest directory holding
        most (80%) of them, else more than half; the output counts the files outside it. An inner hive keeps
        the directory the split cut it from."""
        if not node.leaf or not paths:
            return node.directory
        return dominant_directory(paths, percent=MOSTLY) or dominant_directory(paths)

    def visit(node: Node, parent: str, above: str, shared: bool, depth: int) -> str:
        files = sorted(node.all_files())
        paths = [graph.paths[f] for f in files]
        directory = where(node, paths)
        roles = Counter(graph.roles[f] for f in files)
        role = dominant_role(roles)
        wanted = _wanted(paths, directory, above, repository, shared=shared)
        name = names.claim_first(wanted, parent=parent, fallback=role.value)
        position = len(out)
        out.append(None)
        children = tuple(visit_all(node.children, name, directory, depth + 1))
        out[position] = HivePlan(
            name=name,
            parent=parent,
            role=role,
            path=directory or ".",
            files=tuple(paths) if node.leaf else (),
            children=children,
            file_count=len(files),
            bytes=sum(graph.sizes[f] for f in files),
            roles=dict(roles),
            depth=depth,
            outside=sum(1 for p in paths if not _within(p, directory)),
        )
        return name

    def visit_all(nodes: list[Node], parent: str, above: str, depth: int) -> list[str]:
        directories = [where(child, [graph.paths[f] for f in child.all_files()]) for child in nodes]
        counts = Counter(directories)
        return [
            visit(child, parent, above, counts[directory] > 1 or directory == above, depth)
            for child, directory in zip(nodes, directories, strict=True)
        ]

    visit_all(tree.children, ROOT_HIVE, "\0", 1)
    return [hive for hive in out if hive is not None]


def _within(path: str, directory: str) -> bool:
    return not directory or path.startswith(directory + "/")


def _wanted(paths: list[str], directory: str, above: str, repository: str, *, shared: bool) -> list[str]:
    """Names a maintainer recognises, best first: the hive's directory relative to its parent's
    (``models_fields`` below ``django/db``); a hive that shares its directory with its parent or a sibling
    adds the first and last entry it covers (``locale_af_fr``); the repository's root is named after it."""
    segment = directory.rpartition("/")[2] or repository
    if shared:
        prefix = f"{directory}/" if directory else ""
        entries = Counter(_entry(path[len(prefix) :]) for path in paths if path.startswith(prefix))
        if not entries:
            return [segment]
        ranked = sorted(entries, key=lambda e: (-entries[e], e))
        if entries[ranked[0]] > 1 and entries[ranked[0]] * 3 >= len(paths):  # one entry dominates: name it
            return [f"{segment}_{ranked[0]}", *(f"{segment}_{ranked[0]}_{e}" for e in ranked[1:3])]
        first, last = min(entries), max(entries)
        return [f"{segment}_{first}_{last}", f"{segment}_{ranked[0]}"]
    if above != "\0" and above and directory.startswith(above + "/"):
        segments = directory[len(above) + 1 :].split("/")
        return ["_".join(segments[-2:]), "_".join(segments[-3:])]
    segments = directory.split("/") if directory else [repository]
    return [segments[-1], "_".join(segments[-2:]), "_".join(segments[-3:])]


def _entry(below: str) -> str:
    """The first path segment of ``below``, a file by its stem."""
    head, slash, _ = below.partition("/")
    return head if slash else head.partition(".")[0] or head


def _crossings(
    hives: list[HivePlan],
    graph: Graph,
    edges: list[tuple[int, int]],
    symbols: dict[tuple[int, int], tuple[str, ...]],
) -> tuple[list[Crossing], int, int]:
    """The crossings between leaves, and how many import edges cross: from code, from tests. An edge from a
    test file never makes a contract: a test reaching into another hive is that hive's business."""
    owner: dict[str, str] = {path: hive.name for hive in hives if hive.leaf for path in hive.files}
    roles = {hive.name: hive.role for hive in hives}
    grouped: dict[tuple[str, str], list[tuple[str, str]]] = {}
    used: dict[tuple[str, str], Counter[tuple[str, str]]] = {}
    test_cut = 0
    for i, j in edges:
        a, b = graph.paths[i], graph.paths[j]
        consumer, provider = owner[a], owner[b]
        if consumer == provider:
            continue
        if graph.roles[i] is Role.tests:
            test_cut += 1
        else:
            grouped.setdefault((consumer, provider), []).append((a, b))
            names = symbols.get((i, j))
            if names:
                used.setdefault((consumer, provider), Counter()).update((name, b) for name in names)
    crossings = [
        Crossing(
            consumer,
            provider,
            contract_for(provider, roles[provider]),
            tuple(sorted(pairs)),
            tuple(
                (name, target, count)
                for (name, target), count in sorted(
                    used.get((consumer, provider), Counter()).items(), key=lambda item: (-item[1], item[0])
                )
            ),
        )
        for (consumer, provider), pairs in sorted(grouped.items())
    ]
    return crossings, sum(len(c.edges) for c in crossings), test_cut
