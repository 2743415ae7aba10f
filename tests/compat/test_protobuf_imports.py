"""Protobuf as found in the wild: googleapis imports, include paths (-I and hive.toml) and missing imports.

The .proto files are real files in temporary directories, compiled by the real protoc of grpcio-tools; the
common protos are those googleapis-common-protos installs.
"""

from __future__ import annotations

import importlib
import shutil
import sys
from pathlib import Path

import pytest

from subhive.codegen.protos import generate_protos
from subhive.compat.protobuf import (
    BreakingRules,
    compile_proto,
    diff_protos,
    extra_proto_paths,
    workspace_proto_settings,
)
from subhive.errors import ContractInvalid, InputError
from subhive.workspace import ManifestInvalid, read_config
from tests.kit import cli

ORDERS = """syntax = "proto3";
package shop.orders.v1;

import "google/api/annotations.proto";
import "google/api/field_behavior.proto";
import "google/type/money.proto";
import "google/type/date.proto";
import "google/rpc/status.proto";
import "google/protobuf/timestamp.proto";

service Orders {
  rpc GetOrder(GetOrderRequest) returns (Order) {
    option (google.api.http) = { get: "/v1/{name=orders/*}" };
  }
}

message GetOrderRequest { string name = 1 [(google.api.field_behavior) = REQUIRED]; }

message Order {
  string name = 1;
  google.type.Money total = 2;
  google.type.Date delivery = 3;
  google.rpc.Status last_error = 4;
  google.protobuf.Timestamp created = 5;
}
"""


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# -- googleapis imports -----------------------------------------------------------------------------------------


def test_googleapis_imports_compile_with_the_common_protos(tmp_path: Path) -> None:
    fds = compile_proto(write(tmp_path, "orders.proto", ORDERS))
    names = {f.name for f in fds.file}
    assert {"google/api/annotations.proto", "google/api/http.proto", "google/type/money.proto"} <= names
    assert {"google/type/date.proto", "google/rpc/status.proto", "google/protobuf/timestamp.proto"} <= names
    order = fds.file[-1]
    assert order.name == "orders.proto"
    fields = {f.name: f.type_name for f in order.message_type[1].field}
    assert fields["total"] == ".google.type.Money"
    assert fields["last_error"] == ".google.rpc.Status"


def test_googleapis_protos_diff_field_by_field(tmp_path: Path) -> None:
    old = write(tmp_path / "v1", "orders.proto", ORDERS)
    new = write(
        tmp_path / "v2",
        "orders.proto",
        ORDERS.replace("google.type.Date delivery = 3;", "google.type.Date delivery_date = 3;").replace(
            "google.rpc.Status last_error = 4;", "string last_error = 4;"
        ),
    )
    report = diff_protos(old, new)
    found = {(c.code, c.path) for c in report.changes}
    assert found == {
        ("field.renamed", "shop.orders.v1.Order.delivery_date"),
        ("field.type_changed", "shop.orders.v1.Order.last_error"),
    }
    assert (report.backward, report.forward) == (False, False)
    # A well-known or common type's own fields are never reported as if they were the contract's.
    assert diff_protos(old, old).changes == ()


LRO = """syntax = "proto3";
package acme.jobs.v1;

import "google/longrunning/operations.proto";

service Jobs {
  rpc Run(RunRequest) returns (google.longrunning.Operation) {
    option (google.longrunning.operation_info) = { response_type: "RunResponse" metadata_type: "RunMetadata" };
  }
}
message RunRequest { string name = 1; }
message RunResponse { string result = 1; }
message RunMetadata {}
"""


def test_long_running_operations_import_by_googleapis_own_file_name(tmp_path: Path) -> None:
    # googleapis-common-protos installs the file as operations_proto.proto; subhive's stand-in keeps the name.
    old = write(tmp_path / "v1", "jobs.proto", LRO)
    new = write(tmp_path / "v2", "jobs.proto", LRO.replace("rpc Run(", "rpc Start("))
    fds = compile_proto(old)
    names = [f.name for f in fds.file]
    assert "google/longrunning/operations.proto" in names
    assert "google/longrunning/operations_proto.proto" in names
    report = diff_protos(old, new)
    assert {(c.code, c.path) for c in report.changes} == {
        ("rpc.removed", "acme.jobs.v1.Jobs.Run"),
        ("rpc.added", "acme.jobs.v1.Jobs.Start"),
    }


