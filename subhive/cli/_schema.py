"""``subhive schema diff``: compare two JSON Schema files or two ``.proto`` files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from .._id_roots import extra_id_roots
from ..compat import Change, DiffReport, Direction, diff_files
from ..compat.proto_settings import BreakingRules
from ..errors import CheckFailed, UsageError
from ._output import Format, change_effect, fail_check, out_console, print_json, print_problems, verdict_label

#: ``-I/--proto-path``, repeatable like protoc's; shared by every command that compiles .proto files.
ProtoPathOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--proto-path",
        "-I",
        help="A directory to search for .proto imports (repeatable, searched in order, before the "
        "workspace's proto_paths, the well-known types and googleapis' common protos).",
        show_default=False,
    ),
]

#: ``--id-root PREFIX=DIR``, repeatable: where ``$ref`` URLs below PREFIX find their files (decision 0107).
IdRootOption = Annotated[
    list[str] | None,
    typer.Option(
        "--id-root",
        help="PREFIX=DIR: a $ref URL below PREFIX names the file at the same relative path under DIR (repeatable; "
        "tried before the workspace's [schemas] id_roots). A PREFIX not ending in '/' maps one URL to one file.",
        metavar="PREFIX=DIR",
        show_default=False,
    ),
]

#: ``--old-id-root`` / ``--new-id-root``: the same for one side of ``schema diff`` only (decision 0141).
OldIdRootOption = Annotated[
    list[str] | None,
    typer.Option(
        "--old-id-root",
        help="PREFIX=DIR for the OLD schema's references only (repeatable; tried before --id-root): each side "
        "reads its own copy, e.g. --old-id-root https://www.schemastore.org/=old --new-id-root "
        "https://www.schemastore.org/=new.",
        metavar="PREFIX=DIR",
        show_default=False,
    ),
]
NewIdRootOption = Annotated[
    list[str] | None,
    typer.Option(
        "--new-id-root",
        help="PREFIX=DIR for the NEW schema's references only (repeatable; tried before --id-root).",
        metavar="PREFIX=DIR",
        show_default=False,
    ),
]

schema_app = typer.Typer(help="Work with single schema files.", no_args_is_help=True)


@schema_app.command("diff")
def diff(
    old: Annotated[
        Path,
        typer.Argument(
            help="The old schema: .json, .yaml or .proto (FILE#/pointer: a schema inside a document).",
            show_default=False,
        ),
    ],
    new: Annotated[Path, typer.Argument(help="The new schema, of the same kind.", show_default=False)],
    *,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.text,
    require: Annotated[
        Direction | None,
        typer.Option(help="Exit 1 unless the verdict holds in this direction (backward, forward or full)."),
    ] = None,
    proto_path: ProtoPathOption = None,
    rules: Annotated[
        BreakingRules | None,
        typer.Option(
            "--breaking",
            help="For .proto files: the rule category that decides what breaks (default: the workspace's "
            "[protobuf] breaking, else RUNTIME).",
            show_default=False,
        ),
    ] = None,
    id_root: IdRootOption = None,
    old_id_root: OldIdRootOption = None,
    new_id_root: NewIdRootOption = None,
) -> None:
    """Compare two versions of a schema, change by change, per direction.

    backward: every instance valid under OLD is valid under NEW (new readers accept old data).
    forward: every instance valid under NEW is valid under OLD (old readers accept new data).

    Example: subhive schema diff v1/order.json v2/order.json --format json
    Example: subhive schema diff v1/orders.proto v2/orders.proto -I third_party/googleapis --breaking WIRE_JSON
    Example: subhive schema diff old/foo.json new/foo.json --old-id-root https://example.com/=old --new-id-root https://example.com/=new

    A $ref to a URL nothing maps is never fetched: the same URL on both sides is the same schema (a warning
    says so), a different one is not provably compatible. When one side reads a file of the other side's
    directory through an --id-root or hive.toml id root, its own version is not compared (ref.id_root.unprovable).
    """
    if rules is not None and old.suffix.lower() != ".proto":
        raise UsageError(
            "--breaking applies to .proto files only",
            code="usage.option_not_applicable",
            hint="JSON Schema changes are judged by what instances each version accepts",
        )
    with extra_id_roots(id_root or ()):
        report = diff_files(
            old,
            new,
            proto_paths=proto_path or (),
            breaking=rules,
            old_id_roots=old_id_root or (),
            new_id_roots=new_id_root or (),
        )
    if fmt is Format.json:
        print_json(report.to_dict())
    else:
        print_report(report)
    print_problems(report.warnings, label="[yellow]warning[/]")
    if require is not None and not report.compatible(require):
        breaking = report.breaking(require)
        fail_check(
            CheckFailed(
                f"the change is not {require.value} compatible: {_summary(breaking)}",
                code="check.incompatible",
                hint="see the changes listed; a breaking change needs a new major version",
            ),
            fmt,
        )


def _summary(changes: tuple[Change, ...], limit: int = 3) -> str:
    shown = ", ".join(f"{c.code} at {c.path or '/'}" for c in changes[:limit])
    return shown + (f" and {len(changes) - limit} more" if len(changes) > limit else "")


def print_report(report: DiffReport, *, indent: str = "") -> None:
    out_console.print(
        f"{indent}backward: {verdict_label(report.backward)}   "
        f"forward: {verdict_label(report.forward)}   "
        f"[dim]({len(report.changes)} change{'s' if len(report.changes) != 1 else ''})[/]"
    )
    for change in report.changes:
        out_console.print(
            f"{indent}  {change_effect(change)} {escape(change.path or '/')}  "
            f"{escape(change.message)} [dim]\\[{change.code}][/]"
        )
