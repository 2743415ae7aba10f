"""Self-contained schemas: every ``$ref`` of a contract schema pulled into one document's ``$defs``.
Generated stubs must not depend on the contract directory's layout, and the model generator wants one document.
How meaning is kept: :func:`bundle`.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass
from typing import Any

from .._source import SourceDocument
from ..contract import (
    SUBSCHEMA_KEYWORDS,
    SUBSCHEMA_LIST_KEYWORDS,
    Contract,
    RefSite,
    SchemaDocuments,
    SchemaRef,
    Target,
)

__all__ = ["DRAFT_2020_12", "ContractBundle", "bundle", "bundle_contract"]

DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"

# Keywords whose value is one subschema, a map of subschemas, or a list of subschemas (draft 2020-12).
# Everything else (enum, const, default, examples...) is data, where a "$ref" key is just a key.
_ONE = frozenset(SUBSCHEMA_KEYWORDS)
_MAP = frozenset({"properties", "patternProperties", "dependentSchemas"})
_LIST = frozenset(SUBSCHEMA_LIST_KEYWORDS)
# Dropped from copies: identifiers whose work (being found by a $ref) is done once refs are rewritten, and
# definition containers, whose members are copied into the bundle's $defs when (and only when) referenced.
_DROPPED = frozenset({"$id", "$anchor", "$dynamicAnchor", "$schema", "$defs", "definitions"})
_REFS = ("$ref", "$dynamicRef")
# Names the generated models module imports or defines itself: a class with one of them would shadow it.
RESERVED = frozenset(
    {
        "Any",
        "AnyUrl",
        "Annotated",
        "AwareDatetime",
        "BaseModel",
        "ConfigDict",
        "Decimal",
        "Enum",
        "Field",
        "Literal",
        "Model",
        "NaiveDatetime",
        "Optional",
        "RootModel",
        "UUID",
        "Union",
        "annotations",
        "date",
        "datetime",
        "time",
        "timedelta",
        "constr",
        "conint",
        "confloat",
        "EmailStr",
        "IPv4Address",
        "IPv6Address",
        "Path",
        "StrictBool",
        "StrictInt",
        "StrictStr",
    }
)

_Key = tuple[str, str]  # (document path, JSON pointer): one schema of the contract


@dataclass(frozen=True)
class ContractBundle:
    """Every schema of a contract, self-contained, plus one document that holds them all once.

    ``schemas[key]`` (a manifest key such as ``"operations.place_order.input"``) validates exactly what the
    manifest's schema validates; ``document`` is ``{"$schema": ..., "$defs": {Name: ...}}`` where
    ``{"$ref": "#/$defs/" + names[key]}`` means the same. Keys naming the same schema share its name.
    """

    schemas: dict[str, dict[str, Any]]
    document: dict[str, Any]
    names: dict[str, str]


def camel(text: str) -> str:
    """A class name from any text: ``camel("place_order") + "Input"`` is 'PlaceOrderInput'.

    >>> camel("order-line"), camel("2fa"), camel("none"), camel("")
    ('OrderLine', 'N2fa', 'None_', 'Schema')
    """
    words = re.findall(r"[A-Za-z0-9]+", text)
    name = "".join(w[:1].upper() + w[1:] for w in words) or "Schema"
    if name[0].isdigit():
        name = "N" + name
    if keyword.iskeyword(name) or keyword.issoftkeyword(name):
        name += "_"
    return name


class _Bundler:
    """Collects the schemas reachable from some roots, names them, and copies them with refs rewritten."""

    def __init__(self, documents: SchemaDocuments) -> None:
        self.documents = documents
        self.names: dict[_Key, str] = {}
        self.taken: set[str] = set(RESERVED)
        self.copies: dict[_Key, Any] = {}
        self.edges: dict[_Key, list[_Key]] = {}
        self._sites: dict[int, dict[tuple[str, str], RefSite]] = {}

    def name(self, key: _Key, wanted: str) -> str:
        found = self.names.get(key)
        if found is None:
            found, n = wanted, 2
            while found in self.taken:
                found, n = f"{wanted}{n}", n + 1
            self.taken.add(found)
            self.names[key] = found
        return found

    def add(self, doc: SourceDocument, pointer: str) -> _Key:
        """Copy the schema at ``pointer`` and, transitively, everything it references (each once)."""
        key = (str(doc.path), pointer)
        stack = [(doc, pointer)]
        while stack:
            doc, pointer = stack.pop()
            here = (str(doc.path), pointer)
            if here in self.copies:
                continue
            self.documents.ensure_schema(doc, pointer)
            targets: list[Target] = []
            self.copies[here] = self._copy(doc, self.documents.subschema(doc, pointer), pointer, targets)
            self.edges[here] = [(str(t.document.path), t.pointer) for t in targets]
            for target in targets:
                stack.append((target.document, target.pointer))
        return key

    def _copy(self, doc: SourceDocument, node: Any, pointer: str, targets: list[Target]) -> Any:
        if not isinstance(node, dict):
            return node
        out: dict[str, Any] = {}
        for word, value in node.items():
            at = f"{pointer}/{_escape(word)}"
            if word in _DROPPED:
                continue
            if word in _REFS and isinstance(value, str):
                target = self.documents.resolve(doc, self._site(doc, pointer, word))
                targets.append(target)
                out[word] = (str(target.document.path), target.pointer)  # a placeholder, named later
            elif word in _ONE:
                out[word] = self._copy(doc, value, at, targets)
            elif word in _MAP and isinstance(value, dict):
                out[word] = {k: self._copy(doc, v, f"{at}/{_escape(k)}", targets) for k, v in value.items()}
            elif word in _LIST and isinstance(value, list):
                out[word] = [self._copy(doc, v, f"{at}/{i}", targets) for i, v in enumerate(value)]
            else:
                out[word] = value
        return out

    def _site(self, doc: SourceDocument, pointer: str, word: str) -> RefSite:
        sites = self._sites.get(id(doc))
        if sites is None:
            sites = self._sites[id(doc)] = {}
        found = sites.get((pointer, word))
        if found is None:
            # The index knows every $ref with the base URI in force there (a nested $id changes it).
            for site in self.documents.index(doc).refs:
                sites.setdefault((site.schema_pointer, site.keyword), site)
            found = sites.get((pointer, word))
        if found is None:  # not reached by the index walk (e.g. below a ref into a plain container)
            self.documents.ensure_schema(doc, pointer)
            return self._site(doc, pointer, word)
        return found

    def reachable(self, key: _Key) -> list[_Key]:
        """``key`` and every schema it references, in first-reached (depth-first, document) order."""
        seen: dict[_Key, None] = {}
        stack = [key]
        while stack:
            here = stack.pop()
            if here in seen:
                continue
            seen[here] = None
            stack.extend(reversed(self.edges[here]))
        return list(seen)

    def wanted(self, key: _Key) -> str:
        """The natural name of a referenced schema: its ``$defs`` key, property name, or file name."""
        path, pointer = key
        tokens = [_unescape(t) for t in pointer.split("/")[1:]]
        if len(tokens) >= 2 and tokens[-2] in ("$defs", "definitions"):
            return camel(tokens[-1])
        words = [t for t in tokens if not t.isdigit() and t not in _ONE | _MAP | _LIST]
        if words:
            return camel(words[-1])
        stem = path.rsplit("/", 1)[-1].split(".")[0]
        return camel(stem)

    def render(self, node: Any) -> Any:
        """A copy with every placeholder reference turned into ``#/$defs/<Name>``."""
        if not isinstance(node, dict):
            return node
        out: dict[str, Any] = {}
        for word, value in node.items():
            if word in _REFS and isinstance(value, tuple):
                out[word] = "#/$defs/" + self.name(value, self.wanted(value))
            elif word in _ONE:
                out[word] = self.render(value)
            elif word in _MAP and isinstance(value, dict):
                out[word] = {k: self.render(v) for k, v in value.items()}
            elif word in _LIST and isinstance(value, list):
                out[word] = [self.render(v) for v in value]
            else:
                out[word] = value
        return out


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _self_contained(bundler: _Bundler, root: _Key) -> dict[str, Any]:
    reach = bundler.reachable(root)
    copy = bundler.copies[root]
    # A root referenced from below (recursion), or a boolean schema, is kept under its name.
    named = isinstance(copy, bool) or root in {k for here in reach for k in bundler.edges[here]}
    defs = {bundler.names[k]: bundler.render(bundler.copies[k]) for k in reach if k != root or named}
    top = {"$ref": "#/$defs/" + bundler.names[root]} if named else bundler.render(copy)
    out: dict[str, Any] = {"$schema": DRAFT_2020_12, **top}
    if defs:
        out["$defs"] = dict(sorted(defs.items()))
    return out


