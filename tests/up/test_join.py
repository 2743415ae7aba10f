"""``subhive creds HIVE --out FILE`` and ``subhive join --creds FILE``: a hive's process started by hand with
nothing but that file joins the running tree, shows in ``status``, and leaves cleanly (issue #17)."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from ._tree import CopyTemplate, finish, subhive, up, wait_for

HIVE = "db"


@pytest.fixture(scope="module")
def tree(module_template_copy: CopyTemplate) -> Path:
    workspace = module_template_copy("web")
    ran = up(workspace)
    assert ran.code == 0, ran
    return workspace


def _connections(workspace: Path) -> int:
    ran = subhive(workspace, "status", "--format", "json")
    assert ran.code == 0, ran
    return len(json.loads(ran.out)["runtime"]["hives"][HIVE]["connections"])


def test_a_hive_joined_by_hand_shows_in_status_and_leaves_cleanly(tree: Path, tmp_path: Path) -> None:
    creds = tmp_path / "db.creds"
    made = subhive(tree, "creds", HIVE, "--out", str(creds))
    assert made.code == 0, made
    assert stat.S_IMODE(creds.stat().st_mode) == 0o600  # it holds the hive's secrets
    bundle = json.loads(creds.read_text())
    assert bundle["hive"] == HIVE
    assert bundle["nkey_seed"] == (tree / ".subhive" / "up" / "nkeys" / f"{HIVE}.nk").read_text().strip()
    assert bundle["nats"]
    assert bundle["root"]
    assert _connections(tree) == 1  # the process up started

    # Nothing but the file: no SUBHIVE_* variables, its own working directory.
    env = {k: v for k, v in os.environ.items() if not k.startswith("SUBHIVE_")}
    joined = subprocess.Popen(
        [sys.executable, "-m", "subhive", "join", "--creds", str(creds), "-C", str(tree)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    try:
        wait_for(lambda: _connections(tree) == 2, "the joined process to connect", 60)
        line = subhive(tree, "status")
        assert "2 connections" in line.out, line
    finally:
        joined.send_signal(signal.SIGTERM)
    left = finish(joined, timeout=30)
    assert left.code == 0, left
    assert "left the tree" in left.err
    assert "Traceback" not in left.err
    wait_for(lambda: _connections(tree) == 1, "the joined process to be gone", 30)


def test_credentials_of_a_hive_the_tree_does_not_have_are_refused(tree: Path, tmp_path: Path) -> None:
    ran = subhive(tree, "creds", "nosuch", "--out", str(tmp_path / "x.creds"))
    assert ran.code == 2
    assert "up.unknown_hive" in ran.err
    assert "db" in ran.err  # it names the hives it has
    assert not (tmp_path / "x.creds").exists()


@pytest.mark.parametrize(
    ("content", "pointer"),
    [
        ("not json", "the file"),
        ('{"format": 1, "hive": "db"}', "/nats"),
        ('{"format": 9}', "/format"),
        (  # the CA of a root that serves TLS ([grpc]): a PEM certificate, or nothing
            '{"format": 1, "hive": "db", "nats": ["nats://127.0.0.1:1"], "nkey_seed": "S", "root": "127.0.0.2:1", '
            '"token": "t", "failover": 0, "grpc_keys": {}, "root_ca": "not a certificate"}',
            "/root_ca",
        ),
    ],
)
def test_a_broken_credentials_file_is_refused_naming_what_is_wrong(
    tree: Path, tmp_path: Path, content: str, pointer: str
) -> None:
    creds = tmp_path / "broken.creds"
    creds.write_text(content)
    ran = subhive(tree, "join", "--creds", str(creds))
    assert ran.code == 2
    assert "up.creds_invalid" in ran.err
    assert pointer in ran.err
    assert "Traceback" not in ran.err


def test_a_root_ca_that_is_not_there_is_refused_before_joining(tree: Path, tmp_path: Path) -> None:
    creds = tmp_path / "db.creds"
    made = subhive(tree, "creds", HIVE, "--out", str(creds))
    assert made.code == 0, made
    ran = subhive(tree, "join", "--creds", str(creds), "--root-ca", str(tmp_path / "missing-ca.pem"))
    assert ran.code == 2, ran
    assert "[up.creds_missing]" in ran.err
    assert "missing-ca.pem" in ran.err
    assert "Traceback" not in ran.err


@pytest.mark.parametrize(
    ("advertise", "code"),
    [
        ("http://db.internal", "usage.advertise_invalid"),  # a URL, not a host
        ("db.internal:50051", "usage.advertise_invalid"),  # the port is the server's own
        ("0.0.0.0", "usage.advertise_invalid"),  # a place to listen, not to dial
        ("db.internal", "usage.advertise_unreachable"),  # [grpc] listens on loopback: nobody there reaches it
    ],
)
def test_an_advertised_host_nobody_could_dial_is_refused_before_joining(
    tree: Path, tmp_path: Path, advertise: str, code: str
) -> None:
    creds = tmp_path / "db.creds"
    made = subhive(tree, "creds", HIVE, "--out", str(creds))
    assert made.code == 0, made
    ran = subhive(tree, "join", "--creds", str(creds), "--advertise", advertise)
    assert ran.code == 2, ran
    assert f"[{code}]" in ran.err
    assert "hint:" in ran.err
    assert "joining as" in ran.err  # refused after reading the credentials, before connecting to anything
    assert "left the tree" not in ran.err
    assert "Traceback" not in ran.err
