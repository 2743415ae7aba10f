"""``subhive contract lint|check|diff``: contracts as a whole."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from .._id_roots import extra_id_roots
from ..compat.contract_check import ContractCheck, check_contract
from ..compat.proto_settings import extra_proto_paths
from ..errors import CheckFailed, ContractInvalid, InputError, Problem, SubhiveError
from ..semver import Bump
from ._output import Format, change_effect, err_console, fail_check, out_console, print_json, print_problems
from ._schema import IdRootOption, ProtoPathOption, print_report

contract_app = typer.Typer(help="Lint, compare and check versioned contracts.", no_args_is_help=True)

FormatOption = Annotated[Format, typer.Option("--format", "-f", help="Output format.")]


@contract_app.command("lint")
def lint(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="Contract directories, trees of contracts, contract.yaml, schema or .proto files.", show_default=False
        ),
    ],
    fmt: FormatOption = Format.text,
    proto_path: ProtoPathOption = None,
    id_root: IdRootOption = None,
) -> None:
    """Check contracts fully: manifest, semver, schemas against their dialect's meta-schema, $refs, .proto files.

    Exits 0 when everything is valid and 2 when any problem is found; every problem names its file, line and
    JSON pointer, and says how to fix it.

    Example: subhive contract lint contracts/
    Example: subhive contract lint schemas/json/package.json --id-root https://www.schemastore.org/=schemas/json
    """
    from ..contract import LintResult, lint_paths
    from ._manifests import manifest_problems

    with extra_proto_paths(proto_path or ()), extra_id_roots(id_root or ()):
        result = lint_paths(paths)
    # Inside a workspace, its sub-hive manifests too: a broken one hides its hive from every other command.
    manifests = manifest_problems(paths[0] if paths[0].is_dir() else paths[0].parent) if paths else ()
    if manifests:
        result = LintResult(
            result.problems + tuple(p for p in manifests if p not in result.problems), result.contracts, result.warnings
        )
    if fmt is Format.json:
        print_json(
            {
                "ok": result.ok,
                "contracts": [
                    {"name": c.name, "version": str(c.version), "path": str(c.directory)} for c in result.contracts
                ],
                "problems": [p.to_dict() for p in result.problems],
                "warnings": [p.to_dict() for p in result.warnings],
            }
        )
    else:
        print_problems(result.problems)
        print_problems(result.warnings, label="[yellow]warning[/]")
        count = len(result.contracts)
        summary = f"{count} contract{'s' if count != 1 else ''} checked"
        if result.ok:
            err_console.print(f"[green]ok[/]: {summary}, no problems")
        else:
            err_console.print(
                f"[bold red]failed[/]: {summary}, {len(result.problems)} problem"
                f"{'s' if len(result.problems) != 1 else ''}"
            )
    if not result.ok:
        raise typer.Exit(2)


@contract_app.command("check")
def check(
    new: Annotated[
        Path | None,
        typer.Argument(
            help="The new contract version's directory (none: check the workspace's tree against its lock).",
            show_default=False,
        ),
    ] = None,
    against: Annotated[
        Path | None, typer.Option("--against", help="The previous version's directory.", show_default=False)
    ] = None,
    workspace: Annotated[Path, typer.Option("--workspace", "-C", help="Look for hive.toml from here upwards.")] = Path(
        "."
    ),
    fmt: FormatOption = Format.text,
    proto_path: ProtoPathOption = None,
) -> None:
    """Check a new contract version against the previous one: compatibility per part, and its semver bump.

    Operation inputs may only grow (backward), outputs and events may only shrink (forward), protobuf
    services must stay wire compatible both ways. Breaking needs a major bump, additive a minor, docs-only
    a patch. Exits 1 when the version bump is too small, listing the changes that need more.

    Without NEW, checks the workspace's tree against its lock instead: accepted versions edited in place,
    requirements no accepted version meets, and events a consumer waits for on a line its provider never
    publishes on. Exits 1 when there is any.

    Example: subhive contract check contracts/orders/2.0.0 --against contracts/orders/1.1.0
    """
    if new is None:
        _check_tree(workspace, fmt)
        return
    if against is None:
        raise InputError(
            "contract check NEW needs --against OLD",
            code="usage.missing_option",
            hint="subhive contract check contracts/orders/2.0.0 --against contracts/orders/1.1.0; "
            "without NEW it checks the workspace's tree",
        )
    result = _check(new, against, proto_path)
    if fmt is Format.json:
        print_json(result.to_dict())
    else:
        _print_check(result, semver=True)
    _fail_on_an_inconsistent_lock(new, result.name, fmt)
    if not result.semver_ok:
        fail_check(
            CheckFailed(
                _semver_message(result),
                code="semver.bump_too_small",
                hint=f"publish it as {result.suggested_version()} or later, or undo the changes",
            ),
            fmt,
        )


@contract_app.command("diff")
def diff(
    old: Annotated[Path, typer.Argument(help="The old contract version's directory.", show_default=False)],
    new: Annotated[Path, typer.Argument(help="The new contract version's directory.", show_default=False)],
    fmt: FormatOption = Format.text,
    proto_path: ProtoPathOption = None,
) -> None:
    """Show every change between two versions of a contract, per part, with the direction each part needs.

    Unlike `check`, it does not judge the version numbers and exits 0 whatever changed.

    Example: subhive contract diff contracts/orders/1.0.0 contracts/orders/1.1.0
    """
    result = _check(new, old, proto_path)
    if fmt is Format.json:
        print_json(result.to_dict())
    else:
        _print_check(result, semver=False)


def _fail_on_an_inconsistent_lock(path: Path, name: str, fmt: Format) -> None:
    """Inside a workspace, an accepted version of ``name`` that no longer matches contracts.lock makes the
    check's answer about files nobody accepted: say so (exit 2) rather than let it pass unnoticed."""
    from ..root_hive import LockInconsistent, check_lock
    from ..workspace import find_root

    try:
        ws = find_root(path if path.is_dir() else path.parent)
    except SubhiveError:
        return  # contracts outside a workspace have no lock
    problems = check_lock(ws, names={name})
    if problems:
        fail_check(LockInconsistent(problems), fmt)


