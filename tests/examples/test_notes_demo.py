"""The README's first command, end to end: the notes workspace comes up as real processes (NATS, the root,
three sub-hives), notes flow UI -> backend (NATS) -> db (gRPC) and back as events, a breaking change waits
for approval while the UI keeps working on the old major, once approved it is served beside the old one, and
everything stops again."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo.py"


def test_the_notes_demo_runs_end_to_end_and_says_what_happened() -> None:
    done = subprocess.run([sys.executable, str(DEMO)], capture_output=True, text=True, timeout=240, check=False)
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert "demo finished: every step behaved as expected" in out
    # Negotiated: both contracts, each with its consumer.
    assert "notes_api 1.0.0: provided by backend, used by ui >=1.0.0, <2.0.0" in out
    assert "notes_store 1.0.0: provided by db, used by backend >=1.0.0, <2.0.0" in out
    # Flowed: the backend answered the UI over NATS, the db served the backend over gRPC.
    assert re.search(r"backend +ready: .*answered notes_api\.create_note x2", out)
    assert re.search(r"backend +ready: .*received notes_store\.stored x2", out)
    assert re.search(r"db +ready: .*served gRPC notes_store\.Put x2", out)
    assert re.search(r"ui +ready: .*received notes_api\.note_published x2", out)
    # Each board holds its own hive's view, attributed to the expert that wrote it.
    assert len(re.findall(r"feed\.n-[0-9a-f]{8} +by feed", out)) == 2
    assert len(re.findall(r"notes\.n-[0-9a-f]{8} +by keeper .*\"status\": \"stored\"", out)) == 2
    assert re.search(r'stats\.records +by tally +\{"count": 2, "words": 10\}', out)
    # The breaking change waits; the UI's third note still went through on v1.
    assert "notes_api 2.0.0: pending (proposal.pending_breaking" in out
    assert "the UI still runs on notes_api v1" in out
    # Approved: the tree follows the lock; the backend serves both majors, the UI is not restarted.
    assert "the backend now serves notes_api@1.0.0 and notes_api@2.0.0" in out
    assert "the UI was not restarted, and its fourth note went through on v1" in out
    assert "stopped 6 processes: supervisor, root, nats, backend, db, ui" in out
