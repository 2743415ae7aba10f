"""The root's HTTP API against ``subhive root`` in its own process: reads, approvals with the admin token and
who decided, the diff ``subhive contract diff`` gives, pagination, problem details, and the event stream."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import time
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from subhive.compat.contract_check import check_contract
from subhive.contract import load_contract
from subhive.http._deps import page, page_after
from subhive.root_hive import AgentStep, RootClient
from tests.http.conftest import Answer, Api, call, make_api_workspace, serve

PROBLEM = "application/problem+json"


def _problem(answer: Answer, status: int, code: str) -> dict[str, Any]:
    assert answer.status == status, answer.body
    assert answer.headers["content-type"] == PROBLEM
    body: dict[str, Any] = answer.json()
    assert (body["status"], body["code"], body["type"]) == (status, code, f"urn:subhive:error:{code}")
    assert body["detail"]
    return body


# -- the document -------------------------------------------------------------------------------------------


def test_the_document_is_openapi_3_1_and_every_error_is_one_problem_shape(shared_api: Api) -> None:
    doc = call(shared_api, "GET", "/openapi.json").json()
    assert doc["openapi"] == "3.1.0"
    assert {"/api/v1/hives", "/api/v1/approvals/{approval_id}/approve", "/api/v1/events", "/api/v1/deadletters"} <= set(
        doc["paths"]
    )
    errors = 0
    for path in doc["paths"].values():
        for operation in path.values():
            for status, response in operation["responses"].items():
                if int(status) >= 400:
                    errors += 1
                    assert response["content"] == {PROBLEM: {"schema": {"$ref": "#/components/schemas/ProblemDetails"}}}
            if operation.get("security"):  # the calls that change state, and the reads of what hives keep
                assert {"401", "403"} <= set(operation["responses"])
    assert errors > 20
    guarded = {f"{m} {p}" for p, ops in doc["paths"].items() for m, op in ops.items() if op.get("security")}
    assert guarded == {
        "post /api/v1/approvals/{approval_id}/approve",
        "post /api/v1/approvals/{approval_id}/reject",
        "post /api/v1/deadletters/{letter_id}/replay",
        "get /api/v1/boards/{hive}",
        "get /api/v1/boards/{hive}/history",
        "get /api/v1/deadletters",
        "get /api/v1/deadletters/{letter_id}",
        "get /api/v1/deadletters/{letter_id}/payload",
    }


# -- reading ------------------------------------------------------------------------------------------------


def test_the_tree_contracts_and_versions(shared_api: Api) -> None:
    tree = call(shared_api, "GET", "/api/v1/hives").json()
    assert tree["up"] is False  # no `subhive up`: no health to show
    by_name = {h["name"]: h for h in tree["hives"]}
    assert by_name["backend"]["provides"] == ["orders"]
    assert by_name["ui"]["consumes"] == [
        {"contract": "orders", "versions": "^1.0", "satisfied_by": "1.0.0", "announcement_id": None}
    ]
    assert by_name["ui"]["health"] is None
    contracts = call(shared_api, "GET", "/api/v1/contracts").json()
    assert contracts == {
        "items": [{"name": "orders", "provider": "backend", "newest": "1.0.0", "versions": 1}],
        "next_cursor": None,
    }
    versions = call(shared_api, "GET", "/api/v1/contracts/orders/versions").json()["items"]
    assert [(v["version"], v["status"], v["consumers"]) for v in versions] == [("1.0.0", "active", {"ui": "^1.0"})]
    _problem(call(shared_api, "GET", "/api/v1/contracts/nope/versions"), 404, "contract.unknown")


def test_approvals_of_every_kind_with_filters(shared_api: Api) -> None:
    listed = call(shared_api, "GET", "/api/v1/approvals").json()["items"]
    assert [(a["id"], a["kind"], a["status"]) for a in listed] == [
        ("p-2", "contract", "pending"),
        ("r-1", "repair", "pending"),
        ("t-1", "tool", "pending"),
    ]
    (tool,) = call(shared_api, "GET", "/api/v1/approvals?kind=tool").json()["items"]
    assert tool["tool_call"] == {
        "agent": "helper",
        "tool": "write_file",
        "arguments": '{"path": "a.txt"}',
        "turn": "t1",
        "call_id": "",
    }
    contract = call(shared_api, "GET", "/api/v1/approvals/p-2").json()
    assert (contract["version"], contract["reason"]) == ("2.0.0", "proposal.pending_breaking")
    assert contract["check"]["compatible"] is False
    assert call(shared_api, "GET", "/api/v1/approvals?status=approved").json()["items"] == []
    _problem(call(shared_api, "GET", "/api/v1/approvals/p-99"), 404, "approval.unknown")
    body = _problem(call(shared_api, "GET", "/api/v1/approvals?kind=nope"), 422, "http.invalid_request")
    assert body["problems"][0]["pointer"] == "/kind"


def test_agent_turns_and_their_frames(shared_api: Api) -> None:
    (turn,) = call(shared_api, "GET", "/api/v1/turns").json()["items"]
    assert (turn["hive"], turn["agent"], turn["turn"], turn["steps"], turn["last_kind"]) == (
        "ui",
        "helper",
        "t1",
        2,
        "model.reply",
    )
    frames = call(shared_api, "GET", "/api/v1/turns/frames?hive=ui&turn=t1").json()["items"]
    assert [(f["kind"], f["data"]["step"], f["data"]["data"]) for f in frames] == [
        ("agent.turn.started", 1, {"prompt": "hi"}),
        ("agent.model.reply", 2, {"text": "hello"}),
    ]
    _problem(call(shared_api, "GET", "/api/v1/turns/frames?hive=ui&turn=t9"), 404, "turn.unknown")
    assert call(shared_api, "GET", "/api/v1/turns?hive=backend").json()["items"] == []


def test_turns_follow_frames_committed_after_the_first_read(api: Api) -> None:
    assert [t["steps"] for t in call(api, "GET", "/api/v1/turns").json()["items"]] == [2]

    async def report() -> None:
        async with RootClient(api.grpc, api.hive_token) as root:
            await root.report_frames([AgentStep("coder", "b1", 1, "turn.started", "{}", 3.0)], hive="backend")

    asyncio.run(report())
    turns = call(api, "GET", "/api/v1/turns").json()["items"]
    assert [(t["hive"], t["turn"], t["steps"]) for t in turns] == [("ui", "t1", 2), ("backend", "b1", 1)]
    (frame,) = call(api, "GET", "/api/v1/turns/frames?hive=backend&turn=b1").json()["items"]
    assert (frame["kind"], frame["data"]["agent"]) == ("agent.turn.started", "coder")


def test_pages_follow_their_cursors_to_the_whole_list(shared_api: Api) -> None:
    whole = [a["id"] for a in call(shared_api, "GET", "/api/v1/approvals?status=all").json()["items"]]
    seen, cursor, pages = [], None, 0
    while True:
        query = "&cursor=" + cursor if cursor else ""
        answer = call(shared_api, "GET", f"/api/v1/approvals?status=all&limit=2{query}").json()
        seen += [a["id"] for a in answer["items"]]
        pages += 1
        cursor = answer["next_cursor"]
        if cursor is None:
            break
    assert (seen, pages) == (whole, 2)
    _problem(call(shared_api, "GET", "/api/v1/approvals?limit=0"), 422, "http.invalid_request")
    _problem(call(shared_api, "GET", "/api/v1/approvals?limit=501"), 422, "http.invalid_request")
    _problem(call(shared_api, "GET", "/api/v1/approvals?cursor=abc"), 422, "http.invalid_request")
    _problem(call(shared_api, "GET", "/api/v1/approvals?cursor=2"), 422, "http.invalid_request")  # an offset


@given(st.lists(st.integers(), max_size=40), st.integers(min_value=1, max_value=12))
def test_walking_the_cursors_gives_every_item_once_in_order(items: list[int], limit: int) -> None:
    seen: list[int] = []
    cursor: str | None = None
    for _ in range(len(items) + 2):
        chunk, cursor = page(items, limit, cursor)
        assert len(chunk) <= limit
        seen += chunk
        if cursor is None:
            break
    assert seen == items


@given(
    st.lists(st.text(max_size=3), unique=True, max_size=30),
    st.integers(min_value=1, max_value=6),
    st.data(),
)
def test_key_cursors_never_skip_or_repeat_while_the_list_changes(
    keys: list[str], limit: int, data: st.DataObject
) -> None:
    """Items decided or written between pages (pending approvals, board keys) shift nothing: every item present
    from the first page to the last is shown exactly once, in order."""
    current, kept, seen = set(keys), set(keys), []
    cursor: str | None = None
    for turn in range(len(keys) + 10):  # at most 6 items are added
        chunk, cursor = page_after(sorted(current), str, limit, cursor)
        assert len(chunk) <= limit
        seen += chunk
        if cursor is None:
            break
        removed = data.draw(st.sets(st.sampled_from(sorted(current)))) if current else set()
        added = data.draw(st.sets(st.text(max_size=3), max_size=2)) if turn < 3 else set()
        kept -= removed
        current = (current - removed) | added
    assert cursor is None
    assert seen == sorted(set(seen))  # in order, nothing twice
    assert kept <= set(seen)


def test_every_answer_forbids_framing_and_foreign_scripts(shared_api: Api) -> None:
    for path in ("/console/", "/console/console.js", "/api/v1/hives", "/api/v1/nothing"):
        headers = call(shared_api, "GET", path).headers
        policy = {d.split()[0]: d.split()[1:] for d in headers["content-security-policy"].split("; ")}
        assert policy["default-src"] == ["'self'"]
        assert policy["frame-ancestors"] == ["'none'"]
        assert (headers["x-frame-options"], headers["x-content-type-options"]) == ("DENY", "nosniff")


def test_unknown_routes_and_methods_are_problems_too(shared_api: Api) -> None:
    _problem(call(shared_api, "GET", "/api/v1/nothing"), 404, "http.not_found")
    _problem(call(shared_api, "DELETE", "/api/v1/approvals"), 405, "http.method_not_allowed")


def test_boards_and_dead_letters_need_the_tree_up(shared_api: Api) -> None:
    body = _problem(call(shared_api, "GET", "/api/v1/boards/ui", token=shared_api.token), 503, "board.not_running")
    assert body["hint"] == "start it: subhive up --detach"
    _problem(call(shared_api, "GET", "/api/v1/deadletters", token=shared_api.token), 503, "deadletter.not_running")
    _problem(call(shared_api, "GET", "/api/v1/deadletters/ui:1", token=shared_api.token), 503, "deadletter.not_running")


# -- deciding -----------------------------------------------------------------------------------------------


def test_approving_needs_the_admin_token_and_records_who(api: Api) -> None:
    path = "/api/v1/approvals/p-2/approve"
    answer = call(api, "POST", path, body={"note": "ship it"})
    _problem(answer, 401, "auth.missing")
    assert answer.headers["www-authenticate"].startswith("Bearer")
    _problem(call(api, "POST", path, token="not-a-token"), 401, "auth.unauthenticated")
    _problem(call(api, "POST", path, token=api.hive_token), 403, "auth.not_admin")
    assert call(api, "GET", "/api/v1/approvals/p-2").json()["status"] == "pending"  # nothing changed

    outcome = call(api, "POST", path, body={"note": "ship it", "by": "ada"}, token=api.token).json()
    assert (outcome["status"], outcome["code"], outcome["version"]) == ("accepted", "proposal.accepted", "2.0.0")
    decided = call(api, "GET", "/api/v1/approvals/p-2").json()
    assert (decided["status"], decided["decision"], decided["decided_by"]) == ("approved", "ship it", "ada")
    newest = call(api, "GET", "/api/v1/contracts").json()["items"][0]["newest"]
    assert newest == "2.0.0"
    _problem(call(api, "POST", path, token=api.token), 409, "approval.decided")


def test_a_decision_body_is_json_with_known_fields_only(api: Api) -> None:
    """A misspelt field must not lose what it held, and a body curl -d sent as a form says what to send."""
    path = "/api/v1/approvals/p-2/approve"
    typo = _problem(call(api, "POST", path, body={"nite": "ship it"}, token=api.token), 422, "http.invalid_request")
    assert [(p["pointer"], p["message"]) for p in typo["problems"]] == [("/nite", "Extra inputs are not permitted")]
    form = call(
        api,
        "POST",
        path,
        body={"note": "ship it"},
        token=api.token,
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    body = _problem(form, 422, "http.invalid_request")
    assert "Content-Type: application/json" in body["hint"]
    assert "application/x-www-form-urlencoded" in body["hint"]
    assert call(api, "GET", "/api/v1/approvals/p-2").json()["status"] == "pending"  # neither decided anything


def test_rejecting_needs_a_reason_and_records_who(api: Api) -> None:
    path = "/api/v1/approvals/t-1/reject"
    _problem(call(api, "POST", path, body={"reason": ""}, token=api.token), 422, "http.invalid_request")
    _problem(call(api, "POST", path, body={"reason": "  "}, token=api.token), 422, "http.invalid_request")
    rejected = call(api, "POST", path, body={"reason": "not that file"}, token=api.token).json()
    assert (rejected["status"], rejected["decision"], rejected["decided_by"]) == ("rejected", "not that file", "admin")
    repair = call(api, "POST", "/api/v1/approvals/r-1/approve", body={"by": "bob"}, token=api.token).json()
    assert (repair["kind"], repair["code"]) == ("repair", "repair.accepted")
    assert call(api, "GET", "/api/v1/approvals/r-1").json()["decided_by"] == "bob"


def test_the_diff_is_what_contract_diff_says(api: Api) -> None:
    assert call(api, "POST", "/api/v1/approvals/p-2/approve", token=api.token).status == 200
    diff = call(api, "GET", "/api/v1/contracts/orders/diff?from=1.0.0&to=2.0.0").json()
    directory = api.workspace / "contracts" / "orders"
    expected = check_contract(load_contract(directory / "2.0.0"), load_contract(directory / "1.0.0")).to_dict()
    assert diff == json.loads(json.dumps(expected))
    assert diff["compatible"] is False
    codes = {c["code"] for part in diff["parts"] for c in part["changes"]}
    assert "required.added" in codes
    backwards = call(api, "GET", "/api/v1/contracts/orders/diff?from=2.0.0&to=1.0.0").json()
    assert (backwards["old_version"], backwards["new_version"]) == ("2.0.0", "1.0.0")
    same = call(api, "GET", "/api/v1/contracts/orders/diff?from=1.0.0&to=1.0.0").json()
    # A version against itself: nothing changed, nothing to bump, nothing newer to suggest.
    assert (same["required_bump"], same["semver_ok"], same["suggested_version"]) == ("none", True, "1.0.0")
    _problem(call(api, "GET", "/api/v1/contracts/orders/diff?from=1.0.0&to=9.0.0"), 404, "contract.unknown_version")


# -- the event stream ---------------------------------------------------------------------------------------


def _events(raw: str) -> list[dict[str, str]]:
    out = []
    for block in raw.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "id" in fields:
            out.append(fields)
    return out


def test_the_backlog_resumes_after_last_event_id(shared_api: Api) -> None:
    answer = call(shared_api, "GET", "/api/v1/events?follow=false")
    assert answer.headers["content-type"].startswith("text/event-stream")
    events = _events(answer.body.decode())
    last = call(shared_api, "GET", "/api/v1/health").json()["last_seq"]
    assert [int(e["id"]) for e in events] == list(range(1, last + 1))
    assert json.loads(events[0]["data"])["kind"] == "hive_registered"
    assert "event" not in events[0]  # one event type: EventSource's onmessage gets every frame
    resumed = _events(
        call(shared_api, "GET", "/api/v1/events?follow=false", headers={"Last-Event-ID": str(last - 2)}).body.decode()
    )
    assert [int(e["id"]) for e in resumed] == [last - 1, last]
    assert _events(call(shared_api, "GET", f"/api/v1/events?follow=false&after={last}").body.decode()) == []
    _problem(call(shared_api, "GET", f"/api/v1/events?after={last + 1}"), 409, "frames.token_ahead")


def test_live_frames_arrive_on_an_open_stream(api: Api) -> None:
    last = call(api, "GET", "/api/v1/health").json()["last_seq"]
    where = urllib.parse.urlsplit(api.url)
    conn = http.client.HTTPConnection(where.hostname or "", where.port, timeout=10)
    try:
        conn.request("GET", f"/api/v1/events?after={last}", headers={"Accept": "text/event-stream"})
        stream = conn.getresponse()
        assert stream.status == 200
        assert call(api, "POST", "/api/v1/approvals/r-1/reject", body={"reason": "no"}, token=api.token).status == 200
        lines: list[str] = []
        while not (lines and lines[-1] == "" and any(line.startswith("id: ") for line in lines)):
            line = stream.readline().decode()
            assert line, "the stream ended"
            lines.append(line.rstrip("\n"))
        (event,) = _events("\n".join(lines))
        frame = json.loads(event["data"])
        assert (int(event["id"]), frame["seq"], frame["kind"]) == (last + 1, last + 1, "approval_decided")
        data = frame["data"]
        assert (data["approval_id"], data["status"], data["by"]) == ("r-1", "rejected", "admin")
    finally:
        conn.close()


def test_a_stopping_root_ends_open_streams_at_once(tmp_path: Path) -> None:
    ws, hive_token = make_api_workspace(tmp_path)
    running = serve(ws, hive_token)
    api = next(running)
    where = urllib.parse.urlsplit(api.url)
    conn = http.client.HTTPConnection(where.hostname or "", where.port, timeout=10)
    try:
        conn.request("GET", "/api/v1/events")  # the backlog, then it waits for live frames
        stream = conn.getresponse()
        assert stream.readline().startswith(b"id: 1")
        started = time.monotonic()
        with contextlib.suppress(StopIteration):
            next(running)  # SIGTERM: exit code 0 and no traceback (serve checks both)
        assert stream.read() is not None  # the stream ended: the chunked body is complete
        assert time.monotonic() - started < 5
    finally:
        conn.close()


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.1"])
def test_the_api_serves_loopback_only(host: str) -> None:
    import asyncio
    from pathlib import Path
    from typing import cast

    from subhive.errors import InputError
    from subhive.http import ApiServer, ApiSettings
    from subhive.root_hive import RootServer

    with pytest.raises(InputError) as raised:
        asyncio.run(ApiServer.start(cast(RootServer, None), ApiSettings(Path(".")), host=host))
    assert raised.value.code == "http.insecure_address"


def test_a_host_that_is_not_loopback_is_refused(shared_api: Api) -> None:
    """DNS rebinding: a site whose name now points at 127.0.0.1 must not read the API from a browser."""
    answer = call(shared_api, "GET", "/api/v1/approvals", headers={"Host": "evil.example:80"})
    _problem(answer, 421, "http.host_not_allowed")
    port = shared_api.url.rsplit(":", 1)[1]
    assert call(shared_api, "GET", "/api/v1/health", headers={"Host": f"localhost:{port}"}).status == 200


def test_the_server_sleeps_when_idle_and_stops_at_once(tmp_path: Path) -> None:
    """uvicorn's own loop wakes ten times a second even when nothing happens; an idle root should sleep (it
    ticks once a second, the resolution of the Date header), and a stop must not wait for the next tick."""
    import urllib.request
    from typing import cast

    from subhive.http import ApiServer, ApiSettings
    from subhive.root_hive import RootServer

    async def idle_then_stop() -> tuple[int, float, int]:
        api = await ApiServer.start(cast(RootServer, None), ApiSettings(tmp_path))
        loop = asyncio.get_running_loop()
        before = api._server.ticks
        await asyncio.sleep(2.5)
        ticks = api._server.ticks - before

        def fetch() -> int:
            with urllib.request.urlopen(api.url + "/console/", timeout=10) as answer:
                return int(answer.status)

        status = await asyncio.to_thread(fetch)  # the server runs on this loop: ask from another thread
        ticked = api._server.ticks
        while api._server.ticks == ticked:  # stop just after a tick: the next one is a second away
            await asyncio.sleep(0.01)
        started = loop.time()
        await api.stop()
        return ticks, loop.time() - started, status

    ticks, stopping, status = asyncio.run(idle_then_stop())
    assert ticks <= 3  # 25 with uvicorn's 0.1 s tick
    assert stopping < 0.6  # woken by the stop, not by the next tick (a second after the last)
    assert status == 200  # and it served meanwhile
