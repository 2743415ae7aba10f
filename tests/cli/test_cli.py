"""The ``subhive`` command line: exit codes, output formats, and errors without tracebacks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import object_schema, orders_manifest, write_contract
from tests.kit import cli

REPO = Path(__file__).resolve().parents[2]
ORDERS = REPO / "contracts" / "orders"


def test_help_lists_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "--help")
    assert code == 0
    for command in ("contract", "schema", "version"):
        assert command in out


@pytest.mark.parametrize(
    "command", [["schema", "diff"], ["contract", "lint"], ["contract", "check"], ["contract", "diff"]]
)
def test_every_command_help_has_an_example(capsys: pytest.CaptureFixture[str], command: list[str]) -> None:
    code, out, _ = cli(capsys, *command, "--help")
    assert code == 0
    assert "Example: subhive " + " ".join(command) in out


def test_schema_diff_json_has_exactly_the_documented_shape(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text('{"type": "integer"}')
    new.write_text('{"type": "number"}')
    code, out, _ = cli(capsys, "schema", "diff", str(old), str(new), "--format", "json")
    assert code == 0
    report = json.loads(out)
    assert set(report) == {"backward", "forward", "changes"}
    assert (report["backward"], report["forward"]) == (True, False)  # every integer is a number, not vice versa
    assert report["changes"]
    for change in report["changes"]:
        assert set(change) == {"code", "path", "backward", "forward", "message"}


def test_schema_diff_text_puts_the_verdict_first(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    old, new = tmp_path / "old.yaml", tmp_path / "new.yaml"
    old.write_text("type: object\nproperties:\n  a: {type: string}\n")
    new.write_text("type: object\nproperties:\n  a: {type: string}\nrequired: [a]\n")
    code, out, _ = cli(capsys, "schema", "diff", str(old), str(new))
    assert code == 0
    first, *rest = out.splitlines()
    assert first.startswith("backward: NOT compatible")
    assert "forward: compatible" in first
    assert any("/required" in line for line in rest)


def test_schema_diff_require_turns_the_verdict_into_an_exit_code(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text('{"type": "string"}')
    new.write_text('{"type": "string", "maxLength": 3}')
    assert cli(capsys, "schema", "diff", str(old), str(new), "--require", "forward")[0] == 0
    code, _, err = cli(capsys, "schema", "diff", str(old), str(new), "--require", "backward")
    assert code == 1
    assert "not backward compatible" in err


def test_integer_bounds_beyond_float_range_are_compared_exactly(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text('{"type": "integer", "maximum": 1' + "0" * 400 + "}")
    new.write_text('{"type": "integer", "maximum": 2' + "0" * 400 + "}")
    code, out, _ = cli(capsys, "schema", "diff", str(old), str(new), "--format", "json")
    assert code == 0
    report = json.loads(out)
    assert (report["backward"], report["forward"]) == (True, False)
    assert [c["code"] for c in report["changes"]] == ["maximum.relaxed"]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"type": "string",\n "maxLength": }', "invalid JSON"),
        (b"\x00\x01\x02garbage", "binary"),
        ('{"type": "strin"}', "/type"),
        # A URL is compared by its URI (decision 0141); a file: URI stays an error.
        ('{"$ref": "file:///etc/schema.json"}', "file: URI"),
    ],
)
def test_bad_schema_input_exits_2_naming_the_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str | bytes, expected: str
) -> None:
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text('{"type": "string"}')
    bad.write_bytes(content.encode() if isinstance(content, str) else content)
    code, _, err = cli(capsys, "schema", "diff", str(good), str(bad))
    assert code == 2
    assert str(bad) in err
    assert expected in err
    assert "Traceback" not in err


def test_missing_file_and_mixed_kinds_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    schema = tmp_path / "a.json"
    schema.write_text("{}")
    code, _, err = cli(capsys, "schema", "diff", str(schema), str(tmp_path / "missing.json"))
    assert code == 2
    assert "file not found" in err
    proto = tmp_path / "a.proto"
    proto.write_text('syntax = "proto3";\n')
    code, _, err = cli(capsys, "schema", "diff", str(schema), str(proto))
    assert code == 2
    assert "protobuf" in err


def test_errors_in_json_mode_are_json_on_stdout(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = cli(capsys, "schema", "diff", str(tmp_path / "x.json"), str(tmp_path / "y.json"), "-f", "json")
    assert code == 2
    error = json.loads(out)
    assert error["error"] == "input.not_found"
    assert error["problems"][0]["file"] == str(tmp_path / "x.json")


def test_contract_lint_example_contracts_is_clean(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "contract", "lint", str(REPO / "contracts"), "--format", "json")
    assert code == 0
    result = json.loads(out)
    assert result["ok"] is True
    assert result["problems"] == []
    assert {(c["name"], c["version"]) for c in result["contracts"]} >= {
        ("orders", "1.0.0"),
        ("orders", "1.1.0"),
        ("orders", "2.0.0"),
        ("inventory", "1.0.0"),
    }


def test_contract_lint_reports_every_problem_and_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    contract = tmp_path / "orders" / "1.0.0"
    contract.mkdir(parents=True)
    (contract / "contract.yaml").write_text(
        "contract: Orders.v1\nversion: 1.0\nprovider: backend\noperations:\n"
        "  place:\n    input: missing.json\n    output: missing.json\n"
    )
    code, _, err = cli(capsys, "contract", "lint", str(tmp_path))
    assert code == 2
    assert "contract.yaml:1" in err  # the invalid name, on its line
    assert "contract.yaml:2" in err  # the invalid version, on its line
    assert "missing.json" in err
    assert "Traceback" not in err


def test_contract_check_accepts_an_honest_minor(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "contract", "check", str(ORDERS / "1.1.0"), "--against", str(ORDERS / "1.0.0"))
    assert code == 0
    assert "semver: ok (a minor bump)" in out


def test_contract_check_refuses_a_hidden_break(capsys: pytest.CaptureFixture[str]) -> None:
    refused = REPO / "examples" / "semver-refused" / "orders" / "1.2.0"
    code, out, err = cli(capsys, "contract", "check", str(refused), "--against", str(ORDERS / "1.1.0"), "-f", "json")
    assert code == 1
    result = json.loads(out)  # one JSON document, even though the check failed
    assert result["semver_ok"] is False
    assert result["required_bump"] == "major"
    assert result["actual_bump"] == "minor"
    assert result["suggested_version"] == "2.0.0"
    assert [(o["part"], o["code"], o["path"]) for o in result["offending"]] == [
        ("contract", "operation.removed", "/operations/get_order")
    ]
    assert "operation.removed at contract /operations/get_order" in err


def test_below_1_the_check_says_what_is_needed_in_the_versions_own_terms(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """0.1.0 -> 0.1.1 with a breaking change: below 1.0.0 that needs 0.2.0 (a new line), not "a major bump"."""
    files: dict[str, Any] = {
        "in.json": object_schema({"sku": {"type": "string"}}, ["sku"]),
        "out.json": object_schema({"id": {"type": "string"}}),
        "event.json": object_schema({"id": {"type": "string"}}),
    }
    old = write_contract(tmp_path / "old", orders_manifest("0.1.0"), files)
    narrowed: dict[str, Any] = {
        **files,
        "in.json": object_schema({"sku": {"type": "string"}, "n": {"type": "integer"}}, ["sku", "n"]),
    }
    new = write_contract(tmp_path / "new", orders_manifest("0.1.1"), narrowed)
    code, out, err = cli(capsys, "contract", "check", str(new), "--against", str(old))
    assert code == 1
    assert "orders 0.1.0 -> 0.1.1: BREAKING, needs a new line (0.2.0)" in out
    assert "orders 0.1.0 -> 0.1.1 is a compatible bump, but the changes need a new line (0.2.0)" in err
    assert "major" not in out + err
    assert "minor" not in out + err
    assert "publish it as 0.2.0 or later" in err


def test_a_version_against_itself_needs_no_bump(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "contract", "diff", str(ORDERS / "1.1.0"), str(ORDERS / "1.1.0"))
    assert code == 0
    assert "orders 1.1.0 -> 1.1.0: compatible, no changes" in out
    assert "none" not in out
    code, out, _ = cli(capsys, "contract", "check", str(ORDERS / "1.1.0"), "--against", str(ORDERS / "1.1.0"))
    assert (code, "semver: ok (no bump)" in out) == (0, True)


def test_contract_diff_exits_0_even_when_breaking(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "contract", "diff", str(ORDERS / "1.1.0"), str(ORDERS / "2.0.0"))
    assert code == 0
    assert "BREAKING" in out
    assert "required" in out


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(capsys, "schema", "diff")[0] == 2
    assert cli(capsys, "no-such-command")[0] == 2
    assert cli(capsys, "schema", "diff", "a.json", "b.json", "--format", "xml")[0] == 2


def test_console_script_runs_as_a_real_process(tmp_path: Path) -> None:
    exe = Path(sys.executable).parent / "subhive"
    assert exe.exists(), "the subhive console script is installed with the package"
    garbage = tmp_path / "garbage.proto"
    garbage.write_bytes(os.urandom(2048))
    good = tmp_path / "good.proto"
    good.write_text('syntax = "proto3";\nmessage A { int32 x = 1; }\n')
    proc = subprocess.run(
        [str(exe), "schema", "diff", str(good), str(garbage)], capture_output=True, text=True, check=False, timeout=120
    )
    assert proc.returncode == 2
    assert str(garbage) in proc.stderr
    assert "Traceback" not in proc.stderr