def test_the_wellknown_types_win_over_any_other_copy_on_the_bundled_path(tmp_path: Path) -> None:
    fds = compile_proto(write(tmp_path, "orders.proto", ORDERS))
    timestamp = next(f for f in fds.file if f.name == "google/protobuf/timestamp.proto")
    assert timestamp.package == "google.protobuf"
    assert [m.name for m in timestamp.message_type] == ["Timestamp"]


# -- missing imports ------------------------------------------------------------------------------------------


MISSING = 'syntax = "proto3";\npackage acme.v1;\n\nimport "acme/common/v1/money.proto";\nmessage A { int32 x = 1; }\n'


def test_a_missing_import_names_the_import_the_importer_its_line_and_every_root(tmp_path: Path) -> None:
    path = write(tmp_path / "src", "a.proto", MISSING)
    extra = tmp_path / "vendor"
    extra.mkdir()
    with pytest.raises(ContractInvalid) as caught, extra_proto_paths([extra]):
        compile_proto(path)
    (problem,) = caught.value.problems
    assert problem.code == "proto.import_not_found"
    assert (problem.location.file, problem.location.line) == (str(path), 4)
    message = problem.message
    assert message.startswith('import "acme/common/v1/money.proto" of a.proto was not found; searched, in order: ')
    searched = message.split("searched, in order: ", 1)[1].split("; ")
    assert searched[:2] == [str(tmp_path / "src"), str(extra.resolve())]  # its own directory, then -I
    assert "well-known types of grpcio-tools" in searched[2]
    assert "googleapis common protos" in searched[3]
    assert problem.hint is not None
    assert "acme/common/v1/money.proto" in problem.hint
    assert "-I/--proto-path" in problem.hint


def test_a_missing_import_inside_an_imported_file_points_at_that_file(tmp_path: Path) -> None:
    root = tmp_path / "src"
    dep = write(root, "shop/dep.proto", 'syntax = "proto3";\npackage shop;\nimport "gone/x.proto";\n')
    path = write(root, "a.proto", 'syntax = "proto3";\npackage shop.a;\nimport "shop/dep.proto";\n')
    with pytest.raises(ContractInvalid) as caught:
        compile_proto(path)
    problem = next(p for p in caught.value.problems if p.code == "proto.import_not_found")
    assert (problem.location.file, problem.location.line) == (str(dep), 3)
    assert 'import "gone/x.proto" of dep.proto' in problem.message


def test_a_missing_googleapis_file_hints_at_a_checkout(tmp_path: Path) -> None:
    text = 'syntax = "proto3";\npackage a;\nimport "google/cloud/vision/v1/image.proto";\n'
    with pytest.raises(ContractInvalid) as caught:
        compile_proto(write(tmp_path, "a.proto", text))
    (problem,) = caught.value.problems
    assert problem.hint is not None
    assert "googleapis checkout" in problem.hint


def test_schema_diff_reports_a_missing_import_with_exit_2_and_no_traceback(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, "a.proto", MISSING)
    code, out, err = cli(capsys, "schema", "diff", str(path), str(path))
    assert code == 2
    assert "Traceback" not in out + err
    assert f"{path}:4" in err
    assert 'import "acme/common/v1/money.proto" of a.proto was not found' in err
    assert "[proto.import_not_found]" in err
    assert "hint: add the directory that holds acme/common/v1/money.proto with -I/--proto-path" in err


# -- include paths: the command line and the workspace ---------------------------------------------------------

MONEY = 'syntax = "proto3";\npackage acme.common.v1;\nmessage Money { int64 units = 1; string currency = 2; }\n'
PRICED = (
    'syntax = "proto3";\npackage acme.v1;\nimport "acme/common/v1/money.proto";\n'
    "message Price { acme.common.v1.Money amount = 1; string sku = 2; }\n"
)