def _check_tree(workspace: Path, fmt: Format) -> None:
    from ..codegen import check_tree
    from ..workspace import open_workspace

    problems = check_tree(open_workspace(workspace))
    if fmt is Format.json:
        print_json({"ok": not problems, "problems": [p.to_dict() for p in problems]})
    else:
        print_problems(problems)
        if not problems:
            err_console.print(
                "[green]ok[/]: the tree and its lock agree: accepted versions intact, every "
                "requirement met, every consumed event published"
            )
    if problems:
        raise typer.Exit(1)


def _check(new: Path, old: Path, proto_path: list[Path] | None = None) -> ContractCheck:
    from ..contract import Contract, load_contract

    # load_contract runs every lint check; collect both sides' problems so one run shows them all.
    loaded: list[Contract] = []
    problems: list[Problem] = []
    with extra_proto_paths(proto_path or ()):
        for path in (new, old):
            try:
                loaded.append(load_contract(path))
            except SubhiveError as exc:
                problems.extend(exc.problems)
        if problems:
            raise ContractInvalid(problems)
        return check_contract(*loaded)


def _semver_message(result: ContractCheck) -> str:
    if result.new_version <= result.old_version:
        return f"version {result.new_version} is not newer than {result.old_version}: accepted versions are immutable"
    offending = result.offending()
    listed = ", ".join(f"{c.code} at {part} {c.path or '/'}" for part, c in offending[:3])
    more = f" and {len(offending) - 3} more" if len(offending) > 3 else ""
    old = result.old_version
    return (
        f"{result.name} {old} -> {result.new_version} is {old.describe_bump(result.actual_bump)}, "
        f"but the changes need {_need(result)}: {listed}{more}"
    )


def _need(result: ContractCheck) -> str:
    """What the changes need, in the old version's own terms: "a major bump (2.0.0)", "a new line (0.2.0)"."""
    if result.required_bump is Bump.NONE:
        return "no bump"
    return f"{result.old_version.describe_bump(result.required_bump)} ({result.suggested_version()})"


