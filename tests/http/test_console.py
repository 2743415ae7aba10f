"""The web console in a real browser: Debian's Chromium driven by Playwright (its own browser download does
not work here; ``scripts/_chromium.sh`` installs the package when missing) against ``subhive root`` serving
the console and the API. Stories a person follows: read the tree, approve a breaking contract and see it
published with its diff (and, on a running tree, picked up by it), refuse to reject without a reason, follow
a live event, read an agent's turn, replay a dead letter and see it handled, approve an agent's diff and see
the file change. Each page's screenshot is saved (``SUBHIVE_SCREENSHOTS``, else the test's temporary
directory)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, Route, expect, sync_playwright

from tests.http.conftest import VALID_PUT, Api, call, keep_put_record_letter
from tests.up._tree import tail, wait_for

CHROMIUM = "/usr/bin/chromium"
#: What Chromium needs on these machines: no sandbox as root, and no background traffic to a closed network.
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    assert Path(CHROMIUM).exists(), "Debian's chromium is missing: bash scripts/_chromium.sh installs it"
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1366, "height": 768})  # a laptop's screen
    page = context.new_page()
    page.set_default_timeout(10_000)
    blocked: list[str] = []  # the console must run under its own Content-Security-Policy
    page.on("console", lambda m: blocked.append(m.text) if "Content Security Policy" in m.text else None)
    try:
        yield page
    finally:
        context.close()
    assert blocked == []


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    directory = Path(os.environ.get("SUBHIVE_SCREENSHOTS") or tmp_path / "screenshots")
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def test_approving_a_breaking_contract_publishes_it(api: Api, page: Page, shots: Path) -> None:
    page.goto(api.url)  # / leads to the console
    expect(page).to_have_url(f"{api.url}/console/")
    tree = page.get_by_test_id("tree")
    expect(tree).to_contain_text("backend")
    expect(tree).to_contain_text("orders ^1.0 → 1.0.0")
    page.screenshot(path=shots / "tree.png", full_page=True)

    page.get_by_role("link", name="Approvals").click()
    expect(page.locator("[data-approval]")).to_have_count(3)
    expect(page.locator("[data-approval=p-2]")).to_contain_text("required.added")
    page.screenshot(path=shots / "approvals.png", full_page=True)

    # Without the token the root says so, and nothing changes.
    page.get_by_role("button", name="Approve p-2").click()
    expect(page.get_by_role("alert")).to_contain_text("auth.missing")
    assert call(api, "GET", "/api/v1/approvals/p-2").json()["status"] == "pending"

    page.get_by_label("Admin token").fill(api.token)
    page.get_by_label("Admin token").press("Tab")  # 'change' stores it for the session
    page.get_by_label("Your name").fill("ada")
    page.get_by_label("Your name").press("Tab")
    page.get_by_label("Note for approving p-2").fill("ship it")
    page.get_by_role("button", name="Approve p-2").click()
    expect(page.get_by_role("status").filter(has_text="p-2:")).to_contain_text("accepted")
    decided = call(api, "GET", "/api/v1/approvals/p-2").json()
    assert (decided["status"], decided["decided_by"], decided["decision"]) == ("approved", "ada", "ship it")

    page.get_by_role("link", name="Contracts").click()
    expect(page.get_by_role("main")).to_contain_text("orders 2.0.0")
    page.get_by_role("link", name="orders").click()
    diff = page.get_by_test_id("diff")
    expect(diff).to_contain_text("1.0.0 → 2.0.0")
    expect(diff).to_contain_text("breaking")
    expect(diff).to_contain_text("required.added")
    page.screenshot(path=shots / "contract.png", full_page=True)


def test_a_rejection_needs_a_reason_and_keyboard_reaches_it(api: Api, page: Page, shots: Path) -> None:
    page.goto(f"{api.url}/console/#/approvals")
    page.get_by_label("Admin token").fill(api.token)
    page.get_by_label("Admin token").press("Tab")
    reject = page.get_by_role("button", name="Reject t-1")
    reject.focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("alert")).to_contain_text("Say why")
    expect(page.get_by_label("Reason for rejecting t-1")).to_be_focused()
    page.keyboard.type("not that file")
    page.keyboard.press("Shift+Tab")  # back to ... the label's field is focused; go forward to the button
    page.get_by_label("Reason for rejecting t-1").press("Tab")
    expect(reject).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.get_by_role("status").filter(has_text="t-1:")).to_be_visible()
    decided = call(api, "GET", "/api/v1/approvals/t-1").json()
    assert (decided["status"], decided["decision"]) == ("rejected", "not that file")


def test_live_events_and_an_agents_turn(api: Api, page: Page, shots: Path) -> None:
    page.goto(f"{api.url}/console/#/events")
    expect(page.locator("#live")).to_contain_text("live")
    assert call(api, "POST", "/api/v1/approvals/r-1/reject", body={"reason": "no"}, token=api.token).status == 200
    expect(page.get_by_test_id("events")).to_contain_text("approval_decided")
    page.screenshot(path=shots / "events.png", full_page=True)

    page.get_by_role("link", name="Agent turns").click()
    page.get_by_role("link", name="ui / helper / t1").click()
    main = page.get_by_role("main")
    expect(main).to_contain_text("1. turn.started")
    expect(main).to_contain_text("2. model.reply")
    expect(main).to_contain_text('"text": "hello"')
    page.screenshot(path=shots / "turn.png", full_page=True)

    page.get_by_label("Admin token").fill(api.token)
    page.get_by_label("Admin token").press("Tab")
    page.get_by_role("link", name="Boards").click()
    expect(main).to_contain_text("board.not_running")  # the tree is not up: the page says why
    page.get_by_role("link", name="Dead letters").click()
    expect(main).to_contain_text("subhive up --detach")
    page.screenshot(path=shots / "deadletters.png", full_page=True)


def test_the_live_stream_follows_again_after_the_root_refuses_a_resume(api: Api, page: Page) -> None:
    """A 409 (the root restarted with another history) closes an EventSource for good: the console must ask
    the root where its log stands and follow from there instead of saying "reconnecting" forever."""
    refused: list[str] = []

    def refuse_once(route: Route) -> None:
        if refused:
            route.continue_()
            return
        refused.append(route.request.url)
        problem = {"type": "urn:subhive:error:frames.token_ahead", "status": 409, "code": "frames.token_ahead"}
        route.fulfill(status=409, content_type="application/problem+json", body=json.dumps(problem))

    page.route("**/api/v1/events?*", refuse_once)
    page.goto(f"{api.url}/console/#/events")
    expect(page.locator("#live")).to_contain_text("live (after #", timeout=15_000)
    assert len(refused) == 1


def test_a_running_tree_its_boards_and_dead_letters(tree: Api, page: Page, shots: Path) -> None:
    page.goto(f"{tree.url}/console/")
    expect(page.get_by_test_id("tree")).to_contain_text("ready")
    expect(page.get_by_role("main")).to_contain_text("The tree is up")
    page.screenshot(path=shots / "tree-up.png", full_page=True)

    # What hives keep is read with the admin token only.
    page.get_by_role("link", name="Boards").click()
    expect(page.get_by_role("alert")).to_contain_text("auth.missing")
    page.get_by_label("Admin token").fill(tree.token)
    page.get_by_label("Admin token").press("Tab")
    page.get_by_role("link", name="Dead letters").click()
    page.get_by_role("link", name="Boards").click()
    page.get_by_label("Hive").select_option("web")
    main = page.get_by_role("main")
    expect(main).to_contain_text("tasks.t1")
    page.get_by_role("button", name="History of tasks.t1").click()
    expect(main).to_contain_text("rev 1 by ada")
    expect(main).to_contain_text('"status":"open"')
    expect(main).to_contain_text('"status":"done"')
    page.screenshot(path=shots / "board.png", full_page=True)

    page.get_by_role("link", name="Dead letters").click()
    page.get_by_role("button", name="Show db:1").click()
    expect(main).to_contain_text("payload.invalid")
    expect(main).to_contain_text('"note": "été"')  # the bytes as text, accents intact
    page.screenshot(path=shots / "deadletters-up.png", full_page=True)


def test_replaying_a_dead_letter_gets_it_handled(tree: Api, page: Page, shots: Path) -> None:
    """A request db failed on once is kept; a person replays it from the console, db answers it this time, and
    the replay is recorded with who asked for it."""
    keep_put_record_letter(tree.workspace, VALID_PUT)
    page.goto(f"{tree.url}/console/#/deadletters")
    page.get_by_label("Admin token").fill(tree.token)
    page.get_by_label("Admin token").press("Tab")
    page.get_by_label("Your name").fill("ada")
    page.get_by_label("Your name").press("Tab")
    page.reload()  # read again, with the token (kept for the session)
    page.get_by_role("button", name="Replay db:2").click()
    expect(page.get_by_role("status").filter(has_text="db:2:")).to_contain_text("answered")
    page.screenshot(path=shots / "deadletter-replayed.png", full_page=True)
    (replay,) = call(tree, "GET", "/api/v1/deadletters/db:2", token=tree.token).json()["replays"]
    assert replay["by"] == "ada"
    assert replay["result"].endswith("answered")


def test_approving_an_agents_diff_changes_the_file(api: Api, page: Page, shots: Path) -> None:
    """An agent of backend proposes a diff (its policy: ask); the person reads it in the inbox and approves;
    the agent, waiting at the root, applies it: the file on disk changes."""
    import asyncio
    import concurrent.futures
    import difflib

    from subhive.agent import FileSlice, ScriptedServer, Step, ToolBox, diff_tool, root_approver
    from subhive.root_hive import RootClient
    from tests.agent.conftest import make_agent

    files = api.workspace / "backend_files"
    files.mkdir()
    (files / "notes.txt").write_text("hello\n")
    diff = "".join(difflib.unified_diff(["hello\n"], ["hello, hive\n"], fromfile="a/notes.txt", tofile="b/notes.txt"))

    async def agent_turn(server: ScriptedServer) -> str:
        async with RootClient(api.grpc, api.hive_token) as backend:
            approver = root_approver(backend, agent="helper", turn="turn-9", poll=0.05)
            tools = ToolBox([diff_tool(FileSlice(files))], {"propose_diff": "ask"}, approver=approver)
            agent = make_agent(server, tools)
            try:
                result = await agent.run_turn("fix the note", turn_id="turn-9")
            finally:
                await agent.close()
            return str(result.stop.code)

    with (
        ScriptedServer([Step.call(("propose_diff", {"diff": diff})), Step.say("done")]) as model,
        concurrent.futures.ThreadPoolExecutor(1) as pool,
    ):
        turn = pool.submit(asyncio.run, agent_turn(model))
        page.goto(f"{api.url}/console/#/approvals")
        page.get_by_label("Admin token").fill(api.token)
        page.get_by_label("Admin token").press("Tab")
        card = page.locator("[data-approval=t-2]")  # t-1 was there before
        expect(card).to_contain_text("backend: helper wants propose_diff", timeout=30_000)
        expect(card.get_by_label("What propose_diff would do")).to_contain_text("+hello, hive")
        page.screenshot(path=shots / "approve-diff.png", full_page=True)
        assert (files / "notes.txt").read_text() == "hello\n"  # nothing applied before the person says so
        page.get_by_role("button", name="Approve t-2").click()
        expect(page.get_by_role("status").filter(has_text="t-2:")).to_contain_text("approved")
        assert turn.result(timeout=30) == "completed"
    assert (files / "notes.txt").read_text() == "hello, hive\n"


def test_a_breaking_version_approved_in_the_console_is_picked_up_by_the_running_tree(
    tree: Api, page: Page, shots: Path
) -> None:
    """db's contract gets a breaking 1.0.0 while the tree runs: `up` proposes it and it waits for a person, who
    approves it in the console; the tree follows (db restarted on stubs for both majors) and the console shows
    the new version with its diff, and db ready again."""
    ws = tree.workspace
    progress = ws / ".subhive" / "up" / "progress.jsonl"
    mark = len(progress.read_text(encoding="utf-8").splitlines())
    # Written beside the workspace, then moved into place whole. Up acts on a change only once the files have
    # stayed as they are for 1.5 s (decision 0135), which covers a script's quick writes, but no wait can tell
    # a pause in writing from the end of it: a version seen half-written (the copy of 0.1.0 renumbered, not yet
    # made breaking) would be accepted as compatible, and an accepted version never changes again.
    new = ws.parent / "db_storage-1.0.0"
    shutil.copytree(ws / "contracts" / "db_storage" / "0.1.0", new)
    manifest = new / "contract.yaml"
    manifest.write_text(manifest.read_text().replace("version: 0.1.0", "version: 1.0.0"))
    schemas = json.loads((new / "schemas.json").read_text())
    schemas["$defs"]["PutRecordInput"]["required"].append("expected_revision")  # breaking for senders
    (new / "schemas.json").write_text(json.dumps(schemas, indent=2))
    new.rename(ws / "contracts" / "db_storage" / "1.0.0")

    def pending() -> str | None:
        items = call(tree, "GET", "/api/v1/approvals?status=pending&kind=contract").json()["items"]
        return next((a["id"] for a in items if (a["contract"], a["version"]) == ("db_storage", "1.0.0")), None)

    logs = ws / ".subhive" / "logs"
    approval = wait_for(
        pending,
        "up to propose db_storage 1.0.0",
        60,
        context=lambda: tail(logs / "supervisor.log", 40) + "\n" + tail(logs / "root.log", 40),
    )
    page.goto(f"{tree.url}/console/#/approvals")
    page.get_by_label("Admin token").fill(tree.token)
    page.get_by_label("Admin token").press("Tab")
    page.get_by_label("Your name").fill("ada")
    page.get_by_label("Your name").press("Tab")
    expect(page.locator(f"[data-approval={approval}]")).to_contain_text("required.added")
    page.get_by_role("button", name=f"Approve {approval}").click()
    expect(page.get_by_role("status").filter(has_text=f"{approval}:")).to_contain_text("accepted")

    def reloaded() -> bool:
        later = progress.read_text(encoding="utf-8").splitlines()[mark:]
        return any(json.loads(line).get("event") == "hive.reloaded" and "db:" in line for line in later)

    wait_for(reloaded, "the tree to restart db on its new stubs")
    assert (ws / "stubs" / "db" / "db_storage_v1").is_dir()
    assert (ws / "stubs" / "db" / "db_storage_v0_1").is_dir()  # backend still uses 0.x
    page.goto(f"{tree.url}/console/#/contracts/db_storage")
    diff = page.get_by_test_id("diff")
    expect(diff).to_contain_text("0.1.0 → 1.0.0")
    expect(diff).to_contain_text("required.added")
    page.goto(f"{tree.url}/console/")
    expect(page.get_by_test_id("tree")).to_contain_text("db")
    wait_for(lambda: _health(tree, "db") == "ready", "db ready again")
    page.reload()
    expect(page.get_by_test_id("tree")).not_to_contain_text("restarting")
    page.screenshot(path=shots / "tree-followed.png", full_page=True)


def _health(tree: Api, hive: str) -> str | None:
    def find(nodes: list[dict[str, Any]]) -> str | None:
        for node in nodes:
            if node["name"] == hive:
                return node.get("health")
            found = find(node.get("children") or [])
            if found:
                return found
        return None

    return find(call(tree, "GET", "/api/v1/hives").json()["hives"])
