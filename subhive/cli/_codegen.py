"""``subhive codegen``: typed stubs and mocks for every sub-hive, from the lock."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from ..compat.proto_settings import extra_proto_paths
from ..errors import ContractInvalid
from ..workspace import open_workspace
from ._output import Format, err_console, out_console, print_json, print_problems
from ._schema import ProtoPathOption

__all__ = ["codegen_command"]


def codegen_command(
    hives: Annotated[
        list[str] | None, typer.Argument(help="Sub-hives to generate for (default: all).", show_default=False)
    ] = None,
    check: Annotated[
        bool, typer.Option("--check", help="Write nothing; exit 1 listing stale or hand-edited stubs (for CI).")
    ] = False,
    workspace: Annotated[Path, typer.Option("--workspace", "-C", help="Look for hive.toml from here upwards.")] = Path(
        "."
    ),
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.text,
    proto_path: ProtoPathOption = None,
) -> None:
    """Generate stubs/<hive>/: models, a client, a handler interface, mocks and contract tests per contract.

    Only what changed is regenerated (content hashes); a run with nothing to do writes nothing and says so.
    Each hive gets packages only for the contracts it provides or consumes, at the versions in the lock.

    Example: subhive codegen web --check
    """
    from ..codegen import generate_stubs
    from ._manifests import check_manifests

    check_manifests(workspace)  # a broken manifest would make its hive's stubs vanish: fix it first (exit 2)
    ws = open_workspace(workspace)
    with extra_proto_paths(proto_path or ()):
        result = generate_stubs(ws, hives=hives or None, check=check)
    if fmt is Format.json:
        print_json(result.to_dict())
    else:
        for note in result.notes:
            err_console.print(f"note: {escape(note)}")
        for line in result.stale:
            out_console.print(f"stale: {escape(line)}")
        for path in result.written:
            out_console.print(f"wrote {escape(path)}")
        for path in result.removed:
            out_console.print(f"removed {escape(path)}")
        if not (result.written or result.removed or result.stale or result.problems):
            out_console.print(f"stubs are up to date ({len(result.unchanged)} package(s) unchanged)")
    if result.problems:
        if fmt is not Format.json:
            print_problems(result.problems)
        raise typer.Exit(ContractInvalid(result.problems).exit_code)
    if result.stale:
        if fmt is not Format.json:
            err_console.print(f"{len(result.stale)} stale: run `subhive codegen` to regenerate")
        raise typer.Exit(1)