def _print_check(result: ContractCheck, *, semver: bool) -> None:
    out_console.print(
        f"[bold]{escape(result.name)}[/] {result.old_version} -> {result.new_version}: "
        + ("[green]compatible[/]" if result.compatible else "[bold red]BREAKING[/]")
        + (f", needs {_need(result)}" if result.required_bump is not Bump.NONE else ", no changes")
    )
    for part in result.parts:
        if not part.report.changes:
            continue
        mark = "[green]ok[/]" if part.compatible else "[bold red]BREAKS[/]"
        out_console.print(f"  {escape(part.part)} [dim](must stay {part.direction.value})[/]: {mark}")
        print_report(part.report, indent="    ")
    if semver:
        if result.semver_ok:
            out_console.print(f"semver: [green]ok[/] ({result.old_version.describe_bump(result.actual_bump)})")
        else:
            out_console.print(f"semver: [bold red]refused[/]: {escape(_semver_message(result))}")
            for part_name, change in result.offending():
                out_console.print(
                    f"  {change_effect(change)} {escape(part_name)} {escape(change.path or '/')}  "
                    f"{escape(change.message)} [dim]\\[{change.code}][/]"
                )


@contract_app.command("import")
def import_(
    document: Annotated[
        Path, typer.Argument(help="An OpenAPI 3.0/3.1 or AsyncAPI 2.x/3.0 document (YAML or JSON).", show_default=False)
    ],
    name: Annotated[str | None, typer.Option("--name", help="The contract's name (default: from info.title).")] = None,
    provider: Annotated[
        str | None, typer.Option("--provider", help="The hive that serves it (default: from the contract's name).")
    ] = None,
    version: Annotated[str | None, typer.Option("--version", help="X.Y.Z (default: info.version).")] = None,
    out: Annotated[Path, typer.Option("--out", help="The contracts directory to write into.")] = Path("contracts"),
) -> None:
    """Turn an OpenAPI or AsyncAPI document into a new contract version: OUT/NAME/VERSION/.

    OpenAPI operations become operations (input: their parameters and JSON body, output: the 2XX JSON reply);
    AsyncAPI messages become events. Relative $refs to other files are followed, never URLs. Every problem in
    the document is listed with its file and JSON pointer (exit 2) and nothing is written.

    Example: subhive contract import petstore.yaml --provider pets --out contracts/
    """
    from ..contract import import_document

    result = import_document(document, out=out, name=name, provider=provider, version=version)
    print_problems(result.warnings, label="[yellow]warning[/]")
    err_console.print(
        f"[green]ok[/]: wrote {escape(str(result.directory))}: {len(result.operations)} operations, "
        f"{len(result.events)} events"
    )


@contract_app.command("export")
def export(
    asyncapi: Annotated[bool, typer.Option("--asyncapi", help="Write an AsyncAPI 3.0 document.")] = False,
    out: Annotated[Path | None, typer.Option("--out", help="The file to write (default: standard output).")] = None,
    workspace: Annotated[Path, typer.Option("--workspace", "-C", help="Look for hive.toml from here upwards.")] = Path(
        "."
    ),
) -> None:
    """Describe the workspace's accepted contracts (contracts.lock) as an AsyncAPI 3.0 document: a channel per NATS
    subject, the headers the bus sets, the message schemas.

    Example: subhive contract export --asyncapi --out asyncapi.yaml
    """
    from ..bus import export_asyncapi, render_asyncapi

    if not asyncapi:
        raise InputError(
            "say which format to export", code="usage.missing_option", hint="subhive contract export --asyncapi"
        )
    document = export_asyncapi(workspace)
    text = render_asyncapi(document, json_output=out is not None and out.suffix == ".json")
    if out is None:
        out_console.file.write(text)
    else:
        out.write_text(text, encoding="utf-8")
        err_console.print(f"[green]ok[/]: wrote {escape(str(out))}: {len(document['channels'])} channels")


# `propose` and `list` talk to the root hive; they live with the other root commands in _root.py.
from ._root import contract_list, contract_propose  # noqa: E402 - registered last, after the local commands

contract_app.command("propose")(contract_propose)
contract_app.command("list")(contract_list)
