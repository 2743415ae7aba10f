"""Schema documents, positions inside them, and ``$ref`` resolution for the JSON Schema diff engine.
Resolution happens here and nowhere else; see docs/compat-codes.md#json-schema (References).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import Any, TypeAlias
from urllib.parse import unquote, urljoin

import jsonschema_rs
import orjson

from .. import _metaschemas
from .._dialects import Translation, dialect_of, looks_like, names_no_draft, translate
from ..errors import InputError, Location, SubhiveError
from ._js_meta import surely_valid

__all__ = [
    "SCHEMA_LISTS",
    "SCHEMA_MAPS",
    "SCHEMA_ONE",
    "Doc",
    "Library",
    "Node",
    "RefResolver",
    "Unresolved",
    "check_schema",
]

#: Resolves the document part of a non-local ``$ref`` (``"other.json"``, relative to the referring
#: document) to ``(document root, resolver for references inside that document)``, or None when it cannot.
RefResolver: TypeAlias = Callable[[str], "tuple[Any, RefResolver | None] | None"]

DRAFT_2020_12 = frozenset(
    {"https://json-schema.org/draft/2020-12/schema", "https://json-schema.org/draft/2020-12/schema#"}
)

# Keywords whose values are schemas, used to find $id and $anchor without mistaking a property named
# "$id" (or a "$id" inside an enum value) for an identifier.
SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
SCHEMA_ONE = (
    "additionalProperties",
    "unevaluatedProperties",
    "propertyNames",
    "items",
    "unevaluatedItems",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "contentSchema",
)
SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_GROUPS = frozenset(SCHEMA_MAPS + SCHEMA_LISTS)
_SCHEMA_SINGLE = frozenset(SCHEMA_ONE)
_AT_SCHEMA, _AT_GROUP, _LOST = range(3)  # where _locate is: at a schema, in a map or list of them, elsewhere
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")


class Unresolved:
    """Why a reference could not be followed; becomes an unprovable change. ``uri``: the absolute URI (with its
    fragment) of a remote reference, never fetched: the same one on both sides is the same target (decision 0141)."""

    __slots__ = ("code", "message", "uri")

    def __init__(self, code: str, message: str, uri: str | None = None) -> None:
        self.code = code
        self.message = message
        self.uri = uri


class Doc:
    """One parsed schema document: the old or new root, or a file reached through a resolver.

    ``root`` is draft 2020-12: a document in an older dialect is compared as its translation (``subhive._dialects``),
    and changes are reported at the pointers of the document as written (``shown``)."""

    __slots__ = ("_index", "_shown", "name", "prefix", "resolver", "root", "translation", "uid")

    def __init__(
        self,
        root: Any,
        *,
        uid: int,
        name: str | None = None,
        resolver: RefResolver | None = None,
        translation: Translation | None = None,
    ) -> None:
        self.root = root
        self.uid = uid
        self.name = name
        self.prefix = "" if name is None else f"{name}#"
        self.resolver = resolver
        self.translation = translation
        self._index: _Index | None = None
        self._shown: dict[str, str] = {}  # see shown

    def shown(self, ptr: str) -> str:
        """Where ``ptr`` (into ``root``) is in the document as written."""
        if self.translation is None:
            return self.prefix + ptr
        found = self._shown.get(ptr)
        if found is None:  # every change's path is asked for, most more than once
            found = self._shown[ptr] = self.prefix + self.translation.back(ptr)
        return found

    def written(self, ptr: str) -> str:
        """Where ``ptr``, written against the document, is in ``root``."""
        return ptr if self.translation is None else self.translation.forward(ptr)

    def node(self, ptr: str = "", base: str | None = None) -> Node:
        """The subschema at ``ptr``; ``base`` is the pointer of its schema resource (found when not given)."""
        if base is None:
            value, base = _locate(self.root, ptr)
            return Node(self, ptr, ptr, value, base)
        return Node(self, ptr, ptr, _navigate(self.root, ptr), base)

    @property
    def index(self) -> _Index:
        if self._index is None:
            self._index = _Index(self.root)
        return self._index


class Node:
    """A subschema: ``value`` is a dict or a bool; ``key`` identifies it for memoisation.

    ``path`` is where changes inside it are reported: its own pointer, or, for the target of a ``$ref``
    compared against an inline schema (see ``Engine._through_refs``), the pointer of that reference with
    the target's inner tokens appended (``shown``). It never takes part in memoisation.
    """

    __slots__ = ("base", "doc", "key", "ptr", "shown", "value")

    def __init__(self, doc: Doc, ptr: str, key: str, value: Any, base: str, *, shown: str | None = None) -> None:
        self.doc = doc
        self.ptr = ptr
        self.key = key
        self.value = value
        self.base = base
        self.shown = shown

    def __repr__(self) -> str:
        return f"Node({self.path!r})"

    @property
    def path(self) -> str:
        """Where to report a change: a JSON pointer, prefixed by ``file#`` outside the root document."""
        return self.doc.shown(self.ptr) if self.shown is None else self.shown

    @property
    def own_path(self) -> str:
        """Where the subschema is written (``path`` without the reference it is shown at)."""
        return self.doc.shown(self.ptr)

    def child(self, value: Any, *tokens: str | int) -> Node:
        suffix = ""
        for token in tokens:  # hot: every subschema the engine looks at is made here
            text = token if token.__class__ is str else str(token)
            suffix += "/" + (text.replace("~", "~0").replace("/", "~1") if "~" in text or "/" in text else text)
        ptr = self.ptr + suffix
        base = ptr if isinstance(value, dict) and "$id" in value else self.base
        return Node(self.doc, ptr, ptr, value, base, shown=None if self.shown is None else self.shown + suffix)

    def member(self, value: Any, keyword: str, name: str) -> Node:
        """``child(value, keyword, name)`` for the member ``name`` of a map of subschemas (``properties``...),
        in half the time: the property models make one for every property they look at."""
        ptr = f"{self.ptr}/{keyword}/{_escape(name) if '~' in name or '/' in name else name}"
        base = ptr if isinstance(value, dict) and "$id" in value else self.base
        shown = self.shown
        return Node(self.doc, ptr, ptr, value, base, shown=None if shown is None else shown + ptr[len(self.ptr) :])

    def variant(self, value: dict[str, Any], tag: str) -> Node:
        """A synthetic copy with a different value (e.g. narrowed to one type), used only in proofs."""
        return Node(self.doc, self.ptr, f"{self.key}\x00{tag}", value, self.base, shown=self.shown)

    def shown_at(self, path: str | None) -> Node:
        """The same subschema (same key), reported as if it were written at ``path`` (None: where it is)."""
        return Node(self.doc, self.ptr, self.key, self.value, self.base, shown=path)


