""":class:`ExternalCluster` against three nats-server processes the test configures as an operator would:
what ``check`` says before the accounts are installed, after a first reload (nats-server 2.15 leaves the hives'
JetStream imports unanswered), after a second, and when the grants installed are not the ones asked for
(decision 0121)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from subhive.bus import (
    AccountsConfig,
    ExternalCluster,
    Permissions,
    hive_permissions,
    installable_accounts,
    nkey_of,
)
from subhive.errors import SubhiveError
from tests.up._nats_nodes import OperatorCluster


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[OperatorCluster]:
    nodes = OperatorCluster(tmp_path / "operator")
    try:
        nodes.start()
        yield nodes
    finally:
        nodes.stop()


def _accounts(seeds: Path, extra: tuple[str, ...] = ()) -> AccountsConfig:
    grants = hive_permissions("web", {}, {}, {}, {})
    grants = Permissions(grants.publish + extra, grants.subscribe, grants.allow_responses)
    return AccountsConfig({"web": (nkey_of(seeds / "web.nk"), grants)}, admin_password=nkey_of(seeds / "_admin.nk"))


def _code(cluster: ExternalCluster, accounts: AccountsConfig) -> str:
    try:
        asyncio.run(cluster.check(accounts))
    except SubhiveError as exc:
        return f"{exc.code}: {exc}"
    return "installed"


def test_check_says_what_is_missing_then_unwired_then_installed(cluster: OperatorCluster, tmp_path: Path) -> None:
    seeds = tmp_path / "nkeys"
    accounts = _accounts(seeds)
    external = ExternalCluster(
        cluster.urls,
        admin_seed=seeds / "_admin.nk",
        seed_of=lambda hive: seeds / f"{hive}.nk",
        accounts_file=tmp_path / "wanted.conf",
    )
    said = _code(external, accounts)
    assert said.startswith("up.nats_accounts_missing: ")
    assert "has no account 'SUBHIVE' (nor 'web')" in said
    assert (tmp_path / "wanted.conf").read_text() == installable_accounts(accounts)  # what to install

    cluster.accounts_file.write_text(installable_accounts(accounts))
    cluster.reload()
    # nats-server 2.15: the reload that adds the accounts leaves web's JetStream imports without an answer.
    assert _code(external, accounts).startswith("up.nats_accounts_unwired: ")
    cluster.reload()
    assert _code(external, accounts) == "installed"

    # The lock grants web one more subject: the installed accounts are now another lock's.
    newer = _accounts(seeds, extra=("subhive.c.v1.ev.other.hello",))
    said = _code(external, newer)
    assert said.startswith("up.nats_accounts_stale: ")
    assert accounts.digest in said
    assert newer.digest in said
