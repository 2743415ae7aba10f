"""The test `subhive new` writes holds the hive to its contracts, not to the starter source: replacing the
starter with another source keeps it green, while a source that breaks the contract (a reply outside the
schema, an operation the contract does not have, a write the board refuses) makes it fail, saying why.
Run as its owner runs it: a real pytest process in the hive's directory, after propose and codegen."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from pathlib import Path

import pytest

from subhive.cli import main

#: A db hive's own source, replacing the starter: it answers get_record of db_storage (and nothing else).
OWN_SOURCE = '''"""Knowledge of sub-hive db, written by its owner."""

from subhive.hive import Entry, Reply


class Records:
    name = "records"
    triggers = ()
    priority = 1
    operations = ("db_storage.get_record",)

    async def activate(self, entry: Entry, blackboard: object) -> list[Reply]:
        request = entry.value
        return [Reply({REPLY})]


SOURCES = (Records(),)
'''
VALID_REPLY = '{"found": False}'


@pytest.fixture
def accepted_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A db hive whose storage contract is accepted and whose stubs are generated; returns its directory."""
    monkeypatch.delenv("SUBHIVE_ROOT", raising=False)
    root = tmp_path / "ws"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["init", str(root)]) == 0
        assert main(["new", "db", "--kind", "db", "-C", str(root)]) == 0
        assert main(["contract", "propose", str(root / "contracts" / "db_storage" / "0.1.0")]) == 0
        assert main(["codegen", "-C", str(root)]) == 0
    assert (root / "stubs" / "db" / "db_storage_v0_1" / "contract.json").is_file()
    return root / "subhives" / "db"


def _pytest(hive: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=hive,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def _replace_source(hive: Path, reply: str, operations: str = '("db_storage.get_record",)') -> None:
    source = OWN_SOURCE.replace("{REPLY}", reply).replace('("db_storage.get_record",)', operations)
    (hive / "db_hive" / "knowledge.py").write_text(source)


def test_the_starter_test_passes_with_the_starter_and_with_a_replacement(accepted_db: Path) -> None:
    starter = _pytest(accepted_db)
    assert starter.returncode == 0, starter.stdout + starter.stderr
    assert "5 passed" in starter.stdout

    _replace_source(accepted_db, VALID_REPLY)
    replaced = _pytest(accepted_db)
    assert replaced.returncode == 0, replaced.stdout + replaced.stderr
    assert "5 passed" in replaced.stdout


def test_a_reply_outside_the_contract_fails_the_starter_test(accepted_db: Path) -> None:
    _replace_source(accepted_db, '{"found": "maybe"}')
    ran = _pytest(accepted_db)
    assert ran.returncode == 1
    assert "FAILED tests/test_db_knowledge.py::test_the_sources_answer_as_the_provided_contracts_say" in ran.stdout
    assert "get_record" in ran.stdout


def test_an_operation_the_contract_does_not_have_fails_the_starter_test(accepted_db: Path) -> None:
    _replace_source(accepted_db, VALID_REPLY, operations='("db_storage.get_record", "db_storage.purge")')
    ran = _pytest(accepted_db)
    assert ran.returncode == 1
    assert "FAILED tests/test_db_knowledge.py::test_what_the_sources_declare_is_in_the_contracts" in ran.stdout
    assert "records answers db_storage.purge: not an operation this hive provides" in ran.stdout


def test_an_operation_only_source_without_triggers_passes_and_a_source_that_never_wakes_fails(
    accepted_db: Path,
) -> None:
    # The runtime reads a missing `triggers` as none (examples/notes' Intake has none): the test must too.
    source = accepted_db / "db_hive" / "knowledge.py"
    _replace_source(accepted_db, VALID_REPLY)
    source.write_text(source.read_text().replace("    triggers = ()\n", ""))
    assert "triggers" not in source.read_text()
    passed = _pytest(accepted_db)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "5 passed" in passed.stdout

    # Still checked: a source with neither triggers nor operations nor events wakes on nothing.
    source.write_text(source.read_text().replace('operations = ("db_storage.get_record",)', "operations = ()"))
    failed = _pytest(accepted_db)
    assert failed.returncode == 1
    assert "FAILED tests/test_db_knowledge.py::test_every_source_is_named_once_and_wakes_on_something" in failed.stdout
    assert "records declares nothing that wakes it" in failed.stdout
