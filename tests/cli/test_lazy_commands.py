"""Commands load when they run: ``subhive schema diff`` imports no gRPC, NATS, web or agent code, and help,
completion and every command stay what typer makes of the same commands registered eagerly (decision 0110)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import import_module
from pathlib import Path

import pytest
import typer
from typer.main import get_command
from typer.testing import CliRunner

from subhive.cli import COMMANDS, _root_options, app

REPO = Path(__file__).resolve().parents[2]

#: What a JSON Schema diff never needs (pydantic: typer's parsing does, which subhive/cli/_fast.py skips).
NOT_FOR_SCHEMA_DIFF = (
    "asyncio",
    "fastapi",
    "google.protobuf",
    "grpc",
    "grpc_tools",
    "igraph",
    "jsonschema",  # python-jsonschema: lint checks a 2020-12 schema with jsonschema-rs
    "nats",
    "openai",
    "pydantic",
    "ssl",  # through urllib.request, which only a file: $ref needs
    "starlette",
    "uvicorn",
    "websockets",
    "subhive.agent",
    "subhive.bus",
    "subhive.codegen",
    "subhive.decompose",
    "subhive.http",
    "subhive.root_hive",
    "subhive.rpc",
    "subhive.up",
)

# Runs the CLI in a fresh interpreter and reports which of the modules above it imported.
_DRIVER = """
import json, sys
from subhive.cli import main
code = main(sys.argv[1:])
watched = json.loads(sys.stdin.read())
print(json.dumps({"code": code, "loaded": sorted(m for m in watched if m in sys.modules)}), file=sys.stderr)
"""


def _run_fresh(*argv: str) -> tuple[int, list[str], str]:
    proc = subprocess.run(
        [sys.executable, "-c", _DRIVER, *argv],
        input=json.dumps(NOT_FOR_SCHEMA_DIFF),
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=60,
        check=False,
    )
    result = json.loads(proc.stderr.strip().splitlines()[-1])
    return result["code"], result["loaded"], proc.stdout


def test_schema_diff_imports_only_what_it_needs(tmp_path: Path) -> None:
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text('{"type": "object", "properties": {"a": {"type": "string", "pattern": "^[a-z]+$"}}}')
    new.write_text('{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}')
    code, loaded, out = _run_fresh("schema", "diff", str(old), str(new), "--format", "json")
    assert code == 0
    report = json.loads(out)
    assert (report["backward"], report["forward"]) == (False, False)  # required added, pattern dropped
    assert loaded == []


def test_the_driver_sees_heavy_imports_when_a_command_needs_them() -> None:
    # The same driver on the decomposer, whose command module imports its engine: proves the check can fail.
    code, loaded, _ = _run_fresh("decompose", "--help")
    assert code == 0
    assert "subhive.decompose" in loaded


def _eager_app() -> typer.Typer:
    """The app as it was before commands loaded lazily: every command imported and registered up front (typer
    lists a group's own commands first, then its sub-groups, each in the order they were added)."""
    eager = typer.Typer(
        name="subhive",
        help="Contract-first sub-hives for multi-agent work on large codebases.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        add_completion=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    eager.callback()(_root_options)
    targets = {name: getattr(import_module(module), attribute) for name, (module, attribute) in COMMANDS.items()}
    for name, target in targets.items():
        if not isinstance(target, typer.Typer):
            eager.command(name)(target)
    for name, target in targets.items():
        if isinstance(target, typer.Typer):
            eager.add_typer(target, name=name)
    return eager


def _help(application: typer.Typer, *argv: str) -> str:
    result = CliRunner().invoke(application, [*argv, "--help"], prog_name="subhive", env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    return result.output


def _every_command_path() -> list[tuple[str, ...]]:
    paths: list[tuple[str, ...]] = [()]
    for name, (module, attribute) in COMMANDS.items():
        paths.append((name,))
        target = getattr(import_module(module), attribute)
        if isinstance(target, typer.Typer):
            paths += [(name, sub.name) for sub in target.registered_commands if sub.name]
    return paths


def test_help_is_what_eager_registration_prints_for_every_command() -> None:
    eager = _eager_app()
    paths = _every_command_path()
    assert len(paths) > len(COMMANDS) + 10  # the groups' sub-commands are compared too
    for path in paths:
        assert _help(app, *path) == _help(eager, *path), path


def test_root_help_lists_every_command_with_its_summary() -> None:
    text = _help(app)
    for name in COMMANDS:
        assert f"│ {name} " in text, name
    assert "Work with single schema files." in text
    # The table keeps typer's order: plain commands first, then the groups.
    groups = [isinstance(getattr(import_module(m), a), typer.Typer) for m, a in COMMANDS.values()]
    assert groups == sorted(groups)


def _completions(application: typer.Typer, incomplete: str) -> list[tuple[str, str | None]]:
    group = get_command(application)
    with group.make_context("subhive", [], resilient_parsing=True) as ctx:
        return [(item.value, item.help) for item in group.shell_complete(ctx, incomplete)]


@pytest.mark.parametrize("incomplete", ["", "s", "co", "de"])
def test_completion_offers_the_lazy_commands_with_their_help(incomplete: str) -> None:
    got = _completions(app, incomplete)
    assert got == _completions(_eager_app(), incomplete)
    assert all(value.startswith(incomplete) for value, _ in got)
    if incomplete == "s":
        assert ("schema", "Work with single schema files.") in got


@pytest.mark.parametrize("typo", ["shema", "contrat"])
def test_a_typo_is_still_answered_with_the_close_command(typo: str) -> None:
    result = CliRunner().invoke(app, [typo], prog_name="subhive", env={"COLUMNS": "120"})
    assert result.exit_code == 2
    assert "Did you mean" in result.output
