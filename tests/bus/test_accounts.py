"""The accounts block derived from the grants: every import is exported to its importer alone, and the real
server accepts what is written (decision 0056). What the accounts keep apart is attacked in test_permissions."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
from pathlib import Path

import nats
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nats.aio.msg import Msg

from subhive.bus import (
    ADMIN_USER,
    HUB_ACCOUNT,
    AccountsConfig,
    ServerConfig,
    accounts_config,
    find_server_binary,
    hive_permissions,
    nkey_of,
)
from tests.kit import StartServer, run

CONTRACTS = ["orders", "payments", "notes"]
OPERATIONS = {(c, 1): ["place", "cancel"] for c in CONTRACTS}
EVENTS = {(c, 1): ["done"] for c in CONTRACTS}
HIVES = ["web", "backend", "db", "ui"]

# Each hive provides and consumes some contracts (major 1); a contract has at most one provider (the manifests
# allow no more: hive.provides_conflict), and one provided by nobody is the mock's.
trees = st.fixed_dictionaries(
    {hive: st.tuples(st.sets(st.sampled_from(CONTRACTS)), st.sets(st.sampled_from(CONTRACTS))) for hive in HIVES}
).filter(lambda tree: all(sum(c in provides for provides, _ in tree.values()) <= 1 for c in CONTRACTS))


def _accounts(tree: dict[str, tuple[set[str], set[str]]]) -> dict[str, dict[str, object]]:
    users = {
        hive: (
            f"{hive}-password",
            hive_permissions(
                hive, {c: [1] for c in provides}, {c: [1] for c in consumes - provides}, OPERATIONS, EVENTS
            ),
        )
        for hive, (provides, consumes) in tree.items()
    }
    block = accounts_config(users, admin_password="admin-password")
    body = block.removeprefix("accounts {").removesuffix("}")
    parsed: dict[str, dict[str, object]] = json.loads("{" + re.sub(r"\n  (\"[^\"]+\"): ", r"\n\1: ", body) + "}")
    return parsed


def _covers(pattern: str, subject: str) -> bool:
    p, s = pattern.split("."), subject.split(".")
    if p[-1] == ">":
        return len(s) >= len(p) and all(a in {"*", b} for a, b in zip(p[:-1], s, strict=False))
    return len(p) == len(s) and all(a in {"*", b} for a, b in zip(p, s, strict=True))


@settings(max_examples=60, deadline=None)
@given(trees)
def test_every_import_is_exported_to_that_account_alone_and_no_export_is_public(
    tree: dict[str, tuple[set[str], set[str]]],
) -> None:
    accounts = _accounts(tree)
    assert set(accounts) == {HUB_ACCOUNT, *HIVES}
    assert accounts[HUB_ACCOUNT].get("jetstream") == "enabled"
    assert all("jetstream" not in accounts[hive] for hive in HIVES)  # no hive can make a stream of its own
    for name, account in accounts.items():
        for export in account.get("exports", []):  # type: ignore[attr-defined]
            assert export["accounts"], export  # an export without a list would be open to every account
        for entry in account.get("imports", []):  # type: ignore[attr-defined]
            kind = "service" if "service" in entry else "stream"
            source = entry[kind]
            exports = accounts[source["account"]].get("exports", [])
            assert any(
                kind in e and _covers(e[kind], source["subject"]) and name in e["accounts"]
                for e in exports  # type: ignore[attr-defined]
            ), (name, entry)
    for hive in HIVES:  # the requests a hive sends reach its provider's account, and the mock's only without one
        provides, consumes = tree[hive]
        for contract in consumes - provides:
            wanted = [p for p in HIVES if contract in tree[p][0] and p != hive] or [HUB_ACCOUNT]
            sources = {
                e["service"]["account"]
                for e in accounts[hive].get("imports", [])  # type: ignore[attr-defined]
                if "service" in e and e["service"]["subject"] == f"subhive.{contract}.v1.op.place.{hive}"
            }
            assert sources == set(wanted)


def test_the_real_server_accepts_the_accounts_of_a_tree(tmp_path: Path) -> None:
    users = {
        "web": ("web-password", hive_permissions("web", {}, {"orders": [1]}, OPERATIONS, EVENTS)),
        "backend": (
            "backend-password",
            hive_permissions("backend", {"orders": [1]}, {"notes": [1]}, OPERATIONS, EVENTS),
        ),
    }
    conf = tmp_path / "nats.conf"
    conf.write_text(ServerConfig(tmp_path / "nats", accounts=AccountsConfig(users, "admin-password")).render(0))
    checked = subprocess.run(
        [str(find_server_binary()), "-t", "-c", str(conf)], capture_output=True, text=True, timeout=10, check=False
    )
    assert checked.returncode == 0, checked.stderr


def test_hives_and_the_framework_log_in_with_nkeys_and_keep_their_grants(
    tmp_path: Path, start_nats: StartServer
) -> None:
    """NKey users (what `subhive up` makes): the configuration holds public keys only; a seed logs in as its hive
    with that hive's grants, and a seed the server does not know is refused."""
    seeds = {name: tmp_path / f"{name}.nk" for name in ("web", "backend", ADMIN_USER, "stranger")}
    keys = {name: nkey_of(path) for name, path in seeds.items()}
    users = {
        "web": (keys["web"], hive_permissions("web", {}, {"orders": [1]}, OPERATIONS, EVENTS)),
        "backend": (keys["backend"], hive_permissions("backend", {"orders": [1]}, {}, OPERATIONS, EVENTS)),
    }
    server = start_nats(accounts=AccountsConfig(users, admin_password=keys[ADMIN_USER]))
    config = server.config_file.read_text()
    assert all(path.read_text().strip() not in config for path in seeds.values())  # no secret in it

    async def scenario() -> tuple[bytes, list[str], str]:
        errors: list[str] = []

        async def note(exc: Exception) -> None:
            errors.append(str(exc))

        backend = await nats.connect(server.url, nkeys_seed=str(seeds["backend"]), inbox_prefix="_INBOX_backend")
        web = await nats.connect(server.url, nkeys_seed=str(seeds["web"]), inbox_prefix="_INBOX_web", error_cb=note)
        try:

            async def answer(msg: Msg) -> None:
                await msg.respond(b"placed")

            await backend.subscribe("subhive.orders.v1.op.place.*", cb=answer)
            await backend.flush()
            reply = (await web.request("subhive.orders.v1.op.place.web", b"{}", timeout=2)).data
            await web.publish("subhive.orders.v1.op.place.backend", b"{}")  # in another hive's name
            await web.flush()
            for _ in range(100):
                if errors:
                    break
                await asyncio.sleep(0.01)
        finally:
            await web.close()
            await backend.close()
        with pytest.raises(nats.errors.Error) as refused:
            await nats.connect(
                server.url, nkeys_seed=str(seeds["stranger"]), allow_reconnect=False, max_reconnect_attempts=0
            )
        return reply, errors, str(refused.value)

    reply, errors, refused = run(scenario())
    assert reply == b"placed"
    assert any("permissions violation" in e for e in errors)
    assert "Authorization Violation" in refused


