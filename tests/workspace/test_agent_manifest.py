"""``[agents.NAME]`` in subhive.toml: every field read, every mistake reported with code, line and pointer.

Expected lines are counted in the texts below, not taken from running the code.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from subhive.workspace import AgentBudgets, AgentModel, AgentSpec, AgentTrigger, ManifestInvalid, load_manifest

HEAD = """\
name = "notes"
kind = "backend"
parent = "root"
provides = ["notes_api"]

[consumes]
notes_store = "^1"

[blackboard]
schema = "blackboard.schema.json"

[knowledge]
sources = "notes_hive.knowledge:SOURCES"
"""  # 13 lines

AGENT = """
[agents.helper]
description = "Keeps notes tidy."
instructions = "agents/helper.md"

[agents.helper.model]
name = "qwen3"
base_url = "http://127.0.0.1:11434/v1"
api_key_env = "OLLAMA_KEY"
context_window = 32000
compact_at = 0.7
stream = true

[agents.helper.tools]
read_file = "allow"
board_write = "ask"
call_notes_store_put = "deny"

[agents.helper.budgets]
model_calls = 10
tool_calls = 40
tokens = 100000
wall_time = 90.5
repeat_limit = 4

[agents.helper.trigger]
keys = ["tasks.*", "notes.>"]
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "subhives" / "notes" / "subhive.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def problems(tmp_path: Path, text: str) -> list[tuple[str, int | None, str | None]]:
    with pytest.raises(ManifestInvalid) as caught:
        load_manifest(write(tmp_path, text))
    return [(p.code, p.location.line, p.location.pointer) for p in caught.value.problems]


def test_every_field_is_read(tmp_path: Path) -> None:
    manifest = load_manifest(write(tmp_path, HEAD + AGENT))
    (agent,) = manifest.agents
    assert agent == AgentSpec(
        "helper",
        "agents/helper.md",
        AgentModel(
            "qwen3", "http://127.0.0.1:11434/v1", "OLLAMA_KEY", context_window=32000, compact_at=0.7, stream=True
        ),
        {"read_file": "allow", "board_write": "ask", "call_notes_store_put": "deny"},
        AgentBudgets(10, 40, 100000, 90.5, 4),
        AgentTrigger(("tasks.*", "notes.>")),
        "Keeps notes tidy.",
    )
    assert list(agent.tools) == ["read_file", "board_write", "call_notes_store_put"]  # the manifest's order
    assert agent.locations["tools.board_write"].line == 29


def test_a_model_may_be_just_a_name_and_defaults_fill_the_rest(tmp_path: Path) -> None:
    text = HEAD + '\n[agents.a]\ninstructions = "a.md"\nmodel = "m"\n[agents.a.trigger]\noperation = "notes_api.ask"\n'
    (agent,) = load_manifest(write(tmp_path, text)).agents
    assert agent.model == AgentModel("m")
    assert agent.tools == {}
    assert agent.budgets == AgentBudgets()
    assert agent.trigger == AgentTrigger((), "notes_api.ask")


def test_a_manifest_without_agents_has_none(tmp_path: Path) -> None:
    assert load_manifest(write(tmp_path, HEAD)).agents == ()


def test_the_manifest_renders_its_agents_back(tmp_path: Path) -> None:
    manifest = load_manifest(write(tmp_path, HEAD + AGENT))
    again = load_manifest(write(tmp_path, manifest.to_toml()))
    assert again == manifest
    assert again.agents[0].tools == manifest.agents[0].tools


def test_every_mistake_is_reported_with_its_line(tmp_path: Path) -> None:
    text = (
        HEAD
        + """
[agents.helper]
instructions = "../outside.md"
colour = "blue"

[agents.helper.model]
name = "m"
base_url = "ftp://nope"
api_key_env = "sk-12345"
compact_at = 2
strem = true

[agents.helper.tools]
read_file = "sometimes"
rm_rf = "allow"
call_other_thing = "allow"

[agents.helper.budgets]
model_calls = 0
wall_time = "long"

[agents.helper.trigger]
keys = ["tasks..x", 3]
operation = "notes_store.put"

[agents.Bad]
instructions = "b.md"
model = "m"
"""
    )
    found = problems(tmp_path, text)
    assert found == [
        ("agent.unknown_key", 17, "/agents/helper/colour"),
        ("agent.path_escape", 16, "/agents/helper/instructions"),
        ("agent.unknown_key", 24, "/agents/helper/model/strem"),
        ("agent.model_invalid", 21, "/agents/helper/model/base_url"),
        ("agent.model_invalid", 22, "/agents/helper/model/api_key_env"),
        ("agent.value_invalid", 23, "/agents/helper/model/compact_at"),
        ("agent.policy_invalid", 27, "/agents/helper/tools/read_file"),
        ("agent.tool_unknown", 28, "/agents/helper/tools/rm_rf"),
        ("agent.tool_unknown", 29, "/agents/helper/tools/call_other_thing"),
        ("agent.value_invalid", 32, "/agents/helper/budgets/model_calls"),
        ("agent.value_invalid", 33, "/agents/helper/budgets/wall_time"),
        ("agent.trigger_invalid", 36, "/agents/helper/trigger/keys/0"),
        ("agent.trigger_invalid", 36, "/agents/helper/trigger/keys/1"),
        ("agent.trigger_invalid", 37, "/agents/helper/trigger/operation"),
        ("agent.name_invalid", 39, "/agents/Bad"),
    ]


