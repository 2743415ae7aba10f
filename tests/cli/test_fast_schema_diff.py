"""``subhive schema diff`` skips typer's parsing only where it reads the arguments exactly as typer does
(subhive/cli/_fast.py, decision 0110): for every argument list, what the fast reader returns is what typer passes."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from typer.main import _normalize_collection_value, get_command

from subhive.cli import app, main
from subhive.cli._fast import schema_diff_arguments
from subhive.cli._output import Format
from subhive.compat import Direction
from subhive.compat.proto_settings import BreakingRules

_TOKENS = st.sampled_from(
    ["a.json", "b.yaml", "dir/c d.json", "x#/defs/A", "", "-", "--", "-h", "--help", "-x", "--unknown", "--form",
     "--format", "-f", "json", "text", "JSON", "--format=json", "--format=", "-fjson", "-f=json", "-ftext",
     "--require", "backward", "full", "Full", "--require=forward", "--require=",
     "-I", "inc", "--proto-path", "--proto-path=x", "-Ix", "-I=y",
     "--breaking", "WIRE", "wire", "--breaking=FILE", "RUNTIME",
     "--id-root", "https://x.org/=schemas", "--id-root=a=b", "-V", "--version",
     "--old-id-root", "--new-id-root=https://x.org/=new", "--new-id-root", "--old-id"]
)  # fmt: skip


def _typer_reads(args: list[str]) -> dict[str, Any] | None:
    """What typer's own parsing passes to ``schema diff``'s function, or None when it refuses or stops early."""
    root = get_command(app)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            ctx = root.make_context("subhive", ["schema"])
            group = root.get_command(ctx, "schema")  # type: ignore[attr-defined]
            schema_ctx = group.make_context("schema", ["diff"], parent=ctx)
            command = group.get_command(schema_ctx, "diff")
            params = command.make_context("diff", list(args), parent=schema_ctx).params
            return {p.name: _normalize_collection_value(p, params[p.name]) for p in command.params if p.name}
        except Exception:  # a usage error, or --help ending the parse: typer's to answer
            return None


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_TOKENS, max_size=8))
@example(["a.json", "b.yaml", "-fjson", "--require", "full", "-I", "inc", "-Ix", "--breaking=FILE"])
@example(["--format", "json", "--", "a.json", "-"])
def test_whatever_the_fast_reader_reads_typer_reads_the_same(args: list[str]) -> None:
    fast = schema_diff_arguments(["schema", "diff", *args])
    if fast is not None:
        assert fast == _typer_reads(args)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["a.json", "b.json"], {}),
        (["a.json", "b.json", "--format", "json"], {"fmt": Format.json}),
        (["-fjson", "a.json", "--require=full", "b.json"], {"fmt": Format.json, "require": Direction.FULL}),
        (["a.proto", "b.proto", "-I", "x", "--proto-path=y", "--breaking", "WIRE"],
         {"proto_path": [Path("x"), Path("y")], "rules": BreakingRules.WIRE}),
        (["a.json", "b.json", "--id-root", "https://x.org/=s"], {"id_root": ["https://x.org/=s"]}),
        (["a.json", "b.json", "--old-id-root", "https://x.org/=o", "--new-id-root=https://x.org/=n"],
         {"old_id_root": ["https://x.org/=o"], "new_id_root": ["https://x.org/=n"]}),
    ],
)  # fmt: skip
def test_the_usual_forms_take_the_fast_way(args: list[str], expected: dict[str, Any]) -> None:
    fast = schema_diff_arguments(["schema", "diff", *args])
    assert fast is not None
    assert fast == _typer_reads(args)
    assert {k: v for k, v in fast.items() if v != {"fmt": Format.text}.get(k) and v is not None} == {
        "old": Path(args[0] if not args[0].startswith("-") else "a.json"),
        "new": Path("b.json" if "b.json" in args else "b.proto"),
        **expected,
    }


@pytest.mark.parametrize(
    "args",
    [["a.json"], ["a.json", "b.json", "--help"], ["a.json", "b.json", "-f", "xml"], ["a.json", "b.json", "--nope"]],
)
def test_anything_else_is_left_to_typer_and_answered_as_before(
    capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    assert schema_diff_arguments(["schema", "diff", *args]) is None
    code = main(["schema", "diff", *args])
    out, err = capsys.readouterr()
    assert code == (0 if "--help" in args else 2)
    assert ("Usage: subhive schema diff" in out) if "--help" in args else ("Usage:" in err or "Error" in err)


def test_a_failed_requirement_still_exits_1(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text('{"type": "number"}')
    new.write_text('{"type": "integer"}')
    assert schema_diff_arguments(["schema", "diff", str(old), str(new), "--require", "backward"]) is not None
    assert main(["schema", "diff", str(old), str(new), "--require", "backward"]) == 1
    assert main(["schema", "diff", str(old), str(new), "--require", "forward"]) == 0
    assert "check.incompatible" in capsys.readouterr().err
