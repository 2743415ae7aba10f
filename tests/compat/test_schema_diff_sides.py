"""``schema diff`` reads each side's references as that side's (decision 0141): per-side id roots, a file of one
side read by the other through a shared id root (``ref.id_root.unprovable``), and remote ``$ref``s, never
fetched, the same URI on both sides being the same schema."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from subhive._id_roots import extra_id_roots
from subhive.compat import diff_schemas
from subhive.compat.files import diff_files
from subhive.contract import lint_contract, lint_paths
from tests.kit import cli

HOME = "https://json.example.org/"
OTHER = "https://www.example.org/"  # another host: the $id of a.json does not place b.json (decision 0096)
REMOTE = "https://remote.example.com/common.json"


def _write(root: Path, files: dict[str, Any]) -> None:
    for name, value in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(json.dumps(value) if not isinstance(value, str) else value)


def _sides(tmp: Path) -> tuple[Path, Path]:
    """The reviewer's case in small: a.json is the same on both sides; b.json, which it refers to through the
    other host, no longer accepts a number in NEW."""
    a = {"$id": HOME + "a.json", "type": "object", "properties": {"b": {"$ref": OTHER + "b.json"}}}
    _write(tmp / "old", {"a.json": a, "b.json": {"$id": OTHER + "b.json", "type": ["string", "number"]}})
    _write(tmp / "new", {"a.json": a, "b.json": {"$id": OTHER + "b.json", "type": "string"}})
    return tmp / "old" / "a.json", tmp / "new" / "a.json"


@pytest.mark.parametrize("side", ["new", "old"])
def test_one_id_root_for_both_sides_reading_one_sides_file_is_not_compatible(tmp_path: Path, side: str) -> None:
    old, new = _sides(tmp_path)
    with extra_id_roots({OTHER: tmp_path / side}):
        report = diff_files(old, new)
    assert (report.backward, report.forward) == (False, False)
    [change] = [c for c in report.changes if c.code == "ref.id_root.unprovable"]
    assert change.path == "/properties/b/$ref"
    reader = "OLD" if side == "new" else "NEW"
    assert change.message.startswith(f"{reader} reads ")
    assert str(Path(side) / "b.json") in change.message
    assert "--old-id-root" in change.message


def test_each_side_mapped_to_its_own_directory_finds_the_narrowing(tmp_path: Path) -> None:
    old, new = _sides(tmp_path)
    report = diff_files(
        old, new, old_id_roots=[f"{OTHER}={tmp_path / 'old'}"], new_id_roots=[f"{OTHER}={tmp_path / 'new'}"]
    )
    assert (report.backward, report.forward) == (False, True)
    assert [c.code for c in report.changes] == ["type.narrowed"]
    assert report.warnings == ()


def test_the_workspaces_id_roots_read_by_both_sides_are_caught_too(tmp_path: Path) -> None:
    old, new = _sides(tmp_path)
    (tmp_path / "hive.toml").write_text(
        f'[workspace]\nname = "shop"\n\n[schemas]\nid_roots = {{ "{OTHER}" = "new" }}\n'
    )
    report = diff_files(old, new)
    assert [c.code for c in report.changes] == ["ref.id_root.unprovable"]
    assert "hive.toml [schemas] id_roots" in report.changes[0].message
    # One side's own option comes before the workspace's: then each side reads its own b.json.
    report = diff_files(old, new, old_id_roots=[f"{OTHER}={tmp_path / 'old'}"])
    assert [c.code for c in report.changes] == ["type.narrowed"]


def test_a_side_given_the_other_sides_directory_on_purpose_is_taken_at_its_word(tmp_path: Path) -> None:
    old, new = _sides(tmp_path)
    report = diff_files(
        old, new, old_id_roots=[f"{OTHER}={tmp_path / 'new'}"], new_id_roots=[f"{OTHER}={tmp_path / 'new'}"]
    )
    assert (report.backward, report.forward) == (True, True)
    assert report.changes == ()


def test_a_shared_directory_read_by_both_is_one_schema_with_a_warning(tmp_path: Path) -> None:
    old, new = _sides(tmp_path)
    _write(tmp_path / "lib", {"b.json": {"type": "integer"}})
    with extra_id_roots({OTHER: tmp_path / "lib"}):
        report = diff_files(old, new)
    assert (report.backward, report.forward) == (True, True)
    assert [w.code for w in report.warnings] == ["schema.id_root_shared"]
    assert "lib" in report.warnings[0].message
    lib = f"{OTHER}={tmp_path / 'lib'}"
    report = diff_files(old, new, old_id_roots=[lib], new_id_roots=[lib])  # each side told so: nothing to say
    assert (report.backward, report.forward, report.warnings) == (True, True, ())


def test_two_versions_in_one_directory_read_their_neighbours_without_a_warning(tmp_path: Path) -> None:
    old, _ = _sides(tmp_path)
    (tmp_path / "old" / "a2.json").write_text(old.read_text().replace('"object"', '["object", "null"]'))
    with extra_id_roots({OTHER: tmp_path / "old"}):
        report = diff_files(old, tmp_path / "old" / "a2.json")
    assert [c.code for c in report.changes] == ["type.widened"]
    assert report.warnings == ()


def test_the_command_line_takes_each_sides_id_root(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _sides(tmp_path)
    args = ["schema", "diff", "old/a.json", "new/a.json", "--require", "backward"]
    code, out, _ = cli(capsys, *args, "--id-root", f"{OTHER}=new")
    assert code == 1
    assert "ref.id_root.unprovable" in out
    code, out, _ = cli(capsys, *args, "--old-id-root", f"{OTHER}=old", "--new-id-root", f"{OTHER}=new")
    assert code == 1
    assert "type.narrowed" in out
    code, out, _ = cli(
        capsys, *args[:4], "--old-id-root", f"{OTHER}=old", "--new-id-root", f"{OTHER}=new", "-f", "json"
    )
    assert (code, json.loads(out)["backward"], json.loads(out)["forward"]) == (0, False, True)
    code, _, err = cli(capsys, *args[:4], "--old-id-root", OTHER)
    assert code == 2
    assert "--old-id-root" in err
    assert "usage.id_root" in err


# -- remote references ----------------------------------------------------------------------------------------


def test_identical_files_with_a_remote_ref_report_no_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _write(
        tmp_path, {"r1.json": {"$ref": "https://example.com/a.json"}, "r2.json": {"$ref": "https://example.com/a.json"}}
    )
    code, out, err = cli(capsys, "schema", "diff", "r1.json", "r2.json", "--require", "full", "-f", "json")
    assert code == 0
    report = json.loads(out)
    assert (report["backward"], report["forward"], report["changes"]) == (True, True, [])
    assert [w["code"] for w in report["warnings"]] == ["schema.ref_remote", "schema.ref_remote"]
    assert "never fetched" in report["warnings"][0]["message"]
    code, _, err = cli(capsys, "schema", "diff", "r1.json", "r2.json")
    assert code == 0
    assert "warning: r1.json:1 /$ref" in err


def test_another_remote_uri_is_unprovable_both_ways_naming_both(tmp_path: Path) -> None:
    _write(
        tmp_path, {"r1.json": {"$ref": "https://example.com/a.json"}, "r3.json": {"$ref": "https://example.com/b.json"}}
    )
    report = diff_files(tmp_path / "r1.json", tmp_path / "r3.json")
    assert [(c.code, c.path, c.backward, c.forward) for c in report.changes] == [
        ("ref.remote.unprovable", "/$ref", False, False)
    ]
    assert "https://example.com/a.json in OLD and https://example.com/b.json in NEW" in report.changes[0].message


def test_a_remote_ref_beside_real_changes_leaves_them_judged(tmp_path: Path) -> None:
    base: dict[str, Any] = {
        "type": "object",
        "properties": {"a": {"$ref": REMOTE + "#/$defs/A"}, "n": {"type": "integer"}},
    }
    narrowed = copy.deepcopy(base)
    narrowed["properties"]["n"]["minimum"] = 0
    _write(tmp_path, {"old/s.json": base, "new/s.json": narrowed})
    report = diff_files(tmp_path / "old" / "s.json", tmp_path / "new" / "s.json")
    assert [(c.code, c.backward, c.forward) for c in report.changes] == [("minimum.added", False, True)]


def test_a_dynamic_anchor_takes_the_same_remote_uri_back_to_unprovable() -> None:
    # A remote schema's $dynamicRef could bind to this $dynamicAnchor, and the two documents differ around it.
    old = {"$dynamicAnchor": "node", "type": "object", "properties": {"a": {"$ref": REMOTE}}}
    new = {**old, "required": ["a"]}
    report = diff_schemas(old, new)
    assert "ref.remote.unprovable" in {c.code for c in report.changes}
    assert (report.backward, report.forward) == (False, False)


def test_contracts_still_refuse_a_remote_ref(tmp_path: Path) -> None:
    _write(
        tmp_path / "c",
        {
            "contract.yaml": "contract: orders\nversion: 1.0.0\nprovider: backend\noperations:\n  place_order:\n"
            "    input: s.json\n    output: s.json\n",
            "s.json": {"$ref": REMOTE},
        },
    )
    _, problems = lint_contract(tmp_path / "c")
    assert "schema.ref_remote" in {p.code for p in problems}
    assert [p.code for p in lint_paths([tmp_path / "c" / "s.json"]).problems] == ["schema.ref_remote"]


_LEAF = st.one_of(
    st.sampled_from([{"type": "string"}, {"type": "integer", "minimum": 0}, True]),
    st.sampled_from(["https://e.com/a.json", "https://e.com/a.json#/$defs/X", "urn:x:y", "https://e.com/b"]).map(
        lambda uri: {"$ref": uri}
    ),
)
_SCHEMAS = st.recursive(
    _LEAF,
    lambda inner: st.one_of(
        st.dictionaries(st.sampled_from(["p", "q", "r"]), inner, max_size=3).map(
            lambda props: {"type": "object", "properties": props}
        ),
        inner.map(lambda item: {"type": "array", "items": item}),
        st.lists(inner, min_size=1, max_size=3).map(lambda branches: {"anyOf": branches}),
        st.tuples(inner, st.sampled_from(["https://e.com/a.json", "urn:x:y"])).map(
            lambda pair: {"allOf": [pair[0]], "$ref": pair[1]}
        ),
    ),
    max_leaves=8,
)


@settings(max_examples=60, deadline=None)
@given(_SCHEMAS)
def test_any_schema_with_remote_refs_is_compatible_with_a_copy_of_itself(schema: Any) -> None:
    # Titles differ, so that the engine compares the two (equal documents are answered without comparing).
    report = diff_schemas({"title": "old", "allOf": [schema]}, {"title": "new", "allOf": [copy.deepcopy(schema)]})
    assert (report.backward, report.forward) == (True, True), report.changes
    assert {c.code for c in report.changes} <= {"annotation.changed"}
