"""``subhive nats accounts``: the tree's NATS accounts for the operator of a cluster ``up`` joins ([nats] urls in
hive.toml; docs/cluster.md#joining-a-cluster-you-run)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from ..errors import InputError, Location
from ._output import Format, err_console, print_json

__all__ = ["nats_app"]

nats_app = typer.Typer(
    help="The NATS side of a tree that joins a cluster someone else runs.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)

FormatOption = Annotated[Format, typer.Option("--format", "-f", help="Output format.")]
WorkspaceOption = Annotated[Path, typer.Option("--workspace", "-C", help="Look for hive.toml from here upwards.")]


@nats_app.command("accounts")
def accounts_command(
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Write them to this file (else print them).", show_default=False),
    ] = None,
    negotiate: Annotated[
        bool,
        typer.Option(
            "--negotiate",
            help="First negotiate the contracts as up would (the root runs for a moment), so a new workspace's "
            "accounts are the ones its first up needs.",
        ),
    ] = False,
    workspace: WorkspaceOption = Path("."),
    fmt: FormatOption = Format.text,
) -> None:
    """Write the tree's NATS accounts (one per hive and the framework's, NKey public keys only, no secret) for a
    cluster's configuration: include the file inside the `accounts { }` block of every node, then reload the
    nodes (nats-server --signal reload). Made from the lock as it stands; each identity's seed is made here
    (.subhive/up/nkeys/) if it has none yet. `subhive up` checks the cluster holds exactly these.

    Example: subhive nats accounts --out /etc/nats/subhive.conf
    """
    from ..bus import installable_accounts
    from ..up import workspace_accounts
    from ..workspace import find_root

    root = find_root(workspace)
    if negotiate:
        import asyncio

        from ..up import negotiate as negotiate_contracts

        versions = asyncio.run(negotiate_contracts(root))
        if fmt is Format.text:
            err_console.print(f"negotiated: {escape(', '.join(versions) or 'no contract')}")
    accounts = workspace_accounts(root)
    text = installable_accounts(accounts, source=str(root))
    if out is None:
        if fmt is Format.json:
            print_json({"digest": accounts.digest, "accounts": ["SUBHIVE", *accounts.hives], "text": text})
        else:
            typer.echo(text, nl=False)
        return
    # Public keys only, but what a cluster lets in is the operator's to read: owner-only, as the server's own.
    temporary = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as written:
            written.write(text)
        temporary.replace(out)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise InputError(
            f"cannot write {out}: {exc.strerror or exc}",
            code="nats.out_invalid",
            location=Location(file=str(out)),
            hint="name a file in a directory that exists and you may write to",
        ) from None
    if fmt is Format.json:
        print_json({"file": str(out), "digest": accounts.digest, "accounts": ["SUBHIVE", *accounts.hives]})
    else:
        err_console.print(
            f"wrote {escape(str(out))}: {len(accounts.hives)} hive accounts and SUBHIVE (digest {accounts.digest}); "
            "include it inside the accounts { } block of every node, then: nats-server --signal reload"
        )
