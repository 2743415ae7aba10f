"""Local ``$ref`` resolution inside one contract directory, never over the network: a contract must mean the
same thing on every machine, offline, forever. What may be referenced: docs/contracts.md#schemas.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import quote, unquote, urldefrag, urljoin, urlsplit

from .. import _metaschemas
from .._dialects import Translation, translate
from .._id_roots import IdRoot, IdRoots, id_roots_for
from .._schema_positions import LISTS, MAPS, ONE
from .._source import SourceDocument, join_pointer, parse_document
from ..errors import InputError, Location
from ._files import DiskFiles, FileSource

__all__ = [
    "DocumentIndex",
    "RefResolver",
    "RefSite",
    "SchemaDocuments",
    "Target",
    "TranslatedDocument",
    "locate",
    "resolve_pointer",
]

#: Keywords whose value is one subschema, and those whose value is a list of them (draft 2020-12): shared by
#: every walker of schemas (bundling, models, mock data), which differ only in the maps they descend into.
SUBSCHEMA_KEYWORDS: tuple[str, ...] = ONE
SUBSCHEMA_LIST_KEYWORDS: tuple[str, ...] = LISTS
_ONE = SUBSCHEMA_KEYWORDS
_MAP = MAPS
_LIST = SUBSCHEMA_LIST_KEYWORDS
_SHAPE = {**dict.fromkeys(_ONE, 1), **dict.fromkeys(_MAP, 2), **dict.fromkeys(_LIST, 3)}
# Subschemas applied to the same instance as their parent: a cycle made only of these (and $refs) never
# reaches a property or an item, so a validator following it would loop forever.
_IN_PLACE = frozenset({"not", "if", "then", "else", "dependentSchemas", "allOf", "anyOf", "oneOf"})
# Keywords the index records; most subschemas have none, and one set intersection says so.
_NOTED = frozenset(
    {"$id", "$anchor", "$dynamicAnchor", "$schema", "$ref", "$dynamicRef", "pattern", "patternProperties"}
)
REF_KEYWORDS = ("$ref", "$dynamicRef")


class _Missing(LookupError):
    pass


def _child(pointer: str, token: str | int) -> str:
    """``join_pointer`` for one token, without the escaping work when there is nothing to escape (hot path)."""
    if isinstance(token, int):
        return f"{pointer}/{token}"
    if "~" in token or "/" in token:
        return join_pointer(pointer, token)
    return f"{pointer}/{token}"


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _replaced(data: Any, values: dict[str, Any]) -> Any:
    """``data`` with the value at each pointer of ``values`` replaced: the containers along those pointers are
    copied, everything else is shared (a deep copy of a 1.5 MB schema took ~0.1 s for a few references).

    >>> doc = {"a": {"$ref": "#/x<y>"}, "b": [1]}
    >>> out = _replaced(doc, {"/a/$ref": "#/x%3Cy%3E"})
    >>> out, doc["a"]["$ref"], out["b"] is doc["b"]
    ({'a': {'$ref': '#/x%3Cy%3E'}, 'b': [1]}, '#/x<y>', True)
    """
    copied: set[int] = set()  # the containers this call made: written in place

    def own(value: Any) -> Any:
        if id(value) in copied:
            return value
        value = dict(value) if isinstance(value, dict) else list(value)
        copied.add(id(value))
        return value

    root = own(data)
    for pointer, value in values.items():
        *path, last = [_unescape(raw) for raw in pointer[1:].split("/")]
        node = root
        for token in path:
            key: Any = int(token) if isinstance(node, list) else token
            node[key] = child = own(node[key])
            node = child
        node[int(last) if isinstance(node, list) else last] = value
    return root


def resolve_pointer(data: Any, pointer: str) -> Any:
    """The value at RFC 6901 ``pointer`` in ``data``; raises ``LookupError`` naming the first missing step.

    >>> resolve_pointer({"$defs": {"a/b": [1, 2]}}, "/$defs/a~1b/1")
    2
    """
    if pointer == "":
        return data
    if not pointer.startswith("/"):
        raise _Missing(f"{pointer!r} is not a JSON pointer (it must start with '/')")
    node = data
    seen = ""
    for raw in pointer[1:].split("/"):
        token = _unescape(raw)
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif (
            isinstance(node, list)
            and token.isdigit()
            and (token == "0" or not token.startswith("0"))
            and int(token) < len(node)
        ):
            node = node[int(token)]
        else:
            raise _Missing(f"no {token!r} at {seen or '/'}")
        seen += "/" + raw
    return node


@dataclass(frozen=True, slots=True)
class RefSite:
    """One ``$ref`` (or ``$dynamicRef``) in a document: where, which keyword, the text, the base URI there."""

    schema_pointer: str
    keyword: str
    ref: str
    base: str

    @property
    def pointer(self) -> str:
        return join_pointer(self.schema_pointer, self.keyword)


@dataclass(slots=True)
class DocumentIndex:
    """Where a document's subschemas, resources (``$id``), anchors, ``$ref``s and patterns are."""

    uri: str
    schema_pointers: set[str] = field(default_factory=set)
    resources: dict[str, str] = field(default_factory=dict)  # canonical resource URI -> pointer
    aliases: dict[str, str] = field(default_factory=dict)  # any URI naming a resource -> canonical URI
    anchors: dict[tuple[str, str], str] = field(default_factory=dict)  # (resource URI, name) -> pointer
    refs: list[RefSite] = field(default_factory=list)
    in_place: dict[str, list[str]] = field(default_factory=dict)  # pointer -> same-instance subschemas
    dialects: list[tuple[str, Any]] = field(default_factory=list)  # ($schema pointer, value)
    patterns: list[tuple[str, str]] = field(default_factory=list)  # (pointer, regex)
    bad_ids: list[tuple[str, str]] = field(default_factory=list)  # ($id pointer, value) that are no URI

    @property
    def root_base(self) -> str:
        """The base URI of the document root: its ``$id`` if it has one, else its file URI."""
        return self.aliases.get(self.uri, self.uri)

    def walk(self, data: Any, pointer: str, base: str) -> None:
        """Index the schema at ``pointer`` and everything below it (iteratively: documents can be deep)."""
        stack: list[tuple[str, Any, str]] = [(pointer, data, base)]
        while stack:
            ptr, node, base = stack.pop()
            if isinstance(node, bool):
                self.schema_pointers.add(ptr)
            elif isinstance(node, dict) and ptr not in self.schema_pointers:
                self.schema_pointers.add(ptr)
                if ptr == "" or not _NOTED.isdisjoint(node):
                    base = self._visit(ptr, node, base)
                stack.extend(self._children(ptr, node, base))

    def _visit(self, ptr: str, node: dict[str, Any], base: str) -> str:
        base = self._resource(ptr, node.get("$id"), base)
        for keyword in ("$anchor", "$dynamicAnchor"):
            name = node.get(keyword)
            if isinstance(name, str):
                self.anchors.setdefault((base, name), ptr)
        if "$schema" in node:
            self.dialects.append((join_pointer(ptr, "$schema"), node["$schema"]))
        for keyword in REF_KEYWORDS:
            ref = node.get(keyword)
            if isinstance(ref, str):
                self.refs.append(RefSite(ptr, keyword, ref, base))
        pattern = node.get("pattern")
        if isinstance(pattern, str):
            self.patterns.append((join_pointer(ptr, "pattern"), pattern))
        pattern_props = node.get("patternProperties")
        if isinstance(pattern_props, dict):
            self.patterns.extend((join_pointer(ptr, "patternProperties", p), p) for p in pattern_props)
        return base

    def _resource(self, ptr: str, ident: Any, base: str) -> str:
        """Record the resource an ``$id`` starts (the root is one anyway); return the base URI below it."""
        if isinstance(ident, str):
            try:
                new_base = urldefrag(join_uri(base, ident))[0]
            except ValueError:  # not a URI reference at all: lint reports it, the base stays as it was
                self.bad_ids.append((f"{ptr}/$id", ident))
            else:
                self.resources.setdefault(new_base, ptr)
                self.aliases.setdefault(new_base, new_base)
                if ptr == "":  # the root is known both by its file URI and by its $id
                    self.aliases[self.uri] = new_base
                return new_base
        if ptr == "":
            self.resources[base] = ""
            self.aliases[base] = base
        return base

    def _children(self, ptr: str, node: dict[str, Any], base: str) -> list[tuple[str, Any, str]]:
        out: list[tuple[str, Any, str]] = []
        for keyword, value in node.items():  # document order, one lookup per key
            shape = _SHAPE.get(keyword)
            if shape == 1:
                out.append((f"{ptr}/{keyword}", value, base))
            elif shape == 2 and isinstance(value, dict):
                at = f"{ptr}/{keyword}"
                out.extend((_child(at, name), sub, base) for name, sub in value.items())
            elif shape == 3 and isinstance(value, list):
                at = f"{ptr}/{keyword}"
                out.extend((f"{at}/{i}", sub, base) for i, sub in enumerate(value))
        if not _IN_PLACE.isdisjoint(node):
            self.in_place[ptr] = [child for child, _, _ in out if _in_place(ptr, child)]
        return out