class _Index:
    """Identifiers and anchors of one document, found by walking schema positions once."""

    def __init__(self, root: Any) -> None:
        self.ids: dict[str, str] = {}  # absolute or raw $id -> pointer
        self.anchors: dict[tuple[str, str], str] = {}  # (resource pointer, name) -> pointer
        self.base_uri: dict[str, str] = {"": ""}  # resource pointer -> absolute base URI
        if not _only_root_id(root):
            self._walk(root, "", "", "")
        elif isinstance(root, dict) and "$id" in root:  # what the walk would find: the root's $id alone
            raw_id = root["$id"].split("#", 1)[0]
            self.base_uri[""] = uri = urljoin("", raw_id)
            self.ids[uri] = ""
            self.ids.setdefault(raw_id, "")

    def _walk(self, value: Any, ptr: str, resource: str, uri: str) -> None:
        if not isinstance(value, dict):
            return
        raw_id = value.get("$id")
        if isinstance(raw_id, str):
            uri = urljoin(uri, raw_id.split("#", 1)[0])
            resource = ptr
            self.base_uri[ptr] = uri
            self.ids[uri] = ptr
            self.ids.setdefault(raw_id.split("#", 1)[0], ptr)
        for key in ("$anchor", "$dynamicAnchor"):
            name = value.get(key)
            if isinstance(name, str):
                self.anchors.setdefault((resource, name), ptr)
        for child, child_ptr in _subschemas(value, ptr):
            self._walk(child, child_ptr, resource, uri)


def _only_root_id(root: Any) -> bool:
    """Proven by the document's JSON text: no ``$anchor`` or ``$dynamicAnchor`` anywhere, and no ``$id`` but
    a string one at the root. A member name is ``"name":`` in orjson's text, and inside a string a quote is
    escaped, so counting those occurrences counts members; walking a large document costs far more."""
    if not isinstance(root, dict):
        return False
    try:
        text = orjson.dumps(root)
    except TypeError:  # not plain JSON (an integer beyond 64 bits): the walk decides
        return False
    own = isinstance(root.get("$id"), str)
    if "$id" in root and not own:
        return False
    return b'"$anchor":' not in text and b'"$dynamicAnchor":' not in text and text.count(b'"$id":') == int(own)