def _name_all(bundler: _Bundler, root: _Key) -> None:
    for key in bundler.reachable(root):
        bundler.name(key, bundler.wanted(key))


def bundle(ref: SchemaRef) -> dict[str, Any]:
    """The schema ``ref`` names, self-contained: every reference it reaches copied into its own ``$defs``.

    Each reference (``#/$defs/X``, ``#anchor``, ``other.json#/$defs/Y``, a nested ``$id``) is copied once
    under a CamelCase name and every ``$ref`` rewritten to ``#/$defs/<Name>``. Meaning is kept: references are
    resolved by the contract loader (as lint and the diff engine resolve them), a schema written in an older
    dialect is copied as the draft 2020-12 schema meaning the same (``subhive._dialects``), and the copies lose ``$id``,
    ``$anchor`` and ``$schema`` (their only job, being found, is done; left in, an ``$id`` would change what
    ``#/$defs/...`` means below it). ``$dynamicRef`` is bundled as the static reference it resolves to at first,
    which is what it means unless a ``$dynamicAnchor`` of the same name overrides it in the dynamic scope.
    Names come from the schemas' own names (``$defs`` keys, manifest keys, file names) in manifest order, with
    a number added on a clash, so the output is deterministic.

    >>> bundle(SchemaRef(Path("contracts/orders/1.1.0/schemas.json"), "/$defs/Order"))["$defs"]["OrderLine"]
    {'type': 'object', 'required': ['sku', 'quantity'], ...}  # doctest: +SKIP
    """
    assert ref.documents is not None  # set in SchemaRef.__post_init__
    bundler = _Bundler(ref.documents)
    root = bundler.add(ref.document, ref.data_pointer)
    bundler.name(root, bundler.wanted(root))
    _name_all(bundler, root)
    return _self_contained(bundler, root)


