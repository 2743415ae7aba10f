"""Sub-hive manifests: every field read, every mistake reported with its code, line and JSON pointer.

Expected codes and places come from the rules in docs/workspace.md and from the line numbers of the
manifest text below, never from running the code.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from subhive.errors import InputError
from subhive.semver import Version
from subhive.workspace import (
    Budgets,
    Kind,
    ManifestInvalid,
    Requirement,
    SubhiveManifest,
    TomlDocument,
    VersionRange,
    check_hive_name,
    load_manifest,
    parse_manifest,
)

VALID = """\
name = "db"
kind = "db"
parent = "root"
description = "Keeps records."
provides = ["db_storage"]

[consumes]
orders = "^1.2"
"audit-log" = ">=1.0.0,<2.0.0"

[budgets]
max_files = 10
max_bytes = 1000

[blackboard]
schema = "blackboard.schema.json"

[knowledge]
sources = "db_hive.knowledge:SOURCES"
"""


def write(tmp_path: Path, text: str, directory: str = "db") -> Path:
    path = tmp_path / "subhives" / directory / "subhive.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_a_valid_manifest_reads_every_field(tmp_path: Path) -> None:
    manifest = load_manifest(write(tmp_path, VALID).parent)  # the directory works as well as the file
    assert manifest.name == "db"
    assert manifest.kind is Kind.db
    assert manifest.parent == "root"
    assert manifest.description == "Keeps records."
    assert manifest.provides == ("db_storage",)
    assert [(r.contract, r.versions.text) for r in manifest.consumes] == [
        ("orders", "^1.2"),
        ("audit-log", ">=1.0.0,<2.0.0"),
    ]
    assert manifest.budgets == Budgets(max_files=10, max_bytes=1000)
    assert manifest.blackboard_schema == "blackboard.schema.json"
    assert manifest.knowledge_sources == "db_hive.knowledge:SOURCES"
    assert manifest.package == "db_hive"
    requirement = manifest.requirement("orders")
    assert requirement is not None
    assert requirement.versions.contains(Version.parse("1.4.0"))
    assert not requirement.versions.contains(Version.parse("2.0.0"))


def test_optional_fields_take_their_defaults(tmp_path: Path) -> None:
    text = (
        'name = "db"\nkind = "custom"\nparent = "root"\n[blackboard]\nschema = "b.json"\n'
        '[knowledge]\nsources = "db_hive.knowledge:SOURCES"\n'
    )
    manifest = load_manifest(write(tmp_path, text))
    assert (manifest.description, manifest.provides, manifest.consumes) == ("", (), ())
    assert manifest.budgets == Budgets()


def _replace(old: str, new: str) -> str:
    assert old in VALID
    return VALID.replace(old, new)


@pytest.mark.parametrize(
    ("text", "code", "pointer", "line"),
    [
        (_replace('name = "db"', 'name = "Db"'), "hive.name_invalid", "/name", 1),
        (_replace('name = "db"', 'name = "store"'), "hive.name_mismatch", "/name", 1),
        (_replace('name = "db"', 'name = "class"'), "hive.name_keyword", "/name", 1),
        (_replace('kind = "db"', 'kind = "frontend"'), "hive.kind_unknown", "/kind", 2),
        (_replace('parent = "root"', 'parent = "db"'), "hive.parent_cycle", "/parent", 3),
        (_replace('parent = "root"', 'parent = "Web"'), "hive.name_invalid", "/parent", 3),
        (_replace('parent = "root"', "parent = 7"), "hive.type", "/parent", 3),
        (_replace('provides = ["db_storage"]', 'provides = "db_storage"'), "hive.type", "/provides", 5),
        (
            _replace('provides = ["db_storage"]', 'provides = ["Db.Storage"]'),
            "hive.contract_name_invalid",
            "/provides/0",
            5,
        ),
        (_replace('provides = ["db_storage"]', 'provides = ["a", "a"]'), "hive.duplicate", "/provides/1", 5),
        (_replace('orders = "^1.2"', 'orders = ">=2.0.0,<1.0.0"'), "hive.range_invalid", "/consumes/orders", 8),
        (_replace('orders = "^1.2"', 'orders = "latest"'), "hive.range_invalid", "/consumes/orders", 8),
        (_replace('orders = "^1.2"', "orders = 1.2"), "hive.type", "/consumes/orders", 8),
        (_replace('orders = "^1.2"', 'db_storage = "^1"'), "hive.consumes_own", "/consumes/db_storage", 8),
        (_replace('"audit-log"', '"Audit Log"'), "hive.contract_name_invalid", "/consumes/Audit Log", 9),
        (_replace("max_files = 10", "max_files = 0"), "hive.budget_invalid", "/budgets/max_files", 12),
        (_replace("max_bytes = 1000", "max_bytes = true"), "hive.budget_invalid", "/budgets/max_bytes", 13),
        (_replace("max_bytes = 1000", "max_byte = 1000"), "hive.unknown_key", "/budgets/max_byte", 13),
        (
            _replace('schema = "blackboard.schema.json"', 'schema = "../other/b.json"'),
            "hive.path_escape",
            "/blackboard/schema",
            16,
        ),
        (
            _replace('schema = "blackboard.schema.json"', 'schema = "blackboard.txt"'),
            "hive.file_type",
            "/blackboard/schema",
            16,
        ),
        (
            _replace('sources = "db_hive.knowledge:SOURCES"', 'sources = "db_hive/knowledge.py"'),
            "hive.sources_invalid",
            "/knowledge/sources",
            19,
        ),
        (_replace("provides =", "provide ="), "hive.unknown_key", "/provide", 5),
        (_replace('[knowledge]\nsources = "db_hive.knowledge:SOURCES"\n', ""), "hive.missing_key", "", 1),
        (_replace('schema = "blackboard.schema.json"\n', ""), "hive.missing_key", "/blackboard", 15),
        (_replace('kind = "db"\n', ""), "hive.missing_key", "", 1),
    ],
)
def test_each_mistake_is_reported_where_it_is(
    tmp_path: Path, text: str, code: str, pointer: str, line: int | None
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ManifestInvalid) as caught:
        load_manifest(path)
    problems = caught.value.problems
    assert [(p.code, p.location.pointer, p.location.line) for p in problems] == [(code, pointer, line)]
    assert problems[0].location.file == str(path)
    assert problems[0].hint


def test_an_unknown_key_gets_a_did_you_mean(tmp_path: Path) -> None:
    with pytest.raises(ManifestInvalid) as caught:
        load_manifest(write(tmp_path, _replace("provides =", "provide =")))
    assert caught.value.problems[0].hint == "did you mean 'provides'?"


def test_every_problem_is_reported_not_just_the_first(tmp_path: Path) -> None:
    text = _replace('kind = "db"', 'kind = "x"').replace("max_files = 10", "max_files = -1").replace('"^1.2"', '"^^1"')
    with pytest.raises(ManifestInvalid) as caught:
        load_manifest(write(tmp_path, text))
    assert sorted(p.code for p in caught.value.problems) == [
        "hive.budget_invalid",
        "hive.kind_unknown",
        "hive.range_invalid",
    ]
    assert "3 problems" in caught.value.message


def test_invalid_toml_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, 'name = "db"\nkind = db\n')
    with pytest.raises(InputError) as caught:
        load_manifest(path)
    assert caught.value.code == "input.toml"
    assert (caught.value.location.file, caught.value.location.line) == (str(path), 2)
    assert "invalid TOML" in caught.value.message


def test_a_missing_manifest_is_input_not_found(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        load_manifest(tmp_path / "subhives" / "db")
    assert caught.value.code == "input.not_found"


@pytest.mark.parametrize("name", ["db", "a", "web_ui", "x1", "a" * 32, "match", "type"])
def test_valid_hive_names(name: str) -> None:
    check_hive_name(name)
    assert name.isidentifier()


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("", "hive.name_invalid"),
        ("Db", "hive.name_invalid"),
        ("1db", "hive.name_invalid"),
        ("web-ui", "hive.name_invalid"),  # a '-' is a fine subject token but not a Python identifier
        ("a.b", "hive.name_invalid"),  # a '.' would split the NATS subject
        ("a*", "hive.name_invalid"),
        ("_x", "hive.name_invalid"),
        ("caf\u00e9", "hive.name_invalid"),
        ("db ", "hive.name_invalid"),
        ("a" * 33, "hive.name_too_long"),
        ("class", "hive.name_keyword"),
        ("import", "hive.name_keyword"),
        ("root", "hive.name_reserved"),
    ],
)
def test_invalid_hive_names_say_why(name: str, code: str) -> None:
    with pytest.raises(InputError) as caught:
        check_hive_name(name)
    assert caught.value.code == code
    assert caught.value.hint


def test_an_invalid_name_hint_suggests_a_valid_one() -> None:
    with pytest.raises(InputError) as caught:
        check_hive_name("Web-UI")
    assert caught.value.hint is not None
    assert "'web_ui'" in caught.value.hint


descriptions = st.text(max_size=40)
contract_names = st.from_regex(r"[a-z][a-z0-9_-]{0,10}", fullmatch=True)
ranges = st.sampled_from(["^1.2", "~0.3.1", ">=1.0.0,<2.0.0", "1.2.3", "*", ">=1.3.0-rc.1, <2"])


@given(
    descriptions,
    st.lists(contract_names, max_size=3, unique=True),
    st.dictionaries(contract_names, ranges, max_size=3),
    st.integers(1, 10**12),
)
def test_to_toml_reads_back_equal(
    description: str, provides: list[str], consumes: dict[str, str], max_bytes: int
) -> None:
    consumes = {k: r for k, r in consumes.items() if k not in provides}
    manifest = SubhiveManifest(
        name="db",
        kind=Kind.backend,
        parent="store",
        description=description,
        provides=tuple(provides),
        consumes=tuple(Requirement(c, VersionRange.parse(r)) for c, r in consumes.items()),
        budgets=Budgets(max_files=3, max_bytes=max_bytes),
    )
    text = manifest.to_toml()
    document = TomlDocument(Path("/workspace/subhives/db/subhive.toml"), text, tomllib.loads(text))
    assert parse_manifest(document) == manifest