def test_schema_diff_finds_imports_under_repeated_proto_paths(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    write(tmp_path / "vendor", "acme/common/v1/money.proto", MONEY)
    other = tmp_path / "other"
    other.mkdir()
    old = write(tmp_path / "v1", "price.proto", PRICED)
    new = write(tmp_path / "v2", "price.proto", PRICED.replace("string sku = 2;", "string sku = 2; int32 qty = 3;"))
    assert cli(capsys, "schema", "diff", str(old), str(new))[0] == 2  # not found without -I
    code, out, _ = cli(
        capsys, "schema", "diff", str(old), str(new), "-I", str(other), "--proto-path", str(tmp_path / "vendor")
    )
    assert code == 0
    assert "field.added" in out
    assert "acme.v1.Price.qty" in out
    code, _, err = cli(capsys, "schema", "diff", str(old), str(new), "-I", str(tmp_path / "nowhere"))
    assert (code, "include directory not found" in err) == (2, True)


def workspace(root: Path, protobuf: str) -> Path:
    write(root, "hive.toml", f'[workspace]\nname = "shop"\nformat = 1\n\n[protobuf]\n{protobuf}')
    return root


def test_the_workspace_proto_paths_serve_every_proto_inside_it(tmp_path: Path) -> None:
    root = workspace(tmp_path / "shop", 'proto_paths = ["third_party/acme"]\n')
    write(root / "third_party/acme", "acme/common/v1/money.proto", MONEY)
    path = write(root / "contracts/prices/1.0.0", "price.proto", PRICED)
    settings = workspace_proto_settings(path)
    assert settings.proto_paths == (root / "third_party/acme",)
    assert settings.source == root / "hive.toml"
    fds = compile_proto(path)
    assert [f.name for f in fds.file] == ["acme/common/v1/money.proto", "price.proto"]
    # The same file outside the workspace does not see them.
    with pytest.raises(ContractInvalid) as caught:
        compile_proto(write(tmp_path / "elsewhere", "price.proto", PRICED))
    assert caught.value.problems[0].code == "proto.import_not_found"


def test_contract_lint_and_check_use_the_workspace_proto_paths(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = workspace(tmp_path / "shop", 'proto_paths = ["third_party/acme"]\n')
    write(root / "third_party/acme", "acme/common/v1/money.proto", MONEY)
    service = "\nservice Prices { rpc Get(Price) returns (Price); }\n"
    for version, text in (("1.0.0", PRICED + service), ("1.1.0", PRICED.replace("sku = 2;", "sku = 2; int32 q = 3;"))):
        write(root / "contracts/prices" / version, "price.proto", text + ("" if "Prices" in text else service))
        write(
            root / "contracts/prices" / version,
            "contract.yaml",
            f"contract: prices\nversion: {version}\nprovider: db\ndescription: Prices.\n"
            "grpc:\n  proto: price.proto\n  service: acme.v1.Prices\n",
        )
    code, _, err = cli(capsys, "contract", "lint", str(root / "contracts"))
    assert code == 0, err
    v1, v2 = root / "contracts/prices/1.0.0", root / "contracts/prices/1.1.0"
    code, out, err = cli(capsys, "contract", "check", str(v2), "--against", str(v1), "--format", "json")
    assert code == 0, err
    assert '"field.added"' in out


def test_contract_lint_takes_proto_paths_on_the_command_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    vendor = tmp_path / "vendor"
    write(vendor, "acme/common/v1/money.proto", MONEY)
    directory = tmp_path / "contracts/prices/1.0.0"
    write(directory, "price.proto", PRICED + "service Prices { rpc Get(Price) returns (Price); }\n")
    write(
        directory,
        "contract.yaml",
        "contract: prices\nversion: 1.0.0\nprovider: db\ndescription: Prices.\n"
        "grpc:\n  proto: price.proto\n  service: acme.v1.Prices\n",
    )
    code, _, err = cli(capsys, "contract", "lint", str(directory))
    assert code == 2
    assert "proto.import_not_found" in err
    code, _, err = cli(capsys, "contract", "lint", str(directory), "-I", str(vendor))
    assert code == 0, err


def test_the_protobuf_table_is_validated_where_the_workspace_is_read(tmp_path: Path) -> None:
    root = workspace(tmp_path / "shop", 'proto_paths = ["missing"]\nbreaking = "WIRE_JSONN"\nproto_path = []\n')
    with pytest.raises(ManifestInvalid) as caught:
        read_config(root / "hive.toml")
    found = {(p.code, p.location.pointer, p.location.line) for p in caught.value.problems}
    assert found == {
        ("workspace.proto_path_missing", "/protobuf/proto_paths/0", 6),
        ("workspace.breaking_unknown", "/protobuf/breaking", 7),
        ("workspace.unknown_key", "/protobuf/proto_path", 8),
    }
    hints = {p.code: p.hint for p in caught.value.problems}
    assert hints["workspace.unknown_key"] == "did you mean 'proto_paths'?"
    # Compiling a file there says so too, rather than failing later on an import.
    with pytest.raises(InputError) as compiled:
        compile_proto(write(root / "contracts", "a.proto", 'syntax = "proto3";\n'))
    assert compiled.value.location.file == str(root / "hive.toml")


def test_the_protobuf_table_reads_back_equal(tmp_path: Path) -> None:
    root = workspace(tmp_path / "shop", 'proto_paths = ["proto"]\nbreaking = "WIRE"\n')
    (root / "proto").mkdir()
    config = read_config(root / "hive.toml")
    assert (config.proto_paths, config.breaking) == (("proto",), BreakingRules.WIRE)
    (root / "hive.toml").write_text(config.to_toml())
    assert read_config(root / "hive.toml") == config


def test_the_workspace_category_decides_schema_diff_unless_the_command_line_says(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    root = workspace(tmp_path / "shop", 'breaking = "WIRE"\n')
    text = 'syntax = "proto3";\npackage a;\nmessage M { int32 count = 1; }\n'
    old = write(root / "v1", "m.proto", text)
    new = write(root / "v2", "m.proto", text.replace("count", "total"))
    assert cli(capsys, "schema", "diff", str(old), str(new), "--require", "full")[0] == 0
    code, _, err = cli(capsys, "schema", "diff", str(old), str(new), "--require", "full", "--breaking", "WIRE_JSON")
    assert code == 1
    assert "field.renamed" in err
    code, _, err = cli(capsys, "schema", "diff", str(old), str(new), "--breaking", "SOURCE")
    assert code == 2
    assert "SOURCE" in err


# -- codegen ---------------------------------------------------------------------------------------------------


def test_codegen_compiles_googleapis_imports_and_the_module_imports(tmp_path: Path) -> None:
    source = tmp_path / "src"
    write(source, "orders.proto", ORDERS)
    out = tmp_path / "gen" / "ordpkg"
    written = generate_protos([source / "orders.proto"], proto_root=source, out_dir=out, header="# test\n")
    assert out / "orders_pb2.py" in written
    (out / "__init__.py").write_text("")
    sys.path.insert(0, str(tmp_path / "gen"))
    try:
        module = importlib.import_module("ordpkg.orders_pb2")
        method = module.DESCRIPTOR.services_by_name["Orders"].methods_by_name["GetOrder"]
        annotations = importlib.import_module("google.api.annotations_pb2")  # googleapis-common-protos' module
        rule = method.GetOptions().Extensions[annotations.http]
        assert rule.get == "/v1/{name=orders/*}"
    finally:
        sys.path.remove(str(tmp_path / "gen"))
        for name in [m for m in sys.modules if m == "ordpkg" or m.startswith("ordpkg.")]:
            del sys.modules[name]


def test_propose_resolves_imports_with_proto_paths_and_the_workspace(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from subhive.root_hive import RootHive
    from subhive.workspace import init_workspace

    monkeypatch.delenv("SUBHIVE_ROOT", raising=False)
    root = tmp_path / "shop"
    init_workspace(root)
    with RootHive.open(root) as hive_root:
        hive_root.register_hive("db", kind="db")
    vendor = tmp_path / "vendor"
    write(vendor, "acme/common/v1/money.proto", MONEY)
    for version in ("1.0.0", "1.1.0"):
        directory = root / "contracts/prices" / version
        extra = "" if version == "1.0.0" else " int32 qty = 3;"
        write(
            directory,
            "price.proto",
            PRICED.replace("string sku = 2;", "string sku = 2;" + extra)
            + "service Prices { rpc Get(Price) returns (Price); }\n",
        )
        write(
            directory,
            "contract.yaml",
            f"contract: prices\nversion: {version}\nprovider: db\ndescription: Prices.\n"
            "grpc:\n  proto: price.proto\n  service: acme.v1.Prices\n",
        )
    first = str(root / "contracts/prices/1.0.0")
    code, _, err = cli(capsys, "contract", "propose", first)
    assert code == 2
    assert "proto.import_not_found" in err
    code, out, err = cli(capsys, "contract", "propose", first, "-I", str(vendor), "--format", "json")
    assert code == 0, err
    assert '"accepted"' in out
    # The workspace's proto_paths serve the local lint and the root alike.
    shutil.copytree(vendor, root / "third_party")
    text = (root / "hive.toml").read_text()
    (root / "hive.toml").write_text(text + '\n[protobuf]\nproto_paths = ["third_party"]\n')
    code, out, err = cli(capsys, "contract", "propose", str(root / "contracts/prices/1.1.0"), "--format", "json")
    assert code == 0, err
    assert '"accepted"' in out
