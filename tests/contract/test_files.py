"""Linting a contract from a map of files: the same checks and problems as the same files on disk.

The disk verdicts of every fixture are pinned by test_lint.py (read off the rules); here the map of the same
files, standing for the same directory, must give problems identical in code, message, file, line, pointer
and hint, without reading or writing the directory.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from subhive.contract import lint_contract, load_contract, load_contract_files
from subhive.errors import ContractInvalid, Problem

from .test_lint import EXPECTED, FIXTURES, GOOD, MANIFEST, summary, write_contract

CONTRACTS = sorted([*EXPECTED, "valid", "valid_grpc/1.0.0"])


def files_of(directory: Path) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for current, _, names in os.walk(directory):
        for name in names:
            path = Path(current) / name
            out[path.relative_to(directory).as_posix()] = path.read_bytes()
    return out


def full(problems: tuple[Problem, ...]) -> list[tuple[object, ...]]:
    return [(p.code, p.message, p.location.file, p.location.line, p.location.pointer, p.hint) for p in problems]


@pytest.mark.parametrize("fixture", CONTRACTS)
def test_a_map_of_files_gets_the_problems_its_directory_gets(fixture: str, tmp_path: Path) -> None:
    # A copy at an absolute path: the map stands for that directory, which is then removed, so nothing
    # can come from the disk.
    directory = tmp_path / fixture
    shutil.copytree(FIXTURES / fixture, directory)
    disk_contract, disk = lint_contract(directory)
    files = files_of(directory)
    shutil.rmtree(tmp_path)
    memory_contract, memory = lint_contract(directory, files=files)
    assert full(memory) == full(disk)
    if fixture in EXPECTED and fixture != "no_manifest":  # lint_paths names a manifest-less directory itself
        assert summary(memory) == EXPECTED[fixture]
    assert (memory_contract is None) == (disk_contract is None) == (fixture in EXPECTED)
    assert not directory.exists()


def test_a_contract_from_memory_holds_its_schemas_and_names_its_directory(tmp_path: Path) -> None:
    directory = tmp_path / "contracts" / "orders" / "1.0.0"
    files = {
        "contract.yaml": MANIFEST.encode(),
        "in.json": b'{"$ref": "defs/common.json#/$defs/Id"}',
        "out.json": GOOD.encode(),
        "defs/common.json": b'{"$defs": {"Id": {"type": "string", "maxLength": 8}}}',
    }
    contract = load_contract_files(files, directory=directory)
    op = contract.operations["place_order"]
    assert contract.directory == directory
    assert op.input.file == directory / "in.json"
    subschema, _ = op.input.resolver("defs/common.json#/$defs/Id")  # read from the map, not the disk
    assert subschema == {"type": "string", "maxLength": 8}
    assert not directory.exists()


def test_a_map_is_checked_as_strictly_as_a_directory(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    files = {"contract.yaml": MANIFEST.replace("in.json", "../in.json").encode(), "out.json": b'{"type": 12}'}
    with pytest.raises(ContractInvalid) as caught:
        load_contract_files(files, directory=directory)
    assert sorted((p.code, p.location.file) for p in caught.value.problems) == [
        ("manifest.path_escape", str(directory / "contract.yaml")),
        ("schema.meta", str(directory / "out.json")),
    ]


def test_missing_file_hints_come_from_the_map(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    files = {"contract.yaml": MANIFEST.encode(), "out.json": GOOD.encode(), "sub/inn.json": GOOD.encode()}
    _, problems = lint_contract(directory, files=files)
    assert [(p.code, p.hint) for p in problems] == [
        ("manifest.file_missing", "did you mean 'sub/inn.json'? (paths are relative to the contract directory)")
    ]


def test_a_directory_named_in_the_map_is_not_a_schema(tmp_path: Path) -> None:
    files = {"contract.yaml": MANIFEST.encode(), "out.json": GOOD.encode(), "in.json/x.json": GOOD.encode()}
    _, problems = lint_contract(tmp_path / "c", files=files)
    assert [(p.code, p.message) for p in problems] == [("manifest.file_missing", "'in.json' is not a regular file")]


def test_only_a_disk_has_symlinks_leading_out(tmp_path: Path) -> None:
    # The same bytes: on disk in.json is a link to a file outside (refused); in a map it is just a file.
    (tmp_path / "outside.json").write_text(GOOD)
    root = write_contract(tmp_path / "c", {})
    (root / "in.json").unlink()
    (root / "in.json").symlink_to(tmp_path / "outside.json")
    assert [p.code for p in lint_contract(root)[1]] == ["manifest.path_escape"]
    assert lint_contract(root, files=files_of(root))[1] == ()


def test_a_proto_in_a_map_is_compiled_and_named_by_its_intended_path(tmp_path: Path) -> None:
    directory = tmp_path / "nowhere" / "1.0.0"
    files = files_of(FIXTURES / "proto_does_not_compile")
    _, problems = lint_contract(directory, files=files)
    assert [(p.code, p.location.file, p.location.line) for p in problems] == [
        ("proto.compile", str(directory / "orders.proto"), 4)
    ]
    assert not any("subhive-lint-" in str(p) + (p.hint or "") for p in problems)
    good = load_contract_files(files_of(FIXTURES / "valid_grpc" / "1.0.0"), directory=directory)
    assert good.grpc is not None
    assert good.grpc.proto == directory / "orders.proto"
    assert not directory.exists()


def test_a_map_and_its_directory_load_to_the_same_contract(tmp_path: Path) -> None:
    directory = tmp_path / "valid"
    shutil.copytree(FIXTURES / "valid", directory)
    on_disk, in_memory = load_contract(directory), load_contract_files(files_of(directory), directory=directory)
    assert in_memory == on_disk
    assert {k: v.schema for k, v in in_memory.schemas.items()} == {k: v.schema for k, v in on_disk.schemas.items()}
