"""The atomic JSON writer: private files are 0600 whatever a crashed earlier writer left behind."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from subhive._files import read_json, write_json


def test_a_leftover_temporary_file_does_not_keep_its_wider_mode(tmp_path: Path) -> None:
    path = tmp_path / "creds.json"
    leftover = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    leftover.write_text("stale")
    leftover.chmod(0o666)
    write_json(path, {"admin": "secret"}, private=True)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert read_json(path) == {"admin": "secret"}
    assert not leftover.exists()


def test_a_public_file_is_readable_by_others_but_not_writable(tmp_path: Path) -> None:
    path = tmp_path / "heartbeat.json"
    leftover = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    leftover.write_text("stale")
    leftover.chmod(0o666)
    write_json(path, {"state": "ready"})
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