def _in_place(parent: str, child: str) -> bool:
    keyword = child[len(parent) + 1 :].split("/", 1)[0]
    return keyword in _IN_PLACE


@dataclass(frozen=True, slots=True)
class Target:
    """Where a reference lands: a document and a JSON pointer into it."""

    document: SourceDocument
    pointer: str

    @property
    def schema(self) -> Any:
        return resolve_pointer(self.document.data, self.pointer)


class TranslatedDocument(SourceDocument):
    """A schema document written in an older dialect, held as its draft 2020-12 translation (``data``).

    Everything that reads schemas sees ``data``; ``original`` is what the file says (checked against its own
    dialect's meta-schema), and :meth:`location` names the place in the file for a pointer into ``data``.
    """

    def __init__(self, doc: SourceDocument, translation: Translation) -> None:
        super().__init__(doc.path, doc.text, translation.schema, is_yaml=doc.is_yaml, notes=doc.notes)
        self.original = doc.data
        self.translation = translation

    def location(self, pointer: str) -> Location:
        return super().location(self.translation.back(pointer))

    def original_location(self, pointer: str) -> Location:
        """The location of ``pointer`` into ``original``."""
        return super().location(pointer)


def translated_pointer(doc: SourceDocument, pointer: str) -> str:
    """Where ``pointer``, written against the file (a manifest's ``#/...``), is in the document's ``data``."""
    return doc.translation.forward(pointer) if isinstance(doc, TranslatedDocument) else pointer