def test_a_broken_public_key_or_seed_file_is_refused_with_its_code(tmp_path: Path) -> None:
    from subhive.bus import NKey
    from subhive.errors import InputError

    with pytest.raises(InputError) as bad_key:
        NKey("U-not-a-key")
    garbage = tmp_path / "garbage.nk"
    garbage.write_text("SUNOTASEED")
    with pytest.raises(InputError) as bad_seed:
        nkey_of(garbage)
    assert bad_key.value.code == bad_seed.value.code == "bus.nkey_invalid"
    assert "SUNOTASEED" not in str(bad_seed.value)  # a secret never lands in an error message
    made = nkey_of(tmp_path / "fresh" / "web.nk")
    assert made == nkey_of(tmp_path / "fresh" / "web.nk")  # made once, read back the same
    assert (tmp_path / "fresh" / "web.nk").stat().st_mode & 0o777 == 0o600


def test_two_providers_of_one_operation_are_refused() -> None:
    """A consumer could import the operation from one of them only, and the hub would reach both."""
    from subhive.errors import UsageError

    tree = {"web": ({"orders"}, set()), "backend": ({"orders"}, set()), "db": (set(), {"orders"}), "ui": (set(), set())}
    with pytest.raises(UsageError) as refused:
        _accounts(tree)
    assert refused.value.code == "bus.provider_conflict"
    assert "backend, web" in str(refused.value)
