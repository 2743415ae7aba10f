"""The protobuf engine's API: compiling with the real protoc, errors on bad input, caching, paths, codes.

The rules themselves are exercised by the corpus (test_protobuf_corpus.py); the facts about the protobuf
runtime that those rules rest on are checked here against the real runtime.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory

from subhive.compat import Direction
from subhive.compat.protobuf import CODES, compile_proto, diff_protos
from subhive.errors import ContractInvalid, InputError, UsageError

REPO = Path(__file__).resolve().parents[2]
HEAD = 'syntax = "proto3";\npackage shop.v1;\n'


def write(directory: Path, name: str, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text)
    return path


def pair(tmp_path: Path, old: str, new: str, *, head: str = HEAD) -> tuple[Path, Path]:
    return write(tmp_path / "old", "shop.proto", head + old), write(tmp_path / "new", "shop.proto", head + new)


Source = Path | str | descriptor_pb2.FileDescriptorSet


def codes_at(old: Source, new: Source) -> set[tuple[str, str]]:
    return {(c.code, c.path) for c in diff_protos(old, new).changes}


# -- compiling ------------------------------------------------------------------------------------------------


def test_compile_returns_the_file_last_with_its_imports_and_source_info(tmp_path: Path) -> None:
    write(tmp_path, "common.proto", 'syntax = "proto3";\npackage shop.common;\nmessage Money { int64 cents = 1; }\n')
    path = write(
        tmp_path,
        "orders.proto",
        HEAD + 'import "common.proto";\nimport "google/protobuf/timestamp.proto";\n'
        "message Order {\n  shop.common.Money total = 1;\n  google.protobuf.Timestamp at = 2;\n}\n",
    )
    fds = compile_proto(path)
    assert [f.name for f in fds.file] == ["common.proto", "google/protobuf/timestamp.proto", "orders.proto"]
    assert fds.file[-1].message_type[0].field[0].type_name == ".shop.common.Money"
    assert fds.file[-1].source_code_info.location, "source info is kept so changes can name lines"


def test_compile_resolves_imports_under_include_dirs(tmp_path: Path) -> None:
    write(
        tmp_path / "shop", "common.proto", 'syntax = "proto3";\npackage shop.common;\nmessage Money { int64 c = 1; }\n'
    )
    path = write(
        tmp_path / "shop",
        "orders.proto",
        HEAD + 'import "shop/common.proto";\nmessage Order { shop.common.Money total = 1; }\n',
    )
    fds = compile_proto(path, include_dirs=[tmp_path])
    assert [f.name for f in fds.file] == ["shop/common.proto", "shop/orders.proto"]


def test_compile_errors_become_one_problem_per_protoc_diagnostic(tmp_path: Path) -> None:
    path = write(tmp_path, "bad.proto", HEAD + "message A {\n  Missing x = 1;\n  int32 y = 1;\n}\n")
    with pytest.raises(ContractInvalid) as caught:
        compile_proto(path)
    problems = caught.value.problems
    assert [(p.code, p.location.file, p.location.line) for p in problems] == [
        ("proto.compile", str(path), 4),
        ("proto.compile", str(path), 5),
    ]
    assert '"Missing" is not defined' in problems[0].message
    assert "Field number 1 has already been used" in problems[1].message
    assert problems[0].hint
    assert "import" in problems[0].hint


def test_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "syntax.proto", HEAD + "message A { int32 x = 1 }\n")
    with pytest.raises(ContractInvalid) as caught:
        compile_proto(path)
    (problem,) = caught.value.problems
    assert (problem.location.file, problem.location.line) == (str(path), 3)
    assert 'Expected ";"' in problem.message


def test_missing_import_points_at_the_import_line_with_a_hint(tmp_path: Path) -> None:
    path = write(tmp_path, "orders.proto", HEAD + 'import "nowhere.proto";\nmessage A { int32 x = 1; }\n')
    with pytest.raises(ContractInvalid) as caught:
        compile_proto(path)
    # One problem: protoc's "nowhere.proto: File not found." says the same with less.
    (problem,) = caught.value.problems
    assert problem.code == "proto.import_not_found"
    assert (problem.location.file, problem.location.line) == (str(path), 3)
    assert 'import "nowhere.proto" of orders.proto was not found' in problem.message
    assert f"searched, in order: {tmp_path};" in problem.message
    assert "well-known types" in problem.message
    assert problem.hint is not None
    assert "-I/--proto-path" in problem.hint
    assert "hive.toml" in problem.hint


def test_protoc_diagnostics_do_not_leak_to_stderr(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "bad.proto", HEAD + "message A { Missing x = 1; }\n")
    with pytest.raises(ContractInvalid):
        compile_proto(path)
    assert capfd.readouterr().err == ""


def test_error_in_an_imported_file_names_that_file(tmp_path: Path) -> None:
    dep = write(tmp_path, "dep.proto", 'syntax = "proto3";\nmessage D { Nope n = 1; }\n')
    path = write(tmp_path, "main.proto", HEAD + 'import "dep.proto";\nmessage A { D d = 1; }\n')
    with pytest.raises(ContractInvalid) as caught:
        compile_proto(path)
    assert (str(dep), 2) in {(p.location.file, p.location.line) for p in caught.value.problems}


@pytest.mark.parametrize(
    ("content", "code"),
    [
        (b"\x0a\x05hello\x00\x12\x03abc", "input.binary"),
        (b'syntax = "proto3";\n// caf\xe9\nmessage A {}\n', "input.encoding"),
    ],
)
def test_binary_or_non_utf8_files_are_refused_before_protoc(tmp_path: Path, content: bytes, code: str) -> None:
    path = tmp_path / "weird.proto"
    path.write_bytes(content)
    with pytest.raises(InputError) as caught:
        compile_proto(path)
    assert caught.value.code == code
    assert caught.value.location.file == str(path)
    if code == "input.encoding":
        assert caught.value.location.line == 2


def test_missing_file_directory_and_include_dir_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError) as missing:
        compile_proto(tmp_path / "absent.proto")
    assert missing.value.code == "input.not_found"
    with pytest.raises(InputError) as directory:
        compile_proto(tmp_path)
    assert directory.value.code == "input.not_a_file"
    path = write(tmp_path, "ok.proto", HEAD + "message A {}\n")
    with pytest.raises(InputError) as include:
        compile_proto(path, include_dirs=[tmp_path / "nope"])
    assert include.value.code == "input.not_found"


def test_cache_notices_a_changed_file_and_a_changed_import(tmp_path: Path) -> None:
    dep = write(tmp_path, "dep.proto", 'syntax = "proto3";\npackage dep;\nmessage D { int32 a = 1; }\n')
    path = write(tmp_path, "main.proto", HEAD + 'import "dep.proto";\nmessage A { dep.D d = 1; }\n')
    assert [f.name for f in compile_proto(path).file[0].message_type[0].field] == ["a"]
    dep.write_text('syntax = "proto3";\npackage dep;\nmessage D { int32 b = 1; }\n')
    assert [f.name for f in compile_proto(path).file[0].message_type[0].field] == ["b"]
    path.write_text(HEAD + 'import "dep.proto";\nmessage A { dep.D d = 1; }\nmessage B {}\n')
    assert [m.name for m in compile_proto(path).file[-1].message_type] == ["A", "B"]


def test_callers_cannot_corrupt_the_cache(tmp_path: Path) -> None:
    path = write(tmp_path, "main.proto", HEAD + "message A { int32 a = 1; }\n")
    first = compile_proto(path)
    first.file[-1].message_type[0].name = "Mangled"
    assert compile_proto(path).file[-1].message_type[0].name == "A"


def test_concurrent_compiles_each_get_their_own_result(tmp_path: Path) -> None:
    paths = [write(tmp_path / f"d{i}", "x.proto", HEAD + f"message M{i} {{ int32 f{i} = 1; }}\n") for i in range(8)]
    results: dict[int, str] = {}

    def work(i: int) -> None:
        results[i] = compile_proto(paths[i]).file[-1].message_type[0].name

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {i: f"M{i}" for i in range(8)}


# -- diff_protos: inputs, paths, codes ------------------------------------------------------------------------


def test_diff_accepts_descriptor_sets_and_paths_alike(tmp_path: Path) -> None:
    old, new = pair(tmp_path, "message A { int32 a = 1; }\n", "message A { int64 a = 1; }\n")
    expected = {("field.type_widened", "shop.v1.A.a")}
    assert codes_at(old, new) == expected
    assert codes_at(compile_proto(old), compile_proto(new)) == expected
    assert codes_at(str(old), compile_proto(new)) == expected


def test_diff_refuses_other_argument_types(tmp_path: Path) -> None:
    old, _ = pair(tmp_path, "message A {}\n", "message A {}\n")
    with pytest.raises(UsageError):
        diff_protos(old, {"file": []})  # type: ignore[arg-type]


def test_descriptor_set_missing_an_import_is_an_input_error(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "a.proto",
        HEAD + 'import "google/protobuf/timestamp.proto";\nmessage A { google.protobuf.Timestamp t = 1; }\n',
    )
    fds = compile_proto(path)
    del fds.file[0]  # drop timestamp.proto
    with pytest.raises(InputError) as caught:
        diff_protos(fds, fds)
    assert caught.value.code == "proto.descriptor_invalid"
    assert "timestamp.proto" in caught.value.message


def test_paths_are_dotted_proto_paths(tmp_path: Path) -> None:
    old, new = pair(
        tmp_path,
        "message Order {\n  message Line { int32 qty = 1; }\n  Line line = 1;\n}\n"
        "enum Kind { KIND_UNSPECIFIED = 0; KIND_A = 1; }\n"
        "service Orders { rpc Get(Order) returns (Order); rpc Drop(Order) returns (Order); }\n",
        "message Order {\n  message Line { int64 qty = 1; }\n  Line line = 1;\n}\n"
        "enum Kind { KIND_UNSPECIFIED = 0; KIND_A = 1; KIND_B = 2; }\n"
        "service Orders { rpc Get(Order) returns (Order); }\n",
    )
    assert codes_at(old, new) == {
        ("field.type_widened", "shop.v1.Order.Line.qty"),
        ("enum_value.added", "shop.v1.Kind.KIND_B"),
        ("rpc.removed", "shop.v1.Orders.Drop"),
    }


def test_changes_name_the_file_and_line(tmp_path: Path) -> None:
    old, new = pair(
        tmp_path, "message A {\n  int32 a = 1;\n  string gone = 2;\n}\n", "message A {\n  int64 a = 1;\n}\n"
    )
    messages = {c.code: c.message for c in diff_protos(old, new).changes}
    assert messages["field.type_widened"].endswith("[shop.proto:4]")  # the new line of a
    assert messages["field.removed"].endswith("[shop.proto:5]")  # the old line of gone


def test_package_move_is_reported_once_and_types_still_match(tmp_path: Path) -> None:
    old = write(tmp_path / "old", "a.proto", 'syntax = "proto3";\npackage shop.v1;\nmessage A { int32 a = 1; }\n')
    new = write(tmp_path / "new", "a.proto", 'syntax = "proto3";\npackage shop.v2;\nmessage A { int64 a = 1; }\n')
    assert codes_at(old, new) == {("package.changed", "shop.v2"), ("field.type_widened", "shop.v2.A.a")}


def test_dropping_an_import_is_not_a_removed_type(tmp_path: Path) -> None:
    old, new = pair(
        tmp_path,
        'import "google/protobuf/timestamp.proto";\nmessage A {\n  google.protobuf.Timestamp at = 1;\n}\n',
        "message A {\n  int64 at = 1;\n}\n",
    )
    assert codes_at(old, new) == {("field.type_changed", "shop.v1.A.at")}


def test_renamed_type_is_compared_structurally_under_the_field_path(tmp_path: Path) -> None:
    both = "message Customer { string email = 1; }\nmessage Client { string email = 1; int32 age = 2; }\n"
    old, new = pair(tmp_path, both + "message A { Customer who = 1; }\n", both + "message A { Client who = 1; }\n")
    report = diff_protos(old, new)
    assert {(c.code, c.path) for c in report.changes} == {
        ("field.message_type_changed", "shop.v1.A.who"),
        ("field.added", "shop.v1.A.who.age"),
    }
    assert report.compatible(Direction.FULL)


def test_deep_chains_of_renamed_recursive_types_stay_fast(tmp_path: Path) -> None:
    # Each level refers to the next one twice: without memoization this is 2**20 comparisons.
    def chain(prefix: str) -> str:
        text = "".join(
            f"message {prefix}{i} {{ {prefix}{i + 1} a = 1; {prefix}{i + 1} b = 2; {prefix}0 loop = 3; }}\n"
            for i in range(20)
        )
        return text + f"message {prefix}20 {{ int32 v = 1; }}\n"

    both = chain("X") + chain("Y")
    old, new = pair(tmp_path, both + "message Root { X0 r = 1; }\n", both + "message Root { Y0 r = 1; }\n")
    report = diff_protos(old, new)
    assert report.backward
    assert report.forward
    # Each pair of types is compared once: Root.r, then fields a and b of each of the 20 levels (the loop
    # back to X0 is inside the comparison in progress and adds nothing).
    assert len(report.changes) == 1 + 2 * 20


def test_every_code_is_documented() -> None:
    section = (REPO / "docs" / "compat-codes.md").read_text().split("## Protobuf", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"`([a-z_0-9]+\.[a-z_0-9.]+)`", section))
    assert set(CODES) <= documented, f"undocumented: {sorted(set(CODES) - documented)}"
    assert all(description.strip() for description in CODES.values())


# -- facts about the protobuf runtime that the rules rest on --------------------------------------------------


def classes(tmp_path: Path, name: str, text: str) -> dict[str, Any]:
    """The message classes of ``text`` by full name. Made at run time, so their fields are unknown to the type
    checker: typed ``Any`` here rather than ``type[Message]``, whose stubs reject every field access."""
    fds = compile_proto(write(tmp_path / name, "m.proto", HEAD + text))
    return dict(message_factory.GetMessages(list(fds.file), pool=descriptor_pool.DescriptorPool()))


def test_strict_json_readers_reject_a_reserved_name_tolerant_ones_skip_it(tmp_path: Path) -> None:
    # Why field.removed_reserved keeps backward only under the tolerant-reader assumption (see the docs).
    old = classes(tmp_path, "old", "message A { string id = 1; string note = 2; }\n")["shop.v1.A"]
    new = classes(tmp_path, "new", 'message A { reserved 2; reserved "note"; string id = 1; }\n')["shop.v1.A"]
    text = json_format.MessageToJson(old(id="x", note="n"))
    with pytest.raises(json_format.ParseError):
        json_format.Parse(text, new())
    assert json_format.Parse(text, new(), ignore_unknown_fields=True).id == "x"
    assert new.FromString(old(id="x", note="n").SerializeToString()).id == "x"


def test_tolerant_json_readers_silently_drop_an_unknown_enum_name(tmp_path: Path) -> None:
    # Why enum_value.added breaks forward: the old reader loses the value without an error.
    enum = "enum K { K_UNSPECIFIED = 0; K_A = 1;%s }\nmessage A { K k = 1; }\n"
    old = classes(tmp_path, "old", enum % "")["shop.v1.A"]
    new = classes(tmp_path, "new", enum % " K_B = 2;")["shop.v1.A"]
    read = json_format.Parse(json_format.MessageToJson(new(k=2)), old(), ignore_unknown_fields=True)
    assert read.k == 0
    assert old.FromString(new(k=2).SerializeToString()).k == 2  # binary keeps it: the loss is JSON's


def test_narrowing_truncates_silently_on_the_wire(tmp_path: Path) -> None:
    old = classes(tmp_path, "old", "message A { int64 v = 1; }\n")["shop.v1.A"]
    new = classes(tmp_path, "new", "message A { int32 v = 1; }\n")["shop.v1.A"]
    assert new.FromString(old(v=2**40 + 7).SerializeToString()).v == 7


def test_two_members_of_a_new_oneof_lose_data(tmp_path: Path) -> None:
    old = classes(tmp_path, "old", "message A { string a = 1; string b = 2; }\n")["shop.v1.A"]
    new = classes(tmp_path, "new", "message A { oneof o { string a = 1; string b = 2; } }\n")["shop.v1.A"]
    written = old(a="x", b="y")
    read = new.FromString(written.SerializeToString())
    assert (read.a, read.b) == ("", "y")
    with pytest.raises(json_format.ParseError):
        json_format.Parse(json_format.MessageToJson(written), new(), ignore_unknown_fields=True)


def test_a_renamed_field_loses_its_value_in_json(tmp_path: Path) -> None:
    old = classes(tmp_path, "old", "message A { string note = 1; }\n")["shop.v1.A"]
    new = classes(tmp_path, "new", "message A { string remark = 1; }\n")["shop.v1.A"]
    text = json_format.MessageToJson(old(note="n"))
    assert json_format.Parse(text, new(), ignore_unknown_fields=True).remark == ""
    assert new.FromString(old(note="n").SerializeToString()).remark == "n"


_OPTION = 'import "google/protobuf/descriptor.proto";\nextend google.protobuf.FieldOptions { %s unit = 50001; }\n'


def test_setting_or_clearing_a_custom_option_value_is_not_compared(tmp_path: Path) -> None:
    old, new = pair(
        tmp_path,
        _OPTION % "string" + 'message A { int32 weight = 1 [(unit) = "kg"]; }\n',
        _OPTION % "string" + "message A { int32 weight = 1; }\n",
    )
    assert diff_protos(old, new).changes == ()


def test_a_custom_option_definition_is_judged_like_any_extension(tmp_path: Path) -> None:
    """Option values travel inside descriptors that reflection reads at run time: a type change misreads them."""
    old, new = pair(tmp_path, _OPTION % "string" + "message A {}\n", _OPTION % "int32" + "message A {}\n")
    changes = {c.code: c for c in diff_protos(old, new).changes}
    assert "field.type_changed" in changes
    changed = changes["field.type_changed"]
    assert (changed.path, changed.backward, changed.forward) == ("shop.v1.unit", False, False)
    gone = diff_protos(old, pair(tmp_path / "gone", "", "message A {}\n")[1]).changes
    assert [(c.code, c.path) for c in gone] == [("extension.removed", "shop.v1.unit")]


def test_dropping_java_utf8_checks_changes_the_generated_code_of_string_fields(tmp_path: Path) -> None:
    checked = 'syntax = "proto2";\npackage shop.v1;\noption java_string_check_utf8 = true;\n'
    plain = 'syntax = "proto2";\npackage shop.v1;\n'
    body = "message A { optional string name = 1; map<string, int32> tags = 2; optional int32 n = 3; }\n"
    old, new = pair(tmp_path, body, body, head=checked)
    new = write(tmp_path / "new", "shop.proto", plain + body)
    package = diff_protos(old, new, rules="PACKAGE").changes
    assert sorted((c.code, c.path) for c in package if not (c.backward and c.forward)) == [
        ("field.option_changed", "shop.v1.A.name"),
        ("field.option_changed", "shop.v1.A.tags"),
    ]
    assert all(c.backward and c.forward for c in diff_protos(old, new).changes)  # the encodings are the same