def locate(doc: SourceDocument, pointer: str) -> Location:
    """``doc.location(pointer)``, degrading to no line when the line map cannot be built (deep nesting)."""
    try:
        return doc.location(pointer)
    except RecursionError:
        return Location(file=str(doc.path), pointer=pointer)


def join_uri(base: str, ref: str) -> str:
    """RFC 3986 reference resolution, also for bases like ``urn:`` that ``urljoin`` leaves alone."""
    if not ref or ref.startswith("#"):
        return urldefrag(base)[0] + ref
    return urljoin(base, ref)


def _file_uri(path: Path) -> str:
    return Path(os.path.abspath(path)).as_uri()


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


class SchemaDocuments:
    """The schema documents of one contract directory: read once, indexed once, resolved offline.

    >>> docs = SchemaDocuments(Path("contracts/orders/1.0.0"))  # doctest: +SKIP
    >>> docs.resolve_ref(docs.load(Path("contracts/orders/1.0.0/a.json")), "b.json#/$defs/X").pointer
    '/$defs/X'
    """

    def __init__(self, directory: Path, files: FileSource | None = None, *, side: tuple[IdRoot, ...] = ()) -> None:
        self.directory = Path(directory)
        self._side = side  # one side's id roots in a ``schema diff`` (--old-id-root / --new-id-root), tried first
        #: Where the files are read from: the directory itself unless told otherwise (a map of files).
        self.files: FileSource = files if files is not None else DiskFiles(self.directory)
        self._root = Path(os.path.abspath(self.directory))
        self._documents: dict[str, SourceDocument] = {}
        self._failures: dict[str, InputError] = {}
        self._indexes: dict[int, DocumentIndex] = {}
        self._resolvers: dict[int, RefResolver] = {}
        self._resolved: dict[tuple[int, str, str], Target] = {}
        self._files: dict[str, Path | str] = {}  # absolute path named by a $ref -> path to read, or "outside"
        self._metaschemas: dict[Path, SourceDocument] = {}  # bundled meta-schemas read so far (not documents())
        self._id_roots: IdRoots | None = None  # [schemas] id_roots and --id-root: read on the first URL
        self._admitted: set[str] = set()  # files outside the directory that an id root maps a URL to
        #: Every file an id root mapped a URL to (absolute) -> the entry, and the first reference read through it
        #: (``schema diff`` tells when both sides read one file so: decision 0141).
        self.mapped: dict[Path, tuple[IdRoot, SourceDocument, RefSite]] = {}
        #: URL -> the document an id root or an ``$id`` placed it at (for validators that look URLs up).
        self.placed: dict[str, SourceDocument] = {}
        self._non_uri: dict[int, dict[str, str]] = {}  # document id -> non_uri_refs of it
        #: document id -> {pointer of a $ref: the reference as the other file's 2020-12 translation needs it}
        self.moved_refs: dict[int, dict[str, str]] = {}

    # --- documents -------------------------------------------------------------------------------------

    def load(self, path: Path) -> SourceDocument:
        """Read ``path`` once; raise the :class:`InputError` of ``load_document`` (again) if it is bad."""
        key = os.path.abspath(path)
        if key in self._documents:
            return self._documents[key]
        if key in self._failures:
            raise self._failures[key]
        try:
            source = self.files if key not in self._admitted else DiskFiles(Path(key).parent)
            doc = parse_document(source.read(Path(path)), Path(path), schema=True)
            if doc.is_yaml:
                _check_expansion(doc)
        except InputError as exc:
            self._failures[key] = exc
            raise
        # Every dialect is read as the draft 2020-12 schema meaning the same.
        translation = translate(doc.data, text=doc.text)
        if not translation.identity:
            doc = TranslatedDocument(doc, translation)
        self._documents[key] = doc
        self.index(doc)
        return doc

    def index(self, doc: SourceDocument) -> DocumentIndex:
        found = self._indexes.get(id(doc))
        if found is None:
            found = DocumentIndex(_file_uri(doc.path))
            found.walk(doc.data, "", found.uri)
            self._indexes[id(doc)] = found
        return found

    def ensure_schema(self, doc: SourceDocument, pointer: str) -> bool:
        """Index the subschema at ``pointer`` if the walk did not reach it (a ref into a plain container).

        Returns True when it was not a known schema position before.
        """
        index = self.index(doc)
        if pointer in index.schema_pointers:
            return False
        index.walk(resolve_pointer(doc.data, pointer), pointer, index.root_base)
        return True

    def subschema(self, doc: SourceDocument, pointer: str) -> dict[str, Any] | bool:
        try:
            value = resolve_pointer(doc.data, pointer)
        except LookupError as exc:
            raise InputError(
                f"'{doc.path.name}#{pointer}' does not resolve: {exc}",
                code="manifest.pointer_unresolved",
                location=locate(doc, ""),
                hint=_pointer_hint(self.index(doc)),
            ) from None
        if not isinstance(value, dict | bool):
            raise InputError(
                f"'{doc.path.name}#{pointer}' is a {type(value).__name__}, not a schema",
                code="manifest.pointer_unresolved",
                location=locate(doc, pointer),
                hint="point at an object (or a boolean) schema",
            )
        return value

    def resolver(self, doc: SourceDocument) -> RefResolver:
        """The callable the JSON Schema diff engine takes for references that leave ``doc``:
        ``docs.resolver(doc)("schemas.json#/$defs/OrderLine")`` -> ``(subschema, resolver_there)``."""
        found = self._resolvers.get(id(doc))
        if found is None:
            found = self._resolvers[id(doc)] = RefResolver(self, doc)
        return found

    def runtime_data(self, doc: SourceDocument) -> Any:
        """``doc.data`` for a validator that resolves references itself: with every reference into another
        file's moved keyword (see ``moved_refs``) rewritten to where the translation has it, and every reference
        holding characters a URI may not (``#/definitions/TopLevel<Spec>``) percent-encoded, which names the
        same place (a fragment is percent-decoded before it is read as a JSON pointer)."""
        escaped = self._non_uri.get(id(doc))
        if escaped is None:
            escaped = self._non_uri[id(doc)] = non_uri_refs(self.index(doc))
        moved = {**escaped, **self.moved_refs.get(id(doc), {})}
        if not moved:
            return doc.data
        return _replaced(doc.data, moved)

    def documents(self) -> list[SourceDocument]:
        """Every document read so far, in the order it was read."""
        return list(self._documents.values())

    def bundled(self) -> list[Path]:
        """The bundled meta-schemas references reached so far (subhive/metaschemas/): not documents of the contract."""
        return list(self._metaschemas)

    # --- references ------------------------------------------------------------------------------------

    def resolve(self, doc: SourceDocument, site: RefSite) -> Target:
        """Resolve one reference; raise :class:`InputError` (``schema.ref_*``) located at the ``$ref``."""
        key = (id(doc), site.base, site.ref)
        found = self._resolved.get(key)
        if found is None:  # failures are not cached: each $ref that fails gets its own located error
            found = self._resolved[key] = self._resolve(doc, site)
        return found

    def _resolve(self, doc: SourceDocument, site: RefSite) -> Target:
        # Line numbers cost a YAML parse of the document: computed only when an error needs one.
        where = partial(locate, doc, site.pointer)
        try:
            return self._resolve_uri(doc, site, where)
        except ValueError as exc:  # urllib: "Invalid IPv6 URL" and the like
            raise InputError(
                f"{site.keyword} {site.ref!r} is not a valid URI reference ({exc})",
                code="schema.ref_invalid",
                location=where(),
                hint="write a relative path with an optional '#' fragment, e.g. 'common.json#/$defs/X'",
            ) from None

    def _resolve_uri(self, doc: SourceDocument, site: RefSite, where: Callable[[], Location]) -> Target:
        ref = site.ref
        scheme = urlsplit(ref).scheme
        if scheme == "file":
            raise InputError(
                f"{site.keyword} {ref!r} is a file: URI",
                code="schema.ref_remote",
                location=where(),
                hint="refer to files of the contract by a relative path, e.g. 'common.json#/$defs/X'",
            )
        uri, fragment = urldefrag(ref if scheme else join_uri(site.base, ref))
        fragment = unquote(fragment)
        index = self.index(doc)
        if uri in index.aliases:
            return self._within(doc, index, uri, fragment, site=site, where=where)
        bundled = _metaschemas.metaschema_path(uri)
        if bundled is not None:  # a dialect's meta-schema: bundled, never fetched (decision 0095)
            meta = self._metaschema(bundled)
            index = self.index(meta)
            return self._within(meta, index, index.uri, fragment, site=site, where=where, moved=True)
        parts = urlsplit(uri)
        if parts.scheme != "file" or parts.netloc:
            return self._by_url(doc, index, uri, fragment, site=site, where=where)
        from urllib.request import url2pathname  # urllib.request imports http, ssl, email: only here

        target = self._in_file(Path(url2pathname(parts.path)), fragment, site=site, where=where)
        if isinstance(target.document, TranslatedDocument) and target.pointer != fragment and fragment.startswith("/"):
            # Written against the other file as it reads; its translation moved the keyword (items -> prefixItems).
            moved = "#" + quote(target.pointer, safe="/~$!&'()*+,;=:@")
            self.moved_refs.setdefault(id(doc), {})[site.pointer] = ref.partition("#")[0] + moved
        return target

    def _by_url(
        self,
        doc: SourceDocument,
        index: DocumentIndex,
        uri: str,
        fragment: str,
        *,
        site: RefSite,
        where: Callable[[], Location],
    ) -> Target:
        """An absolute URL that is no ``$id`` of ``doc`` and no meta-schema: the file the referring document's
        ``$id`` places it at (decision 0096), else the file an id root maps it to (decision 0107)."""
        tried: list[str] = []
        places = self._ids().places(uri)
        by_id = _by_id(doc, index.root_base, uri)
        if by_id is not None:  # the file at the same place relative to this one as the URL to its $id
            path, lookup = by_id
            named = path.with_name(path.name + ".json")
            if not path.suffix and not self.files.is_file(path) and self.files.is_file(named):
                path = named  # catalogs serve "https://json.schemastore.org/feed-1" from feed-1.json
            elif not path.suffix:
                lookup = lookup[:-1] + f", then {named.name})"
            inside = _inside(path, self._root)
            if not places or (inside and self.files.is_file(path)):  # found, or nothing else to try
                return self._remember(
                    uri, doc, site, self._in_file(path, fragment, site=site, where=where, lookup=lookup)
                )
            outside = "" if inside else ", outside the contract directory"
            tried.append(f"{_shown(path)} (where the $id {index.root_base!r} of {doc.path.name} places it{outside})")
        for root, path in places:
            found = self._mapped(root, path, tried, site=site, where=where)
            if found is not None:
                self.mapped.setdefault(Path(os.path.abspath(found)), (root, doc, site))
                return self._remember(uri, doc, site, self._in_root(found, root, fragment, site=site, where=where))
        # An absolute URI names an $id of this document, a mapped file, the file its $id places it at, or
        # nothing: subhive has no registry of schemas by $id (a "urn:" not defined in-document is remote).
        if tried:
            raise InputError(
                f"{site.keyword} {site.ref!r} does not resolve: looked for {'; then '.join(tried)}",
                code="schema.ref_unresolved",
                location=where(),
                hint="check the file name, or the id root that maps the URL (docs/contracts.md#schemas)",
            )
        hint = (
            "subhive never fetches schemas: copy the schema into the contract directory and refer to it by a "
            "relative path"
        )
        if not urlsplit(site.ref).scheme:
            hint += f" (this relative reference was resolved against the $id {site.base!r})"
        hint += (
            "; "
            + _lookups(doc, index.root_base, uri)
            + "; or map its prefix to a local directory: [schemas] id_roots in hive.toml, or --id-root PREFIX=DIR"
        )
        raise InputError(
            f"{site.keyword} {site.ref!r} points outside the contract ({uri})",
            code="schema.ref_remote",
            location=where(),
            hint=hint,
        )

    def _remember(self, uri: str, doc: SourceDocument, site: RefSite, target: Target) -> Target:
        """Note the document ``uri`` names, for validators that look URLs up; a relative reference also by the
        URL it has against the referring file's own (jsonschema-rs may resolve it against that)."""
        self.placed.setdefault(uri, target.document)
        if not urlsplit(site.ref).scheme:
            self.placed.setdefault(urldefrag(join_uri(_file_uri(doc.path), site.ref))[0], target.document)
        return target

    def _ids(self) -> IdRoots:
        if self._id_roots is None:
            self._id_roots = id_roots_for(self._root, self._side)
        return self._id_roots

    def _mapped(
        self, root: IdRoot, path: Path, tried: list[str], *, site: RefSite, where: Callable[[], Location]
    ) -> Path | None:
        """The file to read for ``path``, which ``root`` maps a URL to (None, and the lookup noted, when it is
        missing); a path climbing out of the root's directory is ``schema.ref_escape``."""
        if root.is_tree and not (
            _inside(path, root.path) and _inside(Path(os.path.realpath(path)), Path(os.path.realpath(root.path)))
        ):
            raise InputError(
                f"{site.keyword} {site.ref!r} leaves the directory of the id root {root.describe()}",
                code="schema.ref_escape",
                location=where(),
                hint="a URL below a mapped prefix must name a file inside the mapped directory",
            )
        candidates = [path]
        if root.is_tree and not path.suffix:
            candidates.append(path.with_name(path.name + ".json"))  # "…/feed-1" is served from feed-1.json
        for candidate in candidates:
            # Inside the contract directory, its own files (a proposal's map of files); outside, the disk.
            if self.files.is_file(candidate) if _inside(candidate, self._root) else candidate.is_file():
                return candidate
        shown = " or ".join(_shown(c) for c in candidates)
        tried.append(f"{shown} (id root {root.describe()})")
        return None

    def _in_root(
        self, path: Path, root: IdRoot, fragment: str, *, site: RefSite, where: Callable[[], Location]
    ) -> Target:
        """A file an id root maps a URL to: inside the contract directory, read like any of its files;
        outside it (a directory the workspace or the command line names), read from disk."""
        if _inside(path, self._root):
            return self._in_file(path, fragment, site=site, where=where)
        key = os.path.normpath(path)
        self._admitted.add(key)
        try:
            other = self.load(Path(key))
        except InputError as exc:
            raise InputError(
                f"{site.keyword} {site.ref!r}: {key} cannot be read ({exc.code})",
                code="schema.ref_unresolved",
                location=where(),
                hint=f"fix the referenced file first (mapped by the id root {root.describe()})",
            ) from exc
        index = self.index(other)
        return self._within(other, index, index.uri, fragment, site=site, where=where, moved=True)

    def resolve_ref(self, doc: SourceDocument, ref: str) -> Target:
        """Resolve ``ref`` as written in ``doc``. When ``doc`` holds that exact reference, it is resolved against
        the base URI where it occurs (a nested ``$id`` may change it); otherwise against the document's own."""
        index = self.index(doc)
        sites = [s for s in index.refs if s.ref == ref]
        if not sites:
            return self.resolve(doc, RefSite("", "$ref", ref, index.root_base))
        targets = {(id(t.document), t.pointer): t for t in (self.resolve(doc, s) for s in sites)}
        if len(targets) > 1:
            raise InputError(
                f"$ref {ref!r} means different schemas in different places of this document (nested $id)",
                code="schema.ref_ambiguous",
                location=locate(doc, sites[0].pointer),
                hint="write the reference so that it names one schema wherever it occurs",
            )
        return next(iter(targets.values()))

    def _metaschema(self, path: Path) -> SourceDocument:
        doc = self._metaschemas.get(path)
        if doc is None:
            doc = parse_document(path.read_bytes(), path)
            translation = translate(doc.data, text=doc.text)
            doc = self._metaschemas[path] = TranslatedDocument(doc, translation) if not translation.identity else doc
        return doc

    def _in_file(
        self, path: Path, fragment: str, site: RefSite, where: Callable[[], Location], lookup: str = ""
    ) -> Target:
        key = os.path.normpath(path)
        found = self._files.get(key)
        if found is None:
            found = self._files[key] = self._check_file(Path(key))
        if isinstance(found, str):
            raise InputError(
                f"{site.keyword} {site.ref!r} leaves the contract directory{lookup}",
                code="schema.ref_escape",
                location=where(),
                hint="keep every schema a contract uses inside its directory; copy "
                "shared definitions in (accepted versions are immutable, so copies never drift)",
            )
        if not self.files.is_file(found):
            raise InputError(
                f"{site.keyword} {site.ref!r}: file {_relative(found, self._root)} not found{lookup}",
                code="schema.ref_unresolved",
                location=where(),
                hint="check the file name; references are relative to the referring file (or to its $id, which "
                "names the file's own place: docs/contracts.md#schemas)",
            )
        try:
            other = self.load(found)
        except InputError as exc:
            # The broken file gets its own problem (with its line); here, say why the reference fails.
            raise InputError(
                f"{site.keyword} {site.ref!r}: {_relative(found, self._root)} cannot be read ({exc.code})",
                code="schema.ref_unresolved",
                location=where(),
                hint="fix the referenced file first",
            ) from exc
        index = self.index(other)
        # The fragment is written against the file; its translation may have moved keywords (items -> prefixItems).
        return self._within(other, index, index.uri, fragment, site=site, where=where, moved=True)

    def _check_file(self, path: Path) -> Path | str:
        """The path to read for absolute ``path`` (named as the user named the directory), or ``"outside"``."""
        if not _inside(path, self._root) or not _inside(self.files.realpath(path), self.files.real_directory):
            return "outside"
        return Path(os.path.normpath(self.directory / path.relative_to(self._root)))

    def _within(
        self,
        doc: SourceDocument,
        index: DocumentIndex,
        uri: str,
        fragment: str,
        *,
        site: RefSite,
        where: Callable[[], Location],
        moved: bool = False,
    ) -> Target:
        canonical = index.aliases.get(uri, uri)
        root = index.resources.get(canonical, "")
        if fragment == "" or fragment.startswith("/"):
            pointer = root + fragment
            if moved and isinstance(doc, TranslatedDocument):
                pointer = doc.translation.forward(doc.translation.back(root) + fragment)
            try:
                value = resolve_pointer(doc.data, pointer)
            except LookupError as exc:
                raise InputError(
                    f"{site.keyword} {site.ref!r} does not resolve: {exc}",
                    code="schema.ref_unresolved",
                    location=where(),
                    hint=_pointer_hint(index),
                ) from None
        else:
            found = index.anchors.get((canonical, fragment))
            if found is None:
                raise InputError(
                    f"{site.keyword} {site.ref!r}: no $anchor {fragment!r} in {_relative(doc.path, self._root)}",
                    code="schema.ref_unresolved",
                    location=where(),
                    hint="declare it with \"$anchor\", or use a JSON pointer such as '#/$defs/Name'",
                )
            pointer = found
            value = resolve_pointer(doc.data, pointer)
        if not isinstance(value, dict | bool):
            raise InputError(
                f"{site.keyword} {site.ref!r} points at a {type(value).__name__}, not a schema",
                code="schema.ref_unresolved",
                location=where(),
                hint="point at an object (or boolean) schema",
            )
        return Target(doc, pointer)


