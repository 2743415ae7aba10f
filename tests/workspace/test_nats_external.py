"""``[nats] urls`` (a cluster up joins) and ``[up] elsewhere`` (hives up starts no process of) in hive.toml:
what they mean, and each mistake refused with its code and where it is (decisions 0121, 0122)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from subhive.errors import SubhiveError
from subhive.workspace import NatsSettings, open_workspace


def _config(tmp_path: Path, tables: str) -> object:
    (tmp_path / "hive.toml").write_text(f'[workspace]\nname = "shop"\nformat = 1\n{tables}', encoding="utf-8")
    return open_workspace(tmp_path).config


def test_urls_name_a_cluster_up_joins_with_a_copy_per_url_up_to_three(tmp_path: Path) -> None:
    config = _config(tmp_path, '[nats]\nurls = ["nats://a:4222", "tls://b:4222"]\nmonitor = ["http://a:8222"]\n')
    nats = config.nats  # type: ignore[attr-defined]
    assert nats.external
    assert nats.replicas == 2
    assert nats.clustered
    assert nats.failover_seconds == 30.0  # a cluster: writes retried through elections
    assert nats.monitor == ("http://a:8222",)
    assert NatsSettings(urls=("nats://a:4222",)).replicas == 1
    assert NatsSettings(urls=("nats://a:1", "nats://b:1", "nats://c:1", "nats://d:1")).replicas == 3
    assert NatsSettings(urls=("nats://a:1",), replica_count=3).replicas == 3
    assert not NatsSettings().external


def test_up_elsewhere_names_hives(tmp_path: Path) -> None:
    assert _config(tmp_path, '[up]\nelsewhere = ["db", "ui"]\n').up.elsewhere == ("db", "ui")  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("tables", "code", "pointer"),
    [
        ('[nats]\nurls = "nats://a:4222"\n', "workspace.nats_urls", "/nats/urls"),
        ('[nats]\nurls = ["http://a:4222"]\n', "workspace.nats_urls", "/nats/urls"),
        ("[nats]\nurls = []\n", "workspace.nats_urls", "/nats/urls"),
        ('[nats]\nurls = ["nats://a:4222"]\nnodes = 3\n', "workspace.nats_external", "/nats/nodes"),
        ('[nats]\nurls = ["nats://a:4222"]\nsync = "interval"\n', "workspace.nats_external", "/nats/sync"),
        ('[nats]\nurls = ["nats://a:4222"]\nreplicas = 2\n', "workspace.nats_replicas", "/nats/replicas"),
        ("[nats]\nreplicas = 3\n", "workspace.nats_external", "/nats/replicas"),
        ('[nats]\nmonitor = ["http://a:8222"]\n', "workspace.nats_external", "/nats/monitor"),
        ('[nats]\nurls = ["nats://a:4222"]\nmonitor = ["nats://a:8222"]\n', "workspace.nats_urls", "/nats/monitor"),
        ('[nats]\nca = "certs/ca.pem"\n', "workspace.nats_external", "/nats/ca"),
        ('[nats]\nurls = ["tls://a:4222"]\nca = 3\n', "workspace.nats_ca", "/nats/ca"),
        ('[up]\nelsewhere = "db"\n', "workspace.up_elsewhere", "/up/elsewhere"),
    ],
)
def test_each_mistake_is_refused_where_it_is(tmp_path: Path, tables: str, code: str, pointer: str) -> None:
    with pytest.raises(SubhiveError) as caught:
        _config(tmp_path, tables)
    problems = [(p.code, p.location.pointer if p.location else None) for p in caught.value.problems]
    assert problems == [(code, pointer)], problems


@given(st.lists(st.from_regex(r"(nats|tls)://[a-z][a-z0-9.-]{0,20}:[1-9][0-9]{0,4}", fullmatch=True), min_size=1))
def test_settings_round_trip_through_their_toml(urls: list[str]) -> None:
    import tomllib

    settings = NatsSettings(urls=tuple(urls), monitor=("http://m:8222",), ca="certs/ca.pem")
    problems: list[tuple[str, ...]] = []
    again = NatsSettings.read(
        tomllib.loads(settings.to_toml())["nats"], "/nats", lambda *problem: problems.append(problem)
    )
    assert problems == []
    assert again == settings
