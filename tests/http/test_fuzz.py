"""schemathesis against the served OpenAPI document, on a real tree (``subhive up``: its root serves the API on
127.0.0.1, port 0, and boards and dead letters are live):
every operation with generated input, then call sequences along the document's links. No 5xx, no answer the
document does not allow (status, content type, headers, body schema), auth enforced where it is declared.

Bounded: a few dozen examples an operation, derandomised under CI like the rest of the suite.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import schemathesis
from hypothesis import HealthCheck, given, settings

from tests.http.conftest import Api, call

EXAMPLES = 20
_QUIET = [HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture]


def _prepare(case: Any) -> None:
    """The event stream would follow forever: fuzz its backlog (the stream itself is test_api's)."""
    if case.path == "/api/v1/events":
        case.query = {**(case.query or {}), "follow": "false"}


#: A request that reaches each error the document lists, on the tree that is up or on a root without one.
#: (method, path template, status) -> (where, path with query, body, token: None, "admin" or "hive").
_REACH: dict[tuple[str, str, int], tuple[str, str, Any, str | None]] = {
    ("get", "/api/v1/contracts", 422): ("tree", "/api/v1/contracts?limit=0", None, None),
    ("get", "/api/v1/contracts/{name}/versions", 404): ("tree", "/api/v1/contracts/nope/versions", None, None),
    ("get", "/api/v1/contracts/{name}/versions", 422): (
        "tree",
        "/api/v1/contracts/db_storage/versions?cursor=x",
        None,
        None,
    ),
    ("get", "/api/v1/contracts/{name}/diff", 404): (
        "tree",
        "/api/v1/contracts/db_storage/diff?from=0.1.0&to=9.0.0",
        None,
        None,
    ),
    ("get", "/api/v1/contracts/{name}/diff", 422): ("tree", "/api/v1/contracts/db_storage/diff?from=0.1.0", None, None),
    ("get", "/api/v1/approvals", 422): ("tree", "/api/v1/approvals?status=maybe", None, None),
    ("get", "/api/v1/approvals/{approval_id}", 404): ("tree", "/api/v1/approvals/p-404", None, None),
    ("post", "/api/v1/approvals/{approval_id}/approve", 401): ("tree", "/api/v1/approvals/r-1/approve", None, None),
    ("post", "/api/v1/approvals/{approval_id}/approve", 403): ("tree", "/api/v1/approvals/r-1/approve", None, "hive"),
    ("post", "/api/v1/approvals/{approval_id}/approve", 404): (
        "tree",
        "/api/v1/approvals/p-404/approve",
        None,
        "admin",
    ),
    ("post", "/api/v1/approvals/{approval_id}/approve", 409): ("root", "/api/v1/approvals/r-1/approve", None, "admin"),
    ("post", "/api/v1/approvals/{approval_id}/approve", 422): (
        "tree",
        "/api/v1/approvals/r-1/approve",
        {"by": "x" * 129},
        "admin",
    ),
    ("post", "/api/v1/approvals/{approval_id}/reject", 401): (
        "tree",
        "/api/v1/approvals/t-1/reject",
        {"reason": "no"},
        None,
    ),
    ("post", "/api/v1/approvals/{approval_id}/reject", 403): (
        "tree",
        "/api/v1/approvals/t-1/reject",
        {"reason": "no"},
        "hive",
    ),
    ("post", "/api/v1/approvals/{approval_id}/reject", 404): (
        "tree",
        "/api/v1/approvals/t-404/reject",
        {"reason": "no"},
        "admin",
    ),
    ("post", "/api/v1/approvals/{approval_id}/reject", 409): (
        "root",
        "/api/v1/approvals/r-1/reject",
        {"reason": "no"},
        "admin",
    ),
    ("post", "/api/v1/approvals/{approval_id}/reject", 422): (
        "tree",
        "/api/v1/approvals/t-1/reject",
        {"reason": " "},
        "admin",
    ),
    ("get", "/api/v1/boards/{hive}", 404): ("tree", "/api/v1/boards/nope", None, "admin"),
    ("get", "/api/v1/boards/{hive}", 422): ("tree", "/api/v1/boards/Web", None, "admin"),
    ("get", "/api/v1/boards/{hive}", 503): ("root", "/api/v1/boards/ui", None, "admin"),
    ("get", "/api/v1/boards/{hive}/history", 404): ("tree", "/api/v1/boards/nope/history?key=a", None, "admin"),
    ("get", "/api/v1/boards/{hive}/history", 422): ("tree", "/api/v1/boards/web/history?key=a..b", None, "admin"),
    ("get", "/api/v1/boards/{hive}/history", 503): ("root", "/api/v1/boards/ui/history?key=a", None, "admin"),
    ("get", "/api/v1/deadletters", 422): ("tree", "/api/v1/deadletters?hive=Web", None, "admin"),
    ("get", "/api/v1/deadletters", 503): ("root", "/api/v1/deadletters", None, "admin"),
    ("get", "/api/v1/deadletters/{letter_id}", 409): ("tree", "/api/v1/deadletters/1", None, "admin"),
    ("get", "/api/v1/deadletters/{letter_id}", 422): ("tree", "/api/v1/deadletters/what", None, "admin"),
    ("get", "/api/v1/deadletters/{letter_id}", 404): ("tree", "/api/v1/deadletters/db:404", None, "admin"),
    ("get", "/api/v1/deadletters/{letter_id}", 503): ("root", "/api/v1/deadletters/db:1", None, "admin"),
    ("get", "/api/v1/deadletters/{letter_id}/payload", 409): ("tree", "/api/v1/deadletters/1/payload", None, "admin"),
    ("get", "/api/v1/deadletters/{letter_id}/payload", 422): ("tree", "/api/v1/deadletters/0/payload", None, "admin"),
    ("get", "/api/v1/deadletters/{letter_id}/payload", 404): (
        "tree",
        "/api/v1/deadletters/db:404/payload",
        None,
        "admin",
    ),
    ("get", "/api/v1/deadletters/{letter_id}/payload", 503): (
        "root",
        "/api/v1/deadletters/db:1/payload",
        None,
        "admin",
    ),
    ("post", "/api/v1/deadletters/{letter_id}/replay", 401): ("tree", "/api/v1/deadletters/db:1/replay", None, None),
    ("post", "/api/v1/deadletters/{letter_id}/replay", 403): ("tree", "/api/v1/deadletters/db:1/replay", None, "hive"),
    ("post", "/api/v1/deadletters/{letter_id}/replay", 404): (
        "tree",
        "/api/v1/deadletters/db:404/replay",
        None,
        "admin",
    ),
    ("post", "/api/v1/deadletters/{letter_id}/replay", 409): (
        "tree",
        "/api/v1/deadletters/web:1/replay",
        None,
        "admin",
    ),
    ("post", "/api/v1/deadletters/{letter_id}/replay", 422): (
        "tree",
        "/api/v1/deadletters/db:1/replay",
        {"by": 1},
        "admin",
    ),
    ("post", "/api/v1/deadletters/{letter_id}/replay", 503): ("root", "/api/v1/deadletters/db:1/replay", None, "admin"),
    ("get", "/api/v1/boards/{hive}", 401): ("tree", "/api/v1/boards/web", None, None),
    ("get", "/api/v1/boards/{hive}", 403): ("tree", "/api/v1/boards/web", None, "hive"),
    ("get", "/api/v1/boards/{hive}/history", 401): ("tree", "/api/v1/boards/web/history?key=a", None, None),
    ("get", "/api/v1/boards/{hive}/history", 403): ("tree", "/api/v1/boards/web/history?key=a", None, "hive"),
    ("get", "/api/v1/deadletters", 401): ("tree", "/api/v1/deadletters", None, None),
    ("get", "/api/v1/deadletters", 403): ("tree", "/api/v1/deadletters", None, "hive"),
    ("get", "/api/v1/deadletters/{letter_id}", 401): ("tree", "/api/v1/deadletters/db:1", None, None),
    ("get", "/api/v1/deadletters/{letter_id}", 403): ("tree", "/api/v1/deadletters/db:1", None, "hive"),
    ("get", "/api/v1/deadletters/{letter_id}/payload", 401): ("tree", "/api/v1/deadletters/db:1/payload", None, None),
    ("get", "/api/v1/deadletters/{letter_id}/payload", 403): (
        "tree",
        "/api/v1/deadletters/db:1/payload",
        None,
        "hive",
    ),
    ("get", "/api/v1/turns", 422): ("tree", "/api/v1/turns?limit=-1", None, None),
    ("get", "/api/v1/turns/frames", 404): ("tree", "/api/v1/turns/frames?hive=web&turn=nope", None, None),
    ("get", "/api/v1/turns/frames", 422): ("tree", "/api/v1/turns/frames?hive=web", None, None),
    ("get", "/api/v1/events", 409): ("tree", "/api/v1/events?after=999999", None, None),
    ("get", "/api/v1/events", 422): ("tree", "/api/v1/events?after=-1", None, None),
}


def test_every_documented_error_is_reachable(tree: Api, api: Api) -> None:
    doc = call(tree, "GET", "/openapi.json").json()
    documented = {
        (method, path, int(status))
        for path, operations in doc["paths"].items()
        for method, operation in operations.items()
        for status in operation["responses"]
        if int(status) >= 400
    }
    assert documented == set(_REACH)
    # the root without a tree: its r-1 is decided first, so deciding it again is a conflict
    assert call(api, "POST", "/api/v1/approvals/r-1/approve", token=api.token).status == 200
    for (_, _, status), (where, path, body, who) in _REACH.items():
        on = tree if where == "tree" else api
        token = {"admin": on.token, "hive": on.hive_token, None: None}[who]
        method = "POST" if path.endswith(("/approve", "/reject", "/replay")) else "GET"
        answer = call(on, method, path, body=body, token=token)
        assert answer.status == status, (path, answer.body)
        assert answer.headers["content-type"] == "application/problem+json"
        assert answer.json()["status"] == status


def test_every_operation_holds_to_the_document(tree: Api) -> None:
    schema = schemathesis.openapi.from_url(tree.url + "/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]  # type: ignore[union-attr]
    assert len(operations) >= 18
    auth = {"Authorization": f"Bearer {tree.token}"}
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=_QUIET, database=None)
        def check(case: Any) -> None:
            _prepare(case)
            case.call_and_validate(headers=auth, timeout=10)

        check()


def test_call_sequences_along_the_links_hold_to_the_document(tree: Api, tmp_path: Path) -> None:
    """schemathesis's own runner (its CLI, as CI would call it) for the stateful phase: it follows the links with
    the ids the lists answered, and copes with a server whose state the sequences change, where a bare Hypothesis
    state machine reports that as flaky data. The event stream is left out: it follows for ever (see above)."""
    command = [
        str(Path(sys.executable).with_name("schemathesis")),
        "run",
        tree.url + "/openapi.json",
        "--header",
        f"Authorization: Bearer {tree.token}",
        "--phases",
        "stateful",
        "--max-examples",
        str(EXAMPLES),
        "--checks",
        "all",
        "--exclude-path",
        "/api/v1/events",
        "--request-timeout",
        "10",
        # Under CI derandomised (which implies no example database); otherwise keep no database either.
        *(["--generation-deterministic"] if os.environ.get("CI") else ["--generation-database", "none"]),
    ]
    ran = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=tmp_path,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-2000:]
    summary = re.search(r"(\d+) generated, (\d+) passed", ran.stdout)
    assert summary is not None, ran.stdout[-2000:]
    assert int(summary[1]) == int(summary[2]) >= 50
    assert "No issues found" in ran.stdout
