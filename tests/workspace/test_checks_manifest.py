"""``[review]``, ``[quorum]`` and ``[memory]`` in subhive.toml: read, written back equal, and every mistake
reported with its code, line and pointer (issue #20). Lines are counted in the texts below."""

from __future__ import annotations

from pathlib import Path

from subhive.workspace import MemorySpec, QuorumSpec, ReviewSpec, load_manifest

from .test_agent_manifest import HEAD, problems, write

ROLES = "".join(
    f'\n[agents.{n}]\ninstructions = "{n}.md"\nmodel = "m"\n' for n in ("author", "critic", "devil", "judge")
)
# HEAD is 13 lines and ROLES 16: after a blank line, [review] is line 31.
REVIEW = """
[review]
changes = ["propose_diff", "repair"]
reviewer = "critic"
advocate = "devil"
judge = "judge"
rounds = 2
"""
QUORUM = """
[quorum]
keys = ["decisions.*"]
f = 1
voters = ["agent:a", "agent:b", "agent:c", "human"]
"""
MEMORY = """
[memory]
decay = "additive"
rate = 0.25
"""


def test_the_tables_are_read_and_written_back_equal(tmp_path: Path) -> None:
    manifest = load_manifest(write(tmp_path, HEAD + ROLES + REVIEW + QUORUM + MEMORY))
    assert manifest.review == ReviewSpec("critic", "devil", "judge", ("propose_diff", "repair"), 2)
    assert manifest.quorum == QuorumSpec(("decisions.*",), 1, ("agent:a", "agent:b", "agent:c", "human"))
    assert manifest.memory == MemorySpec(decay="additive", rate=0.25)
    again = load_manifest(write(tmp_path, manifest.to_toml()))
    assert (again.review, again.quorum, again.memory) == (manifest.review, manifest.quorum, manifest.memory)
    bare = load_manifest(write(tmp_path, HEAD))
    assert (bare.review, bare.quorum, bare.memory) == (None, None, MemorySpec())


def test_mistakes_are_located(tmp_path: Path) -> None:
    assert problems(tmp_path, HEAD + ROLES + REVIEW.replace('"devil"', '"ghost"')) == [
        ("review.role_unknown", 34, "/review/advocate")
    ]
    assert problems(tmp_path, HEAD + ROLES + REVIEW.replace('"devil"', '"critic"')) == [
        ("review.roles_shared", 31, "/review")
    ]
    assert problems(tmp_path, HEAD + ROLES + REVIEW.replace('"repair"', '"merge"')) == [
        ("review.change_unknown", 32, "/review/changes")
    ]
    assert problems(tmp_path, HEAD + ROLES + REVIEW.replace("rounds = 2", "rounds = 9")) == [
        ("checks.value_invalid", 36, "/review/rounds")
    ]
    # Three voters cannot tolerate one faulty voter: 3f+1 = 4 are needed.
    assert problems(tmp_path, HEAD + QUORUM.replace(', "human"', "")) == [
        ("quorum.too_few_voters", 18, "/quorum/voters")
    ]
    assert problems(tmp_path, HEAD + QUORUM.replace("f = 1", "fault = 1")) == [
        ("quorum.unknown_key", 17, "/quorum/fault")
    ]
    assert problems(tmp_path, HEAD + MEMORY + "threshold = 0.9\n") == [
        ("memory.threshold_too_high", 18, "/memory/threshold")
    ]
    assert problems(tmp_path, HEAD + MEMORY.replace("additive", "linear")) == [
        ("checks.value_invalid", 16, "/memory/decay")
    ]
