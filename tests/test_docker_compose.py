"""``docker/compose.yaml`` without a Docker engine: valid against the Compose specification's JSON Schema
(vendored in tests/data/compose-spec), every service's command accepted by the CLI as it parses it, and the
mounts, credentials, URLs and NATS configurations agreeing with each other. The same topology runs as
processes in tests/up/test_topology.py."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import typer
import yaml

from subhive.bus import find_server_binary
from subhive.cli import app
from subhive.workspace import open_workspace

REPO = Path(__file__).resolve().parents[1]
DOCKER = REPO / "docker"
SCHEMA = REPO / "tests" / "data" / "compose-spec" / "compose-spec.json"
NOTES = REPO / "examples" / "notes"


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((DOCKER / "compose.yaml").read_text(encoding="utf-8"))
    return loaded


def _errors(document: dict[str, Any]) -> list[str]:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    validator = jsonschema.Draft7Validator(schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(document)]


def _cli(argv: list[str]) -> tuple[list[str], dict[str, Any]]:
    """The command path and parameters the CLI makes of ``subhive ARGV``, parsed as when it runs (unknown
    options, bad values and missing arguments raise), without running it."""
    command: Any = typer.main.get_command(app)
    context = command.make_context("subhive", ["--help"], resilient_parsing=True)
    path = ["subhive"]
    while hasattr(command, "list_commands"):  # a group: the next word names the command
        name, argv = argv[0], argv[1:]
        command = command.get_command(context, name)
        assert command is not None, f"subhive has no command {' '.join([*path[1:], name])}"
        path.append(name)
        if hasattr(command, "list_commands"):
            context = command.make_context(name, ["--help"], parent=context, resilient_parsing=True)
    leaf = command.make_context(path[-1], list(argv), parent=context)
    return path, dict(leaf.params)


def _mounts(service: dict[str, Any]) -> list[dict[str, Any]]:
    """Every volume of a service in the long syntax."""
    found = []
    for volume in service.get("volumes", []):
        if isinstance(volume, dict):
            found.append(volume)
            continue
        source, target, *mode = volume.split(":")
        kind = "bind" if source.startswith((".", "/")) else "volume"
        found.append({"type": kind, "source": source, "target": target, "read_only": mode == ["ro"]})
    return found


def _mount_at(service: dict[str, Any], target: str) -> dict[str, Any]:
    matches = [m for m in _mounts(service) if m["target"] == target]
    assert len(matches) == 1, f"no single mount at {target}: {_mounts(service)}"
    return matches[0]


def _subhive_services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: s for name, s in compose["services"].items() if "entrypoint" not in s}


def _joined(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: s for name, s in _subhive_services(compose).items() if s["command"][0] == "join"}


def test_the_compose_file_is_valid_against_the_compose_specification(compose: dict[str, Any]) -> None:
    assert _errors(compose) == []
    broken = copy.deepcopy(compose)
    broken["services"]["root"]["depends_on"]["nats-1"]["condition"] = "service_ready"
    assert any("service_ready" in error for error in _errors(broken))  # the schema does check what it says


def test_every_service_command_is_one_the_cli_accepts(compose: dict[str, Any]) -> None:
    commands = {name: _cli(list(s["command"]))[0] for name, s in _subhive_services(compose).items()}
    assert commands == {
        "accounts": ["subhive", "nats", "accounts"],
        "root": ["subhive", "up"],
        "db": ["subhive", "join"],
        "backend": ["subhive", "join"],
        "ui": ["subhive", "join"],
    }
    with pytest.raises(Exception, match="No such option"):  # the parsing does refuse what the CLI would
        _cli(["join", "--credentials", "/run/subhive/db.creds"])
    for name in ("nats-1", "nats-2", "nats-3"):
        assert compose["services"][name]["entrypoint"] == ["nats-server"]


def test_each_hive_container_gets_its_own_credentials_and_nothing_of_the_roots(compose: dict[str, Any]) -> None:
    joined = _joined(compose)
    assert sorted(joined) == sorted(p.name for p in (NOTES / "subhives").iterdir() if p.is_dir())
    for hive, service in joined.items():
        _, params = _cli(list(service["command"]))
        creds = Path(params["creds"])
        assert creds.name == f"{hive}.creds"
        mount = _mount_at(service, str(creds.parent))
        assert (mount["type"], mount["source"], mount["read_only"]) == ("volume", "creds", True)
        assert mount["volume"]["subpath"] == hive  # its own directory of the volume, no other hive's
        workspace = _mount_at(service, str(params["workspace"]))
        assert workspace["read_only"] is True
        assert f"{params['workspace']}/.subhive" in service["tmpfs"]  # every seed of the root's, masked
        assert "environment" not in service  # nothing but the credentials file
        assert "network_mode" not in service  # a network of its own: the root is dialled by name, over TLS
        assert params["advertise"] == hive  # its gRPC servers are dialled by its service name
        tls = _mount_at(service, "/run/subhive-tls")
        assert (tls["source"], tls["read_only"], tls["volume"]["subpath"]) == ("tls", True, hive)
        assert service["depends_on"] == {"root": {"condition": "service_healthy"}}


def test_the_root_writes_the_credentials_the_hives_mount_and_names_the_nodes(
    compose: dict[str, Any], tmp_path: Path
) -> None:
    services = compose["services"]
    root = services["root"]
    _, params = _cli(list(root["command"]))
    creds = _mount_at(root, str(params["creds_dir"]))
    assert (creds["type"], creds["source"], creds["read_only"]) == ("volume", "creds", False)
    health = root["healthcheck"]["test"]
    assert health[:3] == ["CMD", "test", "-f"]
    assert Path(health[3]).parent.parent == params["creds_dir"]
    assert Path(health[3]).parent.name in _joined(compose)

    # The workspace as the root and the accounts service see it: the example with docker/notes.hive.toml.
    for name in ("root", "accounts"):
        mount = _mount_at(services[name], f"{_cli(list(services[name]['command']))[1]['workspace']}/hive.toml")
        assert mount["source"] == "./notes.hive.toml"
    workspace = tmp_path / "notes"
    shutil.copytree(NOTES, workspace, ignore=shutil.ignore_patterns(".subhive", "contracts.lock"))
    shutil.copy(DOCKER / "notes.hive.toml", workspace / "hive.toml")
    config = open_workspace(workspace).config
    nodes = sorted(name for name, s in services.items() if s.get("entrypoint") == ["nats-server"])
    assert list(config.nats.urls) == [f"nats://{node}:4222" for node in nodes]
    assert list(config.nats.monitor) == [f"http://{node}:8222" for node in nodes]
    assert sorted(config.up.elsewhere) == sorted(_joined(compose))
    assert config.nats.replicas == 3


def test_the_nodes_include_the_accounts_file_the_accounts_service_writes(
    compose: dict[str, Any], tmp_path: Path
) -> None:
    services = compose["services"]
    _, params = _cli(list(services["accounts"]["command"]))
    out = params["out"]
    written = _mount_at(services["accounts"], str(out.parent))
    assert (written["type"], written["source"]) == ("volume", "accounts")
    assert params["negotiate"] is True  # the accounts a new workspace's first up needs

    # Real accounts for the test's configuration check: the notes example's, made by the CLI.
    workspace = tmp_path / "notes"
    shutil.copytree(NOTES, workspace, ignore=shutil.ignore_patterns(".subhive", "contracts.lock"))
    accounts = tmp_path / "made.conf"
    made = subprocess.run(
        [str(Path(find_server_binary()).parent / "subhive"), "nats", "accounts", "-C", str(workspace)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert made.returncode == 0, made.stderr
    accounts.write_text(made.stdout, encoding="utf-8")

    nodes = sorted(name for name, s in services.items() if s.get("entrypoint") == ["nats-server"])
    assert len(nodes) == 3
    for node in nodes:
        service = services[node]
        assert service["depends_on"] == {"accounts": {"condition": "service_completed_successfully"}}
        mount = _mount_at(service, str(out.parent))
        assert (mount["source"], mount["read_only"]) == ("accounts", True)
        config_file = service["command"][service["command"].index("-c") + 1]
        source = DOCKER / _mount_at(service, config_file)["source"]
        text = source.read_text(encoding="utf-8")
        include = re.search(r'include "([^"]+)"', text)
        assert include is not None
        assert Path(config_file).parent / include.group(1) == out  # an include is read relative to its file
        assert re.search(rf'server_name: "{node}"', text)
        routes = re.search(r"routes: \[(.*)\]", text)
        assert routes is not None
        assert sorted(re.findall(r"nats://([\w-]+):6222", routes.group(1))) == [n for n in nodes if n != node]
        store = re.search(r'store_dir: "([^"]+)"', text)
        assert store is not None
        assert _mount_at(service, store.group(1))["source"] == node  # its own store
        # nats-server itself reads it (paths moved into this test's directory).
        local = tmp_path / f"{node}.conf"
        (tmp_path / include.group(1)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(accounts, tmp_path / include.group(1))
        local.write_text(text.replace(store.group(1), str(tmp_path / node)))
        checked = subprocess.run(
            [str(find_server_binary()), "-t", "-c", str(local)], capture_output=True, text=True, check=False
        )
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert "is valid" in checked.stdout + checked.stderr


def test_the_image_makes_the_volume_mount_points_its_user_writes() -> None:
    dockerfile = (DOCKER / "Dockerfile").read_text(encoding="utf-8")
    made = re.search(r"install -d -o hive -g hive ([^\n]+)", dockerfile)
    assert made is not None
    assert set(made.group(1).split()) == {
        "/var/lib/subhive/accounts",
        "/var/lib/subhive/creds",
        "/var/lib/subhive/nats",
        "/var/lib/subhive/tls",
    }
    assert "USER hive" in dockerfile


def test_the_certs_service_makes_each_service_a_certificate_for_its_name(
    compose: dict[str, Any], tmp_path: Path
) -> None:
    """make-certs.sh, run here as the certs service runs it: a certificate per service that serves gRPC, signed
    by one CA, naming the host the others dial (the root's [grpc] advertise, each hive's --advertise); each
    container mounts its own directory where [grpc] looks, and nothing mounts the CA's key."""
    services = compose["services"]
    certs = services["certs"]
    script = _mount_at(certs, certs["entrypoint"][1])
    assert certs["entrypoint"][0] == "sh"
    out, *names = certs["command"]
    assert (_mount_at(certs, out)["source"], _mount_at(certs, out)["read_only"]) == ("tls", False)
    assert services["root"]["depends_on"]["certs"] == {"condition": "service_completed_successfully"}
    assert sorted(names) == sorted(["root", *_joined(compose)])

    workspace = tmp_path / "notes"
    shutil.copytree(NOTES, workspace, ignore=shutil.ignore_patterns(".subhive", "contracts.lock"))
    shutil.copy(DOCKER / "notes.hive.toml", workspace / "hive.toml")
    grpc = open_workspace(workspace).config.grpc
    assert grpc.listen == "0.0.0.0"
    assert grpc.advertise == "root"
    files = grpc.files(workspace)
    assert files is not None
    where = files[0].parent
    assert all(f.parent == where for f in files)
    for name in names:
        mount = _mount_at(services[name], str(where))
        assert (mount["source"], mount["read_only"], mount["volume"]["subpath"]) == ("tls", True, name)
    for name, service in services.items():  # the CA's key stays in the volume's .ca, which no one mounts
        for mount in _mounts(service):
            assert mount.get("volume", {}).get("subpath", "") != ".ca", name
            if mount["source"] == "tls" and name != "certs":
                assert "subpath" in mount.get("volume", {}), name

    made = tmp_path / "tls"
    ran = subprocess.run(
        ["sh", str(DOCKER / script["source"]), str(made), *names],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    for name in names:
        directory = made / name
        assert sorted(p.name for p in directory.iterdir()) == sorted(f.name for f in files)  # what [grpc] names
        verified = subprocess.run(
            ["openssl", "verify", "-CAfile", str(directory / "ca.pem"), str(directory / "cert.pem")],
            check=False, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert verified.returncode == 0, verified.stdout + verified.stderr
        san = subprocess.run(
            ["openssl", "x509", "-in", str(directory / "cert.pem"), "-noout", "-ext", "subjectAltName"],
            capture_output=True, text=True, timeout=60, check=True,
        ).stdout  # fmt: skip
        assert f"DNS:{name}," in san
        assert (directory / "key.pem").stat().st_mode & 0o077 == 0  # the key: its owner's only
    first = (made / "db" / "cert.pem").read_bytes()
    again = subprocess.run(["sh", str(DOCKER / script["source"]), str(made), *names], check=False, timeout=120)
    assert again.returncode == 0
    assert (made / "db" / "cert.pem").read_bytes() == first  # a restart keeps what the root handed out