def test_a_problem_names_the_agent_and_says_what_to_do(tmp_path: Path) -> None:
    text = HEAD + '\n[agents.helper]\ninstructions = "a.md"\nmodel = "m"\n[agents.helper.tools]\nrm_rf = "allow"\n'
    with pytest.raises(ManifestInvalid) as caught:
        load_manifest(write(tmp_path, text))
    (problem,) = caught.value.problems
    assert problem.message == "agent helper: there is no tool 'rm_rf' for this hive"
    assert "call_notes_store_<operation>" in (problem.hint or "")
    assert str(problem.location.file).endswith("subhive.toml")


def test_missing_instructions_and_model_are_reported(tmp_path: Path) -> None:
    found = problems(tmp_path, HEAD + '\n[agents.helper]\ndescription = "x"\n')
    assert [code for code, _, _ in found] == ["agent.missing_key", "agent.missing_key"]
    assert all(line == 15 for _, line, _ in found)


def test_the_approval_timeout_is_read_and_checked(tmp_path: Path) -> None:
    text = HEAD + '\n[agents.a]\ninstructions = "a.md"\nmodel = "m"\napproval_timeout = 30\n'
    (agent,) = load_manifest(write(tmp_path, text)).agents
    assert agent.approval_timeout == 30.0
    assert load_manifest(write(tmp_path, load_manifest(write(tmp_path, text)).to_toml())).agents == (agent,)
    found = problems(tmp_path, text.replace("approval_timeout = 30", "approval_timeout = 0"))
    assert found == [("agent.value_invalid", 18, "/agents/a/approval_timeout")]


def test_propose_diff_cannot_be_allowed_without_a_person(tmp_path: Path) -> None:
    text = HEAD + '\n[agents.a]\ninstructions = "a.md"\nmodel = "m"\n[agents.a.tools]\npropose_diff = "allow"\n'
    assert problems(tmp_path, text) == [("agent.policy_invalid", 19, "/agents/a/tools/propose_diff")]
    (agent,) = load_manifest(write(tmp_path, text.replace('"allow"', '"ask"'))).agents
    assert agent.tools == {"propose_diff": "ask"}


def test_the_memory_budget_is_read_and_checked(tmp_path: Path) -> None:
    text = HEAD + '\n[agents.a]\ninstructions = "a.md"\nmodel = "m"\nmemory_tokens = 0\n'
    (agent,) = load_manifest(write(tmp_path, text)).agents
    assert agent.memory_tokens == 0
    assert load_manifest(write(tmp_path, load_manifest(write(tmp_path, text)).to_toml())).agents == (agent,)
    assert problems(tmp_path, text.replace("= 0", "= -5")) == [("agent.value_invalid", 18, "/agents/a/memory_tokens")]


def test_an_agent_may_take_the_hives_repairs(tmp_path: Path) -> None:
    text = (
        HEAD
        + '\n[agents.a]\ninstructions = "a.md"\nmodel = "m"\nrepairs = true\n[agents.a.tools]\npropose_diff = "ask"\n'
    )
    (agent,) = load_manifest(write(tmp_path, text)).agents
    assert agent.repairs is True
    assert agent.locations["repairs"].line == 18
    assert load_manifest(write(tmp_path, load_manifest(write(tmp_path, text)).to_toml())).agents == (agent,)
    assert load_manifest(write(tmp_path, text.replace("repairs = true\n", ""))).agents[0].repairs is False
    with pytest.raises(ManifestInvalid) as caught:
        load_manifest(write(tmp_path, text.replace("repairs = true", "repair = true")))
    [typo] = caught.value.problems
    assert (typo.code, typo.location.line, typo.location.pointer) == ("agent.unknown_key", 18, "/agents/a/repair")
    assert typo.hint == "did you mean 'repairs'?"
    assert problems(tmp_path, text.replace("repairs = true", 'repairs = "yes"')) == [
        ("agent.value_invalid", 18, "/agents/a/repairs")
    ]
    # A repair is answered with a diff: an agent that may not propose one cannot take repairs.
    assert problems(tmp_path, text.replace('"ask"', '"deny"')) == [("agent.repair_needs_diff", 18, "/agents/a/repairs")]
    second = (
        '\n[agents.b]\ninstructions = "b.md"\nmodel = "m"\nrepairs = true\n[agents.b.tools]\npropose_diff = "ask"\n'
    )
    assert problems(tmp_path, text + second) == [("agent.repairs_twice", 25, "/agents/b/repairs")]
