"""The root serves plain gRPC on loopback only: anywhere else it needs TLS, and a client verifies it with the
CA. Certificates are real ones, made by openssl for each test session."""

from __future__ import annotations

import ipaddress
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from subhive.cli import main
from subhive.errors import InputError
from subhive.root_hive._client import RootClient, RootUnavailable, admin_token_of
from subhive.root_hive._service import SERVICE_FILE, RootServer
from subhive.root_hive._tls import ServerTls, is_loopback
from tests.kit import run, self_signed


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ServerTls]:
    directory = tmp_path_factory.mktemp("certs")
    return {"root": self_signed(directory, "root"), "stranger": self_signed(directory, "stranger")}


@pytest.fixture
def workspace(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The shared fresh workspace, with no root address or CA taken from the environment."""
    monkeypatch.delenv("SUBHIVE_ROOT", raising=False)
    monkeypatch.delenv("SUBHIVE_ROOT_CA", raising=False)
    return workspace


@given(st.ip_addresses())
def test_only_loopback_addresses_count_as_loopback(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> None:
    text = f"[{address}]" if address.version == 6 else str(address)
    loopback = ipaddress.ip_network("127.0.0.0/8") if address.version == 4 else ipaddress.ip_network("::1/128")
    expected = address in loopback
    assert is_loopback(text) is expected


def test_names_other_than_localhost_are_not_loopback() -> None:
    assert is_loopback("localhost")
    assert not is_loopback("0.0.0.0")
    assert not is_loopback("root.example")


@pytest.mark.parametrize("address", ["root.example:7000", "10.0.0.5:50051", "[2001:db8::1]:50051"])
def test_a_client_will_not_send_its_token_in_plain_text_beyond_loopback(address: str) -> None:
    with pytest.raises(InputError) as caught:
        RootClient(address, "a-token")
    assert caught.value.code == "root.insecure_channel"
    assert address in str(caught.value)


def test_a_root_on_every_interface_without_tls_is_refused_before_it_opens_anything(workspace: Path) -> None:
    with pytest.raises(InputError) as info:
        run(RootServer.start(workspace, host="0.0.0.0"))
    assert info.value.code == "root.insecure_address"
    assert info.value.hint is not None
    assert "--tls-cert" in info.value.hint
    assert not (workspace / SERVICE_FILE).exists()
    assert not (workspace / ".subhive" / "root" / "events.log").exists()


def test_the_cli_refuses_it_with_exit_2_and_a_hint(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["root", "--host", "0.0.0.0", "-C", str(workspace)])
    err = capsys.readouterr().err
    assert code == 2
    assert "[root.insecure_address]" in err
    assert "hint:" in err
    assert "Traceback" not in err


def test_a_certificate_without_its_key_is_a_clear_error(
    workspace: Path, certs: dict[str, ServerTls], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["root", "--host", "0.0.0.0", "--tls-cert", str(certs["root"].cert_file), "-C", str(workspace)])
    assert code == 2
    assert "--tls-key" in capsys.readouterr().err
    mismatched = ServerTls(certs["root"].cert_file, certs["stranger"].key_file)
    with pytest.raises(InputError) as info:
        run(RootServer.start(workspace, host="0.0.0.0", tls=mismatched))
    assert (info.value.code, info.value.location.file) == ("root.tls_invalid", str(certs["root"].cert_file))


def test_a_tls_root_answers_a_client_with_its_ca_and_no_other(workspace: Path, certs: dict[str, ServerTls]) -> None:
    tls = certs["root"]

    async def scenario() -> tuple[list[str], bool, bool]:
        server = await RootServer.start(workspace, host="0.0.0.0", tls=tls)
        try:
            assert server.tls
            address = f"127.0.0.1:{server.port}"
            async with RootClient(address, admin_token_of(workspace), ca_file=tls.cert_file) as admin:
                await admin.register_hive("backend", kind="backend")
                hives = [h.name for h in await admin.status()]
            async with RootClient(address, timeout=3) as plain:
                plain_ok = await plain.healthy(timeout=3)
            async with RootClient(address, ca_file=certs["stranger"].cert_file, timeout=3) as fooled:
                fooled_ok = await fooled.healthy(timeout=3)
            return hives, plain_ok, fooled_ok
        finally:
            await server.stop()

    hives, plain_ok, fooled_ok = run(scenario())
    assert hives == ["backend"]
    assert plain_ok is False  # a plain client gets no answer: the token never leaves in clear
    assert fooled_ok is False  # nor does a client that trusts another CA


@pytest.fixture
def tls_root(workspace: Path, certs: dict[str, ServerTls]) -> Iterator[str]:
    """``subhive root --host 0.0.0.0`` with TLS, as its own process; yields the address to reach it on."""
    tls = certs["root"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SUBHIVE_")}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "subhive",
            "root",
            "--host",
            "0.0.0.0",
            "--format",
            "json",
            "--tls-cert",
            str(tls.cert_file),
            "--tls-key",
            str(tls.key_file),
            "-C",
            str(workspace),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else "no output"
        started = json.loads(line)
        assert started["tls"] is True
        yield f"127.0.0.1:{started['address'].rsplit(':', 1)[1]}"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)


def test_the_cli_reaches_a_tls_root_with_the_ca_in_its_environment(
    workspace: Path,
    tls_root: str,
    certs: dict[str, ServerTls],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    code = main(["contract", "list", "-C", str(workspace), "--root", tls_root, "--format", "json"])
    captured = capsys.readouterr()
    assert code == 2
    assert "SUBHIVE_ROOT_CA" in captured.err  # the hint says what is missing
    monkeypatch.setenv("SUBHIVE_ROOT_CA", str(certs["root"].cert_file))
    code = main(["contract", "list", "-C", str(workspace), "--root", tls_root, "--format", "json"])
    assert code == 0
    assert json.loads(capsys.readouterr().out) == {"contracts": []}

    async def plain() -> None:
        async with RootClient(tls_root, admin_token_of(workspace), timeout=3) as client:
            await client.contracts()

    with pytest.raises(RootUnavailable):
        run(plain())


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["--advertise", "grpc://root.internal"], "usage.advertise_invalid"),
        (["--advertise", "root.internal"], "usage.advertise_unreachable"),  # served on 127.0.0.1 only
    ],
)
def test_the_cli_refuses_an_advertised_host_nobody_could_dial(
    workspace: Path, capsys: pytest.CaptureFixture[str], argv: list[str], code: str
) -> None:
    exit_code = main(["root", "-C", str(workspace), *argv])
    err = capsys.readouterr().err
    assert exit_code == 2
    assert f"[{code}]" in err
    assert "hint:" in err
    assert not (workspace / SERVICE_FILE).exists()  # refused before anything started