def _by_id(doc: SourceDocument, root_id: str, uri: str) -> tuple[Path, str] | None:
    """The file ``uri`` names when the referring document's root ``$id`` is its own URL (decision 0096): the
    path from the ``$id``'s directory to ``uri``, taken from the document's directory. None when ``uri`` is not
    on the same host as that ``$id`` (or either is no hierarchical URL)."""
    base, target = urlsplit(root_id), urlsplit(uri)
    if not base.netloc or base.scheme == "file" or (base.scheme, base.netloc) != (target.scheme, target.netloc):
        return None
    if target.query or not target.path.startswith("/"):
        return None
    relative = posixpath.relpath(unquote(target.path), posixpath.dirname(unquote(base.path)) or "/")
    path = Path(os.path.abspath(doc.path)).parent / Path(*relative.split("/"))
    lookup = f" (looked for it where the $id {root_id!r} of {doc.path.name} places {uri!r})"
    return Path(os.path.normpath(path)), lookup


def _lookups(doc: SourceDocument, root_id: str, uri: str) -> str:
    """What was tried for an absolute ``uri``, for the error that says it was not found."""
    tried = "looked for an $id of this document"
    if urlsplit(root_id).netloc and not root_id.startswith("file:"):
        return f"{tried}, and for a file where the $id {root_id!r} of {doc.path.name} would place it (another host)"
    return f"{tried}; {doc.path.name} has no http(s) $id to place files by (decision 0096)"