class Library:
    """Follows references for one diff: caches documents reached through resolvers.

    References are resolved here and nowhere else: ``#``, ``#/json/pointer`` and ``#anchor`` inside the same
    document (or the enclosing embedded ``$id`` resource); ``other.json#/$defs/X`` through the document's
    :data:`RefResolver`, called with ``"other.json"`` only; anything with a URI scheme is never fetched. What
    cannot be resolved comes back as an :class:`Unresolved` reason, never as an exception (the engine turns it
    into an unprovable change); a reference into the same document that points nowhere is a broken schema and
    raises :class:`~subhive.errors.InputError`.
    """

    def __init__(self) -> None:
        self._docs: dict[tuple[int, str], Doc] = {}
        self._resolved: dict[tuple[int, str, str], Node | Unresolved] = {}
        self._next_uid = 0
        #: remote URIs the engine took for the same target on both sides (``Engine.same_remote``)
        self.remote_same: set[str] = set()

    def reached(self) -> list[Doc]:
        """The documents read through resolvers and the bundled meta-schemas reached so far."""
        return list(self._docs.values())

    def new_doc(self, root: Any, *, name: str | None = None, resolver: RefResolver | None = None) -> Doc:
        """A document to compare: ``root`` as written, in any dialect (translated to 2020-12 here, unless the
        resolver's document already is the translation, as a contract's documents are)."""
        self._next_uid += 1
        translation = getattr(resolver, "translation", None)
        if not (isinstance(translation, Translation) and translation.schema is root):
            translation = translate(root)
        keep = None if translation.identity else translation
        return Doc(translation.schema, uid=self._next_uid, name=name, resolver=resolver, translation=keep)

    def resolve(self, node: Node, ref: str) -> Node | Unresolved:
        """The subschema ``ref`` (written at ``node``) points to."""
        hit = self._resolved.get((node.doc.uid, node.base, ref))
        return hit if hit is not None else self.resolve_at(node.doc, node.base, ref, lambda: node)

    def resolve_at(self, doc: Doc, base: str, ref: str, site: Callable[[], Node]) -> Node | Unresolved:
        """The subschema ``ref`` points to, written in ``doc`` inside the schema resource at ``base``; ``site``
        makes the node where it is written, asked for only to say where a reference fails."""
        key = (doc.uid, base, ref)  # the same text in the same resource means the same target
        hit = self._resolved.get(key)
        if hit is None:
            if ref[:2] == "#/" and "%" not in ref:  # a pointer into this resource, the commonest: found directly
                ptr = base + ref[1:]
                try:
                    value, resource = _locate(doc.root, ptr)
                except LookupError:
                    hit = self._resolve(doc, base, ref, site)  # says where and why
                else:
                    hit = Node(doc, ptr, ptr, value, resource)
            else:
                hit = self._resolve(doc, base, ref, site)
            self._resolved[key] = hit
        return hit

    def _resolve(self, doc: Doc, resource: str, ref: str, site: Callable[[], Node]) -> Node | Unresolved:
        docpart, _, fragment = ref.partition("#")
        if docpart:
            index = doc.index
            absolute = _join(index.base_uri.get(resource, ""), docpart)
            ptr = index.ids.get(absolute, index.ids.get(docpart))
            if ptr is not None:
                resource = ptr
            elif _metaschemas.is_bundled(absolute):  # a dialect's meta-schema: bundled, never fetched
                meta = self._metaschema(absolute)
                return self._in_doc(meta, "", meta.written(unquote(fragment)), site, ref)
            elif _SCHEME.match(absolute) or _SCHEME.match(docpart):
                placed = self._placed_by_id(doc, absolute, ref, site)  # the file its $id places it at (0096)
                if placed is not None:
                    return self._in_doc(placed, "", placed.written(unquote(fragment)), site, ref)
                uri = absolute + ("#" + fragment if fragment else "")
                return Unresolved(
                    "ref.remote.unprovable", f"$ref {ref!r} names the remote {uri}, which is never fetched", uri
                )
            else:
                external = self._external(doc, docpart, ref, site)
                if isinstance(external, Unresolved):
                    return external
                # The fragment is written against that file; its translation may have moved keywords.
                return self._in_doc(external, "", external.written(unquote(fragment)), site, ref)
        return self._in_doc(doc, resource, unquote(fragment), site, ref)

    def _in_doc(self, doc: Doc, resource: str, fragment: str, site: Callable[[], Node], ref: str) -> Node:
        if fragment and not fragment.startswith("/"):
            ptr = doc.index.anchors.get((resource, fragment))
            if ptr is None:
                raise _broken(site(), ref, f"no $anchor {fragment!r} in that schema resource")
        else:
            ptr = resource + fragment
        try:
            value, base = _locate(doc.root, ptr)
        except LookupError as exc:
            raise _broken(site(), ref, str(exc)) from exc
        return Node(doc, ptr, ptr, value, base)

    def _placed_by_id(self, doc: Doc, absolute: str, ref: str, site: Callable[[], Node]) -> Doc | None:
        """The document the contract loader finds for an absolute URL by the referring document's ``$id``, or
        None when it places none there (then the reference is remote)."""
        # Only the contract loader's resolver is given URLs: it never fetches (another might).
        if not getattr(doc.resolver, "resolves_urls_offline", False):
            return None
        try:
            found = self._external(doc, absolute, ref, site)
        except InputError as exc:
            if exc.code == "schema.ref_remote":
                return None
            raise
        return found if isinstance(found, Doc) else None

    def _metaschema(self, uri: str) -> Doc:
        path = _metaschemas.metaschema_path(uri)
        key = (0, str(path))
        doc = self._docs.get(key)
        if doc is None:
            doc = self._docs[key] = self.new_doc(_metaschemas.metaschema(uri), name=uri)
        return doc

    def _external(self, doc: Doc, docpart: str, ref: str, site: Callable[[], Node]) -> Doc | Unresolved:
        resolver = doc.resolver
        if resolver is None:
            return Unresolved(
                "ref.external_unresolved", f"$ref {ref!r} points to another document and no resolver was given"
            )
        key = (id(resolver), docpart)
        found = self._docs.get(key)
        if found is None:
            try:
                got = resolver(docpart)
            except (SubhiveError, RecursionError):  # ours, or the comparison being too deep (not the resolver)
                raise
            except Exception as exc:  # a foreign failure enters here; translate it, keep the cause
                raise InputError(
                    f"cannot resolve $ref {ref!r}: {exc}",
                    code="schema.ref_unresolvable",
                    location=Location(pointer=site().path + "/$ref"),
                ) from exc
            if got is None:
                return Unresolved("ref.external_unresolved", f"$ref {ref!r} could not be resolved")
            root, sub_resolver = got
            found = self.new_doc(root, name=docpart, resolver=sub_resolver)
            check_schema(root, f"{docpart} (referenced as {ref!r})", translated=found.root)
            self._docs[key] = found
        return found


