"""The order `subhive up` starts hives in: providers before their consumers, for every tree."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st

from subhive.up import start_waves


@dataclass
class _Need:
    contract: str


@dataclass
class _Manifest:
    provides: tuple[str, ...]
    consumes: tuple[_Need, ...]


def test_a_chain_starts_from_its_end() -> None:
    hives = {
        "ui": _Manifest((), (_Need("api"),)),
        "api": _Manifest(("api",), (_Need("store"),)),
        "db": _Manifest(("store",), ()),
        "tools": _Manifest((), ()),
    }
    assert start_waves(hives) == [["db", "tools"], ["api"], ["ui"]]


def test_hives_that_consume_each_other_start_together_after_the_rest() -> None:
    hives = {
        "a": _Manifest(("x",), (_Need("y"),)),
        "b": _Manifest(("y",), (_Need("x"),)),
        "c": _Manifest(("z",), ()),
        "d": _Manifest((), (_Need("outside"),)),
    }
    assert start_waves(hives) == [["c", "d"], ["a", "b"]]


@given(st.dictionaries(st.sampled_from("abcdefgh"), st.sets(st.sampled_from("abcdefgh")), min_size=1))
def test_every_hive_starts_once_and_after_the_providers_it_needs_unless_they_need_it_back(
    consumes: dict[str, set[str]],
) -> None:
    # Hive h provides contract "c_h" and consumes the contracts of the hives in consumes[h].
    hives = {
        h: _Manifest((f"c_{h}",), tuple(_Need(f"c_{o}") for o in sorted(needs) if o in consumes))
        for h, needs in consumes.items()
    }
    waves = start_waves(hives)
    order = [h for wave in waves for h in wave]
    assert sorted(order) == sorted(hives)
    position = {h: i for i, wave in enumerate(waves) for h in wave}
    for hive, needs in consumes.items():
        for provider in needs & set(consumes) - {hive}:
            assert position[provider] < position[hive] or position[provider] == position[hive] == len(waves) - 1