def _check_expansion(doc: SourceDocument) -> None:
    """Refuse YAML whose aliases expand it far beyond its text (a "billion laughs" document): every check
    and validator would walk the expanded tree. Without aliases a document has fewer values than characters."""
    budget = max(10_000, 2 * len(doc.text))
    stack = [doc.data]
    while stack:
        budget -= 1
        if budget < 0:
            raise InputError(
                "YAML aliases expand this document far beyond its size",
                code="schema.alias_expansion",
                location=Location(file=str(doc.path)),
                hint="write the repeated parts once under $defs and refer to them with $ref",
            )
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def _relative(path: Path, root: Path) -> str:
    try:
        return str(Path(os.path.abspath(path)).relative_to(root))
    except ValueError:
        return str(path)


# What RFC 3986 allows in a URI reference besides letters, digits and "-._~" (which ``quote`` keeps anyway).
_URI_SAFE = "!$&'()*+,;=:@/?#%"


def non_uri_refs(index: DocumentIndex) -> dict[str, str]:
    """{pointer of a ``$ref``: the reference percent-encoded} for each reference holding characters a URI may not
    (``<``, ``>``, spaces, ``|``...). Validators that parse references as URIs (jsonschema-rs) refuse those."""
    found: dict[str, str] = {}
    for site in index.refs:
        quoted = quote(site.ref, safe=_URI_SAFE)
        if quoted != site.ref:
            found[site.pointer] = quoted
    return found


