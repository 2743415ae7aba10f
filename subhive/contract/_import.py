"""``subhive contract import``: an OpenAPI 3.0/3.1 or AsyncAPI 2.x/3.0 document (with the files its ``$ref``s name)
as a new contract version, written only when it is whole and passes lint (docs/contracts.md#importing-and-exporting).

>>> import_document(Path("petstore.yaml"), out=Path("contracts"), provider="pets")  # doctest: +SKIP
ImportResult(directory=PosixPath('contracts/petstore/1.0.0'), ...)
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import Problem
from ..semver import Version
from ._import_asyncapi import import_asyncapi
from ._import_common import ImportedContract, Importer, write_contract
from ._import_openapi import import_openapi

__all__ = ["ImportResult", "import_document", "read_document"]

_CONTRACT = re.compile(r"^[a-z][a-z0-9_-]*$")
# The hive-name rule of subhive.workspace (hive_name_problem), which this layer cannot import: a NATS subject token,
# a directory and a Python identifier; tests/contract/test_import_names.py holds the two to the same answers.
_HIVE = re.compile(r"[a-z][a-z0-9_]*\Z")
_MAX_HIVE = 32
_ROOT = "root"


@dataclass(frozen=True)
class ImportResult:
    directory: Path
    operations: tuple[str, ...]
    events: tuple[str, ...]
    warnings: tuple[Problem, ...]


def import_document(
    path: Path, *, out: Path, name: str | None = None, provider: str | None = None, version: str | None = None
) -> ImportResult:
    """Read ``path`` and write ``out/<name>/<version>/``; raise :class:`ContractInvalid` listing every problem
    (file, JSON pointer, hint), writing nothing."""
    imported = read_document(path, name=name, provider=provider, version=version)
    from .lint import lint_paths

    directory = write_contract(imported, out, lambda staged: lint_paths([staged]).problems)
    manifest = imported.manifest
    return ImportResult(
        directory, tuple(manifest.get("operations", ())), tuple(manifest.get("events", ())), tuple(imported.warnings)
    )


def read_document(
    path: Path, *, name: str | None = None, provider: str | None = None, version: str | None = None
) -> ImportedContract:
    """The contract version ``path`` describes, not yet written."""
    imp = Importer(path)
    doc = imp.load(path)
    imp.fail_if_any()
    assert doc is not None
    data = doc.data
    kind = _kind(data)
    if kind is None:
        imp.problem(
            "import.not_a_document", "not an OpenAPI 3.0/3.1 or AsyncAPI 2.x/3.0 document", path, "",
            "the document needs a top-level 'openapi: 3.x.y' or 'asyncapi: 2.x.y'/'3.0.0'",
        )  # fmt: skip
        imp.fail_if_any()
    assert isinstance(data, dict)
    operations: dict[str, Any] = {}
    events: dict[str, Any] = {}
    if kind == "openapi":
        operations, dialect = import_openapi(imp, data, path)
    else:
        (operations, events), dialect = import_asyncapi(imp, data, path), "draft-07"
    info = data.get("info") if isinstance(data.get("info"), dict) else {}
    assert isinstance(info, dict)
    contract = name or _contract_name(info.get("title"), path)
    chosen = version or str(info.get("version", ""))
    if not _CONTRACT.match(contract) or len(contract) > 63:
        imp.problem(
            "import.name_invalid", f"{contract!r} is no contract name ([a-z][a-z0-9_-]*, at most 63 characters)",
            path, "/info/title", "name the contract with --name",
        )  # fmt: skip
    if not _semver(chosen):
        imp.problem(
            "import.version_invalid", f"version {chosen!r} is not strict semver (X.Y.Z)", path, "/info/version",
            "give the version with --version 1.0.0",
        )  # fmt: skip
    hive = provider or hive_name(contract)
    if not valid_hive_name(hive):
        imp.problem(
            "import.provider_invalid", f"{hive!r} is no hive name", path, "",
            f"name it with --provider, e.g. {hive_name(hive)!r}: hive names are lower-case letters, digits and '_', "
            f"starting with a letter, at most {_MAX_HIVE} characters (subhive new refuses others)",
        )  # fmt: skip
    if not operations and not events and not imp.problems:
        imp.problem("import.empty", "the document has no operations or messages to import", path, "")
    imp.fail_if_any()
    defs, warnings = imp.translated(dialect)
    manifest: dict[str, Any] = {"contract": contract, "version": chosen, "provider": hive}
    description = info.get("description") or info.get("title")
    if isinstance(description, str) and description.strip():
        manifest["description"] = description.strip()
    if operations:
        manifest["operations"] = operations
    if events:
        manifest["events"] = events
    return ImportedContract(manifest, dict(sorted(defs.items())), imp.origins, warnings)


def _kind(data: Any) -> str | None:
    if not isinstance(data, dict):
        return None
    openapi, asyncapi = data.get("openapi"), data.get("asyncapi")
    if isinstance(openapi, str) and re.match(r"^3\.[01]\.\d+", openapi):
        return "openapi"
    if isinstance(asyncapi, str) and re.match(r"^(2\.\d+|3\.0)\.\d+", asyncapi):
        return "asyncapi"
    return None


def _contract_name(title: Any, path: Path) -> str:
    """``Pet Store API`` -> 'pet-store-api'; a title of no usable letters falls back to the file's name."""
    for text in (title if isinstance(title, str) else "", path.stem):
        name = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:63].rstrip("-")
        if _CONTRACT.match(name):
            return name
    return name


def hive_name(contract: str) -> str:
    """The hive a contract's provider defaults to: ``pet-store-api`` -> 'pet_store_api' (``-`` is no hive name
    character), at most 32 characters, never a Python keyword nor the root's name."""
    name = re.sub(r"[^a-z0-9_]+", "_", contract.lower()).strip("_")[:_MAX_HIVE].rstrip("_")
    if name[:1].isdigit():
        name = ("h_" + name)[:_MAX_HIVE].rstrip("_")
    if keyword.iskeyword(name) or name == _ROOT:
        name += "_hive"
    return name or "provider"


def valid_hive_name(name: str) -> bool:
    return bool(_HIVE.match(name)) and len(name) <= _MAX_HIVE and not keyword.iskeyword(name) and name != _ROOT


def _semver(text: str) -> bool:
    try:
        Version.parse(text)
    except Exception:  # any refusal means "not semver"
        return False
    return bool(re.match(r"^\d+\.\d+\.\d+", text))
