"""The subhive demo: the notes workspace (examples/notes/) brought to life, end to end.

A UI, a backend and a DB sub-hive, each its own process with its own blackboard and experts, talking only
through contracts: ``notes_api`` (JSON Schema over NATS: request/reply and an event) and ``notes_store`` (a
protobuf gRPC service, plus an event over NATS). Run it with ``scripts/demo`` (it installs subhive first).

1. ``subhive up`` negotiates both contracts, generates stubs, starts NATS, the root and the three hives.
2. Two drafts are written to the UI's blackboard. The UI's experts send them to the backend; the backend
   stores them in the DB over gRPC; the DB announces each stored note; the backend publishes it; the UI's
   feed fills up. Then the demo prints what was negotiated, what flowed and what each blackboard holds.
3. The backend proposes notes_api 2.0.0, which breaks 1.x clients: it waits for a human's approval, and
   meanwhile the UI keeps working on major 1.
4. A human approves it: the tree follows the lock (new stubs, new NATS permissions, the backend restarted),
   so the backend serves 2.0.0 beside 1.0.0, and the UI, which asked for ^1, carries on untouched.
5. ``subhive down`` stops everything.

Everything runs in a copy of the workspace in a temporary directory; the exit code is 0 only if every
step behaved as described.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

EXAMPLE = Path(__file__).resolve().parent / "notes"
WAIT = 60.0


class DemoFailed(Exception):
    pass


class Demo:
    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace
        self.exe = shutil.which("subhive", path=str(Path(sys.executable).parent)) or "subhive"

    def run(self, *args: str, expect: int = 0, show: bool = True) -> str:
        """Run ``subhive ARGS`` in the workspace; show the command and what it printed."""
        if show:
            print(f"$ subhive {' '.join(args)}", flush=True)
        done = subprocess.run([self.exe, *args], cwd=self.workspace, capture_output=True, text=True, check=False)
        if show:
            for line in (done.stdout + done.stderr).rstrip().splitlines():
                print(f"  {line}", flush=True)
        if done.returncode != expect:
            raise DemoFailed(
                f"`subhive {' '.join(args)}` exited {done.returncode}, expected {expect}:\n{done.stdout}{done.stderr}"
            )
        return done.stdout

    def json(self, *args: str) -> Any:
        return json.loads(self.run(*args, "--format", "json", show=False))

    def board(self, hive: str) -> dict[str, Any]:
        return {e["key"]: e for e in self.json("board", "show", hive)["entries"]}

    def wait_for(self, what: str, check: Callable[[], bool]) -> None:
        deadline = time.monotonic() + WAIT
        while not check():
            if time.monotonic() > deadline:
                raise DemoFailed(f"gave up waiting for {what} after {WAIT:g} s (see: subhive logs)")
            time.sleep(0.2)


def heading(text: str) -> None:
    print(f"\n== {text}", flush=True)


def feed(demo: Demo) -> dict[str, Any]:
    return {k: e for k, e in demo.board("ui").items() if k.startswith("feed.")}


def account(demo: Demo) -> None:
    """What happened, from the hives' own records: the lock, their counters, their blackboards."""
    heading("What was negotiated (contracts.lock)")
    for contract in demo.json("contract", "list")["contracts"]:
        for version in contract["versions"]:
            users = ", ".join(f"{hive} {wants}" for hive, wants in version.get("consumers", {}).items())
            print(f"  {contract['name']} {version['version']}: provided by {version['provider']}, used by {users}")
    heading("What flowed between the hives")
    status = demo.json("status")["runtime"]["hives"]
    for hive, info in status.items():
        flows = ", ".join(f"{what} x{n}" for what, n in info.get("flows", {}).items()) or "no contract calls in"
        bus = info.get("bus", {})
        print(
            f"  {hive:8} {info['health']}: sent {bus.get('sent', 0)}, received {bus.get('received', 0)} "
            f"messages; {flows}; {info['dead_letters']} dead letters"
        )
    heading("What each blackboard holds (latest value of every key, and who wrote it)")
    for hive in ("ui", "backend", "db"):
        print(f"  {hive}:")
        for key, entry in demo.board(hive).items():
            print(f"    {key:22} by {entry['writer']:10} {json.dumps(entry['value'], sort_keys=True)}")