def check_schema(root: Any, label: str, *, whole: bool = True, translated: Any = None) -> None:
    """Raise :class:`InputError` unless ``root`` is a valid schema of a dialect subhive reads (draft-04, -06, -07,
    2019-09, 2020-12: by ``$schema``, else 2020-12); with ``whole`` (the document is the schema, not a container
    of them), also when it is recognisably something else (an OpenAPI document). ``translated``: its draft 2020-12
    translation, when already made."""
    found = looks_like(root) if whole else None
    if found is not None:
        raise InputError(
            f"{label} is {found.what}, not a JSON Schema",
            code=found.code,
            location=Location(pointer=""),
            hint="read as a schema it would accept anything; compare one schema inside it with a pointer "
            "(old_pointer/new_pointer, e.g. '/components/schemas/Order'); `subhive contract import` turns a whole "
            "OpenAPI or AsyncAPI document into a contract version",
        )
    schema = root.get("$schema") if isinstance(root, dict) else None
    if schema is not None and dialect_of(schema) is None and not names_no_draft(schema):
        raise InputError(
            f"{label}: $schema {root['$schema']!r} is not a dialect subhive reads",
            code="schema.draft_unsupported",
            location=Location(pointer="/$schema"),
            hint="name draft-04, -06, -07, 2019-09 or 2020-12 (e.g. "
            '"https://json-schema.org/draft/2020-12/schema"), or leave $schema out to mean 2020-12',
        )
    if isinstance(root, bool):
        return
    if translated is None:
        translated = translate(root).schema  # annotations of the wrong shape mended (lint warns about them)
    if surely_valid(translated):
        return  # the flattened meta-schema's "valid" (half the time); "invalid" is told by the published one
    try:
        jsonschema_rs.meta.validate(translated)
    except jsonschema_rs.ValidationError as exc:
        pointer = "".join("/" + _escape(str(t)) for t in exc.instance_path)
        dialect = (dialect_of(root.get("$schema")) if isinstance(root, dict) else None) or "2020-12"
        raise InputError(
            f"{label} is not a valid {dialect} schema: {exc.message}",
            code="schema.invalid",
            location=Location(pointer=pointer),
            hint="run `subhive contract lint` for every problem with file and line",
        ) from exc
    except (TypeError, ValueError) as exc:  # not JSON at all (e.g. a set or a NaN)
        raise InputError(
            f"{label} is not a JSON document: {exc}", code="schema.invalid", location=Location(pointer="")
        ) from exc


