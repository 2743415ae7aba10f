"""``[grpc]`` in hive.toml (decision 0123): where the root's and the hives' gRPC servers listen, with TLS beyond
loopback; each mistake refused with its code and where it is, and good settings read back from their TOML."""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from subhive.errors import SubhiveError
from subhive.workspace import GrpcSettings, WorkspaceConfig, open_workspace

_TLS = 'tls_cert = "certs/grpc.pem"\ntls_key = "certs/grpc.key"\nca = "certs/ca.pem"\n'


def _config(tmp_path: Path, tables: str) -> WorkspaceConfig:
    (tmp_path / "hive.toml").write_text(f'[workspace]\nname = "shop"\nformat = 1\n{tables}', encoding="utf-8")
    return open_workspace(tmp_path).config


def test_loopback_and_plain_by_default(tmp_path: Path) -> None:
    grpc = _config(tmp_path, "").grpc
    assert (grpc.listen, grpc.host, grpc.tls, grpc.files(tmp_path)) == ("127.0.0.1", "127.0.0.1", False, None)


def test_every_interface_with_tls_is_dialled_at_the_advertised_host(tmp_path: Path) -> None:
    grpc = _config(tmp_path, f'[grpc]\nlisten = "0.0.0.0"\nadvertise = "root.internal"\n{_TLS}').grpc
    assert grpc.host == "root.internal"
    assert grpc.tls
    assert grpc.files(tmp_path) == (tmp_path / "certs/grpc.pem", tmp_path / "certs/grpc.key", tmp_path / "certs/ca.pem")
    absolute = GrpcSettings("::", "db", "/run/tls/cert.pem", "/run/tls/key.pem", "/run/tls/ca.pem")
    assert absolute.files(tmp_path) == (Path("/run/tls/cert.pem"), Path("/run/tls/key.pem"), Path("/run/tls/ca.pem"))


@pytest.mark.parametrize(
    ("table", "code", "pointer"),
    [
        ('listen = "10.1.2.3"\n', "workspace.grpc_insecure", "/grpc/listen"),
        ('listen = "db.internal"\n', "workspace.grpc_insecure", "/grpc/listen"),
        (f'listen = "0.0.0.0"\n{_TLS}', "workspace.grpc_advertise", "/grpc/advertise"),
        (f'listen = "::"\n{_TLS}', "workspace.grpc_advertise", "/grpc/advertise"),
        ('advertise = "0.0.0.0"\n', "workspace.grpc_advertise", "/grpc/advertise"),
        ("advertise = 7\n", "workspace.grpc_advertise", "/grpc/advertise"),
        ('tls_cert = "c.pem"\ntls_key = "k.pem"\n', "workspace.grpc_tls", "/grpc"),
        ('ca = "ca.pem"\n', "workspace.grpc_tls", "/grpc"),
        ('tls_cert = ""\ntls_key = "k.pem"\nca = "ca.pem"\n', "workspace.grpc_tls", "/grpc/tls_cert"),
        ('listen = "not a host"\n', "workspace.grpc_listen", "/grpc/listen"),
        ("listen = 50051\n", "workspace.grpc_listen", "/grpc/listen"),
        ('lisen = "127.0.0.1"\n', "workspace.unknown_key", "/grpc/lisen"),
    ],
)
def test_each_mistake_is_refused_where_it_is(tmp_path: Path, table: str, code: str, pointer: str) -> None:
    with pytest.raises(SubhiveError) as caught:
        _config(tmp_path, f"[grpc]\n{table}")
    problems = [(p.code, p.location.pointer if p.location else None) for p in caught.value.problems]
    assert problems == [(code, pointer)], problems
    assert all(p.hint for p in caught.value.problems)


def test_a_grpc_that_is_not_a_table_is_refused(tmp_path: Path) -> None:
    (tmp_path / "hive.toml").write_text('grpc = "0.0.0.0"\n[workspace]\nname = "shop"\nformat = 1\n', encoding="utf-8")
    with pytest.raises(SubhiveError) as caught:
        open_workspace(tmp_path)
    assert [(p.code, p.location.pointer if p.location else None) for p in caught.value.problems] == [
        ("workspace.type", "/grpc")
    ]


_HOST = st.one_of(
    st.from_regex(r"[a-z][a-z0-9-]{0,15}(\.[a-z][a-z0-9-]{0,15}){0,2}", fullmatch=True),
    st.ip_addresses().map(str),
)
_FILE = st.from_regex(r"[a-z][a-z0-9_/-]{0,20}\.pem", fullmatch=True)


@given(listen=_HOST, advertise=st.none() | _HOST, files=st.none() | st.tuples(_FILE, _FILE, _FILE))
def test_a_table_reads_as_the_settings_it_spells_or_is_refused(
    listen: str, advertise: str | None, files: tuple[str, str, str] | None
) -> None:
    """Reading a table and building the settings apply one rule: both accept it (and its TOML reads back
    equal), or both refuse it (reading says where, and keeps the defaults)."""
    try:
        settings: GrpcSettings | None = GrpcSettings(listen, advertise, *(files or (None, None, None)))
    except ValueError:  # beyond loopback without TLS, or a wildcard with no advertise
        settings = None
    problems: list[tuple[str, ...]] = []
    again = GrpcSettings.read(tomllib.loads(_raw(listen, advertise, files))["grpc"], "/grpc", _into(problems))
    if settings is None:
        assert problems
        assert again == GrpcSettings()
        return
    assert (problems, again) == ([], settings)
    assert GrpcSettings.read(tomllib.loads(settings.to_toml())["grpc"], "/grpc", _into(problems)) == settings
    assert problems == []


def _into(problems: list[tuple[str, ...]]) -> Callable[[str, str, str, str], None]:
    return lambda *problem: problems.append(problem)


def _raw(listen: str, advertise: str | None, files: tuple[str, str, str] | None) -> str:
    lines = ["[grpc]", f'listen = "{listen}"']
    if advertise is not None:
        lines.append(f'advertise = "{advertise}"')
    if files is not None:
        lines += [f'{key} = "{name}"' for key, name in zip(("tls_cert", "tls_key", "ca"), files, strict=True)]
    return "\n".join(lines) + "\n"
