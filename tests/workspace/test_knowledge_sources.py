"""The knowledge-source seed (subhive.hive): NATS key-pattern rules, and the shape scaffolds rely on."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence

import pytest

from subhive.hive import Blackboard, Entry, KnowledgeSource, Write, check_key_pattern, key_matches


@pytest.mark.parametrize(
    ("pattern", "key", "expected"),
    [
        ("tasks.t1", "tasks.t1", True),
        ("tasks.*", "tasks.t1", True),
        ("tasks.*", "tasks", False),  # '*' is exactly one token
        ("tasks.*", "tasks.t1.notes", False),
        ("tasks.>", "tasks.t1.notes", True),  # '>' is one or more tokens
        ("tasks.>", "tasks", False),
        (">", "anything.at.all", True),
        ("*.t1", "plans.t1", True),
        ("tasks.t1", "tasks.t2", False),
        ("tasks", "tasks.t1", False),
    ],
)
def test_key_patterns_follow_nats_rules(pattern: str, key: str, expected: bool) -> None:
    assert key_matches(pattern, key) is expected


@pytest.mark.parametrize("pattern", ["tasks.*", "tasks.>", ">", "a.b-c.d_e.f=g/h"])
def test_valid_key_patterns(pattern: str) -> None:
    check_key_pattern(pattern)
    assert pattern.count(">") <= 1


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("tasks.>.x", "'>' may only be the last token"),
        ("tasks..x", "token '' is not allowed"),
        ("tasks.a b", "token 'a b' is not allowed"),
        ("", "token '' is not allowed"),
        ("tasks.t*", "token 't*' is not allowed"),
    ],
)
def test_invalid_key_patterns_say_why(pattern: str, why: str) -> None:
    with pytest.raises(ValueError, match=re.escape(why)):
        check_key_pattern(pattern)


class Echo:
    """A knowledge source written the way the scaffold's starter is: class attributes, a pure core."""

    name = "echo"
    triggers = ("tasks.*",)
    priority = 1

    def writes_for(self, entry: Entry) -> list[Write]:
        return [Write("plans." + entry.key.split(".", 1)[1], entry.value, expected_revision=0)]

    async def activate(self, entry: Entry, blackboard: Blackboard) -> Sequence[Write]:
        return self.writes_for(entry)


def test_a_plain_class_satisfies_the_protocol_and_activates() -> None:
    source: KnowledgeSource = Echo()
    assert isinstance(source, KnowledgeSource)
    entry = Entry("tasks.t1", {"title": "x"}, revision=4)

    class RefusesReads:  # not a blackboard double: it only proves this source decides from the entry alone
        async def get(self, key: str) -> Entry | None:
            raise AssertionError(f"unexpected read of {key}")

    writes = asyncio.run(source.activate(entry, RefusesReads()))
    assert list(writes) == [Write("plans.t1", {"title": "x"}, expected_revision=0)]


def test_an_object_missing_activate_is_not_a_knowledge_source() -> None:
    class Half:
        name = "half"
        triggers = ("a",)
        priority = 0

    assert not isinstance(Half(), KnowledgeSource)
