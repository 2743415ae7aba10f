"""Following ``up``'s progress file (``tail_progress``): a writer that keeps reporting is waited for however
long it works, one that falls silent is given up on after ``quiet`` seconds, and the final event is returned."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from subhive.up._progress import tail_progress


def _write_events(path: Path, events: list[dict[str, Any]], every: float) -> threading.Thread:
    def write() -> None:
        for event in events:
            time.sleep(every)
            with path.open("a", encoding="utf-8") as out:
                out.write(json.dumps(event) + "\n")

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def test_a_writer_that_keeps_reporting_is_waited_for_past_the_quiet_window(tmp_path: Path) -> None:
    path = tmp_path / "progress.jsonl"
    steps = [{"event": "nats.provisioning", "done": n} for n in range(1, 9)] + [{"event": "ready"}]
    writer = _write_events(path, steps, every=0.15)  # 1.35 s in all, never 0.6 s without a word
    seen: list[dict[str, Any]] = []
    last = tail_progress(path, seen.append, lambda e: e["event"] == "ready", quiet=0.6)
    writer.join()
    assert last == {"event": "ready"}
    assert [e.get("done") for e in seen[:-1]] == list(range(1, 9))


def test_a_writer_that_falls_silent_is_given_up_on(tmp_path: Path) -> None:
    path = tmp_path / "progress.jsonl"
    writer = _write_events(path, [{"event": "nats.started"}], every=0.05)
    started = time.monotonic()
    seen: list[dict[str, Any]] = []
    last = tail_progress(path, seen.append, lambda e: e["event"] == "ready", quiet=0.5)
    writer.join()
    assert last is None
    assert seen == [{"event": "nats.started"}]
    assert time.monotonic() - started >= 0.54  # counted from the last event (written 0.05 s in), not the start