@lru_cache(maxsize=1024)
def _join(base: str, ref: str) -> str:
    """``urljoin``, remembered: a pure function of two strings, asked the same pairs again and again."""
    return urljoin(base, ref)


def _locate(root: Any, ptr: str) -> tuple[Any, str]:
    """``_navigate(root, ptr)`` and the pointer of the innermost embedded ``$id`` resource on the way to it, in one
    walk. Only schema positions count (a property *named* "$id" is not an identifier), so the resource is tracked
    along the keyword grammar until the path leaves known schema keywords."""
    value = root
    direct = _definition(root, ptr)
    if direct is not None:
        return direct
    tokens = ptr[1:].split("/") if ptr else []
    state = _AT_SCHEMA
    found = 0  # how many tokens lead to the innermost embedded resource
    for i, raw in enumerate(tokens):  # hot: every reference resolved passes here
        token = raw.replace("~1", "/").replace("~0", "~") if "~" in raw else raw
        if isinstance(value, dict) and token in value:
            value = value[token]
        elif isinstance(value, list) and token.isdigit() and int(token) < len(value):
            value = value[int(token)]
        else:
            raise LookupError(f"nothing at {ptr!r}")
        if state == _LOST:
            continue
        if state == _AT_SCHEMA:
            if token in _SCHEMA_GROUPS:
                state = _AT_GROUP
                continue
            if token not in _SCHEMA_SINGLE:
                state = _LOST
                continue
        # A subschema: one keyword below a schema, or a member of a map or list of them.
        if isinstance(value, dict) and "$id" in value:
            found = i + 1
        state = _AT_SCHEMA
    if not isinstance(value, dict | bool):
        raise LookupError(f"{ptr or '/'!r} is not a schema")
    return value, "/" + "/".join(tokens[:found]) if found else ""


def _definition(root: Any, ptr: str) -> tuple[Any, str] | None:
    """``_locate`` of ``/$defs/Name`` (any map of schemas at the root), the commonest target by far, found
    without the walk; None for any other pointer, or when it does not lead to a schema (the walk says why)."""
    group, _, name = ptr[1:].partition("/")
    if ptr and group in SCHEMA_MAPS and "/" not in name and "~" not in ptr and isinstance(root, dict):
        members = root.get(group)
        if isinstance(members, dict) and name in members:
            value = members[name]
            if isinstance(value, dict):
                return value, ptr if "$id" in value else ""
            if isinstance(value, bool):
                return value, ""
    return None


def _subschemas(value: dict[str, Any], ptr: str) -> Iterator[tuple[Any, str]]:
    for key in SCHEMA_MAPS:
        sub = value.get(key)
        if isinstance(sub, dict):
            for name, child in sub.items():
                yield child, f"{ptr}/{key}/{_escape(name)}"
    for key in SCHEMA_ONE:
        if key in value:
            yield value[key], f"{ptr}/{key}"
    for key in SCHEMA_LISTS:
        sub = value.get(key)
        if isinstance(sub, list):
            for i, child in enumerate(sub):
                yield child, f"{ptr}/{key}/{i}"


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _navigate(root: Any, ptr: str) -> Any:
    value = root
    if ptr:
        for raw in ptr[1:].split("/"):
            token = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(value, dict) and token in value:
                value = value[token]
            elif isinstance(value, list) and token.isdigit() and int(token) < len(value):
                value = value[int(token)]
            else:
                raise LookupError(f"nothing at {ptr!r}")
    if not isinstance(value, dict | bool):
        raise LookupError(f"{ptr or '/'!r} is not a schema")
    return value


def _broken(site: Node, ref: str, why: str) -> InputError:
    return InputError(
        f"$ref {ref!r} cannot be resolved: {why}",
        code="schema.ref_not_found",
        location=Location(pointer=site.path + "/$ref"),
        hint="point the $ref at an existing definition, e.g. #/$defs/Name",
    )