def scenario(demo: Demo) -> None:
    heading("1. subhive up: negotiate, generate stubs, start NATS, the root and three sub-hives")
    demo.run("up", "--detach")

    heading("2. Two drafts on the UI's blackboard; the experts of three hives take it from there")
    demo.run(
        "board", "put", "ui", "drafts.hello", json.dumps({"text": "Contracts first, code second", "author": "ada"})
    )
    demo.run(
        "board", "put", "ui", "drafts.typed", json.dumps({"text": "Hives talk in typed messages only", "author": "lin"})
    )
    demo.wait_for("both notes in the UI's feed", lambda: len(feed(demo)) == 2)
    demo.run("status")
    account(demo)

    heading("3. A breaking change: notes_api 2.0.0 requires a title, so every 1.x client would break")
    shutil.copytree(
        demo.workspace / "changes" / "notes_api" / "2.0.0", demo.workspace / "contracts" / "notes_api" / "2.0.0"
    )
    demo.run("contract", "propose", "contracts/notes_api/2.0.0", expect=1)  # 1: pending, not accepted
    pending = [a for a in demo.json("approvals", "list")["approvals"] if a["contract"] == "notes_api"]
    if [a["status"] for a in pending] != ["pending"]:
        raise DemoFailed(f"expected notes_api 2.0.0 to wait for approval, found {pending}")
    demo.run(
        "board",
        "put",
        "ui",
        "drafts.still",
        json.dumps({"text": "Old clients keep working meanwhile", "author": "ada"}),
    )
    demo.wait_for("the third note in the UI's feed", lambda: len(feed(demo)) == 3)
    locked = [
        v["version"]
        for c in demo.json("contract", "list")["contracts"]
        if c["name"] == "notes_api"
        for v in c["versions"]
    ]
    if locked != ["1.0.0"]:
        raise DemoFailed(f"expected only notes_api 1.0.0 in the lock while 2.0.0 waits, found {locked}")
    print("  -> the UI still runs on notes_api v1: its third note went through; the lock holds 1.0.0 only")

    heading("4. A human approves 2.0.0: the backend serves it beside 1.0.0; the UI, on ^1, is left alone")
    ui_pid = demo.json("status")["runtime"]["hives"]["ui"]["pid"]
    demo.run("approvals", "approve", pending[0]["id"])
    demo.wait_for(
        "the backend to serve notes_api 2.0.0",
        lambda: "notes_api@2.0.0 (provides)" in demo.json("status")["runtime"]["hives"]["backend"]["contracts"],
    )
    backend = demo.json("status")["runtime"]["hives"]["backend"]
    served = [c.removesuffix(" (provides)") for c in backend["contracts"] if c.endswith("(provides)")]
    print(f"  -> the backend now serves {' and '.join(served)}")
    demo.run(
        "board", "put", "ui", "drafts.after", json.dumps({"text": "Both majors live side by side", "author": "lin"})
    )
    demo.wait_for("the fourth note in the UI's feed", lambda: len(feed(demo)) == 4)
    if demo.json("status")["runtime"]["hives"]["ui"]["pid"] != ui_pid:
        raise DemoFailed("the UI was restarted, though its stubs did not change")
    print("  -> the UI was not restarted, and its fourth note went through on v1")


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="subhive-demo-") as temporary:
        workspace = Path(temporary) / "notes"
        shutil.copytree(
            EXAMPLE, workspace, ignore=shutil.ignore_patterns(".subhive", "stubs", "contracts.lock", "__pycache__")
        )
        demo = Demo(workspace)
        print(f"the notes workspace, copied to {workspace}")
        failed: str | None = None
        try:
            scenario(demo)
        except DemoFailed as exc:
            failed = str(exc)
        finally:
            heading("5. subhive down: every hive, the root and NATS stop; nothing is left running")
            try:
                demo.run("down")
            except DemoFailed as exc:
                failed = failed or str(exc)
    if failed:
        print(f"\ndemo FAILED: {failed}", flush=True)
        return 1
    print("\ndemo finished: every step behaved as expected", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
