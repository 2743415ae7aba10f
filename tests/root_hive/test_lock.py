"""The lock file and contract hashes: determinism, atomic rewrite, and tamper detection."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from subhive.errors import InputError
from subhive.root_hive import LOCK_FILE, Lock, LockEntry, contract_hash
from subhive.semver import Version


def _entry(name: str = "orders", version: str = "1.0.0", **kw: object) -> LockEntry:
    defaults: dict[str, object] = {"hash": "sha256:" + "0" * 64, "provider": "backend", "consumers": {}}
    defaults.update(kw)
    return LockEntry(name, Version.parse(version), **defaults)  # type: ignore[arg-type]


def _write(directory: Path, files: dict[str, bytes]) -> None:
    for name, content in files.items():
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_bytes(content)


def test_hash_ignores_the_order_files_are_given_in() -> None:
    assert contract_hash({"a.json": b"1", "b.json": b"2"}) == contract_hash({"b.json": b"2", "a.json": b"1"})


def test_hash_separates_names_from_contents() -> None:
    # Same concatenated bytes, split differently between the name and the content.
    assert contract_hash({"ab": b"c"}) != contract_hash({"a": b"bc"})


def test_hash_changes_when_one_byte_changes() -> None:
    assert contract_hash({"a.json": b'{"x": 1}'}) != contract_hash({"a.json": b'{"x": 2}'})


def test_hash_of_a_directory_equals_the_hash_of_its_files(tmp_path: Path) -> None:
    files = {"contract.yaml": b"contract: x\n", "schemas/in.json": b"{}"}
    _write(tmp_path, files)
    assert contract_hash(tmp_path) == contract_hash(files)


def test_hash_format_is_sha256_hex() -> None:
    digest = contract_hash({"a": b""})
    assert digest.startswith("sha256:")
    assert len(digest) == len("sha256:") + 64


def test_missing_lock_is_empty(tmp_path: Path) -> None:
    assert len(Lock.load(tmp_path)) == 0


def test_lock_round_trips(tmp_path: Path) -> None:
    lock = Lock()
    lock.put(_entry(consumers={"web": "^1.0"}))
    lock.put(_entry(version="2.0.0", provider="api"))
    lock.save(tmp_path)
    assert Lock.load(tmp_path) == lock


def test_lock_bytes_do_not_depend_on_insertion_order(tmp_path: Path) -> None:
    one, two = Lock(), Lock()
    entries = [_entry("b"), _entry("a", "1.2.0"), _entry("a", "1.10.0", consumers={"z": "*", "m": "^1"})]
    for entry in entries:
        one.put(entry)
    for entry in reversed(entries):
        two.put(entry)
    assert one.dumps() == two.dumps()


def test_lock_entries_sort_by_name_then_semver(tmp_path: Path) -> None:
    lock = Lock()
    for name, version in [("b", "1.0.0"), ("a", "1.10.0"), ("a", "1.2.0")]:
        lock.put(_entry(name, version))
    lock.save(tmp_path)
    data = json.loads((tmp_path / LOCK_FILE).read_text())
    assert [(e["name"], e["version"]) for e in data["entries"]] == [("a", "1.2.0"), ("a", "1.10.0"), ("b", "1.0.0")]


@given(
    st.lists(
        st.tuples(
            st.sampled_from("abc"),
            st.sampled_from(["1.0.0", "1.2.0", "1.10.0", "2.0.0-rc.1"]),
            st.sampled_from(["p", "q"]),
            st.booleans(),
        ),
        max_size=30,
    )
)
def test_lock_stays_sorted_and_rendered_right_while_entries_are_put_and_replaced(
    steps: list[tuple[str, str, str, bool]],
) -> None:
    # The lock keeps its order and rendered lines between puts; both must match a lock built at once.
    lock = Lock()
    for name, version, provider, look in steps:
        lock.put(_entry(name, version, provider=provider))
        if look:  # iterate (and render) mid-way, so later puts update the kept order in place
            lock.dumps()
    fresh = Lock({(e.name, e.version): e for e in lock.entries()})
    assert lock.entries() == sorted(lock.entries(), key=lambda e: (e.name, e.version))
    last_provider = {(n, v): p for n, v, p, _ in steps}
    assert [(e.name, str(e.version), e.provider) for e in lock.entries()] == sorted(
        ((n, v, p) for (n, v), p in last_provider.items()), key=lambda t: (t[0], Version.parse(t[1]))
    )
    assert lock.dumps() == fresh.dumps()
    assert json.loads(lock.dumps())["entries"] == [e.to_dict() for e in fresh.entries()]


def test_save_leaves_no_temporary_file(tmp_path: Path) -> None:
    lock = Lock()
    lock.put(_entry())
    lock.save(tmp_path)
    lock.save(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [LOCK_FILE]


def test_malformed_lock_names_file_and_line(tmp_path: Path) -> None:
    (tmp_path / LOCK_FILE).write_text('{\n  "format": 1,\n  "entries": [\n    {"name": "orders"}\n  ]\n}\n')
    with pytest.raises(InputError) as info:
        Lock.load(tmp_path)
    assert info.value.code == "lock.invalid"
    assert info.value.location.file == str(tmp_path / LOCK_FILE)
    assert info.value.location.pointer == "/entries/0"
    assert info.value.location.line == 4


def test_lock_with_a_bad_version_is_refused(tmp_path: Path) -> None:
    entry = {"name": "o", "version": "1.0", "hash": "sha256:00", "provider": "p", "consumers": {}}
    (tmp_path / LOCK_FILE).write_text(json.dumps({"format": 1, "entries": [entry]}))
    with pytest.raises(InputError, match="semantic version"):
        Lock.load(tmp_path)


def test_lock_of_unknown_format_is_refused(tmp_path: Path) -> None:
    (tmp_path / LOCK_FILE).write_text(json.dumps({"format": 2, "entries": []}))
    with pytest.raises(InputError) as info:
        Lock.load(tmp_path)
    assert info.value.code == "lock.invalid"


def _locked_workspace(tmp_path: Path) -> tuple[Path, Lock]:
    files = {"contract.yaml": b"contract: orders\n", "in.json": b"{}"}
    directory = tmp_path / "contracts" / "orders" / "1.0.0"
    _write(directory, files)
    lock = Lock()
    lock.put(_entry(hash=contract_hash(files)))
    return directory, lock


def test_verify_passes_untouched_contracts(tmp_path: Path) -> None:
    _, lock = _locked_workspace(tmp_path)
    assert lock.verify(tmp_path) == []


def test_verify_reports_an_edited_file_as_tampered(tmp_path: Path) -> None:
    directory, lock = _locked_workspace(tmp_path)
    (directory / "in.json").write_bytes(b'{"type": "string"}')
    problems = lock.verify(tmp_path)
    assert [p.code for p in problems] == ["lock.tampered"]
    assert problems[0].location.file == str(directory)


def test_verify_reports_an_added_file_as_tampered(tmp_path: Path) -> None:
    directory, lock = _locked_workspace(tmp_path)
    (directory / "extra.json").write_bytes(b"{}")
    assert [p.code for p in lock.verify(tmp_path)] == ["lock.tampered"]


def test_verify_reports_a_missing_directory(tmp_path: Path) -> None:
    _, lock = _locked_workspace(tmp_path)
    lock.put(_entry(version="1.1.0"))
    assert [p.code for p in lock.verify(tmp_path)] == ["lock.missing"]