def _shown(path: Path) -> str:
    """``path`` as a user running the command would type it: relative to the current directory when below it."""
    relative = os.path.relpath(path)
    return relative if not relative.startswith("..") else str(path)


def _pointer_hint(index: DocumentIndex) -> str:
    defs = sorted(p for p in index.schema_pointers if p.count("/") == 2 and p.startswith(("/$defs/", "/definitions/")))
    if defs:
        shown = ", ".join("#" + p for p in defs[:5])
        return f"the document defines {shown}{', ...' if len(defs) > 5 else ''}"
    return "a JSON pointer names keys from the document root, e.g. '#/$defs/Name'"


class RefResolver:
    """Resolves references that leave a document: ``resolver("other.json#/$defs/X")`` returns the subschema
    and the resolver for the document it lives in. Same-document references (``#/$defs/X``, ``#anchor``)
    work too. An unresolvable reference raises :class:`InputError` with a ``schema.ref_*`` code.

    >>> subschema, there = resolver("schemas.json#/$defs/OrderLine")  # doctest: +SKIP
    """

    __slots__ = ("_cache", "_documents", "document")
    #: Absolute URLs may be passed: they resolve to bundled meta-schemas or to files placed by ``$id``, or fail
    #: with ``schema.ref_remote``; nothing is ever fetched (the diff engine asks only resolvers that say so).
    resolves_urls_offline: ClassVar[bool] = True

    def __init__(self, documents: SchemaDocuments, document: SourceDocument) -> None:
        self._documents = documents
        self.document = document
        self._cache: dict[str, tuple[Any, RefResolver]] = {}

    def __call__(self, ref: str) -> tuple[Any, RefResolver]:
        found = self._cache.get(ref)
        if found is None:
            target = self._documents.resolve_ref(self.document, ref)
            found = self._cache[ref] = (target.schema, self._documents.resolver(target.document))
        return found

    @property
    def translation(self) -> Translation | None:
        """How the document was translated from its dialect to draft 2020-12 (None: it is 2020-12 as written)."""
        return self.document.translation if isinstance(self.document, TranslatedDocument) else None

    def __repr__(self) -> str:
        return f"RefResolver({str(self.document.path)!r})"
