"""Boards and dead letters through the HTTP API of a tree that is up (``subhive up``), over the framework's
NATS connection: the health of each hive, a board's values and a key's history, a dead letter's exact bytes,
and a replay that needs the admin token and is recorded with who asked."""

from __future__ import annotations

import base64
import os
import subprocess
import sys

from tests.http.conftest import LETTER_BYTES, Api, call

PROBLEM = "application/problem+json"


def test_the_tree_shows_each_hive_ready(tree: Api) -> None:
    answer = call(tree, "GET", "/api/v1/hives").json()
    assert answer["up"] is True
    health = {h["name"]: h["health"] for h in answer["hives"]}
    health |= {c["name"]: c["health"] for h in answer["hives"] for c in h["children"]}
    assert health == {"backend": "ready", "db": "ready", "web": "ready"}
    assert call(tree, "GET", "/api/v1/health").json()["up"] is True


def test_status_names_the_console(tree: Api) -> None:
    shown = subprocess.run(
        [sys.executable, "-m", "subhive", "status", "-C", str(tree.workspace)],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if not k.startswith("SUBHIVE_")} | {"COLUMNS": "400"},
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    assert f"console {tree.url}/console/" in shown.stdout


def test_a_board_and_the_history_of_a_key(tree: Api) -> None:
    board = call(
        tree, "GET", "/api/v1/boards/web", token=tree.token
    ).json()  # web's experts answer the task on the board too
    (entry,) = [e for e in board["entries"]["items"] if e["key"] == "tasks.t1"]
    assert (entry["key"], entry["value"], entry["writer"]) == (
        "tasks.t1",
        {"title": "draw the page", "status": "done"},
        "ada",
    )
    history = call(tree, "GET", "/api/v1/boards/web/history?key=tasks.t1&limit=1", token=tree.token).json()
    assert [r["value"]["status"] for r in history["revisions"]["items"]] == ["open"]
    rest = call(
        tree,
        "GET",
        f"/api/v1/boards/web/history?key=tasks.t1&cursor={history['revisions']['next_cursor']}",
        token=tree.token,
    )
    assert [r["value"]["status"] for r in rest.json()["revisions"]["items"]] == ["done"]
    assert call(tree, "GET", "/api/v1/boards/nope", token=tree.token).json()["code"] == "board.unknown_hive"
    bad = call(tree, "GET", "/api/v1/boards/web/history?key=a..b", token=tree.token)
    assert (bad.status, bad.json()["problems"][0]["pointer"]) == (422, "/key")


def test_a_board_pages_by_key(tree: Api) -> None:
    whole = [e["key"] for e in call(tree, "GET", "/api/v1/boards/web", token=tree.token).json()["entries"]["items"]]
    seen, cursor = [], ""
    for _ in range(len(whole) + 1):
        page = call(tree, "GET", f"/api/v1/boards/web?limit=1{cursor}", token=tree.token).json()["entries"]
        seen += [e["key"] for e in page["items"]]
        if page["next_cursor"] is None:
            break
        assert page["next_cursor"] == "k" + seen[-1]  # the last key shown: later pages start after it
        cursor = "&cursor=" + page["next_cursor"]
    assert seen == whole
    assert len(whole) >= 2


def test_a_dead_letter_keeps_its_exact_bytes(tree: Api) -> None:
    (letter,) = call(tree, "GET", "/api/v1/deadletters?hive=db", token=tree.token).json()["items"]
    assert (letter["id"], letter["code"], letter["size"]) == ("db:1", "payload.invalid", len(LETTER_BYTES))
    shown = call(tree, "GET", "/api/v1/deadletters/db:1", token=tree.token).json()
    assert base64.b64decode(shown["data_base64"]) == LETTER_BYTES
    raw = call(tree, "GET", "/api/v1/deadletters/db:1/payload", token=tree.token)
    assert (raw.headers["content-type"], raw.body) == ("application/octet-stream", LETTER_BYTES)
    missing = call(tree, "GET", "/api/v1/deadletters/db:99", token=tree.token)
    assert (missing.status, missing.headers["content-type"], missing.json()["code"]) == (
        404,
        PROBLEM,
        "deadletter.unknown",
    )
    bad = call(tree, "GET", "/api/v1/deadletters/what", token=tree.token)
    assert (bad.status, bad.json()["code"]) == (422, "http.invalid_request")
    both = call(tree, "GET", "/api/v1/deadletters/1", token=tree.token).json()  # db:1 and web:1
    assert (both["status"], both["code"], both["hint"]) == (
        409,
        "deadletter.ambiguous",
        "name it with its hive: db:1, web:1",
    )


def test_a_replay_needs_the_admin_token_and_is_recorded(tree: Api) -> None:
    path = "/api/v1/deadletters/db:1/replay"
    assert call(tree, "POST", path).json()["code"] == "auth.missing"
    assert call(tree, "POST", path, token=tree.hive_token).json()["code"] == "auth.not_admin"
    assert call(tree, "GET", "/api/v1/deadletters/db:1", token=tree.token).json()["replays"] == []
    replayed = call(tree, "POST", path, body={"by": "ada"}, token=tree.token)
    assert replayed.status == 200, replayed.body
    # db:1's bytes break the contract: db (which answers put_record here) refuses them again, and says so.
    assert replayed.json()["by"] == "ada"
    assert "refused again (payload.invalid)" in replayed.json()["result"]
    (replay,) = call(tree, "GET", "/api/v1/deadletters/db:1", token=tree.token).json()["replays"]
    assert (replay["by"], replay["result"]) == ("ada", replayed.json()["result"])