def _key_name(manifest_key: str) -> str:
    kind, name, part = manifest_key.split(".", 2)
    return camel(name) + ("Event" if kind == "events" else camel(part))


def bundle_contract(contract: Contract) -> ContractBundle:
    """Bundle every schema of ``contract`` (see :func:`bundle`) and gather them in one document.

    >>> bundle_contract(load_contract("contracts/orders/1.1.0")).names["events.order_placed.payload"]
    'Order'  # doctest: +SKIP
    """
    refs = contract.schemas
    if not refs:
        return ContractBundle(schemas={}, document={"$schema": DRAFT_2020_12, "$defs": {}}, names={})
    # One SchemaDocuments reads each file once (a loaded contract's refs share one anyway).
    documents = next(iter(refs.values())).documents
    assert documents is not None  # set in SchemaRef.__post_init__
    bundler = _Bundler(documents)
    roots = {key: bundler.add(documents.load(ref.file), ref.data_pointer) for key, ref in refs.items()}
    # Manifest roots first, so that they get their natural names before anything they reference.
    for manifest_key, root in roots.items():
        pointer = root[1]
        natural = (
            bundler.wanted(root)
            if pointer.split("/")[-2:-1] in (["$defs"], ["definitions"])
            else _key_name(manifest_key)
        )
        bundler.name(root, natural)
    for root in roots.values():
        _name_all(bundler, root)
    schemas = {k: _self_contained(bundler, root) for k, root in roots.items()}
    defs = {bundler.names[k]: bundler.render(copy) for k, copy in bundler.copies.items()}
    document = {"$schema": DRAFT_2020_12, "$defs": dict(sorted(defs.items()))}
    return ContractBundle(schemas=schemas, document=document, names={k: bundler.names[r] for k, r in roots.items()})
